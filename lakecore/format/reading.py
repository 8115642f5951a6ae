"""The read side of a format plugin: the TableFormat protocol and the snapshot source behind it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import pyarrow as pa

from lakecore.format.capabilities import Capability
from lakecore.model.history import HistoryEntry
from lakecore.storage import Storage

if TYPE_CHECKING:
    from lakecore.planning.tasks import FileRows, RowPositions, ScanContext
    from lakecore.snapshot import Snapshot


@runtime_checkable
class SnapshotSource(Protocol):
    """The format-specific state behind a Snapshot: its file index and its scan context.

    Rows are read by the format's ``TableFormat.read_files`` through
    ``lakecore.planning.read_files`` (the one read path), never by the source itself.
    """

    def files(self) -> pa.Table:
        """Return the file index (layout in ``lakecore.model.files``); must be cheap to repeat."""
        ...

    def scan_context(self) -> ScanContext:
        """Return the per-scan facts readers of this snapshot's files need (picklable).

        Must name the table root and storage options (so that ``read_files`` can reopen the
        storage in another process), the logical schema, the partition columns, how its
        writers truncate stats (``StatsPrecision``) and the format's typed reading ``state``.
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

    def check_options(self, options: Mapping[str, str]) -> None:
        """Raise ``ValueError`` for reading options (``lakecore.open(options=...)``) this
        format does not know or whose value it cannot take. ``lakecore.open`` calls it, so a
        misspelt option fails at open, not at the first read; must not read storage."""
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
        ``VersionNotFoundError`` (a ``ValueError``) for a version or timestamp the table does
        not have.
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

    def read_files(
        self, context: ScanContext, files: pa.Table, columns: Sequence[str]
    ) -> Iterator[FileRows]:
        """Yield the rows of each row of ``files`` (file-index rows, stats columns optional).

        Called by ``lakecore.planning.read_files`` (the one read path), possibly in a Spark
        executor: must open storage itself from ``context.table_uri``/``storage_options`` and
        take its own reading state from ``context.state``. Must yield, in file-index order,
        ``FileRows(index, offset, batch)`` holding every row of the row's data files (merged,
        for merge-on-read units) in position order, deleted positions INCLUDED (the caller
        drops ``deleted_positions``), with partition values filled and physical names mapped
        to the logical ``columns`` (names of ``context.schema``, in that order). Raises
        ``CorruptTableError`` for a missing or unreadable data file, ``StorageError`` when the
        store fails.
        """
        ...

    def deleted_positions(self, context: ScanContext, files: pa.Table) -> list[RowPositions | None]:
        """Answer, per row of ``files``, which row positions of its data are deleted.

        Must return one entry per row: a sorted, duplicate-free ``numpy.uint64`` array of
        positions (as ``read_files`` numbers them), or None when the row's ``deletion`` is
        null. Only called when some row has a non-null ``deletion``; the format decodes its
        own opaque ``deletion.descriptor`` (Delta: a deletion vector). Raises
        ``CorruptTableError`` when the descriptor or what it points at is malformed.
        """
        ...
