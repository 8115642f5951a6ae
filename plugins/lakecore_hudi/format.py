"""HudiFormat: the TableFormat implementation for Apache Hudi (read side)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from lakecore.errors import TableNotFoundError
from lakecore.model.history import HistoryEntry
from lakecore.snapshot import Snapshot
from lakecore.storage import Storage
from lakecore_hudi.options import ReadOptions
from lakecore_hudi.source import HudiSnapshotSource
from lakecore_hudi.state import instant_epoch_ms, load_state
from lakecore_hudi.table_config import PROPERTIES_PATH, read_table_config
from lakecore_hudi.timeline.active import load_timeline

if TYPE_CHECKING:
    from lakecore.planning.tasks import ScanContext, ScanTask


class HudiFormat:
    """Apache Hudi tables: a ``.hoodie`` timeline of instants over base and log files."""

    name = "hudi"

    def detect(self, storage: Storage) -> bool:
        try:
            return storage.exists(PROPERTIES_PATH) or storage.exists(PROPERTIES_PATH + ".backup")
        except OSError:
            return False

    def latest_version(self, storage: Storage) -> str:
        config = read_table_config(storage)
        latest = load_timeline(storage, config).latest_completed_write()
        if latest is None:
            raise TableNotFoundError(
                f"the Hudi table at {storage.root} has no completed commit yet"
            )
        return latest.timestamp

    def load_snapshot(
        self,
        storage: Storage,
        version: int | str | None = None,
        timestamp: int | None = None,
        previous: Snapshot | None = None,
        options: Mapping[str, str] | None = None,
    ) -> Snapshot:
        read_options = ReadOptions.parse(options)
        state = load_state(
            storage, None if version is None else str(version), timestamp, read_options
        )
        config = state.config
        properties = dict(config.raw)
        properties.pop("hoodie.table.create.schema", None)
        return Snapshot(
            format=self.name,
            version=state.version,
            timestamp=None if state.instant is None else instant_epoch_ms(state.version),
            schema=state.schema,
            partition_columns=config.partition_fields,
            properties=properties,
            protocol={
                "table_version": config.table_version,
                "table_type": config.table_type,
                "timeline_layout_version": config.timeline_layout_version,
            },
            source=HudiSnapshotSource(storage, state),
        )

    def history(self, storage: Storage, limit: int | None = None) -> list[HistoryEntry]:
        from lakecore_hudi.history import history

        return history(storage, limit)

    def changes(self, storage: Storage, start: int | str, end: int | str | None) -> pa.Table:
        from lakecore_hudi.incremental import read_changes

        return read_changes(storage, str(start), None if end is None else str(end))

    def ensure_readable(self, snapshot: Snapshot) -> None:
        from lakecore_hudi.table_config import ensure_supported_version

        ensure_supported_version(int(snapshot.protocol["table_version"]))

    def read_tasks(
        self, context: ScanContext, tasks: Sequence[ScanTask], columns: Sequence[str] | None
    ) -> Iterator[pa.RecordBatch]:
        from lakecore_hudi.scan import read_tasks

        return read_tasks(context, tasks, columns)
