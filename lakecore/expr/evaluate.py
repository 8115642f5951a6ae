"""Evaluate a SQL scalar expression over an Arrow table, eagerly, with SQL null semantics.

Supported: column references, literals (numbers, strings, booleans, NULL, DATE/TIMESTAMP
'...'), unary minus, + - * / %, comparisons, AND/OR/NOT (three-valued), IS [NOT] NULL,
[NOT] IN, BETWEEN, [NOT] LIKE, CASE WHEN, CAST, COALESCE, and the functions UPPER, LOWER,
LENGTH, ABS, CONCAT and ``||``. Anything else raises ``PredicateError`` before any row is
touched; unknown columns raise ``SchemaError``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from decimal import Decimal
from typing import Any, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from sqlglot import exp

from lakecore.errors import PredicateError, SchemaError

Value: TypeAlias = Any  # pa.ChunkedArray | pa.Array | pa.Scalar (pyarrow is untyped)

_BINARY: dict[type[exp.Expression], Callable[..., Any]] = {
    exp.Add: pc.add_checked,
    exp.Sub: pc.subtract_checked,
    exp.Mul: pc.multiply_checked,
    exp.Div: pc.divide_checked,
    exp.EQ: pc.equal,
    exp.NEQ: pc.not_equal,
    exp.GT: pc.greater,
    exp.GTE: pc.greater_equal,
    exp.LT: pc.less,
    exp.LTE: pc.less_equal,
    exp.And: pc.and_kleene,
    exp.Or: pc.or_kleene,
}
_CASTS: dict[str, pa.DataType] = {
    "TINYINT": pa.int8(),
    "SMALLINT": pa.int16(),
    "INT": pa.int32(),
    "BIGINT": pa.int64(),
    "FLOAT": pa.float32(),
    "DOUBLE": pa.float64(),
    "BOOLEAN": pa.bool_(),
    "VARCHAR": pa.string(),
    "TEXT": pa.string(),
    "DATE": pa.date32(),
    "TIMESTAMP": pa.timestamp("us", tz="UTC"),
    "TIMESTAMPTZ": pa.timestamp("us", tz="UTC"),
    "TIMESTAMPNTZ": pa.timestamp("us"),
    "BINARY": pa.binary(),
}


def parse(sql: str) -> Any:
    """Parse SQL text (Spark dialect); raises ``PredicateError`` on a syntax error."""
    try:
        tree = sqlglot.parse_one(sql, read="spark")
    except sqlglot.errors.ParseError as exc:
        raise PredicateError(f"cannot parse SQL {sql!r}: {exc}") from exc
    if tree is None:
        raise PredicateError(f"empty SQL expression {sql!r}")
    return tree


def evaluate(sql: str | exp.Expression, table: pa.Table) -> Value:
    """Evaluate ``sql`` over the rows of ``table``; returns an array (or a scalar)."""
    tree = parse(sql) if isinstance(sql, str) else sql
    return _Evaluator(table).eval(tree)


def evaluate_predicate(sql: str | exp.Expression, table: pa.Table) -> pa.ChunkedArray:
    """Evaluate a boolean ``sql`` per row: true, false or null (unknown)."""
    value = evaluate(sql, table)
    if isinstance(value, pa.Scalar):
        value = pa.chunked_array([pa.array([value.as_py()] * table.num_rows, pa.bool_())])
    if isinstance(value, pa.Array):
        value = pa.chunked_array([value])
    if not pa.types.is_boolean(value.type):
        raise PredicateError(f"{sql} is not a boolean expression (it is {value.type})")
    return value


class _Evaluator:
    def __init__(self, table: pa.Table) -> None:
        self._table = table
        self._by_lower = {n.lower(): n for n in table.column_names}

    def eval(self, node: Any) -> Value:
        handler = getattr(self, f"_{type(node).__name__.lower()}", None)
        if handler is not None:
            return handler(node)
        op = _BINARY.get(type(node))
        if op is not None:
            return self._call(op, self.eval(node.left), self.eval(node.right), node)
        raise PredicateError(f"unsupported SQL: {node.sql(dialect='spark')!r}")

    def _call(self, fn: Callable[..., Any], *args: Any) -> Value:
        node = args[-1]
        try:
            return fn(*args[:-1])
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise PredicateError(f"cannot evaluate {node.sql(dialect='spark')!r}: {exc}") from exc

    def _column(self, node: exp.Column) -> Value:
        # A qualified name ("s.id") is looked up as the column "s.id" first: callers that
        # evaluate over two joined tables name their columns that way.
        name = f"{node.table}.{node.name}" if node.table else node.name
        if node.table and name not in self._table.column_names:
            name = node.name
        actual = name if name in self._table.column_names else self._by_lower.get(name.lower())
        if actual is None:
            raise SchemaError(f"unknown column {name!r}; the table has {self._table.column_names}")
        return self._table.column(actual)

    def _literal(self, node: exp.Literal) -> Value:
        if node.is_string:
            return pa.scalar(node.this, pa.string())
        text = node.this
        if any(c in text for c in ".eE"):
            return pa.scalar(Decimal(text)) if "e" not in text.lower() else pa.scalar(float(text))
        value = int(text)
        if -(2**63) <= value < 2**63:
            return pa.scalar(value, pa.int64())
        # Spark types an integer literal beyond BIGINT as DECIMAL(38, 0).
        if len(text.lstrip("+-")) > 38:
            raise PredicateError(f"integer literal {text} has more than 38 digits")
        return pa.scalar(Decimal(text), pa.decimal128(38, 0))

    def _boolean(self, node: exp.Boolean) -> Value:
        return pa.scalar(bool(node.this), pa.bool_())

    def _null(self, node: exp.Null) -> Value:
        return pa.scalar(None, pa.null())

    def _paren(self, node: exp.Paren) -> Value:
        return self.eval(node.this)

    def _neg(self, node: exp.Neg) -> Value:
        return self._call(pc.negate_checked, self.eval(node.this), node)

    def _not(self, node: exp.Not) -> Value:
        return self._call(pc.invert, self.eval(node.this), node)

    def _mod(self, node: exp.Mod) -> Value:
        left, right = self.eval(node.left), self.eval(node.right)
        quotient = self._call(pc.divide, left, right, node)
        if not pa.types.is_integer(quotient.type):  # Arrow already truncates integer division
            quotient = self._call(pc.trunc, quotient, node)
        return self._call(pc.subtract, left, pc.multiply(quotient, right), node)

    def _is(self, node: exp.Is) -> Value:
        if not isinstance(node.expression, exp.Null):
            raise PredicateError(f"unsupported SQL: {node.sql(dialect='spark')!r}")
        return self._call(pc.is_null, self.eval(node.this), node)

    def _in(self, node: exp.In) -> Value:
        values = [self.eval(v) for v in node.expressions]
        target = self.eval(node.this)
        result = None
        for v in values:
            hit = self._call(pc.equal, target, v, node)
            result = hit if result is None else pc.or_kleene(result, hit)
        return result if result is not None else pa.scalar(False)

    def _between(self, node: exp.Between) -> Value:
        target = self.eval(node.this)
        low = self._call(pc.greater_equal, target, self.eval(node.args["low"]), node)
        high = self._call(pc.less_equal, target, self.eval(node.args["high"]), node)
        return pc.and_kleene(low, high)

    def _like(self, node: exp.Like) -> Value:
        pattern = node.expression
        if not isinstance(pattern, exp.Literal) or not pattern.is_string:
            raise PredicateError("LIKE needs a string literal pattern")
        return self._call(lambda v: pc.match_like(v, pattern.this), self.eval(node.this), node)

    def _dpipe(self, node: exp.DPipe) -> Value:
        return self._call(
            pc.binary_join_element_wise, self.eval(node.left), self.eval(node.right), "", node
        )

    def _concat(self, node: exp.Concat) -> Value:
        parts = [self.eval(e) for e in node.expressions]
        return self._call(pc.binary_join_element_wise, *parts, "", node)

    def _upper(self, node: exp.Upper) -> Value:
        return self._call(pc.utf8_upper, self.eval(node.this), node)

    def _lower(self, node: exp.Lower) -> Value:
        return self._call(pc.utf8_lower, self.eval(node.this), node)

    def _length(self, node: exp.Length) -> Value:
        return self._call(pc.utf8_length, self.eval(node.this), node)

    def _abs(self, node: exp.Abs) -> Value:
        return self._call(pc.abs_checked, self.eval(node.this), node)

    def _coalesce(self, node: exp.Coalesce) -> Value:
        parts = [self.eval(node.this), *(self.eval(e) for e in node.expressions)]
        return self._call(pc.coalesce, *parts, node)

    def _case(self, node: exp.Case) -> Value:
        default = node.args.get("default")
        result: Value = self.eval(default) if default is not None else pa.scalar(None, pa.null())
        for branch in reversed(node.args.get("ifs") or []):
            cond = pc.fill_null(self.eval(branch.this), False)
            then = self.eval(branch.args["true"])
            result = self._call(pc.if_else, cond, then, result, node)
        return result

    def _cast(self, node: exp.Cast) -> Value:
        target = _cast_type(node.to)
        value = self.eval(node.this)
        if isinstance(node.this, exp.Literal) and node.this.is_string:
            value = _typed_literal(node.this.this, target)
        return self._call(lambda v: v.cast(target), value, node)

    _trycast = _cast

    def _tsordstotime(self, node: exp.Expression) -> Value:
        raise PredicateError(f"unsupported SQL: {node.sql(dialect='spark')!r}")


def _cast_type(dtype: exp.DataType) -> pa.DataType:
    name = dtype.this.name
    if name == "DECIMAL":
        params = [int(p.this.this) for p in dtype.expressions] or [10, 0]
        return pa.decimal128(params[0], params[1] if len(params) > 1 else 0)
    if name in _CASTS:
        return _CASTS[name]
    raise PredicateError(f"unsupported CAST target {dtype.sql(dialect='spark')}")


def _typed_literal(text: str, target: pa.DataType) -> pa.Scalar:
    """``DATE '...'`` / ``TIMESTAMP '...'`` text as a scalar; ``PredicateError`` if it is not
    ISO-8601 (or out of range)."""
    try:
        if pa.types.is_date(target):
            return pa.scalar(dt.date.fromisoformat(text.strip()), target)
        if pa.types.is_timestamp(target):
            value = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
            if target.tz is not None and value.tzinfo is None:
                value = value.replace(tzinfo=dt.timezone.utc)
            return pa.scalar(value, target)
    except (ValueError, OverflowError, pa.ArrowInvalid) as exc:
        raise PredicateError(f"{text!r} is not a valid {target} literal: {exc}") from None
    return pa.scalar(text, pa.string())
