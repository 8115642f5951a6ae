"""The state of one migration run and its target side: opening the target and what it holds
of the source, creating it, and checking that nobody moved it meanwhile (``run`` translates
the source's versions on top of this)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import (
    CommitConflictError,
    LakecoreError,
    MigrationError,
    SchemaError,
    StorageError,
    TableExistsError,
    TableNotFoundError,
    UnknownFormatError,
    UnsupportedFeatureError,
)
from lakecore.format.capabilities import Capability
from lakecore.migrate import adopt, guards
from lakecore.migrate import state as st
from lakecore.migrate.schema import data_schema
from lakecore.snapshot import Snapshot
from lakecore.storage import Storage
from lakecore.table import Table

log = logging.getLogger(__name__)

Progress = Callable[[int, int, "int | str"], None]
"""Called after each source version: (done, total, source version)."""


@dataclass
class TargetSide:
    """One migration run's state (the source, the target once it exists, what was done) and
    its target side."""

    source: Table
    target_uri: str
    to: str
    storage_options: Mapping[str, Any] | None
    history: bool
    progress: Progress | None
    target_storage: Storage | None = None
    target: Table | None = None
    state: st.MigrationState | None = None
    held: pa.Table = field(default_factory=st.empty_unit_map)
    versions: list[tuple[int | str, int | str]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    timestamps_kept: bool = True
    times_refused: bool = False
    """The target table refused a given commit time (a Delta table without in-commit
    timestamps): later commits take the clock's time."""
    gave_time: bool = False
    """Whether the last ``_timestamp`` asked for a given commit time."""
    notes: list[str] = field(default_factory=list)
    expected: int | str | None = None
    """The target version this run last saw it at (opened, created or committed): a commit
    must start from it, else another writer or migration changed the target meanwhile."""
    mirrored: pa.Schema | None = None
    """The source schema the target mirrors (None: not known; the target's own is used)."""
    adoption: adopt.Adoption | None = None
    """In place: which source units the target adopts as they are (``adopt``)."""

    def count(self, key: str, n: int) -> None:
        self.counts[key] = self.counts.get(key, 0) + n

    def target_access(self) -> dict[str, Any]:
        """How ``lakecore.open``/``create`` reach the target: its given Storage, else by
        ``storage_options``."""
        if self.target_storage is not None:
            return {"storage": self.target_storage}
        return {"storage_options": self.storage_options}

    # ------------------------------------------------------------------ the target

    def open_target(self) -> None:
        """Open the target if there is one and load what it holds of this source.

        Raises ``MigrationError`` when it holds another table or another source's migration,
        or was changed since its last migration commit.
        """
        import lakecore

        try:
            target = lakecore.open(self.target_uri, format=self.to, **self.target_access())
            # Detection alone does not prove a readable table. A Hudi table created by a run
            # stopped before its first commit has an empty snapshot (version ""), and is taken
            # over below like any target without migration state.
            target.snapshot()
        except (TableNotFoundError, UnknownFormatError):
            return
        except StorageError:
            raise  # the store failed (a re-run may succeed), not the table
        except LakecoreError as exc:
            raise MigrationError(
                f"{self.target_uri} holds something lakecore cannot open as a {self.to} table "
                f"({exc}); migrate into an empty location"
            ) from exc
        entries = target.history()
        state = st.find_state(entries)
        if state is None:
            if target.snapshot().files().num_rows or guards.versions_beyond_one(target, entries):
                raise MigrationError(
                    f"{self.target_uri} already holds a {self.to} table that lakecore.migrate "
                    "did not write; migrate into an empty location"
                )
            self.target = target  # created by a run killed before its first commit
            self.expected = target.snapshot().version
            return
        root = self.source.storage.root
        if state.source != root:
            raise MigrationError(
                f"{self.target_uri} holds a migration of {state.source}, not of {root}"
            )
        # The latest version, not history's newest entry: history also lists instants that
        # are no version (a Hudi rollback of a commit a failed run left pending).
        latest = target.snapshot().version
        if str(latest) != str(state.target_version):
            raise MigrationError(
                f"{self.target_uri} was changed after its last migration commit (version "
                f"{state.target_version}; latest is {latest}): incremental sync would not know "
                "which of its files still mirror the source. Migrate into a new target"
            )
        self.target, self.state = target, state
        self.expected = latest
        self.mirrored = self._source_schema_at(state.source_version)
        self.held = st.read_unit_map(target.storage, state)

    def _created(self, snapshot: Snapshot, properties: dict[str, str]) -> None:
        """Create the target for ``snapshot`` and remember what it is at."""
        self.target = self._create_target(snapshot, properties)
        # Creating a Hudi table writes hoodie.properties but no instant: only a creation that
        # committed a version (Delta's 0, Lance's 1) counts as a commit.
        if self.target.history(limit=1):
            self.count("commits", 1)
        self.expected = self.target.snapshot().version
        self.mirrored = data_schema(snapshot)

    def _source_schema_at(self, version: str) -> pa.Schema | None:
        """The source's user schema at the recorded ``version`` (None when it cannot be read,
        e.g. vacuumed: the target's own schema is compared with then)."""
        typed: int | str = int(version) if isinstance(self.source.version, int) else version
        try:
            return data_schema(self.source.snapshot(version=typed))
        except (LakecoreError, ValueError) as exc:
            log.info("source version %s cannot be read (%s)", version, exc)
            return None

    def _check_unchanged(self, base: Snapshot, version: int | str) -> None:
        """Raise ``CommitConflictError`` when the target moved since this run last saw it: a
        concurrent migration (or writer) committed, and this run's unit map no longer
        describes it (committing would duplicate rows)."""
        if self.expected is not None and str(base.version) != str(self.expected):
            raise CommitConflictError(
                f"the target changed while migrating (it is at version {base.version}, this run "
                f"expected {self.expected}): another migration or writer committed; nothing of "
                f"source version {version} landed. Run the migration again",
                winning_version=base.version,
            )

    def _create_target(self, snapshot: Snapshot, properties: dict[str, str]) -> Table:
        import lakecore
        from lakecore.plugins import load_registry

        fmt = load_registry().get(self.to)
        partitions = snapshot.partition_columns
        if partitions and Capability.PARTITIONING not in fmt.capabilities:
            self.notes.append(
                f"{self.to} tables are not partitioned: partition columns {list(partitions)} "
                "stay ordinary columns"
            )
            partitions = ()
        # The target format's own defaults for a migration (a format-neutral hook).
        properties = {**dict(getattr(fmt, "migration_properties", {})), **properties}
        key = snapshot.features.record_key
        keyed = bool(key) and Capability.UPSERT in fmt.capabilities
        keyed = keyed and "record_key" not in properties
        schema = data_schema(snapshot)
        created_at = None
        dated = self.history and Capability.COMMIT_TIMESTAMPS in fmt.capabilities
        if dated and snapshot.timestamp is not None:
            # Dated just before the first source version, so that its time can follow.
            created_at = snapshot.timestamp - 1

        # In place, the source's table is at the target's root: creation must not refuse it,
        # and the target is made to read the source's files as they are.
        beside = (self.source.format,) if self.adoption is not None else ()
        if self.adoption is not None:
            properties = {**self.adoption.properties, **properties}
            self.adoption.check_table(properties, schema, partitions)
        check_values = getattr(fmt, "check_partition_values", None)
        if check_values is not None and partitions:
            # Refused before the target exists (not at its first write, leaving an empty
            # target behind): the first version's values and the latest's, which a run of
            # the whole history reaches.
            for values in {id(s): s for s in (snapshot, self.source.snapshot())}.values():
                check_values(properties, partition_values(values, partitions))

        def create(props: dict[str, str]) -> Table:
            return lakecore._create(
                self.target_uri,
                schema,
                self.to,
                partitions,
                props,
                timestamp_ms=created_at,
                beside=beside,
                **self.target_access(),
            )

        try:
            if not keyed:
                return create(properties)
            try:
                return create({**properties, "record_key": ",".join(key)})
            except UnsupportedFeatureError:
                # A format with upserts but no neutral ``record_key`` property (Lance keys on
                # its own property). Creation refuses properties before any IO, so the plain
                # creation below starts from nothing.
                self.notes.append(
                    f"the source's record key {list(key)} is not kept: {self.to} tables "
                    "take no 'record_key' property"
                )
                return create(properties)
        except SchemaError as exc:
            raise MigrationError(
                f"a {self.to} table cannot hold the source's schema: {exc}"
            ) from exc
        except TableExistsError as exc:
            # The target was absent when this run looked: a concurrent run created it since.
            raise CommitConflictError(
                f"another run created the {self.to} table at {self.target_uri} while this one "
                f"was creating it ({exc}); this run wrote nothing. Run the migration again: it "
                "continues from what the other run committed"
            ) from exc


def partition_values(snapshot: Snapshot, partitions: Sequence[str]) -> pa.Table:
    """The partition values of ``snapshot``'s files, a column per partition column."""
    struct = snapshot.files().column("partition")
    return pa.table({name: pc.struct_field(struct, name) for name in partitions})
