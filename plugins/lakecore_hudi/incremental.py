"""The change feed of a Hudi table: inserts, updates and deletes of instants ``start..end``.

Changes are derived from the timeline, instant by instant: for each completed write ``v`` of
the range, the file groups ``v`` touched (its write stats and replaced file groups, plus any
slice whose files differ) are read as they were at the previous completed write and at ``v``,
and their records compared by key (``_hoodie_partition_path`` + ``_hoodie_record_key``):

- a key only at ``v``: ``insert`` (its row at ``v``);
- a key only before: ``delete`` (its row before; MoR delete blocks, CoW rewrites without it
  and replaced file groups all end up here);
- a key on both sides whose record ``v`` wrote (``_hoodie_commit_time == v``):
  ``update_preimage`` (the row before) and ``update_postimage`` (the row at ``v``);
- a key on both sides that ``v`` did not write (a CoW rewrite's untouched records): nothing.

Compaction, clustering and log compaction change no rows and contribute nothing. CDC log
files (``hoodie.table.cdc.enabled``) are not read: the derivation gives the same changes as
long as the previous file slices are kept (``VersionNotFoundError`` once they are cleaned).

Rows come in the schema of ``end`` (older rows conformed: missing columns null), with
``_change_type``, ``_commit_version`` (the instant, text), ``_commit_timestamp``
(timestamp[us, UTC] of the instant time) as Delta's change feed has them. The ``_hoodie_*``
columns are kept and listed in the schema metadata under ``lakecore.system_columns``, so
``Table.changes`` can drop them unless asked (``include_meta=True``).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import UnsupportedFeatureError, VersionNotFoundError
from lakecore.storage import Storage
from lakecore_hudi.conform import conform
from lakecore_hudi.keys import COMMIT_TIME, META_FIELDS, PARTITION_PATH, record_keys
from lakecore_hudi.options import ReadOptions
from lakecore_hudi.state import HudiState, commit_metadata, instant_epoch_ms, load_state
from lakecore_hudi.timeline.instants import Instant
from lakecore_hudi.view import FileSlice, data_files

CHANGE_TYPE = "_change_type"
COMMIT_VERSION = "_commit_version"
COMMIT_TIMESTAMP = "_commit_timestamp"
COMMIT_TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")
CHANGE_COLUMNS = (CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP)
SYSTEM_COLUMNS_KEY = b"lakecore.system_columns"
"""Schema metadata key of a change feed: its system columns, comma-separated."""
NO_ROW_CHANGES = frozenset({"compact", "cluster", "log_compact"})
"""Write operations that rewrite file slices without changing any record."""
_FULL = ReadOptions()  # meta fields kept, log files merged


def read_changes(storage: Storage, start: str, end: str | None) -> pa.Table:
    """The row changes of the completed writes ``start..end`` (inclusive; ``end`` None: the
    latest), as Delta's ``changes(start, end)``: instants ``t`` with ``start <= t <= end``.

    Raises ``VersionNotFoundError`` for an ``end`` that is not a completed write, a ``start``
    after ``end``, a range whose previous file slices were cleaned, or one whose previous
    version is archived (files older than the active timeline remain);
    ``UnsupportedFeatureError`` for tables written without meta fields (no commit times).
    """
    target = load_state(storage, end, None, _FULL)
    if target.instant is not None and COMMIT_TIME not in target.table_schema.names:
        raise UnsupportedFeatureError(
            "no-meta-fields", "incremental reads need _hoodie_commit_time (populated meta fields)"
        )
    upto = target.version
    if start > upto:
        raise VersionNotFoundError(
            f"change range {start}..{upto} is empty: start is after the end instant"
        )
    out = _output_schema(target.table_schema)
    writes = target.timeline.completed_write_instants()
    earlier = [i for i in writes if i.timestamp < start]
    before: HudiState | None = None
    before_version = earlier[-1].timestamp if earlier else None
    if before_version is None:
        _refuse_archived_start(storage, target, start)
    parts: list[pa.Table] = []
    for instant in [i for i in writes if start <= i.timestamp <= upto]:
        if not _changes_no_rows(storage, target, instant):
            if before is None and before_version is not None:
                before = load_state(storage, before_version, None, _FULL)
            after = load_state(storage, instant.timestamp, None, _FULL)
            touched = _touched_file_ids(storage, after, instant)
            parts.extend(_instant_changes(storage, before, after, touched, out))
            before = after
        else:
            before = None
        before_version = instant.timestamp
    return pa.concat_tables(parts) if parts else out.empty_table()


def _refuse_archived_start(storage: Storage, target: HudiState, start: str) -> None:
    """Raise ``VersionNotFoundError`` when writes older than the active timeline left files:
    the range's first instant then has a previous version that cannot be loaded (archived),
    and taking it as empty would turn its updates into inserts."""
    instants = target.timeline.instants
    first_active = instants[0].timestamp if instants else ""
    older = [f for f in data_files(storage.list_all("")) if f.name.instant < first_active]
    if older:
        later = [i.timestamp for i in target.timeline.completed_write_instants()]
        raise VersionNotFoundError(
            f"the changes of {start!r} need the version before the active timeline "
            f"(archived; files such as {older[0].info.path} were written then): "
            f"changes can start at {later[1] if len(later) > 1 else 'no instant'}"
        )


def _output_schema(table_schema: pa.Schema) -> pa.Schema:
    system = [n for n in table_schema.names if n in META_FIELDS]
    return pa.schema(
        [
            *table_schema,
            pa.field(CHANGE_TYPE, pa.string()),
            pa.field(COMMIT_VERSION, pa.string()),
            pa.field(COMMIT_TIMESTAMP, COMMIT_TIMESTAMP_TYPE),
        ],
        metadata={SYSTEM_COLUMNS_KEY: ",".join(system).encode()},
    )


def _changes_no_rows(storage: Storage, state: HudiState, instant: Instant) -> bool:
    if instant.action in ("compaction", "logcompaction", "clustering"):
        return True
    meta = commit_metadata(storage, state.timeline, instant)
    return (meta.operation_type or "").lower() in NO_ROW_CHANGES


def _touched_file_ids(storage: Storage, state: HudiState, instant: Instant) -> set[str]:
    """File groups ``instant`` wrote or replaced (by its commit metadata)."""
    meta = commit_metadata(storage, state.timeline, instant)
    touched = {s.file_id for s in meta.write_stats()}
    touched.update(file_id for _, file_id in meta.replaced_file_ids())
    return touched


def _files(s: FileSlice) -> tuple[str | None, tuple[str, ...]]:
    return (None if s.base_file is None else s.base_file.path, tuple(f.path for f in s.log_files))


def _instant_changes(
    storage: Storage,
    before: HudiState | None,
    after: HudiState,
    touched: set[str],
    out: pa.Schema,
) -> list[pa.Table]:
    old = {(s.partition_path, s.file_id): s for s in (before.slices if before else ())}
    new = {(s.partition_path, s.file_id): s for s in after.slices}

    def changed(
        mine: dict[tuple[str, str], FileSlice], other: dict[tuple[str, str], FileSlice]
    ) -> list[FileSlice]:
        """Slices of ``mine`` the instant wrote or replaced, or whose files differ in ``other``
        (a log file appended in place keeps its name: the write stats catch that)."""
        return [
            s
            for k, s in mine.items()
            if s.file_id in touched or k not in other or _files(other[k]) != _files(s)
        ]

    was = _rows(storage, before, changed(old, new), out) if before is not None else None
    now = _rows(storage, after, changed(new, old), out)
    if was is None:
        was = now.schema.empty_table()
    key_fields = after.config.record_key_fields
    was_keys = _keys(was, key_fields)
    now_keys = _keys(now, key_fields)
    existed = pc.is_in(now_keys, value_set=was_keys)
    kept = pc.is_in(was_keys, value_set=now_keys)
    version = after.version
    inserted = now.filter(pc.invert(existed))
    deleted = was.filter(pc.invert(kept))
    updated = pc.and_(existed, pc.equal(now.column(COMMIT_TIME), version))
    post = now.filter(updated)
    pre = was.filter(pc.is_in(was_keys, value_set=now_keys.filter(updated)))
    stamp = instant_epoch_ms(version)
    pieces = [
        _tag(inserted, "insert", version, stamp, out),
        _tag(deleted, "delete", version, stamp, out),
        _tag(pre, "update_preimage", version, stamp, out),
        _tag(post, "update_postimage", version, stamp, out),
    ]
    return [p for p in pieces if p.num_rows]


def _rows(storage: Storage, state: HudiState, slices: list[FileSlice], out: pa.Schema) -> pa.Table:
    """The merged rows of ``slices`` at ``state``'s instant, in the table columns of ``out``."""
    from lakecore_hudi.format import snapshot_of

    columns = pa.schema([f for f in out if f.name not in CHANGE_COLUMNS])
    if not slices:
        return columns.empty_table()
    subset = replace(state, slices=tuple(slices), options=_FULL)
    return conform(snapshot_of(storage, subset).to_arrow(), columns)


def _keys(table: pa.Table, key_fields: tuple[str, ...]) -> pa.ChunkedArray:
    """Record identity: partition path and record key (one key may live in two partitions
    of a table with a non-global index)."""
    keys = record_keys(table, key_fields) if table.num_rows else pa.chunked_array([], pa.string())
    partitions = table.column(PARTITION_PATH).cast(pa.string()).fill_null("")
    joined = pc.binary_join_element_wise(partitions, keys, "\x00")
    return joined if isinstance(joined, pa.ChunkedArray) else pa.chunked_array([joined])


def _tag(rows: pa.Table, change: str, version: str, stamp: int | None, out: pa.Schema) -> pa.Table:
    n = rows.num_rows
    rows = rows.append_column(CHANGE_TYPE, pa.array([change] * n, pa.string()))
    rows = rows.append_column(COMMIT_VERSION, pa.array([version] * n, pa.string()))
    if stamp is None:  # an instant that is not a date-time (none Hudi writes)
        stamps = pa.nulls(n, COMMIT_TIMESTAMP_TYPE)
    else:
        stamps = pa.array(np.full(n, stamp * 1000), pa.int64()).cast(COMMIT_TIMESTAMP_TYPE)
    rows = rows.append_column(COMMIT_TIMESTAMP, stamps)
    return rows.cast(out)
