"""DeltaWriter: plans appends, overwrites and deletes against one snapshot."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from lakecore.errors import UnsupportedFeatureError
from lakecore.model.actions import Action, AddFiles, CommitInfo, RemoveFiles
from lakecore.snapshot import Snapshot
from lakecore.storage import Storage
from lakecore_delta.protocol import COLUMN_MAPPING_MODE
from lakecore_delta.source import DeltaSnapshotSource
from lakecore_delta.state import DeltaState
from lakecore_delta.write.data_files import DEFAULT_TARGET_FILE_SIZE, FileLayout, write_data_files
from lakecore_delta.write.data_in import conform_to_schema, to_arrow_table
from lakecore_delta.write.features import ensure_writable
from lakecore_delta.write.schema_update import DeltaSchemaUpdate

TARGET_FILE_SIZE = "delta.targetFileSize"


def state_of(snapshot: Snapshot) -> DeltaState:
    """The Delta state behind a lakecore Snapshot of a Delta table."""
    source = snapshot.source
    if not isinstance(source, DeltaSnapshotSource):
        raise TypeError("not a Delta snapshot")
    return source.state


def _ensure_no_unsupported_columns(schema: pa.Schema) -> None:
    for f in schema:
        meta = f.metadata or {}
        if b"delta.metadata" in meta:
            raw = meta[b"delta.metadata"].decode()
            if "delta.generationExpression" in raw:
                raise UnsupportedFeatureError(
                    "generatedColumns",
                    f"column {f.name!r} is generated; writing it is not supported",
                )
            if "delta.identity." in raw:
                raise UnsupportedFeatureError(
                    "identityColumns", f"column {f.name!r} is an identity column; not supported"
                )


class DeltaWriter:
    """Writes data files for one snapshot and returns the actions that publish them."""

    def __init__(self, storage: Storage, snapshot: Snapshot) -> None:
        self._storage = storage
        self._snapshot = snapshot
        self._state = state_of(snapshot)
        ensure_writable(self._state.protocol)
        _ensure_no_unsupported_columns(self._state.schema)

    def _layout(self) -> FileLayout:
        conf = self._state.configuration
        return FileLayout(
            schema=self._state.schema,
            partition_columns=self._state.partition_columns,
            column_mapping_mode=conf.get(COLUMN_MAPPING_MODE, "none"),
            target_file_size=int(conf.get(TARGET_FILE_SIZE, DEFAULT_TARGET_FILE_SIZE)),
        )

    def _write(self, data: Any) -> AddFiles:
        table = conform_to_schema(to_arrow_table(data), self._state.schema)
        return AddFiles(write_data_files(self._storage, self._layout(), table))

    def append(self, data: Any) -> tuple[list[Action], CommitInfo]:
        add = self._write(data)
        info = CommitInfo(
            "WRITE", {"mode": "Append", "partitionBy": list(self._state.partition_columns)}
        )
        return [add], info

    def overwrite(self, data: Any, where: str | None) -> tuple[list[Action], CommitInfo]:
        if where is not None:
            raise UnsupportedFeatureError("replaceWhere", "overwrite(where=...) is not built yet")
        add = self._write(data)
        removes = RemoveFiles(self._snapshot.files())
        info = CommitInfo(
            "WRITE",
            {"mode": "Overwrite", "partitionBy": list(self._state.partition_columns)},
            read_whole_table=True,
        )
        return [removes, add], info

    def delete(self, where: str | None) -> tuple[list[Action], CommitInfo]:
        if where is not None:
            raise UnsupportedFeatureError("delete-where", "delete(where=...) is not built yet")
        info = CommitInfo("DELETE", {"predicate": "[]"}, read_whole_table=True)
        return [RemoveFiles(self._snapshot.files())], info

    def schema_update(self) -> DeltaSchemaUpdate:
        return DeltaSchemaUpdate(self._state)

    def update(self, set: dict[str, str], where: str | None) -> tuple[list[Action], CommitInfo]:
        raise UnsupportedFeatureError("update", "update is not built yet")
