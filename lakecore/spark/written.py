"""What a Spark job wrote: its Parquet files as file-index rows, with Delta stats from footers.

Spark writes ``<directory>/<col>=<value>/.../part-*.parquet``. For each data file this module
recovers the typed partition values from the Hive directory names (Spark's escaping and its
formatting of each type, timestamps in the session time zone) and the statistics from the
Parquet footer (row count, per-leaf null counts, min/max), formatted as lakecore's own
writer formats them (``lakecore_delta.write.stats_out``).

Footer statistics are used as they are for integers, decimals, dates, timestamps and
strings (Parquet orders these the way Delta does; strings are then cut to Delta's prefix
length like lakecore's writer does). Float and double bounds must say whether the column
holds a NaN (Delta stats leave the bounds out then: ``NOT x <= 5`` holds for a NaN):
parquet-java (Spark's writer, ``created_by`` "parquet-mr") orders NaN above everything, so a
NaN shows as the max and the bounds are dropped; other writers (pyarrow) leave NaN out of
the bounds, so their float bounds are always dropped. A row group without statistics makes
that column's stats unknown (left out), never guessed. Lists and maps get no stats.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pyarrow as pa
import pyarrow.parquet as pq
from lakecore_delta.write.stats_out import _RAW, _stat_value

from lakecore.errors import SchemaError, UnsupportedFeatureError
from lakecore.model.parquet_footer import LeafSummary
from lakecore.model.parquet_footer import summarize_leaf as summarize_footer_leaf
from lakecore.model.schema import is_ordered_scalar, physical_name
from lakecore.storage import FileInfo, Storage

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
FOOTER_READERS = 8
_ESCAPED = re.compile(r"%([0-9A-Fa-f]{2})")
_TIMESTAMP = re.compile(r"^(-?\d{4,})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?$")
_OFFSET = re.compile(r"^(?:UTC|GMT|UT)?([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?$")


@dataclass(frozen=True, slots=True)
class Listing:
    """The files found under a Spark job's output directory."""

    data: list[FileInfo]
    """Parquet data files, sorted by path."""
    other: list[FileInfo]
    """Everything else (``_SUCCESS``, ``.crc`` checksums): never part of the table."""


def list_output(storage: Storage, directory: str) -> Listing:
    """Split the files below ``directory`` into Parquet data files and the rest.

    Hidden files and directories (names starting with ``_`` or ``.``) are never data.
    """
    data: list[FileInfo] = []
    other: list[FileInfo] = []
    for info in storage.list_all(directory):
        parts = info.path[len(directory) :].strip("/").split("/")
        hidden = any(p.startswith(("_", ".")) for p in parts)
        (other if hidden or not parts[-1].endswith(".parquet") else data).append(info)
    return Listing(data, other)


def unescape(text: str) -> str:
    """Undo Hive/Spark path escaping (``%XX`` -> the character)."""
    return _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), text)


def session_zone(name: str) -> dt.tzinfo:
    """The ``tzinfo`` of a Spark session time zone (region id or fixed offset)."""
    if name in ("Z", "UTC", "GMT", "UT", "Etc/UTC"):
        return dt.timezone.utc
    match = _OFFSET.match(name)
    if match:
        sign = -1 if match.group(1) == "-" else 1
        hours, minutes, seconds = (int(g or 0) for g in match.group(2, 3, 4))
        return dt.timezone(sign * dt.timedelta(hours=hours, minutes=minutes, seconds=seconds))
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise UnsupportedFeatureError(
            "session time zone",
            f"cannot read timestamp partition values written in time zone {name!r}",
        ) from exc


def partition_value(text: str, t: pa.DataType, zone: dt.tzinfo) -> Any:
    """The typed value of a partition directory value (already unescaped) of type ``t``.

    Timestamps with a time zone were formatted by Spark in the session time zone ``zone``;
    a wall-clock time that zone shows twice (a DST fall-back) cannot be placed and raises
    ``UnsupportedFeatureError``.
    """
    if text == HIVE_NULL:
        return None
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return text
    if pa.types.is_boolean(t):
        if text not in ("true", "false"):
            raise ValueError(f"not a boolean: {text!r}")
        return text == "true"
    if pa.types.is_integer(t):
        return int(text)
    if pa.types.is_floating(t):
        return float(text)
    if pa.types.is_decimal(t):
        return Decimal(text)
    if pa.types.is_date(t):
        return dt.date.fromisoformat(text)
    if pa.types.is_timestamp(t):
        return _timestamp(text, zone if t.tz is not None else None)
    raise SchemaError(f"cannot partition by a column of type {t}")


def _timestamp(text: str, zone: dt.tzinfo | None) -> dt.datetime:
    match = _TIMESTAMP.match(text)
    if not match:
        raise ValueError(f"not a timestamp: {text!r}")
    fraction = (match.group(7) or "").ljust(6, "0")
    if fraction[6:].strip("0"):
        raise ValueError(f"timestamp {text!r} is finer than microseconds")
    y, mo, d, h, mi, s = (int(g) for g in match.group(1, 2, 3, 4, 5, 6))
    local = dt.datetime(y, mo, d, h, mi, s, int(fraction[:6]))
    if zone is None:
        return local
    early, late = local.replace(tzinfo=zone, fold=0), local.replace(tzinfo=zone, fold=1)
    if early.utcoffset() != late.utcoffset():
        raise UnsupportedFeatureError(
            "ambiguous timestamp partition value",
            f"partition value {text!r} names two instants in time zone {zone}; write with a "
            "UTC session time zone (spark.sql.session.timeZone=UTC)",
        )
    return early.astimezone(dt.timezone.utc)


def partition_values(
    relative_dir: str, fields: Sequence[pa.Field], zone: dt.tzinfo
) -> dict[str, Any]:
    """The typed partition values of a file in ``relative_dir`` (``a=1/b=x``, Spark's order).

    Every partition column must appear exactly once, and nothing else (``ValueError``).
    """
    parts = [p for p in relative_dir.split("/") if p]
    by_name = {f.name: f for f in fields}
    values: dict[str, Any] = {}
    for part in parts:
        name, sep, raw = part.partition("=")
        name = unescape(name)
        if not sep or name not in by_name or name in values:
            raise ValueError(f"unexpected partition directory {part!r} in {relative_dir!r}")
        values[name] = partition_value(unescape(raw), by_name[name].type, zone)
    if len(values) != len(fields):
        raise ValueError(f"{relative_dir!r} does not name every partition column")
    return {f.name: values[f.name] for f in fields}


# ---------------------------------------------------------------------- footers -> stats


def _count_leaves(t: pa.DataType) -> int:
    if pa.types.is_struct(t):
        return sum(_count_leaves(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return _count_leaves(t.key_type) + _count_leaves(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _count_leaves(t.value_type)
    return 1


def leaf_columns(schema: pa.Schema) -> dict[tuple[str, ...], int]:
    """Parquet leaf column index of every primitive reachable through structs only.

    Leaves are numbered depth-first, as Parquet orders them; lists and maps take their leaves'
    numbers but are not entered (their stats are not kept).
    """
    out: dict[tuple[str, ...], int] = {}
    counter = 0

    def walk(fields: Sequence[pa.Field], prefix: tuple[str, ...]) -> None:
        nonlocal counter
        for f in fields:
            path = (*prefix, f.name)
            if pa.types.is_struct(f.type):
                walk([f.type.field(i) for i in range(f.type.num_fields)], path)
            elif pa.types.is_nested(f.type):
                counter += _count_leaves(f.type)
            else:
                out[path] = counter
                counter += 1

    walk(list(schema), ())
    return out


PARQUET_JAVA = "parquet-mr"
"""How parquet-java (Spark's Parquet writer) names itself in a footer's ``created_by``."""


def summarize_leaf(metadata: pq.FileMetaData, index: int) -> LeafSummary:
    """Leaf ``index``'s statistics over every row group, as Delta stats may hold them.

    Float bounds are kept only from parquet-java files without a NaN in them (see above).
    """
    summary = summarize_footer_leaf(metadata, index)
    floating = metadata.schema.column(index).physical_type in ("FLOAT", "DOUBLE")
    if floating and not (metadata.created_by or "").startswith(PARQUET_JAVA):
        return LeafSummary(summary.null_count, None, None)
    return summary


def _field_stats(
    field: pa.Field,
    path: tuple[str, ...],
    leaves: dict[tuple[str, ...], int],
    metadata: pq.FileMetaData,
    out: tuple[dict[str, Any], dict[str, Any], dict[str, Any]],
) -> None:
    mins, maxs, nulls = out
    name, t = physical_name(field), field.type
    if pa.types.is_struct(t):
        sub: tuple[dict[str, Any], dict[str, Any], dict[str, Any]] = ({}, {}, {})
        for i in range(t.num_fields):
            child = t.field(i)
            _field_stats(child, (*path, child.name), leaves, metadata, sub)
        for target, values in zip(out, sub, strict=True):
            if values:
                target[name] = values
        return
    if pa.types.is_nested(t) or path not in leaves:
        return
    summary = summarize_leaf(metadata, leaves[path])
    if summary.null_count is not None:
        nulls[name] = summary.null_count
    if not is_ordered_scalar(t):
        return
    lo = _stat_value(summary.min, t, False)
    hi = _stat_value(summary.max, t, True)
    if lo is not None:
        mins[name] = lo
    if hi is not None:
        maxs[name] = hi


def footer_stats(metadata: pq.FileMetaData, fields: Sequence[pa.Field]) -> str:
    """The Delta stats JSON of a data file, from its footer (``fields``: its logical fields).

    Keys are physical names, values formatted as lakecore's writer formats them; columns are
    found in the file by name (a field missing from the file gets no stats).
    """
    leaves = leaf_columns(metadata.schema.to_arrow_schema())
    out: tuple[dict[str, Any], dict[str, Any], dict[str, Any]] = ({}, {}, {})
    for f in fields:
        _field_stats(f, (f.name,), leaves, metadata, out)
    mins, maxs, nulls = out
    stats = {
        "numRecords": metadata.num_rows,
        "minValues": mins,
        "maxValues": maxs,
        "nullCount": nulls,
    }
    return _RAW.sub(r"\1", json.dumps(stats, separators=(",", ":")))


def read_footer(storage: Storage, path: str) -> pq.FileMetaData:
    """The Parquet footer of ``path`` (a few KB read from the end of the file)."""
    with storage.open_input(path) as f:
        return pq.ParquetFile(f).metadata


def index_rows(
    storage: Storage,
    directory: str,
    files: Sequence[FileInfo],
    schema: pa.Schema,
    partition_columns: Sequence[str],
    zone: dt.tzinfo,
) -> pa.Table:
    """File-index rows (path, size, record_count, modification_time, partition, stats).

    ``files`` are data files below ``directory`` written for a table of logical ``schema``
    partitioned by ``partition_columns``; footers are read in parallel.
    """
    part_fields = [schema.field(c) for c in partition_columns]
    data_fields = [f for f in schema if f.name not in partition_columns]
    with ThreadPoolExecutor(FOOTER_READERS) as pool:
        footers = list(pool.map(lambda info: read_footer(storage, info.path), files))
    partitions = []
    for info in files:
        relative_dir = info.path[len(directory) :].strip("/").rpartition("/")[0]
        partitions.append(partition_values(relative_dir, part_fields, zone))
    part_type = pa.struct([pa.field(f.name, f.type) for f in part_fields])
    return pa.table(
        {
            "path": pa.array([f.path for f in files], pa.string()),
            "size": pa.array([f.size for f in files], pa.int64()),
            "record_count": pa.array([m.num_rows for m in footers], pa.int64()),
            "modification_time": pa.array([f.modification_time for f in files], pa.int64()),
            "partition": pa.array(partitions, part_type),
            "stats": pa.array([footer_stats(m, data_fields) for m in footers], pa.string()),
        }
    )
