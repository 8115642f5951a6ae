"""Vectorised file pruning: which files may hold a row for which a predicate is TRUE.

``may_be(pred, True, bounds)`` returns one boolean per file of the index, computed with Arrow
compute over the whole index at once. A file is pruned (False) only when its bounds prove
that no row can make ``pred`` TRUE; anything unknown counts as "might match".

NOT is pushed down by asking the opposite question: rows where ``NOT p`` is TRUE are rows
where ``p`` is FALSE, so ``may_be(NOT p, True) = may_be(p, False)``, and De Morgan turns
``may_be(a AND b, False)`` into ``may_be(a, False) OR may_be(b, False)``. Rows where ``p`` is
NULL are neither, which is why this is exact three-valued logic, and why a comparison is never
negated syntactically: ``NOT (x < 5)`` is TRUE for NaN while ``x >= 5`` is not.

Only leaves over a column and literals (``Comparison``, and ``In``/``IsNull``/``Between``/
``Like`` over a ``Column``) are reasoned about; any other node of the expression tree
(``Compare``, a leaf over an expression such as ``upper(s) = 'X'``) may match: TRUE and
FALSE are both possible, so it never prunes a file, under NOT or not.
"""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.expr import tree as ex
from lakecore.expr.arrow_filter import in_value_set, literal_scalar
from lakecore.planning.bounds import ColumnBounds, FileBounds, Mask

IN_LIST_EXACT_LIMIT = 32
"""IN lists up to this long are checked value by value; longer ones by their [min, max]."""


def may_be(pred: ex.Predicate, want: bool, bounds: FileBounds) -> Mask:
    """Per file: may some row make bound predicate ``pred`` evaluate to ``want``?"""
    if isinstance(pred, ex.Not):
        return may_be(pred.operand, not want, bounds)
    if isinstance(pred, ex.And | ex.Or):
        parts = [may_be(p, want, bounds) for p in pred.operands]
        # TRUE needs every AND operand TRUE; FALSE needs one. OR is the dual.
        return all_of(parts) if isinstance(pred, ex.And) == want else any_of(parts)
    if not isinstance(pred, ex.Comparison | ex.In | ex.IsNull | ex.Between | ex.Like):
        return True  # Compare and other nodes: may match
    if not isinstance(pred.column, ex.Column):
        return True  # a leaf over an expression: may match
    column = bounds.column(pred.column.name)
    if column is None:
        return True
    if isinstance(pred, ex.Between):
        low = ex.Comparison(">=", ex.Column(pred.column.name), pred.low)
        high = ex.Comparison("<=", ex.Column(pred.column.name), pred.high)
        return may_be(ex.And((low, high)), want, bounds)
    if isinstance(pred, ex.Comparison):
        return _comparison(pred.op, pred.literal.value, want, column)
    if isinstance(pred, ex.In):
        return _in([v.value for v in pred.values], want, column)
    if isinstance(pred, ex.IsNull):
        return column.has_null if want else column.has_value
    if isinstance(pred, ex.Like):
        return _like(pred.pattern, want, column)
    raise TypeError(f"not a predicate: {pred!r}")


# ------------------------------------------------------------------------------ masks


def all_of(masks: list[Mask]) -> Mask:
    """AND of masks (constant True/False short-cut)."""
    out: Mask = True
    for m in masks:
        if m is False:
            return False
        if m is not True:
            out = m if out is True else pc.and_(out, m)
    return out


def any_of(masks: list[Mask]) -> Mask:
    """OR of masks (constant True/False short-cut)."""
    out: Mask = False
    for m in masks:
        if m is True:
            return True
        if m is not False:
            out = m if out is False else pc.or_(out, m)
    return out


def _maybe(result: Any) -> Mask:
    """A comparison over bounds (null = unknown) as a mask: unknown -> True."""
    if result is None:
        return True
    return pc.fill_null(result, True)


def _cmp(fn: str, values: pa.ChunkedArray | None, scalar: pa.Scalar) -> Mask:
    if values is None:
        return True
    return _maybe(pc.call_function(fn, [values, scalar]))


# ------------------------------------------------------------------------------ leaves


def _comparison(op: str, value: Any, want: bool, b: ColumnBounds) -> Mask:
    if value is None:
        return False  # a comparison with NULL is never TRUE nor FALSE
    if op == "!=":
        op, want = "=", not want  # != is TRUE exactly where = is FALSE (NaN included)
    if isinstance(value, float) and math.isnan(value):
        return b.has_value if not want else False  # NaN compares FALSE with everything
    v = literal_scalar(value, b.type)
    if op == "=":
        if want and b.lower is b.upper and b.upper is not None:  # exact: partition values
            return all_of([b.has_value, _cmp("equal", b.lower, v)])
        if want:
            lower_le = _cmp("less_equal", b.lower, v)
            return all_of([b.has_value, lower_le, _upper_at_least(b, v, strict=False)])
        return all_of([b.has_value, any_of([b.nan, _not_exactly(b, v)])])
    if op in ("<", "<="):
        if want:
            return all_of([b.has_value, _cmp("less" if op == "<" else "less_equal", b.lower, v)])
        return all_of([b.has_value, any_of([b.nan, _upper_at_least(b, v, strict=op == "<=")])])
    if want:  # > and >=
        return all_of([b.has_value, _upper_at_least(b, v, strict=op == ">")])
    lower = _cmp("less_equal" if op == ">" else "less", b.lower, v)
    return all_of([b.has_value, any_of([b.nan, lower])])


def _upper_at_least(b: ColumnBounds, v: pa.Scalar, strict: bool) -> Mask:
    """May some value be > v (``strict``) or >= v? Uses ``upper`` and a truncated max."""
    direct = _cmp("greater" if strict else "greater_equal", b.upper, v)
    text = v.as_py()
    if b.prefix is None or direct is True or not isinstance(text, str):
        return direct
    # A value starting with the truncated max's prefix may be as large as v whenever v
    # itself starts with that prefix (all prefixes have the same length).
    head = pa.scalar(text[: b.prefix_length], b.prefix.type)
    return any_of([direct, pc.fill_null(pc.equal(b.prefix, head), False)])


def _not_exactly(b: ColumnBounds, v: pa.Scalar) -> Mask:
    """May the file hold a non-null value other than v? False only if lower == upper == v."""
    if b.lower is None or b.upper is None:
        return True
    exact = pc.and_(pc.equal(b.lower, v), pc.equal(b.upper, v))
    if b.prefix is not None:
        exact = pc.and_(exact, pc.is_null(b.prefix))
    return pc.invert(pc.fill_null(exact, False))


def _in(values: list[Any], want: bool, b: ColumnBounds) -> Mask:
    if not want and any(v is None for v in values):
        return False  # with a NULL in the list, a non-match is NULL, never FALSE
    kept = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if want:
        if len(kept) <= IN_LIST_EXACT_LIMIT:
            return any_of([_comparison("=", v, True, b) for v in kept])
        low, high = min(kept), max(kept)
        envelope = all_of(
            [
                b.has_value,
                _cmp("less_equal", b.lower, literal_scalar(high, b.type)),
                _upper_at_least(b, literal_scalar(low, b.type), strict=False),
            ]
        )
        return all_of([envelope, _single_value_in(b, kept, when_single=True)])
    return all_of([b.has_value, any_of([b.nan, _single_value_in(b, kept, when_single=False)])])


def _single_value_in(b: ColumnBounds, kept: list[Any], when_single: bool) -> Mask:
    """Files whose bounds pin one value: is it in ``kept`` (``when_single``) or not?
    Files with a range of values (or unknown bounds) are True."""
    if b.lower is None or b.upper is None:
        return True
    single = pc.fill_null(pc.equal(b.lower, b.upper), False)
    if b.prefix is not None:
        single = pc.and_(single, pc.is_null(b.prefix))
    found = pc.fill_null(pc.is_in(b.lower, value_set=in_value_set(kept, b.type)), False)
    answer = found if when_single else pc.invert(found)
    return pc.or_(pc.invert(single), answer)


def _like(pattern: str, want: bool, b: ColumnBounds) -> Mask:
    prefix, pure = like_prefix(pattern)
    if want:
        if not prefix:
            return b.has_value
        parts = [b.has_value, _upper_at_least(b, pa.scalar(prefix, b.type), strict=False)]
        successor = prefix_successor(prefix)
        if successor is not None:
            parts.append(_cmp("less", b.lower, pa.scalar(successor, b.type)))
        return all_of(parts)
    if not pure or b.lower is None or b.upper is None:
        return b.has_value
    # Every value lies between lower and upper; if both start with the prefix, so do they.
    inside = pc.and_(
        pc.starts_with(b.lower, pattern=prefix), pc.starts_with(b.upper, pattern=prefix)
    )
    if b.prefix is not None:
        inside = pc.and_(inside, pc.is_null(b.prefix))
    return all_of([b.has_value, pc.invert(pc.fill_null(inside, False))])


def like_prefix(pattern: str) -> tuple[str, bool]:
    """The literal text before the first wildcard of a LIKE pattern, and whether the pattern
    is exactly that prefix followed by one ``%`` (so that it means "starts with")."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            out.append(pattern[i + 1])
            i += 2
            continue
        if ch in "%_":
            return "".join(out), ch == "%" and i == len(pattern) - 1
        out.append(ch)
        i += 1
    return "".join(out), False


def prefix_successor(prefix: str) -> str | None:
    """The smallest string greater than every string starting with ``prefix`` (None: none)."""
    chars = list(prefix)
    while chars:
        code = ord(chars[-1]) + 1
        if code == 0xD800:  # skip the surrogate block, which UTF-8 cannot hold
            code = 0xE000
        if code <= 0x10FFFF:
            chars[-1] = chr(code)
            return "".join(chars)
        chars.pop()
    return None
