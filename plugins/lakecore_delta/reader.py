"""Reading Delta data files into the logical schema: partition values, column mapping.

Scans stream: a file larger than ``SMALL_FILE_BYTES`` is read batch by batch
(``ParquetFile.iter_batches``, at most ``READ_BATCH_ROWS`` rows each, a row group at a time),
so a full read holds about one batch per column, not whole files. Small files are read whole
on a few threads, at most ``_WINDOW`` files ahead of the consumer (many small files on object
storage are latency-bound). Positions stay file positions: a batch's ``FileRows.offset`` is
its first row's index in the file, as deletion vectors number rows.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, BinaryIO, TypeVar

import pyarrow as pa

from lakecore.errors import CorruptTableError, SchemaError, StorageError
from lakecore.model import files as fi
from lakecore.model.parquet_read import open_parquet
from lakecore.planning.tasks import FileRows
from lakecore.storage import Storage
from lakecore_delta.conform import conform, find_source
from lakecore_delta.deletion_vectors import load_deletion_vector
from lakecore_delta.dv_bitmap import RowIndexes
from lakecore_delta.file_index import deletion_descriptor

T = TypeVar("T")
R = TypeVar("R")
_WORKERS = 8
_WINDOW = 2 * _WORKERS
READ_BATCH_ROWS = 131_072
"""Rows per batch when a file is streamed (pyarrow datasets' default batch size)."""
SMALL_FILE_BYTES = 1 << 20
"""Files up to this size (compressed bytes, the index's ``size``) are read whole, ahead of
the consumer on threads; larger ones (or of unknown size) are streamed batch by batch."""


def ordered_parallel_map(fn: Callable[[T], R], items: Iterable[T], window: int) -> Iterator[R]:
    """Map ``fn`` over ``items`` on threads, yielding in input order, at most ``window`` ahead."""
    with ThreadPoolExecutor(_WORKERS) as pool:
        pending = []
        for item in items:
            pending.append(pool.submit(fn, item))
            if len(pending) >= window:
                yield pending.pop(0).result()
        for fut in pending:
            yield fut.result()


class FileReader:
    """Reads data files of one snapshot into its logical schema."""

    def __init__(
        self,
        storage: Storage,
        schema: pa.Schema,
        partition_columns: Sequence[str],
        column_mapping_mode: str,
    ) -> None:
        self._storage = storage
        self._schema = schema
        self._partition_columns = set(partition_columns)
        self._by_id = column_mapping_mode == "id"

    def output_schema(self, columns: Sequence[str] | None) -> pa.Schema:
        """The schema of what ``read_files(..., columns)`` yields."""
        if columns is None:
            return self._schema
        return pa.schema([self._schema.field(c) for c in columns])

    def read_files(self, files: pa.Table, columns: Sequence[str] | None) -> Iterator[FileRows]:
        """Yield every row (deleted ones too) of each file of ``files``, in index order.

        ``files`` is a file index (``path``, ``partition`` and ``size`` are read). A file
        comes as one ``FileRows`` (small files) or several of at most ``READ_BATCH_ROWS``
        rows; ``FileRows.offset`` is the batch's first row in the file (as deletion vectors
        count rows). At most ``_WINDOW`` small files are read ahead; closing the iterator
        cancels reads not yet started.
        """
        out_schema = self.output_schema(columns)
        # Partition values stay Arrow scalars: Python cannot hold every value Arrow does
        # (a date of year 0).
        parts = files.column(fi.PARTITION) if fi.PARTITION in files.column_names else None
        entries = [
            {fi.PATH: path, fi.PARTITION: None if parts is None else parts[i]}
            for i, path in enumerate(files.column(fi.PATH).to_pylist())
        ]
        sizes = (
            files.column(fi.SIZE).to_pylist()
            if fi.SIZE in files.column_names
            else [None] * len(entries)
        )
        small = [size is not None and size <= SMALL_FILE_BYTES for size in sizes]
        pool = ThreadPoolExecutor(_WORKERS)
        ahead: dict[int, Future[pa.RecordBatch]] = {}
        submitted = 0
        try:
            for index, row in enumerate(entries):
                while submitted < len(entries) and submitted < index + _WINDOW:
                    if small[submitted]:
                        ahead[submitted] = pool.submit(
                            self.read_batch, entries[submitted], out_schema
                        )
                    submitted += 1
                if index in ahead:
                    yield FileRows(index, 0, ahead.pop(index).result())
                else:
                    yield from self._stream(index, row, out_schema)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _stream(
        self, index: int, row: Mapping[str, Any], out_schema: pa.Schema
    ) -> Iterator[FileRows]:
        """The rows of one file as ``FileRows`` of at most ``READ_BATCH_ROWS`` rows."""
        path = row[fi.PATH]
        data_fields = [f for f in out_schema if f.name not in self._partition_columns]
        with self._open(path) as source, _unreadable(path):
            pf = open_parquet(source)
            names = self._file_columns(pf, data_fields)
            offset = 0
            if not names:  # only partition values (or a count): row counts from the footer
                for group in range(pf.metadata.num_row_groups):
                    n = pf.metadata.row_group(group).num_rows
                    data = _empty_with_rows(n)
                    yield FileRows(index, offset, self._assemble(data, row, out_schema))
                    offset += n
                return
            for batch in pf.iter_batches(batch_size=READ_BATCH_ROWS, columns=names):
                yield FileRows(index, offset, self._assemble(batch, row, out_schema))
                offset += batch.num_rows

    def read_physical(
        self, row: dict[str, Any], out_schema: pa.Schema
    ) -> tuple[pa.RecordBatch, RowIndexes | None]:
        """Read every row of one file (deleted ones too) and its deleted row indexes.

        ``row`` is a file-index row (``path``, ``partition``, ``deletion``); the batch's row
        ``i`` is the file's row ``i``, as deletion vectors count them.
        """
        batch = self.read_batch(row, out_schema)
        descriptor = deletion_descriptor(row.get(fi.DELETION))
        if descriptor is None:
            return batch, None
        return batch, load_deletion_vector(descriptor, self._storage)

    def read_batch(self, row: Mapping[str, Any], out_schema: pa.Schema) -> pa.RecordBatch:
        """Every row of the file of index row ``row`` in ``out_schema`` (deletes not applied)."""
        path = row[fi.PATH]
        data_fields = [f for f in out_schema if f.name not in self._partition_columns]
        with self._open(path) as source, _unreadable(path):
            pf = open_parquet(source)
            names = self._file_columns(pf, data_fields)
            table = pf.read(columns=names) if names else _empty_with_rows(pf.metadata.num_rows)
        return self._assemble(table, row, out_schema)

    def _assemble(
        self, data: pa.Table | pa.RecordBatch, row: Mapping[str, Any], out_schema: pa.Schema
    ) -> pa.RecordBatch:
        """``data`` (file columns) as a batch of ``out_schema``: partition values filled in,
        physical columns mapped to logical fields, missing columns null."""
        n = data.num_rows
        columns = []
        partition = row.get(fi.PARTITION)
        file_fields = list(data.schema)
        for f in out_schema:
            if f.name in self._partition_columns:
                columns.append(_partition_column(partition, f, n))
                continue
            i = find_source(file_fields, f, self._by_id)
            if i < 0:
                columns.append(pa.nulls(n, f.type))
                continue
            values = data.column(i)
            if isinstance(values, pa.ChunkedArray):
                values = values.combine_chunks()
            try:
                columns.append(conform(values, file_fields[i], f, self._by_id))
            except SchemaError as exc:  # name the file: the column alone does not find it
                raise SchemaError(f"data file {row.get(fi.PATH)}: {exc}") from exc
        if not columns:
            return _no_columns(n)
        return pa.RecordBatch.from_arrays(columns, schema=out_schema)

    def _file_columns(self, pf: Any, fields: Sequence[pa.Field]) -> list[str]:
        """Names of the file's columns that hold ``fields`` (file order, each once)."""
        file_fields = list(pf.schema_arrow)
        wanted = sorted({i for f in fields if (i := find_source(file_fields, f, self._by_id)) >= 0})
        return [file_fields[i].name for i in wanted]

    def _open(self, path: str) -> BinaryIO:
        try:
            return self._storage.open_input(path)
        except FileNotFoundError as exc:
            raise CorruptTableError(
                f"data file {path} is in the table's log but missing from storage"
            ) from exc
        except OSError as exc:  # the store failed (timeout, access denied): not corruption
            raise StorageError(f"cannot open data file {path}: {exc}") from exc


@contextlib.contextmanager
def _unreadable(path: str) -> Iterator[None]:
    """Raise ``CorruptTableError`` naming ``path`` for a file that fails to decode."""
    try:
        yield
    except FileNotFoundError as exc:
        raise CorruptTableError(
            f"data file {path} is in the table's log but missing from storage"
        ) from exc
    except (pa.ArrowInvalid, OSError) as exc:
        raise CorruptTableError(f"data file {path} is not readable Parquet: {exc}") from exc


def _partition_column(partition: Any, f: pa.Field, n: int) -> pa.Array:
    """``n`` copies of partition column ``f``'s value in ``partition`` (a file-index row's
    ``partition``: an Arrow struct scalar, a dict or None; a missing value is null)."""
    if isinstance(partition, pa.StructScalar):
        if not partition.is_valid or f.name not in partition:
            return pa.nulls(n, f.type)
        values = pa.repeat(partition[f.name], n)
        return values if values.type == f.type else values.cast(f.type)
    return pa.array([(partition or {}).get(f.name)] * n, f.type)


def _empty_with_rows(n: int) -> pa.Table:
    """A table with ``n`` rows and no columns (a file whose columns are all partition values)."""
    return pa.table({"_": pa.nulls(n)}).select([])


def _no_columns(n: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({"_": pa.nulls(n)}).select([])
