"""Turning what users pass to append/overwrite into Arrow data that fits the table."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import ConstraintViolationError, SchemaError


def to_arrow_table(data: Any) -> pa.Table:
    """Accept a pyarrow Table/RecordBatch/RecordBatchReader, a pandas DataFrame, anything with
    ``__arrow_c_stream__``, or a dict of columns; raises ``SchemaError`` for anything else."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    if type(data).__module__.startswith("pandas"):
        return pa.Table.from_pandas(data, preserve_index=False)
    if hasattr(data, "__arrow_c_stream__") or isinstance(data, dict):
        return pa.table(data)
    raise SchemaError(f"cannot write {type(data).__name__}: pass Arrow data or a DataFrame")


def conform_to_schema(data: pa.Table, schema: pa.Schema) -> pa.Table:
    """Return ``data`` with exactly the table's columns, types and nullability checked.

    Missing nullable columns become nulls. Raises ``SchemaError`` for unknown columns or
    types that do not convert safely, ``ConstraintViolationError`` for nulls in NOT NULL
    columns (top level and inside structs).
    """
    unknown = [c for c in data.column_names if schema.get_field_index(c) < 0]
    if unknown:
        raise SchemaError(
            f"column(s) {unknown} are not in the table schema {schema.names}; "
            "evolve the schema first (table.update_schema())"
        )
    columns = []
    for f in schema:
        if data.schema.get_field_index(f.name) < 0:
            if not f.nullable:
                raise ConstraintViolationError(
                    f"NOT NULL column {f.name!r} is missing from the data"
                )
            columns.append(pa.nulls(data.num_rows, f.type))
            continue
        column = data.column(f.name)
        try:
            column = column.cast(f.type, safe=True) if column.type != f.type else column
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise SchemaError(
                f"column {f.name!r}: {column.type} does not convert to {f.type}: {exc}"
            ) from exc
        _check_not_null(column, f, f.name)
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=pa.schema([_nullable(f) for f in schema]))


def _nullable(f: pa.Field) -> pa.Field:
    # Arrow would refuse a non-nullable field with a chunked column; the check is ours.
    return f.with_nullable(True)


def _check_not_null(column: pa.ChunkedArray | pa.Array, f: pa.Field, path: str) -> None:
    if not f.nullable and column.null_count:
        raise ConstraintViolationError(
            f"NOT NULL column {path!r} has {column.null_count} null value(s)"
        )
    if pa.types.is_struct(f.type) and any(
        not c.nullable or pa.types.is_struct(c.type) for c in f.type
    ):
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        valid = pc.is_valid(column)
        for i in range(f.type.num_fields):
            child_field = f.type.field(i)
            child = pc.struct_field(column, [i]).filter(valid)
            _check_not_null(child, child_field, f"{path}.{child_field.name}")
