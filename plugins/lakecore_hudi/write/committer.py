"""HudiCommitter: Hudi's side of the core's commit loop (see ``lakecore.format.committer``).

A Hudi write takes its instant when it is planned (requested, then inflight, files written),
so there is no version to race for and no rebase: ``prepare`` checks that the actions are the
planned instants of Hudi writes, ``commit`` completes them under the table lock and returns
``Committed(instant)`` or raises ``CommitConflictError`` (``commit_planned``), and ``rebase``
is never reached (it raises). ``abort`` rolls back the planned instants that were never handed
to ``commit`` (under the table lock, with ``rollback``): their data and log files, then their
requested and inflight files and heartbeat. An instant ``commit`` was given is settled by
``commit_planned`` itself: rolled back on a conflict or a storage fault, deliberately left to
its heartbeat's expiry when the lock could not be taken (a rollback would wait for the same
lock), or possibly completed (outcome unknown).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

import pyarrow as pa

from lakecore.errors import (
    CommitConflictError,
    CommitError,
    InvalidArgumentError,
    UnsupportedFeatureError,
)
from lakecore.format.committer import Prepared
from lakecore.model.actions import (
    Action,
    AddFiles,
    CommitInfo,
    CommitOutcome,
    Committed,
    FormatPayload,
    RemoveFiles,
)
from lakecore.snapshot import Snapshot
from lakecore.storage import Storage
from lakecore_hudi.history import RESERVED_EXTRA_METADATA
from lakecore_hudi.state import instant_text
from lakecore_hudi.write import commit as hudi_commit
from lakecore_hudi.write.planned import PlannedInstant
from lakecore_hudi.write.writer import FORMAT, state_of

log = logging.getLogger(__name__)


class HudiCommitter:
    """Lands one transaction's planned instants on a Hudi table (one per transaction).

    It remembers which instants it handed to ``commit_planned``: those are never rolled back
    by ``abort`` (see the module docstring).
    """

    def __init__(self, storage: Storage, base: Snapshot) -> None:
        self._storage = storage
        self._state = state_of(base)
        self._attempted: set[str] = set()
        self._started: list[PlannedInstant] = []  # adoptions' instants claimed by ``prepare``

    def prepare(self, actions: Sequence[Action], info: CommitInfo) -> Prepared:
        """The planned instants of ``actions``; ``version`` is the last one's instant time.

        Adopted files (``AddFiles(owned=False)``, ``Transaction.adopt_files``) and removed
        files (``RemoveFiles``) join the last planned instant, or a replacecommit claimed here
        when the transaction planned none (``write.adopt``; ``abort`` rolls it back).

        ``info.app_metadata`` goes into every instant's ``extraMetadata`` (as Hudi keeps a
        writer's commit metadata keys); ``info.read_whole_table`` (e.g. a migration's
        exclusive ``replace_files``) makes the instants conflict with any concurrent write.

        Raises:
            UnsupportedFeatureError: an action that is not a Hudi write (table properties,
                application transactions, schema changes, ...), or instants of one
                transaction that change the same file groups.
            InvalidArgumentError: no action at all, or an ``app_metadata`` key Hudi uses
                itself (``schema``); an adopted file outside the directory of its partition
                values or a removed file that is not live (``write.adopt``).
            CommitError: ``info.timestamp_ms`` is not the instant time the writes took
                (``HudiFormat.writer(..., timestamp_ms)`` must have been given it).
        """
        planned = planned_instants(actions)
        adopting = [a for a in actions if _is_adoption(a)]
        others = [a for a in actions if not _is_planned(a) and not _is_adoption(a)]
        if others:
            name = type(others[0]).__name__
            raise UnsupportedFeatureError(
                f"hudi-action-{name}", f"lakecore cannot commit {name} to a Hudi table"
            )
        if adopting:
            planned = self._adopt(planned, adopting, info)
        if not planned:
            raise InvalidArgumentError("nothing to commit")
        _check_timestamp(planned, info)
        planned = tuple(_with_info(p, info) for p in planned)
        hudi_commit.check_disjoint(planned)
        staged = tuple(FormatPayload(FORMAT, p) for p in planned)
        return Prepared(planned[-1].timestamp, staged, info, planned)

    def _adopt(
        self,
        planned: tuple[PlannedInstant, ...],
        actions: Sequence[Action],
        info: CommitInfo,
    ) -> tuple[PlannedInstant, ...]:
        """``planned`` with the adopted files (``AddFiles(owned=False)``) and removed files
        (``RemoveFiles``) of ``actions`` folded into the last instant, or into a new
        replacecommit when nothing else was planned (``write.adopt``); everything is checked
        before an instant is claimed."""
        from lakecore_hudi.write import adopt

        state = self._state
        adopt.ensure_adoptable(state.config)
        added = [a.files for a in actions if isinstance(a, AddFiles) and a.files.num_rows]
        gone = [a.files for a in actions if isinstance(a, RemoveFiles) and a.files.num_rows]
        files = pa.concat_tables(added, promote_options="permissive") if added else None
        removed = pa.concat_tables(gone, promote_options="permissive") if gone else None
        groups = adopt.replaced_groups(state, removed) if removed is not None else set()
        if files is not None:
            adopt.adopted_stats(state, files, "0")  # refusals before any instant is claimed
        if planned:
            last = planned[-1]
        else:
            at = None if info.timestamp_ms is None else instant_text(info.timestamp_ms)
            last = adopt.start_adoption(self._storage, state, at)
            self._started.append(last)
        stats = adopt.adopted_stats(state, files, last.timestamp) if files is not None else []
        return (*planned[:-1], adopt.fold(last, stats, groups))

    def commit(self, prepared: Prepared) -> CommitOutcome:
        """Complete the prepared instants (``commit_planned``): ``Committed(instant)``, or
        ``CommitConflictError`` / ``CommitStorageError`` / ``CommitStateUnknownError``; never
        ``Conflict``."""
        planned = planned_instants(prepared.actions)
        self._attempted.update(p.timestamp for p in planned)
        return Committed(hudi_commit.commit_planned(self._storage, self._state, planned))

    def rebase(self, prepared: Prepared, winner: int | str) -> Prepared:
        """Never reached (``commit`` never returns ``Conflict``); raises ``CommitConflictError``."""
        raise CommitConflictError(
            f"Hudi commits check conflicts under the table lock when they complete; instant "
            f"{winner} won",
            winning_version=winner,
        )

    def abort(self, actions: Sequence[Action]) -> None:
        """Roll back the planned instants of ``actions`` not handed to ``commit`` yet.

        Every instant is tried; the first failure is raised after the others were tried.

        Raises:
            CommitConflictError: the table lock stayed held by another writer (the instant is
                left to its heartbeat's expiry; a later writer rolls it back).
            OSError: the storage failed (the same).
        """
        failure: Exception | None = None
        for p in [*planned_instants(actions), *self._started]:
            if p.timestamp in self._attempted:
                continue
            try:
                hudi_commit.abort(self._storage, self._state.config, p)
            except Exception as exc:  # try the others, then report the first
                log.warning("could not roll back instant %s: %s", p.timestamp, exc)
                failure = failure or exc
        if failure is not None:
            raise failure


def _check_timestamp(planned: Sequence[PlannedInstant], info: CommitInfo) -> None:
    """Raise ``CommitError`` unless every instant took ``info.timestamp_ms``'s instant time.

    A commit replaying a timestamp takes that instant time when its writer claims the
    instant, so one transaction with a timestamp holds one write.
    """
    if info.timestamp_ms is None:
        return
    wanted = instant_text(info.timestamp_ms)
    wrong = [p.timestamp for p in planned if p.timestamp != wanted]
    if wrong:
        raise CommitError(
            f"the commit's timestamp {info.timestamp_ms} is instant time {wanted}, but the "
            f"writes took instant(s) {wrong}: the writer must be made with the same "
            "timestamp_ms, and a transaction with a timestamp holds one write"
        )


def _with_info(p: PlannedInstant, info: CommitInfo) -> PlannedInstant:
    """``p`` carrying the transaction's app metadata, exclusive if it read the whole table."""
    reserved = sorted(k for k in info.app_metadata if k in RESERVED_EXTRA_METADATA)
    if reserved:
        raise InvalidArgumentError(
            f"app_metadata key(s) {reserved} are Hudi's own commit metadata; use other names"
        )
    if not info.app_metadata and not info.read_whole_table:
        return p
    extra = {**p.metadata.extra_metadata, **info.app_metadata}
    metadata = replace(p.metadata, extra_metadata=extra)
    return replace(p, metadata=metadata, exclusive=p.exclusive or info.read_whole_table)


def _is_adoption(action: Action) -> bool:
    """Files published as they are (``adopt_files``) or removed whole (``write.adopt``)."""
    return (isinstance(action, AddFiles) and not action.owned) or isinstance(action, RemoveFiles)


def _is_planned(action: Action) -> bool:
    return isinstance(action, FormatPayload) and isinstance(action.payload, PlannedInstant)


def planned_instants(actions: Sequence[Action]) -> tuple[PlannedInstant, ...]:
    """The planned instants staged among ``actions``, in order."""
    return tuple(
        a.payload
        for a in actions
        if isinstance(a, FormatPayload) and isinstance(a.payload, PlannedInstant)
    )
