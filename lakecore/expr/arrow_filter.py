"""A bound expression tree -> ``pyarrow.compute.Expression``: the ONE compilation of the tree.

The scan's residual row filter is ``to_arrow_filter``; the eager evaluator
(``lakecore.expr.evaluate``) runs the same compiled expression over a table, so a predicate
selects the same rows in a scan, a DELETE, an UPDATE, a MERGE and a CHECK constraint. The
semantics are those documented in ``lakecore.expr.tree``.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import sys
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import PredicateError
from lakecore.expr import tree as ex

_NULL_BOOL = pa.scalar(None, pa.bool_())
_CAST_TYPES: dict[str, pa.DataType] = {
    "TINYINT": pa.int8(),
    "SMALLINT": pa.int16(),
    "INT": pa.int32(),
    "BIGINT": pa.int64(),
    "FLOAT": pa.float32(),
    "DOUBLE": pa.float64(),
    "BOOLEAN": pa.bool_(),
    "STRING": pa.string(),
    "BINARY": pa.binary(),
    "DATE": pa.date32(),
    "TIMESTAMP": pa.timestamp("us", tz="UTC"),
    "TIMESTAMP_NTZ": pa.timestamp("us"),
}
_COMPARE = {
    "=": "equal",
    "!=": "not_equal",
    "<": "less",
    "<=": "less_equal",
    ">": "greater",
    ">=": "greater_equal",
}


def to_arrow_filter(pred: ex.Predicate, schema: pa.Schema) -> pc.Expression:
    """Return the pyarrow filter of ``pred`` (bound to ``schema``, see ``binding.bind``)."""
    return to_arrow(pred, schema)


def to_arrow(node: ex.Expr, schema: pa.Schema) -> pc.Expression:
    """Return bound ``node`` as a pyarrow expression over ``schema``'s columns."""
    return _Compiler(schema).compile(node)


def literal_scalar(value: Any, t: pa.DataType) -> pa.Scalar:
    """A bound literal as a pyarrow scalar of the column's type."""
    return pa.scalar(value, t)


def natural_scalar(value: Any) -> pa.Scalar:
    """A literal not tied to a column, typed as Spark types it: an integer is INT (int32) when
    it fits, else BIGINT, else DECIMAL(38, 0); ``1.5`` a decimal; a datetime with an offset an
    instant in UTC, without one a wall-clock time."""
    if value is None:
        return pa.scalar(None, pa.null())
    if isinstance(value, bool):
        return pa.scalar(value, pa.bool_())
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return pa.scalar(value, pa.int32())
        if -(2**63) <= value < 2**63:
            return pa.scalar(value, pa.int64())
        if len(str(abs(value))) > 38:
            raise PredicateError(f"integer literal {value} has more than 38 digits")
        return pa.scalar(decimal.Decimal(value), pa.decimal128(38, 0))
    if isinstance(value, float):
        return pa.scalar(value, pa.float64())
    if isinstance(value, decimal.Decimal):
        return _decimal_scalar(value)
    if isinstance(value, str):
        return pa.scalar(value, pa.string())
    if isinstance(value, bytes):
        return pa.scalar(value, pa.binary())
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            return pa.scalar(value.astimezone(dt.timezone.utc), pa.timestamp("us", tz="UTC"))
        return pa.scalar(value, pa.timestamp("us"))
    if isinstance(value, dt.date):
        return pa.scalar(value, pa.date32())
    raise PredicateError(f"no SQL literal for {type(value).__name__} {value!r}")


def _decimal_scalar(value: decimal.Decimal) -> pa.Scalar:
    if not value.is_finite():
        raise PredicateError(f"decimal literal {value} is not finite")
    _, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    scale = max(-exponent, 0)
    precision = max(len(digits) + max(exponent, 0), scale, 1)
    if precision > 38:
        raise PredicateError(f"decimal literal {value} has more than 38 digits")
    return pa.scalar(value, pa.decimal128(precision, scale))


def _call(name: str, *args: Any, options: pc.FunctionOptions | None = None) -> pc.Expression:
    parts = [a if isinstance(a, pc.Expression) else pc.scalar(a) for a in args]
    return pc.Expression._call(name, parts, options)


class _Compiler:
    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema

    def compile(self, node: ex.Expr) -> pc.Expression:
        if isinstance(node, ex.Literal):
            return pc.scalar(natural_scalar(node.value))
        if isinstance(node, ex.Column):
            return pc.field(node.name)
        if isinstance(node, ex.And | ex.Or):
            parts = [self.compile(p) for p in node.operands]
            out = parts[0]
            for p in parts[1:]:
                out = (out & p) if isinstance(node, ex.And) else (out | p)
            return out
        if isinstance(node, ex.Not):
            return ~self.compile(node.operand)
        if isinstance(node, ex.Comparison):
            t = self.schema.field(node.column.name).type
            value = literal_scalar(node.literal.value, t)
            return _call(_COMPARE[node.op], pc.field(node.column.name), value)
        if isinstance(node, ex.Compare):
            left, right = self.harmonized([node.left, node.right])
            return _call(_COMPARE[node.op], left, right)
        return self._leaf(node)

    def _leaf(self, node: ex.Expr) -> pc.Expression:
        if isinstance(node, ex.In):
            if isinstance(node.column, ex.Column):
                t = self.schema.field(node.column.name).type
                return _in(pc.field(node.column.name), [v.value for v in node.values], t)
            hits = [_call("equal", *self.harmonized([node.column, v])) for v in node.values]
            out = hits[0]
            for h in hits[1:]:
                out = out | h
            return out
        if isinstance(node, ex.Between) and not isinstance(node.column, ex.Column):
            low = ex.Compare(">=", node.column, node.low)
            return self.compile(ex.And((low, ex.Compare("<=", node.column, node.high))))
        if isinstance(node, ex.Between):
            target = self.compile(node.column)
            low = _call("greater_equal", target, self._bound_literal(node.column, node.low))
            return low & _call("less_equal", target, self._bound_literal(node.column, node.high))
        if isinstance(node, ex.IsNull):
            return self.compile(node.column).is_null()
        if isinstance(node, ex.Like):
            return pc.match_like(self.compile(node.column), node.pattern)
        return self._scalar(node)

    def _bound_literal(self, target: ex.Expr, literal: ex.Literal) -> pc.Expression:
        if isinstance(target, ex.Column):
            t = self.schema.field(target.name).type
            return pc.scalar(literal_scalar(literal.value, t))
        return self.compile(literal)

    # -------------------------------------------------------------------------- scalars

    def _scalar(self, node: ex.Expr) -> pc.Expression:
        if isinstance(node, ex.Arithmetic):
            return self._arithmetic(node)
        if isinstance(node, ex.Negate):
            return _call("negate_checked", self.compile(node.operand))
        if isinstance(node, ex.Cast):
            return _call(
                "cast", self.compile(node.operand), options=pc.CastOptions(cast_type(node.to))
            )
        if isinstance(node, ex.Case):
            values = [v for _, v in node.branches]
            if node.default is not None:
                values.append(node.default)
            compiled = self.harmonized(values)
            out = compiled.pop() if node.default is not None else pc.scalar(pa.scalar(None))
            for (condition, _), value in zip(
                reversed(node.branches), reversed(compiled), strict=True
            ):
                # A NULL condition is not taken (if_else would give NULL).
                taken = _call("coalesce", self.compile(condition), False)
                out = _call("if_else", taken, value, out)
            return out
        if isinstance(node, ex.Call):
            return self._function(node)
        raise PredicateError(f"cannot evaluate {node!r}")

    def harmonized(self, nodes: list[ex.Expr]) -> list[pc.Expression]:
        """``nodes`` compiled to one common type when decimals are among them: Arrow would
        pick a decimal too narrow for the integers, or refuse two decimal types (CASE)."""
        compiled = [self.compile(n) for n in nodes]
        types = [self._type(n) for n in nodes]
        if not any(pa.types.is_decimal(t) for t in types):
            return compiled
        numeric = [
            _int_decimal(t) if pa.types.is_integer(t) else t
            for t in types
            if pa.types.is_integer(t) or pa.types.is_decimal(t) or pa.types.is_floating(t)
        ]
        if any(pa.types.is_floating(t) for t in numeric):
            target: pa.DataType = pa.float64()
        else:
            scale = max(t.scale for t in numeric)
            digits = max(t.precision - t.scale for t in numeric)
            target = pa.decimal128(min(38, digits + scale), scale)
        return [
            _call("cast", e, options=pc.CastOptions(target))
            if t in numeric or pa.types.is_integer(t)
            else e
            for e, t in zip(compiled, types, strict=True)
        ]

    def _type(self, node: ex.Expr) -> pa.DataType:
        from lakecore.expr.binding import result_type

        if isinstance(node, ex.Column):
            return self.schema.field(node.name).type
        if isinstance(node, ex.Literal):
            return natural_scalar(node.value).type
        return result_type(node, self.schema)

    def _arithmetic(self, node: ex.Arithmetic) -> pc.Expression:
        left, right = self.compile(node.left), self.compile(node.right)
        lt, rt = self._type(node.left), self._type(node.right)
        # Arrow refuses decimal arithmetic with an integer it would cast to a narrow decimal:
        # integers go in as DECIMAL(digits, 0), as Spark widens them.
        if pa.types.is_decimal(lt) and pa.types.is_integer(rt):
            right, rt = (
                _call("cast", right, options=pc.CastOptions(_int_decimal(rt))),
                _int_decimal(rt),
            )
        if pa.types.is_decimal(rt) and pa.types.is_integer(lt):
            left, lt = (
                _call("cast", left, options=pc.CastOptions(_int_decimal(lt))),
                _int_decimal(lt),
            )
        if node.op in ("+", "-", "*"):
            name = {"+": "add_checked", "-": "subtract_checked", "*": "multiply_checked"}[node.op]
            if pa.types.is_integer(lt) and pa.types.is_integer(rt):
                # Integers are computed as BIGINT (Arrow would cast a literal down to an INT
                # column's type and overflow there); storing the result checks it fits.
                left, right = _as_int64(left), _as_int64(right)
            return _call(name, left, right)
        whole = _is_whole(lt) and _is_whole(rt)
        # Division by zero is NULL (Spark's non-ANSI rule): Arrow evaluates every CASE
        # branch, so a raising division would fail guarded expressions.
        zero = pc.scalar(_zero(rt))  # of the divisor's type: Acero casts 0 to a too narrow decimal
        divisor = _call(
            "if_else", _call("equal", right, zero), pc.scalar(pa.scalar(None, rt)), right
        )
        if node.op == "/":
            if whole:
                # To the nearest double, as Spark casts: integers beyond 2**53 are rounded
                # (Arrow's safe cast refused them, failing ``id / 2`` on large ids).
                to_double = pc.CastOptions(pa.float64(), allow_float_truncate=True)
                left = _call("cast", left, options=to_double)
                divisor = _call("cast", divisor, options=to_double)
            return _call("divide_checked", left, divisor)
        if node.op == "div":
            if whole:
                return _call("divide_checked", _as_int64(left), _as_int64(divisor))
            return _as_int64(_call("trunc", _call("divide_checked", left, divisor)))
        # %: the remainder takes the dividend's sign (truncated division), as in Spark.
        quotient = _call("divide_checked", left, divisor)
        if not whole:
            quotient = _call("trunc", quotient)
        return _call("subtract_checked", left, _call("multiply_checked", quotient, divisor))

    def _function(self, node: ex.Call) -> pc.Expression:
        handler = _FUNCTIONS.get(node.name)
        if handler is None:
            raise PredicateError(f"unsupported function {node.name}")
        return handler(self, node)

    def _args(self, node: ex.Call, low: int, high: int) -> list[pc.Expression]:
        if not low <= len(node.args) <= high:
            raise PredicateError(
                f"{node.name} takes {low}"
                + (f" to {high}" if high != low else "")
                + f" argument(s), not {len(node.args)}: {node}"
            )
        return [self.compile(a) for a in node.args]

    def _int_arg(self, node: ex.Call, index: int) -> int:
        arg = node.args[index]
        if (
            not isinstance(arg, ex.Literal)
            or isinstance(arg.value, bool)
            or not isinstance(arg.value, int)
        ):
            raise PredicateError(f"argument {index + 1} of {node} must be an integer literal")
        return arg.value

    def _string(self, node: ex.Expr) -> pc.Expression:
        """``node`` as text (Spark casts CONCAT's arguments to strings)."""
        compiled = self.compile(node)
        t = self._type(node)
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            return compiled
        return _call("cast", compiled, options=pc.CastOptions(pa.string()))


def _unary(fn: str) -> Callable[[_Compiler, ex.Call], pc.Expression]:
    def handler(c: _Compiler, node: ex.Call) -> pc.Expression:
        return _call(fn, *c._args(node, 1, 1))

    return handler


def _length(c: _Compiler, node: ex.Call) -> pc.Expression:
    (arg,) = c._args(node, 1, 1)
    t = c._type(node.args[0])
    return _call("binary_length" if pa.types.is_binary(t) else "utf8_length", arg)


def _concat(c: _Compiler, node: ex.Call) -> pc.Expression:
    c._args(node, 1, 1_000)
    return _call("binary_join_element_wise", *(c._string(a) for a in node.args), "")


def _coalesce(c: _Compiler, node: ex.Call) -> pc.Expression:
    c._args(node, 1, 1_000)
    return _call("coalesce", *c.harmonized(list(node.args)))


def _extreme(fn: str) -> Callable[[_Compiler, ex.Call], pc.Expression]:
    def handler(c: _Compiler, node: ex.Call) -> pc.Expression:
        c._args(node, 2, 1_000)
        args = c.harmonized(list(node.args))
        return _call(fn, *args, options=pc.ElementWiseAggregateOptions(skip_nulls=True))

    return handler


def _nullif(c: _Compiler, node: ex.Call) -> pc.Expression:
    a, b = c._args(node, 2, 2)
    t = c._type(node.args[0])
    same = _call("coalesce", _call("equal", a, b), False)
    return _call("if_else", same, pc.scalar(pa.scalar(None, t)), a)


def _round(c: _Compiler, node: ex.Call) -> pc.Expression:
    args = c._args(node, 1, 2)
    digits = c._int_arg(node, 1) if len(args) == 2 else 0
    t = c._type(node.args[0])
    if pa.types.is_integer(t) and digits >= 0:
        return args[0]
    # Spark's ROUND is HALF_UP: ties away from zero.
    options = pc.RoundOptions(ndigits=digits, round_mode="half_towards_infinity")
    return _call("round", args[0], options=options)


def _substring(c: _Compiler, node: ex.Call) -> pc.Expression:
    args = c._args(node, 2, 3)
    pos = c._int_arg(node, 1)
    length = c._int_arg(node, 2) if len(args) == 3 else None
    # Spark: 1-based, 0 means 1, a negative position counts from the end.
    start = pos - 1 if pos > 0 else pos
    if length is None:
        stop = sys.maxsize
    elif length <= 0:
        stop = start
    else:
        stop = start + length
        if start < 0 <= stop:
            stop = sys.maxsize
    if start < 0 and stop == start:
        start = stop = 0
    options = pc.SliceOptions(start=start, stop=stop)
    return _call("utf8_slice_codeunits", args[0], options=options)


def _trim(fn: str) -> Callable[[_Compiler, ex.Call], pc.Expression]:
    def handler(c: _Compiler, node: ex.Call) -> pc.Expression:
        (arg,) = c._args(node, 1, 1)
        return _call(fn, arg, options=pc.TrimOptions(" "))  # Spark trims spaces only

    return handler


def _part(fn: str) -> Callable[[_Compiler, ex.Call], pc.Expression]:
    """A field of a date or timestamp as an INT (timestamps with a zone: in that zone, UTC)."""

    def handler(c: _Compiler, node: ex.Call) -> pc.Expression:
        (arg,) = c._args(node, 1, 1)
        return _call("cast", _call(fn, arg), options=pc.CastOptions(pa.int32()))

    return handler


_FUNCTIONS: dict[str, Callable[[_Compiler, ex.Call], pc.Expression]] = {
    "upper": _unary("utf8_upper"),
    "lower": _unary("utf8_lower"),
    "abs": _unary("abs_checked"),
    "ceil": _unary("ceil"),
    "floor": _unary("floor"),
    "length": _length,
    "concat": _concat,
    "coalesce": _coalesce,
    "greatest": _extreme("max_element_wise"),
    "least": _extreme("min_element_wise"),
    "nullif": _nullif,
    "round": _round,
    "substring": _substring,
    "trim": _trim("utf8_trim"),
    "ltrim": _trim("utf8_ltrim"),
    "rtrim": _trim("utf8_rtrim"),
    "year": _part("year"),
    "month": _part("month"),
    "day": _part("day"),
    "hour": _part("hour"),
    "minute": _part("minute"),
    "second": _part("second"),
}


def cast_type(name: str) -> pa.DataType:
    """The Arrow type of a ``Cast`` target (``tree.CAST_TYPES`` or ``DECIMAL(p, s)``)."""
    if name.startswith("DECIMAL(") and name.endswith(")"):
        precision, scale = (int(p) for p in name[len("DECIMAL(") : -1].split(","))
        return pa.decimal128(precision, scale)
    if name in _CAST_TYPES:
        return _CAST_TYPES[name]
    raise PredicateError(f"unsupported CAST target {name}")


def _zero(t: pa.DataType) -> pa.Scalar:
    if pa.types.is_decimal(t):
        return pa.scalar(decimal.Decimal(0), t)
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return pa.scalar(0, t)
    return pa.scalar(0)


def _int_decimal(t: pa.DataType) -> pa.DataType:
    return pa.decimal128({8: 3, 16: 5, 32: 10, 64: 20}[t.bit_width], 0)


def _is_whole(t: pa.DataType) -> bool:
    return bool(pa.types.is_integer(t) or pa.types.is_null(t))


def _as_int64(e: pc.Expression) -> pc.Expression:
    return _call("cast", e, options=pc.CastOptions(pa.int64()))


def in_value_set(values: list[Any], t: pa.DataType) -> pa.Array:
    """``values`` (no NULL, no NaN) as the value set of ``is_in`` over a column of type ``t``.

    ``is_in`` hashes floats bit by bit, so ``-0.0`` would not find ``0.0``; SQL says they are
    equal, so each zero brings its twin.
    """
    if pa.types.is_floating(t) and any(v == 0 for v in values):
        values = [*values, 0.0, -0.0]
    return pa.array(values, t)


def _in(field: pc.Expression, values: list[Any], t: pa.DataType) -> pc.Expression:
    """``x IN (values)`` as ``x = v1 OR x = v2 ...`` would evaluate it, via ``is_in``.

    NaN never equals anything, so NaN values are dropped (``is_in`` would match NaN with NaN);
    a NULL value makes non-matches NULL; a NULL input gives NULL.
    """
    has_null = any(v is None for v in values)
    kept = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    found = pc.is_in(field, value_set=in_value_set(kept, t), skip_nulls=True)
    if has_null:
        # Non-null matches are TRUE; everything else (non-matches, NULL input) is NULL.
        return pc.if_else(found, True, _NULL_BOOL)
    return pc.if_else(field.is_null(), _NULL_BOOL, found)
