"""Turning whatever the user passed as ``where`` (or a SET value) into a tree bound to a schema.

``parse_predicate`` accepts SQL text, a ``lakecore.expr.tree`` tree or a
``pyarrow.compute.Expression`` and returns an (unbound) tree; it needs no schema, so syntax
errors surface before anything is read. ``bind`` then resolves column names against the
schema (exact match first, then a unique case-insensitive match, then the last part of a
qualified name ``t.x``; ``SchemaError`` otherwise) and coerces every literal compared with a
column (or with an expression of known type) to that type exactly (``PredicateError`` when
that is impossible). A bound tree's literals in ``Comparison``/``In``/``Between`` leaves are
Python values of exactly their column's type. Trees with scalar nodes are type-checked by
compiling them against the schema (``PredicateError`` before any row is read).
"""

from __future__ import annotations

import decimal
from typing import TypeAlias

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import PredicateError, SchemaError
from lakecore.expr import tree as ex
from lakecore.expr.coerce import coerce, supported_type

Where: TypeAlias = "str | ex.Predicate | pc.Expression"
"""What ``Table.scan(where=...)`` and the DML verbs accept."""


def parse_predicate(where: Where) -> ex.Predicate:
    """Return ``where`` as an expression tree; raises ``PredicateError`` on what can't be read."""
    if isinstance(where, str):
        from lakecore.expr.sql import parse_sql

        return parse_sql(where)
    if isinstance(where, ex.Predicate):
        return where
    if isinstance(where, pc.Expression):
        from lakecore.expr.arrow_input import from_arrow

        return from_arrow(where)
    raise PredicateError(
        f"where= takes SQL text, a lakecore expression or a pyarrow.compute.Expression, "
        f"not {type(where).__name__}"
    )


def bind(pred: ex.Predicate, schema: pa.Schema) -> ex.Predicate:
    """Return ``pred`` with column names resolved in ``schema`` and literals coerced.

    Raises ``SchemaError`` for unknown columns and ``PredicateError`` for columns of
    unsupported types, LIKE on non-strings, literals that don't convert and expressions that
    are not boolean or do not type-check.
    """
    bound = _Binder(schema).predicate(pred)
    if not ex.is_simple(bound):
        t = result_type(bound, schema)
        if not (pa.types.is_boolean(t) or pa.types.is_null(t)):
            raise PredicateError(f"{bound} is not a boolean expression (it is {t})")
    return bound


def bind_expression(expr: ex.Expr, schema: pa.Schema) -> ex.Expr:
    """Return scalar ``expr`` bound to ``schema`` (see ``bind``); raises ``SchemaError`` /
    ``PredicateError`` as ``bind`` does, for any result type."""
    bound = _Binder(schema).expr(expr)
    if not isinstance(bound, ex.Literal | ex.Column) and not ex.is_simple(bound):
        result_type(bound, schema)
    return bound


def result_type(expr: ex.Expr, schema: pa.Schema) -> pa.DataType:
    """The Arrow type of bound ``expr`` over ``schema``; ``PredicateError`` if it does not
    type-check (compiled and run over no rows)."""
    from lakecore.expr.evaluate import evaluate_bound

    return evaluate_bound(expr, schema.empty_table()).type


def resolve_field(name: str, schema: pa.Schema) -> pa.Field:
    """The top-level field called ``name`` (case-insensitively if unambiguous; for a
    qualified ``t.x`` that is no column, ``x``); ``SchemaError`` if there is none."""
    index = _field_index(name, schema)
    if index < 0 and "." in name:
        index = _field_index(name.rsplit(".", 1)[1], schema)
    if index < 0:
        alike = [f.name for f in schema if f.name.lower() == name.lower()]
        if len(alike) > 1:
            raise SchemaError(
                f"predicate column {name!r} is ambiguous: it matches {alike} when case is "
                "ignored; spell it exactly as one of them"
            )
        raise SchemaError(
            f"predicate references unknown column {name!r}; the table has {schema.names}"
        )
    field = schema.field(index)
    if not supported_type(field.type):
        raise PredicateError(
            f"column {field.name!r} has type {field.type}; predicates support primitive columns "
            "(numbers, decimals, strings, binary, booleans, dates, timestamps)"
        )
    return field


def _field_index(name: str, schema: pa.Schema) -> int:
    index: int = schema.get_field_index(name)
    if index < 0:
        matches = [i for i, f in enumerate(schema) if f.name.lower() == name.lower()]
        index = matches[0] if len(matches) == 1 else -1
    return index


class _Binder:
    """One bind over ``schema``: columns resolved, literals coerced where their type is known."""

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema

    def predicate(self, pred: ex.Predicate) -> ex.Predicate:
        out = self.expr(pred)
        assert isinstance(out, ex.Predicate)
        return out

    def expr(self, node: ex.Expr) -> ex.Expr:
        if isinstance(node, ex.Literal):
            return node
        if isinstance(node, ex.Column):
            return ex.Column(resolve_field(node.name, self.schema).name)
        if isinstance(node, ex.And | ex.Or):
            parts = [self.predicate(p) for p in node.operands]
            return ex.and_(*parts) if isinstance(node, ex.And) else ex.or_(*parts)
        if isinstance(node, ex.Not):
            return ex.Not(self.predicate(node.operand))
        if isinstance(node, ex.Comparison):
            return self._comparison(node.op, resolve_field(node.column.name, self.schema), node)
        if isinstance(node, ex.Compare):
            return self._compare(node)
        if isinstance(node, ex.In | ex.Between):
            return self._listed(node)
        if isinstance(node, ex.IsNull):
            return ex.IsNull(self.expr(node.column))
        if isinstance(node, ex.Like):
            return self._like(node)
        return self._scalar(node)

    def _scalar(self, node: ex.Expr) -> ex.Expr:
        if isinstance(node, ex.Arithmetic):
            return ex.Arithmetic(node.op, self.expr(node.left), self.expr(node.right))
        if isinstance(node, ex.Negate):
            return ex.Negate(self.expr(node.operand))
        if isinstance(node, ex.Call):
            return ex.Call(node.name, tuple(self.expr(a) for a in node.args))
        if isinstance(node, ex.Cast):
            return ex.Cast(self.expr(node.operand), node.to)
        if isinstance(node, ex.Case):
            branches = tuple((self.predicate(c), self.expr(v)) for c, v in node.branches)
            default = None if node.default is None else self.expr(node.default)
            return ex.Case(branches, default)
        raise PredicateError(f"not an expression: {node!r}")

    def _compare(self, node: ex.Compare) -> ex.Predicate:
        left, right = self.expr(node.left), self.expr(node.right)
        if isinstance(left, ex.Literal) and not isinstance(right, ex.Literal):
            right, left = left, right
            op = ex.FLIPPED_OPS[node.op]
        else:
            op = node.op
        if isinstance(right, ex.Literal) and not isinstance(left, ex.Literal):
            field = self._typed_field(left)
            if isinstance(left, ex.Column):
                assert field is not None
                return self._comparison(op, field, ex.Comparison(op, left, right))
            right = _maybe_coerced(right, field)
        return ex.Compare(op, left, right)

    def _comparison(self, op: str, field: pa.Field, node: ex.Comparison) -> ex.Predicate:
        column = ex.Column(field.name)
        try:
            return ex.Comparison(op, column, _coerced(node.literal, field))
        except PredicateError:
            if not (_is_number(node.literal.value) and _is_numeric(field.type)):
                raise
        # A number that is not a value of the column's type (x > 1.5 on an integer column,
        # x = 300 on an int8 one) is compared exactly, Arrow promoting both sides as Spark
        # does; pruning leaves such a comparison alone.
        return ex.Compare(op, column, node.literal)

    def _listed(self, node: ex.In | ex.Between) -> ex.Predicate:
        target = self.expr(node.column)
        field = self._typed_field(target)
        exact = isinstance(target, ex.Column)

        def lit(value: ex.Literal) -> ex.Literal:
            if exact and field is not None:
                return _coerced(value, field)
            return _maybe_coerced(value, field)

        try:
            if isinstance(node, ex.In):
                return ex.In(target, tuple(lit(v) for v in node.values))
            return ex.Between(target, lit(node.low), lit(node.high))
        except PredicateError:
            if not (exact and field is not None and _is_numeric(field.type)):
                raise
        # A number no value of the column's type (x IN (1, 300) on int8): one comparison per
        # value, each exact (x IN (a, b) is x = a OR x = b; BETWEEN is >= AND <=).
        assert isinstance(target, ex.Column) and field is not None
        if isinstance(node, ex.In):
            terms = [ex.Comparison("=", target, v) for v in node.values]
            return ex.or_(*(self._comparison("=", field, t) for t in terms))
        low = self._comparison(">=", field, ex.Comparison(">=", target, node.low))
        return ex.and_(low, self._comparison("<=", field, ex.Comparison("<=", target, node.high)))

    def _like(self, node: ex.Like) -> ex.Predicate:
        target = self.expr(node.column)
        field = self._typed_field(target)
        if field is not None and not (
            pa.types.is_string(field.type) or pa.types.is_large_string(field.type)
        ):
            what = repr(target.name) if isinstance(target, ex.Column) else str(target)
            raise PredicateError(f"LIKE needs a string column; {what} is {field.type}")
        return ex.Like(target, node.pattern)

    def _typed_field(self, bound: ex.Expr) -> pa.Field | None:
        """A field of ``bound``'s type (None for NULL-typed expressions)."""
        if isinstance(bound, ex.Column):
            return self.schema.field(bound.name)
        t = result_type(bound, self.schema)
        return None if pa.types.is_null(t) else pa.field(str(bound), t)


def _coerced(literal: ex.Literal, field: pa.Field) -> ex.Literal:
    return ex.Literal(coerce(literal.value, field))


def _is_number(value: object) -> bool:
    return isinstance(value, int | float | decimal.Decimal) and not isinstance(value, bool)


def _is_numeric(t: pa.DataType) -> bool:
    return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t))


def _maybe_coerced(literal: ex.Literal, field: pa.Field | None) -> ex.Literal:
    """``literal`` as ``field``'s type when it converts exactly; else as it is (the Arrow
    comparison then promotes both sides, as Spark does for ``x * 2 > 2.5``)."""
    if field is None or not supported_type(field.type):
        return literal
    try:
        return _coerced(literal, field)
    except PredicateError:
        return literal
