"""The one Spark SQL front end and the one evaluator: dialect, scalar functions, errors."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from lakecore.errors import PredicateError, SchemaError
from lakecore.expr import tree as ex
from lakecore.expr.arrow_filter import to_arrow_filter
from lakecore.expr.binding import bind
from lakecore.expr.evaluate import evaluate, evaluate_predicate
from lakecore.expr.sql import parse_expression, parse_sql
from lakecore.expr.tree import col
from lakecore.model import files as fi
from lakecore.planning.bounds import FileBounds
from lakecore.planning.pruning import may_be
from lakecore.planning.tasks import StatsPrecision

TABLE = pa.table(
    {
        "i": pa.array([1, 2, None, 4], pa.int32()),
        "s": ["a", "B", None, "dd"],
        "m": pa.array(
            [Decimal("1.50"), None, Decimal("0.00"), Decimal("3.25")], pa.decimal128(5, 2)
        ),
        "f": [1.0, float("nan"), None, -0.0],
        "ts": pa.array(
            [dt.datetime(2024, 1, d) for d in (1, 2, 3, 4)], pa.timestamp("us", tz="UTC")
        ),
    }
)

SCALARS: list[tuple[str, list[Any]]] = [
    ("i + 1", [2, 3, None, 5]),
    ("i * 2 - 1", [1, 3, None, 7]),
    ("i / 2", [0.5, 1.0, None, 2.0]),
    ("i / 0", [None, None, None, None]),  # division by zero is NULL (CASE guards stay safe)
    ("-i % 3", [-1, -2, None, -1]),  # the remainder takes the dividend's sign
    ("i DIV 3", [0, 0, None, 1]),
    ("m / 2", [Decimal("0.75"), None, Decimal(0), Decimal("1.625")]),
    ("m * i", [Decimal("1.50"), None, None, Decimal("13.00")]),
    ("abs(-i)", [1, 2, None, 4]),
    ("upper(s)", ["A", "B", None, "DD"]),
    ("lower(s) || '!'", ["a!", "b!", None, "dd!"]),
    ("concat(s, '-', i)", ["a-1", "B-2", None, "dd-4"]),
    ("length(s)", [1, 1, None, 2]),
    ("substring(s, 2)", ["", "", None, "d"]),
    ("substr('abcdef', -3, 2)", ["de"] * 4),
    ("trim('  x ')", ["x"] * 4),
    ("round(m, 1)", [Decimal("1.5"), None, Decimal("0.0"), Decimal("3.3")]),
    ("round(2.5)", [Decimal(3)] * 4),
    ("coalesce(i, 0)", [1, 2, 0, 4]),
    ("nvl(s, 'z')", ["a", "B", "z", "dd"]),
    ("nullif(i, 2)", [1, None, None, 4]),
    ("greatest(i, 3)", [3, 3, 3, 4]),
    ("CASE WHEN i > 1 THEN 'big' WHEN i = 1 THEN 'one' END", ["one", "big", None, "big"]),
    ("CASE i WHEN 1 THEN 10 ELSE 0 END", [10, 0, 0, 0]),
    ("if(i > 1, m, 0)", [Decimal(0), None, Decimal(0), Decimal("3.25")]),
    ("CAST(i AS STRING)", ["1", "2", None, "4"]),
    ("CAST('5' AS INT) + i", [6, 7, None, 9]),
    ('"double quotes are text"', ["double quotes are text"] * 4),
    ("'a\\nb'", ["a\nb"] * 4),
    ("year(ts) * 100 + month(ts)", [202401] * 4),
    ("day(ts) + hour(ts)", [1, 2, 3, 4]),
    ("to_date(ts)", [dt.date(2024, 1, d) for d in (1, 2, 3, 4)]),
    ("CAST(ts AS DATE)", [dt.date(2024, 1, d) for d in (1, 2, 3, 4)]),
]


@pytest.mark.parametrize(("sql", "expected"), SCALARS, ids=[s for s, _ in SCALARS])
def test_scalar_expressions(sql: str, expected: list[Any]) -> None:
    got = evaluate(sql, TABLE).to_pylist()
    assert [None if v is None else v for v in got] == expected


def test_scalar_cases_count() -> None:
    assert len(SCALARS) == 33


PREDICATES: list[tuple[str, list[bool | None]]] = [
    ('s = "a"', [True, False, None, False]),  # Spark SQL: a double-quoted string
    ("`s` = 'a'", [True, False, None, False]),  # backticks name a column
    ("ts >= TIMESTAMP '2024-01-02'", [False, True, True, True]),
    ("ts >= '2024-01-03'", [False, False, True, True]),
    ("i > 1.5", [False, True, None, True]),  # no INT value is 1.5: compared exactly
    ("i = 300000000000", [False, False, None, False]),
    ("f = 0.0", [False, False, None, True]),  # -0.0 = 0.0
    ("f IN (0.0, 5.0)", [False, False, None, True]),
    ("f != 1", [False, True, None, True]),  # NaN is unequal to everything
    ("upper(s) LIKE 'D%'", [False, False, None, True]),
    ("i IN (s, 2)", [None, True, None, None]),
    ("i BETWEEN 2 AND i * 2", [False, True, None, True]),
    ("CASE WHEN i > 1 THEN TRUE END", [None, True, None, True]),
    ("coalesce(i, 0) = 0", [False, False, True, False]),
    ("m / 0 IS NULL", [True, True, True, True]),
    ("i = i", [True, True, None, True]),
    ("i <=> 2", [False, True, False, False]),  # null-safe: never NULL
    ("i IN (1, 3000000000)", [True, False, None, False]),  # beyond INT: compared exactly
    ("i BETWEEN 1.5 AND 4", [False, True, None, True]),
    ("NOT (s <=> NULL)", [True, True, False, True]),
]


@pytest.mark.parametrize(("sql", "expected"), PREDICATES, ids=[s for s, _ in PREDICATES])
def test_predicates_evaluate_and_filter_alike(sql: str, expected: list[bool | None]) -> None:
    if sql == "i IN (s, 2)":
        with pytest.raises(PredicateError):
            evaluate_predicate(sql, TABLE)  # a string column is not compared with an INT
        return
    assert evaluate_predicate(sql, TABLE).to_pylist() == expected
    bound = bind(parse_sql(sql), TABLE.schema)
    kept = TABLE.filter(to_arrow_filter(bound, TABLE.schema)).column("i").to_pylist()
    assert kept == [v for v, t in zip(TABLE.column("i").to_pylist(), expected, strict=True) if t]
    # str() is Spark SQL that parses back to the same rows
    assert evaluate_predicate(str(bound), TABLE).to_pylist() == expected


def test_predicate_cases_count() -> None:
    assert len(PREDICATES) == 20


@pytest.mark.parametrize(
    ("sql", "error"),
    [
        ("nope = 1", SchemaError),
        ("upper(nope) = 'X'", SchemaError),
        ("i + ", PredicateError),
        ("md5(s) = 'x'", PredicateError),
        ("s + 1 > 2", PredicateError),
        ("i", PredicateError),  # not boolean
        ("upper(s)", PredicateError),  # not boolean
        ("substring(s, i)", PredicateError),  # positions must be integer literals
        ("i = 1; DROP TABLE t", PredicateError),
    ],
)
def test_errors_before_any_row(sql: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        evaluate_predicate(sql, TABLE.schema.empty_table())


def test_parse_expression_and_rendering() -> None:
    tree = parse_expression('CASE WHEN `my col` > 1 THEN upper(s) || "x" ELSE NULL END')
    assert tree == ex.Case(
        (
            (
                ex.Comparison(">", col("my col"), ex.Literal(1)),
                ex.Call("concat", (ex.Call("upper", (col("s"),)), ex.Literal("x"))),
            ),
        ),
        ex.Literal(None),
    )
    assert str(tree) == "CASE WHEN `my col` > 1 THEN concat(upper(s), 'x') ELSE NULL END"
    assert parse_expression(str(tree)) == tree


def test_negative_zero_in_an_in_list_is_found_by_filter_and_pruning() -> None:
    """``is_in`` hashes floats bitwise: -0.0 did not find 0.0 (the scan dropped the row, and
    pruning a file whose only value is -0.0)."""
    t = pa.table({"f": [-0.0, 1.0]})
    pred = bind(parse_sql("f IN (0.0, 3.0)"), t.schema)
    assert t.filter(to_arrow_filter(pred, t.schema)).num_rows == 1
    index = pa.table(
        {
            fi.RECORD_COUNT: pa.array([1], pa.int64()),
            fi.MIN: pa.array([{"f": -0.0}], pa.struct([("f", pa.float64())])),
            fi.MAX: pa.array([{"f": -0.0}], pa.struct([("f", pa.float64())])),
            fi.NULL_COUNT: pa.array([{"f": 0}], pa.struct([("f", pa.int64())])),
            fi.PARTITION: pa.array([{"f": -0.0}], pa.struct([("f", pa.float64())])),
        }
    )
    for partitions in ((), ("f",)):
        bounds = FileBounds(index, t.schema, partitions, StatsPrecision())
        mask = may_be(pred, True, bounds)
        assert mask is True or mask.to_pylist() == [True]


def test_expressions_pruning_cannot_read_may_match() -> None:
    schema = pa.schema([("i", pa.int64())])
    index = pa.table(
        {
            fi.RECORD_COUNT: pa.array([2], pa.int64()),
            fi.MIN: pa.array([{"i": 1}], pa.struct([("i", pa.int64())])),
            fi.MAX: pa.array([{"i": 2}], pa.struct([("i", pa.int64())])),
            fi.NULL_COUNT: pa.array([{"i": 0}], pa.struct([("i", pa.int64())])),
        }
    )
    bounds = FileBounds(index, schema, (), StatsPrecision())
    for sql in ("i * 10 > 15", "abs(i) IN (2)", "coalesce(i, 0) IS NULL", "i = i + 0"):
        pred = bind(parse_sql(sql), schema)
        for want in (True, False):
            assert may_be(pred, want, bounds) is True
    assert may_be(bind(parse_sql("i > 5"), schema), True, bounds).to_pylist() == [False]
