"""The SnapshotSource behind a Delta Snapshot: lazily built file index + row reading."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from lakecore.storage import Storage
from lakecore_delta.file_index import build_file_index
from lakecore_delta.protocol import COLUMN_MAPPING_MODE
from lakecore_delta.reader import FileReader
from lakecore_delta.state import DeltaState

if TYPE_CHECKING:
    from lakecore.planning.tasks import ScanContext


class DeltaSnapshotSource:
    """Builds the file index on first use (stats parsing is the costly part) and reads rows."""

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

    def reader(self) -> FileReader:
        """A reader of this snapshot's data files."""
        mode = self.state.configuration.get(COLUMN_MAPPING_MODE, "none")
        return FileReader(self._storage, self.state.schema, self.state.partition_columns, mode)

    def read(self, files: pa.Table, columns: Sequence[str] | None) -> Iterator[pa.RecordBatch]:
        if columns is not None:
            from lakecore.errors import SchemaError

            missing = [c for c in columns if self.state.schema.get_field_index(c) < 0]
            if missing:
                raise SchemaError(
                    f"unknown column(s) {missing}; the table has {self.state.schema.names}"
                )
        return self.reader().read_files(files, columns)
