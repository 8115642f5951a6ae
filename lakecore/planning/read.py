"""The one read path: file-index rows -> format reader -> deletes, residual, projection.

``read_files`` serves ``Snapshot.to_batches``/``to_arrow``, ``Scan.to_batches``/``to_arrow``
and Spark executors alike. Its inputs are picklable (a ``ScanContext``, an Arrow table of
planned file-index rows, column names, a bound residual predicate), so an executor calls it
on the rows shipped to it. The format plugin reads each row's data files (partition values,
column mapping, merge-on-read) and says which row positions are deleted; this module applies
those deletes, the residual filter and the projection, in one place for every format.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lakecore.errors import CorruptTableError
from lakecore.expr import tree as ex
from lakecore.expr.arrow_filter import to_arrow_filter
from lakecore.model import files as fi
from lakecore.model.schema import checked_columns
from lakecore.planning.tasks import FileRows, RowPositions, ScanContext

if TYPE_CHECKING:
    from lakecore.format import TableFormat

SLICE_ROWS = 256
"""File-index rows handed to the format per call: bounds the per-row state (deletes) held."""

STATS_COLUMNS = (fi.MIN, fi.MAX, fi.NULL_COUNT)
"""File-index columns no reader needs (planning only): left out when rows are shipped."""


def read_files(
    context: ScanContext,
    files: pa.Table,
    columns: Sequence[str] | None = None,
    residual: ex.Predicate | None = None,
    table_format: TableFormat | None = None,
) -> Iterator[pa.RecordBatch]:
    """Yield the live rows of ``files`` for which ``residual`` is TRUE, projected to ``columns``.

    ``files`` are rows of the snapshot's file index (any subset, stats columns optional); the
    format plugin named by ``context.format`` reads them (``table_format`` skips the plugin
    lookup). Batches come in file-index order; empty batches are dropped; every batch has the
    schema of ``columns`` (all columns of ``context.schema`` by default). Deleted positions
    (``TableFormat.deleted_positions``) never come back.

    Raises:
        SchemaError: a name of ``columns`` is not in ``context.schema`` (raised at the call).
        TypeError: ``columns`` is one string.
    """
    names = _checked(context.schema, columns)
    if table_format is None:
        from lakecore.plugins import disabled_plugins

        table_format = _format_named(context.format, disabled_plugins())
    return _read(table_format, context, files, names, residual)


def reading_columns(files: pa.Table) -> pa.Table:
    """``files`` without the stats columns: what a reader needs (shipped to executors)."""
    return files.drop_columns([c for c in STATS_COLUMNS if c in files.column_names])


@functools.lru_cache(maxsize=16)
def _format_named(name: str, disabled: frozenset[str]) -> TableFormat:
    """The registered format ``name`` (loading plugins once per process and setting)."""
    from lakecore.plugins import load_registry

    return load_registry(disabled).get(name)


def _checked(schema: pa.Schema, columns: Sequence[str] | None) -> list[str]:
    return list(schema.names) if columns is None else checked_columns(columns, schema)


def _read(
    table_format: TableFormat,
    context: ScanContext,
    files: pa.Table,
    names: list[str],
    residual: ex.Predicate | None,
) -> Iterator[pa.RecordBatch]:
    wanted = set(names) if residual is None else set(names) | set(ex.columns_of(residual))
    # Read in schema order (the residual's columns too, dropped after filtering).
    read = [n for n in context.schema.names if n in wanted]
    row_filter = None if residual is None else to_arrow_filter(residual, context.schema)
    for start in range(0, files.num_rows, SLICE_ROWS):
        part = files.slice(start, SLICE_ROWS)
        deleted = _deleted(table_format, context, part)
        covered: dict[int, int] = {}
        for rows in table_format.read_files(context, part, read):
            covered[rows.index] = max(covered.get(rows.index, 0), rows.offset + rows.batch.num_rows)
            batch = _live(rows, deleted)
            if row_filter is not None:
                batch = batch.filter(row_filter)
            if batch.num_rows:
                yield batch if read == names else batch.select(names)
        if deleted is not None:
            _check_covered(part, deleted, covered)


def _check_covered(
    files: pa.Table, deleted: list[RowPositions | None], covered: dict[int, int]
) -> None:
    """Raise ``CorruptTableError`` when a deleted position lies past a row's data."""
    for index, positions in enumerate(deleted):
        if positions is None or len(positions) == 0:
            continue
        highest, rows = int(np.max(positions)), covered.get(index, 0)
        if highest >= rows:
            path = files.column(fi.PATH)[index].as_py()
            raise CorruptTableError(
                f"the deletes of {path} name row {highest} but its data has only {rows} rows"
            )


def _deleted(
    table_format: TableFormat, context: ScanContext, files: pa.Table
) -> list[RowPositions | None] | None:
    """Deleted positions per row of ``files``; None when no row has deletes."""
    if fi.DELETION not in files.column_names:
        return None
    if files.column(fi.DELETION).null_count == files.num_rows:
        return None
    deleted = table_format.deleted_positions(context, files)
    if len(deleted) != files.num_rows:  # a plugin bug; never guess which rows are meant
        raise AssertionError(
            f"{context.format}.deleted_positions answered {len(deleted)} of {files.num_rows} rows"
        )
    return deleted


def _live(rows: FileRows, deleted: list[RowPositions | None] | None) -> pa.RecordBatch:
    """``rows.batch`` without the positions the format says are deleted."""
    positions = None if deleted is None else deleted[rows.index]
    batch = rows.batch
    if positions is None or len(positions) == 0 or batch.num_rows == 0:
        return batch
    positions = np.asarray(positions, dtype=np.int64)
    local = positions - rows.offset
    local = local[(local >= 0) & (local < batch.num_rows)]
    if local.size == 0:
        return batch
    keep = np.ones(batch.num_rows, dtype=bool)
    keep[local] = False
    return batch.filter(pa.array(keep))
