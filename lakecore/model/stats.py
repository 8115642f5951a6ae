"""Per-file column statistics as typed ``min``/``max``/``null_count`` structs, from data or footers.

The one place lakecore computes file statistics. Every format's writer (and the Spark
hand-off) takes them from here, in the write layout of ``lakecore.model.files``; a format that
stores them in its own encoding (Delta's ``stats`` JSON) renders them from these structs.

Shape (``stats_types``), by logical field name, following the fields given:

- ``min`` / ``max``: one child per scalar column (lists and maps have none), typed as the
  column; struct columns are nested structs. A null value means "unknown". A format keeps
  what it can store (Delta's stats JSON holds bounds of ``is_ordered_scalar`` columns only:
  no booleans, no binary).
- ``null_count``: one int64 child per column (lists and maps included: nulls of the column
  itself); struct columns are nested structs. A null value means "unknown".

Bounds are exact (no truncation here: a format that stores shorter values, e.g. Delta's 32
character string prefix and millisecond timestamps, degrades them when it renders). Float and
double bounds bound the non-NaN values; with ``StatsRules.nan_free_float_bounds`` (a format
whose readers compare NaN as a value, Delta) they are kept only when the file is known to hold
no NaN. An all-null column has no bounds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakecore.model import files as fi
from lakecore.model.exact_values import exact_value, exact_values
from lakecore.model.footer_leaves import PARQUET_JAVA, gather_leaves, leaf_columns
from lakecore.model.parquet_footer import LeafSummary, summarize_leaf

__all__ = [
    "PARQUET_JAVA",
    "FileStats",
    "StatsRules",
    "data_stats",
    "exact_value",
    "exact_values",
    "footer_leaf",
    "footer_stats",
    "footers_stats_columns",
    "leaf_columns",
    "stats_columns",
    "stats_types",
    "unknown_stats",
]


@dataclass(frozen=True, slots=True)
class StatsRules:
    """What a format's stored statistics may claim (declared by the format's writer)."""

    nan_free_float_bounds: bool = False
    """Float bounds only for files known to hold no NaN (Delta: readers order NaN above every
    value and would skip a file whose bounds leave it out). Without it, float bounds bound the
    non-NaN values, as lakecore's planner reads them."""


@dataclass(frozen=True, slots=True)
class FileStats:
    """One file's statistics: one-row ``min``, ``max`` and ``null_count`` struct arrays."""

    min: pa.StructArray
    max: pa.StructArray
    null_count: pa.StructArray


# ------------------------------------------------------------------------------ shapes


def _min_max_type(fields: Sequence[pa.Field]) -> pa.StructType:
    children = []
    for f in fields:
        if pa.types.is_struct(f.type):
            children.append(pa.field(f.name, _min_max_type(list(f.type))))
        elif _bounded(f.type):
            children.append(pa.field(f.name, f.type))
    return pa.struct(children)


def _bounded(t: pa.DataType) -> bool:
    """Whether columns of type ``t`` get min/max children: scalars (not lists, maps, unions,
    dictionaries or the null type)."""
    return not (pa.types.is_nested(t) or pa.types.is_dictionary(t) or pa.types.is_null(t))


def _null_count_type(fields: Sequence[pa.Field]) -> pa.StructType:
    return pa.struct(
        [
            pa.field(
                f.name,
                _null_count_type(list(f.type)) if pa.types.is_struct(f.type) else pa.int64(),
            )
            for f in fields
        ]
    )


def stats_types(fields: Sequence[pa.Field]) -> tuple[pa.StructType, pa.StructType, pa.StructType]:
    """The ``min``, ``max`` and ``null_count`` struct types of files with columns ``fields``."""
    bounds = _min_max_type(fields)
    return bounds, bounds, _null_count_type(fields)


def unknown_stats(fields: Sequence[pa.Field]) -> FileStats:
    """Statistics of a file nothing is known about (every value null)."""
    lo, hi, nulls = stats_types(fields)
    return FileStats(_unknown(lo), _unknown(hi), _unknown(nulls))


def _unknown(t: pa.StructType) -> pa.StructArray:
    children = [
        _unknown(t.field(i).type)
        if pa.types.is_struct(t.field(i).type)
        else pa.nulls(1, t.field(i).type)
        for i in range(t.num_fields)
    ]
    return _struct(children, t)


def _struct(children: Sequence[pa.Array], t: pa.StructType) -> pa.StructArray:
    if t.num_fields == 0:
        return pa.array([{}], t)
    return pa.StructArray.from_arrays(list(children), fields=list(t))


def stats_columns(stats: Sequence[FileStats], fields: Sequence[pa.Field]) -> dict[str, pa.Array]:
    """The ``min``/``max``/``null_count`` columns (write layout) of files, one row per file."""
    lo, hi, nulls = stats_types(fields)
    if not stats:
        return {
            fi.MIN: pa.array([], lo),
            fi.MAX: pa.array([], hi),
            fi.NULL_COUNT: pa.array([], nulls),
        }
    return {
        fi.MIN: pa.concat_arrays([s.min for s in stats]),
        fi.MAX: pa.concat_arrays([s.max for s in stats]),
        fi.NULL_COUNT: pa.concat_arrays([s.null_count for s in stats]),
    }


# ------------------------------------------------------------------------------ from data


def data_stats(
    table: pa.Table, fields: Sequence[pa.Field], rules: StatsRules = StatsRules()
) -> FileStats:
    """Statistics of one file holding the rows of ``table`` (columns found by field name).

    ``fields`` are the file's logical data fields (partition columns excluded); a field
    missing from ``table`` gets unknown statistics.
    """
    lo_t, hi_t, null_t = stats_types(fields)
    arrays = [
        table.column(f.name).combine_chunks() if f.name in table.column_names else None
        for f in fields
    ]
    return _from_arrays(arrays, fields, rules, lo_t, hi_t, null_t)


def _from_arrays(
    arrays: Sequence[pa.Array | None],
    fields: Sequence[pa.Field],
    rules: StatsRules,
    lo_t: pa.StructType,
    hi_t: pa.StructType,
    null_t: pa.StructType,
) -> FileStats:
    los: list[pa.Array] = []
    his: list[pa.Array] = []
    nulls: list[pa.Array] = []
    for f, array in zip(fields, arrays, strict=True):
        t = f.type
        if pa.types.is_struct(t):
            children = [
                pc.struct_field(array, [i]) if array is not None else None
                for i in range(t.num_fields)
            ]
            sub = _from_arrays(
                children,
                list(t),
                rules,
                lo_t.field(f.name).type,
                hi_t.field(f.name).type,
                null_t.field(f.name).type,
            )
            los.append(sub.min)
            his.append(sub.max)
            nulls.append(sub.null_count)
            continue
        count = None if array is None else array.null_count
        nulls.append(pa.array([count], pa.int64()))
        if not _bounded(t):
            continue
        lo, hi = _bounds(array, t, rules)
        los.append(lo)
        his.append(hi)
    return FileStats(_struct(los, lo_t), _struct(his, hi_t), _struct(nulls, null_t))


def _bounds(array: pa.Array | None, t: pa.DataType, rules: StatsRules) -> tuple[pa.Array, pa.Array]:
    none = pa.nulls(1, t)
    if array is None or array.null_count == len(array):
        return none, none
    if pa.types.is_floating(t):
        has_nan = bool(pc.any(pc.is_nan(array)).as_py())
        if has_nan and rules.nan_free_float_bounds:
            return none, none
        array = array.filter(pc.invert(pc.fill_null(pc.is_nan(array), False)))
        if len(array) == array.null_count:
            return none, none
    try:
        mm = pc.min_max(array)
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError):  # no order for this type
        return none, none
    return pa.array([mm["min"]], t), pa.array([mm["max"]], t)


# ------------------------------------------------------------------------------ from footers


def footer_leaf(metadata: pq.FileMetaData, index: int, rules: StatsRules) -> LeafSummary:
    """Leaf ``index``'s statistics over every row group, as ``rules`` allow.

    With ``nan_free_float_bounds``, float bounds are kept only from parquet-java files (whose
    max shows a NaN, which ``summarize_leaf`` then refuses); other writers (pyarrow) leave NaN
    out of the bounds, so a NaN cannot be ruled out.
    """
    summary = summarize_leaf(metadata, index)
    if not rules.nan_free_float_bounds:
        return summary
    floating = metadata.schema.column(index).physical_type in ("FLOAT", "DOUBLE")
    if floating and not (metadata.created_by or "").startswith(PARQUET_JAVA):
        return LeafSummary(summary.null_count, None, None)
    return summary


def footer_stats(
    metadata: pq.FileMetaData,
    fields: Sequence[pa.Field],
    rules: StatsRules = StatsRules(),
    name_in_file: Callable[[pa.Field], str] | None = None,
) -> FileStats:
    """Statistics of one Parquet file from its footer (``fields``: its logical data fields).

    Columns are found in the file by ``name_in_file(field)`` (default: the field's name) at
    every depth; a field missing from the file, a list or map, and a value that does not
    convert exactly to the field's type get unknown statistics (``lakecore.model
    .parquet_footer`` says when a footer statistic is sound for the whole file).
    """
    named = name_in_file or (lambda f: str(f.name))
    leaves = leaf_columns(metadata.schema.to_arrow_schema())
    lo_t, hi_t, null_t = stats_types(fields)
    return _from_footer(metadata, fields, (), leaves, rules, named, lo_t, hi_t, null_t)


def _from_footer(
    metadata: pq.FileMetaData,
    fields: Sequence[pa.Field],
    prefix: tuple[str, ...],
    leaves: dict[tuple[str, ...], int],
    rules: StatsRules,
    named: Callable[[pa.Field], str],
    lo_t: pa.StructType,
    hi_t: pa.StructType,
    null_t: pa.StructType,
) -> FileStats:
    los: list[pa.Array] = []
    his: list[pa.Array] = []
    nulls: list[pa.Array] = []
    for f in fields:
        t = f.type
        path = (*prefix, named(f))
        if pa.types.is_struct(t):
            sub = _from_footer(
                metadata,
                list(t),
                path,
                leaves,
                rules,
                named,
                lo_t.field(f.name).type,
                hi_t.field(f.name).type,
                null_t.field(f.name).type,
            )
            los.append(sub.min)
            his.append(sub.max)
            nulls.append(sub.null_count)
            continue
        index = leaves.get(path)
        summary = (
            footer_leaf(metadata, index, rules)
            if index is not None and not pa.types.is_nested(t)
            else LeafSummary(None, None, None)
        )
        nulls.append(pa.array([summary.null_count], pa.int64()))
        if _bounded(t):
            los.append(exact_value(summary.min, t))
            his.append(exact_value(summary.max, t))
    return FileStats(_struct(los, lo_t), _struct(his, hi_t), _struct(nulls, null_t))


# ------------------------------------------------------------------------------ many footers


def footers_stats_columns(
    footers: Sequence[pq.FileMetaData | None],
    fields: Sequence[pa.Field],
    rules: StatsRules = StatsRules(),
    name_in_file: Callable[[pa.Field], str] | None = None,
) -> dict[str, pa.Array]:
    """The ``min``/``max``/``null_count`` columns (write layout) of many files, from footers.

    Row ``i`` must equal ``footer_stats(footers[i], fields, rules, name_in_file)`` exactly (a
    ``None`` footer: ``unknown_stats(fields)``). Only reading each footer's leaf statistics is
    per file; each leaf column's arrays are then built for all files at once with Arrow.
    """
    named = name_in_file or (lambda f: str(f.name))
    lo_t, hi_t, null_t = stats_types(fields)
    n = len(footers)
    if n == 0:
        return {
            fi.MIN: pa.array([], lo_t),
            fi.MAX: pa.array([], hi_t),
            fi.NULL_COUNT: pa.array([], null_t),
        }
    # Leaves to read, by path in the file (lists and maps: none, their stats are unknown).
    wanted: list[tuple[str, ...]] = []

    def collect(fs: Sequence[pa.Field], prefix: tuple[str, ...]) -> None:
        for f in fs:
            path = (*prefix, named(f))
            if pa.types.is_struct(f.type):
                collect(list(f.type), path)
            elif not pa.types.is_nested(f.type):
                wanted.append(path)

    collect(fields, ())
    # The per-file part: one pass over the footers into plain lists, per-schema work cached.
    gathered = gather_leaves(footers, wanted, rules.nan_free_float_bounds)
    slot = {path: j for j, path in enumerate(wanted)}
    unknown: list[Any] = [None] * n

    def build(
        fs: Sequence[pa.Field],
        prefix: tuple[str, ...],
        lo_t: pa.StructType,
        hi_t: pa.StructType,
        null_t: pa.StructType,
    ) -> tuple[pa.StructArray, pa.StructArray, pa.StructArray]:
        los: list[pa.Array] = []
        his: list[pa.Array] = []
        nulls: list[pa.Array] = []
        for f in fs:
            t = f.type
            path = (*prefix, named(f))
            if pa.types.is_struct(t):
                lo, hi, nc = build(
                    list(t),
                    path,
                    lo_t.field(f.name).type,
                    hi_t.field(f.name).type,
                    null_t.field(f.name).type,
                )
                los.append(lo)
                his.append(hi)
                nulls.append(nc)
                continue
            j = slot.get(path)
            counts = gathered.null_counts[j] if j is not None else unknown
            nulls.append(pa.array(counts, pa.int64()))
            if _bounded(t):
                los.append(exact_values(gathered.mins[j] if j is not None else unknown, t))
                his.append(exact_values(gathered.maxs[j] if j is not None else unknown, t))
        return _structs(los, lo_t, n), _structs(his, hi_t, n), _structs(nulls, null_t, n)

    lo, hi, nc = build(fields, (), lo_t, hi_t, null_t)
    return {fi.MIN: lo, fi.MAX: hi, fi.NULL_COUNT: nc}


def _structs(children: Sequence[pa.Array], t: pa.StructType, n: int) -> pa.StructArray:
    if t.num_fields == 0:
        return pa.array([{}] * n, t)
    return pa.StructArray.from_arrays(list(children), fields=list(t))
