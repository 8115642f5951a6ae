"""Expressions as a small tree of frozen dataclasses (no IO, no pyarrow): the ONE tree that
scans, DML, MERGE, CHECK constraints, generated columns and conflict checks evaluate.

Scalar nodes: ``Literal``, ``Column``, ``Arithmetic`` (``+ - * / % DIV``), ``Negate``, ``Call``
(a function from ``FUNCTIONS``), ``Case`` and ``Cast``. Predicate nodes (``Predicate``, itself an
expression of boolean value): ``Comparison`` (column vs literal: the form pruning reasons about),
``Compare`` (any two expressions), ``In``, ``IsNull``, ``Between``, ``Like``, ``And``, ``Or``,
``Not``.

Build them directly or through ``Column``'s methods and the ``&``, ``|``, ``~`` operators::

    >>> from lakecore.expr.tree import col
    >>> pred = (col("region").eq("eu") & col("x").isin([1, 2])) | ~col("y").is_null()
    >>> str(pred)
    "(region = 'eu' AND x IN (1, 2)) OR (NOT y IS NULL)"

Semantics are SQL's, evaluated the way ``pyarrow.compute`` evaluates them: three-valued logic
(a comparison with NULL is NULL; AND/OR are Kleene), ``x IN (a, b)`` means ``x = a OR x = b``,
``BETWEEN`` is inclusive, floating-point NaN compares unequal to everything (so ``x != 1`` is
true for NaN). A filter keeps the rows where the predicate is TRUE. Arithmetic follows Spark:
``/`` gives a double (a decimal for decimals), ``%`` takes the dividend's sign, a division by
zero is NULL (so ``CASE WHEN y <> 0 THEN x / y END`` is safe: Arrow evaluates every branch),
integer overflow raises.

Trees are plain data: they compare by value, pickle, and render as Spark SQL text with
``str()`` (text that ``lakecore.expr.sql`` parses back to an equal tree).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from lakecore.errors import ArgumentTypeError, PredicateError

COMPARISON_OPS = frozenset({"=", "!=", "<", "<=", ">", ">="})
FLIPPED_OPS = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
"""``lit OP col`` is ``col FLIPPED_OPS[OP] lit``."""
ARITHMETIC_OPS = frozenset({"+", "-", "*", "/", "%", "div"})
FUNCTIONS = frozenset(
    {
        "abs",
        "ceil",
        "coalesce",
        "concat",
        "day",
        "floor",
        "greatest",
        "hour",
        "least",
        "length",
        "lower",
        "ltrim",
        "minute",
        "month",
        "nullif",
        "round",
        "rtrim",
        "second",
        "substring",
        "trim",
        "upper",
        "year",
    }
)
"""The functions ``Call`` may name (Spark SQL names; ``||`` is ``concat``)."""
CAST_TYPES = frozenset(
    {
        "TINYINT",
        "SMALLINT",
        "INT",
        "BIGINT",
        "FLOAT",
        "DOUBLE",
        "BOOLEAN",
        "STRING",
        "BINARY",
        "DATE",
        "TIMESTAMP",
        "TIMESTAMP_NTZ",
    }
)
"""``Cast`` targets besides ``DECIMAL(p, s)`` (Spark type names; TIMESTAMP is an instant)."""


class Expr:
    """Base of every node: scalar expressions and predicates; ``str()`` renders Spark SQL."""

    __slots__ = ()

    def __str__(self) -> str:
        return to_sql(self)


class Predicate(Expr):
    """Base of every predicate node: ``&`` (AND), ``|`` (OR), ``~`` (NOT), ``str()`` (SQL)."""

    __slots__ = ()

    def __and__(self, other: Predicate) -> Predicate:
        return and_(self, other)

    def __or__(self, other: Predicate) -> Predicate:
        return or_(self, other)

    def __invert__(self) -> Predicate:
        return Not(self)


@dataclass(frozen=True, slots=True)
class Literal(Expr):
    """A constant: None, bool, int, float, Decimal, str, bytes, date or datetime."""

    value: Any


def lit(value: Any) -> Literal:
    """A literal ``value``; ``update(set={"name": lit("text")})`` sets a string column to the
    text itself (a ``str`` value there is SQL)."""
    return Literal(value)


@dataclass(frozen=True, slots=True)
class Column(Expr):
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

    def between(self, low: Any, high: Any) -> Between:
        return Between(self, Literal(low), Literal(high))

    def like(self, pattern: str) -> Like:
        return Like(self, pattern)


def col(name: str) -> Column:
    """Return a reference to column ``name``."""
    return Column(name)


# ------------------------------------------------------------------------------ scalar nodes


@dataclass(frozen=True, slots=True)
class Arithmetic(Expr):
    """``left op right`` with op one of ``+ - * / % div`` (Spark semantics, see module doc)."""

    op: str
    left: Expr
    right: Expr

    def __post_init__(self) -> None:
        if self.op not in ARITHMETIC_OPS:
            raise PredicateError(f"arithmetic operator must be one of {sorted(ARITHMETIC_OPS)}")


@dataclass(frozen=True, slots=True)
class Negate(Expr):
    """``-operand``."""

    operand: Expr


@dataclass(frozen=True, slots=True)
class Call(Expr):
    """``name(args...)`` for a function of ``FUNCTIONS`` (lower-case name)."""

    name: str
    args: tuple[Expr, ...]

    def __post_init__(self) -> None:
        if self.name not in FUNCTIONS:
            raise PredicateError(f"unknown function {self.name!r}; known: {sorted(FUNCTIONS)}")


@dataclass(frozen=True, slots=True)
class Case(Expr):
    """``CASE WHEN cond THEN value ... ELSE default END`` (no ELSE: NULL); a NULL condition
    counts as false."""

    branches: tuple[tuple[Predicate, Expr], ...]
    default: Expr | None = None


@dataclass(frozen=True, slots=True)
class Cast(Expr):
    """``CAST(operand AS to)``; ``to`` is a name of ``CAST_TYPES`` or ``DECIMAL(p, s)``."""

    operand: Expr
    to: str


# ------------------------------------------------------------------------------ predicates


@dataclass(frozen=True, slots=True)
class Comparison(Predicate):
    """``column op literal`` with op one of ``= != < <= > >=`` (what pruning reasons about)."""

    op: str
    column: Column
    literal: Literal

    def __post_init__(self) -> None:
        if self.op not in COMPARISON_OPS:
            raise PredicateError(f"comparison operator must be one of {sorted(COMPARISON_OPS)}")


@dataclass(frozen=True, slots=True)
class Compare(Predicate):
    """``left op right`` over any two expressions (column vs column, arithmetic ...)."""

    op: str
    left: Expr
    right: Expr

    def __post_init__(self) -> None:
        if self.op not in COMPARISON_OPS:
            raise PredicateError(f"comparison operator must be one of {sorted(COMPARISON_OPS)}")


@dataclass(frozen=True, slots=True)
class In(Predicate):
    """``column IN (values...)``; ``NOT IN`` is ``Not(In(...))``. ``column`` may be any
    expression (pruning only reasons about a ``Column``)."""

    column: Expr
    values: tuple[Literal, ...]


@dataclass(frozen=True, slots=True)
class IsNull(Predicate):
    """``column IS NULL`` (NaN is not NULL); ``IS NOT NULL`` is ``Not(IsNull(...))``."""

    column: Expr


@dataclass(frozen=True, slots=True)
class Between(Predicate):
    """``column BETWEEN low AND high`` (inclusive), i.e. ``column >= low AND column <= high``."""

    column: Expr
    low: Literal
    high: Literal


@dataclass(frozen=True, slots=True)
class Like(Predicate):
    """``column LIKE pattern``: ``%`` any run, ``_`` one character, backslash escapes."""

    column: Expr
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
            raise ArgumentTypeError(f"{kind.__name__} operands must be predicates, not {p!r}")
        flat.extend(p.operands if isinstance(p, kind) else (p,))
    if not flat:
        raise PredicateError(f"{kind.__name__} needs at least one operand")
    return flat[0] if len(flat) == 1 else kind(tuple(flat))


def children(node: Expr) -> tuple[Expr, ...]:
    """The direct sub-expressions of ``node`` (literals and columns have none)."""
    if isinstance(node, And | Or):
        return node.operands
    if isinstance(node, Not):
        return (node.operand,)
    if isinstance(node, Comparison):
        return (node.column, node.literal)
    if isinstance(node, Compare | Arithmetic):
        return (node.left, node.right)
    if isinstance(node, In):
        return (node.column, *node.values)
    if isinstance(node, Between):
        return (node.column, node.low, node.high)
    if isinstance(node, IsNull | Like):
        return (node.column,)
    if isinstance(node, Negate | Cast):
        return (node.operand,)
    if isinstance(node, Call):
        return node.args
    if isinstance(node, Case):
        flat = tuple(part for branch in node.branches for part in branch)
        return flat if node.default is None else (*flat, node.default)
    return ()


def columns_of(node: Expr) -> list[str]:
    """The column names ``node`` references, each once, in first-use order."""
    out: dict[str, None] = {}
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, Column):
            out[current.name] = None
        stack.extend(reversed(children(current)))
    return list(out)


def is_simple(node: Expr) -> bool:
    """Whether ``node`` is a predicate of column-vs-literal leaves only (no scalar nodes,
    no ``Compare``): the shape the planner's pruning reads fully."""
    if isinstance(node, And | Or):
        return all(is_simple(p) for p in node.operands)
    if isinstance(node, Not):
        return is_simple(node.operand)
    if isinstance(node, Comparison):
        return True
    if isinstance(node, In | IsNull | Between | Like):
        return isinstance(node.column, Column)
    return False


# ------------------------------------------------------------------------------ SQL text

_SIMPLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_RESERVED_WORDS = """
    all and any as asc between by case cast date desc distinct div else end escape exists false
    from in interval is like limit not null or rlike select then timestamp true when where
"""
_RESERVED = frozenset(_RESERVED_WORDS.split())


def to_sql(node: Expr) -> str:
    """Render ``node`` as Spark SQL text (backtick-quoted identifiers, ``'...'`` strings)."""
    if isinstance(node, And | Or):
        word = " AND " if isinstance(node, And) else " OR "
        return word.join(_grouped(p) for p in node.operands)
    if isinstance(node, Not):
        return f"NOT {_grouped(node.operand)}"
    if isinstance(node, Comparison):
        return f"{sql_name(node.column.name)} {node.op} {sql_literal(node.literal.value)}"
    if isinstance(node, Compare):
        return f"{_wrapped(node.left)} {node.op} {_wrapped(node.right)}"
    if isinstance(node, In):
        values = ", ".join(sql_literal(v.value) for v in node.values)
        return f"{_wrapped(node.column)} IN ({values})"
    if isinstance(node, IsNull):
        return f"{_wrapped(node.column)} IS NULL"
    if isinstance(node, Between):
        low, high = sql_literal(node.low.value), sql_literal(node.high.value)
        return f"{_wrapped(node.column)} BETWEEN {low} AND {high}"
    if isinstance(node, Like):
        return f"{_wrapped(node.column)} LIKE {sql_literal(node.pattern)}"
    return _scalar_sql(node)


def _scalar_sql(node: Expr) -> str:
    if isinstance(node, Literal):
        return sql_literal(node.value)
    if isinstance(node, Column):
        return sql_name(node.name)
    if isinstance(node, Arithmetic):
        op = "DIV" if node.op == "div" else node.op
        return f"({to_sql(node.left)} {op} {to_sql(node.right)})"
    if isinstance(node, Negate):
        return f"(- {to_sql(node.operand)})"
    if isinstance(node, Call):
        return f"{node.name}({', '.join(to_sql(a) for a in node.args)})"
    if isinstance(node, Cast):
        return f"CAST({to_sql(node.operand)} AS {node.to})"
    if isinstance(node, Case):
        parts = [f"WHEN {to_sql(c)} THEN {to_sql(v)}" for c, v in node.branches]
        if node.default is not None:
            parts.append(f"ELSE {to_sql(node.default)}")
        return f"CASE {' '.join(parts)} END"
    raise ArgumentTypeError(f"not an expression: {node!r}")


def _grouped(node: Expr) -> str:
    return f"({to_sql(node)})" if isinstance(node, And | Or | Not) else to_sql(node)


def _wrapped(node: Expr) -> str:
    compound = isinstance(node, Predicate) and not isinstance(node, Comparison)
    return f"({to_sql(node)})" if compound else to_sql(node)


def sql_name(name: str) -> str:
    """``name`` as a Spark SQL identifier, backtick-quoted unless a plain non-reserved word."""
    if _SIMPLE_NAME.fullmatch(name) and name.lower() not in _RESERVED:
        return name
    return "`" + name.replace("`", "``") + "`"


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
        # Spark SQL strings: backslash escapes; '' would be two adjacent literals.
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, bytes):
        return f"X'{value.hex().upper()}'"
    if isinstance(value, dt.datetime):
        # Without an offset: a wall-clock time (an instant in UTC for a column with a zone).
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    raise ArgumentTypeError(f"no SQL literal for {type(value).__name__} {value!r}")
