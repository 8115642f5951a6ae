"""Reading checkpoint Parquet files: whole, their first rows, or row group by row group."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.parquet as pq

from lakecore.errors import CorruptTableError
from lakecore.storage import Storage

T = TypeVar("T")

_FIRST_BATCH_ROWS = 65_536
_ROW_GROUP_THREADS = 4


def read_whole(storage: Storage, path: str) -> bytes:
    """The bytes of a checkpoint file; raises ``CorruptTableError`` when it is missing."""
    try:
        return storage.read(path)
    except FileNotFoundError as exc:
        raise CorruptTableError(f"{path}: checkpoint file is missing") from exc


def _source(storage: Storage, path: str) -> str | pa.Buffer:
    """A local file's path (memory-mapped by readers) or a remote file's bytes."""
    if getattr(storage, "is_local", False):
        if not storage.exists(path):
            raise CorruptTableError(f"{path}: checkpoint file is missing")
        return str(storage.resolve(path))
    return pa.py_buffer(read_whole(storage, path))


def _open(source: str | pa.Buffer) -> pq.ParquetFile:
    """A reader of its own over ``source`` (a reader must not be shared between threads).

    Local files are read, not memory-mapped: a file truncated in place by another program
    while it is mapped kills the process (SIGBUS) instead of raising an error.
    """
    if isinstance(source, str):
        return pq.ParquetFile(source)
    return pq.ParquetFile(pa.BufferReader(source))


def read_first_rows(storage: Storage, path: str, column: str) -> pa.Table:
    """The first batch of rows of ``column`` holding a non-null value (all rows if none).

    A checkpoint holds one ``metaData`` action among millions of file actions: decoding its
    dozen fields for every row costs more than the rest of the non-file actions together,
    and writers put it near the start.
    """
    source = _source(storage, path)
    try:
        pf = _open(source)
        if pf.schema_arrow.get_field_index(column) < 0:
            return pa.table({})
        for batch in pf.iter_batches(batch_size=_FIRST_BATCH_ROWS, columns=[column]):
            batch.validate(full=True)  # see read_parquet
            if batch.column(0).null_count < batch.num_rows:
                return pa.Table.from_batches([batch])
        return pa.table({})
    except (pa.ArrowInvalid, OSError) as exc:
        raise CorruptTableError(f"{path}: unreadable checkpoint parquet: {exc}") from exc


def read_parquet(storage: Storage, path: str, columns: Sequence[str]) -> pa.Table:
    """The ``columns`` of a checkpoint that it holds (``parent.child`` selects a struct's
    child, keeping the parent struct); raises ``CorruptTableError`` for an unreadable file."""
    return _read_table(_source(storage, path), path, columns)


def _read_table(source: str | pa.Buffer, path: str, columns: Sequence[str]) -> pa.Table:
    try:
        pf = _open(source)
        present = [c for c in columns if has_column(pf.schema_arrow, c)]
        if any("." in c for c in present):
            # Nested projection: ParquetFile.read keeps the parent struct and its validity
            # (read_table would flatten the selected children into top-level columns).
            table = pf.read(columns=present)
        else:
            # read_table decodes row groups in parallel; ParquetFile.read one at a time.
            table = pq.read_table(
                source if isinstance(source, str) else pa.BufferReader(source),
                columns=present,
            )
        # Parquet readers do not check that strings are UTF-8: a damaged page would surface as
        # a UnicodeDecodeError far from here. Full validation is fast and copies nothing.
        table.validate(full=True)
        return table
    except (pa.ArrowInvalid, OSError) as exc:
        raise CorruptTableError(f"{path}: unreadable checkpoint parquet: {exc}") from exc


def map_row_groups(
    storage: Storage, path: str, columns: Sequence[str], convert: Callable[[pa.Table], T]
) -> list[T]:
    """``convert`` of each row group's ``columns`` (as ``read_parquet`` reads them), in order.

    Row groups are read, validated and converted on parallel threads (Parquet decoding and
    Arrow kernels release the GIL): a checkpoint's add column is mostly one string column
    (the stats text), which a single reader decodes on one thread. ``convert`` must be
    thread-safe. Raises ``CorruptTableError`` for an unreadable file; what ``convert``
    raises propagates.
    """
    source = _source(storage, path)
    try:
        pf = _open(source)
        present = [c for c in columns if has_column(pf.schema_arrow, c)]
        groups = pf.num_row_groups
    except (pa.ArrowInvalid, OSError) as exc:
        raise CorruptTableError(f"{path}: unreadable checkpoint parquet: {exc}") from exc
    threads = max(1, min(_ROW_GROUP_THREADS, os.cpu_count() or 1, groups))
    if threads == 1:
        return [convert(_read_table(source, path, columns))]

    def one(index: int) -> T:
        try:
            table = _open(source).read_row_group(index, columns=present, use_threads=False)
            table.validate(full=True)  # see read_parquet
        except (pa.ArrowInvalid, OSError) as exc:
            raise CorruptTableError(f"{path}: unreadable checkpoint parquet: {exc}") from exc
        return convert(table)

    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(one, range(groups)))


def has_column(schema: pa.Schema, name: str) -> bool:
    """Whether ``schema`` holds ``name``: a top-level column, or ``parent.child`` of a struct."""
    parent, _, child = name.partition(".")
    index: int = schema.get_field_index(parent)
    if index < 0 or not child:
        return index >= 0
    t: Any = schema.field(index).type
    return bool(pa.types.is_struct(t)) and int(t.get_field_index(child)) >= 0
