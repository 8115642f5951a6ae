"""Column statistics as the metadata table stores them: value types, wrappers, ranges.

Hudi keeps one ``HoodieMetadataColumnStats`` per (data file, column) in ``column_stats`` and
per (partition, column) in ``partition_stats``. Its ``minValue``/``maxValue`` are a union of
wrapper records, written one of two ways (the index version of the partition's index
definition; table version 8 writes version 1, table version 9 version 2):

- version 1: the wrapper names the Java type of the value Hudi 1.0 reads from a Parquet
  footer (``StringWrapper``, ``DecimalWrapper`` of a decimal(30, 15), ``DateWrapper`` of
  epoch days; timestamps and times stay their stored ``LongWrapper``/``IntWrapper``
  primitive); ``valueType`` is absent;
- version 2: ``valueType`` holds the ordinal of Hudi's ``ValueType`` (with
  ``"precision,scale"`` for decimals) and the wrapper only carries its primitive: a DATE is an
  ``IntWrapper`` of epoch days, a DECIMAL a ``BytesWrapper`` of the unscaled two's-complement
  big-endian value (Java ``BigInteger.toByteArray``), a timestamp a ``LongWrapper``.

``ColumnRange`` is Hudi's ``HoodieColumnRangeMetadata``: the statistics of one column of one
file (or partition) with Python values in the domain ``records.unwrap_stat_value`` reads back
(str, int, float, bool, bytes, Decimal, date, time, datetime - UTC-aware for instants, naive
for local timestamps), so ranges computed from data and ranges read from the metadata table
compare and combine. Ranges combine as Hudi's ``HoodieColumnRangeMetadata.merge``: min of the
mins and max of the maxes in Java's ``compareTo`` order (nulls ignored), counts and sizes
summed.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa

from lakecore.errors import SchemaError

__all__ = [
    "NULL_KIND",
    "ColumnRange",
    "ValueKind",
    "combine",
    "common_kind",
    "java_order_key",
    "kind_of",
    "kind_of_value_type",
    "standardize",
    "stats_payload",
    "wrap",
]

_NS = "org.apache.hudi.avro.model."

# Hudi's ValueType enum (org.apache.hudi.stats.ValueType), by ordinal.
_ORDINALS = {
    name: i
    for i, name in enumerate(
        (
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
    )
}
_BY_ORDINAL = {i: name for name, i in _ORDINALS.items()}

# Version 2: the primitive wrapper of each value type (ValueType's primitiveWrapperType).
_V2_WRAPPERS = {
    "BOOLEAN": "BooleanWrapper",
    "INT": "IntWrapper",
    "LONG": "LongWrapper",
    "FLOAT": "FloatWrapper",
    "DOUBLE": "DoubleWrapper",
    "STRING": "StringWrapper",
    "BYTES": "BytesWrapper",
    "FIXED": "BytesWrapper",
    "DECIMAL": "BytesWrapper",
    "UUID": "StringWrapper",
    "DATE": "IntWrapper",
    "TIME_MILLIS": "IntWrapper",
    "TIME_MICROS": "LongWrapper",
}

# Version 1: the wrapper of the Java value Hudi 1.0 reads from a Parquet footer for each type
# (timestamps and times: their stored primitive, see _wrap_v1).
_V1_WRAPPERS = {
    **_V2_WRAPPERS,
    "DECIMAL": "DecimalWrapper",
    "DATE": "DateWrapper",
}
_V1_DECIMAL_SCALE = 15

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_NAIVE_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_DAY = dt.date(1970, 1, 1)


@dataclass(frozen=True, slots=True)
class ValueKind:
    """A column's Hudi ``ValueType`` name (``"STRING"``, ``"DECIMAL"``, ...) and, for a
    decimal, its precision and scale."""

    name: str
    precision: int = 0
    scale: int = 0

    @property
    def ordinal(self) -> int:
        """The ``ValueType`` ordinal written in ``valueType.typeOrdinal``."""
        return _ORDINALS[self.name]

    def value_type(self) -> dict[str, Any]:
        """The version-2 ``HoodieValueTypeInfo`` of this kind."""
        info = f"{self.precision},{self.scale}" if self.name == "DECIMAL" else None
        return {"typeOrdinal": self.ordinal, "additionalInfo": info}


NULL_KIND = ValueKind("NULL")
"""The kind of a range without values (Hudi's NULL_METADATA): a tombstone or an empty file."""


def kind_of(t: pa.DataType) -> ValueKind | None:
    """The ``ValueKind`` of a column of Arrow type ``t``; None for types Hudi does not index
    (nested types, nulls, durations, ...)."""
    if pa.types.is_boolean(t):
        return ValueKind("BOOLEAN")
    if pa.types.is_integer(t):
        return ValueKind("LONG" if t.bit_width == 64 else "INT")
    if pa.types.is_float32(t):
        return ValueKind("FLOAT")
    if pa.types.is_float64(t):
        return ValueKind("DOUBLE")
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return ValueKind("STRING")
    if pa.types.is_fixed_size_binary(t):
        return ValueKind("FIXED")
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return ValueKind("BYTES")
    if pa.types.is_decimal(t):
        return ValueKind("DECIMAL", t.precision, t.scale)
    if pa.types.is_date(t):
        return ValueKind("DATE")
    if pa.types.is_time(t):
        return ValueKind("TIME_MILLIS" if t.unit in ("s", "ms") else "TIME_MICROS")
    if pa.types.is_timestamp(t):
        unit = {"s": "MILLIS", "ms": "MILLIS", "us": "MICROS", "ns": "NANOS"}[t.unit]
        return ValueKind(("TIMESTAMP_" if t.tz else "LOCAL_TIMESTAMP_") + unit)
    return None


def kind_of_value_type(value_type: Any) -> ValueKind | None:
    """The kind a stored ``valueType`` names; None for version 1 (absent or ordinal 0).

    Raises:
        ValueError: an unknown ordinal or a decimal without ``"precision,scale"``.
    """
    if not isinstance(value_type, dict) or not value_type.get("typeOrdinal"):
        return None
    name = _BY_ORDINAL.get(value_type["typeOrdinal"])
    if name is None:
        raise ValueError(f"unknown column stats value type ordinal {value_type['typeOrdinal']}")
    if name != "DECIMAL":
        return ValueKind(name)
    precision, _, scale = str(value_type.get("additionalInfo") or "").partition(",")
    return ValueKind(name, int(precision), int(scale))


@dataclass(frozen=True, slots=True)
class ColumnRange:
    """The statistics of one column of one file (``name``: the file name) or partition
    (``name``: the partition path), as Hudi's ``HoodieColumnRangeMetadata`` holds them.

    ``kind`` None: written as index version 1 whatever the type (a range read back from a
    version-1 record). Counts of a tombstone are -1 (Hudi's stub).
    """

    name: str
    column: str
    min_value: Any
    max_value: Any
    null_count: int
    value_count: int
    total_size: int
    total_uncompressed_size: int
    kind: ValueKind | None


def java_order_key(value: Any) -> Any:
    """A sort key ordering values as Java's ``compareTo`` does for Hudi's stats values.

    Strings compare by UTF-16 code units; doubles put -0.0 before 0.0 and NaN last; byte
    strings compare as Java's ``ByteBuffer`` does (signed bytes); other values as Python does.
    """
    if isinstance(value, str):
        return value.encode("utf-16-be", "surrogatepass")
    if isinstance(value, float):
        if math.isnan(value):
            return (2, 0.0)
        return (1, value, math.copysign(1.0, value))
    if isinstance(value, bytes | bytearray):
        return bytes((b + 128) & 0xFF for b in value)
    return value


def _pick(a: Any, b: Any, lowest: bool) -> Any:
    if a is None or b is None:
        return b if a is None else a
    try:
        smaller = java_order_key(b) < java_order_key(a)
    except TypeError:  # values of different kinds (a column whose type changed): unknown
        return None
    return b if smaller == lowest else a


_NUMERIC_RANK = {"INT": 0, "LONG": 1, "FLOAT": 2, "DOUBLE": 3}


def common_kind(a: ValueKind | None, b: ValueKind | None) -> ValueKind | None:
    """The kind two ranges of one column combine to: the same kind, the wider of two numeric
    kinds or decimals (a column widened by schema evolution), ``b`` when ``a`` is unknown or
    NULL (a range without values) and vice versa.

    Raises:
        SchemaError: kinds that do not combine (files disagree on the column's type; Hudi's
            ``HoodieColumnRangeMetadata.merge`` refuses them too).
    """
    if a is None or a in (NULL_KIND, b):
        return b if b is not None and b != NULL_KIND else a
    if b is None or b == NULL_KIND:
        return a
    if a.name in _NUMERIC_RANK and b.name in _NUMERIC_RANK:
        return a if _NUMERIC_RANK[a.name] >= _NUMERIC_RANK[b.name] else b
    if a.name == b.name == "DECIMAL":
        scale = max(a.scale, b.scale)
        digits = max(a.precision - a.scale, b.precision - b.scale)
        return ValueKind("DECIMAL", digits + scale, scale)
    raise SchemaError(f"column statistics of types {a.name} and {b.name} do not combine")


def standardize(stats: ColumnRange, kind: ValueKind) -> ColumnRange:
    """``stats`` with its bounds cast into ``kind`` as Hudi 1.1 does before combining a
    partition's file ranges (``ValueType.standardizeJavaTypeAndPromote``): numbers widen,
    text parses into numbers, numbers and booleans print as text, text encodes as bytes.

    Raises:
        SchemaError: a bound that does not cast (Hudi fails there too); names the column.
    """
    if stats.kind == kind:
        return stats
    try:
        low, high = _cast(stats.min_value, kind), _cast(stats.max_value, kind)
    except (ValueError, TypeError, ArithmeticError) as exc:
        raise SchemaError(
            f"{stats.name}: column {stats.column!r}: a {_name(stats.kind)} bound does not cast "
            f"to {kind.name} ({exc})"
        ) from None
    return dataclasses.replace(stats, min_value=low, max_value=high, kind=kind)


def _name(kind: ValueKind | None) -> str:
    return kind.name if kind is not None else "version-1"


def _cast(value: Any, kind: ValueKind) -> Any:
    name = kind.name
    if value is None or name == "NULL":
        return None
    if name in ("INT", "LONG"):
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, int | str):
            return int(value)
    elif name in ("FLOAT", "DOUBLE"):
        if isinstance(value, bool):
            return 1.0 if value else 0.0
        if isinstance(value, int | float | str):
            return float(value)
    elif name in ("STRING", "UUID"):
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, str | int | float):
            return str(value)
        if isinstance(value, bytes):
            return value.decode("utf-8")
    elif name in ("BYTES", "FIXED"):
        if isinstance(value, bytes | bytearray):
            return bytes(value)
        if isinstance(value, str):
            return value.encode("utf-8")
    elif name == "DECIMAL":
        if isinstance(value, Decimal | int | str):
            return Decimal(value)
    elif name == "BOOLEAN":
        if isinstance(value, bool):
            return value
    elif name == "DATE":
        if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return _EPOCH_DAY + dt.timedelta(days=value)
    elif isinstance(value, dt.datetime | dt.time):
        return value
    raise TypeError(f"{type(value).__name__} value {value!r}")


def combine(older: ColumnRange | None, newer: ColumnRange, name: str | None = None) -> ColumnRange:
    """Hudi's ``HoodieColumnRangeMetadata.merge`` of two ranges of one column (``name``
    renames the result, e.g. to the partition path).

    Raises:
        SchemaError: the ranges' value types do not combine (``common_kind``); names the
            column and where.
    """
    if older is None:
        return newer if name is None else dataclasses.replace(newer, name=name)
    try:
        kind = common_kind(older.kind, newer.kind)
    except SchemaError as exc:
        where = name or newer.name
        raise SchemaError(
            f"{where}: column {newer.column!r}: {exc} (its data files disagree on the "
            "column's type)"
        ) from None
    return ColumnRange(
        name=older.name if name is None else name,
        column=newer.column,
        min_value=_pick(older.min_value, newer.min_value, True),
        max_value=_pick(older.max_value, newer.max_value, False),
        null_count=older.null_count + newer.null_count,
        value_count=older.value_count + newer.value_count,
        total_size=older.total_size + newer.total_size,
        total_uncompressed_size=older.total_uncompressed_size + newer.total_uncompressed_size,
        kind=kind,
    )


def wrap(value: Any, kind: ValueKind | None, version2: bool) -> tuple[str, dict[str, Any]] | None:
    """The ``minValue``/``maxValue`` union branch of ``value`` (None stays None).

    ``kind`` None wraps by the Python type (a version-1 range read back from the metadata
    table).

    Raises:
        ValueError: ``value`` does not fit ``kind`` (e.g. text in a numeric column).
    """
    if value is None or (kind is not None and kind.name == "NULL"):
        return None
    if version2:
        if kind is None:
            raise ValueError(f"a version-2 stats value needs a value type, got {value!r}")
        wrapper = _V2_WRAPPERS.get(kind.name, "LongWrapper")
        return (_NS + wrapper, {"value": _primitive(value, kind)})
    return _wrap_v1(value, kind)


def _wrap_v1(value: Any, kind: ValueKind | None) -> tuple[str, dict[str, Any]]:
    if kind is None:
        # A range read back from a version-1 record: keep the wrapper its Python type had.
        name = _kind_of_python(value)
        if name.endswith("TIMESTAMP_MICROS"):
            micros = _epoch_units(value, name)
            return (_NS + "TimestampMicrosWrapper", {"value": micros})
    else:
        name = kind.name
    if name.startswith(("TIMESTAMP_", "LOCAL_TIMESTAMP_", "TIME_")):
        # Hudi 1.0 reads timestamp and time columns of Parquet footers as their stored
        # primitive (ParquetUtils.convertToNativeJavaType converts decimals and dates only).
        wrapper = _V2_WRAPPERS.get(name, "LongWrapper")
        return (_NS + wrapper, {"value": _primitive(value, ValueKind(name))})
    wrapper = _V1_WRAPPERS[name]
    if wrapper == "DecimalWrapper":
        # The wrapper's logical type is decimal(30, 15): Hudi rescales every decimal to it.
        exact = Decimal(value).quantize(Decimal(1).scaleb(-_V1_DECIMAL_SCALE))
        return (_NS + wrapper, {"value": exact})
    if wrapper == "DateWrapper":
        return (_NS + wrapper, {"value": _days(value)})
    return (_NS + wrapper, {"value": value})


def _kind_of_python(value: Any) -> str:
    if isinstance(value, bool):
        return "BOOLEAN"
    if isinstance(value, int):
        return "LONG" if not -(2**31) <= value < 2**31 else "INT"
    if isinstance(value, float):
        return "DOUBLE"
    if isinstance(value, str):
        return "STRING"
    if isinstance(value, bytes | bytearray):
        return "BYTES"
    if isinstance(value, Decimal):
        return "DECIMAL"
    if isinstance(value, dt.datetime):
        return "TIMESTAMP_MICROS" if value.tzinfo is not None else "LOCAL_TIMESTAMP_MICROS"
    if isinstance(value, dt.date):
        return "DATE"
    if isinstance(value, dt.time):
        return "TIME_MICROS"
    raise ValueError(f"no column stats wrapper for {type(value).__name__} value {value!r}")


def _primitive(value: Any, kind: ValueKind) -> Any:
    name = kind.name
    if name == "DECIMAL":
        unscaled = int(Decimal(value).scaleb(kind.scale))
        return _java_big_integer_bytes(unscaled)
    if name == "DATE":
        return _days(value)
    if name.startswith("TIME_"):
        return _time_units(value, name)
    if name.startswith(("TIMESTAMP_", "LOCAL_TIMESTAMP_")):
        return _epoch_units(value, name)
    if name == "UUID":
        return str(value)
    if name in ("BYTES", "FIXED"):
        return bytes(value)
    if name in ("FLOAT", "DOUBLE"):
        return float(value)
    return value


def _java_big_integer_bytes(n: int) -> bytes:
    """Java ``BigInteger.toByteArray``: the shortest two's-complement big-endian form."""
    return n.to_bytes((n if n >= 0 else ~n).bit_length() // 8 + 1, "big", signed=True)


def _days(value: Any) -> int:
    if isinstance(value, dt.datetime):
        value = value.date()
    if isinstance(value, dt.date):
        return (value - _EPOCH_DAY).days
    return int(value)


def _time_units(value: Any, name: str) -> int:
    if isinstance(value, dt.time):
        micros = ((value.hour * 60 + value.minute) * 60 + value.second) * 10**6
        micros += value.microsecond
        return micros // 1000 if name == "TIME_MILLIS" else micros
    return int(value)


def _epoch_units(value: Any, name: str) -> int:
    if not isinstance(value, dt.datetime):
        return int(value)
    delta = value - (_NAIVE_EPOCH if value.tzinfo is None else _EPOCH)
    micros = (delta.days * 86_400 + delta.seconds) * 10**6 + delta.microseconds
    unit = name.rsplit("_", 1)[1]
    if unit == "MILLIS":
        return micros // 1000
    if unit == "NANOS":
        return micros * 1000
    return micros


def stats_payload(
    stats: ColumnRange,
    *,
    version2: bool,
    is_deleted: bool = False,
    tight: bool = False,
) -> dict[str, Any]:
    """The ``HoodieMetadataColumnStats`` record of ``stats`` (``fileName`` = ``stats.name``).

    ``version2`` writes ``valueType`` (index version 2); version 1 leaves it out, so the dict
    also fits the table version 8 schema, which has no such field.
    """
    payload: dict[str, Any] = {
        "fileName": stats.name,
        "columnName": stats.column,
        "minValue": wrap(stats.min_value, stats.kind, version2),
        "maxValue": wrap(stats.max_value, stats.kind, version2),
        "valueCount": stats.value_count,
        "nullCount": stats.null_count,
        "totalSize": stats.total_size,
        "totalUncompressedSize": stats.total_uncompressed_size,
        "isDeleted": is_deleted,
        "isTightBound": tight,
    }
    if version2:
        payload["valueType"] = (stats.kind or NULL_KIND).value_type()
    return payload
