"""LanceFormat: the TableFormat implementation for Lance datasets (reading; writing is next)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from lakecore.errors import TableNotFoundError, UnsupportedFeatureError
from lakecore.format import Capability, TableFeatures
from lakecore.model.actions import Action, CommitInfo
from lakecore.model.history import HistoryEntry
from lakecore.snapshot import Snapshot
from lakecore.storage import Storage
from lakecore_lance import features
from lakecore_lance import history as lance_history
from lakecore_lance.manifest import has_manifest, latest_manifest
from lakecore_lance.source import LanceSnapshotSource
from lakecore_lance.state import LanceState, load_state

if TYPE_CHECKING:
    from lakecore.planning.tasks import FileRows, RowPositions, ScanContext
    from lakecore_lance.write.committer import LanceCommitter
    from lakecore_lance.write.writer import LanceWriter

CAPABILITIES = frozenset(
    {
        Capability.TIME_TRAVEL_BY_TIMESTAMP,
        Capability.CHANGE_FEED,
        Capability.WRITE,
        Capability.OVERWRITE,
        Capability.DELETE,
        Capability.UPDATE,
        Capability.MERGE,
        Capability.UPSERT,
        Capability.RESTORE,
        Capability.VACUUM,
        Capability.OPTIMIZE,
        Capability.SCHEMA_EVOLUTION,
        Capability.TAGS,
        Capability.REPLACE_FILES,
        Capability.COMMIT_METADATA,
        Capability.COMMIT_TIMESTAMPS,
    }
)
"""What lakecore does with Lance datasets so far: read any version (by number, tag or time),
its history and a change feed derived from the manifests; create, append, overwrite, delete,
update, merge, schema evolution, restore, vacuum, optimize and tags (``lakecore_lance.write``);
replace_files (an ``Update`` removing fragments whole), commit metadata (the transaction's
``transaction_properties``) and commit timestamps (the manifest's ``timestamp``) for
migration; Lance has no checkpoints."""


def _version_number(storage: Storage, version: int | str) -> int:
    """A version number, or the version a tag points at."""
    if isinstance(version, int) and not isinstance(version, bool):
        return version
    text = str(version)
    if text.isdigit():
        return int(text)
    return lance_history.tag_version(storage, text)


class LanceFormat:
    """Lance datasets: ``_versions/`` manifests over fragments of ``.lance`` data files."""

    name = "lance"
    capabilities = CAPABILITIES

    def detect(self, storage: Storage) -> bool:
        try:
            return has_manifest(storage)
        except OSError:
            return False

    def latest_version(self, storage: Storage) -> int:
        return latest_manifest(storage).version

    def check_options(self, options: Mapping[str, str]) -> None:
        if options:
            raise ValueError(f"the lance format has no reading options; got {sorted(options)}")

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
            version = lance_history.version_at(storage, timestamp)
        number = None if version is None else _version_number(storage, version)
        if (
            previous is not None
            and isinstance(previous.source, LanceSnapshotSource)
            and number is not None
            and previous.version == number
        ):
            return previous
        state = load_state(storage, number)
        return self._snapshot(storage, state)

    def _snapshot(self, storage: Storage, state: LanceState) -> Snapshot:
        m = state.manifest
        properties = dict(m.config)
        properties.update({f"table_metadata.{k}": v for k, v in m.table_metadata.items()})
        return Snapshot(
            format=self.name,
            version=state.version,
            timestamp=state.timestamp_ms,
            schema=state.schema,
            partition_columns=(),
            properties=properties,
            features=TableFeatures(
                format_version=m.data_format.version or "0.1",
                reader_features=features.flag_names(int(m.reader_feature_flags)),
                writer_features=features.flag_names(int(m.writer_feature_flags)),
                merge_on_read=any(f.HasField("deletion_file") for f in m.fragments),
            ),
            source=LanceSnapshotSource(storage, state),
        )

    def history(self, storage: Storage, limit: int | None = None) -> list[HistoryEntry]:
        # Not ``detect``: it takes a storage fault for "no dataset" (detection must answer
        # a bool), and a transient fault must surface as one (the caller retries).
        if not has_manifest(storage):
            raise TableNotFoundError(f"no Lance dataset at {storage.root}")
        return lance_history.history(storage, limit)

    def changes(self, storage: Storage, start: int | str, end: int | str | None) -> pa.Table:
        """Rows inserted and deleted by versions ``start..end``, derived from the manifests
        (``lakecore_lance.changes``); versions may be numbers or tags."""
        from lakecore_lance.changes import read_changes

        first = _version_number(storage, start)
        last = None if end is None else _version_number(storage, end)
        return read_changes(storage, first, last)

    def ensure_readable(self, snapshot: Snapshot) -> None:
        source = snapshot.source
        if not isinstance(source, LanceSnapshotSource):
            raise TypeError(f"not a Lance snapshot: {snapshot!r}")
        features.ensure_readable(source.state.manifest, f"version {snapshot.version}")

    def read_files(
        self, context: ScanContext, files: pa.Table, columns: Sequence[str]
    ) -> Iterator[FileRows]:
        from lakecore_lance.scan import read_files

        return read_files(context, files, columns)

    def deleted_positions(self, context: ScanContext, files: pa.Table) -> list[RowPositions | None]:
        from lakecore_lance.scan import deleted_positions

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
        from lakecore_lance.write.create import create_dataset

        create_dataset(storage, schema, partition_by, properties, timestamp_ms)

    def writer(
        self, storage: Storage, snapshot: Snapshot, timestamp_ms: int | None = None
    ) -> LanceWriter:
        from lakecore_lance.write.writer import LanceWriter

        # timestamp_ms reaches the committer as CommitInfo.timestamp_ms: Lance files do not
        # carry the commit time, only the manifest does.
        return LanceWriter(storage, snapshot)

    def committer(self, storage: Storage, base: Snapshot) -> LanceCommitter:
        from lakecore_lance.write.committer import LanceCommitter

        return LanceCommitter(storage, base)

    # ------------------------------------------------------------------ upkeep

    def restore(
        self, storage: Storage, snapshot: Snapshot, version: int | str
    ) -> tuple[list[Action], CommitInfo]:
        from lakecore_lance.write.maintenance import restore_actions

        return restore_actions(storage, snapshot, _version_number(storage, version))

    def tags(self, storage: Storage) -> dict[str, int | str]:
        return dict(lance_history.tags(storage))

    def create_tag(self, storage: Storage, name: str, version: int | str) -> None:
        from lakecore_lance.write.tags import create_tag

        create_tag(storage, name, _version_number(storage, version))

    def delete_tag(self, storage: Storage, name: str) -> None:
        from lakecore_lance.write.tags import delete_tag

        delete_tag(storage, name)

    def checkpoint(self, storage: Storage, snapshot: Snapshot) -> int:
        raise UnsupportedFeatureError("checkpoint", "Lance datasets have no checkpoints")

    def vacuum(
        self,
        storage: Storage,
        snapshot: Snapshot,
        retention_hours: float,
        dry_run: bool,
        enforce_retention: bool,
    ) -> list[str]:
        from lakecore_lance.write.maintenance import vacuum

        return vacuum(storage, snapshot, retention_hours, dry_run, enforce_retention)

    def optimize(
        self, storage: Storage, snapshot: Snapshot, target_file_size: int | None
    ) -> tuple[list[Action], CommitInfo]:
        from lakecore_lance.write.maintenance import optimize_actions

        return optimize_actions(storage, snapshot, target_file_size)
