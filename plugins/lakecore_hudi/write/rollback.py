"""Rolling back failed writes: pending instants whose writer is gone.

A failed write left a requested (and maybe inflight) instant and some data files; readers
ignore both, since the instant never completed. Before writing, a lakecore writer rolls such
instants back the way Hudi does:

1. ``<rb>.rollback.requested`` holds a ``HoodieRollbackPlan`` naming the failed instant and
   the files to delete: those its inflight metadata lists (lakecore writers name every file
   there before writing it; this is how table version 6 log files, which carry their base
   instant, are found) and every base file - and, in version 8, log file - named with its
   instant (found by listing).
2. ``<rb>.rollback.inflight``; the files are deleted.
3. The rollback completes with ``HoodieRollbackMetadata``; the failed instant's requested and
   inflight files and its heartbeat are deleted.

A rollback found pending (its writer died midway) is resumed from its plan: every step is
idempotent. An instant counts as failed only once its heartbeat expired (``heartbeat``), so a
concurrent live writer's instant is left alone.

Rollbacks run under the table lock (``lock``), as commits complete under it: the decision
(the target is still pending, and - for another writer's instant - its heartbeat expired) and
the deletions cannot interleave with the target's completion. The decision is re-checked
right before anything is deleted; a rollback whose target turned out to be completed (or
alive) is withdrawn. The table is listed (for the failed instant's files) before the lock is
taken, so the lock is held for a few calls only, and ``still_held`` is checked right before
the deletions. Whether another writer's heartbeat expired is judged against the store's clock
(``TableLock.server_now_ms``), never this client's wall clock. A plan naming a file inside
``.hoodie/`` (``hoodie.properties``, the timeline) is refused as corrupt: rollbacks and cleans
delete data files only. A writer's commit, in turn, refuses to complete an instant that any
rollback targets (``rolled_back``).
"""

from __future__ import annotations

import contextlib
import time
from collections import defaultdict

from lakecore.errors import CommitConflictError, CorruptTableError
from lakecore.storage import FileInfo, Storage
from lakecore.storage.paths import contained_path
from lakecore_hudi.mdt.rollback import rollback_in_metadata
from lakecore_hudi.names import parse_base_file_name, parse_log_file_name
from lakecore_hudi.table_config import META_DIR, TableConfig
from lakecore_hudi.timeline.active import Timeline, load_timeline
from lakecore_hudi.timeline.commit_metadata import parse_commit_metadata
from lakecore_hudi.timeline.instants import (
    COMMIT,
    COMPACTION,
    COMPLETED,
    DELTA_COMMIT,
    INFLIGHT,
    REPLACE_COMMIT,
    REQUESTED,
    ROLLBACK,
    Instant,
)
from lakecore_hudi.timeline.lifecycle import complete, write_inflight
from lakecore_hudi.timeline.rewrite_plans import parse_clustering_plan
from lakecore_hudi.timeline.rollback_metadata import (
    RollbackMetadata,
    RollbackPartitionMetadata,
    RollbackPlan,
    RollbackRequest,
    encode_rollback_metadata,
    encode_rollback_plan,
    parse_rollback_plan,
)
from lakecore_hudi.view import split_path
from lakecore_hudi.write import heartbeat
from lakecore_hudi.write.lock import TableLock, table_lock
from lakecore_hudi.write.planned import claim_instant

#: Pending actions a writer may roll back (clustering, indexing and the like are left alone).
ROLLBACK_ACTIONS = frozenset({COMMIT, DELTA_COMMIT, REPLACE_COMMIT, COMPACTION})


def rollback_failed_writes(storage: Storage, config: TableConfig) -> list[str]:
    """Resume pending rollbacks, then roll back every pending write whose heartbeat expired.

    Looks without the lock first (most writes find nothing to roll back); if there is work,
    takes the table lock and decides again under it. Returns the timestamps rolled back.
    """
    if not _has_work(storage, config, load_timeline(storage, config)):
        return []
    listing = storage.list_all("")  # before the lock: it may be long
    with table_lock(storage, config) as lock:
        return _rollback_failed_locked(storage, config, lock, listing)


def _has_work(storage: Storage, config: TableConfig, timeline: Timeline) -> bool:
    for instant in timeline.pending():
        if instant.action == ROLLBACK:
            return True
        if (
            instant.action in ROLLBACK_ACTIONS
            # A hint only (this client's clock): the decision is taken again under the lock.
            and heartbeat.is_expired(storage, config, instant.timestamp, time.time() * 1000)
            and not _is_clustering(storage, timeline, instant)
        ):
            return True
    return False


def _rollback_failed_locked(
    storage: Storage, config: TableConfig, lock: TableLock, listing: list[FileInfo]
) -> list[str]:
    timeline = load_timeline(storage, config)
    targeted: set[str] = set()
    for instant in timeline.pending():
        if instant.action == ROLLBACK:
            plan = _plan_of(storage, timeline, instant)
            if plan.instant_to_rollback is None:
                continue
            targeted.add(plan.instant_to_rollback[0])
            _execute(storage, config, lock, instant.timestamp, plan)
    done = []
    for instant in timeline.pending():
        if instant.action not in ROLLBACK_ACTIONS or instant.timestamp in targeted:
            continue
        if _is_clustering(storage, timeline, instant):
            continue
        if _rollback_locked(storage, config, lock, listing, instant, True) is not None:
            done.append(instant.timestamp)
    return done


def _is_clustering(storage: Storage, timeline: Timeline, instant: Instant) -> bool:
    if instant.action != REPLACE_COMMIT:
        return False
    requested = [
        i for i in timeline.instants if i.timestamp == instant.timestamp and i.state == REQUESTED
    ]
    if not requested:
        return False
    try:
        data = timeline.read_details(storage, requested[0])
        return bool(parse_clustering_plan(data, requested[0].file_name).input_groups)
    except (FileNotFoundError, CorruptTableError):
        return False


def _plan_of(storage: Storage, timeline: Timeline, instant: Instant) -> RollbackPlan:
    requested = [
        i for i in timeline.instants if i.timestamp == instant.timestamp and i.state == REQUESTED
    ]
    if not requested:
        return RollbackPlan()
    try:
        return parse_rollback_plan(
            timeline.read_details(storage, requested[0]), requested[0].file_name
        )
    except FileNotFoundError:
        return RollbackPlan()


def rollback_instant(
    storage: Storage, config: TableConfig, target: Instant, only_if_expired: bool = False
) -> str | None:
    """Roll back the pending instant ``target`` under the table lock.

    A writer aborting its own instant passes ``only_if_expired=False``; rolling back another
    writer's instant must pass True, so that it happens only while that writer's heartbeat is
    expired. Returns the rollback's timestamp, or None when there is nothing to roll back:
    ``target`` completed, is gone, or (``only_if_expired``) its writer is alive.

    Raises:
        CommitConflictError: the table lock stayed held by another writer.
        CorruptTableError: the failed instant names files outside the table.
    """
    listing = storage.list_all("")  # before the lock: it may be long
    with table_lock(storage, config) as lock:
        return _rollback_locked(storage, config, lock, listing, target, only_if_expired)


def _rollback_locked(
    storage: Storage,
    config: TableConfig,
    lock: TableLock,
    listing: list[FileInfo],
    target: Instant,
    only_if_expired: bool,
) -> str | None:
    timeline = load_timeline(storage, config)
    states = {i.state for i in timeline.instants if i.timestamp == target.timestamp}
    if not states or COMPLETED in states:
        return None
    pending = _pending_rollback_of(storage, timeline, target.timestamp)
    if pending is not None:  # a rollback of it died midway: finish that one
        return pending[0] if _execute(storage, config, lock, *pending) else None
    if only_if_expired and not _expired(storage, config, lock, target.timestamp):
        return None
    files = failed_files(storage, config, timeline, target, listing)
    plan = RollbackPlan((target.timestamp, target.action), _requests(storage, files))
    ts = claim_instant(storage, config, ROLLBACK, encode_rollback_plan(plan), heartbeat=False)
    return ts if _execute(storage, config, lock, ts, plan, only_if_expired) else None


def _expired(storage: Storage, config: TableConfig, lock: TableLock, ts: str) -> bool:
    """Whether the writer of ``ts`` is gone, judged on the store's clock (see ``is_expired``)."""
    return heartbeat.is_expired(storage, config, ts, lock.server_now_ms())


def _pending_rollback_of(
    storage: Storage, timeline: Timeline, timestamp: str
) -> tuple[str, RollbackPlan] | None:
    for instant in timeline.pending():
        if instant.action == ROLLBACK:
            plan = _plan_of(storage, timeline, instant)
            if plan.instant_to_rollback and plan.instant_to_rollback[0] == timestamp:
                return instant.timestamp, plan
    return None


def _withdraw(storage: Storage, timeline: Timeline, ts: str) -> None:
    """Delete the files of rollback ``ts`` whose target turned out to have completed."""
    for i in timeline.instants:
        if i.timestamp == ts and i.action == ROLLBACK:
            storage.delete(timeline.path_of(i))


def failed_files(
    storage: Storage,
    config: TableConfig,
    timeline: Timeline,
    target: Instant,
    listing: list[FileInfo],
) -> list[str]:
    """Table-relative paths of the data files the pending instant ``target`` wrote.

    ``listing`` is the table's listing (``list_all("")``), taken by the caller before it took
    the table lock.

    Raises:
        CorruptTableError: the inflight metadata names a file outside the table or in ``.hoodie``.
    """
    paths: set[str] = set()
    for i in timeline.instants:
        if i.timestamp != target.timestamp or i.state != INFLIGHT or i.action == COMPACTION:
            continue
        try:
            meta = parse_commit_metadata(timeline.read_details(storage, i), i.file_name)
        except (FileNotFoundError, CorruptTableError):
            continue
        # Escaping paths raise: a rollback must never delete outside the table.
        source = timeline.path_of(i)
        paths.update(
            deletable_path(s.path, storage.root, source=source)
            for s in meta.write_stats()
            if s.path
        )
    by_name = config.table_version >= 8
    for info in listing:
        if info.path.startswith(META_DIR + "/"):
            continue
        name = split_path(info.path)[1]
        base = parse_base_file_name(name)
        log = parse_log_file_name(name) if base is None and by_name else None
        if (base is not None and base.instant == target.timestamp) or (
            log is not None and log.instant == target.timestamp
        ):
            paths.add(info.path)
    return sorted(paths)


def _requests(storage: Storage, paths: list[str]) -> tuple[RollbackRequest, ...]:
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in paths:
        partition, name = split_path(path)
        parsed = parse_base_file_name(name) or parse_log_file_name(name)
        groups[(partition, parsed.file_id if parsed is not None else "")].append(
            storage.resolve(path)
        )
    return tuple(
        RollbackRequest(partition, file_id, "", tuple(files), {})
        for (partition, file_id), files in sorted(groups.items())
    )


def deletable_path(path: str, root: str, *, source: str) -> str:
    """``path`` made table-relative for deletion by a rollback or a clean.

    Raises:
        CorruptTableError: ``path`` lies outside the table (see ``contained_path``) or inside
            its metadata directory ``.hoodie/`` (its properties, timeline, locks): a crafted
            or damaged plan must never delete the table's own metadata.
    """
    relative = contained_path(path, root, source=source)
    if relative == META_DIR or relative.startswith(META_DIR + "/"):
        raise CorruptTableError(
            f"{source}: file path {path!r} lies in the table's metadata directory {META_DIR}/; "
            "rollbacks and cleans delete data files only"
        )
    return relative


def _execute(
    storage: Storage,
    config: TableConfig,
    lock: TableLock,
    ts: str,
    plan: RollbackPlan,
    only_if_expired: bool = False,
) -> bool:
    """Run (or resume) rollback ``ts`` of ``plan``; the caller holds ``lock``.

    Right before deleting anything, the target's state is read again: if it completed (or,
    with ``only_if_expired``, its heartbeat is fresh again) the rollback is withdrawn and
    nothing is deleted. Returns whether the rollback ran.

    Raises:
        CorruptTableError: the plan names a file outside the table or in ``.hoodie/``
            (nothing is deleted then).
        CommitConflictError: the table lock was broken before the deletions.
    """
    if plan.instant_to_rollback is None:
        return False
    contained = _checked_paths(storage, ts, plan)
    target_ts, target_action = plan.instant_to_rollback
    if not _still_rollbackable(storage, config, lock, ts, target_ts, only_if_expired):
        return False
    started = time.time()
    with contextlib.suppress(CommitConflictError):  # resuming: the inflight file exists
        write_inflight(storage, config, ROLLBACK, ts)
    parts = _delete_files(storage, lock, ts, plan, contained)
    meta = RollbackMetadata(
        start_rollback_time=ts,
        time_taken_ms=int((time.time() - started) * 1000),
        total_files_deleted=len(contained),
        commits_rollback=(target_ts,),
        instants_rollback=((target_ts, target_action),),
        partition_metadata=parts,
    )
    _finish(storage, config, ts, target_ts, meta)
    return True


def _checked_paths(storage: Storage, ts: str, plan: RollbackPlan) -> dict[str, str]:
    """Every path of the plan, checked before anything is deleted (see ``deletable_path``)."""
    return {
        path: deletable_path(path, storage.root, source=f"rollback plan of instant {ts}")
        for request in plan.requests
        for path in request.files_to_delete
    }


def _still_rollbackable(
    storage: Storage,
    config: TableConfig,
    lock: TableLock,
    ts: str,
    target_ts: str,
    only_if_expired: bool,
) -> bool:
    """Whether the target is still pending (and, ``only_if_expired``, its writer gone);
    if not, rollback ``ts`` is withdrawn."""
    timeline = load_timeline(storage, config)
    completed = any(i.timestamp == target_ts and i.is_completed for i in timeline.instants)
    if completed or (only_if_expired and not _expired(storage, config, lock, target_ts)):
        _withdraw(storage, timeline, ts)  # the writer was alive after all
        return False
    return True


def _delete_files(
    storage: Storage, lock: TableLock, ts: str, plan: RollbackPlan, contained: dict[str, str]
) -> dict[str, RollbackPartitionMetadata]:
    """Delete the plan's files, checking right before that the lock is still ours; returns
    the rollback metadata per partition.

    Raises:
        CommitConflictError: the lock was broken (a stalled holder): nothing is deleted, and
            the pending rollback is resumed by a later writer.
    """
    if not lock.still_held():
        raise CommitConflictError(
            f"the table lock expired before rollback {ts} deleted its files (another writer "
            "broke it); a later writer resumes the rollback"
        )
    parts: dict[str, RollbackPartitionMetadata] = {}
    for request in plan.requests:
        for path in request.files_to_delete:
            storage.delete(contained[path])
        logs = {p: 0 for p in request.files_to_delete if parse_log_file_name(p) is not None}
        old = parts.get(request.partition_path)
        parts[request.partition_path] = RollbackPartitionMetadata(
            request.partition_path,
            success_delete_files=(old.success_delete_files if old else ())
            + request.files_to_delete,
            log_files_from_failed_commit={
                **(old.log_files_from_failed_commit if old else {}),
                **logs,
            },
        )
    return parts


def _finish(
    storage: Storage, config: TableConfig, ts: str, target_ts: str, meta: RollbackMetadata
) -> None:
    """Complete rollback ``ts``, then delete the target's pending files and heartbeat."""
    rollback_in_metadata(storage, config, ts, target_ts)  # the metadata table's first
    with contextlib.suppress(CommitConflictError):  # another writer finished this rollback
        complete(storage, config, ROLLBACK, ts, encode_rollback_metadata(meta))
    timeline = load_timeline(storage, config)
    for i in timeline.instants:
        if i.timestamp == target_ts and i.state != COMPLETED:
            storage.delete(timeline.path_of(i))
    heartbeat.stop(storage, target_ts)


def rolled_back(storage: Storage, timeline: Timeline, timestamp: str) -> bool:
    """Whether any rollback on ``timeline`` (in any state) targets instant ``timestamp``."""
    for i in timeline.instants:
        if i.action == ROLLBACK and i.state == REQUESTED and i.timestamp > timestamp:
            plan = _plan_of(storage, timeline, i)
            if plan.instant_to_rollback and plan.instant_to_rollback[0] == timestamp:
                return True
    return False
