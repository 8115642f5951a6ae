"""Early 2.0 data files whose fields do not start at consecutive columns.

A 2.x data file is a list of columns plus a footer; its embedded schema maps fields to columns
in order, which is how pylance's ``LanceFileReader`` reads a file on its own: field ``k``
starts at column ``k``, and a field stored in several columns (an early 2.0 string or binary:
a list column of offsets followed by its bytes column) takes the following ones too. Lance
0.13-era writers (file version 0.3) did store strings that way but numbered the next field's
column after both, and the manifest's ``DataFile.column_indices`` says where each field
really starts (``0, 1, 3, 5`` for int, string, binary, int). Lance's dataset reader follows
``column_indices``.

``shift_columns`` makes a copy of such a file in which field ``k`` of the file schema starts
at column ``k`` again: its column-metadata offset table lists the columns before ``k`` and
then those from the field's real first column on, and a new footer points at that table.
Data pages, column metadata and the schema are not touched. Reading one field per copy then
gives exactly the columns the manifest names.

Footer (little endian): u64 column-metadata start, u64 column-metadata offset table position,
u64 global-buffer offset table position, u32 global buffers, u32 columns, u16 major, u16
minor, ``LANC``; the offset tables are (u64 position, u64 size) pairs.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from lakecore.errors import CorruptTableError

FOOTER = struct.Struct("<QQQIIHH4s")
ENTRY = struct.Struct("<QQ")


def in_order(column_indices: Sequence[int]) -> bool:
    """Whether field ``k`` starts at column ``k`` (or the manifest gives no column indices)."""
    return not column_indices or list(column_indices) == list(range(len(column_indices)))


def shift_columns(data: bytes, field: int, first_column: int, path: str) -> bytes:
    """A copy of the 2.x file ``data`` whose field ``field`` starts at column ``field``.

    Raises ``CorruptTableError`` naming ``path`` when ``data`` is no 2.x file or
    ``first_column`` is not one of its columns.
    """
    if len(data) < FOOTER.size:
        raise CorruptTableError(f"data file {path} is too short for a Lance file")
    meta_start, cmo, gbo, buffers, columns, major, minor, magic = FOOTER.unpack(
        data[-FOOTER.size :]
    )
    if magic != b"LANC":
        raise CorruptTableError(f"data file {path} has no Lance footer")
    if not 0 <= field <= first_column < columns:
        raise CorruptTableError(
            f"data file {path} has {columns} columns; the manifest puts field {field} "
            f"at column {first_column}"
        )
    table = data[cmo : cmo + columns * ENTRY.size]
    if len(table) != columns * ENTRY.size:
        raise CorruptTableError(f"data file {path}: its column offset table is truncated")
    shifted = table[: field * ENTRY.size] + table[first_column * ENTRY.size :]
    body = data[: -FOOTER.size]
    count = len(shifted) // ENTRY.size
    footer = FOOTER.pack(meta_start, len(body), gbo, buffers, count, major, minor, magic)
    return body + shifted + footer
