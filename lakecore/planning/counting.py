"""Rows known from metadata: which planned files match a predicate whole, and how many rows.

``count()`` and ``head``/``limit`` use the file index instead of reading where the index is
exact: a file's live rows are ``record_count`` minus its deletion ``cardinality`` (both
known, non-null), and every live row of it matches when there is no predicate or when the
predicate reads partition columns only and evaluates TRUE on the file's partition values
(constant over the file, so the answer is exact for every row). Anything else (a predicate
over data columns, a null count, a Hudi slice with log files, whose ``record_count`` the
format leaves null because merging decides its rows) is read.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from lakecore.expr import tree as ex
from lakecore.model import files as fi

Flags = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class Matching:
    """Per planned file: does every live row match (``whole``), is the predicate decided by
    metadata at all (``decided``), and the live rows when known (``live``, -1 = unknown)."""

    whole: Flags
    decided: bool
    live: npt.NDArray[np.int64]

    @property
    def counted(self) -> Flags:
        """Files whose matching rows the index counts exactly."""
        result: Flags = self.whole & (self.live >= 0)
        return result


def matching(
    files: pa.Table, predicate: ex.Predicate | None, partition_columns: tuple[str, ...]
) -> Matching:
    """Decide, per row of ``files`` (a pruned file index), whether all its rows match.

    ``decided`` is False when the predicate touches a non-partition column (or the index has
    no partition values): then ``whole`` is all False and the files must be read. When it is
    True, a file that is not ``whole`` holds no matching row.
    """
    n = files.num_rows
    live = live_rows(files)
    if predicate is None:
        return Matching(np.ones(n, dtype=bool), True, live)
    names = ex.columns_of(predicate)
    if (
        not names
        or not set(names) <= set(partition_columns)
        or fi.PARTITION not in files.column_names
    ):
        return Matching(np.zeros(n, dtype=bool), False, live)
    from lakecore.expr.evaluate import evaluate_bound

    partition = files.column(fi.PARTITION)
    values = pa.table({name: pc.struct_field(partition, name) for name in names})
    truth = evaluate_bound(predicate, values)
    if pa.types.is_null(truth.type):  # unknown for every file: no row is TRUE
        return Matching(np.zeros(n, dtype=bool), True, live)
    whole = pc.fill_null(truth, False).to_numpy(zero_copy_only=False).astype(bool)
    return Matching(whole, True, live)


def live_rows(files: pa.Table) -> npt.NDArray[np.int64]:
    """Per row of ``files``: ``record_count`` minus deleted rows, -1 where either is unknown."""
    filled = pc.fill_null(files.column(fi.RECORD_COUNT), -1)
    counts: npt.NDArray[np.int64] = filled.to_numpy().astype(np.int64)
    if fi.DELETION not in files.column_names:
        return counts
    deletion = files.column(fi.DELETION)
    cardinality = pc.struct_field(deletion, fi.CARDINALITY)
    has_deletes = pc.is_valid(deletion).to_numpy(zero_copy_only=False).astype(bool)
    deleted = pc.fill_null(cardinality, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    unknown = (counts < 0) | (has_deletes & (deleted < 0))
    live = np.where(has_deletes, counts - deleted, counts)
    result: npt.NDArray[np.int64] = np.where(unknown, -1, live)
    return result


def needed_prefix(found: Matching, limit: int) -> int:
    """How many leading files can hold the first ``limit`` matching rows.

    The smallest ``k`` such that files ``0..k-1`` are known to hold at least ``limit``
    matching rows; all files when the index cannot tell.
    """
    if limit <= 0:
        return 0
    known = np.where(found.counted, found.live, 0)
    reached = np.nonzero(np.cumsum(known) >= limit)[0]
    return int(reached[0]) + 1 if reached.size else len(known)


def limited(batches: Iterator[pa.RecordBatch], limit: int | None) -> Iterator[pa.RecordBatch]:
    """``batches`` cut after ``limit`` rows in all (all when None); stops reading there."""
    if limit is None:
        yield from batches
        return
    left = limit
    try:
        if left <= 0:
            return  # not even the first batch: it could open a file
        for batch in batches:
            if left <= 0:
                break
            if batch.num_rows > left:
                batch = batch.slice(0, left)
            left -= batch.num_rows
            yield batch
            if left <= 0:
                break
    finally:
        close = getattr(batches, "close", None)
        if close is not None:
            close()  # stop the reader now (its read-ahead too), not at garbage collection


def rechunked(batches: Iterator[pa.RecordBatch], size: int) -> Iterator[pa.RecordBatch]:
    """``batches`` with every batch of more than ``size`` rows cut into slices (zero-copy)."""
    for batch in batches:
        if batch.num_rows <= size:
            yield batch
            continue
        for start in range(0, batch.num_rows, size):
            yield batch.slice(start, size)
