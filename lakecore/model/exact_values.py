"""Footer values as values of a column's Arrow type, exactly or not at all.

A footer's min/max come as Python values of the file's logical type (pyarrow's ``Statistics``)
or raw physical values; a table's column may have another type (schema evolution, a narrower
or wider field). ``exact_value`` converts one value, ``exact_values`` a column of them with one
Arrow cast and compare; a value that a cast would round, overflow or reinterpret (another kind:
text as a number) becomes null ("unknown"), never a wrong bound.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

CAST_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError)
"""What casting a value to a column's Arrow type raises when it does not fit."""


def value_kind(t: pa.DataType) -> str:
    """The kind of values of type ``t`` (number, text, time, bytes, else the type itself): a
    value converts to a type of its own kind only."""
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "number"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "text"
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        return "time"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return "bytes"
    return str(t)


def _fits(value: int, t: pa.DataType) -> bool:
    """Whether the int64 ``value`` is a value of the integer type ``t``."""
    bits = t.bit_width
    if pa.types.is_signed_integer(t):
        return bool(-(1 << (bits - 1)) <= value < (1 << (bits - 1)))
    return bool(0 <= value < (1 << bits))


def exact_value(value: Any, t: pa.DataType) -> pa.Array:
    """``value`` as a one-element array of type ``t``, or a null when it does not convert
    exactly (a value of another kind, or one a cast would round or overflow)."""
    if value is None:
        return pa.nulls(1, t)
    # Fast paths for what footers mostly hold (a file index builds one value per column per
    # file: two casts and a compare each took ~30 us, most of a 400-file Hudi DML's planning);
    # they give what the general path gives. int64-range ints only: pyarrow infers larger
    # ones differently, and NaN (never equal to itself) stays with the general path.
    kind = type(value)
    if kind is int and pa.types.is_integer(t) and -(1 << 63) <= value < (1 << 63):
        return pa.array([value], t) if _fits(value, t) else pa.nulls(1, t)
    if kind is str and (pa.types.is_string(t) or pa.types.is_large_string(t)):
        return pa.array([value], t)
    if kind is float and pa.types.is_float64(t) and value == value:
        return pa.array([value], t)
    if kind is bool and pa.types.is_boolean(t):
        return pa.array([value], t)
    try:
        array = pa.array([value])
        if value_kind(array.type) != value_kind(t):
            return pa.nulls(1, t)
        cast = array.cast(t)
        if not pc.all(pc.equal(cast.cast(array.type), array)).as_py():
            return pa.nulls(1, t)
        return cast
    except CAST_ERRORS:
        return pa.nulls(1, t)


def exact_values(values: Sequence[Any], t: pa.DataType) -> pa.Array:
    """``values`` as an array of type ``t``: element ``i`` equals ``exact_value(values[i], t)``.

    Values are grouped by Python type and each group converted with one Arrow cast and one
    compare (a value that does not round-trip exactly becomes null); a group whose conversion
    raises (e.g. one value overflows ``t``) falls back to ``exact_value`` per value.
    """
    kinds = set(map(type, values))
    kinds.discard(type(None))
    if not kinds:
        return pa.nulls(len(values), t)
    if len(kinds) == 1:  # the usual column: one Python type, maybe with nulls
        [kind] = kinds
        return _exact_group(list(values), kind, t)
    groups: dict[type, list[int]] = {}
    for i, v in enumerate(values):
        if v is not None:
            groups.setdefault(type(v), []).append(i)
    positions: list[int] = [i for i, v in enumerate(values) if v is None]
    parts: list[pa.Array] = [pa.nulls(len(positions), t)]
    for kind, where in groups.items():
        positions.extend(where)
        parts.append(_exact_group([values[i] for i in where], kind, t))
    # Element j of the concatenation belongs at positions[j]: take by the inverse permutation.
    order = pc.sort_indices(pa.array(positions, pa.int64()))
    return pa.concat_arrays(parts).take(order)


def _exact_group(values: list[Any], kind: type, t: pa.DataType) -> pa.Array:
    """``exact_value`` of every element of ``values`` (each None or of Python type ``kind``)."""
    if kind is int and pa.types.is_integer(t):
        bits = t.bit_width
        lo, hi = (
            (-(1 << (bits - 1)), 1 << (bits - 1))
            if pa.types.is_signed_integer(t)
            else (0, 1 << bits)
        )
        if all(v is None or -(1 << 63) <= v < (1 << 63) for v in values):
            return pa.array([v if v is not None and lo <= v < hi else None for v in values], t)
    elif kind is str and (pa.types.is_string(t) or pa.types.is_large_string(t)):
        return pa.array(values, t)
    elif kind is float and pa.types.is_float64(t):
        array = pa.array(values, t)
        # NaN never equals itself: exact_value gives null.
        return pc.if_else(pc.is_nan(array), pa.nulls(len(array), t), array)
    elif kind is bool and pa.types.is_boolean(t):
        return pa.array(values, t)
    try:
        array = pa.array(values)
        if value_kind(array.type) != value_kind(t):
            return pa.nulls(len(values), t)
        cast = array.cast(t)
        same = pc.fill_null(pc.equal(cast.cast(array.type), array), False)
        return pc.if_else(same, cast, pa.nulls(len(values), t))
    except CAST_ERRORS:
        return pa.concat_arrays([exact_value(v, t) for v in values])
