"""The Table facade: one interface over every format."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.arguments import (
    TimestampLike,
    check_flag,
    check_merge_aliases,
    check_number,
    check_properties,
    check_version,
    to_epoch_ms,
)
from lakecore.boundary import public_api
from lakecore.errors import (
    ConstraintViolationError,
    InvalidArgumentError,
    LakecoreError,
    StorageError,
    UnsupportedFeatureError,
)
from lakecore.faults import storage_faults
from lakecore.format import (
    Capability,
    FormatWriter,
    MaintainableFormat,
    MergeOnReadFormat,
    TableFormat,
    TaggableFormat,
    WritableFormat,
    require,
)
from lakecore.merge_builder import MergeBuilder
from lakecore.model.actions import CommitInfo, SetProperties
from lakecore.model.history import HistoryEntry
from lakecore.model.metrics import WriteResult, index_change
from lakecore.schema_update import GuardedSchemaUpdate
from lakecore.snapshot import Snapshot
from lakecore.storage import Storage
from lakecore.transaction import Transaction, schema_mode_capability

if TYPE_CHECKING:
    from collections.abc import Iterator

    import pandas as pd

    from lakecore.expr.assign import SetValue
    from lakecore.expr.binding import Where
    from lakecore.planning.scan import Scan


@public_api
class Table:
    """A table of any format, opened by ``lakecore.open``.

    Each call reads the table's current state, so it sees commits made by other writers. The
    latest snapshot read is kept only as a base: the next read replays just the newer commits.
    """

    def __init__(
        self,
        uri: str,
        storage: Storage,
        fmt: TableFormat,
        options: Mapping[str, str] | None = None,
    ) -> None:
        self._uri = uri
        self._storage = storage
        self._format = fmt
        self._options = dict(options or {})
        self._latest: Snapshot | None = None

    def __repr__(self) -> str:
        return f"Table(format={self.format!r}, uri={self.uri!r})"

    @property
    def format(self) -> str:
        """The format's name (``"delta"``, ``"hudi"``, ``"lance"``)."""
        return self._format.name

    @property
    def uri(self) -> str:
        """The table's root location."""
        return self._storage.root

    @property
    def storage(self) -> Storage:
        """The Storage the table is read and written through."""
        return self._storage

    @property
    def capabilities(self) -> frozenset[Capability]:
        """What lakecore can do with this table's format (``lakecore.format.Capability``)."""
        return self._format.capabilities

    def _require(self, capability: Capability) -> None:
        """Raise ``UnsupportedFeatureError`` naming ``capability`` unless the format declares
        it; every verb calls this before it reads or writes anything."""
        require(self.format, self._format.capabilities, capability)

    @property
    def version(self) -> int | str:
        """The newest version of the table (read now, not cached): the version
        ``snapshot()`` returns, ``""`` for a Hudi table before its first commit."""
        with storage_faults(f"reading the version of {self.uri}", StorageError):
            return self._format.latest_version(self._storage)

    @property
    def schema(self) -> pa.Schema:
        """The latest snapshot's logical schema (read now, as ``snapshot().schema``)."""
        return self.snapshot().schema

    def snapshot(
        self, version: int | str | None = None, timestamp: TimestampLike | None = None
    ) -> Snapshot:
        """Return the table at ``version``, or as it was at ``timestamp``; latest by default.

        Raises ``InvalidArgumentError`` when both are given, ``ArgumentTypeError`` for a
        ``version`` that is neither an integer nor text (``True``, ``1.0``: never taken as
        version 1), ``VersionNotFoundError`` when the table has no such version/time, and
        ``StorageError`` when the storage fails.
        """
        if version is not None and timestamp is not None:
            raise InvalidArgumentError("pass version or timestamp, not both")
        if version is not None:
            version = check_version("version", version)
        ts = None if timestamp is None else to_epoch_ms(timestamp)
        if ts is not None:
            self._require(Capability.TIME_TRAVEL_BY_TIMESTAMP)
        previous = self._latest if version is None and ts is None else None
        with storage_faults(f"reading {self.uri}", StorageError):
            snap = self._format.load_snapshot(
                self._storage,
                version=version,
                timestamp=ts,
                previous=previous,
                options=self._options,
            )
        if version is None and ts is None:
            self._latest = snap
        return snap

    def history(self, limit: int | None = None) -> list[HistoryEntry]:
        """Return the table's changes, newest first (at most ``limit``).

        Raises ``InvalidArgumentError`` when ``limit`` is not None or an integer >= 0.
        """
        if limit is not None:
            check_number("limit", limit, minimum=0, integral=True)
        with storage_faults(f"reading the history of {self.uri}", StorageError):
            return self._format.history(self._storage, limit=limit)

    def to_arrow(
        self, columns: Sequence[str] | None = None, *, version: int | str | None = None
    ) -> pa.Table:
        """Return the rows of the table at ``version`` (latest by default) as an Arrow table.

        The arguments are those of ``Snapshot.to_arrow``, ``to_batches`` and ``to_pandas``:
        ``columns`` first, ``version`` by keyword only (``to_arrow(3)`` is refused with
        ``ArgumentTypeError`` rather than read as a column list or a version by guess).
        """
        snapshot = self.snapshot(version)
        with storage_faults(f"reading the rows of {self.uri}", StorageError):
            return snapshot.to_arrow(columns)

    def to_batches(
        self,
        columns: Sequence[str] | None = None,
        *,
        version: int | str | None = None,
        batch_size: int = 131_072,
    ) -> Iterator[pa.RecordBatch]:
        """Stream the rows at ``version`` (latest by default), at most ``batch_size`` per batch.

        Memory stays bounded: files are read one after another, large files a row group at
        a time (see ``Scan.to_batches``).
        """
        return self.scan(columns=columns, version=version).to_batches(batch_size)

    def to_pandas(
        self, columns: Sequence[str] | None = None, *, version: int | str | None = None
    ) -> pd.DataFrame:
        """Return the rows at ``version`` (latest by default) as a pandas DataFrame.

        Raises ``UnsupportedFeatureError`` when pandas is not installed.
        """
        return self.scan(columns=columns, version=version).to_pandas()

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """Export the latest snapshot's rows as an Arrow C stream (Arrow PyCapsule interface).

        ``pyarrow.table(table)``, ``polars.DataFrame(table)`` and
        ``duckdb.sql("select count(*) from table")`` read it, batch by batch.
        """
        return self.scan().__arrow_c_stream__(requested_schema)

    def head(
        self,
        n: int = 5,
        columns: Sequence[str] | None = None,
        *,
        version: int | str | None = None,
    ) -> pa.Table:
        """Return the first ``n`` rows, reading only the files needed for them."""
        return self.scan(columns=columns, version=version, limit=n).to_arrow()

    def count(self, where: Where | None = None, *, version: int | str | None = None) -> int:
        """Return how many rows match ``where`` (all by default) at ``version`` (latest).

        From the file index (record counts minus deleted rows) when no row filter remains;
        otherwise only the predicate's columns are read (see ``Scan.count``).

        Example:
            >>> import tempfile, lakecore, pyarrow as pa
            >>> table = lakecore.create(tempfile.mkdtemp(), pa.schema([("x", pa.int64())]))
            >>> _ = table.append(pa.table({"x": [1, 2, 3]}))
            >>> table.count(), table.count("x > 1")
            (3, 2)
        """
        return self.scan(where, version=version).count()

    def scan(
        self,
        where: Where | None = None,
        columns: Sequence[str] | None = None,
        version: int | str | None = None,
        timestamp: TimestampLike | None = None,
        *,
        limit: int | None = None,
    ) -> Scan:
        """Plan a read of the rows matching ``where`` (at ``version``/``timestamp``, or latest).

        ``where`` is Spark SQL text (``"region = 'eu' AND ts >= TIMESTAMP '2024-01-01'"``;
        ``"eu"`` is a string too, `` `name` `` a column), a ``lakecore.expr.tree`` tree or a
        ``pyarrow.compute.Expression``: the same predicate selects the same rows in
        ``delete``, ``update``, ``merge`` conditions and CHECK constraints. Files are
        pruned by partition values, then by min/max/null-count stats; the rows read are then
        filtered, so results hold exactly the matching rows. See ``docs/planning.md``.

        Raises ``PredicateError`` on unsupported syntax (before anything is read) and
        ``SchemaError`` on unknown columns (before the file index or any data is read).
        ``limit`` stops the scan after that many rows (``Scan.with_limit``).

        Example:
            >>> import tempfile, lakecore, pyarrow as pa
            >>> root = tempfile.mkdtemp()
            >>> schema = pa.schema([("region", pa.string()), ("x", pa.int64())])
            >>> table = lakecore.create(root, schema, partition_by=["region"])
            >>> _ = table.append(pa.table({"region": ["eu", "us"], "x": [1, 2]}))
            >>> _ = table.append(pa.table({"region": ["eu"], "x": [10]}))
            >>> scan = table.scan("region = 'eu' AND x > 5", columns=["x"])
            >>> scan.to_arrow().to_pylist()
            [{'x': 10}]
            >>> e = scan.explain()
            >>> e.files_total, e.files_after_partition_pruning, e.files_after_stats_pruning
            (3, 2, 1)
        """
        from lakecore.expr.binding import parse_predicate
        from lakecore.planning.scan import Scan

        predicate = None if where is None else parse_predicate(where)
        snapshot = self.snapshot(version, timestamp)
        return Scan(snapshot, predicate, columns, table_format=self._format, limit=limit)

    def changes(
        self, start: int | str, end: int | str | None = None, *, include_meta: bool = False
    ) -> pa.Table:
        """Return the row changes of versions ``start`` through ``end`` (default: latest).

        Every format: the change data feed, with ``_change_type`` (insert, delete,
        update_preimage, update_postimage), ``_commit_version`` and ``_commit_timestamp``
        columns. System columns the format marks in the result's schema metadata
        (``lakecore.system_columns``: Hudi's ``_hoodie_*``) are dropped unless
        ``include_meta``. ``UnsupportedFeatureError`` (before any IO) for formats without
        ``change_feed``.
        """
        self._require(Capability.CHANGE_FEED)
        start = check_version("start", start)
        if end is not None:
            end = check_version("end", end)
        with storage_faults(f"reading the changes of {self.uri}", StorageError):
            changes = self._format.changes(self._storage, start, end)
        marked = (changes.schema.metadata or {}).get(b"lakecore.system_columns", b"")
        system = [c for c in marked.decode().split(",") if c in changes.column_names]
        if include_meta or not system:
            return changes
        return changes.drop_columns(system)

    # ------------------------------------------------------------------ writing

    def _writable_format(self) -> WritableFormat:
        # A format declaring ``write`` implements WritableFormat (the contract suite checks).
        self._require(Capability.WRITE)
        return cast(WritableFormat, self._format)

    def _format_writer(self, snapshot: Snapshot, timestamp_ms: int | None = None) -> FormatWriter:
        return self._writable_format().writer(self._storage, snapshot, timestamp_ms)

    def transaction(
        self, *, app_metadata: Mapping[str, str] | None = None, timestamp_ms: int | None = None
    ) -> Transaction:
        """Start a transaction on the latest snapshot; use it as a context manager.

        ``app_metadata`` is stored with the commit (``HistoryEntry.app_metadata``; capability
        ``commit_metadata``); ``timestamp_ms`` becomes the commit's timestamp for time travel
        (capability ``commit_timestamps``; ``CommitError`` if not later than the latest
        version's). Both raise ``UnsupportedFeatureError`` before any IO when the format
        lacks the capability.

        Example:
            >>> with table.transaction() as tx:  # doctest: +SKIP
            ...     tx.delete("day < '2024-01-01'")
            ...     tx.append(new_rows)
        """
        self._writable_format()
        if app_metadata:
            self._require(Capability.COMMIT_METADATA)
        if timestamp_ms is not None:
            self._require(Capability.COMMIT_TIMESTAMPS)
            check_number("timestamp_ms", timestamp_ms, minimum=0, integral=True)
        with storage_faults(f"starting a transaction on {self.uri}"):
            snapshot = self._format.load_snapshot(
                self._storage, previous=self._latest, options=self._options
            )
        self._latest = snapshot
        return Transaction(self, snapshot, app_metadata, timestamp_ms)

    def _run(self, stage: Callable[[Transaction], None]) -> WriteResult:
        """Stage and commit one operation; return its version and metrics.

        An operation that staged nothing commits nothing: its result has the current
        version and ``committed=False``. Storage faults are typed: before the commit
        ``CommitStorageError`` (nothing landed), during it ``CommitStateUnknownError`` unless
        the format resolved the outcome.
        """
        with storage_faults(f"writing to {self.uri}"):
            with self.transaction() as tx:
                stage(tx)
            return tx.result if tx.result is not None else tx._nothing_committed()

    def append(self, data: Any, *, schema_mode: str | None = None) -> WriteResult:
        """Append rows (pyarrow Table/RecordBatch/RecordBatchReader, pandas).

        Returns the ``WriteResult`` (``.version`` committed, rows/files/bytes written), as
        every write does.

        ``schema_mode`` (deltalake's): None (default) -> the data must have the table's
        columns, no more and no fewer (a missing nullable column is refused too, naming it);
        ``"merge"`` -> the data's new columns are added to the schema (nullable) in the same
        commit and the columns it lacks are written as nulls (capability ``schema_merge``:
        ``UnsupportedFeatureError`` before any IO for formats without it).

        Raises ``SchemaError`` for data that does not fit the schema and
        ``ConstraintViolationError`` for rows that break NOT NULL, CHECK or append-only rules;
        nothing is committed then. ``InvalidArgumentError`` for another ``schema_mode``.
        """
        self._require_schema_mode(schema_mode, "append", None)
        return self._run(lambda tx: tx.append(data, schema_mode=schema_mode))

    def overwrite(
        self, data: Any, where: str | None = None, *, schema_mode: str | None = None
    ) -> WriteResult:
        """Replace the rows matching ``where`` (all rows if None) by ``data``.

        With ``where``, every row of ``data`` must match it (else ``ConstraintViolationError``).
        ``schema_mode`` as for ``append``, plus ``"overwrite"`` (no ``where``; capability
        ``schema_overwrite``): the schema becomes the data's, partition columns staying.
        """
        self._require_schema_mode(schema_mode, "overwrite", where)
        self._require(Capability.OVERWRITE)
        return self._run(lambda tx: tx.overwrite(data, where, schema_mode=schema_mode))

    def _require_schema_mode(self, mode: str | None, operation: str, where: str | None) -> None:
        # Checked before the transaction reads anything.
        capability = schema_mode_capability(mode, operation, where)
        if capability is not None:
            self._require(capability)

    def delete(self, where: str | None = None) -> WriteResult:
        """Delete the rows matching the SQL predicate ``where`` (all rows if None)."""
        self._require(Capability.DELETE)
        return self._run(lambda tx: tx.delete(where))

    def update(self, set: Mapping[str, SetValue], where: str | None = None) -> WriteResult:
        """Set columns where the Spark SQL predicate ``where`` holds (every row if None).

        Each value of ``set`` is SQL text (``{"price": "price * 2"}``), a
        ``lakecore.expr.tree`` expression, or a Python value taken as a literal
        (``{"amount": 5, "note": None, "day": datetime.date(2024, 1, 1)}``) that must convert
        to the column's type without changing (``InvalidArgumentError`` otherwise). A ``str``
        is always SQL, also for a string column: ``{"region": "'eu'"}`` or
        ``{"region": lit("eu")}`` (``lakecore.expr.tree.lit``) sets the text ``eu``, while
        ``{"region": "eu"}`` copies the column ``eu``. See ``lakecore.expr.assign``. An empty
        ``set`` commits nothing (``committed=False``), as deltalake's; ``where`` is still checked.
        """
        self._require(Capability.UPDATE)
        return self._run(lambda tx: tx.update(set, where))

    def upsert(self, data: Any) -> WriteResult:
        """Insert ``data``, replacing the rows whose record key already exists.

        Formats whose tables have record keys only (capability ``upsert``, e.g. Hudi); others
        raise ``UnsupportedFeatureError`` before any IO (use ``merge`` with explicit key
        columns there).
        """
        self._require(Capability.UPSERT)
        return self._run(lambda tx: tx.stage(*self._format_writer(tx.snapshot).upsert(data)))

    def merge(
        self,
        source: Any,
        on: str | Sequence[str],
        *,
        source_alias: str = "source",
        target_alias: str = "target",
    ) -> MergeBuilder:
        """Start a MERGE of ``source`` (Arrow-like) into this table.

        ``on``: key column name(s) (a list, or a string that is one bare column name: no
        operator), or an SQL predicate over ``<source_alias>.x`` / ``<target_alias>.x``
        (``"source.id = target.id AND target.live"``): its ``source.a = target.b``
        conjuncts are the keys the planner prunes with, the rest is evaluated per pair.
        Raises ``PredicateError`` for ``on`` that does not parse and ``InvalidArgumentError``
        for aliases that are blank, hold a dot or name the same side twice (SQL compares
        names ignoring case: ``S`` and ``s`` are one alias), before any IO.

        Example:
            >>> (table.merge(updates, on="id")  # doctest: +SKIP
            ...     .when_matched_update_all()
            ...     .when_not_matched_insert_all()
            ...     .execute())
        """
        from lakecore.planning.merge_eval import parse_on

        self._require(Capability.MERGE)
        check_merge_aliases(source_alias, target_alias)
        parsed = parse_on(on, source_alias, target_alias)
        return MergeBuilder(self, source, parsed, source_alias, target_alias)

    def _maintainable(self, capability: Capability) -> MaintainableFormat:
        # A format declaring a maintenance capability implements MaintainableFormat.
        self._require(capability)
        return cast(MaintainableFormat, self._format)

    def checkpoint(self) -> int | str:
        """Write a checkpoint of the latest version; returns that version.

        Raises ``StorageError`` when the storage fails (readers ignore a partial checkpoint).
        """
        fmt = self._maintainable(Capability.CHECKPOINT)
        snapshot = self.snapshot()
        with storage_faults(f"checkpointing {self.uri}", StorageError):
            return fmt.checkpoint(self._storage, snapshot)

    def vacuum(
        self,
        retention_hours: float = 168,
        dry_run: bool = True,
        enforce_retention: bool = True,
    ) -> list[str]:
        """Delete files that no version within ``retention_hours`` needs; returns them.

        ``dry_run`` (the default) only lists them. A retention below 168 hours raises unless
        ``enforce_retention=False``: readers and time travel may still need those files.
        ``InvalidArgumentError`` for a negative or non-finite retention, ``ArgumentTypeError``
        for flags that are not ``bool`` (``dry_run=None`` must not delete), before any work;
        ``StorageError`` when the storage fails (some unneeded files may then remain);
        ``UnsupportedFeatureError`` (feature ``shared-table-root``), before deleting anything,
        when the root also holds another format's table (a migration in place).
        """
        check_number("retention_hours", retention_hours, minimum=0)
        dry_run = check_flag("dry_run", dry_run)
        enforce_retention = check_flag("enforce_retention", enforce_retention)
        fmt = self._maintainable(Capability.VACUUM)
        with storage_faults(f"vacuuming {self.uri}", StorageError):
            self._ensure_sole_format("vacuum")
        snapshot = self.snapshot()
        with storage_faults(f"vacuuming {self.uri}", StorageError):
            return fmt.vacuum(self._storage, snapshot, retention_hours, dry_run, enforce_retention)

    def _ensure_sole_format(self, operation: str) -> None:
        """Raise ``UnsupportedFeatureError("shared-table-root")`` when the root also holds a
        table of another format (a migration in place): ``operation`` deletes the files this
        table does not reference, and the other table's files are among them."""
        from lakecore.plugins import load_registry

        others = [
            f.name
            for f in load_registry().formats()
            if f.name != self.format and f.detect(self._storage)
        ]
        if others:
            raise UnsupportedFeatureError(
                "shared-table-root",
                f"{self.uri} also holds a {' and a '.join(others)} table over the same data "
                f"files (a migration in place): {operation} would delete the files this "
                f"{self.format} table does not reference, which that table still uses. "
                + self._shared_root_advice(others),
            )

    def _shared_root_advice(self, others: list[str]) -> str:
        """What reclaims space at a root shared with ``others`` (a migration in place): the
        migration's source owns the data files; the target's own cleanup may be refused."""
        from lakecore.migrate.state import find_state

        try:
            state = find_state(self.history())
        except LakecoreError:
            state = None
        if state is not None:  # this table is the migration's target
            return (
                f"Clean up through the {state.source_format} table (the migration's source) "
                "with its own maintenance, then migrate again"
            )
        return (
            f"This {self.format} table is the source the {' and '.join(others)} table "
            f"adopted in place, whose own cleanup is refused too: reclaim space with the "
            f"{self.format} format's own engine outside lakecore (its vacuum deletes only "
            "files this table removed and skips the other table's metadata directories; "
            f"the {' and '.join(others)} table's versions older than it can then no longer "
            "be read)"
        )

    def restore(self, version: int | str) -> WriteResult:
        """Commit a new version whose rows are those of ``version`` (the files it brings back
        are ``files_added``; no row is written)."""
        fmt = self._maintainable(Capability.RESTORE)
        version = check_version("version", version)
        return self._run(lambda tx: tx.stage(*fmt.restore(self._storage, tx.snapshot, version)))

    def optimize(self, target_file_size: int | None = None) -> WriteResult:
        """Compact small files (rows unchanged, ``dataChange=false``: ``rows_copied``).

        ``InvalidArgumentError`` for a target size that is not a positive integer.
        """
        if target_file_size is not None:
            check_number("target_file_size", target_file_size, minimum=1, integral=True)
        fmt = self._maintainable(Capability.OPTIMIZE)
        return self._run(
            lambda tx: tx.stage(*fmt.optimize(self._storage, tx.snapshot, target_file_size))
        )

    def _merge_on_read(self, capability: Capability) -> MergeOnReadFormat:
        # A format declaring compact or clean implements MergeOnReadFormat.
        self._require(capability)
        return cast(MergeOnReadFormat, self._format)

    def compact(self) -> WriteResult | None:
        """Merge log files into new base files (Hudi MoR compaction); returns the instant
        (``.version``) and what it rewrote (base and log files removed, base files added,
        their rows as ``rows_copied``: compaction changes no row).

        Returns None when no file slice has log files. Raises ``StorageError`` when the
        storage fails.
        """
        started = time.monotonic()
        fmt = self._merge_on_read(Capability.COMPACT)
        snapshot = self.snapshot()
        with storage_faults(f"compacting {self.uri}", StorageError):
            instant = fmt.compact(self._storage, snapshot)
            if instant is None:
                return None
            # Counted from the two file indexes: the files compaction stopped and started
            # reading (log files' sizes are not in the index: their heads are read).
            after = self.snapshot(instant)
            metrics = index_change(
                snapshot.files(), after.files(), lambda p: self._storage.head(p).size
            )
        return WriteResult.of(instant, "COMPACTION", metrics, time.monotonic() - started)

    def clean(self, retain_commits: int = 10) -> list[str]:
        """Delete files only the commits before the last ``retain_commits`` need (Hudi clean).

        Time travel to those older commits stops working. Returns the deleted paths.
        ``InvalidArgumentError`` (before any work) when ``retain_commits`` is not an integer of
        at least 1; ``StorageError`` when the storage fails.
        """
        check_number("retain_commits", retain_commits, minimum=1, integral=True)
        fmt = self._merge_on_read(Capability.CLEAN)
        snapshot = self.snapshot()
        with storage_faults(f"cleaning {self.uri}", StorageError):
            return fmt.clean(self._storage, snapshot, retain_commits)

    def _taggable(self) -> TaggableFormat:
        # A format declaring tags implements TaggableFormat.
        self._require(Capability.TAGS)
        return cast(TaggableFormat, self._format)

    def tags(self) -> dict[str, int | str]:
        """Every tag of the table and the version it names (Lance tags).

        ``snapshot(version=name)`` reads a tagged version; vacuum keeps tagged versions.
        Raises ``UnsupportedFeatureError`` for formats without tags, before any IO.
        """
        fmt = self._taggable()
        with storage_faults(f"reading the tags of {self.uri}", StorageError):
            return fmt.tags(self._storage)

    def create_tag(self, name: str, version: int | str | None = None) -> None:
        """Name ``version`` (the latest by default) ``name``.

        Raises ``InvalidArgumentError`` for a name the format refuses or a tag that exists,
        ``VersionNotFoundError`` for a version the table lacks, and ``UnsupportedFeatureError``
        for formats without tags (before any IO).
        """
        fmt = self._taggable()
        if version is not None:
            version = check_version("version", version)
        with storage_faults(f"tagging a version of {self.uri}", StorageError):
            at = self.version if version is None else version
            fmt.create_tag(self._storage, name, at)

    def delete_tag(self, name: str) -> None:
        """Remove tag ``name`` (the version itself stays); ``VersionNotFoundError`` if absent."""
        fmt = self._taggable()
        with storage_faults(f"deleting tag {name!r} of {self.uri}", StorageError):
            fmt.delete_tag(self._storage, name)

    def set_properties(self, properties: dict[str, str | None]) -> WriteResult:
        """Set table properties (a value of None unsets the key; ``True``/``False`` are
        written ``"true"``/``"false"``, as Delta and Spark spell them).

        Raises ``ArgumentTypeError`` for properties that are no mapping or names that are not
        text, ``InvalidArgumentError`` for a blank name, before any IO.
        """
        self._require(Capability.SET_PROPERTIES)
        changes = check_properties(properties, unset=True)
        return self._run(
            lambda tx: tx.stage(
                [SetProperties(changes)], CommitInfo("SET TBLPROPERTIES", {"properties": changes})
            )
        )

    def add_constraint(self, name: str, sql: str) -> WriteResult:
        """Add a CHECK constraint; every existing row must satisfy it.

        Raises ``ConstraintViolationError`` (naming how many rows fail) or ``PredicateError``
        /``SchemaError`` for bad SQL; nothing is committed then. Later writes are checked.
        The rows are checked in the transaction that commits the constraint, which records
        that it read the whole table: a concurrent append makes it ``CommitConflictError``
        (its rows were never checked).
        """
        from lakecore.expr.binding import bind
        from lakecore.expr.evaluate import evaluate_bound
        from lakecore.expr.sql import parse_sql

        self._require(Capability.CONSTRAINTS)

        def check_and_stage(tx: Transaction) -> None:
            snapshot = tx.snapshot
            # One tree (Spark SQL, lakecore.expr), bound and type-checked before any row.
            predicate = bind(parse_sql(sql), snapshot.schema)
            failed = 0
            for batch in snapshot.to_batches():
                truth = evaluate_bound(predicate, pa.Table.from_batches([batch]))
                if pa.types.is_null(truth.type):
                    continue  # unknown for every row: not a violation
                failed += int(pc.sum(pc.invert(pc.fill_null(truth, True))).as_py() or 0)
            if failed:
                raise ConstraintViolationError(
                    f"cannot add constraint {name} ({sql}): {failed} existing row(s) violate it"
                )
            # The format names the constraint in its metadata (Delta: a table property); its
            # CommitInfo must say it read the whole table (read_whole_table).
            tx.stage(*self._format_writer(snapshot).add_constraint(name, sql))

        return self._run(check_and_stage)

    def drop_constraint(self, name: str) -> WriteResult:
        """Remove a CHECK constraint; raises ``SchemaError`` if there is none of that name."""
        self._require(Capability.CONSTRAINTS)
        return self._run(
            lambda tx: tx.stage(*self._format_writer(tx.snapshot).drop_constraint(name))
        )

    def update_schema(self) -> SchemaUpdateContext:
        """Evolve the schema; the changes commit when the ``with`` block exits cleanly.

        Example:
            >>> with table.update_schema() as s:  # doctest: +SKIP
            ...     s.add_column("email", pa.string())
            ...     s.rename_column("name", "full_name")
        """
        self._require(Capability.SCHEMA_EVOLUTION)
        return SchemaUpdateContext(self)


@public_api
class SchemaUpdateContext:
    """Context manager around a format's SchemaUpdate builder; commits on clean exit."""

    def __init__(self, table: Table) -> None:
        self._table = table
        self._tx = table.transaction()
        self._builder = table._format_writer(self._tx.snapshot).schema_update()

    def __enter__(self) -> GuardedSchemaUpdate:
        return GuardedSchemaUpdate(self._builder)

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        if exc_type is not None:
            return
        actions = self._builder.actions()
        if actions:
            self._tx.stage(actions, CommitInfo("CHANGE SCHEMA"))
            self._tx.commit()
