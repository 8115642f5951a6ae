"""The SnapshotSource behind a Hudi Snapshot: the file-slice index and its scan context."""

from __future__ import annotations

import threading

import pyarrow as pa

from lakecore.expr import tree as ex
from lakecore.model.footers import Footers
from lakecore.planning.tasks import ScanContext
from lakecore.storage import Storage
from lakecore_hudi.file_index import build_file_index
from lakecore_hudi.scan import scan_context
from lakecore_hudi.scoped_index import kept_partitions, partition_index
from lakecore_hudi.state import HudiState

_SCOPED_KEPT = 4
"""Indexes with the statistics of some partitions only kept per snapshot, newest first."""


class HudiSnapshotSource:
    """One row per file slice in ``files()``; rows are read (and MoR slices merged) by
    ``lakecore_hudi.scan.read_files`` through the core's one read path."""

    def __init__(self, storage: Storage, state: HudiState) -> None:
        self.state = state
        self._storage = storage
        self._files: pa.Table | None = None
        self.footers = Footers(storage)
        """The base file footers this snapshot has read (its files never change)."""
        self._skeleton: pa.Table | None = None
        self._scoped: dict[frozenset[str], pa.Table] = {}
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

    def files_for_predicate(self, predicate: ex.Predicate) -> pa.Table:
        """The file index with statistics only for the partitions ``predicate`` keeps
        (``lakecore.planning.index.PredicateScopedSource``); ``files()`` when it keeps all."""
        with self._lock:
            if self._files is not None:
                return self._files
            if self._skeleton is None:
                self._skeleton = partition_index(self._storage, self.state)
            skeleton = self._skeleton
        kept = kept_partitions(skeleton, self.state, predicate, self.scan_context())
        if kept is None:
            return self.files()
        return self.files_of_partitions(kept)

    def files_of_partitions(self, kept: frozenset[str]) -> pa.Table:
        """The file index with statistics (and record counts) only for the slices of the
        partition paths ``kept``: ``files()`` once that is built, else built for ``kept``
        (and memoised like ``files_for_predicate``'s)."""
        with self._lock:
            if self._files is not None:
                return self._files
            index = self._scoped.pop(kept, None)
            if index is None:
                index = build_file_index(self._storage, self.state, self.footers, kept)
                while len(self._scoped) >= _SCOPED_KEPT:
                    del self._scoped[next(iter(self._scoped))]
            self._scoped[kept] = index
            return index

    def scan_context(self) -> ScanContext:
        return scan_context(self._storage, self.state)
