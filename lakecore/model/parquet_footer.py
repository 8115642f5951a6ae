"""A Parquet footer's statistics of one leaf column, combined over all its row groups.

Every format that takes stats from footers (Spark-written Delta files, Hudi base files without
a metadata table) starts here; what a format may then keep (e.g. Delta's float rule) is the
format's business.

A statistic is kept only when it is sound for the whole file:

- a row group without statistics makes the column unknown; one without min/max makes the
  bounds unknown unless the row group is all null there;
- a NaN bound makes both bounds unknown; a max the writer flags as inexact (truncated) makes
  the max unknown (an inexact min is still a lower bound);
- row groups whose bounds are of different kinds (not comparable) give the bound up;
- a bound Python cannot hold (a date or timestamp after year 9999) is unknown.

String bounds that are not UTF-8 are a damaged file (``CorruptTableError``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow.parquet as pq

from lakecore.errors import CorruptTableError


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
    """Combine leaf column ``index``'s statistics of every row group of a footer; raises
    ``CorruptTableError`` as ``summarize_chunks``."""
    chunks = [metadata.row_group(g).column(index) for g in range(metadata.num_row_groups)]
    physical = metadata.schema.column(index).physical_type
    return LeafSummary(*summarize_chunks(chunks, physical=physical))


LOGICAL, RAW, UTF8 = 0, 1, 2
"""How ``summarize_chunks`` reads a leaf's bounds: pyarrow's logical ``min``/``max`` (each
builds both bounds as Arrow scalars, ~0.5 us), or the raw physical values (~0.06 us) for
leaves whose logical value is the raw one (``RAW``) or its UTF-8 text (``UTF8``)."""


def bounds_mode(column: pq.ColumnSchema) -> int:
    """The cheapest way to read ``column``'s bounds that gives what ``Statistics.min`` /
    ``max`` give: ``RAW`` for booleans, floats, doubles and signed 32/64-bit integers without
    another logical type, ``UTF8`` for strings, ``LOGICAL`` for everything else (decimals,
    dates, timestamps, unsigned and narrow integers: pyarrow converts those)."""
    physical = column.physical_type
    logical = column.logical_type
    kind = logical.type
    if physical in ("BOOLEAN", "FLOAT", "DOUBLE") and kind == "NONE":
        return RAW
    if physical in ("INT32", "INT64"):
        if kind == "NONE":
            return RAW
        if kind == "INT":
            spec = json.loads(logical.to_json())
            width = 32 if physical == "INT32" else 64
            return (
                RAW if spec.get("bitWidth") == width and spec.get("isSigned") is True else LOGICAL
            )
    if physical == "BYTE_ARRAY" and kind == "STRING":
        return UTF8
    return LOGICAL


def chunk_bounds(stats: pq.Statistics, mode: int) -> tuple[Any, Any]:
    """``(stats.min, stats.max)`` read as ``mode`` says (``stats`` must have min/max and be
    of a chunk ``check_chunk_type`` passed); a bound Python cannot hold (a date or timestamp
    after year 9999 or before year 1) is None (unknown). Raises ``CorruptTableError`` when
    string bounds are not UTF-8."""
    if mode == RAW:
        return stats.min_raw, stats.max_raw
    try:
        if mode == UTF8:
            return stats.min_raw.decode("utf-8"), stats.max_raw.decode("utf-8")
        return _logical(stats, True), _logical(stats, False)
    except UnicodeDecodeError as exc:
        raise CorruptTableError(f"string statistics that are not UTF-8 ({exc})") from exc


def _logical(stats: pq.Statistics, low: bool) -> Any:
    try:
        return stats.min if low else stats.max
    except UnicodeDecodeError:
        raise
    except (OverflowError, ValueError):  # e.g. datetime's years 1..9999: unknown, still sound
        return None


def summarize_chunk(
    chunk: pq.ColumnChunkMetaData, mode: int = LOGICAL, *, physical: str
) -> tuple[int | None, Any, Any]:
    """``summarize_chunks`` of a file of one row group (most files): the same rules, without
    the combining; raises as ``summarize_chunks``."""
    check_chunk_type(chunk, physical)
    stats = chunk.statistics
    if stats is None:
        return None, None, None
    count = stats.null_count if stats.has_null_count else None
    if not stats.has_min_max:  # bounds unknown, or none (all null): null either way
        return count, None, None
    lo, hi = chunk_bounds(stats, mode)
    if is_nan(lo) or is_nan(hi):
        return count, None, None
    if getattr(stats, "is_max_value_exact", None) is False:
        return count, lo, None
    return count, lo, hi


def summarize_chunks(
    chunks: Sequence[pq.ColumnChunkMetaData], mode: int = LOGICAL, *, physical: str
) -> tuple[int | None, Any, Any]:
    """``(null_count, min, max)`` of one leaf column from its chunk in every row group (as
    ``summarize_leaf``, as a plain tuple: a file index calls this once per file and leaf);
    ``mode`` must be the leaf's ``bounds_mode`` or ``LOGICAL``, ``physical`` the schema
    column's physical type. Raises ``CorruptTableError`` when a chunk's physical type is not
    ``physical`` (pyarrow aborts the process on such a chunk's statistics)."""
    if len(chunks) == 1:
        return summarize_chunk(chunks[0], mode, physical=physical)
    nulls: int | None = 0
    low: Any = None
    high: Any = None
    low_known = high_known = True
    for chunk in chunks:
        check_chunk_type(chunk, physical)
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
        lo, hi = chunk_bounds(stats, mode)
        if is_nan(lo) or is_nan(hi):
            low_known = high_known = False
            continue
        low_known = low_known and lo is not None
        high_known = high_known and hi is not None
        if getattr(stats, "is_max_value_exact", None) is False:
            high_known = False
        low, low_known = _combine(low, lo, min, low_known)
        high, high_known = _combine(high, hi, max, high_known)
    return nulls, low if low_known else None, high if high_known else None


def _combine(current: Any, value: Any, pick: Any, known: bool) -> tuple[Any, bool]:
    if not known:
        return None, False
    if current is None:
        return value, True
    try:
        return pick(current, value), True
    except TypeError:  # row groups disagree on the value's kind: give the bound up
        return None, False


def check_chunk_type(chunk: pq.ColumnChunkMetaData, physical: str) -> None:
    """Raise ``CorruptTableError`` when column chunk ``chunk``'s physical type is not
    ``physical`` (its schema column's). Must be called before ``chunk.statistics``: pyarrow
    answers that of a mistyped chunk with a C++ exception it does not catch (the process
    aborts)."""
    if chunk.physical_type != physical:
        raise CorruptTableError(
            f"column chunk {chunk.path_in_schema!r} is of physical type "
            f"{chunk.physical_type} where the file's schema says {physical}"
        )
