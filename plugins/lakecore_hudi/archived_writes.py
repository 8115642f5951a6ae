"""Completed writes of the archived timeline, for time travel to an archived instant.

Archiving moves the oldest completed commits out of the active timeline; their data files stay
until a clean deletes them. A snapshot at an archived instant T is built the same way as one
at an active instant, from the archived writes up to T: their commit metadata (write stats,
replaced file groups, schema) comes from the archive (the LSM timeline's ``metadata`` column,
the v6 archive's ``hoodieCommitMetadata`` / ``hoodieReplaceCommitMetadata``), their completion
times from the LSM timeline. If a clean has deleted files such a snapshot needs, loading it
raises ``VersionNotFoundError`` as for any cleaned instant.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lakecore.storage import Storage
from lakecore_hudi.names import LogFile
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.timeline.active import Timeline
from lakecore_hudi.timeline.commit_metadata import CommitMetadata, parse_commit_metadata
from lakecore_hudi.timeline.instants import (
    COMPLETED,
    REPLACE_COMMIT,
    WRITE_ACTIONS,
    Instant,
    completed_action,
)
from lakecore_hudi.view import SliceFile, Visible


@dataclass(frozen=True, slots=True)
class ArchivedWrites:
    """The archived completed writes (oldest first) and their commit metadata."""

    writes: tuple[Instant, ...]
    metadata: dict[str, CommitMetadata]


def needs_archive(
    active_writes: Sequence[Instant], version: str | None, cutoff: str | None
) -> bool:
    """Whether the snapshot asked for (instant ``version`` or the last write at or before
    ``cutoff``) may be an archived write: older than every completed write on the active
    timeline (or the active timeline has none)."""
    first = active_writes[0].timestamp if active_writes else None
    if version is not None:
        if not version or any(w.timestamp == version for w in active_writes):
            return False
        return first is None or version < first
    if cutoff is not None:
        return first is None or cutoff < first
    return False


def load_archived_writes(
    storage: Storage, config: TableConfig, before: str | None, since: str | None = None
) -> ArchivedWrites:
    """The archived completed writes older than ``before`` (all when None) and not older than
    ``since``, with metadata.

    Raises:
        CorruptTableError: the archive or an archived instant's metadata is undecodable.
    """
    from lakecore_hudi.timeline.archived import load_archived_timeline

    found: dict[str, tuple[Instant, CommitMetadata]] = {}
    for a in load_archived_timeline(storage, config, with_details=True, start=since):
        if a.action not in WRITE_ACTIONS or (before is not None and a.timestamp >= before):
            continue
        name = f"{a.timestamp}.{a.action} in {a.source_file}"
        meta = parse_commit_metadata(
            a.metadata or b"", name, replace=True if a.action == REPLACE_COMMIT else None
        )
        # A crash between archiving and deleting can archive an instant twice: keep one.
        found[a.timestamp] = (
            Instant(a.timestamp, a.action, COMPLETED, a.completion_time, name),
            meta,
        )
    ordered = sorted(found.values(), key=lambda pair: pair[0].timestamp)
    return ArchivedWrites(tuple(i for i, _ in ordered), {i.timestamp: m for i, m in ordered})


def archived_completions(
    storage: Storage, config: TableConfig, instants: Iterable[str]
) -> dict[str, str]:
    """Completion times of archived ``instants`` (older than the active timeline).

    Table version 8+ reads them from the LSM timeline (instants it does not hold are left
    out: their files' slices stay unknown). Version 6 records none, and its file slicing needs
    none: each instant maps to itself.

    Raises:
        CorruptTableError: the archive is unreadable.
    """
    wanted = set(instants)
    if not wanted:
        return {}
    if config.table_version < 8:
        return {i: i for i in wanted}
    from lakecore_hudi.timeline.archived import load_archived_timeline

    found = load_archived_timeline(storage, config, start=min(wanted), end=max(wanted))
    return {
        a.timestamp: a.completion_time for a in found if a.timestamp in wanted and a.completion_time
    }


def with_archived_completions(
    storage: Storage, config: TableConfig, files: Sequence[SliceFile], visible: Visible
) -> Visible:
    """``visible`` knowing the completion times of the archived delta commits that wrote
    listed log files (table version 8+ joins a log to the slice before its completion time;
    Hudi's file-system view looks archived ones up in the archive too)."""
    before = visible.archived_before
    if config.table_version < 8 or not before:
        return visible
    logs = {
        f.name.instant
        for f in files
        if isinstance(f.name, LogFile)
        and f.name.instant < before
        and f.name.instant not in visible.completion
    }
    found = archived_completions(storage, config, logs)
    if not found:
        return visible
    return dataclasses.replace(visible, completion={**found, **visible.completion})


def archived_since(
    storage: Storage, config: TableConfig, base: Timeline, visible: frozenset[str], now: Timeline
) -> list[tuple[Instant, CommitMetadata]]:
    """Completed writes that were archived after ``base`` was listed and that the snapshot
    built from it did not see (``visible``): writes concurrent with a writer working from that
    snapshot, which its conflict check must see although they left the active timeline.

    Archiving moves the oldest commits first, so it ran since ``base`` was listed only if an
    instant of ``base`` is gone from ``now`` (or ``base`` held no completed write); only then
    is the archive read, from ``base``'s oldest completed write on (older archived writes were
    archived before ``base`` was listed).

    Raises:
        CorruptTableError: the archive is unreadable.
    """
    listed = {i.timestamp for i in now.instants}
    writes = base.completed_write_instants()
    if writes and all(i.timestamp in listed for i in base.instants):
        return []
    floor = writes[0].timestamp if writes else None
    found = load_archived_writes(storage, config, None, since=floor)
    return [(i, found.metadata[i.timestamp]) for i in found.writes if i.timestamp not in visible]


def timeline_start(timeline: Timeline) -> str:
    """Where the active timeline starts for the files of its writes: the oldest write instant
    on it (commit, deltacommit, replacecommit, compaction, ... in any state), "" for none.

    Files of older instants were written by archived (completed) writes and count as committed,
    as Hudi's file-system view takes instants before the first commit of its timeline. Not the
    oldest instant of any action: table version 6 archives cleans and rollbacks by their own
    count, so an old clean can stay ahead of archived commits.
    """
    writes = [i.timestamp for i in timeline.instants if completed_action(i.action) in WRITE_ACTIONS]
    return min(writes) if writes else ""
