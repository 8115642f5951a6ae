"""The protocols of writable formats: schema updates, writers, and the Committer hook."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import pyarrow as pa

from lakecore.format.committer import Committer
from lakecore.format.reading import TableFormat
from lakecore.model.actions import Action, CommitInfo
from lakecore.model.merge import MergeClauses
from lakecore.storage import Storage

if TYPE_CHECKING:
    from lakecore.expr.assign import SetValue
    from lakecore.snapshot import Snapshot


@runtime_checkable
class SchemaUpdate(Protocol):
    """A schema evolution builder: stages changes, never mutates the table."""

    def add_column(self, name: str, type: pa.DataType, nullable: bool = True) -> SchemaUpdate:
        """Add a top-level column; raises ``SchemaError`` if it exists."""
        ...

    def rename_column(self, old: str, new: str) -> SchemaUpdate:
        """Rename a column; raises ``SchemaError`` if ``old`` is missing or ``new`` exists."""
        ...

    def drop_column(self, name: str) -> SchemaUpdate:
        """Drop a column; raises ``SchemaError`` if it is missing."""
        ...

    def widen_type(self, name: str, new_type: pa.DataType) -> SchemaUpdate:
        """Widen a column's type; raises ``SchemaError`` if it is not a widening."""
        ...

    def actions(self) -> list[Action]:
        """The staged changes."""
        ...


@runtime_checkable
class DataFileWriter(Protocol):
    """Writes rows as data files of one planned write, in any process (``lakecore.spark.write``
    runs it in Spark executors); made by ``FormatWriter.file_writer`` on the driver.

    Must be picklable and must open its storage itself (from the table URI and storage
    options it holds). ``write`` may run many times, in parallel, in other processes.
    """

    @property
    def schema(self) -> pa.Schema:
        """The columns ``write`` takes: the table's, less those the format fills itself
        (Hudi's ``_hoodie_*`` meta columns)."""
        ...

    def write(self, rows: pa.Table, task: int) -> pa.Table:
        """Write ``rows`` (the table's columns, by name; any partitions) as new data files and
        return one row per file in the write layout of ``lakecore.model.files``.

        Must check the rows as the format's ``append`` does (types, NOT NULL, constraints; with
        an overwrite ``where``, that every row matches it) and raise ``SchemaError`` or
        ``ConstraintViolationError`` before writing any file of the call. File names must not
        collide across calls (``task`` is the caller's task number, e.g. Spark's partition id).
        Nothing becomes visible until ``FormatWriter.add_files``' actions commit.
        """
        ...


@runtime_checkable
class FormatWriter(Protocol):
    """Plans writes against one snapshot: writes data files, returns the actions to commit.

    Nothing becomes visible until the actions are committed. Each method returns the actions
    and the CommitInfo describing the operation.
    """

    def append(self, data: Any, schema_mode: str | None = None) -> tuple[list[Action], CommitInfo]:
        """Write ``data`` as new files; raises ``SchemaError``/``ConstraintViolationError``.

        ``schema_mode`` (deltalake's): None -> the data must have the table's columns, no
        more and no fewer (the columns the format fills itself aside: Hudi's meta columns,
        Delta's generated columns), else ``SchemaError`` naming them, before any file is
        written; ``"merge"`` (only when the format declares ``schema_merge``) -> the data's
        new columns are added, nullable, by actions of the same commit, and the table's
        columns the data lacks are written as nulls.
        """
        ...

    def overwrite(
        self, data: Any, where: str | None, schema_mode: str | None = None
    ) -> tuple[list[Action], CommitInfo]:
        """Replace the rows matching ``where`` (all rows if None) with ``data``.

        ``schema_mode`` as for ``append``, plus ``"overwrite"`` (only without ``where``, when
        the format declares ``schema_overwrite``): the table's schema becomes the data's, its
        partition columns staying (``SchemaError`` if the data lacks one).

        Must read only the planner's candidate rows of the file index: those
        ``lakecore.planning.candidates.candidate_files`` keeps for ``dml_predicate(where)``,
        and must record ``where`` as the ``CommitInfo.read_predicate`` its conflict check asks.
        """
        ...

    def delete(self, where: str | None) -> tuple[list[Action], CommitInfo]:
        """Delete the rows matching ``where`` (all rows if None).

        Must read only the planner's candidate rows of the file index: those
        ``lakecore.planning.candidates.candidate_files`` keeps for ``dml_predicate(where)``
        (a delete touching k files reads O(k) data files), and must record ``where`` as the
        ``CommitInfo.read_predicate`` its conflict check asks.
        """
        ...

    def update(
        self, set: Mapping[str, SetValue], where: str | None
    ) -> tuple[list[Action], CommitInfo]:
        """Set columns on the rows matching ``where``; each value is SQL text, a tree or a
        Python literal, and must be applied with ``lakecore.expr.assign.assigned_values``
        (literals checked exactly against the column before any row is read).

        Must read only the planner's candidate rows of the file index: those
        ``lakecore.planning.candidates.candidate_files`` keeps for ``dml_predicate(where)``,
        and must record ``where`` as the ``CommitInfo.read_predicate`` its conflict check asks.
        """
        ...

    def schema_update(self) -> SchemaUpdate:
        """A builder of schema changes against this snapshot."""
        ...

    def upsert(self, data: Any) -> tuple[list[Action], CommitInfo]:
        """Insert ``data``, replacing the rows whose record key exists (capability ``upsert``).

        Called only when the format declares ``upsert``; others must raise
        ``UnsupportedFeatureError("upsert")``.
        """
        ...

    def add_constraint(self, name: str, sql: str) -> tuple[list[Action], CommitInfo]:
        """The actions recording CHECK constraint ``name`` (capability ``constraints``).

        The format names the constraint in its own metadata (Delta: the table property
        ``delta.constraints.<name>``); ``Table.add_constraint`` has checked the existing rows
        of this snapshot in the same transaction, so the ``CommitInfo`` must set
        ``read_whole_table=True`` (a concurrent append's rows were never checked: conflict).
        Called only when the format declares ``constraints``; others must raise
        ``UnsupportedFeatureError("constraints")``.
        """
        ...

    def drop_constraint(self, name: str) -> tuple[list[Action], CommitInfo]:
        """The actions removing CHECK constraint ``name``; raises ``SchemaError`` if the table
        has none of that name (capability ``constraints``, as ``add_constraint``)."""
        ...

    def merge(
        self, source: Any, on: Sequence[str], clauses: MergeClauses
    ) -> tuple[list[Action], CommitInfo]:
        """Merge ``source`` into the table, matching rows on the target key columns ``on``
        (``clauses.source_keys``/``on_condition``: the rest of an SQL ``on=``).

        Must read only ``lakecore.planning.merge_eval.merge_files`` (the planner's candidates
        for the source's key range; every file with a not-matched-by-source clause), must
        evaluate the clauses with ``merge_file``/``merge_inserts`` (one semantics for every
        format), and must record ``merge_read_predicate`` as the
        ``CommitInfo.read_predicate``, or ``read_whole_table=True`` when
        ``merge_eval.whole_table``. Raises ``UnsupportedFeatureError`` before any IO for a
        merge the format cannot express.
        """
        ...

    def file_writer(self, mode: str, where: str | None) -> DataFileWriter:
        """Plan an ``append``, an ``overwrite`` (``where``: the rows it replaces) or a
        ``replace`` (``replace_files``; formats declaring ``replace_files``) whose data
        files are written elsewhere by the returned ``DataFileWriter``.

        Must gate everything the operation cannot do before returning (append-only tables,
        features, ``where`` that does not parse or bind), and hold what the files need (Hudi:
        the instant it claims now). ``add_files`` or ``discard`` must follow.
        """
        ...

    def add_files(
        self, file_writer: DataFileWriter, files: pa.Table, mode: str, where: str | None
    ) -> tuple[list[Action], CommitInfo]:
        """The actions publishing ``files`` (rows ``file_writer.write`` returned), plus for
        ``overwrite`` those removing every row, or the rows matching ``where``."""
        ...

    def replace_files(
        self, file_writer: DataFileWriter, files: pa.Table, removed: pa.Table
    ) -> tuple[list[Action], CommitInfo]:
        """The actions publishing ``files`` (rows ``file_writer.write`` returned; with no rows,
        possibly a table of the ``path`` column alone)
        and removing ``removed`` (rows of this snapshot's file index, compared by ``path``;
        may be empty) in one commit (capability ``replace_files``).

        ``file_writer`` must come from ``file_writer("replace", None)``. Must raise
        ``InvalidArgumentError`` before anything is staged when a ``removed`` path is not a
        live file of the snapshot. The rows of the removed files stop being part of the table
        whole (no other file is read or rewritten); the ``CommitInfo`` must make a concurrent
        commit touching a removed file a conflict (operation ``"REPLACE FILES"``).
        Called only when the format declares ``replace_files``; others must raise
        ``UnsupportedFeatureError("replace_files")``.
        """
        ...

    def discard(self, file_writer: DataFileWriter) -> None:
        """Remove what ``file_writer`` wrote (the write does not commit); must be idempotent
        and must not raise for files that are already gone."""
        ...


@runtime_checkable
class WritableFormat(TableFormat, Protocol):
    """A TableFormat that can create tables and commit changes."""

    def create(
        self,
        storage: Storage,
        schema: pa.Schema,
        partition_by: Sequence[str],
        properties: dict[str, str],
        timestamp_ms: int | None = None,
    ) -> None:
        """Create an empty table; raises ``TableExistsError`` if one is there (atomically).

        ``timestamp_ms`` (formats declaring ``commit_timestamps``): the timestamp of the
        creating version, when the format has one (Delta commit 0, Lance version 1; a Hudi
        table has no instant until its first write), so that later commits may carry
        timestamps from before now (a migration replaying its source's history); the format
        must then accept ``CommitInfo.timestamp_ms`` on every later commit (Delta: enables
        in-commit timestamps).
        """
        ...

    def writer(
        self, storage: Storage, snapshot: Snapshot, timestamp_ms: int | None = None
    ) -> FormatWriter:
        """Return a writer planning changes against ``snapshot``; gates writer features.

        ``timestamp_ms``: the commit's timestamp when the transaction sets one (capability
        ``commit_timestamps``; the same value reaches the committer as
        ``CommitInfo.timestamp_ms``); formats whose files carry the commit time (Hudi's
        instant) must use it, others may ignore it here.
        """
        ...

    def committer(self, storage: Storage, base: Snapshot) -> Committer:
        """Return the Committer that lands one transaction's actions on top of ``base``.

        One per transaction (it may remember what it attempted, to abort correctly); see
        ``lakecore.format.committer`` for the contract and ``lakecore.transaction`` for the
        retry loop that drives it.
        """
        ...
