"""A Parquet footer's statistics of one leaf column, combined over all its row groups.

Every format that takes stats from footers (Spark-written Delta files, Hudi base files without
a metadata table) starts here; what a format may then keep (e.g. Delta's float rule) is the
format's business.

A statistic is kept only when it is sound for the whole file:

- a row group without statistics makes the column unknown; one without min/max makes the
  bounds unknown unless the row group is all null there;
- a NaN bound makes both bounds unknown; a max the writer flags as inexact (truncated) makes
  the max unknown (an inexact min is still a lower bound);
- row groups whose bounds are of different kinds (not comparable) give the bound up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow.parquet as pq


@dataclass(frozen=True, slots=True)
class LeafSummary:
    """A leaf column's statistics over all row groups (None: unknown)."""

    null_count: int | None
    min: Any
    max: Any


def is_nan(value: Any) -> bool:
    """Whether ``value`` is a float NaN."""
    return isinstance(value, float) and value != value


def summarize_leaf(metadata: pq.FileMetaData, index: int) -> LeafSummary:
    """Combine leaf column ``index``'s statistics of every row group of a footer."""
    nulls: int | None = 0
    low: Any = None
    high: Any = None
    low_known = high_known = True
    for g in range(metadata.num_row_groups):
        chunk = metadata.row_group(g).column(index)
        stats = chunk.statistics
        if stats is None:
            return LeafSummary(None, None, None)
        count = stats.null_count if stats.has_null_count else None
        nulls = None if nulls is None or count is None else nulls + count
        if not stats.has_min_max:
            # Only a row group holding nothing but nulls may leave the bounds out.
            all_null = count is not None and count == chunk.num_values
            low_known = low_known and all_null
            high_known = high_known and all_null
            continue
        lo, hi = stats.min, stats.max
        if is_nan(lo) or is_nan(hi):
            low_known = high_known = False
            continue
        if getattr(stats, "is_max_value_exact", None) is False:
            high_known = False
        low, low_known = _combine(low, lo, min, low_known)
        high, high_known = _combine(high, hi, max, high_known)
    return LeafSummary(nulls, low if low_known else None, high if high_known else None)


def _combine(current: Any, value: Any, pick: Any, known: bool) -> tuple[Any, bool]:
    if not known:
        return None, False
    if current is None:
        return value, True
    try:
        return pick(current, value), True
    except TypeError:  # row groups disagree on the value's kind: give the bound up
        return None, False
