"""Spark SQL text -> ``lakecore.expr.tree`` tree: the ONE SQL front end (parsed with sqlglot).

The dialect is Spark SQL's, since Delta CHECK constraints and generated columns are Spark SQL:
``'text'`` and ``"text"`` are strings (backslash escapes as in Spark: ``'a\\nb'`` holds a line
break), ``\\`name\\``` is an identifier, ``s.x`` names the column ``s.x`` (MERGE aliases) or
else ``x``. Scan predicates, DML conditions, MERGE conditions and SET values, CHECK
constraints, generated columns and conflict checks all go through here.

Accepted: comparisons ``= != <> < <= > >=`` between any expressions (a column against a
literal becomes ``Comparison``, what pruning reasons about), ``[NOT] IN`` lists, ``IS [NOT]
NULL``, ``[NOT] BETWEEN``, ``[NOT] LIKE`` with a literal pattern, ``AND``/``OR``/``NOT``, a bare
boolean column (``flag`` means ``flag = TRUE``); arithmetic ``+ - * / % DIV`` and unary minus;
``CASE [x] WHEN ... THEN ... [ELSE ...] END``, ``IF(c, a, b)``, ``CAST``, and the functions of
``tree.FUNCTIONS`` (``COALESCE``/``IFNULL``/``NVL``, ``UPPER``, ``LOWER``, ``LENGTH``, ``ABS``,
``CONCAT`` and ``||``, ``SUBSTRING``/``SUBSTR``, ``TRIM``/``LTRIM``/``RTRIM``, ``ROUND``,
``CEIL``, ``FLOOR``, ``NULLIF``, ``GREATEST``, ``LEAST``, ``YEAR``, ``MONTH``, ``DAY``,
``HOUR``, ``MINUTE``, ``SECOND``, ``TO_DATE``; time parts in UTC), ``a <=> b`` (null-safe
equality). Literals: numbers (integers are
ints, ``1.5`` an exact Decimal, ``1e3`` a float), strings, ``TRUE``/``FALSE``/``NULL``,
``DATE '...'``, ``TIMESTAMP '...'`` (wall clock unless the text has an offset),
``TIMESTAMP_NTZ '...'``, ``CAST('...' AS <type>)``, ``X'00FF'`` / ``UNHEX('00ff')`` for bytes.
Anything else raises ``PredicateError`` naming the construct.
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
_ARITHMETIC: dict[type[exp.Expression], str] = {
    exp.Add: "+",
    exp.Sub: "-",
    exp.Mul: "*",
    exp.Div: "/",
    exp.Mod: "%",
    exp.IntDiv: "div",
}
_FUNCTIONS: dict[type[exp.Expression], str] = {
    exp.Upper: "upper",
    exp.Lower: "lower",
    exp.Length: "length",
    exp.Abs: "abs",
    exp.Ceil: "ceil",
    exp.Floor: "floor",
    exp.Coalesce: "coalesce",
    exp.Concat: "concat",
    exp.DPipe: "concat",
    exp.Nullif: "nullif",
    exp.Greatest: "greatest",
    exp.Least: "least",
    exp.Round: "round",
    exp.Substring: "substring",
    exp.Year: "year",
    exp.Month: "month",
    exp.Day: "day",
    exp.DayOfMonth: "day",
    exp.Hour: "hour",
    exp.Minute: "minute",
    exp.Second: "second",
}
_INTEGER = re.compile(r"[+-]?\d+")
_DT = exp.DataType.Type
_INT_TYPES = {
    _DT.TINYINT: "TINYINT",
    _DT.SMALLINT: "SMALLINT",
    _DT.INT: "INT",
    _DT.BIGINT: "BIGINT",
}
_INT_BITS = {_DT.TINYINT: 8, _DT.SMALLINT: 16, _DT.INT: 32, _DT.BIGINT: 64}
_TYPE_NAMES = {
    **_INT_TYPES,
    _DT.FLOAT: "FLOAT",
    _DT.DOUBLE: "DOUBLE",
    _DT.BOOLEAN: "BOOLEAN",
    _DT.VARCHAR: "STRING",
    _DT.CHAR: "STRING",
    _DT.TEXT: "STRING",
    _DT.BINARY: "BINARY",
    _DT.VARBINARY: "BINARY",
    _DT.DATE: "DATE",
    _DT.TIMESTAMP: "TIMESTAMP",
    _DT.TIMESTAMPTZ: "TIMESTAMP",
    _DT.TIMESTAMPLTZ: "TIMESTAMP",
    _DT.DATETIME: "TIMESTAMP",
    _DT.TIMESTAMPNTZ: "TIMESTAMP_NTZ",
}


def parse_sql(text: str) -> ex.Predicate:
    """Parse one Spark SQL boolean expression (a WHERE clause without ``WHERE``).

    Raises ``PredicateError`` on a syntax error or on SQL outside the supported subset.
    """
    return _Parser(text).predicate(_parse(text))


def parse_expression(text: str) -> ex.Expr:
    """Parse one Spark SQL scalar expression (a SET value, a generated column's formula).

    Raises ``PredicateError`` on a syntax error or on SQL outside the supported subset.
    """
    return _Parser(text).expr(_parse(text))


def _parse(text: str) -> exp.Expression:
    if not isinstance(text, str):
        raise PredicateError(f"SQL must be text, not {type(text).__name__}")
    try:
        tree = cast(exp.Expression | None, sqlglot.parse_one(text, read="spark"))
    except sqlglot.errors.SqlglotError as exc:
        raise PredicateError(f"cannot parse SQL {text!r}: {exc}") from exc
    if tree is None:
        raise PredicateError(f"cannot parse SQL {text!r}: empty expression")
    return tree


class _Parser:
    """One parse: converts sqlglot nodes, naming ``text`` in every error."""

    def __init__(self, text: str) -> None:
        self.text = text

    def predicate(self, node: exp.Expression) -> ex.Predicate:
        node = _unparen(node)
        if isinstance(node, exp.And | exp.Or):
            return self._junction(node)
        if isinstance(node, exp.Not):
            return ex.Not(self.predicate(node.this))
        if type(node) in _COMPARISONS:
            return self._comparison(node, _COMPARISONS[type(node)])
        if isinstance(node, exp.NullSafeEQ):
            return self._null_safe_equal(node)
        if isinstance(node, exp.In):
            return self._in(node)
        if isinstance(node, exp.Is):
            if not isinstance(node.expression, exp.Null):
                raise self._unsupported(node, "only IS NULL / IS NOT NULL are supported")
            return ex.IsNull(self.expr(node.this))
        if isinstance(node, exp.Between):
            return self._between(node)
        if isinstance(node, exp.Like):
            return self._like(node)
        if isinstance(node, exp.Boolean):
            return ex.Compare("=", ex.Literal(bool(node.this)), ex.Literal(True))
        value = self.expr(node)
        if isinstance(value, ex.Predicate):
            return value
        if isinstance(value, ex.Column):
            return ex.Comparison("=", value, ex.Literal(True))
        return ex.Compare("=", value, ex.Literal(True))

    def _junction(self, node: exp.And | exp.Or) -> ex.Predicate:
        # Iterative: sqlglot nests long AND/OR chains one level per operand.
        kind = type(node)
        operands: list[ex.Predicate] = []
        stack: list[exp.Expression] = [node]
        while stack:
            current = _unparen(stack.pop())
            if type(current) is kind:
                stack.extend([current.expression, current.this])
            else:
                operands.append(self.predicate(current))
        return ex.and_(*operands) if kind is exp.And else ex.or_(*operands)

    def expr(self, node: exp.Expression) -> ex.Expr:
        node = _unparen(node)
        literal = self._literal_or_none(node)
        if literal is not None:
            return literal
        if isinstance(node, exp.Column):
            return self._column(node)
        if type(node) in _ARITHMETIC:
            op = _ARITHMETIC[type(node)]
            return ex.Arithmetic(op, self.expr(node.this), self.expr(node.expression))
        if isinstance(node, exp.Neg):
            return ex.Negate(self.expr(node.this))
        if type(node) in _FUNCTIONS:
            return self._function(node, _FUNCTIONS[type(node)])
        if isinstance(node, exp.Trim):
            return self._trim(node)
        if isinstance(node, exp.Case):
            return self._case(node)
        if isinstance(node, exp.If):
            default = node.args.get("false")
            return ex.Case(
                ((self.predicate(node.this), self.expr(node.args["true"])),),
                None if default is None else self.expr(default),
            )
        if isinstance(node, exp.Cast | exp.TryCast):
            return ex.Cast(self.expr(node.this), self._type_name(node.to, node))
        if isinstance(node, exp.TsOrDsToDate) and node.args.get("format") is None:
            return ex.Cast(self.expr(node.this), "DATE")  # to_date(x), YEAR(x)'s argument
        if isinstance(node, exp.Condition) and _is_predicate_node(node):
            return self.predicate(node)
        raise self._unsupported(node)

    # -------------------------------------------------------------------------- predicates

    def _comparison(self, node: exp.Expression, op: str) -> ex.Predicate:
        left, right = self.expr(node.this), self.expr(node.expression)
        if isinstance(left, ex.Column) and isinstance(right, ex.Literal):
            return ex.Comparison(op, left, right)
        if isinstance(right, ex.Column) and isinstance(left, ex.Literal):
            return ex.Comparison(ex.FLIPPED_OPS[op], right, left)
        return ex.Compare(op, left, right)

    def _null_safe_equal(self, node: exp.NullSafeEQ) -> ex.Predicate:
        """``a <=> b``: TRUE when both are NULL, FALSE when one is, else ``a = b``; never NULL."""
        left, right = self.expr(node.this), self.expr(node.expression)
        both_null = ex.and_(ex.IsNull(left), ex.IsNull(right))
        neither = ex.and_(ex.Not(ex.IsNull(left)), ex.Not(ex.IsNull(right)))
        return ex.or_(both_null, ex.and_(neither, self._equals(left, right)))

    def _in(self, node: exp.In) -> ex.Predicate:
        if node.args.get("query") is not None or node.args.get("unnest") is not None:
            raise self._unsupported(node, "IN takes a list of values, not a subquery")
        if node.args.get("field") is not None or not node.expressions:
            raise self._unsupported(node, "IN takes a non-empty list of values")
        target = self.expr(node.this)
        values = [self.expr(v) for v in node.expressions]
        literals = [v for v in values if isinstance(v, ex.Literal)]
        if len(literals) == len(values):
            return ex.In(target, tuple(literals))
        # x IN (a, b) is x = a OR x = b, exactly (three-valued logic included).
        return ex.or_(*(ex.Compare("=", target, v) for v in values))

    def _between(self, node: exp.Between) -> ex.Predicate:
        target = self.expr(node.this)
        low, high = self.expr(node.args["low"]), self.expr(node.args["high"])
        if isinstance(low, ex.Literal) and isinstance(high, ex.Literal):
            return ex.Between(target, low, high)
        return ex.and_(ex.Compare(">=", target, low), ex.Compare("<=", target, high))

    def _like(self, node: exp.Like) -> ex.Predicate:
        pattern = self._literal_or_none(_unparen(node.expression))
        if pattern is None or not isinstance(pattern.value, str):
            raise self._unsupported(node, "LIKE needs a string literal pattern")
        like = ex.Like(self.expr(node.this), pattern.value)
        return ex.Not(like) if node.args.get("negate") else like

    # -------------------------------------------------------------------------- scalars

    def _column(self, node: exp.Column) -> ex.Column:
        parts = [p.name for p in node.parts]
        if any(not isinstance(p, exp.Identifier) for p in node.parts):
            raise self._unsupported(node, "expected a column name")
        return ex.Column(".".join(parts))

    def _function(self, node: exp.Expression, name: str) -> ex.Expr:
        if name == "round":
            args = [node.this, *([node.args["decimals"]] if node.args.get("decimals") else [])]
        elif name == "substring":
            args = [node.this, node.args["start"]]
            if node.args.get("length") is not None:
                args.append(node.args["length"])
        elif name == "concat" and isinstance(node, exp.DPipe):
            args = [node.this, node.expression]
        elif isinstance(node, exp.Concat):
            args = list(node.expressions)
        else:
            args = [a for a in (node.this, node.args.get("expression")) if a is not None]
            args.extend(node.expressions)
        if name == "substring" and any(
            k in node.args and node.args[k] is not None for k in ("for", "from")
        ):
            raise self._unsupported(node)
        return ex.Call(name, tuple(self.expr(a) for a in args))

    def _trim(self, node: exp.Trim) -> ex.Expr:
        if node.args.get("expression") is not None or node.args.get("collation") is not None:
            raise self._unsupported(
                node, "TRIM removes spaces only; a character set is not supported"
            )
        position = (node.args.get("position") or "BOTH").upper()
        name = {"BOTH": "trim", "LEADING": "ltrim", "TRAILING": "rtrim"}[position]
        return ex.Call(name, (self.expr(node.this),))

    def _case(self, node: exp.Case) -> ex.Expr:
        subject = node.args.get("this")
        target = None if subject is None else self.expr(subject)
        branches: list[tuple[ex.Predicate, ex.Expr]] = []
        for branch in node.args.get("ifs") or []:
            if target is None:
                condition = self.predicate(branch.this)
            else:
                condition = self._equals(target, self.expr(branch.this))
            branches.append((condition, self.expr(branch.args["true"])))
        default = node.args.get("default")
        return ex.Case(tuple(branches), None if default is None else self.expr(default))

    def _equals(self, left: ex.Expr, right: ex.Expr) -> ex.Predicate:
        if isinstance(left, ex.Column) and isinstance(right, ex.Literal):
            return ex.Comparison("=", left, right)
        return ex.Compare("=", left, right)

    def _type_name(self, to: exp.DataType, node: exp.Expression) -> str:
        if to.this == _DT.DECIMAL:
            params = [int(p.this.this) for p in to.expressions] or [10, 0]
            return f"DECIMAL({params[0]}, {params[1] if len(params) > 1 else 0})"
        name = _TYPE_NAMES.get(to.this)
        if name is None:
            raise self._unsupported(node, f"unsupported CAST target {to.sql(dialect='spark')}")
        return name

    # -------------------------------------------------------------------------- literals

    def _literal_or_none(self, node: exp.Expression) -> ex.Literal | None:
        try:
            value = self._literal_value(node)
        except (ValueError, decimal.InvalidOperation, OverflowError) as exc:
            raise PredicateError(f"bad literal {node.sql()!r} in {self.text!r}: {exc}") from exc
        return None if value is _NOT_LITERAL else ex.Literal(value)

    def _literal_value(self, node: exp.Expression) -> Any:
        if isinstance(node, exp.Null):
            return None
        if isinstance(node, exp.Boolean):
            return bool(node.this)
        if isinstance(node, exp.Neg):
            value = self._literal_value(_unparen(node.this))
            if isinstance(value, int | float | decimal.Decimal) and not isinstance(value, bool):
                return value.copy_negate() if isinstance(value, decimal.Decimal) else -value
            return _NOT_LITERAL
        if isinstance(node, exp.Literal):
            return node.this if node.is_string else _number(node.this)
        if isinstance(node, exp.HexString):
            return bytes.fromhex(node.this)
        if isinstance(node, exp.Unhex) and isinstance(node.this, exp.Literal):
            return bytes.fromhex(node.this.this)
        if isinstance(node, exp.Cast | exp.TryCast) and isinstance(node.this, exp.Literal):
            # Text, or a number typed by a suffix (5L) or cast to a whole type: a literal.
            # A number cast to DECIMAL(p, s) may round: that stays a Cast node.
            to = node.to.this
            if to in _TYPE_NAMES and (node.this.is_string or to != _DT.BOOLEAN):
                return _typed_text(str(node.this.this), to)
            if to == _DT.DECIMAL and node.this.is_string and not node.to.expressions:
                return _typed_text(str(node.this.this), to)
        return _NOT_LITERAL

    def _unsupported(self, node: exp.Expression, why: str = "") -> PredicateError:
        detail = f": {why}" if why else ""
        return PredicateError(
            f"unsupported SQL {node.sql(dialect='spark')!r} ({type(node).__name__}) "
            f"in {self.text!r}{detail}"
        )


_NOT_LITERAL = object()


def _unparen(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


_PREDICATE_NODES: tuple[type[exp.Expression], ...] = (
    exp.And,
    exp.Or,
    exp.Not,
    exp.In,
    exp.Is,
    exp.Between,
    exp.Like,
    *_COMPARISONS,
)


def _is_predicate_node(node: exp.Expression) -> bool:
    return isinstance(node, _PREDICATE_NODES)


def _number(raw: str) -> int | float | decimal.Decimal:
    """As Spark types numbers: integers stay ints, ``1.5`` is an exact Decimal, ``1e3`` a
    float (a DOUBLE)."""
    if _INTEGER.fullmatch(raw):
        return int(raw)
    if "e" in raw.lower():
        return float(raw)
    return decimal.Decimal(raw)


def _typed_text(raw: str, to: object) -> Any:
    """``CAST('raw' AS to)`` / ``DATE 'raw'`` / ``TIMESTAMP 'raw'`` as a Python value."""
    if to == _DT.DATE:
        return dt.date.fromisoformat(raw.strip())
    if to in (_DT.TIMESTAMP, _DT.TIMESTAMPTZ, _DT.TIMESTAMPLTZ, _DT.TIMESTAMPNTZ, _DT.DATETIME):
        value = parse_timestamp(raw)
        if to == _DT.TIMESTAMPNTZ and value.tzinfo is not None:
            raise ValueError("a TIMESTAMP_NTZ literal must not carry a UTC offset")
        return value
    if to in _INT_TYPES:
        whole = int(raw.strip())
        bits = _INT_BITS[to]
        if not -(2 ** (bits - 1)) <= whole < 2 ** (bits - 1):
            # Spark's ANSI cast raises CAST_OVERFLOW; the value must not pass as a wider int.
            raise ValueError(f"{whole} is out of the range of {_INT_TYPES[to]}")
        return whole
    if to in (_DT.FLOAT, _DT.DOUBLE):
        return float(raw.strip())
    if to == _DT.DECIMAL:
        return decimal.Decimal(raw.strip())
    if to in (_DT.VARCHAR, _DT.CHAR, _DT.TEXT):
        return raw
    if to in (_DT.BINARY, _DT.VARBINARY):
        return raw.encode()
    if to == _DT.BOOLEAN and raw.strip().lower() in ("true", "false"):
        return raw.strip().lower() == "true"
    raise ValueError(f"{raw!r} is not a {getattr(to, 'name', to)} literal")
