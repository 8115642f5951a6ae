"""DeltaCommitter: Delta's side of the core's commit loop (see ``lakecore.format.committer``).

prepare = the commit's JSON actions for the version after the base; commit = one
put-if-absent of ``_delta_log/<version>.json`` with read-back (``put_commit``); rebase =
Delta's conflict checker against the winner, then the same actions for the version after it;
abort = delete the data, change-data and deletion-vector files the transaction wrote.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pyarrow as pa

from lakecore.errors import CommitConflictError, CorruptTableError
from lakecore.format.committer import Prepared
from lakecore.model import files as fi
from lakecore.model.actions import (
    Action,
    AddChangeFiles,
    AddFiles,
    CommitInfo,
    CommitOutcome,
    Committed,
    DeleteRows,
    SetProperties,
)
from lakecore.snapshot import Snapshot
from lakecore.storage import Storage
from lakecore.storage.paths import contained_path
from lakecore_delta.file_index import deletion_descriptor
from lakecore_delta.log.files import LOG_DIR
from lakecore_delta.write import commit as delta_commit
from lakecore_delta.write.properties import validate_properties
from lakecore_delta.write.writer import state_of

log = logging.getLogger(__name__)


def _as_int(version: int | str) -> int:
    return int(version)


class DeltaCommitter:
    """Lands one transaction on a Delta table, on top of ``base`` (one per transaction)."""

    def __init__(self, storage: Storage, base: Snapshot) -> None:
        self._storage = storage
        self._base = base
        self._state = state_of(base)

    def prepare(self, actions: Sequence[Action], info: CommitInfo) -> Prepared:
        """The commit of ``actions`` as the version after the base.

        Raises:
            ValueError: a property value Delta refuses (before any file is written).
            ConstraintViolationError: rows deleted from an append-only table.
        """
        for action in actions:
            if isinstance(action, SetProperties):
                validate_properties(action.properties)
        version = self._state.version + 1
        payload = delta_commit.commit_bytes(self._state, actions, info, version)
        return Prepared(version, tuple(actions), info, payload)

    def commit(self, prepared: Prepared) -> CommitOutcome:
        """Put the prepared commit file unless it exists (see ``put_commit``); after it lands,
        the post-commit hooks run (they never raise)."""
        if not isinstance(prepared.payload, bytes):
            raise TypeError("not a Delta prepared commit")
        version = _as_int(prepared.version)
        outcome = delta_commit.put_commit(self._storage, version, prepared.payload)
        if isinstance(outcome, Committed):
            # The base configuration decides, unless this commit changed properties.
            changed = any(isinstance(a, SetProperties) for a in prepared.actions)
            conf = None if changed else self._state.configuration
            delta_commit.after_commit(self._storage, version, conf)
        return outcome

    def rebase(self, prepared: Prepared, winner: int | str) -> Prepared:
        """Check commit ``winner`` against this transaction, then prepare the version after it.

        Raises:
            CommitConflictError: the winner conflicts (see ``check_conflicts``), or this
                commit was given a timestamp (``CommitInfo.timestamp_ms``) that is not later
                than the winner's in-commit timestamp.
            OSError: reading the winner failed (the core makes it ``CommitStorageError``).
        """
        won = _as_int(winner)
        actions, info = prepared.actions, prepared.info
        delta_commit.check_conflicts(self._storage, self._state, won, actions, info)
        # In-commit timestamps must strictly increase past the winner's.
        previous_ict = delta_commit.in_commit_timestamp(self._storage, won)
        if info.timestamp_ms is not None and info.timestamp_ms <= previous_ict:
            raise CommitConflictError(
                f"concurrent commit {won} has in-commit timestamp {previous_ict}, not earlier "
                f"than this commit's given timestamp {info.timestamp_ms}",
                winning_version=won,
            )
        payload = delta_commit.commit_bytes(self._state, actions, info, won + 1, previous_ict)
        return Prepared(won + 1, actions, info, payload)

    def abort(self, actions: Sequence[Action]) -> None:
        """Delete the files of the ``owned`` actions: data files, change-data files and
        deletion-vector files, each only if it lies inside the table and outside
        ``_delta_log/``. Files of actions that are not owned (a restore's re-added files) are
        never touched."""
        for path in owned_files(actions, self._storage.root):
            self._storage.delete(path)


def owned_files(actions: Sequence[Action], root: str) -> list[str]:
    """Table-relative paths of the files the ``owned`` actions wrote, sorted.

    A path outside ``root`` or inside ``_delta_log/`` is left out (and logged): an abort never
    deletes a file the transaction cannot have written.
    """
    paths: set[str] = set()
    for a in actions:
        if isinstance(a, AddFiles | AddChangeFiles | DeleteRows) and a.owned:
            if not isinstance(a, DeleteRows):
                paths.update(str(p) for p in a.files.column(fi.PATH).to_pylist())
            paths.update(_deletion_vector_files(a.files))
    out = []
    for path in paths:
        try:
            relative = contained_path(path, root, source="the aborted transaction's actions")
        except CorruptTableError as exc:
            log.warning("not deleting %s: %s", path, exc)
            continue
        if relative == LOG_DIR or relative.startswith(LOG_DIR + "/"):
            log.warning("not deleting %s: it lies in the Delta log", path)
            continue
        out.append(relative)
    return sorted(out)


def _deletion_vector_files(files: pa.Table) -> set[str]:
    """The DV files the rows' ``deletion`` descriptors name (inline DVs have none)."""
    if fi.DELETION not in files.column_names:
        return set()
    out: set[str] = set()
    for deletion in files.column(fi.DELETION).to_pylist():
        try:
            dv = deletion_descriptor(deletion)  # the index's neutral ``deletion`` value
            if dv is None or dv.is_inline:
                continue
            path = dv.relative_path if dv.storage_type == "u" else dv.path_or_inline_dv
        except CorruptTableError as exc:
            log.warning("not deleting deletion vector %s: %s", deletion, exc)
            continue
        if path:
            out.add(path)
    return out
