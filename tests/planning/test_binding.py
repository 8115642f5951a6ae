"""Binding predicates to a schema: column resolution and literal coercion per type."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pyarrow as pa
import pytest

from lakecore.errors import PredicateError, SchemaError
from lakecore.expr import tree as ex
from lakecore.expr.tree import col
from lakecore.planning import bind, parse_predicate

UTC = dt.timezone.utc
SCHEMA = pa.schema(
    [
        ("i8", pa.int8()),
        ("i64", pa.int64()),
        ("u8", pa.uint8()),
        ("f32", pa.float32()),
        ("f64", pa.float64()),
        ("dec", pa.decimal128(5, 2)),
        ("s", pa.string()),
        ("bin", pa.binary()),
        ("flag", pa.bool_()),
        ("day", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("ntz", pa.timestamp("us")),
        ("ts_ms", pa.timestamp("ms", tz="UTC")),
        ("Region", pa.string()),
        ("nested", pa.struct([("a", pa.int32())])),
        ("items", pa.list_(pa.int32())),
    ]
)


def bound_value(column: str, value: Any) -> Any:
    pred = bind(col(column).eq(value), SCHEMA)
    assert isinstance(pred, ex.Comparison)
    return pred.literal.value


@pytest.mark.parametrize(
    ("column", "value", "expected"),
    [
        ("i8", 5, 5),
        ("i8", -128, -128),
        ("i64", 5.0, 5),
        ("i64", decimal.Decimal("7.00"), 7),
        ("i64", "12", 12),
        ("u8", 255, 255),
        ("f64", 5, 5.0),
        ("f64", decimal.Decimal("0.1"), 0.1),
        ("f64", "NaN", float("nan")),
        ("f32", 0.5, 0.5),
        ("f32", "0.1", float(pa.scalar(0.1, pa.float32()).as_py())),
        ("f32", 16777217, 16777216.0),
        ("dec", 5, decimal.Decimal("5.00")),
        ("dec", 1.5, decimal.Decimal("1.50")),
        ("dec", "-999.99", decimal.Decimal("-999.99")),
        ("dec", decimal.Decimal("1.2"), decimal.Decimal("1.20")),
        ("s", "eu", "eu"),
        ("bin", "ab", b"ab"),
        ("bin", b"\x00", b"\x00"),
        ("flag", True, True),
        ("flag", "false", False),
        ("day", "2024-01-01", dt.date(2024, 1, 1)),
        ("day", dt.datetime(2024, 1, 1), dt.date(2024, 1, 1)),
        ("day", "2024-01-01 00:00:00", dt.date(2024, 1, 1)),
        ("ts", "2024-01-01", dt.datetime(2024, 1, 1, tzinfo=UTC)),
        ("ts", dt.date(2024, 1, 1), dt.datetime(2024, 1, 1, tzinfo=UTC)),
        ("ts", "2024-01-01T02:00:00+02:00", dt.datetime(2024, 1, 1, tzinfo=UTC)),
        ("ts", "2024-01-01 00:00:00.000001Z", dt.datetime(2024, 1, 1, 0, 0, 0, 1, tzinfo=UTC)),
        ("ntz", "2024-01-01 10:30:00", dt.datetime(2024, 1, 1, 10, 30)),
        ("ts_ms", "2024-01-01 00:00:00.123", dt.datetime(2024, 1, 1, 0, 0, 0, 123000, tzinfo=UTC)),
        ("i64", None, None),
    ],
)
def test_literals_are_coerced_to_the_column_type(column: str, value: Any, expected: Any) -> None:
    got = bound_value(column, value)
    if isinstance(expected, float) and expected != expected:
        assert got != got
    else:
        assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize(
    ("column", "value", "fragment"),
    [
        ("i64", "abc", "i64"),
        ("i64", True, "boolean"),
        ("f64", "x", "f64"),
        ("s", 5, "expected text"),
        ("flag", 1, "boolean"),
        ("day", "2024-13-01", "day"),
        ("day", dt.datetime(2024, 1, 1, 12), "time of day"),
        ("ntz", "2024-01-01T00:00:00+01:00", "without UTC offset"),
        ("ts_ms", "2024-01-01 00:00:00.0001", "below the column's unit"),
        ("ts", 5, "expected a timestamp"),
    ],
)
def test_impossible_coercions_raise(column: str, value: Any, fragment: str) -> None:
    with pytest.raises(PredicateError, match=fragment):
        bound_value(column, value)


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("i8", 128),
        ("u8", -1),
        ("i64", 2.5),
        ("dec", decimal.Decimal("1.234")),
        ("dec", 1000),
        ("dec", float("inf")),
        ("f32", 0.1),
        ("f32", decimal.Decimal("0.7")),
    ],
)
def test_numbers_outside_the_column_type_compare_exactly(column: str, value: Any) -> None:
    """A number that is no value of the column's type is not coerced (that would change it):
    the comparison stays a ``Compare``, which Arrow evaluates promoting both sides as Spark
    does, and which pruning leaves alone (it used to raise ``PredicateError``)."""
    pred = bind(col(column).gt(value), SCHEMA)
    assert pred == ex.Compare(">", col(column), ex.Literal(value))


def test_every_literal_of_every_node_is_coerced() -> None:
    pred = bind(
        parse_predicate("i64 IN (1, '2') AND dec BETWEEN 1 AND 2.5 AND NOT day = '2024-01-01'"),
        SCHEMA,
    )
    expected = ex.And(
        (
            col("i64").isin([1, 2]),
            col("dec").between(decimal.Decimal("1.00"), decimal.Decimal("2.50")),
            ~col("day").eq(dt.date(2024, 1, 1)),
        )
    )
    assert pred == expected


def test_column_names_resolve_case_insensitively_when_unambiguous() -> None:
    assert bind(parse_predicate("REGION = 'x'"), SCHEMA) == col("Region").eq("x")
    assert bind(parse_predicate("Region = 'x'"), SCHEMA) == col("Region").eq("x")
    twins = pa.schema([("a", pa.int32()), ("A", pa.int32())])
    with pytest.raises(SchemaError, match="unknown column"):
        bind(col("\uff21").eq(1), twins)  # fullwidth A: no case-insensitive match either


def test_unknown_columns_raise_schema_error() -> None:
    with pytest.raises(SchemaError, match=r"'nope'.*the table has"):
        bind(parse_predicate("i64 = 1 OR nope = 2"), SCHEMA)


@pytest.mark.parametrize("column", ["nested", "items"])
def test_nested_columns_are_refused(column: str) -> None:
    with pytest.raises(PredicateError, match="primitive columns"):
        bind(col(column).is_null(), SCHEMA)


def test_like_needs_a_string_column() -> None:
    with pytest.raises(PredicateError, match="LIKE needs a string column"):
        bind(col("i64").like("1%"), SCHEMA)


def test_bare_non_boolean_column_is_refused() -> None:
    with pytest.raises(PredicateError, match="boolean"):
        bind(parse_predicate("i64"), SCHEMA)
