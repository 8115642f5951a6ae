"""``pyarrow.compute.Expression`` -> ``lakecore.expr.tree`` tree.

pyarrow has no public API to walk an Expression, but it has a documented, typed serialized
form: pickling an Expression calls Arrow C++ ``compute::Serialize``, which writes an Arrow IPC
file whose schema metadata lists the tree in prefix order (``call``/``end`` pairs around the
arguments, ``field_ref`` names, ``literal`` and ``options`` indexes) and whose columns hold the
literal values and function options as typed scalars. The metadata has repeated keys, which
``pyarrow.Schema.metadata`` (a dict) would collapse, so the ordered pairs are read through the
Arrow C data interface (``__arrow_c_schema__``), whose layout is ABI-stable.

The conversion keeps pyarrow's semantics exactly: ``is_in`` (which never returns NULL for a
NULL input unless told to) becomes an ``IN`` guarded by ``IS [NOT] NULL``. Shapes outside the
supported set (casts, arithmetic, column-vs-column, nested fields, non-Kleene ``and_``/``or_``,
``is_null(nan_is_null=True)``, case-insensitive matching) raise ``PredicateError``.
"""

from __future__ import annotations

import ctypes
import struct
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import PredicateError
from lakecore.expr import tree as ex

_COMPARISONS = {
    "equal": "=",
    "not_equal": "!=",
    "less": "<",
    "less_equal": "<=",
    "greater": ">",
    "greater_equal": ">=",
}
_MATCH, _SKIP, _EMIT_NULL, _INCONCLUSIVE = range(4)
"""Arrow's SetLookupOptions::NullMatchingBehavior, in enum order."""


class _ArrowSchema(ctypes.Structure):
    """``struct ArrowSchema`` of the Arrow C data interface."""

    _fields_ = [
        ("format", ctypes.c_char_p),
        ("name", ctypes.c_char_p),
        ("metadata", ctypes.c_void_p),
        ("flags", ctypes.c_int64),
        ("n_children", ctypes.c_int64),
        ("children", ctypes.c_void_p),
        ("dictionary", ctypes.c_void_p),
        ("release", ctypes.c_void_p),
        ("private_data", ctypes.c_void_p),
    ]


@dataclass(frozen=True, slots=True)
class _Node:
    """One node of the serialized tree: a call, a field, a literal or an options scalar."""

    kind: str
    name: str = ""
    args: tuple[_Node, ...] = ()
    options: dict[str, Any] | None = None
    value: Any = None


def from_arrow(expr: pc.Expression) -> ex.Predicate:
    """Convert a pyarrow filter expression; raises ``PredicateError`` on unsupported shapes."""
    try:
        pairs, values = _serialized(expr)
    except (AttributeError, IndexError, TypeError, ValueError, pa.ArrowException) as exc:
        raise PredicateError(
            f"cannot inspect pyarrow expression {expr}: {exc}; pass SQL text instead"
        ) from exc
    node, end = _parse(pairs, 0, values, str(expr))
    if end != len(pairs):
        raise PredicateError(f"cannot read pyarrow expression {expr}: trailing items")
    return _predicate(node, str(expr))


def _serialized(expr: pc.Expression) -> tuple[list[tuple[str, str]], list[pa.Scalar]]:
    reduced = expr.__reduce__()
    buffer = reduced[1][0]
    reader = pa.ipc.open_file(buffer)
    table = reader.read_all()
    values = [column[0] for column in table.columns]
    return _metadata_pairs(reader.schema), values


def _metadata_pairs(schema: pa.Schema) -> list[tuple[str, str]]:
    """The schema's metadata as ordered (key, value) pairs, repeated keys kept."""
    capsule = schema.__arrow_c_schema__()
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    c_schema = _ArrowSchema.from_address(get_pointer(capsule, b"arrow_schema"))
    address = c_schema.metadata
    if not address:
        return []
    (count,) = struct.unpack("=i", ctypes.string_at(address, 4))
    address += 4
    pairs = []
    for _ in range(count):
        item = []
        for _ in range(2):
            (size,) = struct.unpack("=i", ctypes.string_at(address, 4))
            item.append(ctypes.string_at(address + 4, size).decode())
            address += 4 + size
        pairs.append((item[0], item[1]))
    return pairs


def _parse(
    pairs: list[tuple[str, str]], i: int, values: list[pa.Scalar], text: str
) -> tuple[_Node, int]:
    key, value = pairs[i]
    if key == "literal":
        return _Node("literal", value=values[int(value)]), i + 1
    if key == "field_ref":
        return _Node("field", name=value), i + 1
    if key == "nested_field_ref":
        raise PredicateError(f"nested field references are not supported in {text}")
    if key != "call":
        raise PredicateError(f"cannot read pyarrow expression {text}: unexpected {key!r}")
    args: list[_Node] = []
    options = None
    i += 1
    while pairs[i][0] != "end":
        if pairs[i][0] == "options":
            options = values[int(pairs[i][1])].as_py()
            i += 1
            continue
        arg, i = _parse(pairs, i, values, text)
        args.append(arg)
    return _Node("call", name=value, args=tuple(args), options=options), i + 1


def _predicate(node: _Node, text: str) -> ex.Predicate:
    if node.kind == "field":
        return ex.Comparison("=", ex.Column(node.name), ex.Literal(True))
    if node.kind != "call":
        raise PredicateError(f"a constant is not a supported predicate: {text}")
    name, args = node.name, node.args
    if name in ("and_kleene", "or_kleene"):
        parts = [_predicate(a, text) for a in args]
        return ex.and_(*parts) if name == "and_kleene" else ex.or_(*parts)
    if name == "invert":
        return ex.Not(_predicate(args[0], text))
    if name in _COMPARISONS:
        return _comparison(_COMPARISONS[name], args, text)
    if name == "is_in":
        return _is_in(args, node.options or {}, text)
    if name in ("is_null", "is_valid"):
        if (node.options or {}).get("nan_is_null"):
            raise PredicateError(f"is_null(nan_is_null=True) is not supported: {text}")
        pred = ex.IsNull(_column(args[0], text))
        return pred if name == "is_null" else ex.Not(pred)
    if name in ("match_like", "starts_with"):
        return _like(name, args, node.options or {}, text)
    hint = " (use & and | , which are Kleene)" if name in ("and", "or", "and_", "or_") else ""
    raise PredicateError(f"unsupported pyarrow function {name!r}{hint} in {text}")


def _column(node: _Node, text: str) -> ex.Column:
    if node.kind != "field":
        raise PredicateError(f"expected a field reference, got {node.kind} {node.name!r} in {text}")
    return ex.Column(node.name)


def _literal(node: _Node, text: str) -> ex.Literal:
    if node.kind != "literal":
        raise PredicateError(f"expected a literal, got {node.kind} {node.name!r} in {text}")
    return ex.Literal(scalar_value(node.value))


def scalar_value(scalar: pa.Scalar) -> Any:
    """A pyarrow scalar as a plain Python value (nanosecond timestamps must be whole µs)."""
    t = scalar.type
    if pa.types.is_timestamp(t) and t.unit == "ns" and scalar.is_valid:
        try:
            scalar = scalar.cast(pa.timestamp("us", t.tz), safe=True)
        except pa.ArrowInvalid as exc:
            raise PredicateError(f"nanosecond literal {scalar} is not supported") from exc
    return scalar.as_py()


def _comparison(op: str, args: tuple[_Node, ...], text: str) -> ex.Predicate:
    left, right = args
    if left.kind == "field" and right.kind == "literal":
        return ex.Comparison(op, _column(left, text), _literal(right, text))
    if right.kind == "field" and left.kind == "literal":
        return ex.Comparison(ex.FLIPPED_OPS[op], _column(right, text), _literal(left, text))
    raise PredicateError(f"a comparison needs one field and one literal: {text}")


def _is_in(args: tuple[_Node, ...], options: dict[str, Any], text: str) -> ex.Predicate:
    column = _column(args[0], text)
    raw = list(options.get("value_set") or [])
    behavior = options.get("null_matching_behavior", _SKIP if options.get("skip_nulls") else 0)
    values = tuple(ex.Literal(v) for v in raw if v is not None)
    has_null = len(values) < len(raw)
    if behavior == _INCONCLUSIVE:
        return ex.In(column, tuple(ex.Literal(v) for v in raw))
    in_values = ex.In(column, values)
    if behavior == _EMIT_NULL:
        return in_values
    if behavior == _MATCH and has_null:
        return ex.or_(ex.IsNull(column), in_values)
    # MATCH without nulls in the set, SKIP: a NULL input gives FALSE, never NULL.
    return ex.and_(ex.Not(ex.IsNull(column)), in_values)


def _like(name: str, args: tuple[_Node, ...], options: dict[str, Any], text: str) -> ex.Predicate:
    if options.get("ignore_case"):
        raise PredicateError(f"case-insensitive matching is not supported: {text}")
    pattern = str(options.get("pattern", ""))
    if name == "starts_with":
        pattern = escape_like(pattern) + "%"
    return ex.Like(_column(args[0], text), pattern)


def escape_like(text: str) -> str:
    """``text`` as a LIKE pattern matching exactly itself."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
