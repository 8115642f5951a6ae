"""The ``HoodieMetadataColumnStats`` payload of a ``ColumnRange``: bounds in Hudi's wrappers.

Version 1 wraps a bound in the record naming the Java type Hudi 1.0 reads from a Parquet
footer (``StringWrapper``, ``DecimalWrapper`` rescaled to decimal(30, 15), ``DateWrapper`` of
epoch days; timestamps and times keep their stored primitive, ``ParquetUtils`` converting
decimals and dates only) and writes no ``valueType``. Version 2 wraps the primitive of the
range's ``ValueKind`` (Hudi's ``ValueType.primitiveWrapperType``) and writes the kind's
``valueType``. Union branches are ``(full record name, {"value": ...})`` pairs, as fastavro
reads and writes them.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from lakecore_hudi.mdt.stats_values import NULL_KIND, ColumnRange, ValueKind

__all__ = ["stats_payload", "wrap"]

_NS = "org.apache.hudi.avro.model."

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
