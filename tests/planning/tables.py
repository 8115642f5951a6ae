"""Small real Delta tables for planner tests, written two ways.

``write_with_deltalake`` appends each batch with delta-rs (``deltalake.write_deltalake``), whose
stats are what a popular writer really produces. ``write_worst_case`` writes the log by hand
with the most degraded stats the Delta protocol allows: timestamps floored to milliseconds,
string min/max cut to 32 characters with no tie-breaker (so a max is only a prefix), NaN left
out of float min/max, and stats of some files or columns missing altogether.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

PREFIX = 32
PARTITIONS = ("p", "q")
SCHEMA = pa.schema(
    [
        ("p", pa.string()),
        ("q", pa.int32()),
        ("i", pa.int64()),
        ("s16", pa.int16()),
        ("f", pa.float64()),
        ("f32", pa.float32()),
        ("s", pa.string()),
        ("d", pa.decimal128(10, 2)),
        ("day", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("ntz", pa.timestamp("us")),
        ("b", pa.bool_()),
    ]
)
DELTA_TYPES = {
    "p": "string",
    "q": "integer",
    "i": "long",
    "s16": "short",
    "f": "double",
    "f32": "float",
    "s": "string",
    "d": "decimal(10,2)",
    "day": "date",
    "ts": "timestamp",
    "ntz": "timestamp_ntz",
    "b": "boolean",
}


def write_with_deltalake(root: Path, batches: Sequence[pa.Table]) -> None:
    """Append each batch with delta-rs (one or more files per batch: one per partition)."""
    from deltalake import write_deltalake

    for batch in batches:
        write_deltalake(str(root), batch, partition_by=list(PARTITIONS), mode="append")


def write_worst_case(root: Path, batches: Sequence[pa.Table], dropped: Sequence[str]) -> None:
    """Write one file per (batch, partition) with degraded stats; ``dropped`` names columns
    whose stats are left out (``"*"``: the whole stats of every other file)."""
    log = root / "_delta_log"
    log.mkdir(parents=True)
    actions: list[dict[str, Any]] = [_protocol(), _metadata()]
    number = 0
    for batch in batches:
        for values, rows in _by_partition(batch):
            name = f"part-{number:05d}-{uuid.uuid4()}.parquet"
            pq.write_table(rows.drop_columns(list(PARTITIONS)), root / name)
            no_stats = "*" in dropped and number % 2 == 1
            stats = None if no_stats else json.dumps(_stats(rows, dropped))
            add = {
                "path": name,
                "partitionValues": values,
                "size": (root / name).stat().st_size,
                "modificationTime": 1_700_000_000_000,
                "dataChange": True,
                "stats": stats,
            }
            actions.append({"add": add})
            number += 1
    (log / f"{0:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def _protocol() -> dict[str, Any]:
    features = ["timestampNtz"]
    return {
        "protocol": {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": features,
            "writerFeatures": features,
        }
    }


def _metadata() -> dict[str, Any]:
    fields = [
        {"name": f.name, "type": DELTA_TYPES[f.name], "nullable": True, "metadata": {}}
        for f in SCHEMA
    ]
    return {
        "metaData": {
            "id": str(uuid.uuid4()),
            "format": {"provider": "parquet", "options": {}},
            "schemaString": json.dumps({"type": "struct", "fields": fields}),
            "partitionColumns": list(PARTITIONS),
            "configuration": {},
        }
    }


def _by_partition(batch: pa.Table) -> list[tuple[dict[str, str | None], pa.Table]]:
    keys = sorted(
        {tuple(r[c] for c in PARTITIONS) for r in batch.select(list(PARTITIONS)).to_pylist()},
        key=repr,
    )
    out = []
    for key in keys:
        mask = None
        for column, value in zip(PARTITIONS, key, strict=True):
            match = (
                pc.is_null(batch.column(column))
                if value is None
                else pc.fill_null(pc.equal(batch.column(column), value), False)
            )
            mask = match if mask is None else pc.and_(mask, match)
        values = {c: None if v is None else str(v) for c, v in zip(PARTITIONS, key, strict=True)}
        out.append((values, batch.filter(mask)))
    return out


def _stats(rows: pa.Table, dropped: Sequence[str]) -> dict[str, Any]:
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, Any] = {}
    for f in SCHEMA:
        if f.name in PARTITIONS or f.name in dropped:
            continue
        column = rows.column(f.name)
        nulls[f.name] = column.null_count
        values = [v for v in column.to_pylist() if v is not None and not _is_nan(v)]
        if not values or pa.types.is_boolean(f.type):
            continue
        mins[f.name] = _stat_text(min(values), f.type)
        maxs[f.name] = _stat_text(max(values), f.type)
    return {"numRecords": rows.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls}


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _stat_text(value: Any, t: pa.DataType) -> Any:
    if isinstance(value, str):
        return value[:PREFIX]  # a cut max is only a prefix: the worst a writer may do
    if isinstance(value, dt.datetime):
        floored = value.replace(microsecond=value.microsecond // 1000 * 1000)
        text = floored.astimezone(dt.timezone.utc).replace(tzinfo=None) if t.tz else floored
        return text.isoformat(timespec="milliseconds") + ("Z" if t.tz else "")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value) if value == decimal.Decimal(repr(float(value))) else str(value)
    if isinstance(value, float) and math.isinf(value):
        return None
    return value
