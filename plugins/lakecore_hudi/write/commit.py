"""Completing planned instants, with optimistic conflict detection between writers.

``HudiCommitter`` (``committer``) drives this from the core's commit loop.

Hudi instants never collide (each writer takes its own instant time), so a commit does not
retry: it checks the instants that completed since its base snapshot was read and completes
its own. Two writers conflict when a concurrent completed write touched a file group this one
changes (updates, deletes from, replaces or compacts); writes to different file groups both
succeed. A conflicting instant is rolled back at once and ``CommitConflictError`` names the
winner.

"Check, then complete" is atomic with respect to other writers: both steps run under the
table lock (``lock``), with the timeline listed again under it. So of two writers changing
one file group exactly one completes, and the other sees the winner when it checks. The
isolation this gives is Hudi's optimistic concurrency control: serializable for writes that
read what they change (upserts, updates, deletes, merges: every row they change lies in a
file group they touch); inserts of new keys go to new file groups and never conflict, so two
writers inserting the same new key both succeed (as in Hudi, the key then lives twice).

Order of steps (see ``heartbeat`` for why): refresh the heartbeat (and keep it beating while
waiting for the lock); take the lock; make sure no
rollback took the instant (its writer looked dead); check conflicts; complete; release the
lock; drop the heartbeat. Releasing the lock and dropping the heartbeat never raise: a
completed commit is never reported as failed.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence

from lakecore.errors import (
    CommitConflictError,
    CommitError,
    CommitStateUnknownError,
    CommitStorageError,
    CorruptTableError,
    InvalidArgumentError,
    LakecoreError,
    UnsupportedFeatureError,
)
from lakecore.storage import Storage
from lakecore_hudi.archived_writes import archived_since
from lakecore_hudi.avro_schema import avro_to_arrow
from lakecore_hudi.mdt.maintain import record_commit
from lakecore_hudi.state import HudiState
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.timeline.active import Timeline, load_timeline
from lakecore_hudi.timeline.commit_metadata import (
    CommitMetadata,
    encode_commit_metadata,
    parse_commit_metadata,
)
from lakecore_hudi.timeline.instants import INFLIGHT, REPLACE_COMMIT, Instant, make_instant
from lakecore_hudi.timeline.lifecycle import complete
from lakecore_hudi.write import heartbeat
from lakecore_hudi.write.archive import archive_after_commit
from lakecore_hudi.write.lock import TableLock, acquire
from lakecore_hudi.write.planned import PlannedInstant, file_groups_of
from lakecore_hudi.write.rollback import rollback_instant, rolled_back

log = logging.getLogger(__name__)


def commit_planned(storage: Storage, base: HudiState, planned: Sequence[PlannedInstant]) -> str:
    """Complete ``planned`` (written against ``base``); returns the last instant completed.

    Several instants (one transaction staging several operations) complete one after the
    other; they must change disjoint file groups, and all are checked before any completes.

    Raises:
        CommitConflictError: a concurrent write touched the same file groups, or the instant
            was rolled back as failed; nothing of this commit becomes visible.
        UnsupportedFeatureError: the instants of one transaction overlap.
    """
    config = base.config
    if not planned:
        raise InvalidArgumentError("nothing to commit")
    try:
        check_disjoint(planned)
    except UnsupportedFeatureError:
        _abort_all(storage, config, planned)
        raise
    try:
        lock = _prepare(storage, config, planned)
        try:  # however this ends (KeyboardInterrupt too), the lock is released
            try:
                with _nothing_committed(planned):
                    _check_all(storage, base, planned, lock)
            except Exception:
                lock.release()  # the rollbacks take the lock themselves
                _abort_all(storage, config, planned)
                raise
            _complete_all(storage, config, planned, lock)
        finally:
            lock.release()  # idempotent
    finally:
        for p in planned:
            heartbeat.stop(storage, p.timestamp)
    archive_after_commit(storage, config, base.timeline, new_commits=len(planned))
    return planned[-1].timestamp


def _prepare(storage: Storage, config: TableConfig, planned: Sequence[PlannedInstant]) -> TableLock:
    """Beat the instants' heartbeats and take the table lock, beating while waiting for it
    (the wait may last as long as the heartbeat expiry).

    On failure the instants are rolled back, except when the lock could not be taken in
    time: rolling back needs the same lock, so they are left to their heartbeat's expiry
    (the caller stops beating) and a later writer rolls them back.
    """
    try:
        with _nothing_committed(planned):
            for p in planned:
                heartbeat.beat(storage, p.timestamp)
            with contextlib.ExitStack() as beating:
                for p in planned:
                    beating.enter_context(heartbeat.kept_alive(storage, config, p.timestamp))
                return acquire(storage, config)
    except CommitConflictError:
        raise  # the lock wait timed out (see above)
    except Exception:
        _abort_all(storage, config, planned)
        raise


@contextlib.contextmanager
def _nothing_committed(planned: Sequence[PlannedInstant]) -> Iterator[None]:
    """Turn a storage fault in the block (which completes nothing) into CommitStorageError."""
    try:
        yield
    except LakecoreError:
        raise
    except OSError as exc:
        raise CommitStorageError(
            f"committing instant {planned[-1].timestamp} failed before completing it: the "
            f"storage raised {type(exc).__name__}: {exc}; nothing was committed"
        ) from exc


def _check_all(
    storage: Storage, base: HudiState, planned: Sequence[PlannedInstant], lock: TableLock
) -> None:
    """Check every instant for conflicts on a fresh listing; the caller holds ``lock``.

    Raises:
        CommitConflictError: see ``commit_planned``.
        OSError: the storage failed.
    """
    timeline = load_timeline(storage, base.config)
    ours = {q.timestamp for q in planned}
    # Writes archived since the base was read are concurrent too, though no longer listed.
    try:
        archived = archived_since(
            storage, base.config, base.timeline, base.visible.instants, timeline
        )
    except CorruptTableError as exc:
        raise CommitConflictError(
            f"cannot check the writes archived since instant {base.version or 'creation'} "
            f"for conflicts: {exc}"
        ) from None
    for p in planned:
        _check(storage, timeline, base, p, ours, archived)
    if not lock.still_held():
        # Held past the lock's expiry (a stalled process) and broken by another writer:
        # completing now could interleave with that writer's commit.
        raise CommitConflictError(
            f"the table lock expired while instant {planned[-1].timestamp} was being checked "
            "(another writer broke it); nothing was committed, run the operation again"
        )


def _complete_all(
    storage: Storage, config: TableConfig, planned: Sequence[PlannedInstant], lock: TableLock
) -> None:
    """Complete the checked instants in order; the caller holds ``lock``.

    Raises:
        CommitStateUnknownError: a completion failed and may have landed.
        CommitError: the storage failed before an instant's completion was written (the
            instants not completed yet are rolled back; earlier ones stay completed).
    """
    for n, p in enumerate(planned):
        content = encode_commit_metadata(p.metadata, config.table_version)
        recorded = False
        try:
            # The metadata table's delta commit of this instant lands first (Hudi's order).
            record_commit(storage, config, p.timestamp, p.metadata)
            recorded = True
            complete(storage, config, p.action, p.timestamp, content)
        except LakecoreError:
            if not recorded:  # refused or failed before the instant could complete
                lock.release()  # the rollbacks take the lock themselves
                _abort_all(storage, config, planned[n:])
            raise
        except OSError as exc:
            if _maybe_completed(storage, config, p.timestamp):
                # complete() raises OSError only before its write; should a completed file
                # be there anyway, rolling back would be wrong and "nothing" untrue.
                raise CommitStateUnknownError(
                    f"completing instant {p.timestamp} failed ({type(exc).__name__}: {exc}) "
                    "and a completed file of it exists; read the "
                    "table's history before running the operation again"
                ) from exc
            lock.release()  # the rollbacks take the lock themselves
            _abort_all(storage, config, planned[n:])
            done = [q.timestamp for q in planned[:n]]
            cls = CommitStorageError if not done else CommitError
            raise cls(
                f"completing instant {p.timestamp} failed: the storage raised "
                f"{type(exc).__name__}: {exc}; "
                + (f"instants {done} were committed" if done else "nothing was committed")
            ) from exc


def _maybe_completed(storage: Storage, config: TableConfig, ts: str) -> bool:
    """Whether a listing shows a completed file of instant ``ts`` (False if listing fails:
    ``complete`` raises OSError only before its write, this is a second line of defence)."""
    try:
        timeline = load_timeline(storage, config)
    except OSError:
        return False
    return any(i.timestamp == ts and i.is_completed for i in timeline.instants)


def _abort_all(storage: Storage, config: TableConfig, planned: Sequence[PlannedInstant]) -> None:
    """Roll back ``planned`` after a failed commit; a failure here is logged, not raised
    (the commit's own error is what the caller must see; a later writer finishes the job)."""
    for p in planned:
        try:
            abort(storage, config, p)
        except Exception as exc:  # keep the commit's error
            log.warning("could not roll back instant %s: %s", p.timestamp, exc)


def check_disjoint(planned: Sequence[PlannedInstant]) -> None:
    """Raise ``UnsupportedFeatureError`` if instants of one transaction change the same file
    groups (or one of several rewrites the whole table): they could not complete one after
    the other without conflicting with each other."""
    seen: set[tuple[str, str]] = set()
    for p in planned:
        if seen & p.touched or (len(planned) > 1 and p.exclusive):
            raise UnsupportedFeatureError(
                "hudi-overlapping-operations",
                "the operations of this transaction change the same Hudi file groups; "
                "run them as separate transactions",
            )
        seen |= p.touched


def abort(storage: Storage, config: TableConfig, p: PlannedInstant) -> None:
    """Roll back planned instant ``p`` (under the table lock; a rollback another writer
    started is finished instead, and an instant already gone is left alone)."""
    instant = make_instant(p.timestamp, p.action, INFLIGHT, config.timeline_layout_version)
    rollback_instant(storage, config, instant)


def _check(
    storage: Storage,
    timeline: Timeline,
    base: HudiState,
    p: PlannedInstant,
    ours: set[str],
    archived: Sequence[tuple[Instant, CommitMetadata]] = (),
) -> None:
    pending = {i.timestamp for i in timeline.pending()}
    if p.timestamp not in pending or rolled_back(storage, timeline, p.timestamp):
        raise CommitConflictError(
            f"instant {p.timestamp} was rolled back by another writer, which took its writer "
            "for dead (its heartbeat expired); run the operation again",
            winning_version=p.timestamp,
        )
    for instant in timeline.completed_write_instants():
        if instant.timestamp in base.visible.instants or instant.timestamp in ours:
            continue
        if p.exclusive:
            raise _conflict(p, instant.timestamp, "it rewrites the whole table")
        try:
            meta = parse_commit_metadata(
                timeline.read_details(storage, instant),
                timeline.path_of(instant),
                replace=True if instant.action == REPLACE_COMMIT else None,
            )
        except FileNotFoundError:
            continue  # archived or cleaned away since listing: it cannot be concurrent then
        except CorruptTableError as exc:
            raise CommitConflictError(
                f"cannot check instant {instant.timestamp} for conflicts: {exc}",
                winning_version=instant.timestamp,
            ) from None
        _check_against(p, instant.timestamp, meta)
    for instant, meta in archived:
        if p.exclusive:
            raise _conflict(p, instant.timestamp, "it rewrites the whole table")
        _check_against(p, instant.timestamp, meta)


def _check_against(p: PlannedInstant, winner: str, meta: CommitMetadata) -> None:
    """Raise the conflict of ``p`` with concurrent completed write ``winner``, if any."""
    if _schema_changed(meta, p):
        raise _conflict(p, winner, "it changed the table's schema")
    shared = file_groups_of(meta) & p.touched
    if shared:
        partition, file_id = sorted(shared)[0]
        raise _conflict(p, winner, f"both change file group {file_id} ({partition!r})")


def _schema_changed(meta: CommitMetadata, p: PlannedInstant) -> bool:
    """Whether a concurrent instant recorded another schema than ``p`` was written with:
    readers take the latest instant's schema, so ``p`` completing after it would hide (or
    bring back) columns."""
    theirs = meta.extra_metadata.get("schema")
    ours = p.metadata.extra_metadata.get("schema")
    if not theirs or not ours or theirs == ours:
        return False
    try:
        return not avro_to_arrow(theirs, "a concurrent instant").equals(
            avro_to_arrow(ours, "this instant")
        )
    except LakecoreError:
        return True


def _conflict(p: PlannedInstant, winner: str, why: str) -> CommitConflictError:
    return CommitConflictError(
        f"instant {p.timestamp} conflicts with concurrent instant {winner}: {why}; "
        "it was rolled back, run the operation again",
        winning_version=winner,
    )
