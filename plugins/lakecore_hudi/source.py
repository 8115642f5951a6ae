"""The SnapshotSource behind a Hudi Snapshot: the file-slice index and its scan context."""

from __future__ import annotations

import threading

import pyarrow as pa

from lakecore.model.footers import Footers
from lakecore.planning.tasks import ScanContext
from lakecore.storage import Storage
from lakecore_hudi.file_index import build_file_index
from lakecore_hudi.scan import scan_context
from lakecore_hudi.state import HudiState


class HudiSnapshotSource:
    """One row per file slice in ``files()``; rows are read (and MoR slices merged) by
    ``lakecore_hudi.scan.read_files`` through the core's one read path."""

    def __init__(self, storage: Storage, state: HudiState) -> None:
        self.state = state
        self._storage = storage
        self._files: pa.Table | None = None
        self.footers = Footers(storage)
        """The base file footers this snapshot has read (its files never change)."""
        self._lock = threading.Lock()

    @property
    def storage(self) -> Storage:
        """The table's storage (what writers use to read footers of the snapshot's files)."""
        return self._storage

    def files(self) -> pa.Table:
        with self._lock:
            if self._files is None:
                self._files = build_file_index(self._storage, self.state, self.footers)
            return self._files

    def scan_context(self) -> ScanContext:
        return scan_context(self._storage, self.state)
