"""A change feed for Lance, derived from consecutive manifests (Lance keeps none itself).

For each version ``v`` of ``start..end``, its manifest is compared with version ``v - 1``'s,
fragment by fragment (by fragment id):

- a fragment only in ``v`` (append, the new rows of an update or merge_insert, an overwrite,
  a restore): its live rows at ``v`` are ``insert``;
- a fragment only in ``v - 1`` (dropped by a delete, an update, an overwrite): its live rows at
  ``v - 1`` are ``delete``;
- a fragment in both with the same data files: the rows newly marked in its deletion file are
  ``delete`` (an update's old rows: delete then insert, as the issue specifies), and rows no
  longer marked (a restore to an older deletion file) are ``insert``;
- a fragment in both whose data files changed (added, dropped or rewritten columns) changed no
  rows.

Versions whose transaction rewrote fragments without changing rows (``rewrite``: compaction)
or changed only metadata (indexes, config, schema projection) contribute nothing. Rows come in
the schema of the ``end`` version (columns matched by field id; a column a row's version
lacks is null), with ``_change_type``, ``_commit_version`` (int64) and ``_commit_timestamp``
(timestamp[us, UTC]) as Delta's change feed has them.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lakecore.errors import VersionNotFoundError
from lakecore.model.schema import field_id
from lakecore.storage import Storage
from lakecore_lance.deletions import deletion_path, ensure_within, read_deleted
from lakecore_lance.history import read_transaction
from lakecore_lance.manifest import list_manifests
from lakecore_lance.proto import table_pb2
from lakecore_lance.scan import read_files, scan_context
from lakecore_lance.state import LanceState, ensure_unique_fragment_ids, load_state

CHANGE_TYPE = "_change_type"
COMMIT_VERSION = "_commit_version"
COMMIT_TIMESTAMP = "_commit_timestamp"
COMMIT_TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")
NO_ROW_CHANGES = frozenset(
    {"rewrite", "create_index", "project", "update_config", "reserve_fragments"}
)
"""Transactions that change no rows (their fragment differences are physical only)."""


def read_changes(storage: Storage, start: int, end: int | None) -> pa.Table:
    """The row changes of versions ``start..end`` (inclusive; ``end`` None: the latest).

    Raises ``VersionNotFoundError`` for a version the dataset does not have.
    """
    versions = [m.version for m in list_manifests(storage)]
    last = versions[-1] if end is None else end
    if start > last or start not in versions or last not in versions:
        raise VersionNotFoundError(
            f"no versions {start}..{last} in the Lance dataset at {storage.root} "
            f"(versions {versions[0]}..{versions[-1]})"
        )
    target = load_state(storage, last)
    schema = pa.schema(
        [
            *target.schema,
            pa.field(CHANGE_TYPE, pa.string()),
            pa.field(COMMIT_VERSION, pa.int64()),
            pa.field(COMMIT_TIMESTAMP, COMMIT_TIMESTAMP_TYPE),
        ]
    )
    parts: list[pa.Table] = []
    previous = None
    for version in [v for v in versions if start <= v <= last]:
        current = load_state(storage, version)
        if previous is None and version - 1 in versions:
            previous = load_state(storage, version - 1)
        txn = read_transaction(storage, current.loaded)
        op = None if txn is None else txn.WhichOneof("operation")
        if op not in NO_ROW_CHANGES:
            parts.extend(_version_changes(storage, previous, current, target.schema, schema))
        previous = current
    if not parts:
        return schema.empty_table()
    return pa.concat_tables(parts)


def _version_changes(
    storage: Storage,
    before: LanceState | None,
    after: LanceState,
    out: pa.Schema,
    schema: pa.Schema,
) -> list[pa.Table]:
    for state in (before, after):
        if state is not None:  # fragments are matched by id below
            ensure_unique_fragment_ids(state.manifest, state.loaded.file.path)
    old = {f.id: f for f in before.manifest.fragments} if before is not None else {}
    new = {f.id: f for f in after.manifest.fragments}
    found: list[pa.Table] = []
    inserted = [i for i in new if i not in old]
    if inserted:
        found.append(_tag(_live(storage, after, inserted, out), "insert", after, schema))
    removed = [i for i in old if i not in new]
    if removed and before is not None:
        found.append(_tag(_live(storage, before, removed, out), "delete", after, schema))
    for fid in [i for i in new if i in old]:
        was, now = old[fid], new[fid]
        if [f.path for f in was.files] != [f.path for f in now.files]:
            continue  # columns added, dropped or rewritten: no row changed
        deleted_now, deleted_was = _deleted(storage, now), _deleted(storage, was)
        marked = np.setdiff1d(deleted_now, deleted_was)
        if marked.size and before is not None:
            rows = _all_rows(storage, before, [fid], out)
            ensure_within(marked, rows.num_rows, f"fragment {fid} at version {after.version}")
            found.append(
                _tag(rows.take(pa.array(marked.astype(np.int64))), "delete", after, schema)
            )
        # Only a restore unmarks rows (to an older deletion file of the same fragment): the
        # rows it brings back are inserts, or a reader of the feed never sees them again.
        unmarked = np.setdiff1d(deleted_was, deleted_now)
        if unmarked.size:
            rows = _all_rows(storage, after, [fid], out)
            ensure_within(unmarked, rows.num_rows, f"fragment {fid} at version {after.version}")
            found.append(
                _tag(rows.take(pa.array(unmarked.astype(np.int64))), "insert", after, schema)
            )
    return [t for t in found if t.num_rows]


def _deleted(storage: Storage, fragment: table_pb2.DataFragment) -> np.ndarray:
    if not fragment.HasField("deletion_file"):
        return np.empty(0, dtype=np.uint64)
    return read_deleted(storage, deletion_path(int(fragment.id), fragment.deletion_file))


def _subset(storage: Storage, state: LanceState, fragment_ids: list[int]) -> pa.Table:
    from lakecore_lance.file_index import FRAGMENT_ID, build_file_index

    files = build_file_index(storage, state)
    keep = pa.array([i in set(fragment_ids) for i in files.column(FRAGMENT_ID).to_pylist()])
    return files.filter(keep)


def _all_rows(
    storage: Storage, state: LanceState, fragment_ids: list[int], out: pa.Schema
) -> pa.Table:
    """Every row (deleted ones included) of the fragments, in ``out``'s columns."""
    context = scan_context(storage, state)
    files = _subset(storage, state, fragment_ids)
    names, renames = _columns(state.schema, out)
    batches = [r.batch for r in read_files(context, files, names)]
    table = pa.Table.from_batches(batches, schema=pa.schema([state.schema.field(n) for n in names]))
    return _conform(table, renames, out)


def _live(storage: Storage, state: LanceState, fragment_ids: list[int], out: pa.Schema) -> pa.Table:
    """The live rows of the fragments at ``state``'s version, in ``out``'s columns."""
    from lakecore.planning import read_files as core_read
    from lakecore_lance.format import LanceFormat

    context = scan_context(storage, state)
    files = _subset(storage, state, fragment_ids)
    names, renames = _columns(state.schema, out)
    batches = list(core_read(context, files, names, table_format=LanceFormat()))
    table = pa.Table.from_batches(batches, schema=pa.schema([state.schema.field(n) for n in names]))
    return _conform(table, renames, out)


def _columns(schema: pa.Schema, out: pa.Schema) -> tuple[list[str], dict[str, str]]:
    """The columns of ``schema`` that ``out`` has (by field id), and their names in ``out``."""
    by_id = {field_id(f): f.name for f in out}
    names: list[str] = []
    renames: dict[str, str] = {}
    for f in schema:
        target = by_id.get(field_id(f))
        if target is not None:
            names.append(f.name)
            renames[f.name] = target
    return names, renames


def _conform(table: pa.Table, renames: dict[str, str], out: pa.Schema) -> pa.Table:
    columns = {renames[n]: table.column(n) for n in table.column_names}
    arrays = []
    for f in out:
        column = columns.get(f.name)
        if column is None:
            arrays.append(pa.nulls(table.num_rows, f.type))
        else:
            arrays.append(column if column.type.equals(f.type) else column.cast(f.type))
    return pa.Table.from_arrays(arrays, schema=out)


def _tag(rows: pa.Table, kind: str, state: LanceState, schema: pa.Schema) -> pa.Table:
    n = rows.num_rows
    ms = state.timestamp_ms or 0
    stamps = pa.array(np.full(n, ms * 1000, dtype=np.int64)).cast(COMMIT_TIMESTAMP_TYPE)
    rows = rows.append_column(CHANGE_TYPE, pa.array([kind] * n, pa.string()))
    rows = rows.append_column(COMMIT_VERSION, pa.array(np.full(n, state.version), pa.int64()))
    rows = rows.append_column(COMMIT_TIMESTAMP, stamps)
    return rows.cast(schema)
