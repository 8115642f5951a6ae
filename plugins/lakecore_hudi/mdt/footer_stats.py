"""Per-file column statistics from Parquet footers: the fallback when there is no metadata table.

Each data file's footer holds, per row group and leaf column, a null count and min/max. For
one file they combine into one (min, max, null count) per leaf column, keyed like the
metadata table's column names (nested struct leaves as ``"a.b"``), and then into the same
``min``/``max``/``null_count`` structs ``column_stats.read_column_stats`` returns, typed by the
table schema.

A statistic is kept only when it is sound for the whole file:

- a row group without statistics makes the column unknown; one without min/max makes the
  bounds unknown unless the row group is all null there;
- a NaN bound, or a max the writer flags as inexact (truncated), makes the bound unknown (an
  inexact min is still a lower bound and is kept);
- floating-point bounds from writers that leave NaN out of min/max are kept: lakecore's
  planner assumes a float column may hold NaN whatever its bounds say.

Pyarrow's Statistics already refuse the statistics Parquet writers are known to get wrong
(binary min/max from old parquet-mr, INT96 timestamps). Files that are not Parquet (Lance or
ORC base files) get a row of unknowns.

``lakecore.spark.written`` has a similar footer summary, but importing it imports pyspark and
formats Delta stats JSON; this module keeps the Hudi plugin free of both.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from lakecore.errors import CorruptTableError
from lakecore.model import files as fi
from lakecore.storage import Storage
from lakecore_hudi.mdt.column_stats import LeafStats, stats_structs

__all__ = ["FOOTER_READERS", "footer_stats", "summarize_footer"]

FOOTER_READERS = 8
"""Footers read at once (each is a few KB near the end of its file)."""


def footer_stats(storage: Storage, paths: Sequence[str], schema: pa.Schema) -> pa.Table:
    """Statistics of the data files ``paths`` from their Parquet footers, read in threads.

    Args:
        storage: Storage the paths are relative to (absolute URIs work too).
        paths: Data files; rows come back in this order.
        schema: The table schema: struct children follow it (lists and maps left out).

    Returns:
        Columns ``path`` (string), ``record_count`` (int64, the footer's row count) and
        ``min``, ``max``, ``null_count`` structs; unknown values are null. Non-Parquet files
        (by extension) get nulls throughout.

    Raises:
        CorruptTableError: a ``.parquet`` file has no readable footer (names the file).
        FileNotFoundError: a file does not exist.
    """
    with ThreadPoolExecutor(FOOTER_READERS) as pool:
        footers = list(pool.map(lambda p: _read_footer(storage, p), paths))
    rows = [summarize_footer(m) if m is not None else None for m in footers]
    table: dict[str, pa.Array] = {
        fi.PATH: pa.array(list(paths), pa.string()),
        fi.RECORD_COUNT: pa.array(
            [m.num_rows if m is not None else None for m in footers], pa.int64()
        ),
    }
    table.update(stats_structs(rows, schema))
    return pa.table(table)


def summarize_footer(metadata: pq.FileMetaData) -> dict[str, LeafStats]:
    """(min, max, null count) of every leaf column of a footer, over all its row groups.

    Keys are the leaves' dotted paths in the file (``"a.b"`` for field ``b`` of struct ``a``);
    values are Python values as pyarrow decodes them (None: unknown).
    """
    out: dict[str, LeafStats] = {}
    if metadata.num_row_groups == 0:
        return out
    first = metadata.row_group(0)
    for index in range(first.num_columns):
        path = first.column(index).path_in_schema
        out[path] = _summarize_leaf(metadata, index)
    return out


def _summarize_leaf(metadata: pq.FileMetaData, index: int) -> LeafStats:
    nulls: int | None = 0
    low: Any = None
    high: Any = None
    low_known = high_known = True
    for g in range(metadata.num_row_groups):
        chunk = metadata.row_group(g).column(index)
        stats = chunk.statistics
        if stats is None:
            return None, None, None
        count = stats.null_count if stats.has_null_count else None
        nulls = None if nulls is None or count is None else nulls + count
        if not stats.has_min_max:
            # Only a row group holding nothing but nulls may leave the bounds out.
            all_null = count is not None and count == chunk.num_values
            low_known = low_known and all_null
            high_known = high_known and all_null
            continue
        lo, hi = stats.min, stats.max
        if _is_nan(lo) or _is_nan(hi):
            low_known = high_known = False
            continue
        if getattr(stats, "is_max_value_exact", None) is False:
            high_known = False
        low, low_known = _combine(low, lo, min, low_known)
        high, high_known = _combine(high, hi, max, high_known)
    return (low if low_known else None, high if high_known else None, nulls)


def _combine(current: Any, value: Any, pick: Any, known: bool) -> tuple[Any, bool]:
    if not known:
        return None, False
    if current is None:
        return value, True
    try:
        return pick(current, value), True
    except TypeError:  # row groups disagree on the value's kind: give the bound up
        return None, False


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and value != value


def _read_footer(storage: Storage, path: str) -> pq.FileMetaData | None:
    if not path.lower().endswith(".parquet"):
        return None
    try:
        with storage.open_input(path) as f:
            return pq.ParquetFile(f).metadata
    except FileNotFoundError:
        raise
    except (pa.ArrowInvalid, OSError) as exc:
        raise CorruptTableError(f"{path}: not a readable Parquet file ({exc})") from exc
