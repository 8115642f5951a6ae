"""Hand-built Delta tables for tests: every byte of the log and the data files is chosen here.

``DeltaTableBuilder`` writes ``_delta_log`` JSON commits, classic / multi-part / V2 checkpoints,
sidecars, ``_last_checkpoint`` and Parquet data files with pyarrow. The module-level helpers
build the action dicts (``protocol``, ``metadata``, ``add``, ``remove`` ...) in the shape the
Delta protocol gives them in JSON; checkpoint writers convert them to the Parquet layout.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

BASE_TIME_MS = 1_600_000_000_000
"""Default mtime of commit 0; commit ``v`` gets ``BASE_TIME_MS + v * STEP_MS``."""
STEP_MS = 60_000
TABLE_ID = "00000000-0000-0000-0000-000000000001"

# ----------------------------------------------------------------------------- schema JSON


def field(
    name: str, dtype: Any, nullable: bool = True, metadata: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A Delta StructField as JSON."""
    return {"name": name, "type": dtype, "nullable": nullable, "metadata": dict(metadata or {})}


def struct(*fields: dict[str, Any]) -> dict[str, Any]:
    """A Delta struct type as JSON."""
    return {"type": "struct", "fields": list(fields)}


def mapped(name: str, dtype: Any, field_id: int, physical: str | None = None) -> dict[str, Any]:
    """A column-mapped StructField: ``delta.columnMapping.id`` and ``.physicalName``."""
    return field(
        name,
        dtype,
        metadata={
            "delta.columnMapping.id": field_id,
            "delta.columnMapping.physicalName": physical or f"col-{uuid.uuid4()}",
        },
    )


def schema_string(*fields: dict[str, Any]) -> str:
    return json.dumps(struct(*fields))


# ----------------------------------------------------------------------------- actions


def protocol(
    reader: int = 1,
    writer: int = 2,
    reader_features: Sequence[str] | None = None,
    writer_features: Sequence[str] | None = None,
) -> dict[str, Any]:
    p: dict[str, Any] = {"minReaderVersion": reader, "minWriterVersion": writer}
    if reader_features is not None:
        p["readerFeatures"] = list(reader_features)
    if writer_features is not None:
        p["writerFeatures"] = list(writer_features)
    return {"protocol": p}


def metadata(
    fields: Sequence[dict[str, Any]],
    partition_columns: Sequence[str] = (),
    configuration: Mapping[str, str] | None = None,
    table_id: str = TABLE_ID,
) -> dict[str, Any]:
    return {
        "metaData": {
            "id": table_id,
            "format": {"provider": "parquet", "options": {}},
            "schemaString": schema_string(*fields),
            "partitionColumns": list(partition_columns),
            "configuration": dict(configuration or {}),
            "createdTime": BASE_TIME_MS,
        }
    }


def add(
    path: str,
    size: int = 100,
    *,
    partition_values: Mapping[str, str | None] | None = None,
    stats: str | Mapping[str, Any] | None = None,
    deletion_vector: Mapping[str, Any] | None = None,
    modification_time: int = BASE_TIME_MS,
    data_change: bool = True,
) -> dict[str, Any]:
    a: dict[str, Any] = {
        "path": path,
        "partitionValues": dict(partition_values or {}),
        "size": size,
        "modificationTime": modification_time,
        "dataChange": data_change,
    }
    if stats is not None:
        a["stats"] = stats if isinstance(stats, str) else json.dumps(stats)
    if deletion_vector is not None:
        a["deletionVector"] = dict(deletion_vector)
    return {"add": a}


def remove(
    path: str,
    *,
    deletion_vector: Mapping[str, Any] | None = None,
    partition_values: Mapping[str, str | None] | None = None,
    size: int | None = None,
) -> dict[str, Any]:
    r: dict[str, Any] = {
        "path": path,
        "deletionTimestamp": BASE_TIME_MS,
        "dataChange": True,
    }
    if partition_values is not None:
        r["partitionValues"] = dict(partition_values)
    if size is not None:
        r["size"] = size
    if deletion_vector is not None:
        r["deletionVector"] = dict(deletion_vector)
    return {"remove": r}


def commit_info(
    operation: str = "WRITE",
    parameters: Mapping[str, Any] | None = None,
    *,
    timestamp: int | None = None,
    in_commit_timestamp: int | None = None,
    **extra: Any,
) -> dict[str, Any]:
    info: dict[str, Any] = {}
    if in_commit_timestamp is not None:
        info["inCommitTimestamp"] = in_commit_timestamp
    info["timestamp"] = timestamp if timestamp is not None else BASE_TIME_MS
    info["operation"] = operation
    info["operationParameters"] = dict(parameters or {})
    info.update(extra)
    return {"commitInfo": info}


def txn(app_id: str, version: int) -> dict[str, Any]:
    return {"txn": {"appId": app_id, "version": version, "lastUpdated": BASE_TIME_MS}}


def inline_dv(pseudo_z85: str, cardinality: int) -> dict[str, Any]:
    """A DV descriptor for reconciliation tests only (the payload is never decoded)."""
    return {
        "storageType": "i",
        "pathOrInlineDv": pseudo_z85,
        "sizeInBytes": len(pseudo_z85),
        "cardinality": cardinality,
    }


def uuid_dv(path_or_inline: str, offset: int, cardinality: int) -> dict[str, Any]:
    return {
        "storageType": "u",
        "pathOrInlineDv": path_or_inline,
        "offset": offset,
        "sizeInBytes": 40,
        "cardinality": cardinality,
    }


# ----------------------------------------------------------------------------- checkpoints

_STR_MAP = pa.map_(pa.string(), pa.string())
_DV = pa.struct(
    [
        ("storageType", pa.string()),
        ("pathOrInlineDv", pa.string()),
        ("offset", pa.int32()),
        ("sizeInBytes", pa.int32()),
        ("cardinality", pa.int64()),
    ]
)
CHECKPOINT_SCHEMA = pa.schema(
    [
        (
            "txn",
            pa.struct(
                [("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())]
            ),
        ),
        (
            "add",
            pa.struct(
                [
                    ("path", pa.string()),
                    ("partitionValues", _STR_MAP),
                    ("size", pa.int64()),
                    ("modificationTime", pa.int64()),
                    ("dataChange", pa.bool_()),
                    ("stats", pa.string()),
                    ("tags", _STR_MAP),
                    ("deletionVector", _DV),
                ]
            ),
        ),
        (
            "remove",
            pa.struct(
                [
                    ("path", pa.string()),
                    ("deletionTimestamp", pa.int64()),
                    ("dataChange", pa.bool_()),
                    ("extendedFileMetadata", pa.bool_()),
                    ("partitionValues", _STR_MAP),
                    ("size", pa.int64()),
                    ("deletionVector", _DV),
                ]
            ),
        ),
        (
            "metaData",
            pa.struct(
                [
                    ("id", pa.string()),
                    ("name", pa.string()),
                    ("description", pa.string()),
                    ("format", pa.struct([("provider", pa.string()), ("options", _STR_MAP)])),
                    ("schemaString", pa.string()),
                    ("partitionColumns", pa.list_(pa.string())),
                    ("configuration", _STR_MAP),
                    ("createdTime", pa.int64()),
                ]
            ),
        ),
        (
            "protocol",
            pa.struct(
                [
                    ("minReaderVersion", pa.int32()),
                    ("minWriterVersion", pa.int32()),
                    ("readerFeatures", pa.list_(pa.string())),
                    ("writerFeatures", pa.list_(pa.string())),
                ]
            ),
        ),
    ]
)
SIDECAR_TYPE = pa.struct(
    [
        ("path", pa.string()),
        ("sizeInBytes", pa.int64()),
        ("modificationTime", pa.int64()),
        ("tags", _STR_MAP),
    ]
)
CHECKPOINT_METADATA_TYPE = pa.struct([("version", pa.int64()), ("tags", _STR_MAP)])
V2_CHECKPOINT_SCHEMA = CHECKPOINT_SCHEMA.append(pa.field("sidecar", SIDECAR_TYPE)).append(
    pa.field("checkpointMetadata", CHECKPOINT_METADATA_TYPE)
)


def _maps_as_pairs(value: Any, dtype: pa.DataType) -> Any:
    """Turn dicts into (key, value) lists where ``dtype`` has a map, recursively."""
    if value is None:
        return None
    if pa.types.is_map(dtype):
        return list(value.items())
    if pa.types.is_struct(dtype):
        return {
            dtype.field(i).name: _maps_as_pairs(value.get(dtype.field(i).name), dtype.field(i).type)
            for i in range(dtype.num_fields)
        }
    return value


def checkpoint_table(actions: Iterable[Mapping[str, Any]], schema: pa.Schema) -> pa.Table:
    """One row per action, the action's column set, every other column null."""
    rows = []
    for action in actions:
        ((key, value),) = action.items()
        rows.append({key: _maps_as_pairs(value, schema.field(key).type)})
    return pa.Table.from_pylist(rows, schema=schema)


# ----------------------------------------------------------------------------- stats


def _json_value(v: Any) -> Any:
    if hasattr(v, "isoformat"):
        return v.isoformat().replace("+00:00", "Z")
    if isinstance(v, bytes):
        return None
    if type(v).__name__ == "Decimal":
        return float(v)
    return v


def simple_stats(table: pa.Table) -> dict[str, Any]:
    """numRecords plus min/max/nullCount of flat numeric and string columns."""
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, Any] = {}
    for name in table.column_names:
        col = table.column(name)
        nulls[name] = col.null_count
        t = col.type
        if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_string(t):
            mm = pc.min_max(col).as_py()
            if mm["min"] is not None:
                mins[name] = _json_value(mm["min"])
                maxs[name] = _json_value(mm["max"])
    return {
        "numRecords": table.num_rows,
        "minValues": mins,
        "maxValues": maxs,
        "nullCount": nulls,
    }


# ----------------------------------------------------------------------------- the builder


def encode_path(relative: str) -> str:
    """URL-encode a relative data path the way Delta writers do (``/`` and ``=`` kept)."""
    return quote(relative, safe="/=")


class DeltaTableBuilder:
    """Writes a Delta table under ``root`` by hand, one file at a time."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.log = self.root / "_delta_log"
        self.log.mkdir(parents=True, exist_ok=True)

    @property
    def uri(self) -> str:
        return str(self.root)

    # --- raw files

    def write_bytes(self, relative: str, data: bytes, mtime_ms: int | None = None) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        if mtime_ms is not None:
            set_mtime(path, mtime_ms)
        return path

    # --- commits

    def commit_path(self, version: int) -> Path:
        return self.log / f"{version:020d}.json"

    def commit(
        self, version: int, *actions: Mapping[str, Any], mtime_ms: int | None = None
    ) -> Path:
        """Write commit ``version`` (one JSON action per line); mtime defaults to the grid."""
        text = "".join(json.dumps(a, separators=(",", ":")) + "\n" for a in actions)
        when = BASE_TIME_MS + version * STEP_MS if mtime_ms is None else mtime_ms
        return self.write_bytes(f"_delta_log/{version:020d}.json", text.encode(), when)

    def init(
        self,
        fields: Sequence[dict[str, Any]],
        partition_columns: Sequence[str] = (),
        configuration: Mapping[str, str] | None = None,
        *,
        proto: Mapping[str, Any] | None = None,
        extra: Sequence[Mapping[str, Any]] = (),
        mtime_ms: int | None = None,
    ) -> Path:
        """Write commit 0: commitInfo, protocol, metaData, then the ``extra`` actions."""
        return self.commit(
            0,
            commit_info("CREATE TABLE"),
            dict(proto or protocol()),
            metadata(fields, partition_columns, configuration),
            *extra,
            mtime_ms=mtime_ms,
        )

    # --- data files

    def data_file(
        self,
        relative: str,
        table: pa.Table | Mapping[str, Any],
        *,
        partition_values: Mapping[str, str | None] | None = None,
        stats: str | Mapping[str, Any] | bool | None = True,
        field_ids: Mapping[str, int] | None = None,
        log_path: str | None = None,
        deletion_vector: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Write ``table`` as Parquet at ``relative`` (a decoded path) and return its add.

        ``stats=True`` computes simple stats, ``False``/``None`` writes none, a str or
        mapping is written as given. ``field_ids`` sets ``PARQUET:field_id`` on top-level
        columns. ``log_path`` overrides the (URL-encoded) path written into the add action.
        """
        if not isinstance(table, pa.Table):
            table = pa.table(dict(table))
        if field_ids is not None:
            table = with_field_ids(table, field_ids)
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path)
        if stats is True:
            stats_value: str | Mapping[str, Any] | None = simple_stats(table)
        elif stats is False:
            stats_value = None
        else:
            stats_value = stats  # type: ignore[assignment]
        return add(
            log_path if log_path is not None else encode_path(relative),
            size=path.stat().st_size,
            partition_values=partition_values,
            stats=stats_value,
            deletion_vector=deletion_vector,
        )

    # --- checkpoints

    def checkpoint(
        self, version: int, actions: Sequence[Mapping[str, Any]], parts: int | None = None
    ) -> list[Path]:
        """Write a classic checkpoint, or a multi-part one of ``parts`` parts."""
        if parts is None:
            path = self.log / f"{version:020d}.checkpoint.parquet"
            pq.write_table(checkpoint_table(actions, CHECKPOINT_SCHEMA), path)
            return [path]
        out = []
        chunks: list[list[Mapping[str, Any]]] = [[] for _ in range(parts)]
        for i, a in enumerate(actions):
            chunks[i % parts].append(a)
        for i, chunk in enumerate(chunks, start=1):
            path = self.log / f"{version:020d}.checkpoint.{i:010d}.{parts:010d}.parquet"
            pq.write_table(checkpoint_table(chunk, CHECKPOINT_SCHEMA), path)
            out.append(path)
        return out

    def sidecar(self, actions: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """Write a sidecar Parquet file of file actions; return its ``sidecar`` action."""
        name = f"{uuid.uuid4()}.parquet"
        path = self.log / "_sidecars" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(checkpoint_table(actions, CHECKPOINT_SCHEMA), path)
        return {
            "sidecar": {
                "path": name,
                "sizeInBytes": path.stat().st_size,
                "modificationTime": BASE_TIME_MS,
            }
        }

    def v2_checkpoint(
        self,
        version: int,
        actions: Sequence[Mapping[str, Any]],
        sidecars: Sequence[Sequence[Mapping[str, Any]]] = (),
        top: str = "json",
    ) -> Path:
        """Write a V2 checkpoint: a top-level file (json or parquet) plus sidecar files."""
        body: list[Mapping[str, Any]] = [{"checkpointMetadata": {"version": version}}]
        body += list(actions)
        body += [self.sidecar(s) for s in sidecars]
        path = self.log / f"{version:020d}.checkpoint.{uuid.uuid4()}.{top}"
        if top == "json":
            path.write_text("".join(json.dumps(a) + "\n" for a in body))
        else:
            pq.write_table(checkpoint_table(body, V2_CHECKPOINT_SCHEMA), path)
        return path

    def last_checkpoint(
        self, version: int | None = None, raw: bytes | None = None, **extra: Any
    ) -> Path:
        """Write ``_last_checkpoint`` naming ``version`` (or ``raw`` bytes as they are)."""
        data = raw if raw is not None else json.dumps({"version": version, **extra}).encode()
        return self.write_bytes("_delta_log/_last_checkpoint", data)


def with_field_ids(table: pa.Table, field_ids: Mapping[str, int]) -> pa.Table:
    """Return ``table`` with ``PARQUET:field_id`` metadata on the named top-level columns."""
    fields = []
    for f in table.schema:
        if f.name in field_ids:
            f = f.with_metadata({b"PARQUET:field_id": str(field_ids[f.name]).encode()})
        fields.append(f)
    return table.cast(pa.schema(fields))


def set_mtime(path: Path, mtime_ms: int) -> None:
    os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))


def sorted_rows(table: pa.Table, by: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Rows as dicts, sorted (by all columns unless ``by`` is given)."""
    keys = list(by or table.column_names)
    return table.sort_by([(k, "ascending") for k in keys]).to_pylist()
