"""DeltaWriter: plans appends, overwrites, deletes, updates and schema changes on a snapshot."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import (
    CommitError,
    ConstraintViolationError,
    InvalidArgumentError,
    SchemaError,
    UnsupportedFeatureError,
)
from lakecore.expr import tree as ex
from lakecore.expr.assign import SetValue, assigned_values
from lakecore.expr.evaluate import evaluate_predicate
from lakecore.format.writing import DataFileWriter
from lakecore.model.actions import (
    Action,
    AddFiles,
    CommitInfo,
    RemoveFiles,
    SetProperties,
    action_metrics,
)
from lakecore.model.data_input import cast_lossless, to_arrow_table
from lakecore.model.files import PATH
from lakecore.model.merge import MergeClauses, changes_target
from lakecore.model.metrics import record_count
from lakecore.planning.candidates import (
    candidate_files,
    dml_predicate,
    merge_read_predicate,
)
from lakecore.planning.merge_eval import (
    check_merge,
    keyed_source,
    merge_files,
    merge_on,
    merge_parameters,
    whole_table,
)
from lakecore.snapshot import Snapshot
from lakecore.storage import Storage
from lakecore_delta.commit_metadata import ensure_commit_timestamps
from lakecore_delta.protocol import COLUMN_MAPPING_MODE
from lakecore_delta.reader import FileReader
from lakecore_delta.schema import generation_expressions
from lakecore_delta.source import DeltaSnapshotSource
from lakecore_delta.state import DeltaState
from lakecore_delta.write.constraints import (
    check_rows,
    constraint_key,
    fill_generated,
    table_constraints,
)
from lakecore_delta.write.data_files import DEFAULT_TARGET_FILE_SIZE, FileLayout, write_data_files
from lakecore_delta.write.data_in import conform_to_schema, relaxed_type
from lakecore_delta.write.dml import (
    ChangeSet,
    DmlContext,
    delete_rows,
    live_rows,
    tagged,
    to_actions,
    update_rows,
)
from lakecore_delta.write.features import ensure_writable
from lakecore_delta.write.file_writer import DeltaFileWriter, new_write_directory
from lakecore_delta.write.merge import merge_rows
from lakecore_delta.write.properties import parse_size_bytes
from lakecore_delta.write.schema_mode import check_columns, evolved
from lakecore_delta.write.schema_update import DeltaSchemaUpdate
from lakecore_delta.write.stats_out import string_prefix_length

TARGET_FILE_SIZE = "delta.targetFileSize"


def state_of(snapshot: Snapshot) -> DeltaState:
    """The Delta state behind a lakecore Snapshot of a Delta table."""
    source = snapshot.source
    if not isinstance(source, DeltaSnapshotSource):
        raise TypeError("not a Delta snapshot")
    return source.state


def state_reader(storage: Storage, state: DeltaState) -> FileReader:
    """A reader of the data files of ``state``."""
    mode = state.configuration.get(COLUMN_MAPPING_MODE, "none")
    return FileReader(storage, state.schema, state.partition_columns, mode)


def _ensure_no_unsupported_columns(schema: pa.Schema) -> None:
    for f in schema:
        raw = (f.metadata or {}).get(b"delta.metadata", b"").decode()
        if "delta.identity." in raw:
            raise UnsupportedFeatureError(
                "identityColumns", f"column {f.name!r} is an identity column; not supported"
            )


def _predicate_param(where: str | None) -> dict[str, str]:
    return {"predicate": json.dumps([where] if where else [])}


def _check_assignment(columns: pa.Table, schema: pa.Schema, name: str, value: Any) -> None:
    """Type-check ``SET name = value`` over the (empty) ``columns`` the SQL may name, before
    any file is read; a literal's value is checked too (``lakecore.expr.assign``).

    Raises ``PredicateError`` for SQL that does not parse, ``SchemaError`` for an unknown
    column or a result that does not go into the column (``cast_assigned``) and
    ``InvalidArgumentError`` for a literal that does not convert exactly.
    """
    if schema.get_field_index(name) < 0:
        raise SchemaError(f"cannot update unknown column {name!r}; the table has {schema.names}")
    assigned_values(value, schema.field(name), columns)


def _typed_source(source: pa.Table, schema: pa.Schema) -> pa.Table:
    """The merge source with the table's columns in the table's types (lossless casts only,
    so keys join and ``'42'`` never becomes 42); its other columns are kept for the SQL."""
    for i, name in enumerate(source.column_names):
        j = schema.get_field_index(name)
        if j >= 0:
            target = relaxed_type(schema.field(j).type)
            source = source.set_column(i, name, cast_lossless(source.column(i), target, name))
    return source


def _ensure_written_by(file_writer: DeltaFileWriter, files: pa.Table) -> None:
    """Raise ``InvalidArgumentError`` unless every path of ``files`` lies in the write's own
    directory: the commit owns them, so an abort would delete them."""
    if files.num_rows == 0:
        return
    prefix = file_writer.layout.prefix.rstrip("/") + "/"
    paths = files.column(PATH)
    outside = paths.filter(pc.invert(pc.starts_with(paths, prefix)))
    if len(outside) or not file_writer.layout.prefix:
        raise InvalidArgumentError(
            f"replace_files publishes only files its file_writer wrote (below {prefix}); "
            f"got {outside.to_pylist()[:3]}"
        )


class DeltaWriter:
    """Writes data files for one snapshot and returns the actions that publish them.

    ``timestamp_ms``: the commit's given timestamp (``Table.transaction(timestamp_ms=)``),
    checked here before any file is written: the table must record in-commit timestamps
    (else ``UnsupportedFeatureError`` naming ``delta.enableInCommitTimestamps``) and it must
    be later than the snapshot's (else ``CommitError``). The committer records it.
    """

    def __init__(
        self, storage: Storage, snapshot: Snapshot, timestamp_ms: int | None = None
    ) -> None:
        self._storage = storage
        self._snapshot = snapshot
        self._state = state_of(snapshot)
        ensure_writable(self._state.protocol)
        _ensure_no_unsupported_columns(self._state.schema)
        if timestamp_ms is not None:
            ensure_commit_timestamps(self._state.configuration)
            if timestamp_ms <= (self._state.timestamp or 0):
                raise CommitError(
                    f"commit timestamp {timestamp_ms} is not later than version "
                    f"{self._state.version}'s in-commit timestamp {self._state.timestamp}; "
                    "Delta commit timestamps must strictly increase"
                )
        self._constraints = table_constraints(self._state.configuration, self._state.schema)
        self._generated = generation_expressions(self._state.schema)
        self._dml_context: DmlContext | None = None

    def layout(self) -> FileLayout:
        """How this table lays out new data files."""
        return self._layout()

    def _layout(self) -> FileLayout:
        conf = self._state.configuration
        return FileLayout(
            schema=self._state.schema,
            partition_columns=self._state.partition_columns,
            column_mapping_mode=conf.get(COLUMN_MAPPING_MODE, "none"),
            target_file_size=parse_size_bytes(
                conf.get(TARGET_FILE_SIZE, str(DEFAULT_TARGET_FILE_SIZE)), TARGET_FILE_SIZE
            ),
        )

    def _user_rows(self, data: Any, schema_mode: str | None) -> tuple[pa.Table, list[Action]]:
        """Appended or overwriting rows, conformed to the schema ``schema_mode`` gives
        (``write.schema_mode``), and the actions recording that schema (none when it stays);
        the writer then plans against the new schema."""
        table = to_arrow_table(data)
        if schema_mode is None:
            check_columns(table, self._state.schema, self._generated)
            return self._conformed(table), []
        state, evolution = evolved(self._state, table, schema_mode)
        if evolution:
            self._state = state
            self._generated = generation_expressions(state.schema)
            self._constraints = table_constraints(state.configuration, state.schema)
            self._dml_context = None
        return self._conformed(table), evolution

    def _conformed(self, data: Any) -> pa.Table:
        """User data: generated columns filled in when absent, verified when given."""
        table = to_arrow_table(data)
        table = fill_generated(table, self._generated, verify=True)
        table = conform_to_schema(table, self._state.schema)
        check_rows(table, self._constraints)
        return table

    def _write_conformed(self, table: pa.Table) -> AddFiles:
        # Rows lakecore rewrote (updates): generated columns follow their sources.
        table = fill_generated(table, self._generated, verify=False)
        table = conform_to_schema(table, self._state.schema)
        check_rows(table, self._constraints)
        return AddFiles(write_data_files(self._storage, self._layout(), table), owned=True)

    def _dml(self) -> DmlContext:
        if self._dml_context is None:
            conf = self._state.configuration
            self._dml_context = DmlContext(
                storage=self._storage,
                reader=state_reader(self._storage, self._state),
                layout=self._layout(),
                use_dvs=conf.get("delta.enableDeletionVectors", "false").lower() == "true",
                cdf=conf.get("delta.enableChangeDataFeed", "false").lower() == "true",
                index_schema=self._snapshot.files().schema,
                string_prefix_length=string_prefix_length(conf),
            )
        return self._dml_context

    def _candidates(self, predicate: str | ex.Predicate | None) -> pa.Table:
        """The files a DML with ``predicate`` (bound, or SQL text) must read: the scan's
        pruning of the file index (the same tree the rows are then evaluated with)."""
        files = self._snapshot.files()
        if predicate is None:
            return files
        if isinstance(predicate, str):
            predicate = dml_predicate(predicate, self._state.schema)
        return candidate_files(files, predicate, self._snapshot.source.scan_context())

    def _ensure_not_append_only(self) -> None:
        # Checked before any file is written (the commit checks again).
        if self._state.configuration.get("delta.appendOnly", "false").lower() == "true":
            raise ConstraintViolationError(
                "the table is append-only (delta.appendOnly=true): rows cannot be deleted, "
                "updated or overwritten"
            )

    def _validate(self, where: str | None) -> ex.Predicate | None:
        # Parse, bind and type-check before any IO: unknown columns and bad syntax fail here.
        return None if where is None else dml_predicate(where, self._state.schema)

    def append(self, data: Any, schema_mode: str | None = None) -> tuple[list[Action], CommitInfo]:
        table, evolution = self._user_rows(data, schema_mode)
        add = self._write_conformed(table)
        mode = {"mode": "Append", "partitionBy": list(self._state.partition_columns)}
        metrics = action_metrics([add]).with_rows(inserted=table.num_rows)
        return [*evolution, add], CommitInfo("WRITE", mode, metrics=metrics)

    def overwrite(
        self, data: Any, where: str | None, schema_mode: str | None = None
    ) -> tuple[list[Action], CommitInfo]:
        mode = {"mode": "Overwrite", "partitionBy": list(self._state.partition_columns)}
        self._ensure_not_append_only()
        if schema_mode == "overwrite" and where is not None:
            raise InvalidArgumentError("schema_mode='overwrite' overwrites every row: no where=")
        predicate = self._validate(where)
        table, evolution = self._user_rows(data, schema_mode)
        if where is None:
            actions: list[Action] = [*evolution, RemoveFiles(self._snapshot.files())]
            actions.append(self._write_conformed(table))
            metrics = action_metrics(actions).with_rows(
                inserted=table.num_rows, deleted=live_rows(self._dml(), self._snapshot.files())
            )
            return actions, CommitInfo("WRITE", mode, read_whole_table=True, metrics=metrics)
        assert predicate is not None
        outside = pc.invert(pc.fill_null(evaluate_predicate(predicate, table), False))
        if pc.any(outside).as_py():
            raise ConstraintViolationError(
                f"{pc.sum(outside).as_py()} row(s) of the data do not match replaceWhere {where!r}"
            )
        changes = delete_rows(self._dml(), self._candidates(predicate), predicate)
        # With change files in a commit, readers take only them: the new rows go in too.
        changes.new_rows.append(table)
        changes.inserted += table.num_rows
        if self._dml().cdf:
            changes.changes.append(tagged(table, "insert"))
        actions = [*evolution, *to_actions(self._dml(), changes, self._write_conformed)]
        params = {**mode, "predicate": where}
        info = CommitInfo("WRITE", params, read_predicate=where, metrics=changes.metrics(actions))
        return actions, info

    def delete(self, where: str | None) -> tuple[list[Action], CommitInfo]:
        self._ensure_not_append_only()
        predicate = self._validate(where)
        changes = delete_rows(self._dml(), self._candidates(predicate), predicate)
        actions = to_actions(self._dml(), changes, self._write_conformed)
        info = CommitInfo(
            "DELETE",
            _predicate_param(where),
            read_predicate=where,
            read_whole_table=where is None,
            metrics=changes.metrics(actions),
        )
        return actions, info

    def update(
        self, set: Mapping[str, SetValue], where: str | None
    ) -> tuple[list[Action], CommitInfo]:
        self._ensure_not_append_only()
        predicate = self._validate(where)
        unknown = [c for c in set if self._state.schema.get_field_index(c) < 0]
        if unknown:
            raise SchemaError(f"cannot update unknown column(s) {unknown}")
        for name, sql in set.items():
            _check_assignment(self._state.schema.empty_table(), self._state.schema, name, sql)
        changes = update_rows(self._dml(), self._candidates(predicate), set, predicate)
        actions = to_actions(self._dml(), changes, self._write_conformed)
        info = CommitInfo(
            "UPDATE",
            _predicate_param(where),
            read_predicate=where,
            read_whole_table=where is None,
            metrics=changes.metrics(actions),
        )
        return actions, info

    def merge(
        self, source: Any, on: Sequence[str], clauses: MergeClauses
    ) -> tuple[list[Action], CommitInfo]:
        if changes_target(clauses):
            self._ensure_not_append_only()
        src = _typed_source(to_arrow_table(source), self._state.schema)
        keys = merge_on(on, clauses)
        check_merge(src, self._state.schema, keys, clauses)
        # Only files whose key range covers some source key can hold a matching row (every
        # file with a not-matched-by-source clause or no key equality in on=).
        files = merge_files(
            self._snapshot.files(),
            src,
            keys,
            clauses,
            self._state.schema,
            self._snapshot.source.scan_context(),
        )
        changes, inserts = merge_rows(self._dml(), files, src, keys, clauses)
        for rows in inserts:
            # As an append: generated columns the clause does not give are computed.
            table = self._conformed(rows)
            changes.new_rows.append(table)
            changes.inserted += table.num_rows
            if self._dml().cdf:
                changes.changes.append(tagged(table, "insert"))
        # The conflict check prunes a winner's files with the range that picked ``files``.
        whole = whole_table(keys, clauses)
        actions = to_actions(self._dml(), changes, self._write_conformed)
        info = CommitInfo(
            "MERGE",
            {
                "predicate": json.dumps([f"merge on {list(on)}"]),
                **merge_parameters(keys, clauses),
            },
            read_predicate=None
            if whole
            else merge_read_predicate(keyed_source(src, keys), on, self._state.schema),
            read_whole_table=whole,
            metrics=changes.metrics(actions),
        )
        return actions, info

    def schema_update(self) -> DeltaSchemaUpdate:
        return DeltaSchemaUpdate(self._state)

    # ------------------------------------------------ distributed writes (lakecore.spark)

    def file_writer(self, mode: str, where: str | None) -> DeltaFileWriter:
        """Plan an append/overwrite/replace whose files a ``DeltaFileWriter`` writes elsewhere.

        Gates first: an overwrite of an append-only table (``ConstraintViolationError``),
        ``where`` that does not bind, ``where`` with ``replace`` (``InvalidArgumentError``:
        ``replace_files`` names the files it removes), and ``where`` on a table with the
        change data feed (``UnsupportedFeatureError``: the commit would need change files for
        the new rows). A ``replace`` writes its files as an append does.
        """
        if mode not in ("append", "overwrite", "replace"):
            raise ValueError(f"mode must be 'append', 'overwrite' or 'replace', not {mode!r}")
        if mode == "replace" and where is not None:
            raise InvalidArgumentError(
                "a replace removes the files replace_files is given; it takes no where="
            )
        if mode == "overwrite":
            self._ensure_not_append_only()
        if where is not None:
            self._validate(where)
            if self._dml().cdf:
                raise UnsupportedFeatureError(
                    "changeDataFeed",
                    "an overwrite with where= whose files are written elsewhere cannot write "
                    "change files for the new rows; use Table.overwrite",
                )
        options = dict(getattr(self._storage, "storage_options", None) or {})
        layout = replace(self._layout(), prefix=new_write_directory())
        return DeltaFileWriter(
            self._storage.root,
            layout,
            dict(self._constraints),
            dict(self._generated),
            where,
            options,
        )

    def add_files(
        self, file_writer: DataFileWriter, files: pa.Table, mode: str, where: str | None
    ) -> tuple[list[Action], CommitInfo]:
        """Publish ``files``; an overwrite also removes every file, or deletes the rows
        matching ``where`` (whole files, deletion vectors or rewrites, as ``delete`` does)."""
        partition_by = list(self._state.partition_columns)
        actions: list[Action] = []
        changes = ChangeSet(inserted=record_count(files))
        if mode == "append":
            info = CommitInfo("WRITE", {"mode": "Append", "partitionBy": partition_by})
        elif where is None:
            self._ensure_not_append_only()
            actions.append(RemoveFiles(self._snapshot.files()))
            changes.deleted = live_rows(self._dml(), self._snapshot.files())
            params = {"mode": "Overwrite", "partitionBy": partition_by}
            info = CommitInfo("WRITE", params, read_whole_table=True)
        else:
            self._ensure_not_append_only()
            predicate = self._validate(where)
            changes = delete_rows(self._dml(), self._candidates(predicate), predicate)
            changes.inserted = record_count(files)
            actions.extend(to_actions(self._dml(), changes, self._write_conformed))
            params = {"mode": "Overwrite", "partitionBy": partition_by, "predicate": where}
            info = CommitInfo("WRITE", params, read_predicate=where)
        if files.num_rows:
            actions.append(AddFiles(files))
        return actions, replace(info, metrics=changes.metrics(actions))

    def replace_files(
        self, file_writer: DataFileWriter, files: pa.Table, removed: pa.Table
    ) -> tuple[list[Action], CommitInfo]:
        """Publish ``files`` (written by ``file_writer``, from ``file_writer("replace", None)``)
        and remove the snapshot's files whose paths ``removed`` lists, whole, in one commit.

        The remove actions are built from the snapshot's own index rows (deletion vector
        included, as the protocol asks of a remove), so a concurrent commit that removed one
        of them or changed its deletion vector (a remove and add of that path) is a conflict
        on rebase; the commit reads nothing, so a concurrent append is not. The new files are
        ``owned``: an aborted commit deletes them. Both may be empty: the actions then
        still make a commit (of its ``commitInfo`` alone).

        Raises:
            InvalidArgumentError: a ``removed`` path is not a live file of the snapshot, or a
                path of ``files`` lies outside ``file_writer``'s directory (before anything
                is staged).
            ConstraintViolationError: files would be removed from an append-only table.
        """
        if not isinstance(file_writer, DeltaFileWriter):
            raise InvalidArgumentError(
                f"replace_files needs the DeltaFileWriter of file_writer('replace'), not "
                f"{type(file_writer).__name__}"
            )
        _ensure_written_by(file_writer, files)
        gone = self._live_files(removed)
        actions: list[Action] = []
        if gone.num_rows:
            self._ensure_not_append_only()
            actions.append(RemoveFiles(gone))
        if files.num_rows or not actions:
            # With nothing to add or remove, the empty AddFiles (no log line) still makes the
            # one commit the contract asks for: Transaction commits only staged actions, and a
            # migration records its progress in that commit's app metadata.
            actions.append(AddFiles(files, owned=True))
        params = {"addedFiles": str(files.num_rows), "removedFiles": str(gone.num_rows)}
        # The removed files go whole: their live rows are deleted, the new files' inserted.
        changes = ChangeSet(
            inserted=record_count(files) if files.num_rows else 0,
            deleted=live_rows(self._dml(), gone) if gone.num_rows else 0,
        )
        return actions, CommitInfo("REPLACE FILES", params, metrics=changes.metrics(actions))

    def _live_files(self, removed: pa.Table) -> pa.Table:
        """The snapshot's index rows of the paths ``removed`` lists (``InvalidArgumentError``
        naming up to three paths that are not live)."""
        index = self._snapshot.files()
        if removed.num_rows == 0:
            return index.slice(0, 0)
        if PATH not in removed.column_names:
            raise InvalidArgumentError("replace_files: removed has no 'path' column")
        paths = removed.column(PATH).combine_chunks().cast(pa.string())
        live = index.column(PATH).combine_chunks()
        missing = paths.filter(pc.invert(pc.is_in(paths, value_set=live)))
        if len(missing):
            raise InvalidArgumentError(
                f"replace_files: {len(missing)} removed path(s) are not live files of version "
                f"{self._state.version}: {missing.to_pylist()[:3]}"
            )
        return index.filter(pc.is_in(index.column(PATH), value_set=paths))

    def discard(self, file_writer: DataFileWriter) -> None:
        """Delete the write's directory (``DeltaFileWriter.discard``)."""
        if isinstance(file_writer, DeltaFileWriter):
            file_writer.discard()

    def upsert(self, data: Any) -> tuple[list[Action], CommitInfo]:
        raise UnsupportedFeatureError(
            "upsert", "Delta tables have no record key; use Table.merge with key columns"
        )

    def add_constraint(self, name: str, sql: str) -> tuple[list[Action], CommitInfo]:
        """A ``delta.constraints.<name>`` property (the commit adds checkConstraints)."""
        info = CommitInfo("ADD CONSTRAINT", {"name": name, "expr": sql}, read_whole_table=True)
        return [SetProperties({constraint_key(name): sql})], info

    def drop_constraint(self, name: str) -> tuple[list[Action], CommitInfo]:
        key = constraint_key(name)
        if key not in self._state.configuration:
            raise SchemaError(f"the table has no constraint {name!r}")
        return [SetProperties({key: None})], CommitInfo("DROP CONSTRAINT", {"name": name})
