"""Rows coming into a Lance write, conformed to the dataset schema.

``conform`` turns user data (anything ``lakecore.model.data_input.to_arrow_table`` takes)
into rows of the dataset schema: columns by name, lossless casts only, missing nullable
columns as nulls. It raises ``SchemaError`` for unknown or missing columns and types that do
not convert, and ``ConstraintViolationError`` for nulls in a NOT NULL column, before anything
is written. ``typed_source`` casts a MERGE source's dataset columns the same way so that keys
join exactly. Both are pure.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from lakecore.errors import ConstraintViolationError, SchemaError
from lakecore.model.data_input import cast_lossless, to_arrow_table
from lakecore.model.schema import strip_metadata


def conform(data: Any, schema: pa.Schema) -> pa.Table:
    """``data`` as rows of ``schema`` (by name, lossless casts, missing nullable columns as
    nulls). Raises ``SchemaError`` (unknown or missing columns, types that do not convert)
    and ``ConstraintViolationError`` (nulls in a NOT NULL column)."""
    table = to_arrow_table(data)
    extra = [n for n in table.column_names if schema.get_field_index(n) < 0]
    if extra:
        raise SchemaError(f"columns {extra} are not in the dataset schema {schema.names}")
    target = strip_metadata(schema)
    columns = []
    for f in target:
        if f.name in table.column_names:
            column = cast_lossless(table.column(f.name), f.type, f.name)
        elif f.nullable:
            column = pa.nulls(table.num_rows, f.type)
        else:
            raise SchemaError(f"the data has no column {f.name!r}, which is NOT NULL")
        if not f.nullable and column.null_count:
            raise ConstraintViolationError(f"column {f.name!r} is NOT NULL; the data has nulls")
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=target)


def typed_source(source: pa.Table, schema: pa.Schema) -> pa.Table:
    """The merge source with the dataset's columns in the dataset's types (lossless casts, so
    keys join exactly); other columns are kept for the SQL."""
    for i, name in enumerate(source.column_names):
        j = schema.get_field_index(name)
        if j >= 0:
            target = strip_metadata(schema).field(j).type
            source = source.set_column(i, name, cast_lossless(source.column(i), target, name))
    return source
