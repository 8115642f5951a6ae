"""The Committer protocol: how a format lands one transaction, and undoes what it wrote.

Modelled on delta-kernel's Committer. The core owns the retry loop
(``lakecore.transaction.commit_with_retries``); each format owns the steps:

1. ``prepare(actions, info) -> Prepared``: validate and encode the commit for the version after
   the base snapshot. Nothing is made visible; raises ``LakecoreError`` for actions the format
   cannot commit.
2. ``commit(prepared) -> Committed(version) | Conflict(winner)``: one atomic attempt. A
   conflict is a returned value: another writer took the version first and nothing of this
   commit landed.
3. ``rebase(prepared, winner) -> Prepared``: check the winner against this transaction
   (raises ``CommitConflictError`` when it conflicts) and re-prepare on top of it.
4. ``abort(actions)``: remove what the transaction wrote (its own data files, deletion
   vectors, pending instants) once it is certain it will never land.

Formats whose writers serialise through a lock (Hudi) never return ``Conflict``: their
``commit`` decides conflicts itself and raises ``CommitConflictError``, and their ``rebase``
raises. The core calls ``abort`` when the transaction's block raised, when ``prepare`` raised,
and when the commit ended in ``CommitConflictError`` or ``CommitStorageError`` (nothing
landed); never after ``CommitStateUnknownError`` (the commit may have landed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from lakecore.model.actions import Action, CommitInfo, CommitOutcome, Committed, Conflict

__all__ = ["CommitOutcome", "Committed", "Committer", "Conflict", "Prepared"]


@dataclass(frozen=True, slots=True)
class Prepared:
    """A commit ready to be attempted: what the format prepared for one version.

    ``version`` is the version (or instant) the commit takes if it lands; ``payload`` is the
    format's own encoded commit (Delta: the bytes of the log entry), opaque to the core.
    """

    version: int | str
    actions: tuple[Action, ...]
    info: CommitInfo
    payload: object = None


@runtime_checkable
class Committer(Protocol):
    """Lands one transaction's actions on top of one base snapshot (one per transaction).

    Every method must leave the table intact when it raises: nothing of a commit is visible
    unless ``commit`` returned ``Committed`` (or raised ``CommitStateUnknownError``, which says
    the outcome could not be determined).
    """

    def prepare(self, actions: Sequence[Action], info: CommitInfo) -> Prepared:
        """Validate ``actions`` and encode them as the commit after the base snapshot.

        Must not make anything visible. Raises a ``LakecoreError`` (``UnsupportedFeatureError``,
        ``ConstraintViolationError``, ...) for actions the format cannot commit; the core then
        aborts the transaction.
        """
        ...

    def commit(self, prepared: Prepared) -> CommitOutcome:
        """Attempt ``prepared`` once, atomically.

        Returns ``Committed(version)`` when it landed, ``Conflict(winner)`` when another writer
        took the version first (nothing of this commit landed). Raises ``CommitConflictError``
        when the format decides conflicts itself, ``CommitStorageError`` when the storage failed
        before anything could land, ``CommitStateUnknownError`` when it cannot tell whether the
        commit landed. A raw ``OSError`` escaping it is taken for an unknown outcome.
        """
        ...

    def rebase(self, prepared: Prepared, winner: int | str) -> Prepared:
        """Re-prepare ``prepared`` on top of the concurrent commit ``winner``.

        Raises ``CommitConflictError`` (naming ``winner``) when the winner invalidates this
        transaction: what it read or changed was changed by the winner. Otherwise returns the
        commit for the version after ``winner``. Formats whose ``commit`` never returns
        ``Conflict`` raise ``CommitConflictError`` here.
        """
        ...

    def abort(self, actions: Sequence[Action]) -> None:
        """Remove what this transaction wrote for ``actions``, which will never be committed.

        Must delete only files this transaction wrote itself (actions marked ``owned``, the
        format's own pending instants), only inside the table root, and must be idempotent
        (safe to call after a partial abort). Files another transaction or version references
        (a restore's re-added files, zero-copy conversions) must never be deleted. May raise on
        storage faults; the core logs that and keeps the transaction's own error.
        """
        ...
