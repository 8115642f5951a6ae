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
concurrent live writer's instant is left alone; and before deleting anything the rollback
re-checks that the instant did not complete in the meantime.
"""

from __future__ import annotations

import contextlib
import time
from collections import defaultdict

from lakecore.errors import CommitConflictError, CorruptTableError
from lakecore.storage import Storage
from lakecore.storage.paths import contained_path
from lakecore_hudi.names import parse_base_file_name, parse_log_file_name
from lakecore_hudi.table_config import META_DIR, TableConfig
from lakecore_hudi.timeline.active import Timeline, load_timeline
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
from lakecore_hudi.timeline.metadata import (
    RollbackMetadata,
    RollbackPartitionMetadata,
    RollbackPlan,
    RollbackRequest,
    encode_rollback_metadata,
    encode_rollback_plan,
    parse_clustering_plan,
    parse_commit_metadata,
    parse_rollback_plan,
)
from lakecore_hudi.view import split_path
from lakecore_hudi.write import heartbeat
from lakecore_hudi.write.planned import start_instant

#: Pending actions a writer may roll back (clustering, indexing and the like are left alone).
ROLLBACK_ACTIONS = frozenset({COMMIT, DELTA_COMMIT, REPLACE_COMMIT, COMPACTION})


def rollback_failed_writes(storage: Storage, config: TableConfig) -> list[str]:
    """Resume pending rollbacks, then roll back every pending write whose heartbeat expired.

    Returns the timestamps rolled back.
    """
    timeline = load_timeline(storage, config)
    targeted: set[str] = set()
    for instant in timeline.pending():
        if instant.action == ROLLBACK:
            plan = _plan_of(storage, timeline, instant)
            if plan.instant_to_rollback is None:
                continue
            targeted.add(plan.instant_to_rollback[0])
            if _completed(storage, config, plan.instant_to_rollback[0]):
                _withdraw(storage, timeline, instant.timestamp)
            else:
                _execute(storage, config, instant.timestamp, plan)
    done = []
    for instant in timeline.pending():
        if instant.action not in ROLLBACK_ACTIONS or instant.timestamp in targeted:
            continue
        if _is_clustering(storage, timeline, instant):
            continue
        if heartbeat.is_expired(storage, config, instant.timestamp):
            rollback_instant(storage, config, instant)
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


def rollback_instant(storage: Storage, config: TableConfig, target: Instant) -> str | None:
    """Roll back the pending instant ``target``; returns the rollback's timestamp, or None when
    ``target`` completed meanwhile (nothing is deleted then)."""
    timeline = load_timeline(storage, config)
    files = failed_files(storage, config, timeline, target)
    plan = RollbackPlan((target.timestamp, target.action), _requests(storage, files))
    ts = start_instant(storage, config, ROLLBACK, encode_rollback_plan(plan), heartbeat=False)
    if _completed(storage, config, target.timestamp):
        # The writer was alive after all and won; withdraw the plan.
        _withdraw(storage, load_timeline(storage, config), ts)
        return None
    _execute(storage, config, ts, plan)
    return ts


def _withdraw(storage: Storage, timeline: Timeline, ts: str) -> None:
    """Delete the files of rollback ``ts`` whose target turned out to have completed."""
    for i in timeline.instants:
        if i.timestamp == ts and i.action == ROLLBACK:
            storage.delete(timeline.path_of(i))


def _completed(storage: Storage, config: TableConfig, timestamp: str) -> bool:
    timeline = load_timeline(storage, config)
    return any(i.timestamp == timestamp and i.state == COMPLETED for i in timeline.instants)


def failed_files(
    storage: Storage, config: TableConfig, timeline: Timeline, target: Instant
) -> list[str]:
    """Table-relative paths of the data files the pending instant ``target`` wrote."""
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
            contained_path(s.path, storage.root, source=source)
            for s in meta.write_stats()
            if s.path
        )
    by_name = config.table_version >= 8
    for info in storage.list_all(""):
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


def _execute(storage: Storage, config: TableConfig, ts: str, plan: RollbackPlan) -> None:
    """Run (or resume) rollback ``ts`` of ``plan``; a concurrent finisher is not an error."""
    if plan.instant_to_rollback is None:
        return
    # Every path of the plan is checked before anything is deleted: a plan naming a file
    # outside the table (crafted or damaged) raises CorruptTableError and deletes nothing.
    contained = {
        path: contained_path(path, storage.root, source=f"rollback plan of instant {ts}")
        for request in plan.requests
        for path in request.files_to_delete
    }
    started = time.time()
    with contextlib.suppress(CommitConflictError):  # resuming: the inflight file exists
        write_inflight(storage, config, ROLLBACK, ts)
    parts: dict[str, RollbackPartitionMetadata] = {}
    deleted = 0
    for request in plan.requests:
        for path in request.files_to_delete:
            storage.delete(contained[path])
            deleted += 1
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
    target_ts, target_action = plan.instant_to_rollback
    meta = RollbackMetadata(
        start_rollback_time=ts,
        time_taken_ms=int((time.time() - started) * 1000),
        total_files_deleted=deleted,
        commits_rollback=(target_ts,),
        instants_rollback=((target_ts, target_action),),
        partition_metadata=parts,
    )
    with contextlib.suppress(CommitConflictError):  # another writer finished this rollback
        complete(storage, config, ROLLBACK, ts, encode_rollback_metadata(meta))
    timeline = load_timeline(storage, config)
    for i in timeline.instants:
        if i.timestamp == target_ts and i.state != COMPLETED:
            storage.delete(timeline.path_of(i))
    heartbeat.stop(storage, target_ts)


def rolled_back(storage: Storage, config: TableConfig, timestamp: str) -> bool:
    """Whether any rollback on the timeline (in any state) targets instant ``timestamp``."""
    timeline = load_timeline(storage, config)
    for i in timeline.instants:
        if i.action == ROLLBACK and i.state == REQUESTED and i.timestamp > timestamp:
            plan = _plan_of(storage, timeline, i)
            if plan.instant_to_rollback and plan.instant_to_rollback[0] == timestamp:
                return True
    return False
