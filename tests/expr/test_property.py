"""Property: evaluator vs a pure-Python SQL reference vs pruning, on random predicates.

Hypothesis draws a small table (ints, floats with NaN and null, strings, dates, timestamps,
decimals, booleans, a partition column) split into "files", and random expression trees over
it: comparisons with literals (also numbers that are no value of the column's type) and
between columns, IN, BETWEEN, IS NULL, LIKE, AND/OR/NOT, arithmetic, CASE, COALESCE and string
functions. For every predicate:

- the eager evaluator (``lakecore.expr.evaluate``) gives, row by row, exactly what the
  reference below gives (SQL three-valued logic, written here in plain Python);
- the same predicate rendered as Spark SQL text and parsed back evaluates the same;
- the scan's row filter (``to_arrow_filter``) keeps exactly the rows where the reference is
  TRUE;
- pruning (``may_be`` over the files' partition values and min/max/null_count) never drops
  a file holding a row for which the predicate is TRUE, nor (asked the opposite question) a
  file holding a row for which it is FALSE.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import os
import re
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakecore.expr import tree as ex
from lakecore.expr.arrow_filter import to_arrow_filter
from lakecore.expr.binding import bind
from lakecore.expr.evaluate import evaluate_predicate
from lakecore.expr.sql import parse_sql
from lakecore.model import files as fi
from lakecore.planning.bounds import FileBounds
from lakecore.planning.pruning import may_be
from lakecore.planning.tasks import StatsPrecision

UTC = dt.timezone.utc
NAN = float("nan")
D = decimal.Decimal
SCHEMA = pa.schema(
    [
        ("p", pa.string()),
        ("i", pa.int64()),
        ("j", pa.int64()),
        ("f", pa.float64()),
        ("s", pa.string()),
        ("day", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("m", pa.decimal128(9, 2)),
        ("b", pa.bool_()),
    ]
)
PARTITIONS = ("p",)
POOLS: dict[str, list[Any]] = {
    "p": ["a", "b", "c"],
    "i": [-5, -1, 0, 1, 2, 3, 7, 40],
    "j": [-2, 0, 1, 3, 7],
    "f": [-1.5, -0.0, 0.0, 1.0, 2.5, NAN, float("inf")],
    "s": ["", "a", "ab", "abc", "B", "zz", "a%b", "a_c", "it's", "x\\y", "\u00e9"],
    "day": [dt.date(2023, 12, 31), dt.date(2024, 1, 1), dt.date(2024, 1, 2)],
    "ts": [dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(hours=h) for h in (-1, 0, 25, 48)],
    "m": [D(v) for v in ("-1.00", "0.00", "1.25", "5.00", "99.99")],
    "b": [True, False],
}
NUMERIC = ("i", "j", "m")
MAX_EXAMPLES = int(os.environ.get("LAKECORE_EXPR_PROPERTY_EXAMPLES", "60"))
PREDICATES_PER_TABLE = 10
RAN: list[int] = []


# ------------------------------------------------------------------------------ the reference


class Ref:
    """SQL semantics over one row (a dict), in plain Python: None is NULL (unknown)."""

    def __init__(self, row: dict[str, Any]) -> None:
        self.row = row

    def truth(self, node: ex.Expr) -> bool | None:
        value = self.value(node)
        assert value is None or isinstance(value, bool), (node, value)
        return value

    def value(self, node: ex.Expr) -> Any:
        if isinstance(node, ex.Literal):
            return node.value
        if isinstance(node, ex.Column):
            return self.row[node.name]
        if isinstance(node, ex.And):
            parts = [self.truth(p) for p in node.operands]
            return False if False in parts else (None if None in parts else True)
        if isinstance(node, ex.Or):
            parts = [self.truth(p) for p in node.operands]
            return True if True in parts else (None if None in parts else False)
        if isinstance(node, ex.Not):
            t = self.truth(node.operand)
            return None if t is None else not t
        if isinstance(node, ex.Comparison):
            return compare(node.op, self.value(node.column), node.literal.value)
        if isinstance(node, ex.Compare):
            return compare(node.op, self.value(node.left), self.value(node.right))
        if isinstance(node, ex.In):
            target = self.value(node.column)
            hits = [compare("=", target, v.value) for v in node.values]
            return True if True in hits else (None if None in hits else False)
        if isinstance(node, ex.Between):
            v = self.value(node.column)
            parts = [compare(">=", v, node.low.value), compare("<=", v, node.high.value)]
            return False if False in parts else (None if None in parts else True)
        if isinstance(node, ex.IsNull):
            return self.value(node.column) is None
        if isinstance(node, ex.Like):
            v = self.value(node.column)
            return None if v is None else like(v, node.pattern)
        return self.scalar(node)

    def scalar(self, node: ex.Expr) -> Any:
        if isinstance(node, ex.Arithmetic):
            left, right = self.value(node.left), self.value(node.right)
            if left is None or right is None:
                return None
            return {"+": left + right, "-": left - right, "*": left * right}[node.op]
        if isinstance(node, ex.Case):
            for condition, value in node.branches:
                if self.truth(condition) is True:
                    return self.value(value)
            return None if node.default is None else self.value(node.default)
        if isinstance(node, ex.Call):
            args = [self.value(a) for a in node.args]
            if node.name == "coalesce":
                return next((a for a in args if a is not None), None)
            if args[0] is None:
                return None
            return STRING_FUNCTIONS[node.name](args[0])
        raise AssertionError(f"the reference does not know {node!r}")


STRING_FUNCTIONS: dict[str, Callable[[Any], Any]] = {
    "upper": str.upper,
    "lower": str.lower,
    "length": len,
    "abs": abs,
}


def compare(op: str, a: Any, b: Any) -> bool | None:
    """SQL comparison; NaN compares unequal to everything (also to NaN) and orders nowhere."""
    if a is None or b is None:
        return None
    if any(isinstance(v, float) and math.isnan(v) for v in (a, b)):
        return op == "!="
    return {
        "=": a == b,
        "!=": a != b,
        "<": a < b,
        "<=": a <= b,
        ">": a > b,
        ">=": a >= b,
    }[op]


def like(value: str, pattern: str) -> bool:
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    return re.fullmatch("".join(out), value, flags=re.DOTALL) is not None


# ------------------------------------------------------------------------------ strategies


def value_of(name: str) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), st.sampled_from(POOLS[name]), st.sampled_from(POOLS[name]))


@st.composite
def files(draw: st.DrawFn) -> list[pa.Table]:
    """2 to 5 files of 1 to 5 rows; each file holds one partition value (or null)."""
    out = []
    for _ in range(draw(st.integers(2, 5))):
        p = draw(value_of("p"))
        rows = []
        for _ in range(draw(st.integers(1, 5))):
            row = {c: draw(value_of(c)) for c in SCHEMA.names if c != "p"}
            rows.append({"p": p, **row})
        out.append(pa.Table.from_pylist(rows, schema=SCHEMA))
    return out


OUT_OF_TYPE: dict[str, list[Any]] = {
    "i": [D("2.5"), D("-0.5")],
    "j": [D("0.5")],
    "m": [D("1.234"), 10**8],
}
"""Numbers that are no value of the column's type: compared exactly, never coerced."""


def literal(name: str) -> st.SearchStrategy[ex.Literal]:
    return st.sampled_from(POOLS[name] + OUT_OF_TYPE.get(name, [])).map(ex.Literal)


@st.composite
def numeric_expr(draw: st.DrawFn, depth: int = 0) -> ex.Expr:
    """An integer-valued expression over i, j (no overflow with these pools)."""
    kind = draw(st.sampled_from(["col", "col", "lit", "arith", "case", "coalesce", "abs"]))
    if kind == "col" or depth > 1:
        return ex.Column(draw(st.sampled_from(["i", "j"])))
    if kind == "lit":
        return ex.Literal(draw(st.integers(-3, 9)))
    if kind == "arith":
        op = draw(st.sampled_from(["+", "-", "*"]))
        return ex.Arithmetic(op, draw(numeric_expr(depth + 1)), draw(numeric_expr(depth + 1)))
    if kind == "abs":
        return ex.Call("abs", (draw(numeric_expr(depth + 1)),))
    if kind == "coalesce":
        return ex.Call("coalesce", (draw(numeric_expr(depth + 1)), ex.Literal(0)))
    condition = draw(predicates(depth + 1))
    default = draw(st.one_of(st.none(), numeric_expr(depth + 1)))
    return ex.Case(((condition, draw(numeric_expr(depth + 1))),), default)


@st.composite
def string_expr(draw: st.DrawFn) -> ex.Expr:
    kind = draw(st.sampled_from(["col", "upper", "lower", "coalesce"]))
    if kind == "col":
        return ex.Column("s")
    if kind == "coalesce":
        return ex.Call("coalesce", (ex.Column("s"), ex.Literal("zz")))
    return ex.Call(kind, (ex.Column("s"),))


@st.composite
def leaves(draw: st.DrawFn) -> ex.Predicate:
    name = draw(st.sampled_from(SCHEMA.names))
    column = ex.Column(name)
    kind = draw(st.sampled_from(["cmp", "cmp", "in", "between", "null", "like", "expr"]))
    op = draw(st.sampled_from(sorted(ex.COMPARISON_OPS)))
    if kind == "null":
        return ex.IsNull(column)
    if kind == "like":
        pattern = draw(st.sampled_from(["a%", "%b%", "a\\_c", "_", "%", "it%", "x\\\\y", "B"]))
        return ex.Like(draw(string_expr()), pattern)
    if kind == "in":
        values = draw(
            st.lists(st.one_of(literal(name), st.just(ex.Literal(None))), min_size=1, max_size=4)
        )
        return ex.In(column, tuple(values))
    if kind == "between":
        return ex.Between(column, draw(literal(name)), draw(literal(name)))
    if kind == "expr":
        if draw(st.booleans()):
            return ex.Compare(op, draw(numeric_expr()), draw(numeric_expr()))
        other = draw(st.sampled_from(NUMERIC if name in NUMERIC else (name,)))
        return ex.Compare(op, column, ex.Column(other))
    return ex.Comparison(op, column, draw(st.one_of(literal(name), st.just(ex.Literal(None)))))


def predicates(depth: int = 0) -> st.SearchStrategy[ex.Predicate]:
    if depth > 1:
        return leaves()
    return st.one_of(
        leaves(),
        leaves(),
        st.lists(predicates(depth + 1), min_size=2, max_size=3).map(lambda ps: ex.and_(*ps)),
        st.lists(predicates(depth + 1), min_size=2, max_size=3).map(lambda ps: ex.or_(*ps)),
        predicates(depth + 1).map(ex.Not),
    )


# ------------------------------------------------------------------------------ the index


def file_index(parts: list[pa.Table]) -> pa.Table:
    """One index row per file: partition value, record count, min/max/null_count per data
    column (NaN left out of min/max, as writers do)."""
    data_columns = [f for f in SCHEMA if f.name not in PARTITIONS]
    rows: dict[str, list[Any]] = {fi.PARTITION: [], fi.RECORD_COUNT: []}
    mins: list[dict[str, Any]] = []
    maxs: list[dict[str, Any]] = []
    nulls: list[dict[str, Any]] = []
    for part in parts:
        rows[fi.PARTITION].append({"p": part.column("p")[0].as_py()})
        rows[fi.RECORD_COUNT].append(part.num_rows)
        low, high, count = {}, {}, {}
        for f in data_columns:
            values = part.column(f.name)
            if pa.types.is_floating(f.type):
                values = pc.if_else(pc.is_nan(values), None, values)
            bounds = pc.min_max(values)
            low[f.name], high[f.name] = bounds["min"].as_py(), bounds["max"].as_py()
            count[f.name] = part.column(f.name).null_count
        mins.append(low)
        maxs.append(high)
        nulls.append(count)
    stats = pa.struct(data_columns)
    return pa.table(
        {
            fi.PARTITION: pa.array(rows[fi.PARTITION], pa.struct([SCHEMA.field("p")])),
            fi.RECORD_COUNT: pa.array(rows[fi.RECORD_COUNT], pa.int64()),
            fi.MIN: pa.array(mins, stats),
            fi.MAX: pa.array(maxs, stats),
            fi.NULL_COUNT: pa.array(nulls, pa.struct([(f.name, pa.int64()) for f in data_columns])),
        }
    )


def mask_list(mask: Any, n: int) -> list[bool]:
    if isinstance(mask, bool):
        return [mask] * n
    return [bool(v) for v in mask.to_pylist()]


# ------------------------------------------------------------------------------ the property


def check(parts: list[pa.Table], preds: list[ex.Predicate]) -> None:
    table = pa.concat_tables(parts)
    rows = table.to_pylist()
    index = file_index(parts)
    stages = [
        FileBounds(index, SCHEMA, PARTITIONS, StatsPrecision(), use_stats=False),
        FileBounds(index, SCHEMA, PARTITIONS, StatsPrecision()),
    ]
    owner = [i for i, part in enumerate(parts) for _ in range(part.num_rows)]
    for raw in preds:
        pred = bind(raw, SCHEMA)
        expected = [Ref(row).truth(pred) for row in rows]
        got = evaluate_predicate(pred, table).to_pylist()
        assert got == expected, (str(pred), rows)
        again = evaluate_predicate(parse_sql(str(pred)), table).to_pylist()
        assert again == expected, (str(pred), "as SQL text")
        kept = table.filter(to_arrow_filter(pred, SCHEMA)).to_pylist()
        assert repr(kept) == repr([r for r, t in zip(rows, expected, strict=True) if t is True])
        for bounds in stages:
            may_true = mask_list(may_be(pred, True, bounds), len(parts))
            may_false = mask_list(may_be(pred, False, bounds), len(parts))
            for file, truth in zip(owner, expected, strict=True):
                assert truth is not True or may_true[file], (str(pred), file)
                assert truth is not False or may_false[file], (str(pred), file, "NOT")


@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    parts=files(),
    preds=st.lists(predicates(), min_size=PREDICATES_PER_TABLE, max_size=PREDICATES_PER_TABLE),
)
def run_property(parts: list[pa.Table], preds: list[ex.Predicate]) -> None:
    check(parts, preds)
    RAN.append(len(preds))


def test_evaluator_matches_the_reference_and_pruning_never_drops_a_match() -> None:
    RAN.clear()
    run_property()
    assert len(RAN) == MAX_EXAMPLES
    assert sum(RAN) == MAX_EXAMPLES * PREDICATES_PER_TABLE
