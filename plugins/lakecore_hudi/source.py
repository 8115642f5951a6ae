"""The SnapshotSource behind a Hudi Snapshot: the file-slice index and merged row reading."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence

import pyarrow as pa

from lakecore.errors import SchemaError
from lakecore.planning.tasks import ScanContext
from lakecore.storage import Storage
from lakecore_hudi.file_index import build_file_index
from lakecore_hudi.names import is_log_file
from lakecore_hudi.reader import SliceReader
from lakecore_hudi.scan import scan_context
from lakecore_hudi.state import HudiState


class HudiSnapshotSource:
    """One row per file slice in ``files()``; ``read`` merges each slice's logs (MoR)."""

    def __init__(self, storage: Storage, state: HudiState) -> None:
        self.state = state
        self._storage = storage
        self._files: pa.Table | None = None
        self._lock = threading.Lock()

    def files(self) -> pa.Table:
        with self._lock:
            if self._files is None:
                self._files = build_file_index(self._storage, self.state)
            return self._files

    def scan_context(self) -> ScanContext:
        return scan_context(self._storage, self.state)

    def reader(self) -> SliceReader:
        """A reader of this snapshot's file slices."""
        return SliceReader(
            self._storage,
            self.state.table_schema,
            self.state.merge_spec,
            self.state.is_valid_instant,
            self.state.options.read_optimized,
        )

    def read(self, files: pa.Table, columns: Sequence[str] | None) -> Iterator[pa.RecordBatch]:
        schema = self.state.schema
        names = list(schema.names if columns is None else columns)
        missing = [c for c in names if schema.get_field_index(c) < 0]
        if missing:
            raise SchemaError(f"unknown column(s) {missing}; the table has {schema.names}")
        out_schema = pa.schema([schema.field(c) for c in names])
        reader = self.reader()
        paths = files.column("path").to_pylist()
        logs = files.column("log_files").to_pylist()
        for path, log_files in zip(paths, logs, strict=True):
            base = None if is_log_file(path) else path
            rows = reader.read(base, log_files or [], names)
            for batch in rows.to_batches():
                if batch.num_rows:
                    yield pa.RecordBatch.from_arrays(batch.columns, schema=out_schema)
