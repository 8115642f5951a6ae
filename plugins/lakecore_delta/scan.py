"""The Delta side of the shared planner: the ScanContext of a snapshot and reading ScanTasks.

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
from typing import Any

import pyarrow as pa

from lakecore.model import files as fi
from lakecore.planning.tasks import ScanContext, ScanTask, StatsPrecision
from lakecore.storage import Storage, open_storage
from lakecore_delta.file_index import DELETION_TYPE
from lakecore_delta.protocol import COLUMN_MAPPING_MODE
from lakecore_delta.reader import FileReader
from lakecore_delta.state import DeltaState

STRING_PREFIX_LENGTH = "delta.dataSkippingStringPrefixLength"
DEFAULT_STRING_PREFIX_LENGTH = 32
TIMESTAMP_STATS_TRUNCATION = dt.timedelta(milliseconds=1)
MAPPING_OPTION = "column_mapping_mode"
"""``ScanContext.options`` key: the table's column mapping mode (none, name, id)."""


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
        options={MAPPING_OPTION: configuration.get(COLUMN_MAPPING_MODE, "none")},
        stats_precision=StatsPrecision(
            timestamp_truncation=TIMESTAMP_STATS_TRUNCATION,
            string_prefix_length=_prefix_length(configuration),
        ),
    )


def _prefix_length(configuration: dict[str, str]) -> int:
    try:
        return max(1, int(configuration[STRING_PREFIX_LENGTH]))
    except (KeyError, ValueError):
        return DEFAULT_STRING_PREFIX_LENGTH


def read_tasks(
    context: ScanContext, tasks: Sequence[ScanTask], columns: Sequence[str] | None
) -> Iterator[pa.RecordBatch]:
    """Yield the live rows of Delta ``tasks``, one batch per non-empty file, in task order.

    Opens the storage from the context (works in another process), then reads exactly as a
    snapshot read does: partition values filled in, deletion vectors applied, column mapping.
    """
    storage = open_storage(context.table_uri, context.storage_options)
    mode = context.options.get(MAPPING_OPTION, "none")
    reader = FileReader(storage, context.schema, context.partition_columns, mode)
    return reader.read_files(tasks_index(tasks, context), columns)


def tasks_index(tasks: Sequence[ScanTask], context: ScanContext) -> pa.Table:
    """A file index (path, partition, deletion columns) of ``tasks``, as ``FileReader`` reads."""
    partition_type = pa.struct(
        [pa.field(c, context.schema.field(c).type) for c in context.partition_columns]
    )
    partitions: list[dict[str, Any]] = [t.partition_values for t in tasks]
    return pa.table(
        {
            fi.PATH: pa.array([t.path for t in tasks], pa.string()),
            fi.PARTITION: pa.array(partitions, partition_type),
            fi.DELETION: pa.array([t.deletes for t in tasks], DELETION_TYPE),
        }
    )
