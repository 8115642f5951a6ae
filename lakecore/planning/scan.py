"""``Scan``: one planned read of a snapshot (predicate, columns) -> file-index rows -> rows.

Planning takes the snapshot's file index (``Snapshot.files()``) and prunes it in two
vectorised stages (partition values, then min/max/null-count stats; see ``pruning``). Reading
hands the surviving rows to the one read path (``lakecore.planning.read.read_files``: the
format's reader, its deleted positions, the residual filter, the projection), so only live
rows for which the whole predicate is TRUE come back. ``ScanTask``s describe the same rows
for users; nothing reads through them.

Data out: ``to_batches(batch_size=)`` streams (batches of at most ``batch_size`` rows, files
read one after another), ``__arrow_c_stream__`` hands that stream to any Arrow consumer
(``pyarrow.table(scan)``, polars, DuckDB), ``limit``/``head`` stop reading after n rows and
plan only the leading files the index says hold them, and ``count`` answers from the file
index where it is exact (``lakecore.planning.counting``).
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakecore.arguments import check_number
from lakecore.boundary import public_api
from lakecore.errors import StorageError, UnsupportedFeatureError
from lakecore.expr import tree as ex
from lakecore.expr.binding import Where, bind, parse_predicate
from lakecore.faults import storage_faults, typed_iteration
from lakecore.model import files as fi
from lakecore.model.schema import checked_columns
from lakecore.planning.bounds import FileBounds, Mask
from lakecore.planning.counting import limited, matching, needed_prefix, rechunked
from lakecore.planning.explain import ScanExplain
from lakecore.planning.index import planning_index
from lakecore.planning.pruning import may_be
from lakecore.planning.read import read_files, reading_columns
from lakecore.planning.tasks import ScanContext, ScanTask

if TYPE_CHECKING:
    import pandas as pd

    from lakecore.format import TableFormat
    from lakecore.snapshot import Snapshot


@dataclass(frozen=True, slots=True)
class PrunedFiles:
    """The result of pruning a file index: the kept rows and the count after each stage."""

    files: pa.Table
    files_total: int
    after_partitions: int
    bytes_total: int
    full_stats: bool = True
    """Whether ``files`` holds every column's stats (else only those planning needed)."""


DEFAULT_BATCH_SIZE = 131_072
"""Rows per batch of ``to_batches`` unless told (pyarrow datasets' default)."""


@public_api
class Scan:
    """A read of one snapshot restricted by a predicate and a column list.

    Construction parses and binds the predicate and checks the columns (``PredicateError``,
    ``SchemaError``) without reading anything; planning happens on first use and is cached.
    """

    def __init__(
        self,
        snapshot: Snapshot,
        where: Where | None = None,
        columns: Sequence[str] | None = None,
        table_format: TableFormat | None = None,
        *,
        limit: int | None = None,
    ) -> None:
        self.snapshot = snapshot
        self.predicate: ex.Predicate | None = (
            None if where is None else bind(parse_predicate(where), snapshot.schema)
        )
        self.columns: tuple[str, ...] | None = _checked_columns(columns, snapshot.schema)
        self._format = table_format
        self.limit_rows: int | None = None if limit is None else _checked_limit(limit)
        self._context: ScanContext | None = None
        self._pruned: PrunedFiles | None = None
        self._full: pa.Table | None = None

    def __repr__(self) -> str:
        limit = "" if self.limit_rows is None else f", limit={self.limit_rows}"
        return f"Scan(version={self.snapshot.version!r}, where={self.where_sql!r}{limit})"

    @property
    def where_sql(self) -> str | None:
        """The bound predicate as SQL text (None without a predicate)."""
        return None if self.predicate is None else str(self.predicate)

    @property
    def context(self) -> ScanContext:
        """The per-scan facts readers need (from the snapshot's source)."""
        if self._context is None:
            self._context = self.snapshot.source.scan_context()
        return self._context

    def files(self) -> pa.Table:
        """The file index rows the scan reads (a subset of ``snapshot.files()``, with all
        its columns; ``reading_files()`` is cheaper when the stats are not needed)."""
        pruned = self._prune()
        if pruned.full_stats:
            return pruned.files
        if self._full is None:
            what = f"planning a scan of version {self.snapshot.version}"
            with storage_faults(what, StorageError):
                self._full = prune(self.snapshot.files(), self.predicate, self.context).files
        return self._full

    def reading_files(self) -> pa.Table:
        """The rows of ``files()`` without the stats columns: what readers need (what
        ``lakecore.spark.read`` ships to executors).

        Planning converts only the stats of the predicate's columns where the format can
        (see ``lakecore.planning.index``), so this costs no stats parsing of other columns.
        """
        return reading_columns(self._prune().files)

    def tasks(self) -> list[ScanTask]:
        """One ``ScanTask`` per file-index row to read, in file-index order (a description
        of ``files()`` for users; reading goes through ``to_batches``)."""
        return build_tasks(self._prune().files, self.context, self.predicate)

    def to_batches(self, batch_size: int = DEFAULT_BATCH_SIZE) -> Iterator[pa.RecordBatch]:
        """Yield the matching rows (row-level deletes applied) in the output schema.

        Streams: files are read one after another (large files a row group at a time), and
        no batch has more than ``batch_size`` rows, so memory stays bounded whatever the
        table's size. With a ``limit``, reading stops once that many rows came back.

        Raises ``InvalidArgumentError`` for a ``batch_size`` that is not a positive integer
        (at the call), ``StorageError`` (while iterating) when the storage fails.
        """
        check_number("batch_size", batch_size, minimum=1, integral=True)
        what = f"reading the rows of version {self.snapshot.version}"
        with storage_faults(what, StorageError):
            files = self._prune().files
            rest = None
            if self.limit_rows is not None:
                found = matching(files, self.predicate, self.context.partition_columns)
                prefix = needed_prefix(found, self.limit_rows)
                files, rest = files.slice(0, prefix), files.slice(prefix)
            batches = self._read(files)
        if rest is not None and rest.num_rows:
            # The index's counts pick the prefix; should a file hold fewer live rows than they
            # say (a damaged deletion count), the files after it are read, only if reached.
            batches = itertools.chain(batches, self._read_later(rest))
        return limited(rechunked(typed_iteration(what, batches), batch_size), self.limit_rows)

    def _read(self, files: pa.Table) -> Iterator[pa.RecordBatch]:
        return read_files(
            self.context,
            reading_columns(files),
            self.columns,
            self.predicate,
            table_format=self._format,
        )

    def _read_later(self, files: pa.Table) -> Iterator[pa.RecordBatch]:
        yield from self._read(files)

    def to_arrow(self) -> pa.Table:
        """Return the matching rows (row-level deletes applied) as one Arrow table."""
        schema = self.snapshot.output_schema(self.columns)
        return pa.Table.from_batches(list(self.to_batches()), schema=schema)

    def to_reader(self, batch_size: int = DEFAULT_BATCH_SIZE) -> pa.RecordBatchReader:
        """The rows of ``to_batches(batch_size)`` as a ``pyarrow.RecordBatchReader`` (lazy)."""
        schema = self.snapshot.output_schema(self.columns)
        return pa.RecordBatchReader.from_batches(schema, self.to_batches(batch_size))

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """Export the rows as an Arrow C stream (the Arrow PyCapsule interface).

        ``pyarrow.table(scan)``, ``pyarrow.RecordBatchReader.from_stream(scan)``,
        ``polars.DataFrame(scan)`` and DuckDB read the scan through it, streaming batches of
        at most ``DEFAULT_BATCH_SIZE`` rows. ``requested_schema`` is passed to pyarrow,
        which casts to it when it can.
        """
        return self.to_reader().__arrow_c_stream__(requested_schema)

    def to_pandas(self) -> pd.DataFrame:
        """Return the matching rows as a pandas DataFrame.

        Raises ``UnsupportedFeatureError`` when pandas is not installed.
        """
        return _to_pandas(self.to_arrow())

    def with_limit(self, n: int) -> Scan:
        """This scan stopped after its first ``n`` rows (in file-index order).

        Only the leading files the file index says hold ``n`` matching rows are planned
        (all when it cannot tell, e.g. a predicate over data columns), and reading stops
        as soon as ``n`` rows came back. Raises ``InvalidArgumentError`` unless ``n`` is an
        integer >= 0.
        """
        limited_scan = copy.copy(self)
        limited_scan.limit_rows = _checked_limit(n)
        return limited_scan

    def head(self, n: int = 5) -> pa.Table:
        """Return the first ``n`` matching rows (reads only the files needed for them)."""
        return self.with_limit(n).to_arrow()

    def count(self) -> int:
        """Return the number of matching rows (row-level deletes applied; ``limit`` too).

        Answered from the file index (record counts minus deletion cardinalities) for the
        files the predicate matches whole: no predicate, or one over partition columns only,
        evaluated exactly on each file's partition values. Files whose counts are unknown
        (no stats, a Hudi slice with log files) and predicates over data columns are read,
        only the columns the predicate needs.

        Raises ``StorageError`` when the storage fails.
        """
        what = f"counting the rows of version {self.snapshot.version}"
        with storage_faults(what, StorageError):
            files = self._prune().files
            found = matching(files, self.predicate, self.context.partition_columns)
            total = int(found.live[found.counted].sum())
            if found.decided:
                # Files matching whole whose counts are unknown: read them, no filter needed.
                unknown = files.filter(pa.array(found.whole & ~found.counted))
                total += self._read_count(unknown, None)
            else:
                total += self._read_count(files, self.predicate)
        return total if self.limit_rows is None else min(total, self.limit_rows)

    def _read_count(self, files: pa.Table, residual: ex.Predicate | None) -> int:
        if files.num_rows == 0:
            return 0
        what = f"counting the rows of version {self.snapshot.version}"
        batches = read_files(
            self.context, reading_columns(files), [], residual, table_format=self._format
        )
        return sum(batch.num_rows for batch in typed_iteration(what, batches))

    def explain(self) -> ScanExplain:
        """Return how many files and bytes the scan reads, after each pruning stage."""
        pruned = self._prune()
        records = pruned.files.column(fi.RECORD_COUNT)
        return ScanExplain(
            format=self.snapshot.format,
            table_uri=self.context.table_uri,
            version=self.snapshot.version,
            predicate=self.where_sql,
            columns=self.columns,
            files_total=pruned.files_total,
            files_after_partition_pruning=pruned.after_partitions,
            files_after_stats_pruning=pruned.files.num_rows,
            bytes_total=pruned.bytes_total,
            bytes_to_read=_sum(pruned.files.column(fi.SIZE)),
            records_to_read=None if records.null_count else _sum(records),
        )

    def _prune(self) -> PrunedFiles:
        if self._pruned is None:
            what = f"planning a scan of version {self.snapshot.version}"
            with storage_faults(what, StorageError):
                index, full = planning_index(self.snapshot, self.predicate)
                pruned = prune(index, self.predicate, self.context)
                self._pruned = dataclasses.replace(pruned, full_stats=full)
        return self._pruned


def prune(files: pa.Table, predicate: ex.Predicate | None, context: ScanContext) -> PrunedFiles:
    """Keep the files of ``files`` that may hold rows matching ``predicate`` (bound).

    Stage 1 evaluates the predicate on partition values only, stage 2 on the survivors with
    the stats as well; each stage is a handful of Arrow kernels over the whole index.
    """
    total, total_bytes = files.num_rows, _sum(files.column(fi.SIZE))
    if predicate is None:
        return PrunedFiles(files, total, total, total_bytes)
    args = (context.schema, context.partition_columns, context.stats_precision)
    by_partition = _apply(files, may_be(predicate, True, FileBounds(files, *args, use_stats=False)))
    kept = _apply(by_partition, may_be(predicate, True, FileBounds(by_partition, *args)))
    return PrunedFiles(kept, total, by_partition.num_rows, total_bytes)


def _apply(files: pa.Table, mask: Mask) -> pa.Table:
    if mask is False:
        return files.slice(0, 0)
    if mask is True or pc.all(mask).as_py() is not False:
        return files  # nothing pruned: no copy
    return files.filter(mask)


def build_tasks(
    files: pa.Table, context: ScanContext, residual: ex.Predicate | None
) -> list[ScanTask]:
    """One ``ScanTask`` per row of ``files`` (a file index)."""
    n = files.num_rows
    paths = resolve_paths(files.column(fi.PATH), context.table_uri).to_pylist()
    sizes = files.column(fi.SIZE).to_pylist()
    counts = files.column(fi.RECORD_COUNT).to_pylist()
    partitions = _column_or(files, fi.PARTITION, {}, n)
    deletes = _column_or(files, fi.DELETION, None, n)
    data = _data_files(files, paths, context.table_uri)
    fmt, file_format = context.format, context.file_format
    return [
        ScanTask(path, fmt, file_format, size, count, part or {}, dv, residual, log)
        for path, size, count, part, dv, log in zip(
            paths, sizes, counts, partitions, deletes, data, strict=True
        )
    ]


def _data_files(files: pa.Table, paths: list[str], root: str) -> list[tuple[str, ...]]:
    """Full paths of each row's data files (``(path,)`` where ``data_files`` is null)."""
    if fi.DATA_FILES not in files.column_names:
        return [(p,) for p in paths]
    lists = files.column(fi.DATA_FILES).combine_chunks()
    flat = lists.flatten()
    full = resolve_paths(pa.chunked_array([flat], pa.string()), root).to_pylist()
    lengths = pc.fill_null(pc.list_value_length(lists), 0).to_numpy(zero_copy_only=False)
    ends = np.cumsum(lengths)
    return [
        tuple(full[end - length : end]) if length else (path,)
        for path, end, length in zip(paths, ends, lengths, strict=True)
    ]


def _column_or(files: pa.Table, name: str, default: Any, n: int) -> list[Any]:
    if name not in files.column_names or files.column(name).null_count == n:
        return [default] * n
    values: list[Any] = files.column(name).to_pylist()
    return values


def resolve_paths(paths: pa.ChunkedArray, root: str) -> pa.ChunkedArray:
    """Full paths: relative paths joined to ``root``; absolute paths and URIs kept."""
    absolute = pc.or_(
        pc.or_(pc.starts_with(paths, "/"), pc.match_substring(paths, "://")),
        pc.starts_with(paths, "file:"),
    )
    joined = pc.binary_join_element_wise(root.rstrip("/"), paths, "/")
    return pc.if_else(absolute, paths, joined)


def _checked_limit(n: int) -> int:
    check_number("n", n, minimum=0, integral=True)
    return int(n)


def _to_pandas(table: pa.Table) -> pd.DataFrame:
    """``table.to_pandas()``; ``UnsupportedFeatureError`` with a hint when pandas is missing."""
    try:
        import pandas  # noqa: F401
    except ImportError as exc:
        raise UnsupportedFeatureError(
            "pandas",
            "to_pandas needs pandas, which is not installed: pip install pandas, or "
            "pip install 'lakecore[pandas]'",
        ) from exc
    return table.to_pandas()


def _checked_columns(columns: Sequence[str] | None, schema: pa.Schema) -> tuple[str, ...] | None:
    return None if columns is None else tuple(checked_columns(columns, schema))


def _sum(values: pa.ChunkedArray) -> int:
    return int(pc.sum(values).as_py() or 0)
