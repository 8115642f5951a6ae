"""Turning whatever the user passed as ``where`` into a predicate bound to a schema.

``parse_predicate`` accepts SQL text, a ``lakecore.expr.tree`` tree or a
``pyarrow.compute.Expression`` and returns an (unbound) tree; it needs no schema, so syntax
errors surface before anything is read. ``bind`` then resolves column names against the
schema (exact match first, then a unique case-insensitive match; ``SchemaError`` otherwise)
and coerces every literal to its column's type (``PredicateError`` when that is impossible).
A bound tree's literals are Python values of exactly their column's type.
"""

from __future__ import annotations

from typing import TypeAlias

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import PredicateError, SchemaError
from lakecore.expr import tree as ex
from lakecore.expr.coerce import coerce, supported_type

Where: TypeAlias = "str | ex.Predicate | pc.Expression"
"""What ``Table.scan(where=...)`` accepts."""


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
    unsupported types, LIKE on non-strings and literals that don't convert.
    """
    if isinstance(pred, ex.And | ex.Or):
        parts = [bind(p, schema) for p in pred.operands]
        return ex.and_(*parts) if isinstance(pred, ex.And) else ex.or_(*parts)
    if isinstance(pred, ex.Not):
        return ex.Not(bind(pred.operand, schema))
    field = resolve_field(ex.leaf_column(pred).name, schema)
    column = ex.Column(field.name)
    if isinstance(pred, ex.Comparison):
        return ex.Comparison(pred.op, column, _literal(pred.literal, field))
    if isinstance(pred, ex.In):
        return ex.In(column, tuple(_literal(v, field) for v in pred.values))
    if isinstance(pred, ex.IsNull):
        return ex.IsNull(column)
    if isinstance(pred, ex.Between):
        return ex.Between(column, _literal(pred.low, field), _literal(pred.high, field))
    if isinstance(pred, ex.Like):
        if not (pa.types.is_string(field.type) or pa.types.is_large_string(field.type)):
            raise PredicateError(f"LIKE needs a string column; {field.name!r} is {field.type}")
        return ex.Like(column, pred.pattern)
    raise PredicateError(f"not a predicate: {pred!r}")


def resolve_field(name: str, schema: pa.Schema) -> pa.Field:
    """The top-level field called ``name`` (case-insensitively if unambiguous)."""
    index = schema.get_field_index(name)
    if index < 0:
        matches = [i for i, f in enumerate(schema) if f.name.lower() == name.lower()]
        if len(matches) != 1:
            raise SchemaError(
                f"predicate references unknown column {name!r}; the table has {schema.names}"
            )
        index = matches[0]
    field = schema.field(index)
    if not supported_type(field.type):
        raise PredicateError(
            f"column {field.name!r} has type {field.type}; predicates support primitive columns "
            "(numbers, decimals, strings, binary, booleans, dates, timestamps)"
        )
    return field


def _literal(literal: ex.Literal, field: pa.Field) -> ex.Literal:
    return ex.Literal(coerce(literal.value, field))
