"""The change data feed: row-level changes of a range of versions.

Per the protocol, a commit's ``cdc`` files, when present, are its changes (they carry
``_change_type``). Otherwise changes are derived: added files are inserts, removed files are
deletes, and a file whose deletion vector grew in the commit deletes exactly the newly
deleted rows.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa

from lakecore.errors import VersionNotFoundError
from lakecore.model import files as fi
from lakecore.model.schema import physical_name
from lakecore.planning.read import read_files
from lakecore.planning.tasks import ScanContext
from lakecore.storage import Storage
from lakecore_delta.deletion_vectors import DeletionVectorDescriptor, load_deletion_vector
from lakecore_delta.file_index import index_actions
from lakecore_delta.log.commits import parse_actions, read_all
from lakecore_delta.log.files import LogFile, LogFileKind
from lakecore_delta.log.schemas import DV_TYPE, partition_values_type
from lakecore_delta.log.segment import list_log
from lakecore_delta.paths import decode_paths
from lakecore_delta.protocol import COLUMN_MAPPING_MODE
from lakecore_delta.scan import scan_context
from lakecore_delta.state import ICT_ENABLED, DeltaState, commit_timestamp, load_state

CHANGE_TYPE = "_change_type"
COMMIT_VERSION = "_commit_version"
COMMIT_TIMESTAMP = "_commit_timestamp"
COMMIT_TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")


def read_changes(storage: Storage, start: int, end: int | None) -> pa.Table:
    """Return the changes of versions ``start..end`` in the schema of version ``end``.

    Raises ``VersionNotFoundError`` when a commit of the range is no longer in the log.
    """
    state = load_state(storage, end)
    end = state.version
    if start < 0 or start > end:
        raise VersionNotFoundError(f"change range {start}..{end} is empty or negative")
    commits = {f.version: f for f in list_log(storage, start) if f.kind is LogFileKind.COMMIT}
    missing = [v for v in range(start, end + 1) if v not in commits]
    if missing:
        raise VersionNotFoundError(
            f"the commits of versions {missing[0]}..{missing[-1]} are no longer in the log"
        )
    files = [commits[v] for v in range(start, end + 1)]
    ict = state.configuration.get(ICT_ENABLED, "false").lower() == "true"
    out_schema = _output_schema(state)
    pieces = [
        _commit_changes(storage, state, f, chunk, ict, out_schema)
        for f, chunk in zip(files, read_all(storage, files), strict=True)
    ]
    return pa.concat_tables([p for p in pieces if p.num_rows] or [out_schema.empty_table()])


def _output_schema(state: DeltaState) -> pa.Schema:
    return pa.schema(
        [
            *state.schema,
            pa.field(CHANGE_TYPE, pa.string()),
            pa.field(COMMIT_VERSION, pa.int64()),
            pa.field(COMMIT_TIMESTAMP, COMMIT_TIMESTAMP_TYPE),
        ]
    )


def _commit_changes(
    storage: Storage, state: DeltaState, f: LogFile, chunk: bytes, ict: bool, out: pa.Schema
) -> pa.Table:
    actions = parse_actions(chunk, f)
    cdc = [a["cdc"] for a in actions if isinstance(a.get("cdc"), dict)]
    mode = state.configuration.get(COLUMN_MAPPING_MODE, "none")
    if cdc:
        schema = pa.schema([*state.schema, pa.field(CHANGE_TYPE, pa.string())])
        reader = _context(storage, state, schema)
        table = _read(reader, _index(cdc, state, storage), None)
    else:
        table = _derived_changes(storage, state, actions, mode)
    ts = commit_timestamp(f, chunk, ict)
    n = table.num_rows
    table = table.append_column(COMMIT_VERSION, pa.array(np.full(n, f.version), pa.int64()))
    table = table.append_column(
        COMMIT_TIMESTAMP, pa.array(np.full(n, ts * 1000), pa.int64()).cast(COMMIT_TIMESTAMP_TYPE)
    )
    return table.select(out.names).cast(out)


def _derived_changes(
    storage: Storage, state: DeltaState, actions: list[dict[str, Any]], mode: str
) -> pa.Table:
    adds = [
        a["add"]
        for a in actions
        if isinstance(a.get("add"), dict) and a["add"].get("dataChange", True)
    ]
    removes = [
        a["remove"]
        for a in actions
        if isinstance(a.get("remove"), dict) and a["remove"].get("dataChange", True)
    ]
    reader = _context(storage, state, state.schema)
    added_paths = {a["path"] for a in adds}
    removed_by_path = {r["path"]: r for r in removes}
    pieces = []
    inserts = [a for a in adds if a["path"] not in removed_by_path]
    if inserts:
        pieces.append(_tag(_read(reader, _index(inserts, state, storage), None), "insert"))
    deletes = [r for r in removes if r["path"] not in added_paths]
    if deletes:
        pieces.append(_tag(_read(reader, _index(deletes, state, storage), None), "delete"))
    for a in adds:
        old = removed_by_path.get(a["path"])
        if old is not None:
            gone, back = _dv_changes(storage, reader, state, old, a)
            pieces += [_tag(gone, "delete"), _tag(back, "insert")]
    schema = pa.schema([*state.schema, pa.field(CHANGE_TYPE, pa.string())])
    return pa.concat_tables([p.cast(schema) for p in pieces] or [schema.empty_table()])


def _dv_changes(
    storage: Storage,
    reader: ScanContext,
    state: DeltaState,
    old: dict[str, Any],
    new: dict[str, Any],
) -> tuple[pa.Table, pa.Table]:
    """Rows deleted, and rows brought back, by replacing ``old``'s deletion vector with
    ``new``'s (same file). Only a restore brings rows back (to an older, smaller vector):
    they are inserts, or a reader of the feed never sees them again."""
    before = _deleted_rows(storage, old.get("deletionVector"))
    after = _deleted_rows(storage, new.get("deletionVector"))
    gone, back = np.setdiff1d(after, before), np.setdiff1d(before, after)
    plain = dict(new, deletionVector=None)
    table = _read(reader, _index([plain], state, storage), None)
    return (
        table.take(pa.array(gone.astype(np.int64))),
        table.take(pa.array(back.astype(np.int64))),
    )


def _deleted_rows(storage: Storage, dv: dict[str, Any] | None) -> np.ndarray:
    if not dv:
        return np.array([], dtype=np.uint64)
    descriptor = DeletionVectorDescriptor(
        dv["storageType"],
        dv["pathOrInlineDv"],
        dv.get("offset"),
        dv["sizeInBytes"],
        dv["cardinality"],
    )
    return load_deletion_vector(descriptor, storage)


def _tag(table: pa.Table, change: str) -> pa.Table:
    return table.append_column(CHANGE_TYPE, pa.array([change] * table.num_rows, pa.string()))


def _index(actions: list[dict[str, Any]], state: DeltaState, storage: Storage) -> pa.Table:
    physical = [physical_name(f) for f in state.partition_fields()]
    pv_type = partition_values_type(physical)
    adds = pa.table(
        {
            "path": decode_paths(pa.array([a["path"] for a in actions], pa.string()), storage.root),
            "partitionValues": pa.array(
                [{k: (a.get("partitionValues") or {}).get(k) for k in physical} for a in actions],
                pv_type,
            ),
            "size": pa.array([a.get("size") for a in actions], pa.int64()),
            "modificationTime": pa.array([a.get("modificationTime") for a in actions], pa.int64()),
            "stats": pa.array([a.get("stats") for a in actions], pa.string()),
            "deletionVector": pa.array([a.get("deletionVector") for a in actions], DV_TYPE),
        }
    )
    return index_actions(adds, state)


def _context(storage: Storage, state: DeltaState, schema: pa.Schema) -> ScanContext:
    """The scan context of ``state`` reading ``schema`` (the change files' own columns)."""
    return replace(scan_context(storage, state), schema=schema)


def _read(context: ScanContext, index: pa.Table, columns: list[str] | None) -> pa.Table:
    """The live rows of ``index`` through the one read path (deletion vectors applied)."""
    from lakecore_delta.format import DeltaFormat

    files = index.select([fi.PATH, fi.PARTITION, fi.DELETION])
    batches = list(read_files(context, files, columns, table_format=DeltaFormat()))
    schema = (
        context.schema if columns is None else pa.schema([context.schema.field(c) for c in columns])
    )
    return pa.Table.from_batches(batches, schema=schema)
