"""Actions to Delta log lines: one function per action type."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc

from lakecore import __version__
from lakecore.model.actions import (
    Action,
    AddChangeFiles,
    AddFiles,
    CommitInfo,
    DeleteRows,
    RemoveFiles,
    SetProperties,
    SetSchema,
    SetTransaction,
)
from lakecore.model.files import DELETION, MAX, MIN, NULL_COUNT, PARTITION, RECORD_COUNT
from lakecore.model.schema import physical_name
from lakecore_delta.commit_metadata import app_metadata_field
from lakecore_delta.file_index import deletion_descriptor
from lakecore_delta.write.metrics_out import operation_metrics
from lakecore_delta.write.partition_out import partition_text_struct
from lakecore_delta.write.stats_out import render_stats_json

ENGINE_INFO = f"lakecore/{__version__}"


def encode_path(path: str) -> str:
    """A decoded relative path as the log stores it (URI-encoded); absolute URIs kept."""
    if "://" in path:
        return path
    return quote(path, safe="/=@,+&$!~'()")


def _partition_values(row: Mapping[str, Any], physical: Mapping[str, str]) -> dict[str, Any]:
    texts = row.get(PARTITION) or {}  # rendered by ``_rows``
    return {physical[k]: v for k, v in texts.items()}


def _dv_json(deletion: Mapping[str, Any] | None) -> dict[str, Any] | None:
    dv = deletion_descriptor(deletion)  # the index's neutral ``deletion`` value
    if dv is None:
        return None
    out: dict[str, Any] = {
        "storageType": dv.storage_type,
        "pathOrInlineDv": dv.path_or_inline_dv,
        "sizeInBytes": dv.size_in_bytes,
        "cardinality": dv.cardinality,
    }
    if dv.offset is not None:
        out["offset"] = dv.offset
    return out


_DAY_S = 86_400
_PYTHON_TIME_S = (-62_135_596_800, 253_402_300_799)
"""The first and last whole seconds since the epoch Python's datetime holds (years 1..9999,
in UTC)."""
_UTC_NAMES = frozenset({"UTC", "utc", "Etc/UTC", "Z", "+00:00", "GMT", "Etc/GMT"})
_PER_S = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def _rows(files: pa.Table) -> list[dict[str, Any]]:
    """The index rows of ``files`` as Python values, with ``partition`` as the log's texts
    (``partition_text_struct``: rendered by Arrow, so a date of year 0 is ``0000-01-01``;
    raises ``InvalidArgumentError`` for a value the log cannot spell). A ``min``/``max`` date
    or timestamp Python cannot hold (before year 1 or after year 9999: legal in Arrow,
    Parquet and Delta) is left unknown (stats are optional in Delta; its null count is
    kept)."""
    if PARTITION in files.column_names:
        at = files.column_names.index(PARTITION)
        texts = partition_text_struct(files.column(at))
        files = files.set_column(at, pa.field(PARTITION, texts.type), texts)
    rows: list[dict[str, Any]] = python_safe_bounds(files).to_pylist()
    return rows


def python_safe_bounds(files: pa.Table) -> pa.Table:
    """``files`` with each ``min``/``max`` date or timestamp Python cannot hold (before year 1
    or after year 9999) made null (unknown), so that ``to_pylist`` never fails on them."""
    for name in (MIN, MAX):
        if name in files.column_names:
            at = files.column_names.index(name)
            column = files.column(at)
            safe = pa.chunked_array([_far_times_nulled(c) for c in column.chunks], column.type)
            files = files.set_column(at, files.field(at), safe)
    return files


def _far_times_nulled(array: pa.Array) -> pa.Array:
    t = array.type
    if pa.types.is_struct(t):
        flat = array.flatten()  # children sliced as the struct is, its nulls folded in
        return pa.StructArray.from_arrays(
            [_far_times_nulled(c) for c in flat], fields=list(t), mask=array.is_null()
        )
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        if pa.types.is_timestamp(t):
            per_s, raw = _PER_S[t.unit], array.view(pa.int64())
        elif pa.types.is_date32(t):
            per_s, raw = 1, array.view(pa.int32()).cast(pa.int64())
            raw = pc.multiply(raw, _DAY_S)
        else:  # date64: milliseconds
            per_s, raw = 1_000, array.view(pa.int64())
        # A zone other than UTC moves a value by up to a day when Python takes it: keep a day
        # in from each end there (zone-less values and dates are taken as they are).
        margin = _DAY_S if pa.types.is_timestamp(t) and t.tz and t.tz not in _UTC_NAMES else 0
        first, end = _PYTHON_TIME_S[0] + margin, _PYTHON_TIME_S[1] + 1 - margin
        lo, hi = max(first * per_s, -(1 << 63)), min(end * per_s - 1, (1 << 63) - 1)
        held = pc.and_(pc.greater_equal(raw, lo), pc.less_equal(raw, hi))
        return pc.if_else(held, array, pa.nulls(len(array), t))
    return array


def _stats(row: Mapping[str, Any], data_fields: Sequence[pa.Field]) -> str | None:
    # Every file's stats are typed (new files: exact bounds; files re-added from the index by
    # a restore or a new deletion vector: the index's bounds, made safe by
    # ``stats_out.index_bounds``); the JSON is always rendered here. A file with a deletion
    # vector has wide bounds: its min/max/nullCount may describe deleted rows.
    if MIN not in row and NULL_COUNT not in row:
        return None
    tight = False if row.get(DELETION) is not None else None
    return render_stats_json(
        row.get(RECORD_COUNT), row.get(MIN), row.get(MAX), row.get(NULL_COUNT), data_fields, tight
    )


def add_lines(
    files: pa.Table,
    physical: Mapping[str, str],
    data_change: bool,
    data_fields: Sequence[pa.Field] = (),
) -> Iterator[dict[str, Any]]:
    """``add`` actions for index rows (write layout: typed ``min``/``max``/``null_count``
    rendered as ``stats`` JSON over the table's logical ``data_fields``, ``tightBounds:
    false`` where the row has a ``deletion``; optional ``deletion``). ``record_count`` must be
    the physical row count (deleted rows included), as the protocol requires of
    ``numRecords``."""
    for row in _rows(files):
        add: dict[str, Any] = {
            "path": encode_path(row["path"]),
            "partitionValues": _partition_values(row, physical),
            "size": row["size"],
            "modificationTime": row["modification_time"],
            "dataChange": data_change,
        }
        stats = _stats(row, data_fields)
        if stats is not None:
            add["stats"] = stats
        dv = _dv_json(row.get("deletion"))
        if dv:
            add["deletionVector"] = dv
        yield {"add": add}


def remove_lines(
    files: pa.Table, physical: Mapping[str, str], data_change: bool, now: int
) -> Iterator[dict[str, Any]]:
    """``remove`` actions for rows of a snapshot's file index."""
    for row in _rows(files):
        remove: dict[str, Any] = {
            "path": encode_path(row["path"]),
            "deletionTimestamp": now,
            "dataChange": data_change,
            "extendedFileMetadata": True,
            "partitionValues": _partition_values(row, physical),
            "size": row["size"],
        }
        dv = _dv_json(row.get("deletion"))
        if dv:
            remove["deletionVector"] = dv
        yield {"remove": remove}


def cdc_lines(files: pa.Table, physical: Mapping[str, str]) -> Iterator[dict[str, Any]]:
    """``cdc`` actions for change-data files."""
    for row in _rows(files):
        yield {
            "cdc": {
                "path": encode_path(row["path"]),
                "partitionValues": _partition_values(row, physical),
                "size": row["size"],
                "dataChange": False,
            }
        }


def txn_line(action: SetTransaction, now: int) -> dict[str, Any]:
    """The ``txn`` action of an application transaction."""
    return {"txn": {"appId": action.app_id, "version": action.version, "lastUpdated": now}}


def commit_info_line(
    info: CommitInfo, read_version: int | None, now: int, ict: int | None, blind_append: bool
) -> dict[str, Any]:
    """The ``commitInfo`` action (``inCommitTimestamp`` first when the table uses ICT).

    ``timestamp`` is ``info.timestamp_ms`` when the commit was given one (then it is the
    in-commit timestamp too), else ``now``; ``info.app_metadata`` goes in ``appMetadata``,
    ``info.metrics`` in ``operationMetrics`` (``metrics_out``).
    """
    body: dict[str, Any] = {}
    if ict is not None:
        body["inCommitTimestamp"] = ict
    body.update(
        {
            "timestamp": now if info.timestamp_ms is None else info.timestamp_ms,
            "operation": info.operation,
            "operationParameters": {
                k: v if isinstance(v, str) else json.dumps(v) for k, v in info.parameters.items()
            },
            "isolationLevel": "Serializable",
            "isBlindAppend": blind_append,
            "engineInfo": ENGINE_INFO,
            "txnId": str(uuid.uuid4()),
        }
    )
    if read_version is not None:
        body["readVersion"] = read_version
    metrics = operation_metrics(info)
    if metrics is not None:
        body["operationMetrics"] = metrics
    body.update(app_metadata_field(info))
    return {"commitInfo": body}


def physical_names(
    schema: pa.Schema, partition_columns: Sequence[str], mapped: bool
) -> dict[str, str]:
    """Logical -> physical name of each partition column."""
    return {c: physical_name(schema.field(c)) if mapped else c for c in partition_columns}


def file_action_lines(
    actions: Sequence[Action],
    physical: Mapping[str, str],
    now: int,
    data_fields: Sequence[pa.Field] = (),
) -> list[dict[str, Any]]:
    """The log lines of the file-level actions, in a stable order (removes, adds, cdc, txn)."""
    lines: list[dict[str, Any]] = []
    for a in actions:
        if isinstance(a, RemoveFiles):
            lines.extend(remove_lines(a.files, physical, a.data_change, now))
    for a in actions:
        if isinstance(a, AddFiles):
            lines.extend(add_lines(a.files, physical, a.data_change, data_fields))
        elif isinstance(a, DeleteRows):
            lines.extend(add_lines(a.files, physical, True, data_fields))
        elif isinstance(a, AddChangeFiles):
            lines.extend(cdc_lines(a.files, physical))
        elif isinstance(a, SetTransaction):
            lines.append(txn_line(a, now))
        elif isinstance(a, SetSchema | SetProperties | RemoveFiles):
            continue
    return lines


def now_ms() -> int:
    """Wall-clock now in epoch milliseconds."""
    return int(time.time() * 1000)


def encode_lines(lines: Sequence[Mapping[str, Any]]) -> bytes:
    """Newline-delimited JSON of the commit."""
    return ("\n".join(json.dumps(line, separators=(",", ":")) for line in lines) + "\n").encode()
