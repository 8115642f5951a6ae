"""HudiFormat: the TableFormat implementation for Apache Hudi (reading, then writing)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lakecore.errors import UnsupportedFeatureError
from lakecore.format import Capability, TableFeatures
from lakecore.model.history import HistoryEntry
from lakecore.snapshot import Snapshot
from lakecore.storage import Storage
from lakecore_hudi.keys import META_FIELDS
from lakecore_hudi.options import ReadOptions
from lakecore_hudi.source import HudiSnapshotSource
from lakecore_hudi.state import HudiState, instant_epoch_ms, load_state
from lakecore_hudi.table_config import PROPERTIES_PATH, read_table_config
from lakecore_hudi.timeline.active import load_timeline

if TYPE_CHECKING:
    from lakecore.planning.tasks import FileRows, RowPositions, ScanContext
    from lakecore_hudi.write.committer import HudiCommitter
    from lakecore_hudi.write.writer import HudiWriter

CAPABILITIES = frozenset(
    {
        Capability.WRITE,
        Capability.PARTITIONING,
        Capability.OVERWRITE,
        Capability.DELETE,
        Capability.UPDATE,
        Capability.MERGE,
        Capability.UPSERT,
        Capability.CHANGE_FEED,
        Capability.TIME_TRAVEL_BY_TIMESTAMP,
        Capability.COMPACT,
        Capability.CLEAN,
        Capability.REPLACE_FILES,
        Capability.COMMIT_METADATA,
        Capability.COMMIT_TIMESTAMPS,
        Capability.SCHEMA_EVOLUTION,
        Capability.SCHEMA_MERGE,
        Capability.ADOPT_FILES,
    }
)
"""What lakecore does with Hudi tables. Schema evolution adds nullable columns and widens
types (``write.schema_update``); renames and drops need Hudi's schema-on-read evolution and
are refused. ``adopt_files`` lists another format's Parquet files through the metadata
table's ``files`` partition (``write.adopt``; tables created with ``metadata_enable``).
Not (yet): table properties, CHECK constraints, application transactions
(the Hudi commit takes only planned instants),
nor checkpoint/vacuum/restore/optimize (Hudi's upkeep is ``compact`` and ``clean``)."""


class HudiFormat:
    """Apache Hudi tables: a ``.hoodie`` timeline of instants over base and log files."""

    name = "hudi"
    capabilities = CAPABILITIES
    capability_notes: Mapping[Capability, str] = MappingProxyType({})
    """Why an undeclared capability is missing, where a caller can tell the user."""
    adoption_properties: Mapping[str, str] = MappingProxyType({})
    """Creation properties of a table that adopts another format's files in place (set in
    ``__init__`` from ``write.adopt.ADOPTION_PROPERTIES``; a migration in place creates its
    target with them)."""
    migration_properties: Mapping[str, str] = MappingProxyType({"url_encode_partitions": "true"})
    """Creation defaults of a migration's target (``target_properties`` override them):
    partition values are URL-encoded in paths as Hudi's ``partitionpath.urlencode`` does, so
    that every source value (one holding ``/`` too) has a path of its own."""
    adoption_rewrites = False
    """Whether such a table also takes rewritten files: no, lakecore's Hudi writer does not
    write tables without meta fields and partition columns (``layout.ensure_writable``)."""

    def __init__(self) -> None:
        from lakecore_hudi.write.adopt import ADOPTION_PROPERTIES

        self.adoption_properties = MappingProxyType(dict(ADOPTION_PROPERTIES))

    def adoption_refusal(
        self,
        path: str,
        partition: Mapping[str, Any],
        partition_by: Sequence[str],
        schema: pa.Schema,
    ) -> str | None:
        """Why a table created with ``adoption_properties``, partitioned by ``partition_by``
        with ``schema``, cannot adopt the file at ``path`` holding partition values
        ``partition`` (None: it can): its directory must be the hive-style partition path
        of those values, since Hudi readers take them from the path
        (``write.adopt.path_refusal``)."""
        from lakecore_hudi.write.adopt import directory_refusal, name_refusal

        directory = path.rpartition("/")[0]
        fields = tuple(partition_by)
        values = tuple((f, partition.get(f)) for f in fields)
        types = tuple((f, schema.field(f).type) for f in fields if f in schema.names)
        return directory_refusal(directory, values, types) or name_refusal(path, fields)

    def adoption_table_refusal(
        self, properties: Mapping[str, str], schema: pa.Schema, partition_by: Sequence[str]
    ) -> str | None:
        """Why a table created with ``properties`` (``adoption_properties`` under the
        caller's), ``schema`` and ``partition_by`` cannot adopt another format's files, before
        it is created (``write.adopt.table_refusal``)."""
        from lakecore_hudi.write.adopt import table_refusal

        return table_refusal(properties, schema, partition_by)

    def held_refusal(self, path: str, target: Snapshot) -> str | None:
        """Why the Hudi table of ``target`` cannot adopt the file at ``path`` now (None: it
        can): it adopted the file before and a later commit removed it; Hudi keeps that file
        group replaced, so the file would not be read again (``write.adopt.held_refusal``)."""
        from lakecore_hudi.write.adopt import held_refusal
        from lakecore_hudi.write.writer import state_of

        return held_refusal(state_of(target), path)

    def detect(self, storage: Storage) -> bool:
        try:
            return storage.exists(PROPERTIES_PATH) or storage.exists(PROPERTIES_PATH + ".backup")
        except OSError:
            return False

    def latest_version(self, storage: Storage) -> str:
        """The latest completed write instant; ``""`` before the first commit, as the empty
        snapshot's version (``load_snapshot(version="")`` loads it back)."""
        config = read_table_config(storage)
        latest = load_timeline(storage, config).latest_completed_write()
        return "" if latest is None else latest.timestamp

    def check_options(self, options: Mapping[str, str]) -> None:
        ReadOptions.parse(options)

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
        return snapshot_of(storage, state)

    def history(self, storage: Storage, limit: int | None = None) -> list[HistoryEntry]:
        from lakecore_hudi.history import history

        return history(storage, limit)

    def changes(self, storage: Storage, start: int | str, end: int | str | None) -> pa.Table:
        """The change feed (``lakecore_hudi.incremental``); its ``_hoodie_*`` columns are
        marked as system columns, which ``Table.changes`` drops unless ``include_meta``."""
        from lakecore_hudi.incremental import read_changes

        return read_changes(storage, str(start), None if end is None else str(end))

    def ensure_readable(self, snapshot: Snapshot) -> None:
        from lakecore_hudi.table_config import ensure_supported_version

        ensure_supported_version(int(snapshot.features.format_version))

    def read_files(
        self, context: ScanContext, files: pa.Table, columns: Sequence[str]
    ) -> Iterator[FileRows]:
        from lakecore_hudi.scan import read_files

        return read_files(context, files, columns)

    def deleted_positions(self, context: ScanContext, files: pa.Table) -> list[RowPositions | None]:
        from lakecore_hudi.scan import deleted_positions

        return deleted_positions(context, files)

    # ------------------------------------------------------------------ writing

    def check_partition_values(self, properties: Mapping[str, str], values: pa.Table) -> None:
        """Raise ``ConstraintViolationError`` for partition ``values`` (a column per partition
        column) that a new table with ``properties`` could not write (``/`` in a value
        without URL-encoded paths): a migration asks before it creates its target."""
        from lakecore_hudi.write.create import check_partition_values

        check_partition_values(properties, values)

    def create(
        self,
        storage: Storage,
        schema: pa.Schema,
        partition_by: Sequence[str],
        properties: dict[str, str],
        timestamp_ms: int | None = None,
    ) -> None:
        # A Hudi table has no instant until its first write: ``timestamp_ms`` dates nothing
        # here (the first commit's instant is its own timestamp).
        from lakecore_hudi.write.create import create_table

        create_table(storage, schema, partition_by, properties)

    def writer(
        self, storage: Storage, snapshot: Snapshot, timestamp_ms: int | None = None
    ) -> HudiWriter:
        from lakecore_hudi.write.writer import HudiWriter

        return HudiWriter(storage, snapshot, timestamp_ms)

    def committer(self, storage: Storage, base: Snapshot) -> HudiCommitter:
        """Completes the transaction's planned instants (no numbered versions, no rebase)."""
        from lakecore_hudi.write.committer import HudiCommitter

        return HudiCommitter(storage, base)

    def compact(self, storage: Storage, snapshot: Snapshot) -> str | None:
        """Compact every MoR file slice with log files into a new base file.

        Returns the compaction instant, or None when there was nothing to compact.
        """
        from lakecore_hudi.write.compaction import compact
        from lakecore_hudi.write.writer import state_of

        return compact(storage, state_of(snapshot))

    def clean(self, storage: Storage, snapshot: Snapshot, retain_commits: int) -> list[str]:
        """Delete file slices the last ``retain_commits`` completed writes do not need.

        Returns the deleted paths (table-relative); a ``clean`` instant records them.

        Raises:
            UnsupportedFeatureError: (feature ``shared-table-root``) the table lists files
                another format wrote (``adopt_files``): cleaning would delete files of
                replaced file groups that the other format's versions still read.
        """
        from lakecore_hudi.write.adopt import holds_adopted_files
        from lakecore_hudi.write.clean import clean
        from lakecore_hudi.write.writer import state_of

        state = state_of(snapshot)
        if holds_adopted_files(storage, state):
            raise UnsupportedFeatureError(
                "shared-table-root",
                "this Hudi table lists files another format wrote (adopted in place); a clean "
                "would delete the ones it replaced, which that format's versions still read: "
                "clean up with the other format's own maintenance, then migrate again",
            )
        return clean(storage, state, retain_commits)


def snapshot_of(storage: Storage, state: HudiState) -> Snapshot:
    """The Snapshot of a loaded state (what ``load_snapshot`` returns for it)."""
    config = state.config
    properties = dict(config.raw)
    properties.pop("hoodie.table.create.schema", None)
    return Snapshot(
        format=HudiFormat.name,
        version=state.version,
        timestamp=None if state.instant is None else instant_epoch_ms(state.version),
        schema=state.schema,
        partition_columns=config.partition_fields,
        properties=properties,
        features=TableFeatures(
            format_version=str(config.table_version),
            merge_on_read=config.table_type == "MERGE_ON_READ",
            system_columns=tuple(n for n in state.schema.names if n in META_FIELDS),
            record_key=config.record_key_fields,
        ),
        source=HudiSnapshotSource(storage, state),
    )
