"""What a planned scan hands to readers: one ``ScanTask`` per file plus one ``ScanContext``.

Both are plain picklable data, so a task list can be shipped to other processes (Spark
executors) that read it with ``lakecore.planning.read_tasks(context, tasks, columns)``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from lakecore.expr.tree import Predicate


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
    """Per-scan facts every task of a scan shares (picklable).

    ``schema`` is the logical schema (field ids / physical names in field metadata);
    ``options`` holds format-specific reading options (Delta: ``column_mapping_mode``);
    ``storage_options`` reopen the table's storage anywhere with ``open_storage`` (they may
    hold credentials: they are left out of ``repr``); ``file_format`` is the data files'
    encoding.
    """

    format: str
    table_uri: str
    schema: pa.Schema
    partition_columns: tuple[str, ...] = ()
    file_format: str = "parquet"
    storage_options: dict[str, Any] = field(default_factory=dict, repr=False)
    options: dict[str, str] = field(default_factory=dict)
    stats_precision: StatsPrecision = field(default_factory=StatsPrecision)


@dataclass(frozen=True, slots=True)
class ScanTask:
    """One data file to read, with everything needed to return exactly its live, matching rows.

    Attributes:
        path: full URI or absolute path of the file.
        format: table format (``"delta"``); file_format: the file's encoding (``"parquet"``).
        size: bytes; record_count: rows before row-level deletes (None if unknown).
        partition_values: logical partition column name -> Python value (None = null).
        deletes: format-specific row-level delete descriptor (Delta: the deletion vector
            descriptor of the file index's ``deletion`` column), None when nothing is deleted.
        residual: the row filter still to apply after reading (a bound expression tree; render
            it with ``str()``), None to keep every row.
        log_files: merge-on-read formats: full paths of the files whose records merge over
            ``path`` (Hudi log files), in merge order; empty otherwise.
    """

    path: str
    format: str
    file_format: str
    size: int
    record_count: int | None
    partition_values: dict[str, Any]
    deletes: dict[str, Any] | None = None
    residual: Predicate | None = None
    log_files: tuple[str, ...] = ()
