"""Writing the files of a Lance commit: data files (pylance's ``LanceFileWriter``) and
deletion files (lakecore: Arrow IPC or roaring bitmap, as Lance chooses by size).

Every path returned is relative to the dataset root; what a transaction wrote is listed in
its staged change so that an abort can delete exactly those files.
"""

from __future__ import annotations

import contextlib
import os
import random
import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from pyroaring import BitMap

from lakecore.errors import ConstraintViolationError, SchemaError
from lakecore.model.schema import strip_metadata
from lakecore.storage import Storage
from lakecore_lance.deletions import deletion_path
from lakecore_lance.proto import file_pb2, table_pb2
from lakecore_lance.state import DATA_DIR
from lakecore_lance.write.fields import column_ids

MAX_ROWS_PER_FILE = 1024 * 1024
"""Rows per data file (one fragment each), pylance's ``max_rows_per_file`` default."""
BITMAP_THRESHOLD = 5_000
"""Lance writes a deletion set of this many rows or more as a roaring bitmap (``.bin``),
smaller ones as an Arrow IPC file (``BITMAP_THRESDHOLD`` in lance-table's deletion.rs)."""
WRITABLE_DATA_VERSIONS = {"2.0": (2, 0), "2.1": (2, 1), "2.2": (2, 2)}
"""Data storage versions whose files lakecore writes, and the file version each writes (2.0:
one column per field; 2.1+: one per leaf field; ``fields.column_ids``)."""


@dataclass(frozen=True, slots=True)
class WrittenFragments:
    """New fragments (ids unassigned: 0) and the files written for them."""

    fragments: tuple[bytes, ...]
    """Serialized ``DataFragment`` messages."""
    paths: tuple[str, ...]


def file_schema(schema: pa.Schema) -> pa.Schema:
    """The Arrow schema data files are written with: the table's, without lakecore's keys."""
    out = []
    for f in schema:
        meta = {k: v for k, v in (f.metadata or {}).items() if not k.startswith(b"lakecore.")}
        out.append(strip_metadata(pa.schema([f])).field(0).with_metadata(meta or None))
    return pa.schema(out)


def write_fragments(
    storage: Storage,
    fields: Sequence[file_pb2.Field],
    data_version: str,
    rows: pa.Table,
    max_rows: int = MAX_ROWS_PER_FILE,
    prefix: str = "",
) -> WrittenFragments:
    """Write ``rows`` (already conformed to the table schema) as new fragments of at most
    ``max_rows`` rows, one ``.lance`` data file each, in data storage version
    ``data_version`` (one of ``WRITABLE_DATA_VERSIONS``).

    Data file names are ``{prefix}{uuid}.lance`` (a distributed write's prefix lets it find
    its own files). Raises ``OSError`` from the storage; files written before a failure are
    listed nowhere and left to cleanup (none are visible).
    """
    major, minor = WRITABLE_DATA_VERSIONS[data_version]
    leaves = column_ids(fields, data_version)
    fragments: list[bytes] = []
    paths: list[str] = []
    try:
        for start in range(0, rows.num_rows, max_rows):
            chunk = rows.slice(start, max_rows)
            name = f"{prefix}{uuid.uuid4().hex}.lance"
            path = f"{DATA_DIR}/{name}"
            paths.append(path)  # before writing: a half-written file is removed too
            _write_file(storage, path, chunk, data_version)
            data_file = table_pb2.DataFile(
                path=name,
                fields=leaves,
                column_indices=list(range(len(leaves))),
                file_major_version=major,
                file_minor_version=minor,
                file_size_bytes=storage.head(path).size,
            )
            fragment = table_pb2.DataFragment(files=[data_file], physical_rows=chunk.num_rows)
            fragments.append(fragment.SerializeToString(deterministic=True))
    except BaseException:
        remove_quietly(storage, paths)
        raise
    return WrittenFragments(tuple(fragments), tuple(paths))


def remove_quietly(storage: Storage, paths: Sequence[str]) -> None:
    """Delete ``paths`` (files of a write that failed); a failure to delete is left to
    ``vacuum`` (the files are referenced by no version)."""
    for path in paths:
        with contextlib.suppress(OSError):
            storage.delete(path)


def _write_file(storage: Storage, path: str, rows: pa.Table, data_version: str) -> None:
    from lance.file import LanceFileWriter

    if getattr(storage, "is_local", False):
        local = storage.resolve(path)
        os.makedirs(os.path.dirname(local), exist_ok=True)
        _encode(LanceFileWriter, local, rows, data_version)
        return
    # Object stores: encode locally, then upload through lakecore's storage (and its options).
    with tempfile.TemporaryDirectory(prefix="lakecore-lance-") as tmp:
        local = os.path.join(tmp, "file.lance")
        _encode(LanceFileWriter, local, rows, data_version)
        with open(local, "rb") as f:
            storage.put(path, f.read())


def _encode(cls: type, local: str, rows: pa.Table, data_version: str) -> None:
    try:
        writer = cls(local, file_schema(rows.schema), version=data_version)
    except (OSError, ValueError, RuntimeError) as exc:
        # pylance checks the schema when the writer opens; what it refuses is a SchemaError
        # (a dataset whose manifest lakecore did not write may hold names Lance refuses).
        if "LanceError(Schema)" in str(exc):
            raise SchemaError(f"Lance cannot write these columns: {exc}") from exc
        raise
    try:
        for batch in rows.to_batches():
            writer.write_batch(batch)
        writer.close()
    except (OSError, ValueError) as exc:
        # The encoder refuses values its file version cannot hold (2.0: nulls in a struct).
        if "Invalid user input" in str(exc):
            raise ConstraintViolationError(
                f"Lance data storage version {data_version} cannot hold these rows: {exc}"
            ) from exc
        raise


def write_deletion_file(
    storage: Storage, fragment_id: int, read_version: int, positions: np.ndarray
) -> table_pb2.DeletionFile:
    """Write the deletion file of ``fragment_id`` holding the sorted, distinct row offsets
    ``positions`` (every deleted row of the fragment, old and new); returns its descriptor.

    Fewer than ``BITMAP_THRESHOLD`` rows: an Arrow IPC file with one non-null ``uint32``
    column ``row_id``; otherwise a serialized roaring bitmap.
    """
    count = len(positions)
    file_id = random.getrandbits(64)
    if count < BITMAP_THRESHOLD:
        kind = table_pb2.DeletionFile.ARROW_ARRAY
        column = pa.array(positions.astype(np.uint32), pa.uint32())
        schema = pa.schema([pa.field("row_id", pa.uint32(), nullable=False)])
        sink = pa.BufferOutputStream()
        with pa.ipc.new_file(sink, schema) as out:
            out.write_table(pa.table([column], schema=schema))
        data = sink.getvalue().to_pybytes()
    else:
        kind = table_pb2.DeletionFile.BITMAP
        data = BitMap(positions.astype(np.uint32)).serialize()
    deletion = table_pb2.DeletionFile(
        file_type=kind, read_version=read_version, id=file_id, num_deleted_rows=count
    )
    path = deletion_path(fragment_id, deletion)
    try:
        storage.put(path, data)
    except BaseException:
        remove_quietly(storage, [path])
        raise
    return deletion
