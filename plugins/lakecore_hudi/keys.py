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
    text = values.cast(pa.string())
    text = pc.if_else(pc.equal(text, ""), pa.scalar(EMPTY_KEY), text)
    return pc.fill_null(text, NULL_KEY)


def _broadcast(parts: list[pa.ChunkedArray | str], n: int) -> list[pa.Array]:
    out: list[pa.Array] = []
    for p in parts:
        if isinstance(p, str):
            out.append(pa.array([p] * n, pa.string()))
        else:
            out.append(p.combine_chunks())
    return out
