"""The Delta side of the one read path: a snapshot's ScanContext and reading file-index rows.

Stats precision (a Delta fact the core planner must know): writers keep timestamp min/max to
milliseconds (Spark formats them with ``.SSS``, delta-rs and lakecore truncate the same way),
so a file's largest timestamp may be up to 1 ms above its max; and Spark keeps string min/max
to ``delta.dataSkippingStringPrefixLength`` characters (default 32). Spark appends a tie-breaker
character to a truncated max, so it stays an upper bound, but other writers may not; the
planner therefore treats any string max at least that long as a prefix (see
``lakecore.planning.bounds``). This costs pruning only on long strings and is always safe.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa

from lakecore.model import files as fi
from lakecore.planning.tasks import FileRows, RowPositions, ScanContext, StatsPrecision
from lakecore.storage import Storage
from lakecore_delta.deletion_vectors import DeletionVectorDescriptor, load_deletion_vector
from lakecore_delta.file_index import deletion_descriptor
from lakecore_delta.protocol import COLUMN_MAPPING_MODE
from lakecore_delta.reader import FileReader, ordered_parallel_map
from lakecore_delta.state import DeltaState

STRING_PREFIX_LENGTH = "delta.dataSkippingStringPrefixLength"
DEFAULT_STRING_PREFIX_LENGTH = 32
TIMESTAMP_STATS_TRUNCATION = dt.timedelta(milliseconds=1)
_DV_WINDOW = 16


@dataclass(frozen=True, slots=True)
class DeltaScanState:
    """What reading a Delta snapshot's files needs beyond the neutral ``ScanContext``.

    ``column_mapping_mode``: ``"none"``, ``"name"`` or ``"id"`` (``delta.columnMapping.mode``):
    how a data file's physical columns map to the logical schema's fields.
    """

    column_mapping_mode: str = "none"


def scan_context(storage: Storage, state: DeltaState) -> ScanContext:
    """The ScanContext of the snapshot ``state`` of the table in ``storage``."""
    configuration = state.configuration
    return ScanContext(
        format="delta",
        table_uri=storage.root,
        schema=state.schema,
        partition_columns=tuple(state.partition_columns),
        file_format="parquet",
        storage_options=dict(getattr(storage, "storage_options", None) or {}),
        stats_precision=StatsPrecision(
            timestamp_truncation=TIMESTAMP_STATS_TRUNCATION,
            string_prefix_length=_prefix_length(configuration),
        ),
        state=DeltaScanState(configuration.get(COLUMN_MAPPING_MODE, "none")),
        storage=storage,
    )


def _prefix_length(configuration: dict[str, str]) -> int:
    try:
        return max(1, int(configuration[STRING_PREFIX_LENGTH]))
    except (KeyError, ValueError):
        return DEFAULT_STRING_PREFIX_LENGTH


def scan_state(context: ScanContext) -> DeltaScanState:
    """``context.state``; raises ``TypeError`` when it is not a Delta scan state."""
    if not isinstance(context.state, DeltaScanState):
        raise TypeError(f"expected a DeltaScanState in the scan context, got {context.state!r}")
    return context.state


def context_reader(context: ScanContext) -> FileReader:
    """A reader of the data files of the snapshot ``context`` describes."""
    mode = scan_state(context).column_mapping_mode
    return FileReader(context.open_storage(), context.schema, context.partition_columns, mode)


def read_files(context: ScanContext, files: pa.Table, columns: Sequence[str]) -> Iterator[FileRows]:
    """Every row (deleted ones too) of each file of ``files``, one ``FileRows`` per file.

    Partition values are filled in and column mapping applied; row ``i`` of a batch is row
    ``i`` of its Parquet file, as deletion vectors number them.
    """
    return context_reader(context).read_files(files, columns)


def deleted_positions(context: ScanContext, files: pa.Table) -> list[RowPositions | None]:
    """The deletion vector of each row of ``files`` (None where ``deletion`` is null)."""
    storage = context.open_storage()
    descriptors = [deletion_descriptor(d) for d in files.column(fi.DELETION).to_pylist()]

    def load(descriptor: DeletionVectorDescriptor | None) -> RowPositions | None:
        return None if descriptor is None else load_deletion_vector(descriptor, storage)

    return list(ordered_parallel_map(load, descriptors, window=_DV_WINDOW))
