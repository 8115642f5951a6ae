"""Arrow <-> Spark types: the logical schema as a Spark schema, and the Arrow form Spark takes.

Three functions, each a pure recursion over types:

- ``to_spark_schema`` / ``to_spark_type``: the Spark type of an Arrow type (reads).
- ``spark_arrow_type``: the exact Arrow type Spark expects in ``mapInArrow`` batches for that
  Spark type (Spark checks physical types: an ``int32`` column for a ``LongType`` fails).
- ``to_arrow_schema`` / ``to_arrow_type``: the Arrow type a Spark type is stored as in a
  Delta table (writes: creating a table from a DataFrame).

| Arrow | Spark | Arrow Spark takes |
|---|---|---|
| bool | BooleanType | bool |
| int8 / int16 / int32 / int64 | Byte / Short / Integer / LongType | same |
| uint8 / uint16 / uint32 | Short / Integer / LongType | int16 / int32 / int64 |
| uint64 | DecimalType(20, 0) | decimal128(20, 0) |
| float16 / float32 / float64 | Float / Float / DoubleType | float32 / float32 / float64 |
| decimal32..256(p <= 38, s >= 0) | DecimalType(p, s) | decimal128(p, s) |
| string / large_string / string_view | StringType | string |
| binary / large / view / fixed_size_binary | BinaryType | binary |
| date32 / date64 | DateType | date32 |
| timestamp(any unit, tz) | TimestampType | timestamp(us, UTC) |
| timestamp(any unit, no tz) | TimestampNTZType | timestamp(us) |
| duration(any unit) | DayTimeIntervalType | duration(us) |
| null | NullType | null |
| list / large_list / fixed_size_list / list_view | ArrayType | list |
| struct | StructType | struct |
| map | MapType | map |
| dictionary / extension | the value / storage type's | the value / storage type's |

Nanosecond timestamps and durations are truncated to microseconds (Spark's precision).
Anything else (time of day, intervals, unions, decimals wider than 38 digits or with a
negative scale) raises ``SchemaError`` naming the column.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import types as st

from lakecore.errors import SchemaError

MAX_DECIMAL_PRECISION = 38
"""Spark's widest decimal."""

_PRIMITIVE_TO_SPARK: tuple[tuple[pa.DataType, st.DataType], ...] = (
    (pa.bool_(), st.BooleanType()),
    (pa.int8(), st.ByteType()),
    (pa.int16(), st.ShortType()),
    (pa.int32(), st.IntegerType()),
    (pa.int64(), st.LongType()),
    (pa.uint8(), st.ShortType()),
    (pa.uint16(), st.IntegerType()),
    (pa.uint32(), st.LongType()),
    (pa.uint64(), st.DecimalType(20, 0)),
    (pa.float16(), st.FloatType()),
    (pa.float32(), st.FloatType()),
    (pa.float64(), st.DoubleType()),
    (pa.date32(), st.DateType()),
    (pa.date64(), st.DateType()),
    (pa.null(), st.NullType()),
)
_SPARK_ARROW: dict[pa.DataType, pa.DataType] = {
    pa.uint8(): pa.int16(),
    pa.uint16(): pa.int32(),
    pa.uint32(): pa.int64(),
    pa.uint64(): pa.decimal128(20, 0),
    pa.float16(): pa.float32(),
    pa.date64(): pa.date32(),
}


def _unwrap(t: pa.DataType) -> pa.DataType:
    """The value type of dictionaries and the storage type of extension types."""
    while True:
        if isinstance(t, pa.BaseExtensionType):
            t = t.storage_type
        elif pa.types.is_dictionary(t):
            t = t.value_type
        else:
            return t


def _is(t: pa.DataType, *checks: str) -> bool:
    """Whether any of the ``pyarrow.types`` checks named holds (missing ones, in older
    pyarrow versions without view types, do not)."""
    return any(bool(getattr(pa.types, name, lambda _: False)(t)) for name in checks)


def _is_list(t: pa.DataType) -> bool:
    return _is(
        t, "is_list", "is_large_list", "is_fixed_size_list", "is_list_view", "is_large_list_view"
    )


def _is_string(t: pa.DataType) -> bool:
    return _is(t, "is_string", "is_large_string", "is_string_view")


def _is_binary(t: pa.DataType) -> bool:
    return _is(t, "is_binary", "is_large_binary", "is_binary_view", "is_fixed_size_binary")


def _check_decimal(t: pa.DataType, path: str) -> None:
    if t.precision > MAX_DECIMAL_PRECISION or t.scale < 0:
        raise SchemaError(
            f"column {path!r} has type {t}: Spark decimals hold at most "
            f"{MAX_DECIMAL_PRECISION} digits and a scale >= 0"
        )


def _unsupported(t: pa.DataType, path: str) -> SchemaError:
    return SchemaError(f"column {path!r} has Arrow type {t}, which Spark cannot represent")


def to_spark_type(t: pa.DataType, path: str = "") -> st.DataType:
    """The Spark type of Arrow type ``t`` (``path`` names the column in errors).

    Raises ``SchemaError`` for types Spark has no equivalent of (see the module table).
    """
    t = _unwrap(t)
    for arrow, spark in _PRIMITIVE_TO_SPARK:
        if t == arrow:
            return spark
    if _is_string(t):
        return st.StringType()
    if _is_binary(t):
        return st.BinaryType()
    if pa.types.is_decimal(t):
        _check_decimal(t, path)
        return st.DecimalType(t.precision, t.scale)
    if pa.types.is_timestamp(t):
        return st.TimestampType() if t.tz is not None else st.TimestampNTZType()
    if pa.types.is_duration(t):
        return st.DayTimeIntervalType(st.DayTimeIntervalType.DAY, st.DayTimeIntervalType.SECOND)
    if _is_list(t):
        element = to_spark_type(t.value_type, f"{path}.element")
        return st.ArrayType(element, containsNull=t.value_field.nullable)
    if pa.types.is_map(t):
        key = to_spark_type(t.key_type, f"{path}.key")
        value = to_spark_type(t.item_type, f"{path}.value")
        return st.MapType(key, value, valueContainsNull=t.item_field.nullable)
    if pa.types.is_struct(t):
        return st.StructType([_to_spark_field(t.field(i), path) for i in range(t.num_fields)])
    raise _unsupported(t, path)


def _to_spark_field(f: pa.Field, parent: str = "") -> st.StructField:
    path = f"{parent}.{f.name}" if parent else f.name
    return st.StructField(f.name, to_spark_type(f.type, path), nullable=f.nullable)


def to_spark_schema(schema: pa.Schema) -> st.StructType:
    """The Spark schema of an Arrow schema: same names, order and nullability.

    Raises ``SchemaError`` naming the first column whose type Spark cannot represent.
    """
    return st.StructType([_to_spark_field(f) for f in schema])


def spark_arrow_type(t: pa.DataType) -> pa.DataType:
    """The Arrow type Spark takes for the Spark type of ``t`` (see the module table).

    Field names and nullability of nested types are kept; ``t`` must be accepted by
    ``to_spark_type``.
    """
    t = _unwrap(t)
    if t in _SPARK_ARROW:
        return _SPARK_ARROW[t]
    if _is_string(t):
        return pa.string()
    if _is_binary(t):
        return pa.binary()
    if pa.types.is_decimal(t):
        return pa.decimal128(t.precision, t.scale)
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", "UTC" if t.tz is not None else None)
    if pa.types.is_duration(t):
        return pa.duration("us")
    if _is_list(t):
        return pa.list_(_spark_arrow_field(t.value_field))
    if pa.types.is_map(t):
        return pa.map_(_spark_arrow_field(t.key_field), _spark_arrow_field(t.item_field))
    if pa.types.is_struct(t):
        return pa.struct([_spark_arrow_field(t.field(i)) for i in range(t.num_fields)])
    return t


def _spark_arrow_field(f: pa.Field) -> pa.Field:
    return pa.field(f.name, spark_arrow_type(f.type), f.nullable)


def spark_arrow_schema(schema: pa.Schema) -> pa.Schema:
    """The schema of the Arrow batches Spark takes for ``to_spark_schema(schema)``."""
    return pa.schema([_spark_arrow_field(f) for f in schema])


def to_arrow_type(t: st.DataType, path: str = "") -> pa.DataType:
    """The Arrow type a Spark type is stored as in a lakecore table.

    ``TimestampType`` becomes ``timestamp(us, UTC)``, ``TimestampNTZType`` ``timestamp(us)``,
    ``CharType``/``VarcharType`` ``string``. Raises ``SchemaError`` for types with no table
    equivalent (intervals, calendar intervals, variants, objects).
    """
    simple: dict[type[st.DataType], pa.DataType] = {
        st.BooleanType: pa.bool_(),
        st.ByteType: pa.int8(),
        st.ShortType: pa.int16(),
        st.IntegerType: pa.int32(),
        st.LongType: pa.int64(),
        st.FloatType: pa.float32(),
        st.DoubleType: pa.float64(),
        st.StringType: pa.string(),
        st.CharType: pa.string(),
        st.VarcharType: pa.string(),
        st.BinaryType: pa.binary(),
        st.DateType: pa.date32(),
        st.TimestampType: pa.timestamp("us", "UTC"),
        st.TimestampNTZType: pa.timestamp("us"),
    }
    for spark_class, arrow in simple.items():
        if type(t) is spark_class:
            return arrow
    if isinstance(t, st.DecimalType):
        return pa.decimal128(t.precision, t.scale)
    if isinstance(t, st.ArrayType):
        element = to_arrow_type(t.elementType, f"{path}.element")
        return pa.list_(pa.field("element", element, t.containsNull))
    if isinstance(t, st.MapType):
        key = to_arrow_type(t.keyType, f"{path}.key")
        value = to_arrow_type(t.valueType, f"{path}.value")
        return pa.map_(pa.field("key", key, False), pa.field("value", value, t.valueContainsNull))
    if isinstance(t, st.StructType):
        return pa.struct([_to_arrow_field(f, path) for f in t.fields])
    raise SchemaError(
        f"column {path!r} has Spark type {t.simpleString()}, which lakecore cannot store"
    )


def _to_arrow_field(f: st.StructField, parent: str = "") -> pa.Field:
    path = f"{parent}.{f.name}" if parent else f.name
    return pa.field(f.name, to_arrow_type(f.dataType, path), f.nullable)


def to_arrow_schema(schema: st.StructType) -> pa.Schema:
    """The Arrow schema of a Spark schema (same names, order and nullability)."""
    return pa.schema([_to_arrow_field(f) for f in schema.fields])


def same_type(a: st.DataType, b: st.DataType) -> bool:
    """Whether two Spark types are equal when nullability is ignored (names and order count)."""
    if isinstance(a, st.StructType) and isinstance(b, st.StructType):
        return len(a.fields) == len(b.fields) and all(
            x.name == y.name and same_type(x.dataType, y.dataType)
            for x, y in zip(a.fields, b.fields, strict=True)
        )
    if isinstance(a, st.ArrayType) and isinstance(b, st.ArrayType):
        return same_type(a.elementType, b.elementType)
    if isinstance(a, st.MapType) and isinstance(b, st.MapType):
        return same_type(a.keyType, b.keyType) and same_type(a.valueType, b.valueType)
    strings = (st.StringType, st.CharType, st.VarcharType)
    if isinstance(a, strings) and isinstance(b, strings):
        return True  # collations and char/varchar lengths are not part of the stored type
    return bool(a == b)
