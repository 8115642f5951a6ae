"""The SnapshotSource behind a Delta Snapshot: the lazily built file index and scan context."""

from __future__ import annotations

import threading
from collections.abc import Collection
from typing import TYPE_CHECKING

import pyarrow as pa

from lakecore.storage import Storage
from lakecore_delta.file_index import build_file_index
from lakecore_delta.state import DeltaState

if TYPE_CHECKING:
    from lakecore.planning.tasks import ScanContext

_PARTIAL_KEPT = 4
"""Partial indexes (stats of a few columns) kept per snapshot, newest first."""


class DeltaSnapshotSource:
    """Builds the file index on first use (stats parsing is the costly part).

    The add actions keep their stats as JSON text until an index is asked for: ``files()``
    converts every column's stats, ``files_with_stats(columns)`` (planning) only the named
    columns'. Rows are read by ``lakecore_delta.scan.read_files`` through the core's one
    read path.
    """

    def __init__(self, storage: Storage, state: DeltaState) -> None:
        self.state = state
        self._storage = storage
        self._files: pa.Table | None = None
        self._partial: dict[frozenset[str], pa.Table] = {}
        self._lock = threading.Lock()

    def files(self) -> pa.Table:
        with self._lock:
            if self._files is None:
                self._files = build_file_index(self.state)
                self._partial.clear()
            return self._files

    def files_with_stats(self, columns: Collection[str]) -> pa.Table:
        """The file index with the stats of ``columns`` at least (see ``PartialStatsSource``)."""
        key = frozenset(columns)
        with self._lock:
            if self._files is not None:
                return self._files
            index = self._partial.get(key)
            if index is None:
                index = build_file_index(self.state, key)
                while len(self._partial) >= _PARTIAL_KEPT:
                    del self._partial[next(iter(self._partial))]
            else:
                del self._partial[key]
            self._partial[key] = index
            return index

    def scan_context(self) -> ScanContext:
        from lakecore_delta.scan import scan_context

        return scan_context(self._storage, self.state)
