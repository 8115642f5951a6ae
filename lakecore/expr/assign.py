"""``SET column = value`` (UPDATE, MERGE): what a value may be and what it gives each row.

A value is one of:

- a ``str``: Spark SQL text, evaluated per row (``"price * 2"``, ``"upper(name)"``). For a
  string column too: ``{"name": "'eu'"}`` or ``{"name": '"eu"'}`` sets the text ``eu``, while
  ``{"name": "eu"}`` names the column ``eu``. Use ``lakecore.expr.tree.lit("eu")`` for the
  text itself;
- a ``lakecore.expr.tree`` expression (``lit(...)``, ``col("x")``, any tree), used as is;
- any other Python value (``5``, ``None``, ``2.5``, ``Decimal("1.10")``, ``True``, a ``date``,
  a ``datetime``, ``bytes``): a literal, which must convert to the column's type without
  changing (``InvalidArgumentError`` otherwise: ``2.5`` into an integer column, ``0.1`` into a
  ``float32`` one, ``Decimal("1.234")`` into ``decimal(10, 2)``).

Literals (Python values and ``Literal`` nodes) are checked against the column before any row
is read; SQL (a literal in SQL text too) and other trees are evaluated per row and stored with
the SQL store-assignment rule of ``lakecore.model.data_input.cast_assigned`` (``SchemaError``
when a value does not fit).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from typing import Any, TypeAlias

import pyarrow as pa

from lakecore.errors import InvalidArgumentError, PredicateError
from lakecore.expr import tree as ex
from lakecore.expr.coerce import coerce

SetValue: TypeAlias = Any
"""A SET value: SQL text (``str``), an expression tree, or a Python literal (see module)."""

_LITERAL_TYPES = (
    type(None),
    bool,
    int,
    float,
    decimal.Decimal,
    bytes,
    dt.date,
    dt.datetime,
)


def assignment(value: SetValue) -> ex.Expr:
    """``value`` as an expression tree: SQL parsed, trees kept, Python values as literals.

    Raises ``PredicateError`` for SQL that does not parse and ``InvalidArgumentError`` for a
    Python value that is no SQL literal (a list, a dict, an object).
    """
    if isinstance(value, str):
        from lakecore.expr.sql import parse_expression

        return parse_expression(value)
    if isinstance(value, ex.Expr):
        return value
    if not isinstance(value, _LITERAL_TYPES):
        raise InvalidArgumentError(
            f"a SET value must be SQL text, a lakecore expression or a scalar Python value "
            f"(None, bool, int, float, Decimal, bytes, date, datetime), not "
            f"{type(value).__name__} {value!r}"
        )
    return ex.Literal(value)


def assignment_sql(value: SetValue) -> str:
    """``value`` as Spark SQL text (for commit metadata): SQL as given, others rendered."""
    return value if isinstance(value, str) else str(assignment(value))


def literal_for(value: Any, field: pa.Field) -> Any:
    """Python ``value`` as the value of ``field``'s type it equals; ``InvalidArgumentError``
    when the conversion would change it (or is impossible)."""
    t = field.type
    text_column = pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
    if isinstance(value, str) and not (text_column or pa.types.is_large_binary(t)):
        raise InvalidArgumentError(
            f"SET {field.name} = {value!r}: a text literal does not go into a {t} column"
        )
    try:
        out = coerce(value, field)
    except PredicateError as exc:
        raise InvalidArgumentError(f"SET {field.name} = {value!r}: {exc}") from exc
    if not _same(value, out):
        raise InvalidArgumentError(
            f"SET {field.name} = {value!r}: the column's type {field.type} would store {out!r}"
        )
    return out


def assigned_values(value: SetValue, field: pa.Field, rows: pa.Table) -> pa.ChunkedArray:
    """What ``SET field = value`` stores in each row of ``rows``, typed as ``field``.

    Raises ``InvalidArgumentError`` (a literal that does not convert exactly), ``SchemaError``
    (an unknown column in the SQL, a result that does not go into the column) or
    ``PredicateError`` (SQL that does not parse or type-check).
    """
    from lakecore.expr.evaluate import evaluate
    from lakecore.model.data_input import cast_assigned

    expr = assignment(value)
    # SQL text is evaluated even when it is one literal ('42' into an integer column follows
    # the store-assignment rule, as in Spark); Python values and Literal nodes are exact.
    if isinstance(expr, ex.Literal) and not isinstance(value, str):
        exact = literal_for(expr.value, field)
        return pa.chunked_array([pa.array([exact] * rows.num_rows, field.type)], field.type)
    computed = evaluate(expr, rows)
    if pa.types.is_null(computed.type):
        computed = computed.cast(field.type)
    out: pa.ChunkedArray = cast_assigned(computed, field.type, field.name, str(expr))
    return out


def _same(value: Any, out: Any) -> bool:
    """Whether coercion kept ``value`` (numbers compared exactly, NaN equal to NaN)."""
    if value is None or isinstance(value, str | bytes | bool | dt.date):
        return True  # coerce refuses what would change these (text -> number is parsed)
    if isinstance(value, float) and math.isnan(value):
        return isinstance(out, float) and math.isnan(out)
    if isinstance(value, int | float | decimal.Decimal):
        if isinstance(out, float) and not math.isfinite(out):
            return bool(out == value)
        return decimal.Decimal(value) == decimal.Decimal(out)
    return True
