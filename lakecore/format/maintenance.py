"""The protocols of table maintenance: checkpoints, vacuum, restore, optimize, compaction."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from lakecore.model.actions import Action, CommitInfo
from lakecore.storage import Storage

if TYPE_CHECKING:
    from lakecore.snapshot import Snapshot


@runtime_checkable
class MaintainableFormat(Protocol):
    """A format with table maintenance: checkpoints, vacuum, restore, compaction."""

    def checkpoint(self, storage: Storage, snapshot: Snapshot) -> int | str:
        """Write a checkpoint of ``snapshot``; returns its version."""
        ...

    def vacuum(
        self,
        storage: Storage,
        snapshot: Snapshot,
        retention_hours: float,
        dry_run: bool,
        enforce_retention: bool,
    ) -> list[str]:
        """Delete (or with ``dry_run`` only list) files no retained version needs."""
        ...

    def restore(
        self, storage: Storage, snapshot: Snapshot, version: int | str
    ) -> tuple[list[Action], CommitInfo]:
        """Actions that bring the table's content back to ``version``."""
        ...

    def optimize(
        self, storage: Storage, snapshot: Snapshot, target_file_size: int | None
    ) -> tuple[list[Action], CommitInfo]:
        """Compaction actions (no data change) towards files of ``target_file_size`` bytes."""
        ...


@runtime_checkable
class MergeOnReadFormat(Protocol):
    """A format with merge-on-read upkeep: compaction of log files and cleaning old slices."""

    def compact(self, storage: Storage, snapshot: Snapshot) -> int | str | None:
        """Merge every file slice's log files into a new base file; returns the instant/version
        written, None when nothing had log files."""
        ...

    def clean(self, storage: Storage, snapshot: Snapshot, retain_commits: int) -> list[str]:
        """Delete files that only commits older than the last ``retain_commits`` need;
        returns the deleted paths."""
        ...


@runtime_checkable
class TaggableFormat(Protocol):
    """A format whose tables name versions (Lance tags): the names time travel accepts."""

    def tags(self, storage: Storage) -> dict[str, int | str]:
        """Every tag of the table and the version it names."""
        ...

    def create_tag(self, storage: Storage, name: str, version: int | str) -> None:
        """Name ``version`` ``name``, atomically (two writers cannot both create one tag).

        Raises ``InvalidArgumentError`` for a name the format refuses or a tag that exists and
        ``VersionNotFoundError`` for a version the table lacks.
        """
        ...

    def delete_tag(self, storage: Storage, name: str) -> None:
        """Remove tag ``name`` (the version stays); ``VersionNotFoundError`` when absent."""
        ...
