"""Arrow <-> Spark types (no SparkSession needed)."""

from __future__ import annotations

import pyarrow as pa
import pytest

pytest.importorskip("pyspark", reason="needs pyspark (pip install 'lakecore[spark]')")

from pyspark.sql import types as st

from lakecore.errors import SchemaError
from lakecore.spark.types import (
    same_type,
    spark_arrow_schema,
    to_arrow_schema,
    to_spark_schema,
    to_spark_type,
)

pytestmark = pytest.mark.spark

PRIMITIVES = [
    (pa.bool_(), st.BooleanType(), pa.bool_()),
    (pa.int8(), st.ByteType(), pa.int8()),
    (pa.int16(), st.ShortType(), pa.int16()),
    (pa.int32(), st.IntegerType(), pa.int32()),
    (pa.int64(), st.LongType(), pa.int64()),
    (pa.uint8(), st.ShortType(), pa.int16()),
    (pa.uint16(), st.IntegerType(), pa.int32()),
    (pa.uint32(), st.LongType(), pa.int64()),
    (pa.uint64(), st.DecimalType(20, 0), pa.decimal128(20, 0)),
    (pa.float16(), st.FloatType(), pa.float32()),
    (pa.float32(), st.FloatType(), pa.float32()),
    (pa.float64(), st.DoubleType(), pa.float64()),
    (pa.decimal128(38, 10), st.DecimalType(38, 10), pa.decimal128(38, 10)),
    (pa.decimal256(20, 2), st.DecimalType(20, 2), pa.decimal128(20, 2)),
    (pa.decimal64(10, 0), st.DecimalType(10, 0), pa.decimal128(10, 0)),
    (pa.string(), st.StringType(), pa.string()),
    (pa.large_string(), st.StringType(), pa.string()),
    (pa.string_view(), st.StringType(), pa.string()),
    (pa.binary(), st.BinaryType(), pa.binary()),
    (pa.large_binary(), st.BinaryType(), pa.binary()),
    (pa.binary(16), st.BinaryType(), pa.binary()),
    (pa.date32(), st.DateType(), pa.date32()),
    (pa.date64(), st.DateType(), pa.date32()),
    (pa.timestamp("us", "UTC"), st.TimestampType(), pa.timestamp("us", "UTC")),
    (pa.timestamp("ns", "Asia/Tokyo"), st.TimestampType(), pa.timestamp("us", "UTC")),
    (pa.timestamp("s"), st.TimestampNTZType(), pa.timestamp("us")),
    (pa.timestamp("us"), st.TimestampNTZType(), pa.timestamp("us")),
    (pa.duration("ns"), st.DayTimeIntervalType(0, 3), pa.duration("us")),
    (pa.null(), st.NullType(), pa.null()),
    (pa.dictionary(pa.int8(), pa.string()), st.StringType(), pa.string()),
]


@pytest.mark.parametrize(("arrow", "spark", "exchanged"), PRIMITIVES, ids=str)
def test_primitives(arrow: pa.DataType, spark: st.DataType, exchanged: pa.DataType) -> None:
    schema = pa.schema([("c", arrow)])
    assert to_spark_schema(schema) == st.StructType([st.StructField("c", spark)])
    assert spark_arrow_schema(schema).field("c").type == exchanged


def test_nested_types_keep_names_and_nullability() -> None:
    element = pa.field("element", pa.struct([pa.field("a", pa.int32(), nullable=False)]))
    schema = pa.schema(
        [
            pa.field("l", pa.large_list(element), nullable=False),
            pa.field("m", pa.map_(pa.string(), pa.field("v", pa.float64(), nullable=False))),
            pa.field("f", pa.list_(pa.int64(), 2)),
        ]
    )
    assert to_spark_schema(schema) == st.StructType(
        [
            st.StructField(
                "l",
                st.ArrayType(st.StructType([st.StructField("a", st.IntegerType(), False)])),
                nullable=False,
            ),
            st.StructField("m", st.MapType(st.StringType(), st.DoubleType(), False)),
            st.StructField("f", st.ArrayType(st.LongType())),
        ]
    )
    exchanged = spark_arrow_schema(schema)
    assert exchanged.field("l").type == pa.list_(element)
    assert exchanged.field("f").type == pa.list_(pa.int64())


@pytest.mark.parametrize(
    "t",
    [
        pa.time64("us"),
        pa.month_day_nano_interval(),
        pa.decimal256(40, 2),
        pa.decimal128(5, -2),
        pa.struct([("inner", pa.time32("s"))]),
    ],
    ids=str,
)
def test_unrepresentable_types_name_the_column(t: pa.DataType) -> None:
    with pytest.raises(SchemaError, match="'c"):
        to_spark_schema(pa.schema([("c", t)]))


def test_spark_to_arrow_and_back() -> None:
    spark = st.StructType(
        [
            st.StructField("id", st.LongType(), False),
            st.StructField("ts", st.TimestampType()),
            st.StructField("ntz", st.TimestampNTZType()),
            st.StructField("c", st.CharType(3)),
            st.StructField("d", st.DecimalType(7, 2)),
            st.StructField("a", st.ArrayType(st.ShortType(), False)),
            st.StructField("m", st.MapType(st.DateType(), st.BinaryType())),
            st.StructField("s", st.StructType([st.StructField("x", st.FloatType())])),
        ]
    )
    arrow = to_arrow_schema(spark)
    assert arrow.field("ts").type == pa.timestamp("us", "UTC")
    assert arrow.field("ntz").type == pa.timestamp("us")
    assert arrow.field("c").type == pa.string()
    assert not arrow.field("id").nullable
    back = to_spark_schema(arrow)
    assert all(same_type(a.dataType, b.dataType) for a, b in zip(spark, back, strict=True))
    with pytest.raises(SchemaError, match="'i'"):
        to_arrow_schema(st.StructType([st.StructField("i", st.DayTimeIntervalType())]))


def test_same_type_ignores_nullability_only() -> None:
    a = st.ArrayType(st.StructType([st.StructField("x", st.IntegerType(), False)]), False)
    b = st.ArrayType(st.StructType([st.StructField("x", st.IntegerType(), True)]), True)
    assert same_type(a, b)
    renamed = st.ArrayType(st.StructType([st.StructField("y", st.IntegerType())]))
    assert not same_type(a, renamed)
    assert not same_type(st.IntegerType(), st.LongType())
    assert same_type(st.StringType("UTF8_LCASE"), st.VarcharType(4))
    assert to_spark_type(pa.int64()) == st.LongType()
