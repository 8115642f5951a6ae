"""Reading Delta data files into the logical schema: partition values, column mapping."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pyarrow as pa

from lakecore.errors import CorruptTableError, StorageError
from lakecore.model import files as fi
from lakecore.model.parquet_read import open_parquet
from lakecore.planning.tasks import FileRows
from lakecore.storage import Storage
from lakecore_delta.conform import conform, find_source
from lakecore_delta.deletion_vectors import RowIndexes, load_deletion_vector
from lakecore_delta.file_index import deletion_descriptor

T = TypeVar("T")
R = TypeVar("R")
_WORKERS = 8


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

        ``files`` is a file index (``path`` and ``partition`` are read); one ``FileRows`` per
        file, batch row ``i`` being the file's row ``i`` (as deletion vectors count them).
        """
        out_schema = self.output_schema(columns)
        rows = files.select([c for c in (fi.PATH, fi.PARTITION) if c in files.column_names])
        indexed = enumerate(rows.to_pylist())
        yield from ordered_parallel_map(
            lambda item: FileRows(item[0], 0, self.read_batch(item[1], out_schema)),
            indexed,
            window=2 * _WORKERS,
        )

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
        table = self._read_parquet(path, data_fields)
        n = table.num_rows
        columns = []
        partition = row.get(fi.PARTITION) or {}
        file_fields = list(table.schema)
        for f in out_schema:
            if f.name in self._partition_columns:
                columns.append(pa.array([partition.get(f.name)] * n, f.type))
                continue
            i = find_source(file_fields, f, self._by_id)
            if i < 0:
                columns.append(pa.nulls(n, f.type))
            else:
                columns.append(
                    conform(table.column(i).combine_chunks(), file_fields[i], f, self._by_id)
                )
        if not columns:
            return _no_columns(n)
        return pa.RecordBatch.from_arrays(columns, schema=out_schema)

    def _read_parquet(self, path: str, fields: Sequence[pa.Field]) -> pa.Table:
        try:
            source = self._storage.open_input(path)
        except FileNotFoundError as exc:
            raise CorruptTableError(
                f"data file {path} is in the table's log but missing from storage"
            ) from exc
        except OSError as exc:  # the store failed (timeout, access denied): not corruption
            raise StorageError(f"cannot open data file {path}: {exc}") from exc
        try:
            with source as f:
                pf = open_parquet(f)
                file_fields = list(pf.schema_arrow)
                wanted = sorted(
                    {i for f in fields if (i := find_source(file_fields, f, self._by_id)) >= 0}
                )
                if not wanted:
                    return _empty_with_rows(pf.metadata.num_rows)
                return pf.read(columns=[file_fields[i].name for i in wanted])
        except FileNotFoundError as exc:
            raise CorruptTableError(
                f"data file {path} is in the table's log but missing from storage"
            ) from exc
        except (pa.ArrowInvalid, OSError) as exc:
            raise CorruptTableError(f"data file {path} is not readable Parquet: {exc}") from exc


def _empty_with_rows(n: int) -> pa.Table:
    """A table with ``n`` rows and no columns (a file whose columns are all partition values)."""
    return pa.table({"_": pa.nulls(n)}).select([])


def _no_columns(n: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({"_": pa.nulls(n)}).select([])
