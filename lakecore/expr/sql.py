"""SQL predicate text -> ``lakecore.expr.tree`` tree, parsed with sqlglot.

Accepted (standard SQL, sqlglot's default dialect; identifiers may be double-quoted):
comparisons ``= != <> < <= > >=`` between a column and a literal (either side), ``IN`` /
``NOT IN`` lists, ``IS [NOT] NULL``, ``[NOT] BETWEEN``, ``[NOT] LIKE``, ``AND``/``OR``/``NOT``,
parentheses, a bare boolean column (``flag`` means ``flag = TRUE``). Literals: numbers,
``'strings'``, ``TRUE``/``FALSE``/``NULL``, ``DATE '...'``, ``TIMESTAMP '...'`` (an offset in the
text makes it an instant), ``TIMESTAMP_NTZ``/``TIMESTAMPTZ``, ``CAST('...' AS <type>)``,
``UNHEX('...')`` for bytes. Anything else raises ``PredicateError`` naming the construct.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from typing import Any, cast

import sqlglot
from sqlglot import exp

from lakecore.errors import PredicateError
from lakecore.expr import tree as ex
from lakecore.expr.coerce import parse_timestamp

_COMPARISONS: dict[type[exp.Expression], str] = {
    exp.EQ: "=",
    exp.NEQ: "!=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.GT: ">",
    exp.GTE: ">=",
}
_INTEGER = re.compile(r"[+-]?\d+")
_DT = exp.DataType.Type
_INT_TYPES = {_DT.TINYINT, _DT.SMALLINT, _DT.INT, _DT.BIGINT}
_FLOAT_TYPES = {_DT.FLOAT, _DT.DOUBLE}
_TEXT_TYPES = {_DT.VARCHAR, _DT.CHAR, _DT.TEXT}


def parse_sql(text: str) -> ex.Predicate:
    """Parse one SQL boolean expression (a WHERE clause without ``WHERE``).

    Raises ``PredicateError`` on a syntax error or on SQL outside the supported subset.
    """
    try:
        tree = cast(exp.Expression, sqlglot.parse_one(text))
    except sqlglot.errors.SqlglotError as exc:
        raise PredicateError(f"cannot parse predicate {text!r}: {exc}") from exc
    if tree is None:
        raise PredicateError(f"empty predicate {text!r}")
    return _predicate(tree, text)


def _predicate(node: exp.Expression, text: str) -> ex.Predicate:
    if isinstance(node, exp.Paren):
        return _predicate(node.this, text)
    if isinstance(node, exp.And | exp.Or):
        left, right = _predicate(node.this, text), _predicate(node.expression, text)
        return ex.and_(left, right) if isinstance(node, exp.And) else ex.or_(left, right)
    if isinstance(node, exp.Not):
        return ex.Not(_predicate(node.this, text))
    if type(node) in _COMPARISONS:
        return _comparison(node, _COMPARISONS[type(node)], text)
    if isinstance(node, exp.In):
        return _in(node, text)
    if isinstance(node, exp.Is):
        if not isinstance(node.expression, exp.Null):
            raise _unsupported(node, text, "only IS NULL / IS NOT NULL are supported")
        return ex.IsNull(_column(node.this, text))
    if isinstance(node, exp.Between):
        low, high = _literal(node.args["low"], text), _literal(node.args["high"], text)
        return ex.Between(_column(node.this, text), low, high)
    if isinstance(node, exp.Like):
        return _like(node, text)
    if isinstance(node, exp.Column):
        return ex.Comparison("=", _column(node, text), ex.Literal(True))
    raise _unsupported(node, text)


def _comparison(node: exp.Expression, op: str, text: str) -> ex.Predicate:
    left, right = node.this, node.expression
    if _is_column(left) and not _is_column(right):
        return ex.Comparison(op, _column(left, text), _literal(right, text))
    if _is_column(right) and not _is_column(left):
        return ex.Comparison(ex.FLIPPED_OPS[op], _column(right, text), _literal(left, text))
    raise _unsupported(node, text, "a comparison needs one column and one literal")


def _in(node: exp.In, text: str) -> ex.Predicate:
    if node.args.get("query") is not None or node.args.get("unnest") is not None:
        raise _unsupported(node, text, "IN takes a list of literals, not a subquery")
    values = tuple(_literal(v, text) for v in node.expressions)
    return ex.In(_column(node.this, text), values)


def _like(node: exp.Like, text: str) -> ex.Predicate:
    pattern = _literal(node.expression, text).value
    if not isinstance(pattern, str):
        raise _unsupported(node, text, "LIKE needs a string pattern")
    like = ex.Like(_column(node.this, text), pattern)
    return ex.Not(like) if node.args.get("negate") else like


def _is_column(node: exp.Expression) -> bool:
    while isinstance(node, exp.Paren):
        node = node.this
    return isinstance(node, exp.Column)


def _column(node: exp.Expression, text: str) -> ex.Column:
    while isinstance(node, exp.Paren):
        node = node.this
    if not isinstance(node, exp.Column):
        raise _unsupported(node, text, "expected a column name")
    if node.args.get("table") is not None:
        raise _unsupported(node, text, "qualified and nested column names are not supported")
    return ex.Column(node.name)


def _literal(node: exp.Expression, text: str) -> ex.Literal:
    while isinstance(node, exp.Paren):
        node = node.this
    try:
        return ex.Literal(_literal_value(node, text))
    except (ValueError, decimal.InvalidOperation) as exc:
        raise PredicateError(f"bad literal {node.sql()!r} in {text!r}: {exc}") from exc


def _literal_value(node: exp.Expression, text: str) -> Any:
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Neg):
        value = _literal_value(node.this, text)
        if isinstance(value, bool) or not isinstance(value, int | float | decimal.Decimal):
            raise _unsupported(node, text, "only numbers can be negated")
        return value.copy_negate() if isinstance(value, decimal.Decimal) else -value
    if isinstance(node, exp.Literal):
        return node.this if node.is_string else _number(node.this)
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) and node.this.is_string:
        return _typed_text(node.this.this, node.to.this, node, text)
    if isinstance(node, exp.Unhex) and isinstance(node.this, exp.Literal):
        return bytes.fromhex(node.this.this)
    raise _unsupported(node, text, "expected a literal")


def _number(raw: str) -> int | decimal.Decimal:
    """Integers stay ints; other numbers are exact Decimals (coerced to the column's type)."""
    return int(raw) if _INTEGER.fullmatch(raw) else decimal.Decimal(raw)


def _typed_text(raw: str, to: object, node: exp.Expression, text: str) -> Any:
    if to == _DT.DATE:
        return dt.date.fromisoformat(raw.strip())
    if to in (_DT.TIMESTAMP, _DT.TIMESTAMPTZ, _DT.TIMESTAMPLTZ, _DT.TIMESTAMPNTZ, _DT.DATETIME):
        value = parse_timestamp(raw)
        if to in (_DT.TIMESTAMPTZ, _DT.TIMESTAMPLTZ) and value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        if to == _DT.TIMESTAMPNTZ and value.tzinfo is not None:
            raise ValueError("a TIMESTAMP_NTZ literal must not carry a UTC offset")
        return value
    if to in _INT_TYPES:
        return int(raw.strip())
    if to in _FLOAT_TYPES:
        return float(raw.strip())
    if to == _DT.DECIMAL:
        return decimal.Decimal(raw.strip())
    if to in _TEXT_TYPES:
        return raw
    if to == _DT.BOOLEAN and raw.strip().lower() in ("true", "false"):
        return raw.strip().lower() == "true"
    raise _unsupported(node, text, f"unsupported literal type {getattr(to, 'name', to)}")


def _unsupported(node: exp.Expression, text: str, why: str = "") -> PredicateError:
    detail = f": {why}" if why else ""
    return PredicateError(
        f"unsupported predicate syntax {node.sql()!r} ({type(node).__name__}) in {text!r}{detail}"
    )
