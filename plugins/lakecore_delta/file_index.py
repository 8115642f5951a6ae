"""The Delta file index: reconciled add actions to lakecore's file-index layout."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import CorruptTableError
from lakecore.model import files as fi
from lakecore_delta.deletion_vectors import DeletionVectorDescriptor
from lakecore_delta.partitions import typed_partition_values
from lakecore_delta.state import DeltaState
from lakecore_delta.stats import add_stats
from lakecore_delta.widened_stats import drop_imprecise_bounds

DELETION_TYPE = fi.DELETION_TYPE
"""The file index's neutral ``deletion`` column; the descriptor is ``encode_descriptor`` text."""
_DV_FIELDS = ("storageType", "offset", "sizeInBytes", "pathOrInlineDv")
_SEPARATOR = "|"


def build_file_index(state: DeltaState, stats_columns: Collection[str] | None = None) -> pa.Table:
    """Return the file index of ``state`` (see ``lakecore.model.files`` for the layout).

    With ``stats_columns``, the ``min``/``max``/``null_count`` structs hold only those data
    columns (top-level names; others are left out, which planning reads as "unknown") and
    only their stats text is turned into values: the stats JSON of the other columns is
    never converted, and ``record_count`` comes from a scan for ``numRecords``.
    """
    return index_actions(state.adds, state, stats_columns)


def index_actions(
    adds: pa.Table, state: DeltaState, stats_columns: Collection[str] | None = None
) -> pa.Table:
    """Return the file index of add actions (columns as ``DeltaState.adds``) under ``state``
    (``stats_columns`` as ``build_file_index``)."""
    fields = state.data_fields()
    if stats_columns is not None:
        fields = [f for f in fields if f.name in set(stats_columns)]
    stats = add_stats(adds, fields, counts_only=stats_columns is not None and not fields)
    stats = drop_imprecise_bounds(stats, fields)
    deletion = pa.chunked_array(
        [deletion_column(chunk) for chunk in adds.column("deletionVector").chunks], DELETION_TYPE
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


def deletion_column(dv: pa.StructArray) -> pa.StructArray:
    """The neutral ``deletion`` column of Delta ``deletionVector`` structs (vectorised).

    The descriptor is ``encode_descriptor``'s text: storage type, offset (empty when absent),
    size and path or inline bitmap joined by ``|``; the path comes last, so a ``'p'`` path
    holding ``|`` still splits right (Z85 text and UUID prefixes never hold it). A vector
    without ``storageType`` is none: log replay refuses one that has other fields
    (``log.validate.file_action_problem``).
    """
    if pc.struct_field(dv, "storageType").null_count == len(dv):
        return pa.nulls(len(dv), DELETION_TYPE)  # most tables: no joined text to build
    parts = [pc.cast(pc.struct_field(dv, name), pa.string()) for name in _DV_FIELDS]
    text = pc.binary_join_element_wise(
        *parts, _SEPARATOR, null_handling="replace", null_replacement=""
    )
    return pa.StructArray.from_arrays(
        [pc.cast(pc.struct_field(dv, "cardinality"), pa.int64()), pc.cast(text, pa.binary())],
        fields=list(DELETION_TYPE),
        mask=pc.is_null(pc.struct_field(dv, "storageType")),
    )


def encode_descriptor(descriptor: DeletionVectorDescriptor) -> bytes:
    """The opaque ``deletion.descriptor`` bytes of a deletion vector (see ``deletion_column``)."""
    offset = "" if descriptor.offset is None else str(descriptor.offset)
    fields = (descriptor.storage_type, offset, str(descriptor.size_in_bytes))
    return _SEPARATOR.join((*fields, descriptor.path_or_inline_dv)).encode()


def deletion_value(descriptor: DeletionVectorDescriptor) -> dict[str, Any]:
    """The file-index ``deletion`` value (a ``DELETION_TYPE`` row) of a deletion vector."""
    return {fi.CARDINALITY: descriptor.cardinality, fi.DESCRIPTOR: encode_descriptor(descriptor)}


def deletion_descriptor(deletion: Mapping[str, Any] | None) -> DeletionVectorDescriptor | None:
    """The deletion vector a file-index ``deletion`` value describes (None: no deletes).

    Raises ``CorruptTableError`` when the descriptor is malformed.
    """
    if deletion is None:
        return None
    raw = deletion.get(fi.DESCRIPTOR)
    try:
        text = bytes(raw).decode() if raw is not None else ""
        kind, offset, size, path = text.split(_SEPARATOR, 3)
        return DeletionVectorDescriptor(
            kind, path, int(offset) if offset else None, int(size), int(deletion[fi.CARDINALITY])
        )
    except (ValueError, TypeError, KeyError) as exc:
        raise CorruptTableError(f"malformed deletion vector descriptor {raw!r}: {exc}") from exc
