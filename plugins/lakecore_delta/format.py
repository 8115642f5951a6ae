"""DeltaFormat: the TableFormat implementation for Delta Lake."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from lakecore.errors import TableNotFoundError, VersionNotFoundError
from lakecore.format import Capability
from lakecore.model.actions import Action, CommitInfo
from lakecore.model.history import HistoryEntry
from lakecore.snapshot import Snapshot
from lakecore.storage import Storage
from lakecore_delta import history as delta_history
from lakecore_delta import maintenance
from lakecore_delta.log.files import LOG_DIR
from lakecore_delta.log.segment import latest_version, list_log
from lakecore_delta.protocol import ensure_readable, table_features
from lakecore_delta.source import DeltaSnapshotSource
from lakecore_delta.state import list_for, load_state
from lakecore_delta.write.committer import DeltaCommitter
from lakecore_delta.write.create import create_table
from lakecore_delta.write.data_files import DEFAULT_TARGET_FILE_SIZE
from lakecore_delta.write.writer import DeltaWriter, state_of

if TYPE_CHECKING:
    from lakecore.planning.tasks import FileRows, RowPositions, ScanContext


CAPABILITIES = frozenset(
    {
        Capability.WRITE,
        Capability.PARTITIONING,
        Capability.OVERWRITE,
        Capability.DELETE,
        Capability.UPDATE,
        Capability.MERGE,
        Capability.SET_PROPERTIES,
        Capability.CONSTRAINTS,
        Capability.APP_TRANSACTIONS,
        Capability.SCHEMA_EVOLUTION,
        Capability.SCHEMA_MERGE,
        Capability.SCHEMA_OVERWRITE,
        Capability.CHANGE_FEED,
        Capability.TIME_TRAVEL_BY_TIMESTAMP,
        Capability.CHECKPOINT,
        Capability.VACUUM,
        Capability.RESTORE,
        Capability.OPTIMIZE,
        Capability.REPLACE_FILES,
        Capability.COMMIT_METADATA,
        Capability.COMMIT_TIMESTAMPS,
        Capability.ADOPT_FILES,
    }
)
"""What lakecore does with Delta tables: no ``upsert`` (no record key: ``merge`` instead), no
``compact``/``clean`` (no log files to merge; ``optimize`` and ``vacuum`` are Delta's own).
``commit_timestamps`` needs a table with in-commit timestamps
(``delta.enableInCommitTimestamps=true``); on others the writer raises
``UnsupportedFeatureError`` naming that property."""


def _as_version(version: int | str) -> int:
    try:
        return int(version)
    except (TypeError, ValueError) as exc:
        raise VersionNotFoundError(f"Delta versions are integers, not {version!r}") from exc


class DeltaFormat:
    """Delta Lake tables: a ``_delta_log`` of JSON commits and Parquet checkpoints."""

    name = "delta"
    capabilities = CAPABILITIES

    def detect(self, storage: Storage) -> bool:
        # Any file in _delta_log; stops at the first instead of listing (and stat-ing) them all.
        return next(iter(storage.list_from(f"{LOG_DIR}/")), None) is not None

    def latest_version(self, storage: Storage) -> int:
        version = latest_version(list_for(storage, None))
        if version is None:
            version = latest_version(list_log(storage, 0))
        if version is None:
            raise TableNotFoundError(f"no Delta table at {storage.root}: _delta_log is empty")
        return version

    def check_options(self, options: Mapping[str, str]) -> None:
        if options:
            raise ValueError(f"the delta format has no reading options; got {sorted(options)}")

    def load_snapshot(
        self,
        storage: Storage,
        version: int | str | None = None,
        timestamp: int | None = None,
        previous: Snapshot | None = None,
        options: Mapping[str, str] | None = None,
    ) -> Snapshot:
        self.check_options(options or {})
        if timestamp is not None:
            version = delta_history.version_at(storage, timestamp)
        if not self.detect(storage):
            raise TableNotFoundError(f"no Delta table at {storage.root}: no _delta_log")
        base = None
        if previous is not None and isinstance(previous.source, DeltaSnapshotSource):
            base = previous.source.state
        state = load_state(storage, None if version is None else _as_version(version), base)
        if base is state and previous is not None:
            return previous
        return Snapshot(
            format=self.name,
            version=state.version,
            timestamp=state.timestamp,
            schema=state.schema,
            partition_columns=state.partition_columns,
            properties=state.configuration,
            features=table_features(state.protocol),
            source=DeltaSnapshotSource(storage, state),
        )

    def history(self, storage: Storage, limit: int | None = None) -> list[HistoryEntry]:
        return delta_history.history(storage, limit)

    def changes(self, storage: Storage, start: int | str, end: int | str | None) -> pa.Table:
        from lakecore_delta.cdf import read_changes

        return read_changes(storage, _as_version(start), None if end is None else _as_version(end))

    def ensure_readable(self, snapshot: Snapshot) -> None:
        ensure_readable(state_of(snapshot).protocol, snapshot.properties)

    def read_files(
        self, context: ScanContext, files: pa.Table, columns: Sequence[str]
    ) -> Iterator[FileRows]:
        from lakecore_delta.scan import read_files

        return read_files(context, files, columns)

    def deleted_positions(self, context: ScanContext, files: pa.Table) -> list[RowPositions | None]:
        from lakecore_delta.scan import deleted_positions

        return deleted_positions(context, files)

    # ------------------------------------------------------------------ writing

    def create(
        self,
        storage: Storage,
        schema: pa.Schema,
        partition_by: Sequence[str],
        properties: dict[str, str],
        timestamp_ms: int | None = None,
    ) -> None:
        """Create the table (commit 0); ``timestamp_ms`` makes it commit 0's in-commit
        timestamp and enables in-commit timestamps, so that a migration can replay its
        source's commit times from the first one (``write.create.initial_commit``)."""
        create_table(storage, schema, partition_by, properties, timestamp_ms)

    def writer(
        self, storage: Storage, snapshot: Snapshot, timestamp_ms: int | None = None
    ) -> DeltaWriter:
        return DeltaWriter(storage, snapshot, timestamp_ms)

    def committer(self, storage: Storage, base: Snapshot) -> DeltaCommitter:
        return DeltaCommitter(storage, base)

    def checkpoint(self, storage: Storage, snapshot: Snapshot) -> int:
        return maintenance.checkpoint(storage, snapshot)

    def vacuum(
        self,
        storage: Storage,
        snapshot: Snapshot,
        retention_hours: float,
        dry_run: bool,
        enforce_retention: bool,
    ) -> list[str]:
        return maintenance.vacuum(storage, snapshot, retention_hours, dry_run, enforce_retention)

    def restore(
        self, storage: Storage, snapshot: Snapshot, version: int | str
    ) -> tuple[list[Action], CommitInfo]:
        actions = maintenance.restore_actions(storage, snapshot, _as_version(version))
        info = CommitInfo("RESTORE", {"version": str(version)}, read_whole_table=True)
        return actions, info

    def optimize(
        self, storage: Storage, snapshot: Snapshot, target_file_size: int | None
    ) -> tuple[list[Action], CommitInfo]:
        target = target_file_size or DEFAULT_TARGET_FILE_SIZE
        actions, info, _ = maintenance.optimize_actions(storage, snapshot, target)
        return actions, info
