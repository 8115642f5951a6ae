"""Conforming data read from a Parquet file to the table's logical schema.

Handles column mapping (physical names or field ids, nested too), columns missing from older
files (nulls), case-insensitive names of pre-mapping Spark tables, and type changes the table
allows (type widening; timestamp units and INT96 as ``lakecore.model.parquet_read`` reads them).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import SchemaError
from lakecore.model.parquet_read import cast_column
from lakecore.model.schema import field_id, physical_name

PARQUET_FIELD_ID = b"PARQUET:field_id"


def find_source(fields: list[pa.Field], target: pa.Field, by_id: bool) -> int:
    """Return the index in ``fields`` of the file column that holds ``target``, or -1."""
    if by_id:
        fid = field_id(target)
        if fid is not None:
            for i, f in enumerate(fields):
                raw = (f.metadata or {}).get(PARQUET_FIELD_ID)
                if raw is not None and int(raw) == fid:
                    return i
    name = physical_name(target)
    for i, f in enumerate(fields):
        if f.name == name:
            return i
    lowered = name.lower()
    for i, f in enumerate(fields):
        if f.name.lower() == lowered:
            return i
    return -1


def conform(array: pa.Array, source: pa.Field, target: pa.Field, by_id: bool) -> pa.Array:
    """Return ``array`` (read as ``source``) shaped and typed as ``target``."""
    t = target.type
    try:
        if pa.types.is_struct(t) and pa.types.is_struct(array.type):
            return _conform_struct(array, t, by_id)
        if pa.types.is_map(t) and pa.types.is_map(array.type):
            keys = conform(array.keys, array.type.key_field, t.key_field, by_id)
            items = conform(array.items, array.type.item_field, t.item_field, by_id)
            return pa.MapArray.from_arrays(array.offsets, keys, items, mask=array.is_null())
        if (pa.types.is_list(t) or pa.types.is_large_list(t)) and pa.types.is_list(array.type):
            values = conform(array.values, array.type.value_field, t.value_field, by_id)
            out = pa.ListArray.from_arrays(array.offsets, values, mask=array.is_null())
            return out.cast(t) if out.type != t else out
        return cast_column(array, t)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise SchemaError(
            f"column {target.name!r}: file type {array.type} does not convert to {t}: {exc}"
        ) from exc


def _conform_struct(array: pa.StructArray, t: pa.StructType, by_id: bool) -> pa.Array:
    source_fields = [array.type.field(i) for i in range(array.type.num_fields)]
    children = []
    for target_child in t:
        i = find_source(source_fields, target_child, by_id)
        if i < 0:
            children.append(pa.nulls(len(array), target_child.type))
        else:
            child = pc.struct_field(array, [i])
            children.append(conform(child, source_fields[i], target_child, by_id))
    mask = array.is_null() if array.null_count else None
    return pa.StructArray.from_arrays(children, fields=list(t), mask=mask)
