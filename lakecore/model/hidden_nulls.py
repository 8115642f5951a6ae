"""Values hidden under null structs, made writable for non-nullable children.

A null struct row says nothing about its children, but Arrow still holds a child slot for it,
and readers (Delta's, Spark's) often leave that slot null even when the child field is
declared non-nullable (a Delta ``variant`` is ``struct<metadata: binary NOT NULL, value:
binary NOT NULL>``). pyarrow's Parquet writer refuses such a child ("declared non-nullable but
contains nulls") although the slot is invisible. Filling those hidden slots with a neutral
value (empty bytes, zero, false) changes no visible value.
"""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["fill_hidden_nulls"]


def fill_hidden_nulls(table: pa.Table) -> pa.Table:
    """``table`` with the null slots of non-nullable struct children under null parents
    filled; a table without such slots comes back as it is.

    A null child under a VALID parent stays (it is a real violation the writer must report).
    """
    if not any(_has_struct(f.type) for f in table.schema):
        return table
    columns = []
    for column in table.columns:
        if _has_struct(column.type):
            column = pa.chunked_array([_fix(c) for c in column.chunks], column.type)
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=table.schema)


def _has_struct(t: pa.DataType) -> bool:
    if pa.types.is_struct(t):
        return True
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _has_struct(t.value_type)
    if pa.types.is_map(t):
        return _has_struct(t.item_type)
    return False


def _fix(array: pa.Array, hidden: pa.Array | None = None) -> pa.Array:
    """``array`` with the invisible null slots of non-nullable struct children filled;
    ``hidden`` marks the slots an ancestor's null already hides."""
    if isinstance(array, pa.StructArray):
        return _fix_struct(array, hidden)
    if isinstance(array, pa.MapArray):
        items = _fix(array.items)
        if items is array.items:
            return array
        return pa.MapArray.from_arrays(
            array.offsets, array.keys, items, type=array.type, mask=array.is_null()
        )
    if isinstance(array, (pa.ListArray, pa.LargeListArray)):
        values = _fix(array.values)
        if values is array.values:
            return array
        return type(array).from_arrays(array.offsets, values, type=array.type, mask=array.is_null())
    return array


def _fix_struct(array: pa.StructArray, hidden: pa.Array | None) -> pa.Array:
    own_null = array.is_null()
    invisible = own_null if hidden is None else pc.or_(own_null, hidden)
    children = []
    changed = False
    for i, field in enumerate(array.type):
        before = array.field(i)
        child = _fix(before, invisible)
        changed = changed or child is not before
        if not field.nullable and child.null_count:
            default = _neutral(field.type)
            if default is not None:
                child = pc.if_else(pc.and_(invisible, child.is_null()), default, child)
                changed = True
        children.append(child)
    if not changed:
        return array
    return pa.StructArray.from_arrays(children, fields=list(array.type), mask=own_null)


def _neutral(t: pa.DataType) -> pa.Scalar | None:
    """A value of type ``t`` for an invisible slot; None for types left alone (nested)."""
    if pa.types.is_fixed_size_binary(t):
        return pa.scalar(b"\x00" * t.byte_width, t)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.scalar(b"", t)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.scalar("", t)
    if pa.types.is_boolean(t):
        return pa.scalar(False, t)
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return pa.scalar(0, t)
    if pa.types.is_decimal(t):
        return pa.scalar(Decimal(0), t)
    if pa.types.is_temporal(t):
        try:
            storage = pa.int32() if t.bit_width == 32 else pa.int64()
            return pa.array([0], storage).cast(t)[0]
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
    return None
