"""A bound expression tree -> ``pyarrow.compute.Expression``: the row filter applied after
reading (the residual), with the semantics documented in ``lakecore.expr.tree``."""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.expr import tree as ex

_NULL_BOOL = pa.scalar(None, pa.bool_())


def to_arrow_filter(pred: ex.Predicate, schema: pa.Schema) -> pc.Expression:
    """Return the pyarrow filter of ``pred`` (bound to ``schema``, see ``binding.bind``)."""
    if isinstance(pred, ex.And | ex.Or):
        parts = [to_arrow_filter(p, schema) for p in pred.operands]
        out = parts[0]
        for p in parts[1:]:
            out = (out & p) if isinstance(pred, ex.And) else (out | p)
        return out
    if isinstance(pred, ex.Not):
        return ~to_arrow_filter(pred.operand, schema)
    name = ex.leaf_column(pred).name
    field, t = pc.field(name), schema.field(name).type
    if isinstance(pred, ex.Comparison):
        return _compare(pred.op, field, literal_scalar(pred.literal.value, t))
    if isinstance(pred, ex.Between):
        low = _compare(">=", field, literal_scalar(pred.low.value, t))
        return low & _compare("<=", field, literal_scalar(pred.high.value, t))
    if isinstance(pred, ex.In):
        return _in(field, [v.value for v in pred.values], t)
    if isinstance(pred, ex.IsNull):
        return field.is_null()
    if isinstance(pred, ex.Like):
        return pc.match_like(field, pred.pattern)
    raise TypeError(f"not a predicate: {pred!r}")


def literal_scalar(value: Any, t: pa.DataType) -> pa.Scalar:
    """A bound literal as a pyarrow scalar of the column's type."""
    return pa.scalar(value, t)


def _compare(op: str, field: pc.Expression, value: pa.Scalar) -> pc.Expression:
    if op == "=":
        return field == value
    if op == "!=":
        return field != value
    if op == "<":
        return field < value
    if op == "<=":
        return field <= value
    if op == ">":
        return field > value
    return field >= value


def _in(field: pc.Expression, values: list[Any], t: pa.DataType) -> pc.Expression:
    """``x IN (values)`` as ``x = v1 OR x = v2 ...`` would evaluate it, via ``is_in``.

    NaN never equals anything, so NaN values are dropped (``is_in`` would match NaN with NaN);
    a NULL value makes non-matches NULL; a NULL input gives NULL.
    """
    has_null = any(v is None for v in values)
    kept = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    found = pc.is_in(field, value_set=pa.array(kept, t), skip_nulls=True)
    if has_null:
        # Non-null matches are TRUE; everything else (non-matches, NULL input) is NULL.
        return pc.if_else(found, True, _NULL_BOOL)
    return pc.if_else(field.is_null(), _NULL_BOOL, found)
