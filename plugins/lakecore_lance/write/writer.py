"""LanceWriter: plans appends, overwrites, deletes and updates against one Lance version.

Rows are conformed to the dataset schema (``rows_in``: lossless casts only, NOT NULL
checked), written as new fragments (``files_out``), and deletes mark rows in per-fragment
deletion files. A writer is made only for a dataset ``writable.ensure_writable`` accepts. Only
the fragments the planner's pruning keeps (``candidate_files``) are read, through the
reader's own read path (``lakecore_lance.scan``), deleted rows included so that row offsets
are the fragment's. ``replace_files`` (migration) removes given fragments whole and adds the
fragments a ``file_writer("replace")`` wrote, reading nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Concatenate, NoReturn, ParamSpec, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import (
    ConstraintViolationError,
    InvalidArgumentError,
    SchemaError,
    UnsupportedFeatureError,
)
from lakecore.expr import tree as ex
from lakecore.expr.assign import assigned_values
from lakecore.expr.evaluate import evaluate_predicate
from lakecore.model import files as fi
from lakecore.model.actions import Action, CommitInfo, FormatPayload
from lakecore.model.data_input import to_arrow_table
from lakecore.model.merge import MergeClauses
from lakecore.model.schema import strip_metadata
from lakecore.planning.candidates import candidate_files, dml_predicate
from lakecore.planning.merge_eval import (
    check_merge,
    merge_file,
    merge_files,
    merge_inserts,
    merge_on,
    whole_table,
)
from lakecore.snapshot import Snapshot
from lakecore.storage import Storage
from lakecore_lance.deletions import ensure_within
from lakecore_lance.file_index import FRAGMENT_ID
from lakecore_lance.proto import file_pb2, table_pb2
from lakecore_lance.write.changes import FORMAT, LanceChange
from lakecore_lance.write.files_out import remove_quietly, write_deletion_file, write_fragments
from lakecore_lance.write.metrics import change_metrics, live_rows, new_rows
from lakecore_lance.write.rows_in import conform, typed_source
from lakecore_lance.write.writable import ensure_writable, state_of

if TYPE_CHECKING:
    from lakecore.expr.assign import SetValue
    from lakecore.format.writing import DataFileWriter, SchemaUpdate


@dataclass(frozen=True, slots=True)
class Marked:
    """A fragment's rows a delete or update takes: the fragment's live rows matching."""

    fragment_id: int
    positions: np.ndarray
    """Offsets of the matching live rows, sorted."""
    already: np.ndarray
    """Offsets deleted before (sorted)."""
    physical_rows: int
    rows: pa.Table | None
    """The matching rows themselves (updates)."""


def _count(marked: Sequence[Marked]) -> int:
    """Live rows a delete or update takes (the matching rows of every fragment)."""
    return sum(len(m.positions) for m in marked)


def _unset_as_nulls(rows: pa.Table, schema: pa.Schema) -> pa.Table:
    """An insert clause's rows with the columns it does not set as nulls (SQL's INSERT): a
    NOT NULL one among them is then a ConstraintViolationError, as on every format."""
    for f in schema:
        if rows.schema.get_field_index(f.name) < 0:
            rows = rows.append_column(f.name, pa.nulls(rows.num_rows, f.type))
    return rows


P = ParamSpec("P")
R = TypeVar("R")


def _fragment_name(row: pa.Table) -> str:
    """``fragment <id> (<first data file>)`` for a one-row file index."""
    return f"fragment {row.column(FRAGMENT_ID)[0].as_py()} ({row.column(fi.PATH)[0].as_py()})"


def _undo_on_error(
    method: Callable[Concatenate[LanceWriter, P], R],
) -> Callable[Concatenate[LanceWriter, P], R]:
    """A write that raises removes the data and deletion files it wrote before (nothing of it
    was staged, so no abort will)."""

    def run(self: LanceWriter, /, *args: P.args, **kwargs: P.kwargs) -> R:
        self._written = []
        try:
            return method(self, *args, **kwargs)
        except BaseException:
            remove_quietly(self._storage, self._written)
            raise
        finally:
            self._written = []

    run.__doc__, run.__name__ = method.__doc__, method.__name__
    return run


class LanceWriter:
    """Writes data and deletion files for one snapshot and returns the staged changes."""

    def __init__(self, storage: Storage, snapshot: Snapshot) -> None:
        self._storage = storage
        self._snapshot = snapshot
        self._state = state_of(snapshot)
        ensure_writable(self._state)
        self._schema = snapshot.schema
        self._written: list[str] = []
        """Files the running write made so far (``_undo_on_error`` removes them)."""

    # ------------------------------------------------------------------ helpers

    def _new_rows(self, rows: pa.Table) -> tuple[tuple[bytes, ...], tuple[str, ...]]:
        if rows.num_rows == 0:
            return (), ()
        m = self._state.manifest
        written = write_fragments(self._storage, m.fields, m.data_format.version, rows)
        self._written.extend(written.paths)
        return written.fragments, written.paths

    def _predicate(self, where: str | None) -> ex.Predicate | None:
        # Parsed, bound and type-checked before any IO: bad SQL or unknown columns fail here.
        return None if where is None else dml_predicate(where, self._schema)

    def _marked(self, predicate: ex.Predicate | None, keep_rows: bool) -> list[Marked]:
        """The live rows matching ``predicate`` (all when None), fragment by fragment, read
        only from the fragments pruning keeps."""
        from lakecore_lance.scan import deleted_positions, read_files

        files = self._snapshot.files()
        context = self._snapshot.source.scan_context()
        if predicate is not None:
            files = candidate_files(files, predicate, context)
        columns = self._schema.names
        out = []
        for i in range(files.num_rows):
            row = files.slice(i, 1)
            fid = int(row.column(FRAGMENT_ID)[0].as_py())
            physical = row.column(fi.RECORD_COUNT)[0].as_py()
            gone = deleted_positions(context, row)[0]
            already = np.zeros(0, np.uint64) if gone is None else np.asarray(gone, np.uint64)
            hits: list[np.ndarray] = []
            chunks: list[pa.Table] = []
            total = 0
            for part in read_files(context, row, columns):
                batch = pa.Table.from_batches([part.batch])
                total = max(total, part.offset + batch.num_rows)
                if predicate is None:
                    mask = np.ones(batch.num_rows, dtype=bool)
                else:
                    result = pc.fill_null(evaluate_predicate(predicate, batch), False)
                    mask = np.asarray(result.to_numpy(zero_copy_only=False), dtype=bool)
                offsets = np.nonzero(mask)[0].astype(np.uint64) + np.uint64(part.offset)
                live = ~np.isin(offsets, already)
                if keep_rows:
                    local = np.nonzero(mask)[0][live]
                    chunks.append(batch.take(pa.array(local, pa.int64())))
                hits.append(offsets[live])
            ensure_within(already, total, _fragment_name(row))
            positions = np.concatenate(hits) if hits else np.zeros(0, np.uint64)
            if len(positions) == 0:
                continue
            rows = pa.concat_tables(chunks) if keep_rows else None
            out.append(Marked(fid, positions, already, int(physical or total), rows))
        return out

    def fragment_rows(self, row: pa.Table) -> tuple[int, int, np.ndarray, pa.Table]:
        """One file-index row's fragment: its id, physical rows, deleted offsets (sorted) and
        every row (deleted ones included, so that a row's index is its offset)."""
        from lakecore_lance.scan import deleted_positions, read_files

        context = self._snapshot.source.scan_context()
        fid = int(row.column(FRAGMENT_ID)[0].as_py())
        gone = deleted_positions(context, row)[0]
        already = np.zeros(0, np.uint64) if gone is None else np.asarray(gone, np.uint64)
        parts = [part.batch for part in read_files(context, row, self._schema.names)]
        target = strip_metadata(self._schema)
        table = pa.Table.from_batches(parts, schema=target) if parts else target.empty_table()
        ensure_within(already, table.num_rows, _fragment_name(row))
        physical = row.column(fi.RECORD_COUNT)[0].as_py()
        return fid, int(physical or table.num_rows), already, table

    def _deletions(
        self, marked: Sequence[Marked]
    ) -> tuple[tuple[bytes, ...], tuple[int, ...], tuple[str, ...]]:
        """Deletion files for ``marked`` (old and new offsets together); fragments left with
        no live row are removed instead."""
        from lakecore_lance.deletions import deletion_path

        by_id = {int(f.id): f for f in self._state.manifest.fragments}
        updated: list[bytes] = []
        removed: list[int] = []
        written: list[str] = []
        for m in marked:
            positions = np.union1d(m.already, m.positions).astype(np.uint64)
            if len(positions) >= m.physical_rows:
                removed.append(m.fragment_id)
                continue
            deletion = write_deletion_file(
                self._storage, m.fragment_id, self._state.version, positions
            )
            written.append(deletion_path(m.fragment_id, deletion))
            self._written.append(written[-1])
            fragment = table_pb2.DataFragment()
            fragment.CopyFrom(by_id[m.fragment_id])
            fragment.deletion_file.CopyFrom(deletion)
            updated.append(fragment.SerializeToString(deterministic=True))
        return tuple(updated), tuple(removed), tuple(written)

    def _stage(
        self, change: LanceChange, info: CommitInfo, **rows: int
    ) -> tuple[list[Action], CommitInfo]:
        """Stage ``change`` with its metrics: its files (``change_metrics``) and ``rows``
        (``inserted``/``updated``/``deleted``/``copied`` counted by the write)."""
        files = change_metrics(self._storage, self._state.manifest, change)
        info = replace(info, metrics=files.with_rows(**rows))
        return [FormatPayload(FORMAT, change)], info

    # ------------------------------------------------------------------ the writes

    def _user_rows(self, data: Any, schema_mode: str | None) -> pa.Table:
        """Appended or overwriting rows: with ``schema_mode`` None (deltalake's default)
        every column of the dataset must be there (``SchemaError`` naming those missing); a
        mode that changes the schema is refused: Lance adds columns by a transaction of
        their own (``add_columns``), never in a write's (the capabilities do not declare
        it, so the core refuses first)."""
        if schema_mode is not None:
            raise UnsupportedFeatureError(
                "schema_merge" if schema_mode == "merge" else "schema_overwrite",
                f"a lance write cannot change the dataset schema (schema_mode={schema_mode!r}): "
                "Lance adds columns in a commit of their own; use update_schema() first",
            )
        table = to_arrow_table(data)
        absent = [n for n in self._schema.names if n not in table.column_names]
        if absent:
            raise SchemaError(
                f"the data has no column(s) {absent} of the dataset (deltalake refuses this too)"
            )
        return conform(table, self._schema)

    @_undo_on_error
    def append(self, data: Any, schema_mode: str | None = None) -> tuple[list[Action], CommitInfo]:
        rows = self._user_rows(data, schema_mode)
        fragments, paths = self._new_rows(rows)
        change = LanceChange("append", new_fragments=fragments, written=paths)
        return self._stage(change, CommitInfo("WRITE", {"mode": "Append"}), inserted=rows.num_rows)

    @_undo_on_error
    def overwrite(
        self, data: Any, where: str | None, schema_mode: str | None = None
    ) -> tuple[list[Action], CommitInfo]:
        rows = self._user_rows(data, schema_mode)
        if where is not None:
            predicate = self._predicate(where)
            assert predicate is not None
            outside = pc.invert(pc.fill_null(evaluate_predicate(predicate, rows), False))
            if pc.any(outside).as_py():
                raise ConstraintViolationError(
                    f"{pc.sum(outside).as_py()} row(s) of the data do not match {where!r}"
                )
        fragments, paths = self._new_rows(rows)
        return self._publish(fragments, paths, "overwrite", where)

    def _publish(
        self, fragments: tuple[bytes, ...], paths: tuple[str, ...], mode: str, where: str | None
    ) -> tuple[list[Action], CommitInfo]:
        """Stage written fragments: appended, replacing every fragment, or replacing the rows
        matching ``where`` (deleted as ``delete`` deletes them)."""
        if mode == "append":
            change = LanceChange("append", new_fragments=fragments, written=paths)
            info = CommitInfo("WRITE", {"mode": "Append"})
            return self._stage(change, info, inserted=new_rows(change))
        if where is None:
            change = LanceChange("overwrite", new_fragments=fragments, written=paths)
            info = CommitInfo("WRITE", {"mode": "Overwrite"}, read_whole_table=True)
            deleted = live_rows(self._state.manifest.fragments)
            return self._stage(change, info, inserted=new_rows(change), deleted=deleted)
        marked = self._marked(self._predicate(where), False)
        updated, removed, deletions = self._deletions(marked)
        change = LanceChange(
            "update",
            new_fragments=fragments,
            updated_fragments=updated,
            removed_fragment_ids=removed,
            written=deletions + paths,
            predicate=where,
        )
        info = CommitInfo("WRITE", {"mode": "Overwrite", "where": where}, read_predicate=where)
        return self._stage(change, info, inserted=new_rows(change), deleted=_count(marked))

    @_undo_on_error
    def delete(self, where: str | None) -> tuple[list[Action], CommitInfo]:
        predicate = self._predicate(where)
        marked = self._marked(predicate, False)
        if not _count(marked):  # nothing matched: no version, as on every format
            return [], CommitInfo("DELETE", {"predicate": where or ""}, read_predicate=where)
        updated, removed, written = self._deletions(marked)
        change = LanceChange(
            "delete",
            updated_fragments=updated,
            removed_fragment_ids=removed,
            written=written,
            predicate=where,
        )
        info = CommitInfo("DELETE", {"predicate": where or ""}, read_predicate=where)
        return self._stage(change, info, deleted=_count(marked))

    @_undo_on_error
    def update(
        self, set: Mapping[str, SetValue], where: str | None
    ) -> tuple[list[Action], CommitInfo]:
        predicate = self._predicate(where)
        empty = strip_metadata(self._schema).empty_table()
        for name, value in set.items():
            if self._schema.get_field_index(name) < 0:
                raise SchemaError(
                    f"cannot update unknown column {name!r}; the dataset has {self._schema.names}"
                )
            assigned_values(value, self._schema.field(name), empty)  # checked before any IO
        marked = self._marked(predicate, True)
        if not _count(marked):
            return [], CommitInfo("UPDATE", {"predicate": where or ""}, read_predicate=where)
        parts = []
        for m in marked:
            assert m.rows is not None
            rows = m.rows
            for name, value in set.items():
                values = assigned_values(value, self._schema.field(name), rows)
                rows = rows.set_column(rows.schema.get_field_index(name), name, values)
            parts.append(conform(rows, self._schema))
        updated, removed, deletions = self._deletions(marked)
        new_rows = pa.concat_tables(parts) if parts else strip_metadata(self._schema).empty_table()
        fragments, paths = self._new_rows(new_rows)
        change = LanceChange(
            "update",
            new_fragments=fragments,
            updated_fragments=updated,
            removed_fragment_ids=removed,
            written=deletions + paths,
            predicate=where,
        )
        info = CommitInfo("UPDATE", {"predicate": where or ""}, read_predicate=where)
        return self._stage(change, info, updated=_count(marked))

    @_undo_on_error
    def merge(
        self, source: Any, on: Sequence[str], clauses: MergeClauses
    ) -> tuple[list[Action], CommitInfo]:
        """Lance ``merge_insert`` semantics in lakecore's MERGE form (clauses evaluated by
        ``lakecore.planning.merge_eval``): updated and deleted target rows are marked deleted,
        updated ones rewritten as new fragments with the inserted source rows. Only fragments
        whose key range may match are read (every fragment with a not-matched-by-source
        clause or an ``on`` without key equality).

        Raises ``SchemaError`` for a key missing from either side or an assignment that does
        not type-check, ``ConstraintViolationError`` when two source rows share a key,
        ``PredicateError`` for conditions that do not parse; all before any file is written.
        """
        src = typed_source(to_arrow_table(source), self._schema)
        schema = strip_metadata(self._schema)
        empty = schema.empty_table()
        keys = merge_on(on, clauses)
        check_merge(src, schema, keys, clauses)
        whole = whole_table(keys, clauses)
        files = merge_files(
            self._snapshot.files(), src, keys, clauses, schema, self._snapshot.source.scan_context()
        )
        matched_source = np.zeros(src.num_rows, dtype=bool)
        marked: list[Marked] = []
        rewritten: list[pa.Table] = []
        counts = {"inserted": 0, "updated": 0, "deleted": 0}
        for i in range(files.num_rows):
            fid, physical, already, table = self.fragment_rows(files.slice(i, 1))
            live = np.flatnonzero(~np.isin(np.arange(table.num_rows), already))
            rows = table if len(live) == table.num_rows else table.take(pa.array(live))
            outcome = merge_file(rows, src, keys, clauses, schema)
            matched_source[outcome.matched_source] = True
            if outcome.changed == 0:
                continue
            if outcome.updated.size:
                rewritten.append(conform(outcome.after, self._schema))
            counts["updated"] += int(outcome.updated.size)
            counts["deleted"] += int(outcome.deleted.size)
            gone = np.concatenate([live[outcome.updated], live[outcome.deleted]])
            positions = np.sort(gone.astype(np.uint64))
            marked.append(Marked(fid, positions, already, physical, None))
        for inserts in merge_inserts(src, matched_source, clauses, schema):
            rewritten.append(conform(_unset_as_nulls(inserts, self._schema), self._schema))
            counts["inserted"] += inserts.num_rows
        updated, removed, deletions = self._deletions(marked)
        new_rows = pa.concat_tables(rewritten) if rewritten else empty
        fragments, paths = self._new_rows(new_rows)
        change = LanceChange(
            "update" if marked else "append",
            new_fragments=fragments,
            updated_fragments=updated,
            removed_fragment_ids=removed,
            written=deletions + paths,
            keyed=True,
        )
        info = CommitInfo("MERGE", {"on": list(on)}, read_whole_table=whole)
        return self._stage(change, info, **counts)

    # ------------------------------------------------ distributed writes (lakecore.spark)

    def file_writer(self, mode: str, where: str | None) -> DataFileWriter:
        """A ``LanceDataFileWriter`` for an ``append``, an ``overwrite`` (``where``: the rows
        it replaces, parsed and bound now) or a ``replace`` (``replace_files``). Raises
        ``ValueError`` for another mode, or ``where`` with a mode other than ``overwrite``."""
        from lakecore_lance.write.file_writer import LanceDataFileWriter, new_write_id

        if mode not in ("append", "overwrite", "replace"):
            raise ValueError(f"mode must be 'append', 'overwrite' or 'replace', not {mode!r}")
        if mode != "overwrite" and where is not None:
            raise ValueError("where applies to overwrites only")
        self._predicate(where)
        m = self._state.manifest
        fields = file_pb2.Schema(fields=m.fields).SerializeToString(deterministic=True)
        return LanceDataFileWriter(
            table_uri=self._storage.root,
            table_schema=strip_metadata(self._schema),
            fields=fields,
            data_version=m.data_format.version,
            prefix=new_write_id(),
            where=where,
            storage_options=dict(getattr(self._storage, "storage_options", None) or {}),
        )

    @_undo_on_error
    def add_files(
        self, file_writer: DataFileWriter, files: pa.Table, mode: str, where: str | None
    ) -> tuple[list[Action], CommitInfo]:
        """The change publishing ``files`` as new fragments; an overwrite replaces every
        fragment, or deletes the rows matching ``where`` (as ``delete`` does)."""
        from lakecore_lance.write.file_writer import LanceDataFileWriter

        if not isinstance(file_writer, LanceDataFileWriter):
            raise TypeError("not a Lance file writer")
        fragments = file_writer.fragments(files)
        paths = tuple(str(p) for p in files.column(fi.PATH).to_pylist())
        return self._publish(fragments, paths, mode, where)

    def replace_files(
        self, file_writer: DataFileWriter, files: pa.Table, removed: pa.Table
    ) -> tuple[list[Action], CommitInfo]:
        """The change publishing ``files`` (from ``file_writer.write``) as new fragments and
        removing the fragments whose file-index ``path`` is in ``removed``, whole (deleted
        rows and deletion files go with them): one Lance ``Update`` with
        ``removed_fragment_ids`` + ``new_fragments`` (see ``lakecore_lance.write.changes``).
        Either may be empty.

        Raises ``InvalidArgumentError`` when a ``removed`` path is not a fragment of this
        snapshot (nothing is staged), ``TypeError`` for a file writer of another format and
        ``ValueError`` for files it did not write.
        """
        from lakecore_lance.write.file_writer import LanceDataFileWriter

        if not isinstance(file_writer, LanceDataFileWriter):
            raise TypeError("not a Lance file writer")
        ids = self._fragment_ids(removed)
        # No files may come as a bare ``path`` column (Transaction.replace_files without data).
        fragments = file_writer.fragments(files) if files.num_rows else ()
        paths = tuple(str(p) for p in files.column(fi.PATH).to_pylist())
        change = LanceChange(
            "replace", new_fragments=fragments, removed_fragment_ids=ids, written=paths
        )
        # No read predicate: the committer's fragment check makes a concurrent change to a
        # removed fragment a conflict (and lets appends through), as Lance's resolver does.
        info = CommitInfo("REPLACE FILES", {"removed": len(ids), "added": len(fragments)})
        # The removed fragments go whole (their live rows), the new ones' rows come in.
        gone = [f for f in self._state.manifest.fragments if int(f.id) in set(ids)]
        return self._stage(change, info, inserted=new_rows(change), deleted=live_rows(gone))

    def _fragment_ids(self, removed: pa.Table) -> tuple[int, ...]:
        """The fragment ids of the file-index rows ``removed`` (by ``path``), in index order.

        Raises ``InvalidArgumentError`` naming the paths that are not live fragments."""
        if removed.num_rows == 0:
            return ()
        wanted = [str(p) for p in removed.column(fi.PATH).to_pylist()]
        live = self._snapshot.files()
        by_path = dict(
            zip(
                live.column(fi.PATH).to_pylist(),
                live.column(FRAGMENT_ID).to_pylist(),
                strict=True,
            )
        )
        missing = sorted({p for p in wanted if p not in by_path})
        if missing:
            raise InvalidArgumentError(
                f"cannot remove {missing}: not live files of version {self._snapshot.version} "
                f"of {self._storage.root}"
            )
        return tuple(dict.fromkeys(int(by_path[p]) for p in wanted))

    def discard(self, file_writer: DataFileWriter) -> None:
        """Delete the files ``file_writer`` wrote (``LanceDataFileWriter.discard``)."""
        from lakecore_lance.write.file_writer import LanceDataFileWriter

        if isinstance(file_writer, LanceDataFileWriter):
            file_writer.discard()

    def schema_update(self) -> SchemaUpdate:
        from lakecore_lance.write.schema_update import LanceSchemaUpdate

        return LanceSchemaUpdate(self._state.manifest, self)

    @property
    def storage(self) -> Storage:
        """The dataset's storage."""
        return self._storage

    def snapshot_files(self) -> pa.Table:
        """The file index of the snapshot this writer plans against."""
        return self._snapshot.files()

    def upsert(self, data: Any) -> tuple[list[Action], CommitInfo]:
        """Insert ``data``, replacing the rows whose primary key exists (Lance's
        ``merge_insert`` on the dataset's unenforced primary key: update all, insert all).

        Raises ``UnsupportedFeatureError("upsert")`` when the dataset has no primary key, and
        what ``merge`` raises.
        """
        keys = [
            f.name
            for f in self._state.manifest.fields
            if f.parent_id == -1 and f.unenforced_primary_key
        ]
        if not keys:
            raise UnsupportedFeatureError(
                "upsert",
                "the Lance dataset has no primary key (lance-schema:unenforced-primary-key); "
                "use merge(on=...)",
            )
        clauses = MergeClauses(matched_update_all=True, insert_all=True)
        actions, merged = self.merge(data, keys, clauses)
        return actions, CommitInfo("UPSERT", {"on": keys}, metrics=merged.metrics)

    # ------------------------------------------------------------------ not declared

    def _refuse(self, capability: str) -> NoReturn:
        raise UnsupportedFeatureError(
            capability, f"lakecore does not {capability.replace('_', ' ')} Lance datasets yet"
        )

    def add_constraint(self, name: str, sql: str) -> tuple[list[Action], CommitInfo]:
        self._refuse("constraints")

    def drop_constraint(self, name: str) -> tuple[list[Action], CommitInfo]:
        self._refuse("constraints")
