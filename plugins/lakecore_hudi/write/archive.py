"""Archiving: moving old completed instants from the active timeline into the archive.

``archive`` runs under the table lock (as Hudi's archiver takes its transaction lock):

1. list the active timeline and pick the instants to archive (``archive_plan``);
2. write them to the archive: the LSM timeline for table version 8+ (``lsm_writer``), the
   classic archive log for version 6 (``archive_v1_writer``);
3. only then delete their files from the active timeline: requested and inflight files first,
   then the completed files oldest first (as Hudi, so that no reader or table service sees a
   pending instant whose completed file is already gone, nor a hole in the timeline);
4. (LSM) compact full layers and clean old manifests.

A crash (or storage fault) at any step loses no instant: before step 2 finishes the archive is
as it was; afterwards an instant may be in both places, which readers tolerate (lakecore's
history and time travel read the active timeline first; the archive's copy is not written
twice by the next run, which picks the same instants and finishes the deletes).

``archive_after_commit`` is the hook writes, compactions and cleans call once they completed:
it archives when the timeline has grown past ``hoodie.keep.max.commits`` and never raises (the
commit is done; a failed archiving is retried by the next commit).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lakecore.errors import (
    CommitConflictError,
    InvalidArgumentError,
    LakecoreError,
    StorageError,
    UnsupportedFeatureError,
)
from lakecore.faults import storage_faults
from lakecore.storage import Storage
from lakecore_hudi.table_config import META_DIR, TableConfig, read_table_config
from lakecore_hudi.timeline.active import Timeline, load_timeline
from lakecore_hudi.timeline.archive_v1_writer import append_entries, entry_record
from lakecore_hudi.timeline.clean_metadata import parse_clean_metadata
from lakecore_hudi.timeline.instants import (
    CLEAN,
    COMMIT,
    COMPLETED,
    INFLIGHT,
    REQUESTED,
    ROLLBACK,
    parse_instant_file,
)
from lakecore_hudi.timeline.lsm_writer import LsmEntry, compact_and_clean, write_entries
from lakecore_hudi.write.archive_plan import ArchivedAction, ArchiveSettings, TableFacts, select
from lakecore_hudi.write.lock import TableLock, acquire

if TYPE_CHECKING:
    from lakecore.table import Table

log = logging.getLogger(__name__)

ARCHIVABLE_TABLE_VERSIONS = frozenset({6, 8, 9})
AFTER_COMMIT_LOCK_WAIT_MS = 10_000
"""How long the post-commit archiving waits for the table lock before leaving the work to the
next commit (another writer is committing)."""
_PLAN_ACTIONS = ("clean", "replacecommit", "clustering", "compaction", "logcompaction")


@dataclass(frozen=True, slots=True)
class ArchiveResult:
    """What one archiving did: the archived instants (timestamp, completed action), oldest
    first, and the active-timeline files it deleted."""

    archived: tuple[tuple[str, str], ...] = ()
    deleted: tuple[str, ...] = ()


def archive(
    storage: Storage,
    config: TableConfig,
    settings: ArchiveSettings | None = None,
    wait_ms: int | None = None,
) -> ArchiveResult:
    """Archive what Hudi's archiver would (see the module docstring), under the table lock.

    Raises:
        UnsupportedFeatureError: a table version lakecore does not archive.
        CorruptTableError: an archiving setting is malformed, or an instant or the archive is
            undecodable (nothing deleted from the active timeline then).
        CommitConflictError: the table lock stayed held by another writer, or was broken
            while archiving (no active instant deleted after that).
        OSError: the storage failed (see the module docstring for what is left).
    """
    if config.table_version not in ARCHIVABLE_TABLE_VERSIONS:
        raise UnsupportedFeatureError(
            f"hudi-archive-table-version-{config.table_version}",
            f"lakecore archives the timelines of Hudi table versions 6, 8 and 9, not "
            f"{config.table_version}",
        )
    settings = settings or ArchiveSettings.from_config(config)
    lock = acquire(storage, config, wait_ms)
    try:
        return _archive_locked(storage, config, settings, lock)
    finally:
        lock.release()


def _archive_locked(
    storage: Storage, config: TableConfig, settings: ArchiveSettings, lock: TableLock
) -> ArchiveResult:
    timeline = load_timeline(storage, config)
    facts = table_facts(storage, config, timeline)
    actions = select(timeline, settings, facts, config.table_version)
    if not actions:
        return ArchiveResult()
    if config.table_version >= 8:
        entries = [lsm_entry(storage, timeline, a) for a in actions]
        write_entries(storage, config.archive_dir, entries)
    else:
        records = [
            entry_record(
                i.timestamp,
                i.action,
                i.state,
                i.completion_time,
                timeline.read_details(storage, i),
                timeline.path_of(i),
            )
            for a in actions
            for i in a.instants
        ]
        append_entries(storage, config.archive_dir, records, settings.archival_batch)
    if not lock.still_held():
        raise CommitConflictError(
            f"the table lock of {storage.root} was broken while archiving; the archived "
            "instants stay on the active timeline too (the next archiving removes them)"
        )
    deleted = delete_archived(storage, timeline, actions)
    if config.table_version >= 8:
        compact_and_clean(storage, config.archive_dir, settings.timeline_compaction_batch)
    return ArchiveResult(tuple((a.timestamp, a.action) for a in actions), deleted)


def delete_archived(
    storage: Storage, timeline: Timeline, actions: Sequence[ArchivedAction]
) -> tuple[str, ...]:
    """Delete the archived ``actions``' files from ``timeline`` (the data table's, or the
    metadata table's): pending state files first, then completed files oldest first; returns
    the deleted paths in that order."""
    order = [i for a in actions for i in a.instants if i.state == REQUESTED]
    order += [i for a in actions for i in a.instants if i.state == INFLIGHT]
    order += sorted(i for a in actions for i in a.instants if i.state == COMPLETED)
    for instant in order:
        storage.delete(timeline.path_of(instant))
    return tuple(timeline.path_of(i) for i in order)


def lsm_entry(storage: Storage, timeline: Timeline, action: ArchivedAction) -> LsmEntry:
    """The ``HoodieLSMTimelineInstant`` of ``action``: the completed file's bytes as
    ``metadata``; as ``plan``, the requested file of a clean / compaction / log compaction, or
    of a replacecommit / clustering (whose non-empty inflight file takes precedence)."""
    done = action.completed
    metadata = timeline.read_details(storage, done) if done is not None else b""
    plan = b""
    requested = action.pending_state(REQUESTED)
    if requested is not None and requested.action in _PLAN_ACTIONS:
        plan = timeline.read_details(storage, requested)
        inflight = action.pending_state(INFLIGHT)
        if inflight is not None and inflight.action in ("replacecommit", "clustering"):
            plan = timeline.read_details(storage, inflight) or plan
    return LsmEntry(
        instant_time=action.timestamp,
        completion_time=done.completion_time if done is not None else None,
        action=action.action,
        metadata=metadata or None,
        plan=plan or None,
    )


def table_facts(storage: Storage, config: TableConfig, timeline: Timeline) -> TableFacts:
    """The latest clean's earliest commit to retain and the metadata table's latest
    compaction.

    Raises:
        CorruptTableError: the latest clean's metadata is undecodable.
        OSError: the storage failed.
    """
    cleans = [i for i in timeline.completed() if i.action == CLEAN]
    retains = None
    if cleans:
        data = timeline.read_details(storage, cleans[-1])
        retains = parse_clean_metadata(data, timeline.path_of(cleans[-1])).earliest_commit_to_retain
    has_mdt = "files" in config.metadata_partitions
    return TableFacts(
        clean_retains_from=retains or None,
        has_metadata_table=has_mdt,
        mdt_compaction=_mdt_compaction(storage, config) if has_mdt else None,
        merge_on_read=config.table_type == "MERGE_ON_READ",
    )


def _mdt_compaction(storage: Storage, config: TableConfig) -> str | None:
    """The latest completed compaction (a ``commit``) on the metadata table's timeline."""
    meta = f"{META_DIR}/metadata/{META_DIR}"
    directory = f"{meta}/timeline" if config.table_version >= 8 else meta
    found = [
        i.timestamp
        for info in storage.list_dir(directory)
        if (i := parse_instant_file(info.path, config.timeline_layout_version)) is not None
        and i.state == COMPLETED
        and i.action == COMMIT
    ]
    return max(found) if found else None


def may_need_archiving(
    timeline: Timeline, settings: ArchiveSettings, new_commits: int, new_cleans: int
) -> bool:
    """Whether a timeline that gained ``new_commits`` / ``new_cleans`` since ``timeline`` was
    listed may hold more than ``max`` commits (or, v6, cleans or rollbacks): the cheap test
    that spares a commit the lock and listing of archiving."""
    commits = timeline.completed_write_instants()
    _, high = settings.bounds(commits)
    if len(commits) + new_commits > high:
        return True
    if timeline.layout >= 2:
        return False
    done = timeline.completed()
    cleans = sum(1 for i in done if i.action == CLEAN) + new_cleans
    rollbacks = sum(1 for i in done if i.action == ROLLBACK)
    return cleans > high or rollbacks > high


def archive_after_commit(
    storage: Storage,
    config: TableConfig,
    timeline: Timeline,
    new_commits: int = 0,
    new_cleans: int = 0,
) -> ArchiveResult | None:
    """Archive if the table needs it, after a completed commit or clean; never raises.

    ``timeline`` is the timeline the operation started from and ``new_commits`` /
    ``new_cleans`` what it completed since, so that a table far from its bound costs no
    storage call. Returns the result, or None when archiving did not run or failed (a
    warning is logged; the next commit tries again).
    """
    try:
        if config.table_version not in ARCHIVABLE_TABLE_VERSIONS:
            return None
        settings = ArchiveSettings.from_config(config)
        if not settings.automatic or not may_need_archiving(
            timeline, settings, new_commits, new_cleans
        ):
            return None
        return archive(storage, config, settings, AFTER_COMMIT_LOCK_WAIT_MS)
    except (LakecoreError, OSError) as exc:
        log.warning(
            "archiving the timeline of %s failed (retried by the next commit): %s",
            storage.root,
            exc,
        )
        return None


__all__ = [
    "ArchiveResult",
    "ArchiveSettings",
    "archive",
    "archive_after_commit",
    "archive_table",
    "delete_archived",
    "lsm_entry",
    "may_need_archiving",
    "table_facts",
]


def archive_table(table: Table, wait_ms: int | None = None) -> ArchiveResult:
    """Archive a lakecore ``Table`` of format ``hudi`` now (the explicit form of what every
    commit and ``Table.clean`` do when the timeline outgrows ``hoodie.keep.max.commits``).

    Example:
        >>> import lakecore  # doctest: +SKIP
        >>> from lakecore_hudi.write.archive import archive_table  # doctest: +SKIP
        >>> archive_table(lakecore.open("/data/trips")).archived  # doctest: +SKIP

    Raises:
        InvalidArgumentError: ``table`` is not a Hudi table.
        UnsupportedFeatureError, CorruptTableError, CommitConflictError: see ``archive``.
        StorageError: the storage failed (no instant is lost; the next archiving finishes).
    """
    if table.format != "hudi":
        raise InvalidArgumentError(f"{table.uri} is a {table.format} table, not a Hudi table")
    with storage_faults(f"archiving the timeline of {table.uri}", StorageError):
        return archive(table.storage, read_table_config(table.storage), wait_ms=wait_ms)
