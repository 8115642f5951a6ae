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
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import (
    CommitError,
    CommitStateUnknownError,
    CorruptTableError,
    InvalidArgumentError,
    LakecoreError,
    MigrationError,
    SchemaError,
    StorageError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from lakecore.faults import storage_faults
from lakecore.format.capabilities import Capability, require
from lakecore.migrate import adopt, guards
from lakecore.migrate import state as st
from lakecore.migrate.report import MigrationReport
from lakecore.migrate.schema import (
    conform,
    data_schema,
    refused_widening,
    schema_change,
    unchanged_as_source,
)
from lakecore.migrate.target import Progress, TargetSide
from lakecore.migrate.units import UnitDiff, deletes_of, diff
from lakecore.model import files as fi
from lakecore.model.actions import CommitInfo, RemoveFiles
from lakecore.planning.read import read_files
from lakecore.snapshot import Snapshot
from lakecore.storage import Storage
from lakecore.table import Table
from lakecore.transaction import Transaction

log = logging.getLogger(__name__)

MODES = ("auto", "metadata", "rewrite")


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
    guards.refuse_nested(source.storage.root, target_root)
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
class _Run(TargetSide):
    """One migration run: translates the source's versions into target commits."""

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
        pending = [v for v in versions if guards.after(v, last)]
        gap = guards.missing_between(last, pending[0]) if self.history and pending else None
        if gap is not None:
            # The source dropped versions since the last run (a Lance cleanup, an expired
            # Delta log): the target gets no version for them, which the report must say.
            self.notes.append(
                f"source versions {gap} are no longer in the source's history (cleaned up "
                "since the last run): the target has no version holding them"
            )
        return pending

    def _snapshot(self, version: int | str) -> Snapshot | None:
        try:
            snapshot = self.source.snapshot(version=version)
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
        if str(snapshot.version) != str(version):
            # A Hudi clean, rollback or indexing instant reads as the write before it: it has
            # no rows of its own to translate.
            self.notes.append(
                f"source version {version} was skipped: it writes no data (it reads as "
                f"version {snapshot.version})"
            )
            return None
        return snapshot

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
                    if not (replayable and guards.missing_file(exc)):
                        raise
                    self._skipped(version, exc)
            if self.progress is not None:
                self.progress(done, len(versions), version)

    def _translate(self, snapshot: Snapshot, properties: dict[str, str]) -> None:
        first = self.target is None
        if self.adoption is not None:
            # mode="metadata" refuses what it cannot adopt before the target changes at all.
            pending = diff(snapshot.files(), self.held.column("fingerprint")).added
            held = None if self.target is None else self.target.snapshot()
            self.adoption.check(
                pending,
                data_schema(snapshot),
                snapshot.partition_columns,
                held,
                adopt.snapshot_footers(snapshot),
            )
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
        current = unchanged_as_source(
            data_schema(self.target.snapshot()), self.mirrored, source_schema
        )
        change = schema_change(current, source_schema, snapshot.version)
        if change.empty:
            self.mirrored = source_schema
            return
        what = "added columns" if change.added else "widened columns"
        if self.adoption is not None and not self.adoption.rewrites:
            raise MigrationError(
                f"source version {snapshot.version} changes the schema ({what}): a "
                f"{self.to} table that adopts another format's files in place takes no schema "
                "change from lakecore; migrate to another location (mode='rewrite')"
            )
        require(self.to, self.target.capabilities, Capability.SCHEMA_EVOLUTION, what)
        state = self.state
        if state is not None and not before:
            # This commit alone holds the source version (its rows did not change): it must
            # say so, or a later run would translate the version again from an older schema.
            state = replace(state, source_version=str(snapshot.version))
        metadata = state.app_metadata() if state is not None else {}
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
            for f in change.widened:
                try:
                    builder.widen_type(f.name, f.type)
                except (SchemaError, UnsupportedFeatureError) as exc:
                    old = current.field(f.name)
                    raise refused_widening(snapshot.version, old, f) from exc
            tx.stage(builder.actions(), CommitInfo("CHANGE SCHEMA"))
        assert tx.version is not None
        if state is not None:
            self.state = replace(state, target_version=tx.version)
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
        if len(gone_paths) or self.adoption is None or self.adoption.rewrites:
            target_files = target.snapshot().files()
        else:
            # Only adopting and nothing to remove: the target's file index (statistics of
            # every file it lists) is not needed.
            target_files = pa.table({fi.PATH: pa.array([], pa.string())})
        removed = target_files.filter(pc.is_in(target_files.column(fi.PATH), value_set=gone_paths))
        if removed.num_rows != len(pc.unique(gone_paths)):
            raise MigrationError(
                f"the target no longer has some files its migration state names ({target.uri}); "
                "it was changed outside lakecore.migrate: migrate into a new target"
            )
        adopted, adopted_keys = snapshot.files().slice(0, 0), pa.array([], pa.binary())
        if self.adoption is not None:
            units, adopted, adopted_keys = self.adoption.split(
                units,
                data_schema(snapshot),
                snapshot.partition_columns,
                target.snapshot(),
                adopt.snapshot_footers(snapshot),
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
                if self.adoption is not None and not self.adoption.rewrites:
                    # A target that takes no rewritten files (``check`` refused every unit
                    # it could not adopt): the commit only adopts and removes.
                    written = []
                    _adopt_and_remove(tx, adopted, removed)
                else:
                    written = tx.replace_files(unit_rows(into), removed, exclusive=True)
                    if adopted.num_rows:
                        tx.adopt_files(adopt.add_rows(adopted))
                new_units = st.unit_rows(written_keys, written, empty_keys)
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
        self.count("deletes_carried", deletes_of(units.added))

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


def _adopt_and_remove(tx: Transaction, adopted: pa.Table, removed: pa.Table) -> None:
    """Stage adopting the source index rows ``adopted`` and removing the target's index rows
    ``removed`` whole, as one commit that conflicts with any concurrent one (the unit map
    must describe the whole table)."""
    tx.adopt_files(adopt.add_rows(adopted))
    if removed.num_rows:
        info = CommitInfo("REMOVE FILES", {"removed": removed.num_rows}, read_whole_table=True)
        tx.stage([RemoveFiles(removed)], info)
    else:
        tx.stage([], CommitInfo("REMOVE FILES", {"removed": 0}, read_whole_table=True))


def _read_schema(snapshot: Snapshot, columns: list[str]) -> pa.Schema:
    return snapshot.output_schema(columns)


def _delete_quietly(target: Table, path: str) -> None:
    try:
        target.storage.delete(path)
    except OSError as exc:
        log.warning("could not remove the unused migration state %s: %s", path, exc)
