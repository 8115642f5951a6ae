"""Records of the metadata table's ``partition_stats`` partition, as Hudi 1.x writes them.

One record per (data partition, indexed column), type 6, key
``stats_keys.partition_stats_key``, payload ``ColumnStatsMetadata`` with ``fileName`` the
partition path and ``isTightBound`` true: the column's range over the partition's files.

A write, delta commit, compaction or replace commit rewrites the records of every partition
its write stats touch (Hudi's ``convertMetadataToPartitionStatsRecords``), recomputed, not
merged with the old record (the tight bound replaces it), from:

- the ranges of the files the instant wrote (``column_stats_records.written_ranges``: for a
  log file, the instant's own blocks), and
- the ranges of every other file of the partition's latest merged file slices before the
  instant, as Hudi takes them, from their ``column_stats`` records in the metadata table
  (``stored_file_ranges``: only the records of the touched partitions, through the HFiles'
  block index, so the cost follows the partitions written, not the table). A file without
  records there (Lance base files have none; a table without ``column_stats``) is read
  instead: footers for base files, completed blocks for log files, none for Lance base
  files, which gives the values the records hold. When a completed data instant is later
  than the one recorded (a replay of history), the metadata table may hold later blocks of
  a log file and every file is read. The instant's own ``column_stats`` records are not in
  the metadata table yet (every generator runs before the delta commit is written), nor
  needed: the files it wrote are never looked up. A file group the instant writes a new
  base file for (a CoW update, a compaction) contributes only that file; one it appends a
  log to keeps its slice (the appended log file counts with the instant's blocks only).

As in Hudi, file groups a replace commit replaces still count in that commit's records (Hudi
compares their file ids with file names, which never match), until a later write of the
partition recomputes it; file groups replaced by earlier completed replace commits do not.

A ``DELETE_PARTITION`` replace commit writes a tombstone per column of each deleted partition
(no bounds, counts -1, ``fileName`` ""). A clean writes nothing (Hudi's partition-stats
indexer ignores cleans). Columns and index version follow ``column_stats_records`` (the index
version of ``partition_stats``, which has no index definition of its own: 1 for table version
8, 2 for 9). Records fold with ``column_stats_records.merge`` (``compacted`` drops
tombstones) and route by their whole key; Hudi gives the partition 1 file group.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from lakecore_hudi.archived_writes import timeline_start
from lakecore_hudi.avro_schema import avro_to_arrow
from lakecore_hudi.mdt import column_stats_records as csr
from lakecore_hudi.mdt.file_groups import FILE_ID_PREFIXES
from lakecore_hudi.mdt.file_ranges import field_kind, file_ranges
from lakecore_hudi.mdt.index_context import IndexContext
from lakecore_hudi.mdt.stats_keys import partition_stats_key
from lakecore_hudi.mdt.stats_values import (
    NULL_KIND,
    ColumnRange,
    ValueKind,
    combine,
    standardize,
)
from lakecore_hudi.mdt.stats_wrappers import stats_payload
from lakecore_hudi.mdt.stored_file_ranges import stored_file_ranges
from lakecore_hudi.names import parse_base_file_name, parse_log_file_name
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.timeline.active import Timeline, load_timeline
from lakecore_hudi.timeline.commit_metadata import CommitMetadata, parse_commit_metadata
from lakecore_hudi.timeline.instants import REPLACE_COMMIT, WRITE_ACTIONS
from lakecore_hudi.view import FileSlice, Visible, data_files, latest_slices

__all__ = [
    "DEFAULT_FILE_GROUPS",
    "FILE_ID_PREFIX",
    "PARTITION",
    "RECORD_TYPE",
    "commit_records",
    "compacted",
    "merge",
    "partition_stats_record",
    "routing_key",
    "schema_kinds",
]

PARTITION = "partition_stats"
FILE_ID_PREFIX = FILE_ID_PREFIXES[PARTITION]
RECORD_TYPE = 6
"""``HoodieMetadataRecord.type`` of a partition-stats record."""
DELETE_PARTITION = "DELETE_PARTITION"

DEFAULT_FILE_GROUPS = 1
"""File groups Hudi gives the partition
(``hoodie.metadata.index.partition.stats.file.group.count``)."""

merge = csr.merge
"""Hudi folds partition-stats records as column-stats records: the tight bound wins."""
compacted = csr.compacted
"""A compacted base file holds no partition-stats tombstone."""


def routing_key(key: str, table_version: int) -> str:
    """The string Hudi hashes to pick a partition-stats record's file group: the whole key."""
    return key


def commit_records(ctx: IndexContext) -> list[dict[str, Any]]:
    """The ``partition_stats`` records data instant ``ctx.instant`` adds (module docstring).

    Lists the touched partitions' directories, reads the commit metadata of completed replace
    commits, the touched partitions' records in the metadata table's ``column_stats`` and
    the footers / log blocks of the files without records, in threads.

    Raises:
        CorruptTableError: a file, metadata-table file or replace commit is unreadable
            (names it).
        FileNotFoundError: a file the write stats or a file slice name is missing.
        UnsupportedFeatureError: a base file format other than Parquet or Lance, or an index
            ``column_stats_records.ensure_supported`` refuses.
    """
    meta = ctx.meta
    if meta is None:
        return []
    csr.ensure_supported(ctx.index_defs, ctx.table_version)
    columns = csr.columns_to_index(ctx.config, ctx.index_defs, csr.writer_schema(meta))
    version2 = csr.index_version(ctx.index_defs, PARTITION, ctx.table_version) >= 2
    if not columns:
        return []
    if (meta.operation_type or "").upper() == DELETE_PARTITION:
        return _tombstones(meta.partition_to_replace_file_ids, columns, version2)
    written = csr.written_ranges(ctx, columns)
    if not written:
        return []
    timeline = load_timeline(ctx.storage, ctx.config)
    visible = _visible_before(ctx, timeline, sorted(written))
    others = [
        (partition, path)
        for partition, paths in _other_files(ctx, meta, visible).items()
        for path in paths
    ]
    kinds = schema_kinds(ctx.config, meta, columns)
    stored = _stored_ranges(ctx, timeline, others, columns, kinds)

    def ranges_of(other: tuple[str, str]) -> list[ColumnRange]:
        partition, path = other
        found = stored.get((partition, path.rsplit("/", 1)[-1]))
        if found is not None:
            return found
        return file_ranges(ctx.storage, path, columns, visible.includes)

    with ThreadPoolExecutor(csr.READERS) as pool:
        found = list(pool.map(ranges_of, others))
    targets = kinds if version2 else {}
    out: list[dict[str, Any]] = []
    for partition, own in written.items():
        everything = list(own)
        for (where, _), ranges in zip(others, found, strict=True):
            if where == partition:
                everything.extend(ranges)
        out.extend(_partition_records(partition, everything, columns, version2, targets))
    return out


def _stored_ranges(
    ctx: IndexContext,
    timeline: Timeline,
    others: Sequence[tuple[str, str]],
    columns: Sequence[str],
    kinds: Mapping[str, ValueKind],
) -> dict[tuple[str, str], list[ColumnRange]]:
    """The ranges ``column_stats`` holds for the ``others`` (partition, path) files; {} when
    the metadata table may hold a later state than the one before ``ctx.instant`` (a
    completed data instant later than it: a replay of history, or a writer whose instant
    time was overtaken), where the files are read instead."""
    if any(i.timestamp > ctx.instant for i in timeline.completed()):
        return {}
    files: dict[str, list[str]] = {}
    for partition, path in others:
        files.setdefault(partition, []).append(path.rsplit("/", 1)[-1])
    return stored_file_ranges(ctx.storage, ctx.config, files, columns, kinds)


def schema_kinds(
    config: TableConfig, meta: CommitMetadata | None, columns: Sequence[str]
) -> dict[str, ValueKind]:
    """Column -> the kind the commit's writer schema (else the table's create schema) gives
    it, meta fields being strings: index version 2 casts every file's bounds to it before
    combining them (Hudi's ``getColumnRangeInPartition``)."""
    schema = csr.writer_schema(meta)
    if schema is None and config.create_schema:
        schema = avro_to_arrow(config.create_schema)
    out = {c: ValueKind("STRING") for c in columns if c in csr.META_COLUMNS}
    for column in columns:
        kind = field_kind(schema, column) if schema is not None else None
        if kind is not None and column not in out:
            out[column] = kind
    return out


def _partition_records(
    partition: str,
    ranges: Iterable[ColumnRange],
    columns: Sequence[str],
    version2: bool,
    targets: Mapping[str, ValueKind],
) -> list[dict[str, Any]]:
    by_column: dict[str, ColumnRange] = {}
    for r in ranges:
        target = targets.get(r.column)
        if target is not None:
            r = standardize(r, target)
        by_column[r.column] = combine(by_column.get(r.column), r, name=partition)
    return [
        partition_stats_record(partition, by_column[c], version2) for c in columns if c in by_column
    ]


def partition_stats_record(
    partition: str, stats: ColumnRange, version2: bool, *, is_deleted: bool = False
) -> dict[str, Any]:
    """The ``HoodieMetadataRecord`` of a partition's range of one column (tight bound; meta
    fields unset, as in Hudi's log blocks)."""
    payload = stats_payload(stats, version2=version2, is_deleted=is_deleted, tight=True)
    return {
        "key": partition_stats_key(partition, stats.column),
        "type": RECORD_TYPE,
        "ColumnStatsMetadata": payload,
    }


def _tombstones(
    partitions: Mapping[str, Sequence[str]], columns: Sequence[str], version2: bool
) -> list[dict[str, Any]]:
    out = []
    for partition in partitions:
        for column in columns:
            stub = ColumnRange("", column, None, None, -1, -1, -1, -1, NULL_KIND)
            out.append(partition_stats_record(partition, stub, version2, is_deleted=True))
    return out


# -------------------------------------------------------------------- file slices


def _other_files(ctx: IndexContext, meta: CommitMetadata, visible: Visible) -> dict[str, list[str]]:
    """Partition -> paths of the files of its latest merged slices the instant did not write
    (see the module docstring), for every partition the write stats touch."""
    stats = [s for s in meta.write_stats() if s.path]
    partitions = sorted({s.partition_path or "" for s in stats})
    written_names = {str(s.path).rsplit("/", 1)[-1] for s in stats}
    new_bases = {
        (s.partition_path or "", s.file_id)
        for s in stats
        if parse_base_file_name(str(s.path).rsplit("/", 1)[-1]) is not None
        and parse_log_file_name(str(s.path).rsplit("/", 1)[-1]) is None
    }
    out: dict[str, list[str]] = {}
    for partition in partitions:
        files = data_files(ctx.storage.list_dir(partition))
        slices = latest_slices(files, visible, ctx.config.table_version >= 8)
        paths = out.setdefault(partition, [])
        for s in slices:
            if s.partition_path != partition or (partition, s.file_id) in new_bases:
                continue
            paths.extend(p for p in _slice_paths(s) if p.rsplit("/", 1)[-1] not in written_names)
    return out


def _slice_paths(s: FileSlice) -> list[str]:
    base = [s.base_file.path] if s.base_file is not None else []
    return base + [f.path for f in s.log_files]


def _visible_before(ctx: IndexContext, timeline: Timeline, partitions: Sequence[str]) -> Visible:
    """What the completed timeline before ``ctx.instant`` makes visible in ``partitions``."""
    writes = [
        i for i in timeline.completed() if i.action in WRITE_ACTIONS and i.timestamp < ctx.instant
    ]
    replaced: set[tuple[str, str]] = set()
    wanted = set(partitions)
    for instant in writes:
        if instant.action != REPLACE_COMMIT:
            continue
        data = timeline.read_details(ctx.storage, instant)
        done = parse_commit_metadata(data, timeline.path_of(instant), True)
        for partition, ids in done.partition_to_replace_file_ids.items():
            if partition in wanted:
                replaced.update((partition, i) for i in ids)
    return Visible(
        instants=frozenset(i.timestamp for i in writes),
        completion={i.timestamp: i.completion_time for i in writes if i.completion_time},
        replaced=frozenset(replaced),
        archived_before=timeline_start(timeline),
    )
