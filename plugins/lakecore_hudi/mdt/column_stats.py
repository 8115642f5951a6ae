"""Per-file column statistics from the metadata table's ``column_stats`` partition.

A Hudi table with a metadata table (``.hoodie/metadata/``, itself a MERGE_ON_READ table with
HFile base files) keeps one record per (data file, column) in the ``column_stats`` partition
once ``column_stats`` is listed in the data table's ``hoodie.table.metadata.partitions``.
This module reads the latest snapshot of that partition:

- the metadata table's own timeline decides what is visible: base HFiles of completed
  compactions, log files of completed delta commits (file slicing as in ``view``), and within
  logs only blocks whose INSTANT_TIME is completed (or older than the active timeline, i.e.
  archived), minus blocks rolled back by a rollback command block or replaced by a
  log-compacted block;
- records are folded base first, then log blocks in log order, with Hudi's payload merge
  (``records.merge_column_stats``); tombstones (``isDeleted``) remove the file's column.

Delete blocks are not applied: Hudi retires column stats through tombstone records, and a
delete could only ever remove the stats of a file that is no longer live, which callers filter
out by file name anyway.

The result is shaped like the file index (``lakecore.model.files``): one row per data file
name with ``record_count`` and ``min``/``max``/``null_count`` structs holding one child per
column, typed as the table schema says. A value that is absent, unreadable or does not fit the
column type exactly is null ("unknown"), never a guess.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from lakecore.errors import CorruptTableError
from lakecore.model import files as fi
from lakecore.model.exact_values import CAST_ERRORS
from lakecore.storage import FileInfo, Storage
from lakecore_hudi.java_properties import parse_properties
from lakecore_hudi.log.format import BlockType, LogBlock, read_log_blocks
from lakecore_hudi.log.scanner import order_log_blocks
from lakecore_hudi.mdt.hfile import read_file_info, read_hfile
from lakecore_hudi.mdt.records import (
    ColumnStats,
    MetadataRecord,
    column_stats,
    decode_avro_block,
    decode_records,
    merge_column_stats,
    parse_schema,
)
from lakecore_hudi.names import BaseFile, LogFile, parse_base_file_name, parse_log_file_name
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.timeline.instants import (
    COMMIT,
    DELTA_COMMIT,
    REPLACE_COMMIT,
    parse_instant_file,
)
from lakecore_hudi.view import FileSlice, SliceFile, Visible, latest_slices

__all__ = [
    "COLUMN_STATS_PARTITION",
    "METADATA_DIR",
    "FILE_NAME",
    "load_column_stats",
    "read_column_stats",
    "stats_structs",
    "stats_table",
    "typed_array",
]

METADATA_DIR = ".hoodie/metadata"
COLUMN_STATS_PARTITION = "column_stats"
FILE_NAME = "file_name"
"""The key column of ``read_column_stats``: the data file's name (no directory)."""
READERS = 8

LeafStats = tuple[Any, Any, int | None]
"""(min, max, null count) of one column of one file; None parts are unknown."""


def read_column_stats(
    storage: Storage,
    config: TableConfig | Mapping[str, str],
    file_names: Sequence[str] | None = None,
    *,
    schema: pa.Schema | None = None,
) -> pa.Table | None:
    """Column statistics of data files from the metadata table, shaped like the file index.

    Args:
        storage: Storage rooted at the data table.
        config: The data table's ``hoodie.properties`` (``TableConfig`` or the raw mapping).
        file_names: Data file names (or paths; only the last part counts) to return rows for,
            in this order; files the metadata table knows nothing about get all-null stats.
            None: every file the metadata table has stats for, sorted by name.
        schema: The table schema; the structs get one child per column of it, typed as it
            says (lists and maps left out). None: one child per column found, typed by the
            values (for inspection; the planner needs ``schema``).

    Returns:
        Columns ``file_name`` (string), ``record_count`` (int64), ``min``, ``max``,
        ``null_count`` (structs; null children = unknown); None when the table has no
        metadata table or its ``column_stats`` partition is not (fully) built.

    Raises:
        CorruptTableError: a metadata-table file is unreadable; the message names it.
        UnsupportedFeatureError: a metadata-table file uses a feature lakecore cannot read.
    """
    stats = load_column_stats(storage, config)
    if stats is None:
        return None
    names = sorted(stats) if file_names is None else [n.rsplit("/", 1)[-1] for n in file_names]
    return stats_table(names, stats, schema)


def load_column_stats(
    storage: Storage, config: TableConfig | Mapping[str, str]
) -> dict[str, dict[str, ColumnStats]] | None:
    """The live column-stats records of the metadata table: file name -> column -> stats.

    Returns None when there is no metadata table or no complete ``column_stats`` partition.
    Raises as ``read_column_stats`` does.
    """
    if not _has_column_stats(config):
        return None
    mdt = _metadata_config(storage)
    if mdt is None:
        return None
    timeline = _load_timeline(storage, mdt)
    partition = f"{METADATA_DIR}/{COLUMN_STATS_PARTITION}"
    slice_files = _slice_files(storage.list_dir(partition))
    slices = latest_slices(slice_files, timeline.visible, mdt.table_version >= 8)
    paths = [
        f.path for s in slices for f in ([s.base_file] if s.base_file else []) + list(s.log_files)
    ]
    with ThreadPoolExecutor(READERS) as pool:
        contents = dict(zip(paths, pool.map(storage.read, paths), strict=True))
    out: dict[str, dict[str, ColumnStats]] = {}
    for s in slices:
        for stat in _slice_stats(s, contents, timeline).values():
            if not stat.is_deleted:
                out.setdefault(stat.file_name, {})[stat.column_name] = stat
    return out


def stats_table(
    file_names: Sequence[str],
    stats: Mapping[str, Mapping[str, ColumnStats]],
    schema: pa.Schema | None,
) -> pa.Table:
    """Build the ``read_column_stats`` table for ``file_names`` from ``load_column_stats``."""
    rows: list[Mapping[str, LeafStats] | None] = []
    counts: list[int | None] = []
    for name in file_names:
        per_column = stats.get(name)
        if per_column is None:
            rows.append(None)
            counts.append(None)
            continue
        rows.append({c: (s.min_value, s.max_value, s.null_count) for c, s in per_column.items()})
        # Top-level columns count every row (nulls included); nested ones may not.
        top = [s.value_count for c, s in per_column.items() if "." not in c]
        known = [v for v in top if v is not None]
        counts.append(max(known) if known else None)
    if schema is None:
        schema = _inferred_schema(rows)
    table = {FILE_NAME: pa.array(list(file_names), pa.string())}
    table[fi.RECORD_COUNT] = pa.array(counts, pa.int64())
    table.update(stats_structs(rows, schema))
    return pa.table(table)


def stats_structs(
    rows: Sequence[Mapping[str, LeafStats] | None], schema: pa.Schema
) -> dict[str, pa.Array]:
    """The ``min``/``max``/``null_count`` struct columns of per-file, per-column stats.

    ``rows`` hold, per file, stats keyed by column path (nested fields as ``"a.b"``); None is a
    file with no stats. Children follow ``schema`` (lists and maps left out); min/max values
    are converted to the column type only when that is exact, else null.
    """
    mins, maxs, nulls = _struct_children(rows, list(schema), "")
    n = len(rows)
    return {
        fi.MIN: _struct(mins, n),
        fi.MAX: _struct(maxs, n),
        fi.NULL_COUNT: _struct(nulls, n),
    }


# ------------------------------------------------------------------------------ structs

_Children = tuple[
    list[tuple[str, pa.Array]], list[tuple[str, pa.Array]], list[tuple[str, pa.Array]]
]


def _struct_children(
    rows: Sequence[Mapping[str, LeafStats] | None], fields: Sequence[pa.Field], prefix: str
) -> _Children:
    out: _Children = ([], [], [])
    for field in fields:
        path = prefix + field.name
        t = field.type
        if pa.types.is_struct(t):
            sub = _struct_children(rows, list(t), path + ".")
            for target, children in zip(out, sub, strict=True):
                target.append((field.name, _struct(children, len(rows))))
            continue
        if pa.types.is_nested(t):
            continue  # lists and maps: no per-file bounds
        leaf = [(row or {}).get(path) for row in rows]
        out[0].append((field.name, typed_array([s[0] if s else None for s in leaf], t)))
        out[1].append((field.name, typed_array([s[1] if s else None for s in leaf], t)))
        out[2].append((field.name, pa.array([s[2] if s else None for s in leaf], pa.int64())))
    return out


def _struct(children: list[tuple[str, pa.Array]], n: int) -> pa.Array:
    if not children:
        return pa.array([{}] * n, pa.struct([]))
    return pa.StructArray.from_arrays([c for _, c in children], names=[k for k, _ in children])


def typed_array(values: Sequence[Any], t: pa.DataType) -> pa.Array:
    """``values`` as an Arrow array of type ``t``; a value that does not convert exactly is null.

    Values are first converted as what they are, then cast to ``t`` only within their kind
    (numbers to numbers, text to text, dates and timestamps to each other): a number's min is
    not the min of its text. A cast must round-trip to the same value, so a microsecond
    timestamp never lands truncated in a millisecond column, nor a double in a float.
    """
    try:
        return _exact(pa.array(values), t)
    except CAST_ERRORS:
        pass  # some value does not fit: convert one by one, nulling only those
    out = []
    for value in values:
        try:
            out.append(_exact(pa.array([value]), t)[0].as_py())
        except CAST_ERRORS:
            out.append(None)
    return pa.array(out, t)


def _kind(t: pa.DataType) -> str:
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "number"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "text"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return "text"
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        return "instant"
    return str(t)  # time, bool, ...: only the same type


def _exact(values: pa.Array, t: pa.DataType) -> pa.Array:
    if values.type == t or pa.types.is_null(values.type):
        return values.cast(t)
    if _kind(values.type) != _kind(t):
        raise pa.ArrowInvalid(f"{values.type} bounds do not bound a {t} column")
    cast = values.cast(t, safe=True)
    if not cast.cast(values.type, safe=False).equals(values):
        raise pa.ArrowInvalid(f"{values.type} bounds do not fit {t} exactly")
    return cast


def _inferred_schema(rows: Sequence[Mapping[str, LeafStats] | None]) -> pa.Schema:
    columns = sorted({c for row in rows if row for c in row})
    fields = []
    for c in columns:
        values = [v for row in rows if row and c in row for v in row[c][:2] if v is not None]
        try:
            t = pa.array(values).type if values else pa.null()
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            t = pa.null()
        fields.append(pa.field(c, t))
    return pa.schema(fields)


# ------------------------------------------------------------------- metadata table


@dataclass(frozen=True, slots=True)
class _Timeline:
    """The metadata table's active timeline, as far as reading it needs."""

    visible: Visible
    completed: frozenset[str]
    pending: frozenset[str]
    start: str | None
    """The earliest completed instant; older instants were archived (completed)."""

    def block_is_live(self, instant: str) -> bool:
        """Whether a log block written by ``instant`` counts: completed, or archived."""
        if instant in self.completed:
            return True
        return self.start is not None and instant < self.start and instant not in self.pending


def _has_column_stats(config: TableConfig | Mapping[str, str]) -> bool:
    built = _split(config.get("hoodie.table.metadata.partitions"))
    building = _split(config.get("hoodie.table.metadata.partitions.inflight"))
    return COLUMN_STATS_PARTITION in built and COLUMN_STATS_PARTITION not in building


def _split(value: str | None) -> set[str]:
    return {p.strip() for p in (value or "").split(",") if p.strip()}


def _metadata_config(storage: Storage) -> TableConfig | None:
    path = f"{METADATA_DIR}/.hoodie/hoodie.properties"
    try:
        text = storage.read(path).decode("latin-1")
    except FileNotFoundError:
        return None
    try:
        props = parse_properties(text)
    except ValueError:
        raise CorruptTableError(f"{path}: not a valid properties file") from None
    return TableConfig.from_properties(props, path)


def _load_timeline(storage: Storage, mdt: TableConfig) -> _Timeline:
    layout = mdt.timeline_layout_version
    completed: set[str] = set()
    writes: set[str] = set()
    pending: set[str] = set()
    completion: dict[str, str] = {}
    for info in storage.list_dir(f"{METADATA_DIR}/{mdt.timeline_dir}"):
        instant = parse_instant_file(info.path, layout)
        if instant is None:
            continue
        if not instant.is_completed:
            pending.add(instant.timestamp)
            continue
        completed.add(instant.timestamp)
        if instant.action in (COMMIT, DELTA_COMMIT, REPLACE_COMMIT):
            writes.add(instant.timestamp)
        if instant.completion_time is not None:
            completion[instant.timestamp] = instant.completion_time
    pending -= completed
    visible = Visible(frozenset(writes), completion)
    start = min(completed) if completed else None
    return _Timeline(visible, frozenset(completed), frozenset(pending), start)


def _slice_files(listing: Sequence[FileInfo]) -> list[SliceFile]:
    out = []
    for info in listing:
        parsed: BaseFile | LogFile | None = parse_log_file_name(info.path)
        if parsed is None:
            parsed = parse_base_file_name(info.path)
        if parsed is not None and (isinstance(parsed, LogFile) or parsed.extension == "hfile"):
            out.append(SliceFile(info, parsed))
    return out


def _live_blocks(logs: Sequence[tuple[str, bytes]], timeline: _Timeline) -> list[LogBlock]:
    """The data blocks of a slice's log files that count, in the order Hudi applies them.

    ``log.scanner.order_log_blocks`` drops blocks of delta commits that are not completed,
    blocks a rollback command block undoes and blocks a log-compacted block replaced. Torn
    regions (a failed append) are skipped as Hudi's reader skips them; their instant is never
    completed.
    """
    blocks = [b for path, data in logs for b in read_log_blocks(data, path, skip_corrupt=True)]
    ordered = order_log_blocks(blocks, timeline.block_is_live)
    return [b for b in ordered if b.block_type in (BlockType.HFILE_DATA, BlockType.AVRO_DATA)]


def _block_records(block: LogBlock) -> list[MetadataRecord]:
    where = f"{block.path} (log block at byte {block.offset})"
    content = bytes(block.content)
    if block.block_type == BlockType.HFILE_DATA:
        return _hfile_records(content, where, block.schema)
    if block.schema is None:
        raise CorruptTableError(f"{where}: Avro data block has no SCHEMA header")
    return decode_avro_block(content, parse_schema(block.schema, where), where)


def _hfile_records(data: bytes, path: str, schema_json: str | None) -> list[MetadataRecord]:
    if schema_json is None:
        raw = read_file_info(data, path).get(b"schema")
        if raw is None:
            raise CorruptTableError(f"{path}: HFile holds no record schema in its file info")
        schema_json = raw.decode("utf-8", "replace")
    return decode_records(read_hfile(data, path), parse_schema(schema_json, path), path)


def _slice_stats(
    file_slice: FileSlice, contents: Mapping[str, bytes], timeline: _Timeline
) -> dict[str, ColumnStats]:
    """Record key -> merged stats of one metadata file slice: base HFile, then live log blocks."""
    merged: dict[str, ColumnStats] = {}
    if file_slice.base_file is not None:
        path = file_slice.base_file.path
        _fold(merged, _hfile_records(contents[path], path, None), path)
    logs = [(f.path, contents[f.path]) for f in file_slice.log_files]
    for block in _live_blocks(logs, timeline):
        _fold(merged, _block_records(block), block.path)
    return merged


def _fold(merged: dict[str, ColumnStats], records: Sequence[MetadataRecord], path: str) -> None:
    for record in records:
        stat = column_stats(record, path)
        if stat is not None:
            merged[record.key] = merge_column_stats(merged.get(record.key), stat)
