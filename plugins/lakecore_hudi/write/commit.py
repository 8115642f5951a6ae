"""Completing planned instants, with optimistic conflict detection between writers.

Hudi instants never collide (each writer takes its own instant time), so a commit does not
retry: it checks the instants that completed since its base snapshot was read and completes
its own. Two writers conflict when a concurrent completed write touched a file group this one
changes (updates, deletes from, replaces or compacts); writes to different file groups both
succeed. A conflicting instant is rolled back at once and ``CommitConflictError`` names the
winner.

Order of checks (see ``heartbeat`` for why): refresh the heartbeat; make sure no rollback took
the instant (its writer looked dead); check conflicts; complete; drop the heartbeat.
"""

from __future__ import annotations

from collections.abc import Sequence

from lakecore.errors import CommitConflictError, CorruptTableError, UnsupportedFeatureError
from lakecore.model.actions import Action, FormatPayload
from lakecore.storage import Storage
from lakecore_hudi.state import HudiState
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.timeline.active import load_timeline
from lakecore_hudi.timeline.instants import INFLIGHT, REPLACE_COMMIT, make_instant
from lakecore_hudi.timeline.lifecycle import complete
from lakecore_hudi.timeline.metadata import encode_commit_metadata, parse_commit_metadata
from lakecore_hudi.write import heartbeat
from lakecore_hudi.write.planned import PlannedInstant, file_groups_of
from lakecore_hudi.write.rollback import rollback_instant, rolled_back


def commit_actions(storage: Storage, base: HudiState, actions: Sequence[Action]) -> str:
    """Complete the planned instants staged as ``actions`` (see ``commit_planned``).

    Raises:
        UnsupportedFeatureError: an action that is not a Hudi write (table properties,
            application transactions, schema changes, ...); the planned instants among the
            actions are rolled back.
    """
    planned: list[PlannedInstant] = []
    others: list[Action] = []
    for a in actions:
        if isinstance(a, FormatPayload) and isinstance(a.payload, PlannedInstant):
            planned.append(a.payload)
        else:
            others.append(a)
    if others:
        for p in planned:
            abort(storage, base.config, p)
        name = type(others[0]).__name__
        raise UnsupportedFeatureError(
            f"hudi-action-{name}", f"lakecore cannot commit {name} to a Hudi table"
        )
    return commit_planned(storage, base, planned)


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
        raise ValueError("nothing to commit")
    _check_disjoint(storage, config, planned)
    for p in planned:
        heartbeat.beat(storage, p.timestamp)
    try:
        for p in planned:
            _check(storage, config, base, p, {q.timestamp for q in planned})
    except CommitConflictError:
        for p in planned:
            abort(storage, config, p)
        raise
    for p in planned:
        content = encode_commit_metadata(p.metadata, config.table_version)
        complete(storage, config, p.action, p.timestamp, content)
        heartbeat.stop(storage, p.timestamp)
    return planned[-1].timestamp


def _check_disjoint(
    storage: Storage, config: TableConfig, planned: Sequence[PlannedInstant]
) -> None:
    seen: set[tuple[str, str]] = set()
    for p in planned:
        if seen & p.touched or (len(planned) > 1 and p.exclusive):
            for q in planned:
                abort(storage, config, q)
            raise UnsupportedFeatureError(
                "hudi-overlapping-operations",
                "the operations of this transaction change the same Hudi file groups; "
                "run them as separate transactions",
            )
        seen |= p.touched


def abort(storage: Storage, config: TableConfig, p: PlannedInstant) -> None:
    """Roll back planned instant ``p`` (unless another writer already did)."""
    if not rolled_back(storage, config, p.timestamp):
        instant = make_instant(p.timestamp, p.action, INFLIGHT, config.timeline_layout_version)
        rollback_instant(storage, config, instant)


def _check(
    storage: Storage, config: TableConfig, base: HudiState, p: PlannedInstant, ours: set[str]
) -> None:
    timeline = load_timeline(storage, config)
    pending = {i.timestamp for i in timeline.pending()}
    if p.timestamp not in pending or rolled_back(storage, config, p.timestamp):
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
        shared = file_groups_of(meta) & p.touched
        if shared:
            partition, file_id = sorted(shared)[0]
            raise _conflict(
                p, instant.timestamp, f"both change file group {file_id} ({partition!r})"
            )


def _conflict(p: PlannedInstant, winner: str, why: str) -> CommitConflictError:
    return CommitConflictError(
        f"instant {p.timestamp} conflicts with concurrent instant {winner}: {why}; "
        "it was rolled back, run the operation again",
        winning_version=winner,
    )
