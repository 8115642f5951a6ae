"""Keeping the metadata table's ``files`` partition in step with the data timeline.

Hudi's order (``HoodieBackedTableMetadataWriter``): every data instant that changes files
(commit, delta commit, replace commit, compaction commit, clean) gets a metadata-table delta
commit with the SAME instant time, completed BEFORE the data instant completes. Readers trust
a metadata delta commit only once its data instant completed (``files_partition``), so a
writer dying between the two leaves nothing visible; the data rollback of that instant then
rolls the metadata delta commit back as well (``rollback_metadata``).

A delta commit (table version 8 naming) writes one new log file
``files/.files-0000-0_<instant>.log.1_0-0-0`` holding one HFile data block of the instant's
``files`` records, with the requested, inflight and completed instant files.

Before it, as Hudi runs table services first, the partition is compacted once
``MAX_DELTA_COMMITS`` delta commits (``hoodie.metadata.compact.max.delta.commits``, default
10) have landed since the last compaction, under a new instant time: the folded listing
becomes base file ``files-0000-0_0-0-0_<compaction>.hfile`` (plan, inflight, ``commit``).
Compaction waits while another data instant is pending: its metadata delta commit may not
be valid yet and must not be folded into a base file. After compacting, the metadata table
is cleaned: file slices older than the previous one are deleted under a ``clean`` instant,
and its timeline archived (``mdt.archive``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from lakecore.storage import Storage
from lakecore_hudi.log.format import BlockType, HeaderKey, encode_log_block
from lakecore_hudi.mdt.column_stats import _load_timeline, _slice_files
from lakecore_hudi.mdt.files_partition import FILES_PARTITION, _records, valid_data_instants
from lakecore_hudi.mdt.files_records import (
    FileListing,
    combine,
    encode_cells,
    fold_listing,
    listing_records,
    schema_json,
    snapshot_records,
)
from lakecore_hudi.mdt.hfile_writer import write_hfile
from lakecore_hudi.mdt.prefixed import PrefixedStorage
from lakecore_hudi.mdt.table import (
    FILES_FILE_ID,
    files_hfile,
    metadata_config,
    metadata_storage,
)
from lakecore_hudi.names import base_file_name, log_file_name
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.timeline.active import load_timeline
from lakecore_hudi.timeline.instants import CLEAN, COMMIT, COMPACTION, DELTA_COMMIT, REQUESTED
from lakecore_hudi.timeline.lifecycle import (
    complete,
    new_instant_time,
    write_inflight,
    write_requested,
)
from lakecore_hudi.timeline.metadata import (
    CleanerPlan,
    CleanMetadata,
    CleanPartitionMetadata,
    CommitMetadata,
    WriteStat,
    encode_clean_metadata,
    encode_cleaner_plan,
    encode_commit_metadata,
    parse_cleaner_plan,
)
from lakecore_hudi.view import FileSlice, latest_slices

__all__ = [
    "MAX_DELTA_COMMITS",
    "commit_listing",
    "record_clean",
    "record_commit",
    "record_listing",
]

MAX_DELTA_COMMITS = 10
_WRITE_TOKEN = "0-0-0"


def commit_listing(meta: CommitMetadata) -> FileListing:
    """The files a data commit adds, from its write stats (name and size of each file)."""
    added: dict[str, dict[str, int]] = {}
    for partition, stats in meta.partition_to_write_stats.items():
        for stat in stats:
            if stat.path:
                name = stat.path.rsplit("/", 1)[-1]
                added.setdefault(partition, {})[name] = stat.file_size_in_bytes
    return FileListing(added)


def record_commit(storage: Storage, config: TableConfig, ts: str, meta: CommitMetadata) -> None:
    """The metadata delta commit of data instant ``ts`` (a write or compaction commit), when
    the table has a metadata table; a no-op otherwise. The caller holds the table lock and
    completes ``ts`` right after.

    Raises:
        OSError: the storage failed (the data instant must not complete then).
    """
    if config.metadata_partitions:
        record_listing(storage, config, ts, commit_listing(meta))


def record_clean(
    storage: Storage, config: TableConfig, ts: str, deleted: Mapping[str, Sequence[str]]
) -> None:
    """The metadata delta commit of clean ``ts``: ``deleted`` maps partitions to the file
    names it deleted. A no-op without a metadata table."""
    if config.metadata_partitions:
        record_listing(storage, config, ts, FileListing({}, deleted=deleted))


def record_listing(storage: Storage, config: TableConfig, ts: str, change: FileListing) -> None:
    """Compact the ``files`` partition if due, then write and complete metadata delta
    commit ``ts`` recording ``change``.

    Raises:
        OSError: the storage failed.
    """
    mdt = metadata_storage(storage)
    mconfig = metadata_config(mdt)
    if mconfig is None:
        return
    _compact_if_due(storage, config, mdt, mconfig, ts)
    gone = _deleted_by_pending_cleans(storage, config, ts)
    if gone:
        deleted = {p: list(names) for p, names in change.deleted.items()}
        for p, names in gone.items():
            deleted.setdefault(p, []).extend(names)
        change = FileListing(change.added, deleted, change.deleted_partitions)
    version = mconfig.table_version
    cells = encode_cells(combine(listing_records(change)), version)
    schema = schema_json(version)
    data = write_hfile(cells, {"schema": schema.encode()}, create_time_ms=_now_ms())
    header = {HeaderKey.INSTANT_TIME: ts, HeaderKey.SCHEMA: schema}
    block = encode_log_block(BlockType.HFILE_DATA, header, data)
    name = log_file_name(FILES_FILE_ID, ts, 1, _WRITE_TOKEN)
    path = f"{FILES_PARTITION}/{name}"
    write_requested(mdt, mconfig, DELTA_COMMIT, ts)
    write_inflight(mdt, mconfig, DELTA_COMMIT, ts)
    mdt.put(path, block)
    stat = WriteStat(
        file_id=FILES_FILE_ID,
        path=path,
        partition_path=FILES_PARTITION,
        prev_commit=ts,
        num_writes=len(cells),
        num_update_writes=len(cells),
        total_write_bytes=len(block),
        file_size_in_bytes=len(block),
        base_file="",
        log_files=(name,),
        log_version=1,
        log_offset=0,
    )
    meta = CommitMetadata(
        partition_to_write_stats={FILES_PARTITION: [stat]},
        operation_type="UPSERT_PREPPED",
        extra_metadata={"schema": schema},
    )
    complete(mdt, mconfig, DELTA_COMMIT, ts, encode_commit_metadata(meta, mconfig.table_version))


def _deleted_by_pending_cleans(
    storage: Storage, config: TableConfig, ts: str
) -> dict[str, list[str]]:
    """Files a clean that never completed (its writer failed after deleting) already
    deleted: the clean's own metadata delta commit does not count until it completes, which
    lakecore's cleaner does not resume, so the next delta commit records the deletions."""
    timeline = load_timeline(storage, config)
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


def _now_ms() -> int:
    return int(time.time() * 1000)


def _compact_if_due(
    storage: Storage, config: TableConfig, mdt: PrefixedStorage, mconfig: TableConfig, ts: str
) -> None:
    data_timeline = load_timeline(storage, config)
    if any(i.timestamp != ts for i in data_timeline.pending()):
        return  # another data instant's metadata delta commit may not be valid yet
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
        deltas = [i for i in deltas if not i.timestamp.startswith("00000000000000")]
    if len(deltas) < MAX_DELTA_COMMITS:
        return
    _compact(storage, config, mdt, mconfig, ts)


def _files_slice(storage: Storage, mconfig: TableConfig) -> tuple[FileSlice, ...]:
    timeline = _load_timeline(storage, mconfig)
    listing = storage.list_dir(f".hoodie/metadata/{FILES_PARTITION}")
    return tuple(latest_slices(_slice_files(listing), timeline.visible, True))


def _compact(
    storage: Storage, config: TableConfig, mdt: PrefixedStorage, mconfig: TableConfig, ts: str
) -> None:
    from lakecore_hudi.write.compaction import encode_compaction_plan  # imports write.commit

    slices = _files_slice(storage, mconfig)
    timeline = load_timeline(mdt, mconfig)
    stamps = [ts, timeline.max_completion_time() or "", *(i.timestamp for i in timeline.instants)]
    instant = new_instant_time(max(stamps))
    plan = encode_compaction_plan(list(slices))
    timeline_state = _load_timeline(storage, mconfig)
    listing = fold_listing(
        _records(
            storage, mconfig.table_version, timeline_state, *valid_data_instants(storage, config)
        )
    )
    name = base_file_name(FILES_FILE_ID, _WRITE_TOKEN, instant, "hfile")
    records = snapshot_records(listing)
    if mconfig.table_version >= 9:  # Hudi 1.1 names the file in its compacted records
        records = [{**r, "_hoodie_file_name": name} for r in records]
    content = files_hfile(records, mconfig.table_version)
    write_requested(mdt, mconfig, COMPACTION, instant, plan)
    write_inflight(mdt, mconfig, COMPACTION, instant, plan)
    mdt.put(f"{FILES_PARTITION}/{name}", content)
    stat = WriteStat(
        file_id=FILES_FILE_ID,
        path=f"{FILES_PARTITION}/{name}",
        partition_path=FILES_PARTITION,
        prev_commit="null",
        num_writes=len(listing),
        num_inserts=len(listing),
        total_write_bytes=len(content),
        file_size_in_bytes=len(content),
        total_log_files_compacted=sum(len(s.log_files) for s in slices),
    )
    meta = CommitMetadata(
        partition_to_write_stats={FILES_PARTITION: [stat]},
        operation_type="COMPACT",
        extra_metadata={"schema": schema_json(mconfig.table_version)},
        compacted=True,
    )
    complete(mdt, mconfig, COMPACTION, instant, encode_commit_metadata(meta, mconfig.table_version))
    _clean(storage, mdt, mconfig, instant)
    from lakecore_hudi.mdt.archive import archive_metadata_timeline  # imports write.archive

    archive_metadata_timeline(storage, config, mdt, mconfig)


def _clean(storage: Storage, mdt: PrefixedStorage, mconfig: TableConfig, compaction: str) -> None:
    """Delete the ``files`` slices older than the one the compaction ``compaction`` replaced
    (Hudi keeps the previous slice for readers still on it), under a clean instant."""
    listing = mdt.list_dir(FILES_PARTITION)
    bases = sorted(
        i.path.rsplit("_", 1)[1].split(".")[0] for i in listing if i.path.endswith(".hfile")
    )
    if len(bases) < 3:
        return
    keep_from = bases[-2]  # the slice just compacted stays; everything older goes
    timeline = load_timeline(mdt, mconfig)
    completion = {i.timestamp: timeline.completion_time(i) or "" for i in timeline.completed()}
    doomed = []
    for info in listing:
        name = info.path.rsplit("/", 1)[1]
        if name.endswith(".hfile"):
            if name.rsplit("_", 1)[1].split(".")[0] < keep_from:
                doomed.append(name)
        elif name.startswith(f".{FILES_FILE_ID}_"):
            instant = name[len(FILES_FILE_ID) + 2 :].split(".")[0]
            # A log file belongs to the latest slice whose base instant precedes its
            # completion (version 8 file slicing).
            if completion.get(instant, "~") < keep_from:
                doomed.append(name)
    if not doomed:
        return
    ts = new_instant_time(max([compaction, *completion.values()]))
    plan = CleanerPlan(
        "KEEP_LATEST_FILE_VERSIONS",
        (compaction, COMMIT, "COMPLETED"),
        {FILES_PARTITION: tuple(mdt.resolve(f"{FILES_PARTITION}/{n}") for n in doomed)},
    )
    content = encode_cleaner_plan(plan)
    write_requested(mdt, mconfig, CLEAN, ts, content)
    write_inflight(mdt, mconfig, CLEAN, ts, content)
    for name in doomed:
        mdt.delete(f"{FILES_PARTITION}/{name}")
    meta = CleanMetadata(
        start_clean_time=ts,
        total_files_deleted=len(doomed),
        earliest_commit_to_retain=compaction,
        last_completed_commit_timestamp=compaction,
        policy="KEEP_LATEST_FILE_VERSIONS",
        partition_metadata={
            FILES_PARTITION: CleanPartitionMetadata(
                partition_path=FILES_PARTITION,
                policy="KEEP_LATEST_FILE_VERSIONS",
                delete_path_patterns=tuple(doomed),
                success_delete_files=tuple(doomed),
                is_partition_deleted=False,
            )
        },
    )
    complete(mdt, mconfig, CLEAN, ts, encode_clean_metadata(meta))
