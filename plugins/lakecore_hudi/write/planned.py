"""A planned Hudi write: an instant that is requested and inflight, its files already written.

A ``HudiWriter`` returns one as the payload of ``FormatPayload("hudi", ...)``; the Hudi
Committer (``committer``) completes it, or rolls it back when the transaction is aborted. Until
then readers do not see its files (they belong to an instant that is not completed), and if its
writer dies the next writer rolls it back.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass

from lakecore.errors import CommitConflictError, CommitError
from lakecore.storage import Storage
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.timeline.active import Timeline, load_timeline
from lakecore_hudi.timeline.commit_metadata import CommitMetadata
from lakecore_hudi.timeline.instants import REQUESTED
from lakecore_hudi.timeline.lifecycle import new_instant_time, write_requested
from lakecore_hudi.write.heartbeat import beat, stop
from lakecore_hudi.write.lock import table_lock

FileGroup = tuple[str, str]
"""(partition path, file id)."""

MAX_START_ATTEMPTS = 16


@dataclass(frozen=True, slots=True)
class PlannedInstant:
    """A write waiting to be completed.

    ``files`` are the data files it wrote (table-relative). ``touched`` are the existing file
    groups it changes (updated, deleted from, replaced or compacted); a concurrent completed
    write to any of them is a conflict. ``exclusive`` writes (overwriting or deleting the whole
    table) conflict with any concurrent completed write.
    """

    timestamp: str
    action: str
    metadata: CommitMetadata
    files: tuple[str, ...]
    touched: frozenset[FileGroup]
    exclusive: bool = False


def file_groups_of(metadata: CommitMetadata) -> set[FileGroup]:
    """Every file group a commit wrote to or replaced."""
    groups: set[FileGroup] = set()
    for partition, stats in metadata.partition_to_write_stats.items():
        groups.update((partition, s.file_id) for s in stats if s.file_id)
    groups.update(metadata.replaced_file_ids())
    return groups


def start_instant(
    storage: Storage,
    config: TableConfig,
    action: str,
    requested: bytes = b"",
    heartbeat: bool = True,
    at: str | None = None,
) -> str:
    """Take the table lock and claim a new instant (see ``claim_instant``).

    Raises:
        CommitConflictError: the lock stayed held, or no free instant time was found.
        CommitError: ``at`` is not later than every instant of the timeline.
    """
    with table_lock(storage, config):
        return claim_instant(storage, config, action, requested, heartbeat, at)


def claim_instant(
    storage: Storage,
    config: TableConfig,
    action: str,
    requested: bytes = b"",
    heartbeat: bool = True,
    at: str | None = None,
) -> str:
    """Pick a new instant time and write its requested file; the caller holds the table lock.

    Instant times are unique across every action of the timeline: the time picked is greater
    than every instant (any action, any state) and completion time on the timeline, and it is
    claimed with ``put_if_absent`` of the requested file. The requested file names its action,
    so the claim alone would not keep a ``rollback`` and a ``commit`` apart; the lock does
    (every lakecore writer picks times under it), and a writer that does not take the lock is
    caught by listing again after the claim: if another instant file has the same time, the
    claim is withdrawn and a later time picked.

    ``at`` (a commit replaying a given time, ``CommitInfo.timestamp_ms``) is the time to
    claim instead: it must be later than every instant of the timeline (any action, any
    state; completion times may be later, since they are taken when instants complete), and
    is never replaced by another.

    With ``heartbeat`` the instant's heartbeat starts before the requested file appears, so no
    other writer ever sees it pending without one.

    Raises:
        CommitConflictError: no free instant time after many attempts.
        CommitError: ``at`` is not later than every instant, or another writer claimed it.
    """
    for _ in range(MAX_START_ATTEMPTS):
        timeline = load_timeline(storage, config)
        if at is not None:
            _check_later(timeline, at)
            ts = at
        else:
            stamps: Iterable[str | None] = [
                *(i.timestamp for i in timeline.instants),
                timeline.max_completion_time(),
            ]
            present = [s for s in stamps if s]
            ts = new_instant_time(max(present) if present else None)
        if heartbeat:
            beat(storage, ts)
        try:
            mine = write_requested(storage, config, action, ts, requested)
        except CommitConflictError:
            if heartbeat:
                stop(storage, ts)  # withdrawn: no heartbeat may outlive its claim
            if at is not None:
                raise CommitError(f"instant time {at} was claimed by another writer") from None
            continue  # another writer took this instant time: pick a later one
        except BaseException:
            # The put may have landed though the call failed: withdraw the claim, or it
            # would stay pending (with a live heartbeat) after a re-run that succeeds.
            _withdraw(storage, config, action, ts, heartbeat)
            raise
        again = load_timeline(storage, config)
        if any(i.timestamp == ts and i.file_name != mine.file_name for i in again.instants):
            storage.delete(again.path_of(mine))  # a writer without the lock took it too
            if heartbeat:
                stop(storage, ts)
            if at is not None:
                raise CommitError(f"instant time {at} was claimed by another writer")
            continue
        return ts
    raise CommitConflictError(f"could not start a {action}: other writers keep taking instants")


def _withdraw(storage: Storage, config: TableConfig, action: str, ts: str, heartbeat: bool) -> None:
    """Delete the requested file of a claim whose write failed, if it landed, and stop its
    heartbeat; best effort (the claim's own error is the one to report)."""
    with contextlib.suppress(Exception):
        timeline = load_timeline(storage, config)
        for instant in timeline.instants:
            if instant.timestamp == ts and instant.action == action and instant.state == REQUESTED:
                storage.delete(timeline.path_of(instant))
    if heartbeat:
        with contextlib.suppress(Exception):
            stop(storage, ts)


def _check_later(timeline: Timeline, at: str) -> None:
    """Raise ``CommitError`` unless instant time ``at`` is later than every instant."""
    latest = max((i.timestamp for i in timeline.instants), default=None)
    if latest is not None and at <= latest:
        raise CommitError(
            f"cannot commit at instant time {at}: the timeline already holds instant "
            f"{latest}; a commit's timestamp must be later than every instant's"
        )
