"""The SnapshotSource behind a Delta Snapshot: the lazily built file index and scan context."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import pyarrow as pa

from lakecore.storage import Storage
from lakecore_delta.file_index import build_file_index
from lakecore_delta.state import DeltaState

if TYPE_CHECKING:
    from lakecore.planning.tasks import ScanContext


class DeltaSnapshotSource:
    """Builds the file index on first use (stats parsing is the costly part).

    Rows are read by ``lakecore_delta.scan.read_files`` through the core's one read path.
    """

    def __init__(self, storage: Storage, state: DeltaState) -> None:
        self.state = state
        self._storage = storage
        self._files: pa.Table | None = None
        self._lock = threading.Lock()

    def files(self) -> pa.Table:
        with self._lock:
            if self._files is None:
                self._files = build_file_index(self.state)
            return self._files

    def scan_context(self) -> ScanContext:
        from lakecore_delta.scan import scan_context

        return scan_context(self._storage, self.state)
