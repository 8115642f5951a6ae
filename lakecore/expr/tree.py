"""Row predicates as a small tree of frozen dataclasses (no IO, no pyarrow).

Build them directly or through ``Column``'s methods and the ``&``, ``|``, ``~`` operators::

    >>> from lakecore.expr.tree import col
    >>> pred = (col("region").eq("eu") & col("x").isin([1, 2])) | ~col("y").is_null()
    >>> str(pred)
    "(region = 'eu' AND x IN (1, 2)) OR (NOT y IS NULL)"

Semantics are SQL's, evaluated the way ``pyarrow.compute`` evaluates them: three-valued logic
(a comparison with NULL is NULL; AND/OR are Kleene), ``x IN (a, b)`` means ``x = a OR x = b``,
``BETWEEN`` is inclusive, floating-point NaN compares unequal to everything (so ``x != 1`` is
true for NaN). A filter keeps the rows where the predicate is TRUE.

Trees are plain data: they compare by value, pickle, and render as SQL text with ``str()``
(text that ``lakecore.planning`` parses back to an equal tree).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

COMPARISON_OPS = frozenset({"=", "!=", "<", "<=", ">", ">="})
NEGATED_OPS = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}
FLIPPED_OPS = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
"""``lit OP col`` is ``col FLIPPED_OPS[OP] lit``."""


class Predicate:
    """Base of every predicate node: ``&`` (AND), ``|`` (OR), ``~`` (NOT), ``str()`` (SQL)."""

    __slots__ = ()

    def __and__(self, other: Predicate) -> Predicate:
        return and_(self, other)

    def __or__(self, other: Predicate) -> Predicate:
        return or_(self, other)

    def __invert__(self) -> Predicate:
        return Not(self)

    def __str__(self) -> str:
        return to_sql(self)


@dataclass(frozen=True, slots=True)
class Literal:
    """A constant: None, bool, int, float, Decimal, str, bytes, date or datetime."""

    value: Any


@dataclass(frozen=True, slots=True)
class Column:
    """A reference to a top-level column by name; its methods build predicates over it."""

    name: str

    def eq(self, value: Any) -> Comparison:
        return Comparison("=", self, Literal(value))

    def ne(self, value: Any) -> Comparison:
        return Comparison("!=", self, Literal(value))

    def lt(self, value: Any) -> Comparison:
        return Comparison("<", self, Literal(value))

    def le(self, value: Any) -> Comparison:
        return Comparison("<=", self, Literal(value))

    def gt(self, value: Any) -> Comparison:
        return Comparison(">", self, Literal(value))

    def ge(self, value: Any) -> Comparison:
        return Comparison(">=", self, Literal(value))

    def isin(self, values: Iterable[Any]) -> In:
        return In(self, tuple(Literal(v) for v in values))

    def is_null(self) -> IsNull:
        return IsNull(self)

    def is_not_null(self) -> Not:
        return Not(IsNull(self))

    def between(self, low: Any, high: Any) -> Between:
        return Between(self, Literal(low), Literal(high))

    def like(self, pattern: str) -> Like:
        return Like(self, pattern)


def col(name: str) -> Column:
    """Return a reference to column ``name``."""
    return Column(name)


@dataclass(frozen=True, slots=True)
class Comparison(Predicate):
    """``column op literal`` with op one of ``= != < <= > >=``."""

    op: str
    column: Column
    literal: Literal

    def __post_init__(self) -> None:
        if self.op not in COMPARISON_OPS:
            raise ValueError(f"comparison operator must be one of {sorted(COMPARISON_OPS)}")


@dataclass(frozen=True, slots=True)
class In(Predicate):
    """``column IN (values...)``; ``NOT IN`` is ``Not(In(...))``."""

    column: Column
    values: tuple[Literal, ...]


@dataclass(frozen=True, slots=True)
class IsNull(Predicate):
    """``column IS NULL`` (NaN is not NULL); ``IS NOT NULL`` is ``Not(IsNull(...))``."""

    column: Column


@dataclass(frozen=True, slots=True)
class Between(Predicate):
    """``column BETWEEN low AND high`` (inclusive), i.e. ``column >= low AND column <= high``."""

    column: Column
    low: Literal
    high: Literal


@dataclass(frozen=True, slots=True)
class Like(Predicate):
    """``column LIKE pattern``: ``%`` any run, ``_`` one character, backslash escapes."""

    column: Column
    pattern: str


@dataclass(frozen=True, slots=True)
class And(Predicate):
    """All operands are true (Kleene AND); build with ``and_`` or ``&``."""

    operands: tuple[Predicate, ...]


@dataclass(frozen=True, slots=True)
class Or(Predicate):
    """Any operand is true (Kleene OR); build with ``or_`` or ``|``."""

    operands: tuple[Predicate, ...]


@dataclass(frozen=True, slots=True)
class Not(Predicate):
    """The operand is false (NULL stays NULL)."""

    operand: Predicate


def and_(*operands: Predicate) -> Predicate:
    """AND of ``operands`` (at least one), flattening nested ANDs."""
    return _junction(And, operands)


def or_(*operands: Predicate) -> Predicate:
    """OR of ``operands`` (at least one), flattening nested ORs."""
    return _junction(Or, operands)


def _junction(kind: type[And] | type[Or], operands: Iterable[Predicate]) -> Predicate:
    flat: list[Predicate] = []
    for p in operands:
        if not isinstance(p, Predicate):
            raise TypeError(f"{kind.__name__} operands must be predicates, not {p!r}")
        flat.extend(p.operands if isinstance(p, kind) else (p,))
    if not flat:
        raise ValueError(f"{kind.__name__} needs at least one operand")
    return flat[0] if len(flat) == 1 else kind(tuple(flat))


def columns_of(pred: Predicate) -> list[str]:
    """The column names ``pred`` references, each once, in first-use order."""
    out: dict[str, None] = {}
    _collect(pred, out)
    return list(out)


def _collect(pred: Predicate, out: dict[str, None]) -> None:
    if isinstance(pred, And | Or):
        for p in pred.operands:
            _collect(p, out)
    elif isinstance(pred, Not):
        _collect(pred.operand, out)
    else:
        out[leaf_column(pred).name] = None


def leaf_column(pred: Predicate) -> Column:
    """The column of a leaf predicate (Comparison, In, IsNull, Between, Like)."""
    if isinstance(pred, Comparison | In | IsNull | Between | Like):
        return pred.column
    raise TypeError(f"not a leaf predicate: {pred!r}")


# ------------------------------------------------------------------------------ SQL text

_SIMPLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_RESERVED_WORDS = """
    all and any as asc between by case cast date desc distinct else end escape exists false from
    in interval is like limit not null or select then timestamp true when where
"""
_RESERVED = frozenset(_RESERVED_WORDS.split())


def to_sql(pred: Predicate) -> str:
    """Render ``pred`` as SQL text (standard SQL: double-quoted identifiers)."""
    if isinstance(pred, And | Or):
        word = " AND " if isinstance(pred, And) else " OR "
        return word.join(_wrapped(p) for p in pred.operands)
    if isinstance(pred, Not):
        return f"NOT {_wrapped(pred.operand)}"
    if isinstance(pred, Comparison):
        return f"{sql_name(pred.column.name)} {pred.op} {sql_literal(pred.literal.value)}"
    if isinstance(pred, In):
        values = ", ".join(sql_literal(v.value) for v in pred.values)
        return f"{sql_name(pred.column.name)} IN ({values})"
    if isinstance(pred, IsNull):
        return f"{sql_name(pred.column.name)} IS NULL"
    if isinstance(pred, Between):
        low, high = sql_literal(pred.low.value), sql_literal(pred.high.value)
        return f"{sql_name(pred.column.name)} BETWEEN {low} AND {high}"
    if isinstance(pred, Like):
        return f"{sql_name(pred.column.name)} LIKE {sql_literal(pred.pattern)}"
    raise TypeError(f"not a predicate: {pred!r}")


def _wrapped(pred: Predicate) -> str:
    return f"({to_sql(pred)})" if isinstance(pred, And | Or | Not) else to_sql(pred)


def sql_name(name: str) -> str:
    """``name`` as a SQL identifier, double-quoted unless it is a plain non-reserved word."""
    if _SIMPLE_NAME.fullmatch(name) and name.lower() not in _RESERVED:
        return name
    return '"' + name.replace('"', '""') + '"'


def sql_literal(value: Any) -> str:
    """``value`` as a SQL literal that parses back to an equal Python value."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f"CAST('{value!r}' AS DOUBLE)"
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, bytes):
        return f"UNHEX('{value.hex()}')"
    if isinstance(value, dt.datetime):
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    raise TypeError(f"no SQL literal for {type(value).__name__} {value!r}")
