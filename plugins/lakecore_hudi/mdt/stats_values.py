"""Column statistics as the metadata table stores them: value types and ranges.

Hudi keeps one ``HoodieMetadataColumnStats`` per (data file, column) in ``column_stats`` and
per (partition, column) in ``partition_stats``. Its ``minValue``/``maxValue`` are a union of
wrapper records, written one of two ways (the index version of the partition's index
definition; table version 8 writes version 1, table version 9 version 2; ``stats_wrappers``
writes them):

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
from lakecore_hudi.mdt.records import VALUE_TYPES

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
]

_ORDINALS = {name: i for i, name in enumerate(VALUE_TYPES)}
_BY_ORDINAL = {i: name for name, i in _ORDINALS.items()}

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
