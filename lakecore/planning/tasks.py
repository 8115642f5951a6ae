"""What a planned scan hands to readers: the planned file-index rows plus one ``ScanContext``.

The context is plain picklable data and the rows are an Arrow table, so both can be shipped
to other processes (Spark executors) that read them with
``lakecore.planning.read_files(context, files, columns, residual)``. ``ScanTask`` is a
per-row description of the same rows for users (``Scan.tasks()``); nothing reads through it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from lakecore.expr.tree import Predicate

if TYPE_CHECKING:
    from lakecore.storage import Storage


@dataclass(frozen=True, slots=True)
class StatsPrecision:
    """How a format's writers degrade min/max statistics; the planner widens bounds to match.

    ``timestamp_truncation``: timestamp min/max were truncated (floored) to this precision, so
    a file's largest value may be up to this much above its max (Delta: 1 ms; the planner
    uses ``max + timestamp_truncation`` as the upper bound). ``string_prefix_length``: string
    min/max may have been cut to this many characters; a max at least that long is treated as
    a prefix (values may exceed it while starting with its first ``string_prefix_length``
    characters). A truncated min is a prefix of the true min, hence still a lower bound.
    """

    timestamp_truncation: dt.timedelta | None = None
    string_prefix_length: int | None = None


@dataclass(frozen=True, slots=True)
class ScanContext:
    """Per-scan facts every reader of a scan's rows shares (picklable, frozen).

    ``schema`` is the logical schema (field ids / physical names in field metadata);
    ``storage_options`` reopen the table's storage anywhere with ``open_storage`` (they may
    hold credentials: they are left out of ``repr``); ``file_format`` is the data files'
    encoding. ``state`` is the format's own per-scan reading state: a frozen, picklable
    object whose class the format plugin defines (``DeltaScanState``: column mapping mode;
    ``HudiScanState``: merge keys, ordering, visible instants, reading options). The core
    never looks inside it; a format must raise ``TypeError`` when given a state of another
    class.
    """

    format: str
    table_uri: str
    schema: pa.Schema
    partition_columns: tuple[str, ...] = ()
    file_format: str = "parquet"
    storage_options: dict[str, Any] = field(default_factory=dict, repr=False)
    stats_precision: StatsPrecision = field(default_factory=StatsPrecision)
    state: object = None
    storage: Storage | None = field(default=None, compare=False, repr=False)
    """The snapshot's own storage, in the process that planned the scan only (a storage
    the user passed in, with its wrappers, keeps serving in-process reads); never pickled."""

    def open_storage(self) -> Storage:
        """The storage to read the table's files from: the planning process's own, else a
        new one opened from ``table_uri`` and ``storage_options`` (in another process)."""
        if self.storage is not None:
            return self.storage
        from lakecore.storage import open_storage

        return open_storage(self.table_uri, self.storage_options)

    def __reduce__(self) -> tuple[type[ScanContext], tuple[object, ...]]:
        # The live storage stays behind: executors reopen the table from its URI.
        values = tuple(getattr(self, f.name) for f in fields(self) if f.name != "storage")
        return (type(self), values)


@dataclass(frozen=True, slots=True)
class ScanTask:
    """One data file to read, with everything needed to return exactly its live, matching rows.

    Attributes:
        path: full URI or absolute path of the file.
        format: table format (``"delta"``); file_format: the file's encoding (``"parquet"``).
        size: bytes; record_count: rows before row-level deletes (None if unknown).
        partition_values: logical partition column name -> Python value (None = null).
        deletes: the file index's neutral ``deletion`` value (``cardinality`` and the
            format's opaque ``descriptor``), None when nothing is deleted.
        residual: the row filter still to apply after reading (a bound expression tree; render
            it with ``str()``), None to keep every row.
        data_files: full paths of every data file of the row (the file index's
            ``data_files``: ``path`` first, then e.g. a Hudi slice's log files in merge order).
    """

    path: str
    format: str
    file_format: str
    size: int
    record_count: int | None
    partition_values: dict[str, Any]
    deletes: dict[str, Any] | None = None
    residual: Predicate | None = None
    data_files: tuple[str, ...] = ()


RowPositions = npt.NDArray[np.uint64]
"""Sorted, duplicate-free row positions (0-based) within one file-index row's data."""


@dataclass(frozen=True, slots=True)
class FileRows:
    """Rows a format read from one file-index row (``TableFormat.read_files`` yields these).

    ``index`` is the row's position in the file-index table given to ``read_files``;
    ``offset`` is the position, within that row's data, of ``batch``'s first row (so that
    ``deleted_positions`` apply: batch row ``i`` is position ``offset + i``). ``batch`` holds
    every row (deleted ones included) in position order, in the requested logical columns.
    """

    index: int
    offset: int
    batch: pa.RecordBatch
