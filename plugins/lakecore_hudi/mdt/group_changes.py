"""The live records of the data file groups one instant touches, before and after it.

The record-level indexes of the metadata table (``record_index``, ``secondary_index_*``)
change with the records an instant inserts, deletes or moves, which its commit metadata does
not list. As Hudi does (``BaseFileRecordParsingUtils.getRecordKeyStatuses`` compares a new
base file with the previous one of its file group; ``getRevivedAndDeletedKeysFromMergedLogs``
merges a group's log files with and without the instant's), they are derived here by reading
each touched file group twice:

- *before*: the group's latest file slice on the completed timeline without the instant
  (which is still inflight when the metadata table is written);
- *after*: the same view with the instant's own files (the paths its write stats list) made
  visible; a file group the instant replaces (``IndexContext.replaced``) has no records after.

Slices are read merged (base file + log files, the table's merge rules) with lakecore's slice
reader, so a MoR delete block, an update in a log, a rewritten CoW base file and a compaction
all come out as the records the group holds. The touched groups' files come from the metadata
table's ``files`` partition (the listing the write itself uses; storage is listed only for a
table without it), and only the touched groups are read: the cost grows with what the
instant wrote, not with the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from lakecore.errors import CorruptTableError, UnsupportedFeatureError
from lakecore.storage import FileInfo
from lakecore_hudi.archived_writes import timeline_start
from lakecore_hudi.keys import IS_DELETED, META_FIELDS, PARTITION_PATH, RECORD_KEY
from lakecore_hudi.mdt.files_partition import read_files_partition
from lakecore_hudi.mdt.files_records import EXTERNAL_SUFFIX
from lakecore_hudi.mdt.index_context import IndexContext
from lakecore_hudi.options import ReadOptions
from lakecore_hudi.state import HudiState, _schema
from lakecore_hudi.timeline.active import Timeline, load_timeline
from lakecore_hudi.timeline.commit_metadata import CommitMetadata
from lakecore_hudi.timeline.instants import COMMIT, COMPLETED, Instant
from lakecore_hudi.view import FileSlice, SliceFile, Visible, data_files, latest_slices
from lakecore_hudi.write.changes import SliceRows

__all__ = ["GroupChange", "group_changes", "is_compaction", "table_schema"]

_AFTER_EVERYTHING = "99999999999999999"
"""Completion time given to the inflight instant: it completes after every completed one."""


@dataclass(frozen=True, slots=True)
class GroupChange:
    """One touched file group: its live records before and after the instant.

    Both tables hold ``_hoodie_record_key``, ``_hoodie_partition_path`` and the requested
    columns (derived keys on a table without meta fields).
    """

    partition: str
    file_id: str
    before: pa.Table
    after: pa.Table


def is_compaction(ctx: IndexContext) -> bool:
    """Whether the instant is a compaction (it changes no record, only files)."""
    if ctx.meta is None:
        return ctx.action == "compaction"
    operation = (ctx.meta.operation_type or "").upper()
    return ctx.meta.compacted or operation in ("COMPACT", "LOG_COMPACT")


def group_changes(ctx: IndexContext, columns: Sequence[str] = ()) -> list[GroupChange]:
    """Every file group the instant's write stats name or it replaces, read before and after.

    ``columns`` are data columns to read besides the key and partition path. A clean or a
    compaction touches no record: ``[]``.

    Raises:
        CorruptTableError: a file the write stats name is not on storage, or a data file
            is unreadable.
        UnsupportedFeatureError: the instant adopts external files, or a data file uses a
            feature lakecore cannot read.
        CommitConflictError: a log file vanished while read (a concurrent rollback).
    """
    if ctx.meta is None or is_compaction(ctx):
        return []
    wanted = [RECORD_KEY, PARTITION_PATH, *columns]
    cached = ctx.memo.get(_MEMO)
    if cached is None or not set(columns) <= set(cached[0]):
        # Read once for every generator of the instant: the record index and each
        # secondary index look at the same touched groups.
        extra = [c for c in _secondary_columns(ctx) if c not in columns]
        cached = ctx.memo[_MEMO] = _read_changes(ctx, ctx.meta, columns, extra)
    return [
        GroupChange(c.partition, c.file_id, c.before.select(wanted), c.after.select(wanted))
        for c in cached[1]
    ]


_MEMO = "group_changes"


def _secondary_columns(ctx: IndexContext) -> list[str]:
    """The one-column identity secondary indexes' columns the table declares (others are
    refused by their generator)."""
    definitions = ctx.index_defs.get("indexDefinitions") or {}
    out: list[str] = []
    for partition in ctx.config.metadata_partitions:
        definition = definitions.get(partition)
        if not partition.startswith("secondary_index_") or not isinstance(definition, dict):
            continue
        fields = list(definition.get("sourceFields") or [])
        if len(fields) == 1 and "." not in str(fields[0]) and str(fields[0]) not in out:
            out.append(str(fields[0]))
    return out


def _read_changes(
    ctx: IndexContext, meta: CommitMetadata, columns: Sequence[str], extra: Sequence[str]
) -> tuple[list[str], list[GroupChange]]:
    """The touched groups before and after, holding ``columns`` and those of ``extra`` the
    table has; with the columns read."""
    written = _written(meta)
    replaced = {(p, fid) for p, fids in ctx.replaced.items() for fid in fids}
    groups = sorted(set(written) | replaced)
    if not groups:
        return list(columns), []
    timeline = load_timeline(ctx.storage, ctx.config)
    before, after = _visibility(ctx, timeline)
    ours = {path for paths in written.values() for path in paths}
    listing = _listing(ctx, {p for p, _ in groups}, {g[1] for g in groups}, ours)
    _check_written(ours, {f.info.path for f in listing})
    files = [f for f in listing if f.name.instant != ctx.instant or f.info.path in ours]
    completion = ctx.config.table_version >= 8
    old = {(s.partition_path, s.file_id): s for s in latest_slices(files, before, completion)}
    new = {(s.partition_path, s.file_id): s for s in latest_slices(files, after, completion)}
    full = table_schema(ctx, [s for s in old.values()])
    # Declared index columns the table lacks are not read (their generator refuses them).
    columns = [*columns, *(c for c in extra if c in full.names)]
    schema = _merge_columns(ctx, full, columns)
    wanted = [RECORD_KEY, PARTITION_PATH, *columns]
    old_slices = [old[g] for g in groups if g in old]
    new_slices = [new[g] for g in groups if g in new and g in written]
    old_rows = _reader(ctx, timeline, before, schema, old_slices, wanted)
    new_rows = _reader(ctx, timeline, after, schema, new_slices, wanted)
    empty = pa.schema([_field(schema, c) for c in wanted]).empty_table()
    return columns, [
        GroupChange(
            partition=group[0],
            file_id=group[1],
            before=old_rows[group].select(wanted) if group in old_rows else empty,
            after=new_rows[group].select(wanted) if group in new_rows else empty,
        )
        for group in groups
    ]


def table_schema(ctx: IndexContext, slices: Sequence[FileSlice]) -> pa.Schema:
    """The table's full schema (meta fields included when stored) as the instant writes it:
    its writer schema, else the table's create schema, else a previous base file's (the
    snapshot reader's rule, ``state._schema``)."""
    meta = ctx.meta if ctx.meta is not None else CommitMetadata()
    writer = Instant(ctx.instant, COMMIT, COMPLETED, None, "")
    return _schema(ctx.storage, [writer], {ctx.instant: meta}, tuple(slices), ctx.config)


def _written(meta: CommitMetadata) -> dict[tuple[str, str], set[str]]:
    """(partition, file id) -> the paths of the files the write stats say were written."""
    written: dict[tuple[str, str], set[str]] = {}
    for stat in meta.write_stats():
        paths = written.setdefault((stat.partition_path or "", stat.file_id), set())
        if stat.path:
            paths.add(stat.path)
        prefix = f"{stat.partition_path}/" if stat.partition_path else ""
        paths.update(prefix + name for name in stat.log_files)
    return written


def _check_written(ours: set[str], listed: set[str]) -> None:
    """Every file the write stats name must be a listed Hudi data file: reading a group
    without it would turn its records into deletions.

    Raises:
        UnsupportedFeatureError: an external (adopted) file, which these indexes do not
            cover.
        CorruptTableError: a named file is not on storage.
    """
    for path in sorted(ours - listed):
        if path.endswith(EXTERNAL_SUFFIX):
            raise UnsupportedFeatureError(
                "hudi-record-level-index-external-files",
                f"{path}: lakecore does not index the records of adopted external files",
            )
        raise CorruptTableError(f"{path}: the instant's write stats name a file not on storage")


def _merge_columns(ctx: IndexContext, schema: pa.Schema, columns: Sequence[str]) -> pa.Schema:
    """``schema`` narrowed to what merging a slice and keying its records needs (meta fields,
    key, ordering, partition and delete-marker fields) plus ``columns``: a merged slice is
    decoded for these only, however wide the table."""
    config = ctx.config
    needed = {*META_FIELDS, IS_DELETED, *config.record_key_fields, *config.partition_fields}
    needed.update(config.ordering_fields)
    needed.update(columns)
    return pa.schema([f for f in schema if f.name in needed])


def _field(schema: pa.Schema, name: str) -> pa.Field:
    index = schema.get_field_index(name)
    return schema.field(index) if index >= 0 else pa.field(name, pa.string())


def _visibility(ctx: IndexContext, timeline: Timeline) -> tuple[Visible, Visible]:
    """The completed timeline without the instant, and with it (completed last)."""
    done = [i for i in timeline.completed_write_instants() if i.timestamp != ctx.instant]
    completion = {i.timestamp: i.completion_time for i in done if i.completion_time}
    start = timeline_start(timeline)
    before = Visible(frozenset(i.timestamp for i in done), completion, archived_before=start)
    after = Visible(
        before.instants | {ctx.instant},
        {**completion, ctx.instant: _AFTER_EVERYTHING},
        archived_before=start,
    )
    return before, after


def _listing(
    ctx: IndexContext, partitions: set[str], file_ids: set[str], ours: set[str]
) -> list[SliceFile]:
    """The data files of the touched groups: from the metadata table's ``files`` partition
    (as the write itself lists them; the instant's own files, not listed there yet, are the
    write stats' files found on storage), else by listing the touched partitions."""
    listed = read_files_partition(ctx.storage, ctx.config)
    infos: list[FileInfo] = []
    if listed is None:
        for partition in sorted(partitions):
            infos.extend(ctx.storage.list_dir(partition))
    else:
        for partition in sorted(partitions):
            prefix = f"{partition}/" if partition else ""
            files = listed.get(partition, {})
            infos.extend(FileInfo(prefix + name, size, 0) for name, size in files.items())
        known = {i.path for i in infos}
        for path in sorted(ours - known):
            try:
                infos.append(ctx.storage.head(path))
            except FileNotFoundError:
                continue  # _check_written names it
    return [f for f in data_files(infos) if f.name.file_id in file_ids]


def _reader(
    ctx: IndexContext,
    timeline: Timeline,
    visible: Visible,
    schema: pa.Schema,
    slices: Sequence[FileSlice],
    columns: Sequence[str],
) -> dict[tuple[str, str], pa.Table]:
    if not slices:
        return {}
    # SliceRows reads through a HudiState; only these slices and this visibility matter.
    state = HudiState(ctx.config, timeline, None, visible, tuple(slices), schema, ReadOptions())
    rows = SliceRows(ctx.storage, state)
    # A slice without log files is read for ``columns`` only; a merged one needs every column.
    return {(s.partition_path, s.file_id): rows.columns(i, columns) for i, s in enumerate(slices)}
