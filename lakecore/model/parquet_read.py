"""Reading data-file columns as the table's types: INT96 timestamps and timestamp units.

Every format plugin that reads Parquet data files opens them with :func:`open_parquet` and casts
file columns to the table's types with :func:`cast_column`, so both rules below hold for all
formats alike.

- Spark, Hive and Impala may write timestamps as Parquet INT96. pyarrow decodes INT96 to
  nanoseconds by default, which silently wraps for years before 1677 or after 2262 (a
  ``0001-01-01`` comes back as ``1754-08-30``). Table timestamps are microseconds, so INT96 is
  decoded to microseconds, which holds every year from 0001 to 9999.
- A file may hold a finer unit than the table (``TIMESTAMP(NANOS)`` written by pyarrow or
  pandas under a microsecond table). Such values are truncated toward zero to the table's unit
  (as delta-rs reads them) instead of failing the read with "would lose data".
"""

from __future__ import annotations

from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

__all__ = ["INT96_UNIT", "cast_column", "open_parquet"]

INT96_UNIT = "us"
"""The unit INT96 timestamps are decoded to: the table unit, with the range of years 1-9999."""

_UNIT_RANK = {"s": 0, "ms": 1, "us": 2, "ns": 3}

A = TypeVar("A", pa.Array, pa.ChunkedArray)


def open_parquet(source: Any) -> pq.ParquetFile:
    """Open a Parquet data file (a path or a file object) for reading table columns.

    INT96 columns are read as ``timestamp[us]``. Raises what ``pyarrow.parquet.ParquetFile``
    raises (``ArrowInvalid``/``OSError`` for a file that is not Parquet).
    """
    return pq.ParquetFile(source, coerce_int96_timestamp_unit=INT96_UNIT)


def cast_column(values: A, target: pa.DataType) -> A:
    """Return ``values`` cast to ``target``, a table type.

    Timestamps of a finer unit than ``target`` (also inside structs, lists and maps) are
    truncated toward zero; every other cast is a safe Arrow cast and raises
    ``pyarrow.ArrowInvalid`` when it would lose data or overflow.
    """
    if values.type == target:
        return values
    if not _narrows_timestamps(values.type, target):
        return values.cast(target)
    if isinstance(values, pa.ChunkedArray):
        return pa.chunked_array([_narrow(c, target) for c in values.chunks], target)
    return _narrow(values, target)


def _narrows_timestamps(source: pa.DataType, target: pa.DataType) -> bool:
    if pa.types.is_timestamp(source) and pa.types.is_timestamp(target):
        return _UNIT_RANK[source.unit] > _UNIT_RANK[target.unit]
    if pa.types.is_struct(source) and pa.types.is_struct(target):
        return any(
            _narrows_timestamps(source.field(f.name).type, f.type)
            for f in target
            if source.get_field_index(f.name) >= 0
        )
    if pa.types.is_map(source) and pa.types.is_map(target):
        return _narrows_timestamps(source.key_type, target.key_type) or _narrows_timestamps(
            source.item_type, target.item_type
        )
    if _is_list(source) and _is_list(target):
        return _narrows_timestamps(source.value_type, target.value_type)
    return False


def _is_list(t: pa.DataType) -> bool:
    return bool(pa.types.is_list(t) or pa.types.is_large_list(t))


def _narrow(array: pa.Array, target: pa.DataType) -> pa.Array:
    """Cast ``array`` whose timestamps (somewhere) are finer than ``target``'s."""
    if array.offset and not pa.types.is_timestamp(target):
        array = pa.concat_arrays([array])  # rebuilt from offsets and a mask: no slice offset
    mask = array.is_null() if array.null_count else None
    if pa.types.is_timestamp(target):
        # Dividing by a power of ten cannot overflow: the unsafe cast only drops digits.
        return pc.cast(array, target, safe=False)
    if pa.types.is_struct(target):
        children = [
            cast_column(pc.struct_field(array, f.name), f.type)
            if array.type.get_field_index(f.name) >= 0
            else pa.nulls(len(array), f.type)
            for f in target
        ]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if pa.types.is_map(target):
        keys = cast_column(array.keys, target.key_type)
        items = cast_column(array.items, target.item_type)
        return pa.MapArray.from_arrays(array.offsets, keys, items, type=target, mask=mask)
    values = cast_column(array.values, target.value_type)
    cls = pa.LargeListArray if pa.types.is_large_list(array.type) else pa.ListArray
    out = cls.from_arrays(array.offsets, values, mask=mask)
    return out.cast(target) if out.type != target else out
