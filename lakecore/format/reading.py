"""The read side of a format plugin: the TableFormat protocol and the snapshot source behind it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import pyarrow as pa

from lakecore.format.capabilities import Capability
from lakecore.model.history import HistoryEntry
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
    capabilities: frozenset[Capability]
    """What lakecore can do with tables of this format; ``Table`` verbs check it before any IO.

    Must be honest both ways: every declared capability must work (a declared maintenance
    capability means the format implements the protocol of ``lakecore.format.maintenance``
    it belongs to, ``WRITE`` means ``WritableFormat``), and an operation whose capability is
    not declared is refused with ``UnsupportedFeatureError`` before anything is read. The
    format contract suite (``lakecore.testing.format_contract``) checks both.
    """

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
