"""Lance deletion files and the file index's neutral ``deletion`` value.

A fragment has at most one deletion file, ``_deletions/{fragment}-{read_version}-{id}.{ext}``:

- ``.arrow`` (``ARROW_ARRAY``): an Arrow IPC file with one ``uint32`` column of deleted row
  offsets (small sets);
- ``.bin`` (``BITMAP``): a serialized 32-bit roaring bitmap of them (large sets).

The neutral ``deletion.descriptor`` lakecore's file index carries for a fragment is the
deletion file's path relative to the dataset root (UTF-8); its suffix says which form it is.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from pyroaring import BitMap

from lakecore.errors import CorruptTableError
from lakecore.planning.tasks import RowPositions
from lakecore.storage import Storage
from lakecore_lance.proto import table_pb2

DELETIONS_DIR = "_deletions"
SUFFIXES = {table_pb2.DeletionFile.ARROW_ARRAY: "arrow", table_pb2.DeletionFile.BITMAP: "bin"}


def deletion_path(fragment_id: int, deletion: table_pb2.DeletionFile) -> str:
    """The deletion file's path relative to the dataset root."""
    suffix = SUFFIXES.get(deletion.file_type)
    if suffix is None:
        raise CorruptTableError(
            f"fragment {fragment_id}: unknown deletion file type {deletion.file_type}"
        )
    return f"{DELETIONS_DIR}/{fragment_id}-{deletion.read_version}-{deletion.id}.{suffix}"


def read_deleted(storage: Storage, path: str) -> RowPositions:
    """The sorted, distinct deleted row offsets the deletion file ``path`` holds.

    Raises ``CorruptTableError`` naming the file when it is missing or malformed.
    """
    try:
        data = storage.read(path)
    except FileNotFoundError as exc:
        raise CorruptTableError(f"deletion file {path} is missing") from exc
    try:
        if path.endswith(".arrow"):
            positions = _arrow_positions(data)
        elif path.endswith(".bin"):
            positions = np.asarray(BitMap.deserialize(data).to_array(), dtype=np.uint64)
        else:
            raise CorruptTableError(f"deletion file {path} is neither .arrow nor .bin")
    except (pa.ArrowException, ValueError, OSError) as exc:
        raise CorruptTableError(f"deletion file {path} does not decode: {exc}") from exc
    return np.unique(positions)


def ensure_within(positions: RowPositions, rows: int, fragment: str) -> None:
    """Raise ``CorruptTableError`` naming ``fragment`` when a deleted offset is not below
    ``rows``, the rows its data holds: a writer merging such offsets with new ones would
    count them as deleted rows (and drop a fragment that still has live rows)."""
    if len(positions) and int(np.max(positions)) >= rows:
        raise CorruptTableError(
            f"the deletion file of {fragment} names row {int(np.max(positions))} but its "
            f"data has only {rows} rows"
        )


def _arrow_positions(data: bytes) -> RowPositions:
    reader = pa.ipc.open_file(pa.BufferReader(data))
    table = reader.read_all()
    if table.num_columns != 1 or not pa.types.is_integer(table.schema.field(0).type):
        raise CorruptTableError(
            f"an Arrow deletion file must hold one integer column: {table.schema}"
        )
    column = table.column(0)
    if column.null_count:
        raise CorruptTableError("an Arrow deletion file holds null row offsets")
    values = column.to_numpy()
    if values.size and int(values.min()) < 0:
        raise CorruptTableError("an Arrow deletion file holds negative row offsets")
    return np.asarray(values, dtype=np.uint64)
