"""Record keys: the ``_hoodie_record_key`` meta column, or the key fields rendered as Hudi does.

Tables written without meta fields (``hoodie.populate.meta.fields=false``) have no key column;
the key is derived from ``hoodie.table.recordkey.fields`` the way Hudi's key generators render
it: one field -> its value as text; several -> ``field1:value1,field2:value2``. Null and empty
values render as ``__null__`` / ``__empty__``.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import SchemaError
from lakecore.model.java_floats import java_float_texts

RECORD_KEY = "_hoodie_record_key"
PARTITION_PATH = "_hoodie_partition_path"
COMMIT_TIME = "_hoodie_commit_time"
COMMIT_SEQNO = "_hoodie_commit_seqno"
FILE_NAME = "_hoodie_file_name"
META_FIELDS = (COMMIT_TIME, COMMIT_SEQNO, RECORD_KEY, PARTITION_PATH, FILE_NAME)
IS_DELETED = "_hoodie_is_deleted"
NULL_KEY = "__null__"
EMPTY_KEY = "__empty__"


def record_keys(table: pa.Table, key_fields: Sequence[str]) -> pa.ChunkedArray:
    """Return each row's record key as strings.

    Uses ``_hoodie_record_key`` when the table has it filled; otherwise renders ``key_fields``.
    Raises ``SchemaError`` when neither is available.
    """
    if RECORD_KEY in table.column_names:
        column = table.column(RECORD_KEY)
        if column.null_count == 0:
            return column.cast(pa.string())
    if not key_fields:
        raise SchemaError("the table has no _hoodie_record_key column and no record key fields")
    missing = [f for f in key_fields if f not in table.column_names]
    if missing:
        raise SchemaError(f"record key field(s) {missing} are not columns of the table")
    if len(key_fields) == 1:
        return _rendered(table.column(key_fields[0]))
    parts: list[pa.ChunkedArray | str] = []
    for i, name in enumerate(key_fields):
        parts.append(f"{name}:" if i == 0 else f",{name}:")
        parts.append(_rendered(table.column(name)))
    joined = pc.binary_join_element_wise(*_broadcast(parts, table.num_rows), "")
    return joined if isinstance(joined, pa.ChunkedArray) else pa.chunked_array([joined])


def _rendered(values: pa.ChunkedArray) -> pa.ChunkedArray:
    text = key_texts(values)
    text = pc.if_else(pc.equal(text, ""), pa.scalar(EMPTY_KEY), text)
    return pc.fill_null(text, NULL_KEY)


def key_texts(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """Values as Hudi's key generators render them in record keys and partition paths: the
    Avro value's Java ``toString()`` (timestamps as their Avro long value, floats as
    ``Double.toString``; null stays null). The writer names keys and the reader derives the
    keys of tables without meta fields with this one function, so the two always agree.

    Raises ``SchemaError`` for time-of-day and binary columns (no Java text to match).
    """
    t = column.type
    if pa.types.is_timestamp(t):
        unit = "ms" if t.unit == "ms" else "us"
        column = column.cast(pa.timestamp(unit, tz=t.tz)).cast(pa.int64())
    elif pa.types.is_floating(t):
        return java_float_texts(column)  # "1.0", "1.0E-7": Java's toString, not Arrow's "1"
    elif pa.types.is_time(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        raise SchemaError(f"columns of type {t} cannot be record key or partition columns")
    return column.cast(pa.string())


def _broadcast(parts: list[pa.ChunkedArray | str], n: int) -> list[pa.Array]:
    out: list[pa.Array] = []
    for p in parts:
        if isinstance(p, str):
            out.append(pa.array([p] * n, pa.string()))
        else:
            out.append(p.combine_chunks())
    return out
