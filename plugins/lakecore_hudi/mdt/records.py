"""Metadata-table records: Avro ``HoodieMetadataRecord`` values decoded into Python objects.

Every cell of a metadata-table HFile (base file, or the HFile data block of a log file) holds
one ``HoodieMetadataRecord`` in Avro binary, keyed by its row key. The writer schema comes
with the data: the ``schema`` entry of the HFile's file info, or the SCHEMA header of the log
block. Hudi's HFile writer blanks the record's ``key`` field (the row key already holds it),
so the row key is the record key.

``type`` says which payload is set: 1 partition list, 2 file list, 3 column stats, 4 bloom
filter, 5 record index, 6 partition stats, 7 secondary index.

Column stats (``ColumnStatsMetadata``) keep ``minValue``/``maxValue`` as a union of wrapper
records (``IntWrapper``, ``StringWrapper``, ``DecimalWrapper``, ...). How to read the wrapped
value depends on the index version:

- version 1 (``valueType`` absent, or ordinal 0 "V1"): the wrapper names the type.
  ``DateWrapper``/``LocalDateWrapper`` hold epoch days, ``TimestampMicrosWrapper`` epoch
  microseconds (UTC), ``DecimalWrapper`` a decimal(30, 15), ``TimeMicrosWrapper`` a time.
- version 2 (Hudi 1.1+): ``valueType.typeOrdinal`` names the logical type (Hudi's
  ``ValueType`` enum) and the wrapper only carries the primitive: e.g. a DATE is an
  ``IntWrapper`` of epoch days, a DECIMAL a ``BytesWrapper`` of the unscaled big-endian
  two's-complement value with ``"precision,scale"`` in ``valueType.additionalInfo``.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import fastavro

from lakecore.errors import CorruptTableError, UnsupportedFeatureError

__all__ = [
    "COLUMN_STATS",
    "ColumnStats",
    "MetadataRecord",
    "column_stats",
    "decode_avro_block",
    "decode_records",
    "merge_column_stats",
    "parse_schema",
    "VALUE_TYPES",
    "unwrap_stat_value",
]

COLUMN_STATS = 3
"""``HoodieMetadataRecord.type`` of a column-stats record."""

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_NAIVE_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_DAY = dt.date(1970, 1, 1)

VALUE_TYPES = (
    "V1",
    "NULL",
    "BOOLEAN",
    "INT",
    "LONG",
    "FLOAT",
    "DOUBLE",
    "STRING",
    "BYTES",
    "FIXED",
    "DECIMAL",
    "UUID",
    "DATE",
    "TIME_MILLIS",
    "TIME_MICROS",
    "TIMESTAMP_MILLIS",
    "TIMESTAMP_MICROS",
    "TIMESTAMP_NANOS",
    "LOCAL_TIMESTAMP_MILLIS",
    "LOCAL_TIMESTAMP_MICROS",
    "LOCAL_TIMESTAMP_NANOS",
)
"""Hudi's ``ValueType`` enum (hudi-common ``org.apache.hudi.stats.ValueType``) names, by ordinal."""


@dataclass(frozen=True, slots=True)
class MetadataRecord:
    """One decoded metadata-table record: its key, its ``type`` and the whole Avro record."""

    key: str
    type: int
    record: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ColumnStats:
    """One column-stats record: the statistics of one column of one data file.

    ``min_value``/``max_value`` are Python values (int, float, str, bytes, bool, Decimal,
    date, time, datetime — UTC-aware for instants, naive for local timestamps); None is
    "unknown" (or an all-null column). ``value_count`` counts the column's values including
    nulls, so for a top-level column it is the file's row count.
    """

    file_name: str
    column_name: str
    min_value: Any
    max_value: Any
    null_count: int | None
    value_count: int | None
    total_size: int | None
    total_uncompressed_size: int | None
    is_deleted: bool
    is_tight_bound: bool


def parse_schema(schema_json: str | bytes, path: str) -> Any:
    """Parse an Avro writer schema (JSON text) for ``decode_records``.

    Raises:
        CorruptTableError: the text is not a valid Avro schema; the message names ``path``.
    """
    try:
        return fastavro.parse_schema(json.loads(schema_json))
    except (ValueError, TypeError, KeyError, fastavro.schema.SchemaParseException) as exc:
        raise CorruptTableError(f"{path}: metadata record schema is not valid Avro") from exc


def decode_records(
    cells: Iterable[tuple[bytes, bytes]], schema: Any, path: str
) -> list[MetadataRecord]:
    """Decode HFile cells ``(row key, Avro value)`` written with parsed ``schema``.

    Union branches that are records come back as ``(record name, fields)`` pairs where the
    union has more than one record (the stats wrappers), so the wrapper type survives.

    Raises:
        CorruptTableError: a key is not UTF-8 or a value does not decode; names ``path``.
    """
    out: list[MetadataRecord] = []
    for row, value in cells:
        try:
            key = row.decode("utf-8")
            record = fastavro.schemaless_reader(
                io.BytesIO(value),
                schema,
                None,
                return_named_type=True,
                return_named_type_override=True,
            )
        except (UnicodeDecodeError, EOFError, ValueError, TypeError, IndexError) as exc:
            raise CorruptTableError(f"{path}: undecodable metadata record {row!r}") from exc
        if not isinstance(record, dict):
            raise CorruptTableError(f"{path}: metadata record {key!r} is not a record")
        kind = record.get("type")
        out.append(MetadataRecord(key, kind if isinstance(kind, int) else -1, record))
    return out


def decode_avro_block(content: bytes, schema: Any, path: str) -> list[MetadataRecord]:
    """Decode the content of an Avro data block (log block type AVRO_DATA) of metadata records.

    The content is: version (int32, 1 or later), record count (int32), then per record its
    length (int32) and Avro binary. Unlike HFile cells the record's ``key`` field is set.

    Raises:
        CorruptTableError: lengths running past the content, or undecodable records.
        UnsupportedFeatureError: block version 0 (no record count).
    """
    if len(content) < 8:
        raise CorruptTableError(f"{path}: Avro data block is truncated")
    version, count = struct.unpack_from(">ii", content, 0)
    if version < 1:
        raise UnsupportedFeatureError(
            f"hudi avro data block version {version}",
            f"{path}: Avro data block version {version} is older than lakecore reads (1+)",
        )
    cells: list[tuple[bytes, bytes]] = []
    pos = 8
    for _ in range(count):
        if pos + 4 > len(content):
            raise CorruptTableError(f"{path}: Avro data block is truncated")
        (length,) = struct.unpack_from(">i", content, pos)
        value = content[pos + 4 : pos + 4 + length]
        if length < 0 or len(value) != length:
            raise CorruptTableError(f"{path}: Avro data block is truncated")
        cells.append((b"", value))
        pos += 4 + length
    records = decode_records(cells, schema, path)
    return [MetadataRecord(str(r.record.get("key") or ""), r.type, r.record) for r in records]


def column_stats(record: MetadataRecord, path: str) -> ColumnStats | None:
    """The column stats a record holds; None for records of other types.

    Raises:
        CorruptTableError: a column-stats record without its payload, or with a min/max that
            cannot be read as its declared type; the message names ``path``.
    """
    if record.type != COLUMN_STATS:
        return None
    stats = record.record.get("ColumnStatsMetadata")
    if not isinstance(stats, dict):
        raise CorruptTableError(f"{path}: column-stats record {record.key!r} has no stats")
    file_name, column = stats.get("fileName"), stats.get("columnName")
    if not isinstance(file_name, str) or not isinstance(column, str):
        raise CorruptTableError(f"{path}: column-stats record {record.key!r} names no file")
    value_type = stats.get("valueType")
    try:
        low = unwrap_stat_value(stats.get("minValue"), value_type)
        high = unwrap_stat_value(stats.get("maxValue"), value_type)
    except (ValueError, TypeError, OverflowError) as exc:
        raise CorruptTableError(
            f"{path}: column-stats record {record.key!r} ({file_name}, {column}) has an "
            f"unreadable min/max: {exc}"
        ) from exc
    return ColumnStats(
        file_name=file_name,
        column_name=column,
        min_value=low,
        max_value=high,
        null_count=stats.get("nullCount"),
        value_count=stats.get("valueCount"),
        total_size=stats.get("totalSize"),
        total_uncompressed_size=stats.get("totalUncompressedSize"),
        is_deleted=bool(stats.get("isDeleted")),
        is_tight_bound=bool(stats.get("isTightBound")),
    )


def merge_column_stats(older: ColumnStats | None, newer: ColumnStats) -> ColumnStats:
    """Combine two records of the same key the way Hudi's metadata payload does.

    A tombstone on either side, or a tight-bound newer record, replaces the older one.
    Otherwise the newer record adds to the older (a log file appended to by several commits
    gets one record per commit): min of the mins and max of the maxes (nulls ignored), counts
    and sizes summed (unknown if either is unknown).
    """
    if older is None or older.is_deleted or newer.is_deleted or newer.is_tight_bound:
        return newer
    return ColumnStats(
        file_name=newer.file_name,
        column_name=newer.column_name,
        min_value=_extreme(older.min_value, newer.min_value, min),
        max_value=_extreme(older.max_value, newer.max_value, max),
        null_count=_sum(older.null_count, newer.null_count),
        value_count=_sum(older.value_count, newer.value_count),
        total_size=_sum(older.total_size, newer.total_size),
        total_uncompressed_size=_sum(older.total_uncompressed_size, newer.total_uncompressed_size),
        is_deleted=False,
        is_tight_bound=False,
    )


def _extreme(a: Any, b: Any, pick: Any) -> Any:
    if a is None or b is None:
        return b if a is None else a
    try:
        return pick(a, b)
    except TypeError:  # values of different kinds (a column whose type changed): unknown
        return None


def _sum(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


def unwrap_stat_value(wrapped: Any, value_type: Mapping[str, Any] | None) -> Any:
    """The Python value of a ``minValue``/``maxValue`` union branch.

    ``wrapped`` is None or ``(wrapper record name, {"value": ...})`` as ``decode_records``
    returns it; ``value_type`` is the record's ``valueType`` (None for index version 1).

    Raises:
        ValueError: an unknown wrapper or value type ordinal, or a value of the wrong kind.
    """
    if wrapped is None:
        return None
    if not (isinstance(wrapped, tuple) and len(wrapped) == 2 and isinstance(wrapped[1], dict)):
        raise ValueError(f"not a wrapped stats value: {wrapped!r}")
    wrapper = str(wrapped[0]).rsplit(".", 1)[-1]
    if "value" not in wrapped[1]:
        raise ValueError(f"{wrapper} holds no single value (array stats are not supported)")
    raw = wrapped[1]["value"]
    if raw is None:
        return None
    ordinal = value_type.get("typeOrdinal") if value_type else None
    if ordinal is None or ordinal == 0:
        return _unwrap_v1(wrapper, raw)
    if not isinstance(ordinal, int) or not 0 <= ordinal < len(VALUE_TYPES):
        raise ValueError(f"unknown column stats value type ordinal {ordinal!r}")
    assert value_type is not None
    return _unwrap_v2(VALUE_TYPES[ordinal], raw, value_type.get("additionalInfo"))


def _unwrap_v1(wrapper: str, raw: Any) -> Any:
    if wrapper in ("DateWrapper", "LocalDateWrapper"):
        return _date(raw)
    if wrapper == "TimestampMicrosWrapper":
        return _instant(raw, 1)
    if wrapper == "TimeMicrosWrapper":
        return raw if isinstance(raw, dt.time) else _time(raw, 1)
    if wrapper == "DecimalWrapper":
        return raw if isinstance(raw, Decimal) else _decimal(raw, 15)
    if wrapper in (
        "BooleanWrapper",
        "IntWrapper",
        "LongWrapper",
        "FloatWrapper",
        "DoubleWrapper",
        "StringWrapper",
        "BytesWrapper",
    ):
        return raw
    raise ValueError(f"unknown stats wrapper {wrapper}")


def _unwrap_v2(kind: str, raw: Any, info: Any) -> Any:
    if kind == "DECIMAL":
        if isinstance(raw, Decimal):
            return raw
        if not isinstance(info, str) or "," not in info:
            raise ValueError(f"decimal stats need 'precision,scale', got {info!r}")
        return _decimal(raw, int(info.split(",")[1]))
    if kind == "DATE":
        return _date(raw)
    if kind in ("TIME_MILLIS", "TIME_MICROS"):
        return raw if isinstance(raw, dt.time) else _time(raw, 1000 if kind == "TIME_MILLIS" else 1)
    if kind.startswith(("TIMESTAMP_", "LOCAL_TIMESTAMP_")):
        return _timestamp(kind, raw)
    return raw  # NULL, BOOLEAN, INT, LONG, FLOAT, DOUBLE, STRING, BYTES, FIXED, UUID


def _timestamp(kind: str, raw: Any) -> dt.datetime | None:
    if isinstance(raw, dt.datetime):
        return raw
    if not isinstance(raw, int):
        raise ValueError(f"{kind} stats value is not an integer: {raw!r}")
    unit = kind.rsplit("_", 1)[1]
    if unit == "NANOS":
        if raw % 1000:
            # Python datetimes stop at microseconds; a rounded bound is no bound: unknown.
            return None
        micros, per_micro = raw // 1000, 1
    else:
        micros, per_micro = raw, 1000 if unit == "MILLIS" else 1
    if kind.startswith("LOCAL_"):
        return _NAIVE_EPOCH + dt.timedelta(microseconds=micros * per_micro)
    return _instant(micros, per_micro)


def _instant(value: Any, micros_per_unit: int) -> dt.datetime:
    if isinstance(value, dt.datetime):
        return value
    if not isinstance(value, int):
        raise ValueError(f"timestamp stats value is not an integer: {value!r}")
    return _EPOCH + dt.timedelta(microseconds=value * micros_per_unit)


def _date(value: Any) -> dt.date:
    if isinstance(value, dt.date):
        return value
    if not isinstance(value, int):
        raise ValueError(f"date stats value is not an integer: {value!r}")
    return _EPOCH_DAY + dt.timedelta(days=value)


def _time(value: Any, micros_per_unit: int) -> dt.time:
    if not isinstance(value, int):
        raise ValueError(f"time stats value is not an integer: {value!r}")
    micros = value * micros_per_unit
    seconds, micro = divmod(micros, 1_000_000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return dt.time(hour, minute, second, micro)


def _decimal(value: Any, scale: int) -> Decimal:
    if not isinstance(value, bytes | bytearray):
        raise ValueError(f"decimal stats value is not bytes: {value!r}")
    unscaled = int.from_bytes(value, "big", signed=True)
    # Built from text: Decimal arithmetic would round to the context's 28 digits.
    return Decimal(f"{unscaled}E{-scale}")
