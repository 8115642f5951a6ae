"""The Hudi side of the shared planner: the ScanContext of a snapshot and reading ScanTasks.

A task is one file slice: ``path`` is its base file (or first log file), ``log_files`` its
log files. Everything a reader in another process (a Spark executor) needs to merge a slice
travels in ``ScanContext.options``: key fields, ordering field and mode, which instants'
log blocks count, and the reading options.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa

from lakecore.planning.tasks import ScanContext, ScanTask
from lakecore.storage import Storage, open_storage
from lakecore_hudi.keys import META_FIELDS
from lakecore_hudi.merge import MergeSpec
from lakecore_hudi.names import is_log_file
from lakecore_hudi.partitions import prunable_partition_columns
from lakecore_hudi.reader import SliceReader
from lakecore_hudi.state import HudiState
from lakecore_hudi.view import Visible

KEY_FIELDS = "key_fields"
ORDERING_FIELD = "ordering_field"
EVENT_TIME = "event_time"
VALID_INSTANTS = "valid_instants"
ARCHIVED_BEFORE = "archived_before"
META = "meta_fields"
READ_OPTIMIZED = "read_optimized"


def scan_context(storage: Storage, state: HudiState) -> ScanContext:
    """The ScanContext of the snapshot ``state`` of the table in ``storage``."""
    spec = state.merge_spec
    has_meta = state.table_schema.get_field_index(META_FIELDS[0]) >= 0
    return ScanContext(
        format="hudi",
        table_uri=storage.root,
        schema=state.schema,
        partition_columns=prunable_partition_columns(state.config, state.table_schema),
        file_format=state.config.base_file_format.lower(),
        storage_options=dict(getattr(storage, "storage_options", None) or {}),
        options={
            KEY_FIELDS: ",".join(spec.key_fields),
            ORDERING_FIELD: spec.ordering_field or "",
            EVENT_TIME: str(spec.event_time).lower(),
            VALID_INSTANTS: ",".join(sorted(state.visible.instants)),
            ARCHIVED_BEFORE: state.visible.archived_before,
            META: str(has_meta).lower(),
            READ_OPTIMIZED: str(state.options.read_optimized).lower(),
        },
    )


def read_tasks(
    context: ScanContext, tasks: Sequence[ScanTask], columns: Sequence[str] | None
) -> Iterator[pa.RecordBatch]:
    """Yield the live rows of Hudi ``tasks`` (file slices), one batch per slice, in order."""
    storage = open_storage(context.table_uri, context.storage_options)
    options = context.options
    table_schema = context.schema
    if options.get(META) == "true" and table_schema.get_field_index(META_FIELDS[0]) < 0:
        meta = [pa.field(n, pa.string(), nullable=False) for n in META_FIELDS]
        table_schema = pa.schema(meta + list(table_schema))
    visible = Visible(
        instants=frozenset(filter(None, options.get(VALID_INSTANTS, "").split(","))),
        archived_before=options.get(ARCHIVED_BEFORE, ""),
    )
    spec = MergeSpec(
        key_fields=tuple(filter(None, options.get(KEY_FIELDS, "").split(","))),
        ordering_field=options.get(ORDERING_FIELD) or None,
        event_time=options.get(EVENT_TIME) == "true",
    )
    reader = SliceReader(
        storage, table_schema, spec, visible.includes, options.get(READ_OPTIMIZED) == "true"
    )
    names = list(context.schema.names if columns is None else columns)
    out_schema = pa.schema([context.schema.field(c) for c in names])
    root = storage.root.rstrip("/") + "/"
    for task in tasks:
        base = None if is_log_file(task.path) else _relative(task.path, root)
        logs = [_relative(p, root) for p in task.log_files]
        rows = reader.read(base, logs, names)
        for batch in rows.to_batches():
            if batch.num_rows:
                yield pa.RecordBatch.from_arrays(batch.columns, schema=out_schema)


def _relative(path: str, root: str) -> str:
    return path[len(root) :] if path.startswith(root) else path
