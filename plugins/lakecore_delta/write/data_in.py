"""Turning what users pass to append/overwrite into Arrow data that fits the table."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import ConstraintViolationError, SchemaError
from lakecore.model.data_input import cast_lossless
from lakecore.model.distinct_values import repeated
from lakecore.model.schema import has_not_null_inside


def conform_to_schema(data: pa.Table, schema: pa.Schema) -> pa.Table:
    """Return ``data`` with exactly the table's columns, types and nullability checked.

    Missing nullable columns become nulls. Raises ``SchemaError`` for unknown or duplicate
    columns and for values that do not convert losslessly (``is_lossless_cast``: text never
    becomes a number, a boolean never an integer, an integer that overflows is refused),
    ``ConstraintViolationError`` for nulls in NOT NULL columns (top level, inside structs,
    list elements and map values).

    The result's types are the table's with every field nullable: Arrow (and Parquet) would
    refuse a NOT NULL child holding the placeholder nulls under a null parent; the checks here
    are what enforce NOT NULL.
    """
    duplicates = repeated(data.column_names)
    if duplicates:
        raise SchemaError(f"column(s) {duplicates} appear more than once in the data")
    unknown = [c for c in data.column_names if schema.get_field_index(c) < 0]
    if unknown:
        raise SchemaError(
            f"column(s) {unknown} are not in the table schema {schema.names}; "
            "pass schema_mode='merge' to add them, or evolve the schema first "
            "(table.update_schema())"
        )
    columns = []
    for f in schema:
        target = relaxed_type(f.type)
        if data.schema.get_field_index(f.name) < 0:
            if not f.nullable:
                raise ConstraintViolationError(
                    f"NOT NULL column {f.name!r} is missing from the data"
                )
            columns.append(pa.nulls(data.num_rows, target))
            continue
        column = cast_lossless(data.column(f.name), target, f.name)
        for chunk in column.chunks:
            _check_not_null(chunk, f, f.name)
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=pa.schema([_nullable(f) for f in schema]))


def relaxed_type(t: pa.DataType) -> pa.DataType:
    """``t`` with every nested field nullable (names, metadata and leaf types kept)."""
    if pa.types.is_struct(t):
        return pa.struct([_nullable(t.field(i)) for i in range(t.num_fields)])
    if pa.types.is_large_list(t):
        return pa.large_list(_nullable(t.value_field))
    if pa.types.is_list(t):
        return pa.list_(_nullable(t.value_field))
    if pa.types.is_map(t):
        # Arrow map keys are never null; only the value may relax.
        return pa.map_(
            t.key_field.with_type(relaxed_type(t.key_type)),
            _nullable(t.item_field),
            keys_sorted=t.keys_sorted,
        )
    return t


def _nullable(f: pa.Field) -> pa.Field:
    # Arrow would refuse a non-nullable field with a chunked column; the check is ours.
    return f.with_type(relaxed_type(f.type)).with_nullable(True)


def _check_not_null(column: pa.Array, f: pa.Field, path: str) -> None:
    """``column`` holds the values of ``f`` (present values only, below the top level)."""
    if not f.nullable and column.null_count:
        raise ConstraintViolationError(
            f"NOT NULL column {path!r} has {column.null_count} null value(s)"
        )
    t = f.type
    if not has_not_null_inside(t):
        return
    if pa.types.is_struct(t):
        valid = pc.is_valid(column)
        for i in range(t.num_fields):
            child_field = t.field(i)
            child = pc.struct_field(column, [i]).filter(valid)
            _check_not_null(child, child_field, f"{path}.{child_field.name}")
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        _check_not_null(pc.list_flatten(column), t.value_field, f"{path}.element")
    elif pa.types.is_map(t):
        as_list = pa.ListArray.from_arrays(column.offsets, column.items, mask=column.is_null())
        _check_not_null(pc.list_flatten(as_list), t.item_field, f"{path}.value")
