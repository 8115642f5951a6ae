"""Cleaning: deleting file slices that no retained commit needs (Hudi's KEEP_LATEST_COMMITS).

With ``retain_commits = N`` the earliest instant to retain ``E`` is the N-th latest completed
write. A snapshot at ``E`` or later reads, per file group, the latest slice whose base instant is
at or before its instant; so each group keeps every slice based after ``E`` and the latest one
based at or before ``E``, and loses the older ones (base file and log files). File groups that a
replace commit at or before ``E`` replaced are deleted whole. Files of instants that are not
completed are never touched, and ``E`` is moved back before the earliest pending write.

The instant: ``<ts>.clean.requested`` and ``.clean.inflight`` hold the ``HoodieCleanerPlan``
(the files to delete), the completed ``<ts>.clean`` the ``HoodieCleanMetadata``.
"""

from __future__ import annotations

import time
from collections import defaultdict

from lakecore.storage import Storage
from lakecore_hudi.archived_writes import archived_completions, timeline_start
from lakecore_hudi.mdt.index_gate import ensure_index_partitions_writable
from lakecore_hudi.mdt.maintain import record_clean
from lakecore_hudi.names import LogFile
from lakecore_hudi.state import REPLACE_ACTIONS, HudiState, commit_metadata
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.timeline.active import Timeline, load_timeline
from lakecore_hudi.timeline.clean_metadata import (
    CleanerPlan,
    CleanMetadata,
    CleanPartitionMetadata,
    encode_clean_metadata,
    encode_cleaner_plan,
)
from lakecore_hudi.timeline.instants import CLEAN, Instant
from lakecore_hudi.timeline.lifecycle import complete, write_inflight
from lakecore_hudi.view import SliceFile, data_files, split_path
from lakecore_hudi.write.archive import archive_after_commit
from lakecore_hudi.write.layout import ensure_writable
from lakecore_hudi.write.planned import start_instant
from lakecore_hudi.write.rollback import ROLLBACK_ACTIONS, deletable_path

POLICY = "KEEP_LATEST_COMMITS"


def clean(storage: Storage, state: HudiState, retain_commits: int) -> list[str]:
    """Delete the files no snapshot at or after the ``retain_commits``-th latest write needs;
    returns their table-relative paths (none: no clean instant is written). Then archive the
    timeline if it needs it (``archive.archive_after_commit``).

    Raises:
        ValueError: ``retain_commits`` is below 1.
        UnsupportedFeatureError: the table is not writable by lakecore.
    """
    doomed = _clean(storage, state, retain_commits)
    archive_after_commit(storage, state.config, state.timeline, new_cleans=1 if doomed else 0)
    return doomed


def _clean(storage: Storage, state: HudiState, retain_commits: int) -> list[str]:
    if retain_commits < 1:
        raise ValueError(f"retain_commits must be at least 1, not {retain_commits}")
    config = state.config
    ensure_writable(config)
    ensure_index_partitions_writable(storage, config, state.table_schema)
    timeline = load_timeline(storage, config)
    writes = timeline.completed_write_instants()
    if len(writes) <= retain_commits:
        return []
    earliest = _cap_at_pending(timeline, writes[-retain_commits])
    if earliest is None:
        return []
    # The files come from listing the table, never from metadata paths; checking them again
    # keeps "a clean deletes only data files inside the table" true whatever the listing
    # returns (never a file under .hoodie/).
    doomed = [
        deletable_path(p, storage.root, source=f"listing of {storage.root}")
        for p in files_to_clean(storage, timeline, earliest, config)
    ]
    if not doomed:
        return []
    by_partition: dict[str, list[str]] = defaultdict(list)
    for path in doomed:
        by_partition[split_path(path)[0]].append(path)
    plan = CleanerPlan(
        POLICY,
        (earliest.timestamp, earliest.action, "COMPLETED"),
        {p: tuple(storage.resolve(f) for f in files) for p, files in by_partition.items()},
    )
    started = time.time()
    content = encode_cleaner_plan(plan)
    ts = start_instant(storage, config, CLEAN, content, heartbeat=False)
    write_inflight(storage, config, CLEAN, ts, content)
    for path in doomed:
        storage.delete(path)
    parts = {
        p: CleanPartitionMetadata(
            partition_path=p,
            policy=POLICY,
            delete_path_patterns=tuple(split_path(f)[1] for f in files),
            success_delete_files=tuple(split_path(f)[1] for f in files),
            is_partition_deleted=False,
        )
        for p, files in by_partition.items()
    }
    meta = CleanMetadata(
        start_clean_time=ts,
        time_taken_ms=int((time.time() - started) * 1000),
        total_files_deleted=len(doomed),
        earliest_commit_to_retain=earliest.timestamp,
        last_completed_commit_timestamp=writes[-1].timestamp,
        policy=POLICY,
        partition_metadata=parts,
    )
    deleted = {p: [split_path(f)[1] for f in files] for p, files in by_partition.items()}
    record_clean(storage, config, ts, deleted)  # the metadata table's delta commit first
    complete(storage, config, CLEAN, ts, encode_clean_metadata(meta))
    return doomed


def _cap_at_pending(timeline: Timeline, earliest: Instant) -> Instant | None:
    """``earliest``, or an older write when a pending write started before it: as Hudi's
    cleaner, never clean what the snapshot a pending writer works from may need."""
    pending = [i.timestamp for i in timeline.pending() if i.action in ROLLBACK_ACTIONS]
    if not pending or earliest.timestamp < min(pending):
        return earliest
    before = [w for w in timeline.completed_write_instants() if w.timestamp < min(pending)]
    return before[-1] if before else None


def files_to_clean(
    storage: Storage, timeline: Timeline, earliest: Instant, config: TableConfig
) -> list[str]:
    """Table-relative paths of the data files no snapshot at or after ``earliest`` reads.

    Files of archived instants (older than the active timeline) are completed ones too; a
    table version 8+ log file among them is placed by its archived completion time (kept when
    the archive does not hold it)."""
    writes = timeline.completed_write_instants()
    completed = {i.timestamp: (i.completion_time or i.timestamp) for i in writes}
    replaced = _replaced_by(storage, timeline, earliest)
    groups: dict[tuple[str, str], list[SliceFile]] = defaultdict(list)
    listed = data_files(storage.list_all(""))
    first = timeline_start(timeline)
    older = {f.name.instant for f in listed if f.name.instant < first}
    completed.update(archived_completions(storage, config, older))
    for f in listed:
        groups[(split_path(f.info.path)[0], f.name.file_id)].append(f)
    doomed: list[str] = []
    for group, files in groups.items():
        done = [f for f in files if f.name.instant in completed or isinstance(f.name, LogFile)]
        if group in replaced:
            doomed += [f.info.path for f in done if _is_settled(f, completed)]
            continue
        doomed += _old_slices(done, earliest.timestamp, completed, timeline.layout >= 2)
    return sorted(doomed)


def _is_settled(f: SliceFile, completed: dict[str, str]) -> bool:
    # A table version 6 log names its base instant, not its writer; it is settled with it.
    return f.name.instant in completed


def _old_slices(
    files: list[SliceFile], earliest: str, completed: dict[str, str], by_completion: bool
) -> list[str]:
    bases = sorted({f.name.instant for f in files if not isinstance(f.name, LogFile)})
    older = [b for b in bases if b <= earliest]
    if len(older) <= 1:
        return []
    kept_from = older[-1]
    doomed_bases = set(older[:-1])
    out = []
    for f in files:
        if not isinstance(f.name, LogFile):
            if f.name.instant in doomed_bases:
                out.append(f.info.path)
            continue
        if f.name.is_cdc:
            continue
        slice_base = _log_slice(f.name, bases, completed, by_completion)
        if slice_base is not None and slice_base < kept_from:
            out.append(f.info.path)
    return out


def _log_slice(
    log: LogFile, bases: list[str], completed: dict[str, str], by_completion: bool
) -> str | None:
    """The base instant of the slice a log file belongs to (None: unknown, keep it)."""
    if not by_completion:
        return log.instant if log.instant in bases else None
    finished = completed.get(log.instant)
    if finished is None:
        return None  # its delta commit is not completed
    before = [b for b in bases if b < finished]
    return before[-1] if before else None


def _replaced_by(storage: Storage, timeline: Timeline, earliest: Instant) -> set[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    for i in timeline.completed_write_instants():
        if i.action in REPLACE_ACTIONS and i.timestamp <= earliest.timestamp:
            out.update(commit_metadata(storage, timeline, i).replaced_file_ids())
    return out
