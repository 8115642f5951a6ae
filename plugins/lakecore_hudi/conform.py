"""Fitting rows to a schema: columns in schema order, missing ones null, types cast."""

from __future__ import annotations

import pyarrow as pa

from lakecore.errors import SchemaError
from lakecore.model.parquet_read import cast_column


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Return ``table`` with ``schema``'s columns (missing ones null, extra ones dropped).

    Columns are cast where their type differs (e.g. an older base file's ``int`` read as the
    table's ``long``); finer timestamps are truncated to the table's unit (see
    ``lakecore.model.parquet_read``).

    Raises:
        SchemaError: a column cannot be cast to the schema's type (it would lose data, or
            the types do not convert, e.g. a file's ``string`` under a table ``int``);
            names the column and both types.
    """
    arrays = []
    for field in schema:
        if field.name in table.column_names:
            column = table.column(field.name)
            try:
                arrays.append(cast_column(column, field.type))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
                raise SchemaError(
                    f"column {field.name!r} holds {column.type}, which does not read as the "
                    f"table's {field.type}: {exc}"
                ) from exc
        else:
            arrays.append(pa.chunked_array([pa.nulls(table.num_rows, field.type)]))
    return pa.Table.from_arrays(arrays, schema=schema)
