"""The Delta file index: reconciled add actions to lakecore's file-index layout."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.model import files as fi
from lakecore_delta.deletion_vectors import DeletionVectorDescriptor
from lakecore_delta.partitions import typed_partition_values
from lakecore_delta.state import DeltaState
from lakecore_delta.stats import merge_stats, parse_stats, stats_from_struct
from lakecore_delta.widened_stats import drop_imprecise_bounds

DELETION_TYPE = pa.struct(
    [
        ("storage_type", pa.string()),
        ("path_or_inline_dv", pa.string()),
        ("offset", pa.int32()),
        ("size_in_bytes", pa.int32()),
        ("cardinality", pa.int64()),
    ]
)
_DV_FIELDS = ("storageType", "pathOrInlineDv", "offset", "sizeInBytes", "cardinality")


def build_file_index(state: DeltaState) -> pa.Table:
    """Return the file index of ``state`` (see ``lakecore.model.files`` for the layout)."""
    return index_actions(state.adds, state)


def index_actions(adds: pa.Table, state: DeltaState) -> pa.Table:
    """Return the file index of add actions (columns as ``DeltaState.adds``) under ``state``."""
    stats = parse_stats(adds.column("stats"), state.data_fields())
    if "stats_parsed" in adds.column_names:
        parsed = adds.column("stats_parsed")
        use_struct = pc.and_(pc.is_null(adds.column("stats")), pc.is_valid(parsed))
        stats = merge_stats(stats, stats_from_struct(parsed, state.data_fields()), use_struct)
    stats = drop_imprecise_bounds(stats, state.data_fields())
    dv = adds.column("deletionVector").combine_chunks()
    deletion = pa.StructArray.from_arrays(
        [
            pc.struct_field(dv, name).cast(f.type)
            for name, f in zip(_DV_FIELDS, DELETION_TYPE, strict=True)
        ],
        fields=list(DELETION_TYPE),
        mask=pc.is_null(pc.struct_field(dv, "storageType")),
    )
    return pa.table(
        {
            fi.PATH: adds.column("path"),
            fi.SIZE: adds.column("size"),
            fi.RECORD_COUNT: stats.column("numRecords"),
            fi.MODIFICATION_TIME: adds.column("modificationTime"),
            fi.PARTITION: typed_partition_values(
                adds.column("partitionValues"), state.partition_fields()
            ),
            fi.MIN: stats.column("min"),
            fi.MAX: stats.column("max"),
            fi.NULL_COUNT: stats.column("null_count"),
            fi.DELETION: deletion,
        }
    )


def deletion_descriptor(deletion: Mapping[str, Any] | None) -> DeletionVectorDescriptor | None:
    """The deletion vector a file-index ``deletion`` value describes (None: no deletes).

    Raises ``CorruptTableError`` when the descriptor is malformed.
    """
    if deletion is None:
        return None
    return DeletionVectorDescriptor(
        deletion["storage_type"],
        deletion["path_or_inline_dv"],
        deletion["offset"],
        deletion["size_in_bytes"],
        deletion["cardinality"],
    )
