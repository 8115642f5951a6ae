"""Keeping the metadata table in step with the data timeline: every maintained partition.

Hudi's order (``HoodieBackedTableMetadataWriter``): every data instant that changes files
(commit, delta commit, replace commit, compaction commit, clean) gets a metadata-table delta
commit with the SAME instant time, completed BEFORE the data instant completes. Readers trust
a metadata delta commit only once its data instant completed (``files_partition``), so a
writer dying between the two leaves nothing visible; the data rollback of that instant then
rolls the metadata delta commit back as well (``rollback``).

The delta commit holds the records of every partition the table's metadata table has
(``partition_spec``: ``files`` and each wired index partition), each generator told about the
instant through an ``IndexContext``; ``delta_commit`` routes them to file groups and writes
one log file per touched file group.

Before it, as Hudi runs table services first, the metadata table is compacted once
``MAX_DELTA_COMMITS`` delta commits (``hoodie.metadata.compact.max.delta.commits``, default
10) have landed since the last compaction, under a new instant time (``compaction``: every
file group of every partition). Compaction waits while another data instant (but a clean: see
``_compact_if_due``) is pending: its metadata delta commit may not be valid yet and must not be
folded into a base file. After compacting, the metadata table is cleaned (``clean``) and its
timeline archived (``archive``).
A metadata compaction or clean a dead writer left pending is rolled back or finished first
(``recovery``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from lakecore.errors import CorruptTableError
from lakecore.storage import Storage
from lakecore_hudi.mdt.clean import clean_metadata
from lakecore_hudi.mdt.compaction import compact_metadata
from lakecore_hudi.mdt.delta_commit import plan_log_writes, write_delta_commit
from lakecore_hudi.mdt.files_partition import is_init_instant, valid_data_instants
from lakecore_hudi.mdt.files_records import FileListing, listing_records
from lakecore_hudi.mdt.index_context import IndexContext
from lakecore_hudi.mdt.partition_spec import FILES, PartitionSpec, commit_listing, spec_for
from lakecore_hudi.mdt.prefixed import PrefixedStorage
from lakecore_hudi.mdt.recovery import recover_table_services
from lakecore_hudi.mdt.table import metadata_config, metadata_storage
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.timeline.active import Timeline, load_timeline
from lakecore_hudi.timeline.clean_metadata import parse_cleaner_plan
from lakecore_hudi.timeline.commit_metadata import CommitMetadata
from lakecore_hudi.timeline.instants import CLEAN, COMMIT, DELTA_COMMIT, REQUESTED
from lakecore_hudi.timeline.lifecycle import new_instant_time

__all__ = [
    "MAX_DELTA_COMMITS",
    "commit_listing",
    "record_clean",
    "record_commit",
    "record_listing",
]

MAX_DELTA_COMMITS = 10
INDEX_DEFS_PATH = ".hoodie/.index_defs/index.json"


def record_commit(storage: Storage, config: TableConfig, ts: str, meta: CommitMetadata) -> None:
    """The metadata delta commit of data instant ``ts`` (a write or compaction commit), when
    the table has a metadata table; a no-op otherwise. The caller holds the table lock and
    completes ``ts`` right after.

    Raises:
        OSError: the storage failed (the data instant must not complete then).
        LakecoreError: a generator refused or failed (``UnsupportedFeatureError``,
            ``SchemaError``, ``CorruptTableError`` naming the file), a record did not encode
            (``CommitError``), or a partition has no file group (``CorruptTableError``): raised
            before the instant's metadata delta commit is written (a metadata compaction that
            was due may have run: it is complete and stands); the data instant must not
            complete.
    """
    if config.metadata_partitions:
        _record(storage, config, ts, meta, {}, commit_listing(meta))


def record_clean(
    storage: Storage, config: TableConfig, ts: str, deleted: Mapping[str, Sequence[str]]
) -> None:
    """The metadata delta commit of clean ``ts``: ``deleted`` maps partitions to the file
    names it deleted. A no-op without a metadata table."""
    if config.metadata_partitions:
        _record(storage, config, ts, None, deleted, FileListing({}, deleted=deleted))


def record_listing(
    storage: Storage,
    config: TableConfig,
    ts: str,
    change: FileListing,
    meta: CommitMetadata | None = None,
) -> None:
    """Compact the metadata table if due, then write and complete metadata delta commit
    ``ts`` recording ``change`` in the ``files`` partition (and, for the other partitions,
    what ``meta``, the instant's write stats, adds: without it they get nothing).

    Raises:
        OSError: the storage failed.
    """
    _record(storage, config, ts, meta, {}, change)


def _record(
    storage: Storage,
    config: TableConfig,
    ts: str,
    meta: CommitMetadata | None,
    cleaned: Mapping[str, Sequence[str]],
    change: FileListing,
) -> None:
    mdt = metadata_storage(storage)
    mconfig = metadata_config(mdt)
    if mconfig is None:
        return
    data_timeline = load_timeline(storage, config)
    specs = _specs(config)
    _compact_if_due(storage, config, data_timeline, mdt, mconfig, specs, ts)
    gone = _deleted_by_pending_cleans(storage, data_timeline, ts)
    if gone:
        deleted = {p: list(names) for p, names in change.deleted.items()}
        for p, names in gone.items():
            deleted.setdefault(p, []).extend(names)
        change = FileListing(change.added, deleted, change.deleted_partitions)
    ctx = IndexContext(
        storage=storage,
        config=config,
        instant=ts,
        action=_action(data_timeline, ts, meta),
        meta=meta,
        cleaned=cleaned,
        replaced=dict(meta.partition_to_replace_file_ids) if meta is not None else {},
        table_version=mconfig.table_version,
        index_defs=_index_defs(storage, config),
    )
    # A clean that died after deleting files never completes (lakecore's cleaner does not
    # resume it): its deletions are recorded again here, as the clean's own records would be.
    repair = replace(ctx, action=CLEAN, meta=None, cleaned=gone, replaced={}) if gone else None
    records: dict[str, tuple[PartitionSpec, list[dict[str, Any]]]] = {}
    for spec in specs:
        if spec is FILES:
            records[spec.name] = (spec, listing_records(change))
            continue
        items = spec.commit_records(repair) if repair is not None else []
        if meta is not None or cleaned:
            items += spec.commit_records(ctx)
        records[spec.name] = (spec, items)
    writes = plan_log_writes(mdt, mconfig.table_version, ts, records)
    write_delta_commit(mdt, mconfig, ts, writes)


def _specs(config: TableConfig) -> list[PartitionSpec]:
    """The specs of the table's metadata partitions (``layout`` refused the table before
    any work if one is not maintained)."""
    return [spec_for(p) for p in config.metadata_partitions]


def _action(timeline: Timeline, ts: str, meta: CommitMetadata | None) -> str:
    """The data instant's action as the timeline has it (a compaction is ``commit``)."""
    for instant in timeline.instants:
        if instant.timestamp == ts:
            return COMMIT if instant.action == "compaction" else instant.action
    if meta is None:
        return CLEAN
    return COMMIT if meta.compacted else DELTA_COMMIT if _has_logs(meta) else COMMIT


def _has_logs(meta: CommitMetadata) -> bool:
    return any(s.log_files for s in meta.write_stats())


def _index_defs(storage: Storage, config: TableConfig) -> Mapping[str, Any]:
    path = config.raw.get("hoodie.table.index.defs.path") or INDEX_DEFS_PATH
    try:
        text = storage.read(path)
    except FileNotFoundError:
        return {}
    try:
        parsed = json.loads(text)
    except ValueError:
        raise CorruptTableError(f"{path}: index definitions are not valid JSON") from None
    if not isinstance(parsed, dict):
        raise CorruptTableError(f"{path}: index definitions are not a JSON object")
    return parsed


def _deleted_by_pending_cleans(
    storage: Storage, timeline: Timeline, ts: str
) -> dict[str, list[str]]:
    """Files a clean that never completed (its writer failed after deleting) already
    deleted: the clean's own metadata delta commit does not count until it completes, which
    lakecore's cleaner does not resume, so the next delta commit records the deletions."""
    gone: dict[str, list[str]] = {}
    for instant in timeline.pending():
        if instant.action != CLEAN or instant.timestamp == ts:
            continue
        requested = next(
            i
            for i in timeline.instants
            if i.timestamp == instant.timestamp and i.state == REQUESTED
        )
        plan = parse_cleaner_plan(timeline.read_details(storage, requested), requested.file_name)
        for partition, paths in plan.files_to_delete.items():
            for path in paths:
                name = path.rsplit("/", 1)[-1]
                if not storage.exists(f"{partition}/{name}" if partition else name):
                    gone.setdefault(partition, []).append(name)
    return gone


def _compact_if_due(
    storage: Storage,
    config: TableConfig,
    data_timeline: Timeline,
    mdt: PrefixedStorage,
    mconfig: TableConfig,
    specs: Sequence[PartitionSpec],
    ts: str,
) -> None:
    if any(i.timestamp != ts and i.action != CLEAN for i in data_timeline.pending()):
        return  # another data instant's metadata delta commit may not be valid yet
    # A pending clean is a dead one (cleans run under the lock and are not resumed): its
    # delta commit, if any, is invalid and left out, and its deletions are recorded again by
    # every later delta commit (``_deleted_by_pending_cleans``), so it must not stop compaction.
    recover_table_services(mdt, mconfig, [s.name for s in specs])
    timeline = load_timeline(mdt, mconfig)
    if timeline.pending():
        return
    compactions = [i.timestamp for i in timeline.completed() if i.action == COMMIT]
    last = max(compactions, default="")
    deltas = [
        i
        for i in timeline.completed()
        if i.action == DELTA_COMMIT and (timeline.completion_time(i) or "") > last
    ]
    if last == "":
        deltas = [i for i in deltas if not is_init_instant(i.timestamp)]
    if len(deltas) < MAX_DELTA_COMMITS:
        return
    stamps = [ts, timeline.max_completion_time() or "", *(i.timestamp for i in timeline.instants)]
    instant = new_instant_time(max(stamps))
    completed, first = valid_data_instants(storage, config)

    def valid(data_instant: str) -> bool:
        if is_init_instant(data_instant) or data_instant in completed:
            return True
        return first is not None and data_instant < first

    compact_metadata(storage, mdt, mconfig, specs, instant, valid)
    clean_metadata(mdt, mconfig, [s.name for s in specs], instant)
    from lakecore_hudi.mdt.archive import archive_metadata_timeline  # imports write.archive

    archive_metadata_timeline(storage, config, mdt, mconfig)
