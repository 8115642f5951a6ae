"""The file index of a Hudi snapshot: one row per file slice (layout in lakecore.model.files).

``path`` is the slice's base file (its first log file for a log-only slice); ``data_files``
holds the base file then the log files in merge order. Column statistics come from the
metadata table's ``column_stats`` when the table has one, else from the base files' Parquet
footers; a slice with log files gets no statistics (its log records are not covered by the
base file's), so the planner keeps it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa

from lakecore.model import files as fi
from lakecore.model.footers import Footers
from lakecore.storage import Storage
from lakecore_hudi.mdt.column_stats import LeafStats, load_column_stats, stats_structs
from lakecore_hudi.mdt.column_stats_scoped import load_scoped_column_stats
from lakecore_hudi.mdt.footer_stats import footer_stats
from lakecore_hudi.mdt.records import ColumnStats
from lakecore_hudi.partitions import partition_struct, prunable_partition_columns
from lakecore_hudi.state import HudiState
from lakecore_hudi.view import FileSlice


def build_file_index(
    storage: Storage,
    state: HudiState,
    footers: Footers | None = None,
    partitions: Collection[str] | None = None,
) -> pa.Table:
    """Return the file index of ``state``'s latest file slices.

    Base file footers read for statistics are read through ``footers`` (and stay there for
    later readers of the same snapshot, e.g. a migration's adoption check), when given.
    ``partitions`` (partition paths): only the slices of these get statistics (the others'
    are null, "unknown"), and only their ``column_stats`` records or footers are read; the
    statistics of those slices equal the full index's. None: every slice's.
    """
    slices = indexed_slices(state)
    read_optimized = state.options.read_optimized
    paths = [s.path for s in slices]
    # Size and time of the file at ``path`` (a log-only slice's first log file).
    sizes = [s.file.size for s in slices]
    mtimes = [s.file.modification_time for s in slices]
    data_files = [
        ([] if s.base_file is None else [s.base_file.path])
        + ([] if read_optimized else [f.path for f in s.log_files])
        for s in slices
    ]
    counts, stats = _statistics(storage, state, slices, read_optimized, footers, partitions)
    columns: dict[str, pa.Array] = {
        fi.PATH: pa.array(paths, pa.string()),
        fi.SIZE: pa.array(sizes, pa.int64()),
        fi.RECORD_COUNT: counts,
        fi.MODIFICATION_TIME: pa.array(mtimes, pa.int64()),
    }
    part_columns = prunable_partition_columns(state.config, state.table_schema)
    parts = partition_struct(
        [s.partition_path for s in slices], part_columns, state.table_schema, state.config
    )
    if parts is not None and not state.config.drop_partition_columns:
        parts = _without_ambiguous_nulls(parts)
    if parts is not None:
        columns[fi.PARTITION] = parts
    columns.update(stats)
    columns[fi.DATA_FILES] = pa.array(data_files, fi.DATA_FILES_TYPE)
    return pa.table(columns)


def indexed_slices(state: HudiState) -> Sequence[FileSlice]:
    """The slices ``build_file_index`` gives rows to, in its row order."""
    if state.options.read_optimized:
        return tuple(s for s in state.slices if s.base_file is not None)
    return state.slices


def _without_ambiguous_nulls(parts: pa.StructArray) -> pa.StructArray | None:
    """``parts`` without the string and binary columns that have a null (default) partition.

    Hudi's key generators write a null AND an empty value to the default partition
    (``__HIVE_DEFAULT_PARTITION__``), and the data files keep the value itself: such a
    partition's value is unknown, not null, so the column must not prune by partition value
    (its column statistics still do).
    """
    keep = [
        i
        for i in range(parts.type.num_fields)
        if not (_empty_possible(parts.type.field(i).type) and parts.field(i).null_count > 0)
    ]
    if len(keep) == parts.type.num_fields:
        return parts
    if not keep:
        return None
    return pa.StructArray.from_arrays(
        [parts.field(i) for i in keep], fields=[parts.type.field(i) for i in keep]
    )


def _empty_possible(t: pa.DataType) -> bool:
    return bool(
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
    )


def _statistics(
    storage: Storage,
    state: HudiState,
    slices: Sequence[FileSlice],
    read_optimized: bool,
    footers: Footers | None,
    partitions: Collection[str] | None,
) -> tuple[pa.Array, dict[str, pa.Array]]:
    """Per-slice record counts and min/max/null_count structs (null = unknown).

    With the metadata table, a slice's stats fold its base and log files' stats: merged rows
    are a subset of the union of those files' records, so the union's bounds hold (null
    counts become upper bounds, and the record count is left unknown). Without it, base-only
    slices get their Parquet footer stats and slices with log files none.
    """
    schema = state.table_schema
    if partitions is None:
        mdt = load_column_stats(storage, state.config)
    else:
        mdt = load_scoped_column_stats(storage, state.config, partitions, leaf_columns(schema))
    rows: list[Mapping[str, LeafStats] | None] = []
    counts: list[int | None] = []
    if mdt is not None:
        for s in slices:
            if partitions is not None and s.partition_path not in partitions:
                rows.append(None)
                counts.append(None)
                continue
            names = [s.base_file.path] if s.base_file is not None else []
            if not read_optimized:
                names += [f.path for f in s.log_files]
            per_file = [_code_point_bounds(n, mdt.get(n.rsplit("/", 1)[-1])) for n in names]
            if not per_file or any(p is None for p in per_file):
                rows.append(None)
                counts.append(None)
                continue
            known = [p for p in per_file if p is not None]
            rows.append(_fold(known))
            counts.append(_record_count(known[0]) if len(known) == 1 else None)
        return pa.array(counts, pa.int64()), stats_structs(rows, schema)
    base_only = [
        i
        for i, s in enumerate(slices)
        if s.base_file is not None and (read_optimized or not s.log_files)
        if partitions is None or s.partition_path in partitions
    ]
    from_footers = footer_stats(storage, [slices[i].path for i in base_only], schema, footers)
    count_column = pa.nulls(len(slices), pa.int64()).to_pylist()
    for j, i in enumerate(base_only):
        count_column[i] = from_footers.column(fi.RECORD_COUNT)[j].as_py()
    struct_columns: dict[str, pa.Array] = {}
    positions = {i: j for j, i in enumerate(base_only)}
    take = pa.array([positions.get(i) for i in range(len(slices))], pa.int64())
    for name in (fi.MIN, fi.MAX, fi.NULL_COUNT):
        struct_columns[name] = from_footers.column(name).combine_chunks().take(take)
    return pa.array(count_column, pa.int64()), struct_columns


def leaf_columns(schema: pa.Schema) -> list[str]:
    """The column paths (``"a.b"`` for nested fields) the stats structs hold for ``schema``:
    every leaf but those inside lists and maps."""
    out: list[str] = []
    pending = [(f, "") for f in schema]
    while pending:
        field, prefix = pending.pop()
        path = prefix + field.name
        if pa.types.is_struct(field.type):
            pending.extend((child, path + ".") for child in field.type)
        elif not pa.types.is_nested(field.type):
            out.append(path)
    return sorted(out)


def _code_point_bounds(
    name: str, stats: Mapping[str, ColumnStats] | None
) -> Mapping[str, ColumnStats] | None:
    """``stats`` of data file ``name`` with every bound valid in code point order.

    Hudi computes a log file's string bounds with Java's ``String.compareTo`` (UTF-16 code
    units), where a supplementary character sorts below U+E000..U+FFFF; the planner compares
    code points. A UTF-16-ordered bound made only of code points below U+D800 bounds the same
    values in both orders, so such bounds stay; any other string bound becomes unknown. Base
    files' bounds come from Parquet footers (UTF-8 byte order, i.e. code point order).
    """
    if stats is None or ".log." not in name.rsplit("/", 1)[-1]:
        return stats
    fixed = dict(stats)
    for column, s in stats.items():
        lo = None if _unordered(s.min_value) else s.min_value
        hi = None if _unordered(s.max_value) else s.max_value
        if lo is not s.min_value or hi is not s.max_value:
            fixed[column] = replace(s, min_value=lo, max_value=hi)
    return fixed


_AT_OR_ABOVE_D800 = re.compile("[\ud800-\U0010ffff]")


def _unordered(value: Any) -> bool:
    return isinstance(value, str) and _AT_OR_ABOVE_D800.search(value) is not None


def _fold(per_file: Sequence[Mapping[str, ColumnStats]]) -> dict[str, LeafStats]:
    columns = set(per_file[0])
    for stats in per_file[1:]:
        columns &= set(stats)
    out: dict[str, LeafStats] = {}
    for column in columns:
        entries = [stats[column] for stats in per_file]
        out[column] = (
            _bound(min, [e.min_value for e in entries]),
            _bound(max, [e.max_value for e in entries]),
            _total([e.null_count for e in entries]),
        )
    return out


def _bound(pick: Any, values: list[Any]) -> Any:
    if any(v is None for v in values):
        return None
    try:
        return pick(values)
    except TypeError:  # values of different kinds (a column whose type changed)
        return None


def _total(values: list[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def _record_count(stats: Mapping[str, ColumnStats]) -> int | None:
    top = [s.value_count for c, s in stats.items() if "." not in c and s.value_count is not None]
    return max(top) if top else None
