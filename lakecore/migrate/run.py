"""The migration engine: translate a source table's versions into commits of a target table.

Format-neutral: it reads the source through ``Snapshot``/``read_files`` and writes the target
through ``Table.transaction`` (``Transaction.replace_files``), so every format pair works the
same way. One source *unit* (a row of the source's file index) becomes the target data files
holding its live rows; a unit whose fingerprint changed (new deletes, new log or column files)
is written again and its old target files removed in the same commit (see ``units``). Each
target commit records the source version it holds (see ``state``), which makes the migration
restartable and incremental.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import (
    CommitConflictError,
    CommitError,
    CommitStateUnknownError,
    CorruptTableError,
    InvalidArgumentError,
    LakecoreError,
    MigrationError,
    SchemaError,
    StorageError,
    TableNotFoundError,
    UnknownFormatError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from lakecore.faults import storage_faults
from lakecore.format.capabilities import Capability, require
from lakecore.migrate import adopt
from lakecore.migrate import state as st
from lakecore.migrate.report import MigrationReport
from lakecore.migrate.schema import conform, data_schema, schema_change
from lakecore.migrate.units import UnitDiff, diff
from lakecore.model import files as fi
from lakecore.model.history import HistoryEntry
from lakecore.planning.read import read_files
from lakecore.snapshot import Snapshot
from lakecore.storage import Storage
from lakecore.table import Table

log = logging.getLogger(__name__)

MODES = ("auto", "metadata", "rewrite")
Progress = Callable[[int, int, "int | str"], None]
"""Called after each source version: (done, total, source version)."""


def migrate(
    source_uri: str,
    target_uri: str,
    to: str,
    *,
    mode: str = "auto",
    history: bool = False,
    source_format: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
    target_properties: Mapping[str, str] | None = None,
    progress: Progress | None = None,
    target_storage: Storage | None = None,
) -> MigrationReport:
    """Migrate the table at ``source_uri`` into a ``to`` table at ``target_uri``.

    ``history=False`` writes the source's latest version; ``history=True`` replays every source
    version after those the target holds as one target commit each, with the source's commit
    timestamp when the target format keeps given timestamps (``commit_timestamps``). Running
    it again translates only the source versions committed since (nothing when there are none).
    Row-level deletes are never lost: a source file with deletes (deletion vector, Hudi log
    file, Lance deletion file) is written as its live rows.

    ``mode``: ``"rewrite"`` writes new data files. In place (``target_uri == source_uri``,
    a target format with ``adopt_files``), ``"metadata"`` writes only the target's metadata
    over the source's own Parquet files and refuses a unit that cannot be adopted as is;
    ``"auto"`` adopts what it can and rewrites the rest (see ``adopt``). At another
    location ``"auto"`` rewrites everything.

    ``target_storage``: a ready ``Storage`` rooted at ``target_uri`` to reach the target
    through instead of one opened by ``storage_options`` (which then reach the source only),
    e.g. a wrapper that injects faults (``lakecore.testing.faults``).

    Raises:
        InvalidArgumentError: an unknown ``mode``.
        MigrationError: the target cannot hold the source (types, a schema change it cannot
            replay), holds another table, or was changed since the last migration into it;
            ``mode="metadata"`` with a file that cannot be adopted (named), or not in place;
            an in-place target format without ``adopt_files``. Nothing is written then.
        PluginNotInstalledError / UnsupportedFeatureError: the target format is missing or
            cannot be written this way.
        CommitError: a target commit failed; the target keeps every version committed before
            it and a re-run continues from there.
    """
    if mode not in MODES:
        raise InvalidArgumentError(f"mode must be one of {list(MODES)}, not {mode!r}")
    import lakecore
    from lakecore.plugins import load_registry

    started = time.monotonic()
    source = adopt.open_source(source_uri, to, source_format, storage_options)
    target_format = load_registry().get(to)
    for capability in (Capability.WRITE, Capability.REPLACE_FILES, Capability.COMMIT_METADATA):
        require(target_format.name, target_format.capabilities, capability, "migration into it")
    target_root = (target_storage or lakecore._storage_for(target_uri, storage_options, None)).root
    in_place = target_root.rstrip("/") == source.storage.root.rstrip("/")
    _refuse_nested(source.storage.root, target_root)
    adoption = adopt.plan(mode, source, target_format, in_place)
    run = _Run(
        source, target_uri, target_format.name, storage_options, history, progress, target_storage
    )
    run.adoption = adoption
    # A storage fault the target's format or the unit map's write let through raw is a
    # StorageError; what was committed before it stays, and a re-run continues from there.
    with storage_faults(f"migrating into {target_uri}", StorageError):
        run.open_target()
        run.translate(dict(target_properties or {}))
    return run.report(mode, time.monotonic() - started)


@dataclass
class _Run:
    """One migration run: the source, the target (once it exists) and what was done."""

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
            if target.snapshot().files().num_rows or _versions_beyond_one(target, entries):
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
        key = snapshot.features.record_key
        keyed = bool(key) and Capability.UPSERT in fmt.capabilities
        keyed = keyed and "record_key" not in properties
        schema = data_schema(snapshot)
        created_at = None
        dated = self.history and Capability.COMMIT_TIMESTAMPS in fmt.capabilities
        if dated and snapshot.timestamp is not None:
            # Dated just before the first source version, so that its time can follow.
            created_at = snapshot.timestamp - 1

        # In place, the source's table is at the target's root: creation must not refuse it.
        beside = (self.source.format,) if self.adoption is not None else ()

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

    # ------------------------------------------------------------------ the source

    def source_versions(self) -> list[int | str]:
        """The source versions to translate, oldest first."""
        if self.history:
            versions = [e.version for e in reversed(self.source.history())]
        else:
            # "" is the version of a table without commits (Hudi before its first instant).
            versions = [v for v in [self.source.version] if v != ""]
        if self.state is None:
            return versions
        last = self.state.source_version
        return [v for v in versions if _after(v, last)]

    def _snapshot(self, version: int | str) -> Snapshot | None:
        try:
            return self.source.snapshot(version=version)
        except VersionNotFoundError as exc:
            # History also lists entries that are no version (a Hudi rollback or clean
            # instant), and the oldest commits of a cleaned-up log are gone.
            if not self.history:
                raise
            log.info("source history entry %s is no readable version (%s)", version, exc)
            self._skipped(version, exc)
            return None
        except CorruptTableError as exc:
            if self.history and self._nothing_translated():
                self._skipped(version, exc)  # early versions whose log files were cleaned up
                return None
            raise

    def _nothing_translated(self) -> bool:
        return not self.versions and self.state is None

    def _skipped(self, version: int | str, exc: BaseException) -> None:
        self.notes.append(f"source version {version} was skipped: it cannot be read ({exc})")

    # ------------------------------------------------------------------ translating

    def translate(self, properties: dict[str, str]) -> None:
        """Translate every pending source version, one target commit each."""
        versions = self.source_versions()
        if not versions and self.target is None:
            # A source without any commit yet reads as an empty snapshot that has no version
            # to load again: the target becomes that empty table, with no migration state (a
            # later run translates the source's first commit into it).
            self._created(self.source.snapshot(), properties)
        for done, version in enumerate(versions, 1):
            snapshot = self._snapshot(version)
            if snapshot is not None:
                try:
                    self._translate(snapshot, properties)
                except LakecoreError as exc:
                    # Versions of a vacuumed source: their data files are gone. Nothing of
                    # the version landed (its transaction aborted); a transient storage fault
                    # is no missing file and surfaces, and the latest version must migrate.
                    replayable = self.history and done < len(versions)
                    if not (replayable and _missing_file(exc)):
                        raise
                    self._skipped(version, exc)
            if self.progress is not None:
                self.progress(done, len(versions), version)

    def _translate(self, snapshot: Snapshot, properties: dict[str, str]) -> None:
        first = self.target is None
        if self.adoption is not None:
            # mode="metadata" refuses what it cannot adopt before the target changes at all.
            pending = diff(snapshot.files(), self.held.column("fingerprint")).added
            self.adoption.check(pending, data_schema(snapshot), snapshot.partition_columns)
        if self.target is None:
            self._created(snapshot, properties)
        target = self.target
        assert target is not None
        units = diff(snapshot.files(), self.held.column("fingerprint"))
        same_rows = units.empty and not first and self.state is not None
        # A schema commit followed by this version's data commit is dated 1 ms before it;
        # alone, it is this version's commit and takes its time.
        self._timed(lambda: self._follow_schema(snapshot, before=not same_rows))
        if same_rows and self.state is not None:  # (``same_rows`` implies a state)
            self.versions.append((snapshot.version, self.state.target_version))
            return
        self._timed(lambda: self._commit(snapshot, units, target))

    def _timed(self, step: Callable[[], None]) -> None:
        """Run a commit ``step``; when the target table refuses the source's commit time
        (``UnsupportedFeatureError`` from a format whose tables keep given times only with a
        table feature, e.g. Delta without in-commit timestamps; a plain ``CommitError`` when
        the time is not later than every instant of the table, e.g. a Hudi rollback a failed
        run left, later than its last commit), run it again at the clock's time: a refused
        commit landed nothing (its transaction aborted, its unit map removed)."""
        self.gave_time = False
        try:
            step()
        except (UnsupportedFeatureError, CommitError) as exc:
            # Only the refusals themselves: a conflict, a storage fault or an unknown outcome
            # (CommitError subclasses) must surface as they are.
            if not self.gave_time or type(exc) not in (UnsupportedFeatureError, CommitError):
                raise
            self.times_refused = True
            self.timestamps_kept = False
            step()
            self.notes.append(
                f"the target keeps no given commit times ({exc}): later commits "
                "carry the time they were made"
            )

    def _follow_schema(self, snapshot: Snapshot, before: bool = True) -> None:
        assert self.target is not None
        source_schema = data_schema(snapshot)
        current = _unchanged_as_source(
            data_schema(self.target.snapshot()), self.mirrored, source_schema
        )
        change = schema_change(current, source_schema, snapshot.version)
        if not change.added:
            self.mirrored = source_schema
            return
        require(self.to, self.target.capabilities, Capability.SCHEMA_EVOLUTION, "added columns")
        metadata = self.state.app_metadata() if self.state is not None else {}
        timestamp = self._timestamp(snapshot, before=before)
        with self.target.transaction(app_metadata=metadata, timestamp_ms=timestamp) as tx:
            self._check_unchanged(tx.snapshot, snapshot.version)
            builder = self.target._format_writer(tx.snapshot, timestamp).schema_update()
            try:
                for f in change.added:
                    builder.add_column(f.name, f.type, True)
            except SchemaError as exc:
                raise MigrationError(
                    f"source version {snapshot.version} adds a column the {self.to} target "
                    f"cannot hold: {exc}"
                ) from exc
            from lakecore.model.actions import CommitInfo

            tx.stage(builder.actions(), CommitInfo("CHANGE SCHEMA"))
        assert tx.version is not None
        if self.state is not None:
            self.state = st.MigrationState(
                self.state.source,
                self.state.source_format,
                self.state.source_version,
                tx.version,
                self.state.unit_map,
            )
        self.expected = tx.version
        self.mirrored = source_schema
        self.count("commits", 1)

    def _timestamp(self, snapshot: Snapshot, before: bool = False) -> int | None:
        """The source's commit time for the target commit, when the target keeps it and it
        is later than the target's latest (``before``: 1 ms earlier, for the schema commit
        that precedes the data commit of the same source version)."""
        assert self.target is not None
        if not self.history or snapshot.timestamp is None:
            return None
        if self.times_refused or Capability.COMMIT_TIMESTAMPS not in self.target.capabilities:
            self.timestamps_kept = False
            return None
        wanted = snapshot.timestamp - (1 if before else 0)
        # The newest history entry, not only the latest snapshot: a Hudi rollback or clean
        # (an aborted earlier run) is dated too, and a dated commit must come after it.
        stamps = [self.target.snapshot().timestamp]
        stamps += [e.timestamp for e in self.target.history(limit=1)]
        latest = max((t for t in stamps if t is not None), default=None)
        if latest is not None and wanted <= latest:
            if self.timestamps_kept:
                self.notes.append(
                    f"source version {snapshot.version}'s commit time is not later than the "
                    "target's latest commit (source times going backwards, or a later target "
                    "commit): it took the clock's time, so time travel by timestamp on the "
                    "target may differ from the source's around it"
                )
            self.timestamps_kept = False
            return None
        self.gave_time = True
        return wanted

    def _commit(self, snapshot: Snapshot, units: UnitDiff, target: Table) -> None:
        held = self.held
        gone = pc.is_in(held.column("fingerprint"), value_set=units.gone)
        gone_paths = pc.drop_null(held.filter(gone).column("target_path"))
        kept = held.filter(pc.invert(gone))
        target_files = target.snapshot().files()
        removed = target_files.filter(pc.is_in(target_files.column(fi.PATH), value_set=gone_paths))
        if removed.num_rows != len(pc.unique(gone_paths)):
            raise MigrationError(
                f"the target no longer has some files its migration state names ({target.uri}); "
                "it was changed outside lakecore.migrate: migrate into a new target"
            )
        adopted, adopted_keys = snapshot.files().slice(0, 0), pa.array([], pa.binary())
        if self.adoption is not None:
            units, adopted, adopted_keys = self.adoption.split(
                units, data_schema(snapshot), snapshot.partition_columns
            )
        context = snapshot.source.scan_context()
        columns = data_schema(snapshot).names
        written_keys: list[bytes] = []
        empty_keys: list[bytes] = []
        rows = 0

        def unit_rows(into: pa.Schema) -> Iterator[pa.Table]:
            nonlocal rows
            for i in range(units.added.num_rows):
                key = units.added_keys[i].as_py()
                batches = list(read_files(context, units.added.slice(i, 1), columns))
                table = pa.Table.from_batches(batches, schema=_read_schema(snapshot, columns))
                if table.num_rows == 0:
                    empty_keys.append(key)
                    continue
                written_keys.append(key)
                rows += table.num_rows
                yield conform(table, into)

        source_version = snapshot.version
        new_state_path = st.new_unit_map_path()
        timestamp = self._timestamp(snapshot)
        meta = st.MigrationState(
            source=self.source.storage.root,
            source_format=self.source.format,
            source_version=str(source_version),
            target_version="",
            unit_map=new_state_path,
        ).app_metadata()
        committed = False
        try:
            with target.transaction(app_metadata=meta, timestamp_ms=timestamp) as tx:
                self._check_unchanged(tx.snapshot, source_version)
                into = data_schema(tx.snapshot)
                written = tx.replace_files(unit_rows(into), removed, exclusive=True)
                if adopted.num_rows:
                    tx.adopt_files(adopt.add_rows(adopted))
                new_units = _unit_rows(written_keys, written, empty_keys)
                unit_map = pa.concat_tables(
                    [kept, new_units, adopt.unit_rows(adopted_keys, adopted)]
                )
                st.write_unit_map(target.storage, new_state_path, unit_map)
            committed = True
        except CommitStateUnknownError:
            committed = True  # it may have landed: its unit map must stay
            raise
        finally:
            if not committed:
                _delete_quietly(target, new_state_path)
        assert tx.version is not None
        self.expected = tx.version
        self._check_held(target, unit_map)
        self.held = unit_map
        self.state = st.MigrationState(
            self.source.storage.root,
            self.source.format,
            str(source_version),
            tx.version,
            new_state_path,
        )
        try:
            st.remove_stale_maps(target.storage, {new_state_path})
        except OSError as exc:
            log.warning("could not remove old migration state files: %s", exc)
        self.versions.append((source_version, tx.version))
        self.count("commits", 1)
        self.count("files_rewritten", sum(t.num_rows for t in written))
        self.count("files_removed", removed.num_rows)
        self.count("units_rewritten", units.added.num_rows)
        self.count("files_adopted", adopted.num_rows)
        self.count("rows", rows)
        self.count("deletes_carried", _cardinality(units.added))

    def _check_held(self, target: Table, unit_map: pa.Table) -> None:
        """Every file the unit map names must be live in the target (else a later removal
        could miss it and rows would be duplicated)."""
        paths = pc.unique(pc.drop_null(unit_map.column("target_path")))
        live = target.snapshot().files().column(fi.PATH)
        missing = pc.sum(pc.invert(pc.is_in(paths, value_set=live))).as_py() or 0
        if missing:
            raise MigrationError(
                f"{missing} file(s) the migration wrote are not in the target's file index "
                "as written: the target format reports other paths than its writer returned"
            )

    def report(self, mode: str, seconds: float) -> MigrationReport:
        c = self.counts
        return MigrationReport(
            source=self.source.uri,
            target=self.target_uri,
            source_format=self.source.format,
            target_format=self.to,
            mode=mode,
            versions=tuple(self.versions),
            files_adopted=c.get("files_adopted", 0),
            files_rewritten=c.get("files_rewritten", 0),
            files_removed=c.get("files_removed", 0),
            units_rewritten=c.get("units_rewritten", 0),
            rows=c.get("rows", 0),
            deletes_carried=c.get("deletes_carried", 0),
            commits=c.get("commits", 0),
            seconds=seconds,
            timestamps_kept=self.history and self.timestamps_kept,
            notes=tuple(self.notes),
        )


def _read_schema(snapshot: Snapshot, columns: list[str]) -> pa.Schema:
    return snapshot.output_schema(columns)


def _unit_rows(keys: list[bytes], written: list[pa.Table], empty: list[bytes]) -> pa.Table:
    """Unit-map rows: one per file written for a unit, one null row per unit without rows."""
    fingerprints: list[bytes] = []
    paths: list[str | None] = []
    for key, files in zip(keys, written, strict=True):
        for path in files.column(fi.PATH).to_pylist():
            fingerprints.append(key)
            paths.append(path)
    for key in empty:
        fingerprints.append(key)
        paths.append(None)
    return pa.table(
        {
            "fingerprint": pa.array(fingerprints, pa.binary()),
            "target_path": pa.array(paths, pa.string()),
        },
        schema=st.UNIT_MAP_SCHEMA,
    )


def _versions_beyond_one(target: Table, entries: list[HistoryEntry]) -> bool:
    """Whether history ``entries`` name more than one version of ``target`` (history may list
    instants that are no version: Hudi rollbacks of commits a failed run left pending)."""
    found = 0
    for entry in entries:
        try:
            target.snapshot(version=entry.version)
        except VersionNotFoundError:
            continue
        found += 1
        if found > 1:
            return True
    return False


def _unchanged_as_source(
    target: pa.Schema, mirrored: pa.Schema | None, source: pa.Schema
) -> pa.Schema:
    """``target`` with each column the source did not retype since the target mirrored it
    given the source's type: the target format's form of it (timestamp[ns] kept as us, int8
    as int32) is no change of the source's."""
    if mirrored is None:
        return target
    fields = []
    for f in target:
        same = f.name in mirrored.names and f.name in source.names
        if same and mirrored.field(f.name).type == source.field(f.name).type:
            fields.append(source.field(f.name))
        else:
            fields.append(f)
    return pa.schema(fields)


def _refuse_nested(source_root: str, target_root: str) -> None:
    """Raise ``MigrationError`` when one table would sit inside the other: a vacuum or clean of
    the outer one would delete the inner one's files as unreferenced."""
    a, b = source_root.rstrip("/") + "/", target_root.rstrip("/") + "/"
    if a != b and (a.startswith(b) or b.startswith(a)):
        inner, outer = ("source", "target") if a.startswith(b) else ("target", "source")
        raise MigrationError(
            f"the {inner} ({(a if inner == 'source' else b).rstrip('/')}) is inside the "
            f"{outer} ({(b if outer == 'target' else a).rstrip('/')}): maintenance of the outer "
            "table would delete the inner one's files; migrate into a location beside it"
        )


def _missing_file(exc: BaseException) -> bool:
    """Whether ``exc`` comes from a data file that no longer exists (a vacuumed version)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, FileNotFoundError):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _cardinality(files: pa.Table) -> int:
    if fi.DELETION not in files.column_names or files.num_rows == 0:
        return 0
    cardinality = pc.struct_field(files.column(fi.DELETION), fi.CARDINALITY)
    return int(pc.sum(cardinality).as_py() or 0)


def _after(version: int | str, last: str) -> bool:
    """Whether source ``version`` comes after the recorded ``last`` (ints numerically, Hudi
    instants as the fixed-width strings they are)."""
    if isinstance(version, int):
        return version > int(last)
    return str(version) > last


def _delete_quietly(target: Table, path: str) -> None:
    try:
        target.storage.delete(path)
    except OSError as exc:
        log.warning("could not remove the unused migration state %s: %s", path, exc)
