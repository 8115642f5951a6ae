"""Predicate input: the expression model, SQL text, pyarrow expressions, and their errors."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import pickle

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakecore.errors import LakecoreError, PredicateError
from lakecore.expr import tree as ex
from lakecore.expr.arrow_filter import to_arrow_filter
from lakecore.expr.tree import col
from lakecore.planning import bind, parse_predicate

# ------------------------------------------------------------------------------ model


def test_operators_build_flat_trees() -> None:
    a, b, c = col("a").eq(1), col("b").gt(2), col("c").is_null()
    assert (a & b & c) == ex.And((a, b, c))
    assert (a | (b | c)) == ex.Or((a, b, c))
    assert ~a == ex.Not(a)
    assert ex.and_(a) == a


def test_junction_rejects_non_predicates() -> None:
    with pytest.raises(TypeError):
        ex.and_(col("a").eq(1), "b = 2")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least one"):
        ex.or_()


def test_comparison_rejects_unknown_operator() -> None:
    with pytest.raises(ValueError, match="operator"):
        ex.Comparison("==", col("a"), ex.Literal(1))


def test_columns_of_lists_each_column_once() -> None:
    pred = (col("a").eq(1) & col("b").isin([1])) | ~col("a").like("x%")
    assert ex.columns_of(pred) == ["a", "b"]


def test_str_renders_sql() -> None:
    pred = (col("region").eq("it's") & col("x").isin([1, 2])) | ~col("y").is_null()
    # Spark SQL: backslash escapes in strings, backticks around identifiers.
    assert str(pred) == "(region = 'it\\'s' AND x IN (1, 2)) OR (NOT y IS NULL)"
    assert str(col("select").between(1, 2)) == "`select` BETWEEN 1 AND 2"
    assert str(col("my `col`").eq(None)) == "`my ``col``` = NULL"
    assert str(col("s").eq("a\\b")) == "s = 'a\\\\b'"


LITERALS = [
    None,
    True,
    -7,
    2.5,
    float("nan"),
    float("-inf"),
    decimal.Decimal("-12.50"),
    "a'b",
    b"\x00\xff",
    dt.date(2024, 2, 29),
    dt.datetime(2024, 1, 1, 12, 30, 0, 123456),
    dt.datetime(2024, 1, 1, 12, 30, tzinfo=dt.timezone.utc),
]


@pytest.mark.parametrize("value", LITERALS, ids=repr)
def test_sql_text_round_trips_literals(value: object) -> None:
    parsed = parse_predicate(str(col("c").eq(value)))
    assert isinstance(parsed, ex.Comparison)
    got = parsed.literal.value
    if isinstance(value, float) and value != value:
        assert isinstance(got, float) and got != got
    else:
        assert got == value
        # Numbers with a fraction parse as exact Decimals; binding makes them floats.
        finite_float = isinstance(value, float) and math.isfinite(value)
        assert type(got) is (decimal.Decimal if finite_float else type(value))


def test_trees_pickle() -> None:
    pred = col("a").between(1, 2) & ~col("s").like("x%") | col("d").eq(dt.date(2024, 1, 1))
    assert pickle.loads(pickle.dumps(pred)) == pred


# ------------------------------------------------------------------------------ SQL text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("region = 'eu'", col("region").eq("eu")),
        ("'eu' = region", col("region").eq("eu")),
        ("5 < x", col("x").gt(5)),
        ("x <> 1", col("x").ne(1)),
        ("x != -1", col("x").ne(-1)),
        ("x >= 1.5", col("x").ge(decimal.Decimal("1.5"))),
        ("x IN (1, 2)", col("x").isin([1, 2])),
        ("x NOT IN (1, NULL)", ~col("x").isin([1, None])),
        ("x IS NULL", col("x").is_null()),
        ("x IS NOT NULL", ~col("x").is_null()),
        ("x BETWEEN 1 AND 3", col("x").between(1, 3)),
        ("x NOT BETWEEN 1 AND 3", ~col("x").between(1, 3)),
        ("s LIKE 'ab%'", col("s").like("ab%")),
        ("s NOT LIKE 'ab%'", ~col("s").like("ab%")),
        ("flag", col("flag").eq(True)),
        ("NOT flag", ~col("flag").eq(True)),
        ("`my col` = 1", col("my col").eq(1)),
        ('region = "eu"', col("region").eq("eu")),
        ("s = 'a\\nb'", col("s").eq("a\nb")),
        ("s = 'it\\'s'", col("s").eq("it's")),
        ("t.x = 1", col("t.x").eq(1)),
        ("d = DATE '2024-01-01'", col("d").eq(dt.date(2024, 1, 1))),
        ("t >= TIMESTAMP '2024-01-01'", col("t").ge(dt.datetime(2024, 1, 1))),
        (
            "t > TIMESTAMP '2024-01-01 10:00:00+02:00'",
            col("t").gt(dt.datetime(2024, 1, 1, 10, tzinfo=dt.timezone(dt.timedelta(hours=2)))),
        ),
        ("t > TIMESTAMP_NTZ '2024-01-01'", col("t").gt(dt.datetime(2024, 1, 1))),
        ("x = CAST('7' AS INT)", col("x").eq(7)),
        ("b = UNHEX('00ff')", col("b").eq(b"\x00\xff")),
        ("(a = 1 OR a = 2) AND NOT (b = 3)", (col("a").eq(1) | col("a").eq(2)) & ~col("b").eq(3)),
    ],
)
def test_sql_parses(text: str, expected: ex.Predicate) -> None:
    assert parse_predicate(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a = b", ex.Compare("=", col("a"), col("b"))),
        ("a + 1 > 2", ex.Compare(">", ex.Arithmetic("+", col("a"), ex.Literal(1)), ex.Literal(2))),
        ("CAST(x AS INT) = 1", ex.Compare("=", ex.Cast(col("x"), "INT"), ex.Literal(1))),
        ("x = lower('A')", ex.Compare("=", col("x"), ex.Call("lower", (ex.Literal("A"),)))),
        ("upper(s) LIKE 'A%'", ex.Like(ex.Call("upper", (col("s"),)), "A%")),
        (
            "x IN (y, 1)",
            ex.Compare("=", col("x"), col("y")) | ex.Compare("=", col("x"), ex.Literal(1)),
        ),
    ],
)
def test_sql_parses_expressions(text: str, expected: ex.Predicate) -> None:
    """What the planner's front end used to refuse (column vs column, arithmetic, functions)
    is one tree now: the same the DML evaluator runs."""
    assert parse_predicate(text) == expected


def test_issue_example_parses() -> None:
    pred = parse_predicate("region = 'eu' AND ts >= TIMESTAMP '2024-01-01' AND x IN (1,2)")
    assert pred == ex.And(
        (col("region").eq("eu"), col("ts").ge(dt.datetime(2024, 1, 1)), col("x").isin([1, 2]))
    )


def test_long_or_chains_do_not_recurse_deeply() -> None:
    text = " OR ".join(f"x = {i}" for i in range(300))
    pred = parse_predicate(text)
    assert isinstance(pred, ex.Or) and len(pred.operands) == 300


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("x IN (SELECT 1)", "subquery"),
        ("x IS TRUE", "IS NULL"),
        ("s RLIKE 'a'", "RegexpLike"),
        ("t > TIMESTAMP_NTZ '2024-01-01 10:00+02:00'", "offset"),
        ("x = 1 AND", "cannot parse"),
        ("", "cannot parse"),
        ("x = 1; DROP TABLE t", "Block"),
        ("s ILIKE 'a%'", "ILike"),
        ("s LIKE 'a!%' ESCAPE '!'", "Escape"),
        ("x = DATE 'not a date'", "bad literal"),
        ("x = INTERVAL '1' DAY", "Interval"),
        ("x = md5('A')", "MD5"),
    ],
)
def test_sql_errors_are_predicate_errors(text: str, fragment: str) -> None:
    with pytest.raises(PredicateError, match=fragment) as info:
        parse_predicate(text)
    assert isinstance(info.value, LakecoreError) and isinstance(info.value, ValueError)


def test_where_of_another_type_is_rejected() -> None:
    with pytest.raises(PredicateError, match="SQL text"):
        parse_predicate(42)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ pyarrow input


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        (pc.field("x") > 5, col("x").gt(5)),
        (pc.scalar(5) > pc.field("x"), col("x").lt(5)),
        ((pc.field("x") == 1) & (pc.field("y") != 2), col("x").eq(1) & col("y").ne(2)),
        ((pc.field("x") <= 1) | ~(pc.field("y") >= 2), col("x").le(1) | ~col("y").ge(2)),
        (pc.field("x").is_null(), col("x").is_null()),
        (pc.field("x").is_valid(), ~col("x").is_null()),
        (pc.field("x").isin([1, 2]), ~col("x").is_null() & col("x").isin([1, 2])),
        (pc.field("x").isin([1, None]), col("x").is_null() | col("x").isin([1])),
        (
            pc.is_in(pc.field("x"), value_set=pa.array([1]), skip_nulls=True),
            ~col("x").is_null() & col("x").isin([1]),
        ),
        (pc.match_like(pc.field("s"), "a_%"), col("s").like("a_%")),
        (pc.starts_with(pc.field("s"), "a_%"), col("s").like("a\\_\\%%")),
        (pc.field("flag"), col("flag").eq(True)),
        (pc.field("d") == pa.scalar(dt.date(2024, 1, 1)), col("d").eq(dt.date(2024, 1, 1))),
        (
            pc.field("t") < pa.scalar(dt.datetime(2024, 1, 1), pa.timestamp("ns")),
            col("t").lt(dt.datetime(2024, 1, 1)),
        ),
        (
            pc.field("m") == pa.scalar(decimal.Decimal("1.50"), pa.decimal128(5, 2)),
            col("m").eq(decimal.Decimal("1.50")),
        ),
        (pc.field("odd.name [0]") == "x", col("odd.name [0]").eq("x")),
    ],
)
def test_pyarrow_expressions_convert(expr: pc.Expression, expected: ex.Predicate) -> None:
    assert parse_predicate(expr) == expected


@pytest.mark.parametrize(
    ("expr", "fragment"),
    [
        (pc.field("x") == pc.field("y"), "one field and one literal"),
        (pc.field("x") + 1 > 2, "add"),
        (pc.field(("a", "b")) > 1, "nested"),
        (pc.field("x").cast(pa.int8()) > 1, "cast"),
        (pc.and_(pc.field("x") > 1, pc.field("y") > 1), "Kleene"),
        (pc.field("x").is_null(nan_is_null=True), "nan_is_null"),
        (pc.match_like(pc.field("s"), "a%", ignore_case=True), "case-insensitive"),
        (pc.scalar(True), "constant"),
        (pc.field("t") == pa.scalar(1, pa.timestamp("ns")), "nanosecond"),
    ],
)
def test_unsupported_pyarrow_expressions_raise(expr: pc.Expression, fragment: str) -> None:
    with pytest.raises(PredicateError, match=fragment):
        parse_predicate(expr)


SEMANTICS_TABLE = pa.table(
    {
        "x": pa.array([1, 2, None, 4], pa.int64()),
        "f": pa.array([1.0, float("nan"), None, 3.0]),
        "s": pa.array(["ab", "a_c", None, "b"]),
    }
)


@pytest.mark.parametrize(
    "expr",
    [
        pc.field("x").isin([1, 4]),
        ~pc.field("x").isin([1, 4]),
        ~pc.field("x").isin([1, None]),
        ~pc.is_in(pc.field("x"), value_set=pa.array([1]), skip_nulls=True),
        ~(pc.field("f") > 2.0),
        ~(pc.field("f") != 1.0),
        ~pc.field("s").is_valid(),
        ~pc.match_like(pc.field("s"), "a\\_%"),
        ~((pc.field("x") > 1) & (pc.field("f") < 5.0)),
        ~((pc.field("x") > 1) | pc.field("s").isin(["b"])),
    ],
    ids=str,
)
def test_converted_pyarrow_expressions_keep_their_semantics(expr: pc.Expression) -> None:
    """Even under NOT, where NULL and FALSE differ, the conversion selects the same rows."""
    bound = bind(parse_predicate(expr), SEMANTICS_TABLE.schema)
    ours = SEMANTICS_TABLE.filter(to_arrow_filter(bound, SEMANTICS_TABLE.schema))
    assert repr(ours.to_pylist()) == repr(SEMANTICS_TABLE.filter(expr).to_pylist())
