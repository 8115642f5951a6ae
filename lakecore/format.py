"""The TableFormat protocol every format plugin implements, and the snapshot source behind it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import pyarrow as pa

from lakecore.model.actions import Action, CommitInfo, CommitOutcome
from lakecore.model.history import HistoryEntry
from lakecore.model.merge import MergeClauses
from lakecore.storage import Storage

if TYPE_CHECKING:
    from lakecore.planning.tasks import ScanContext, ScanTask
    from lakecore.snapshot import Snapshot


@runtime_checkable
class SnapshotSource(Protocol):
    """The format-specific state behind a Snapshot: its file index and how to read rows."""

    def files(self) -> pa.Table:
        """Return the file index (layout in ``lakecore.model.files``); must be cheap to repeat."""
        ...

    def read(self, files: pa.Table, columns: Sequence[str] | None) -> Iterator[pa.RecordBatch]:
        """Yield the live rows of ``files`` (a subset of ``files()``) in the logical schema.

        Must apply row-level deletes, partition values and column renames; ``columns`` (logical
        top-level names) restricts and orders the output columns; unknown names must raise
        ``SchemaError``.
        """
        ...

    def scan_context(self) -> ScanContext:
        """Return the per-scan facts readers of this snapshot's files need (picklable).

        Must name the table root and storage options (so that ``read_tasks`` can reopen the
        storage in another process), the logical schema, the partition columns, the format's
        reading options and how its writers truncate stats (``StatsPrecision``).
        """
        ...


@runtime_checkable
class TableFormat(Protocol):
    """A table format: detection, snapshots, history. One instance serves many tables."""

    name: str

    def detect(self, storage: Storage) -> bool:
        """Return whether ``storage``'s root holds a table of this format; must not raise."""
        ...

    def latest_version(self, storage: Storage) -> int | str:
        """Return the newest version without loading files; raises ``TableNotFoundError``."""
        ...

    def load_snapshot(
        self,
        storage: Storage,
        version: int | str | None = None,
        timestamp: int | None = None,
        previous: Snapshot | None = None,
        options: Mapping[str, str] | None = None,
    ) -> Snapshot:
        """Return the snapshot at ``version``, or the newest at or before ``timestamp`` (epoch ms).

        ``options`` are the format's reading options (``lakecore.open(options=...)``); unknown
        names must raise ``ValueError``.

        ``previous`` is an older snapshot of the same table the format may build on (e.g.
        replay only the newer commits); the result must equal a load without it.

        Must gate the table's features (``ensure_readable``) before reading any file list.
        Raises ``TableNotFoundError``, ``CorruptTableError``, ``UnsupportedFeatureError``, and
        ``ValueError`` for a version or timestamp the table does not have.
        """
        ...

    def history(self, storage: Storage, limit: int | None = None) -> list[HistoryEntry]:
        """Return the table's changes, newest first, at most ``limit`` of them."""
        ...

    def changes(self, storage: Storage, start: int | str, end: int | str | None) -> pa.Table:
        """Return the rows changed by versions ``start..end`` (inclusive) with change columns."""
        ...

    def ensure_readable(self, snapshot: Snapshot) -> None:
        """Raise ``UnsupportedFeatureError`` naming the first feature lakecore cannot read."""
        ...

    def read_tasks(
        self, context: ScanContext, tasks: Sequence[ScanTask], columns: Sequence[str] | None
    ) -> Iterator[pa.RecordBatch]:
        """Yield the live rows of ``tasks`` (planned by ``lakecore.planning``) in task order.

        Must open storage itself from ``context.table_uri``/``context.storage_options`` (it
        may run in a Spark executor), apply each task's row-level deletes, fill partition
        values and map physical to logical names; ``columns`` (logical top-level names, all by
        default) restricts and orders the output columns. Residual filters are not applied
        here (``lakecore.planning.read_tasks`` does that).
        """
        ...


@runtime_checkable
class SchemaUpdate(Protocol):
    """A schema evolution builder: stages changes, never mutates the table."""

    def add_column(self, name: str, type: pa.DataType, nullable: bool = True) -> SchemaUpdate:
        """Add a top-level column; raises ``SchemaError`` if it exists."""
        ...

    def rename_column(self, old: str, new: str) -> SchemaUpdate:
        """Rename a column; raises ``SchemaError`` if ``old`` is missing or ``new`` exists."""
        ...

    def drop_column(self, name: str) -> SchemaUpdate:
        """Drop a column; raises ``SchemaError`` if it is missing."""
        ...

    def widen_type(self, name: str, new_type: pa.DataType) -> SchemaUpdate:
        """Widen a column's type; raises ``SchemaError`` if it is not a widening."""
        ...

    def actions(self) -> list[Action]:
        """The staged changes."""
        ...


@runtime_checkable
class FormatWriter(Protocol):
    """Plans writes against one snapshot: writes data files, returns the actions to commit.

    Nothing becomes visible until the actions are committed. Each method returns the actions
    and the CommitInfo describing the operation.
    """

    def append(self, data: Any) -> tuple[list[Action], CommitInfo]:
        """Write ``data`` as new files; raises ``SchemaError``/``ConstraintViolationError``."""
        ...

    def overwrite(self, data: Any, where: str | None) -> tuple[list[Action], CommitInfo]:
        """Replace the rows matching ``where`` (all rows if None) with ``data``."""
        ...

    def delete(self, where: str | None) -> tuple[list[Action], CommitInfo]:
        """Delete the rows matching ``where`` (all rows if None)."""
        ...

    def update(self, set: dict[str, str], where: str | None) -> tuple[list[Action], CommitInfo]:
        """Set columns to SQL expressions on the rows matching ``where``."""
        ...

    def schema_update(self) -> SchemaUpdate:
        """A builder of schema changes against this snapshot."""
        ...

    def merge(
        self, source: Any, on: Sequence[str], clauses: MergeClauses
    ) -> tuple[list[Action], CommitInfo]:
        """Merge ``source`` into the table, matching rows on the key columns ``on``."""
        ...


@runtime_checkable
class WritableFormat(TableFormat, Protocol):
    """A TableFormat that can create tables and commit changes."""

    def create(
        self,
        storage: Storage,
        schema: pa.Schema,
        partition_by: Sequence[str],
        properties: dict[str, str],
    ) -> None:
        """Create an empty table; raises ``TableExistsError`` if one is there (atomically)."""
        ...

    def writer(self, storage: Storage, snapshot: Snapshot) -> FormatWriter:
        """Return a writer planning changes against ``snapshot``; gates writer features."""
        ...

    def next_version(self, base: Snapshot) -> int | str:
        """The version a commit on top of ``base`` takes."""
        ...

    def next_version_after(self, version: int | str) -> int | str:
        """The version after ``version``."""
        ...

    def commit(
        self,
        storage: Storage,
        base: Snapshot,
        actions: Sequence[Action],
        info: CommitInfo,
        version: int | str,
    ) -> CommitOutcome:
        """Write ``actions`` as ``version`` with one atomic put-if-absent.

        Returns ``Conflict(version)`` when another writer took the version (nothing written).
        """
        ...

    def check_conflicts(
        self,
        storage: Storage,
        base: Snapshot,
        winner: int | str,
        actions: Sequence[Action],
        info: CommitInfo,
    ) -> None:
        """Raise ``CommitConflictError`` if commit ``winner`` conflicts with this transaction."""
        ...


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
