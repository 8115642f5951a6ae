"""Row-level changes: delete and update, as copy-on-write rewrites or deletion vectors.

The caller passes the candidate files (``lakecore.planning.candidates``: the scan's pruning
of the file index), a superset of the files holding a changed row. Each candidate is read
whole (deleted rows included, so row positions are those of the file), the predicate is
evaluated per row, and the file is either rewritten without the changed rows (copy-on-write)
or given a larger deletion vector (when the table enables ``delta.enableDeletionVectors``).
Changed rows are written as new files; with the change data feed on, their before/after
images go to ``_change_data``.

A DELETE whose predicate names partition columns only is decided per file, without reading
any: every row of a file shares its partition values, so the predicate is TRUE for all of
them (the file is removed, as Delta does) or for none (the file is untouched).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakecore.expr import tree as ex
from lakecore.expr.assign import assigned_values
from lakecore.expr.evaluate import evaluate_predicate
from lakecore.expr.sql import parse_sql
from lakecore.model import files as fi
from lakecore.model.actions import (
    POSITIONS,
    POSITIONS_TYPE,
    Action,
    AddChangeFiles,
    DeleteRows,
    RemoveFiles,
    action_metrics,
)
from lakecore.model.metrics import WriteMetrics
from lakecore.storage import Storage
from lakecore_delta.deletion_vectors import (
    DeletionVectorDescriptor,
    encode_dv_file,
    inline_descriptor,
    uuid_descriptor,
)
from lakecore_delta.dv_bitmap import serialize_deletion_vector
from lakecore_delta.file_index import DELETION_TYPE, deletion_value
from lakecore_delta.reader import FileReader
from lakecore_delta.scan import DEFAULT_STRING_PREFIX_LENGTH
from lakecore_delta.write.data_files import FileLayout, write_data_files
from lakecore_delta.write.stats_out import index_bounds

Condition: TypeAlias = "str | ex.Predicate | None"
"""A DML condition: Spark SQL text or a (bound) tree; None matches every row."""

INLINE_DV_MAX_BYTES = 256
CHANGE_TYPE = "_change_type"


@dataclass(frozen=True, slots=True)
class NewDeletes:
    """A file re-added with a larger deletion vector: its index row (``Snapshot.files()``,
    one row) and what changes in it."""

    row: pa.Table
    record_count: int
    """The physical row count (the protocol's ``numRecords`` of a file with a DV)."""
    deletion: dict[str, Any]
    """The ``deletion`` value (``deletion_value``) of the new deletion vector."""
    positions: np.ndarray
    """Every deleted row position of the file (old and new)."""


@dataclass
class ChangeSet:
    """What a DML statement produced, accumulated over the files it touched.

    The row counts are those the statement wrote (``lakecore.model.metrics``): ``deleted``
    and ``updated`` live rows, ``inserted`` new rows, ``copied`` rows rewritten unchanged
    (the rest of a copy-on-write file).
    """

    removed: list[pa.Table] = field(default_factory=list)
    """Rows of the file index (``Snapshot.files()``) of the files the statement removes."""
    new_dvs: list[NewDeletes] = field(default_factory=list)
    new_rows: list[pa.Table] = field(default_factory=list)
    changes: list[pa.Table] = field(default_factory=list)
    deleted: int = 0
    updated: int = 0
    inserted: int = 0
    copied: int = 0

    def metrics(self, actions: Sequence[Action]) -> WriteMetrics:
        """The statement's metrics: files and bytes of ``actions`` (its actions), rows
        counted here."""
        return action_metrics(actions).with_rows(
            inserted=self.inserted, updated=self.updated, deleted=self.deleted, copied=self.copied
        )


@dataclass(frozen=True, slots=True)
class DmlContext:
    """Everything a DML statement needs about the table."""

    storage: Storage
    reader: FileReader
    layout: FileLayout
    use_dvs: bool
    cdf: bool
    index_schema: pa.Schema
    """The schema of the snapshot's file index (``Snapshot.files()``): the staged
    ``RemoveFiles``/``DeleteRows`` rows keep its column types (partition values, typed
    ``min``/``max``/``null_count``)."""
    string_prefix_length: int = DEFAULT_STRING_PREFIX_LENGTH
    """The table's string stats prefix length (``stats_out.string_prefix_length``)."""


def file_rows(files: pa.Table) -> list[dict[str, Any]]:
    """One entry per file of ``files`` (file-index rows) for ``FileReader`` and
    ``live_count``: its ``path``, ``record_count`` and ``deletion`` as Python values, its
    ``partition`` as the Arrow struct scalar (Python cannot hold every partition value: a
    date of year 0). Stats stay in ``files``."""
    names = [c for c in (fi.PATH, fi.RECORD_COUNT, fi.DELETION) if c in files.column_names]
    rows: list[dict[str, Any]] = files.select(names).to_pylist()
    parts = files.column(fi.PARTITION) if fi.PARTITION in files.column_names else None
    for i, row in enumerate(rows):
        row[fi.PARTITION] = None if parts is None else parts[i]
    return rows


def read_file(ctx: DmlContext, row: dict[str, Any]) -> tuple[pa.Table, np.ndarray]:
    """Every physical row of the file of ``file_rows`` entry ``row`` and its live mask."""
    schema = ctx.layout.schema
    batch, deleted = ctx.reader.read_physical(row, schema)
    table = pa.Table.from_batches([batch], schema=schema)
    live = np.ones(table.num_rows, dtype=bool)
    if deleted is not None and deleted.size:
        live[deleted.astype(np.int64)] = False
    return table, live


def touched_files(
    ctx: DmlContext, files: pa.Table, where: Condition
) -> Iterator[tuple[pa.Table, pa.Table, np.ndarray, np.ndarray]]:
    """Yield (index row: one row of ``files``, all physical rows, live mask, match mask) of
    the files with matches."""
    for at, row in enumerate(file_rows(files)):
        table, live = read_file(ctx, row)
        if where is None:
            match = live.copy()
        else:
            truth = pc.fill_null(evaluate_predicate(where, table), False)
            match = truth.to_numpy(zero_copy_only=False) & live
        if match.any():
            yield files.slice(at, 1), table, live, match


def tagged(rows: pa.Table, change: str) -> pa.Table:
    return rows.append_column(CHANGE_TYPE, pa.array([change] * rows.num_rows, pa.string()))


def _dv_row(ctx: DmlContext, row: pa.Table, deleted: np.ndarray, physical_rows: int) -> NewDeletes:
    """The file of index row ``row`` with its deleted positions ``deleted`` (old and new),
    the deletion vector written (a file, unless inline): its typed stats stay (wide bounds
    now; the log says so)."""
    data = serialize_deletion_vector(deleted)
    descriptor: DeletionVectorDescriptor
    if len(data) <= INLINE_DV_MAX_BYTES:
        descriptor = inline_descriptor(deleted)
    else:
        file_uuid = uuid.uuid4()
        payload, offset, size = encode_dv_file(data)
        descriptor = uuid_descriptor(
            file_uuid, offset=offset, size_in_bytes=size, cardinality=int(deleted.size)
        )
        assert descriptor.relative_path is not None
        ctx.storage.put(descriptor.relative_path, payload)
    return NewDeletes(row, physical_rows, deletion_value(descriptor), deleted)


def _drop_rows(
    ctx: DmlContext,
    out: ChangeSet,
    row: pa.Table,
    table: pa.Table,
    live: np.ndarray,
    gone: np.ndarray,
) -> None:
    """Make rows ``gone`` of the file of index row ``row`` disappear (DV or rewrite)."""
    out.removed.append(row)
    remaining = live & ~gone
    if ctx.use_dvs:
        if remaining.any():
            deleted = np.flatnonzero(~remaining).astype(np.uint64)
            out.new_dvs.append(_dv_row(ctx, row, deleted, table.num_rows))
    elif remaining.any():
        out.new_rows.append(table.filter(pa.array(remaining)))
        out.copied += int(remaining.sum())


def delete_rows(ctx: DmlContext, files: pa.Table, where: Condition) -> ChangeSet:
    """Plan a DELETE of the rows matching ``where`` in ``files``.

    ``files`` must include every file that may hold a matching row. Without the change data
    feed (which needs the deleted rows), no predicate or a predicate on partition columns
    only reads no file.
    """
    out = ChangeSet()
    truth = None if ctx.cdf else partition_truth(files, where, ctx.layout.partition_columns)
    if where is None and not ctx.cdf:
        truth = pa.array(np.ones(files.num_rows, dtype=bool))  # every row of every file
    if truth is not None:
        whole = files.filter(truth)
        counts = live_counts(ctx, whole)
        # A file whose rows are all deleted already stays as it is.
        out.removed.append(whole.filter(pa.array(counts != 0)))
        out.deleted += int(counts.sum())
        return out
    for row, table, live, match in touched_files(ctx, files, where):
        _drop_rows(ctx, out, row, table, live, match)
        out.deleted += int(match.sum())
        if ctx.cdf:
            out.changes.append(tagged(table.filter(pa.array(match)), "delete"))
    return out


def partition_truth(
    files: pa.Table, where: Condition, partition_columns: Sequence[str]
) -> pa.Array | None:
    """Per file of ``files``: is ``where`` TRUE for the file's partition values (nulls False)?

    None unless ``where`` names at least one column and partition columns only (compared
    case-insensitively, as the evaluator resolves names): then every row of a file has the
    answer of its partition values, since the row evaluator sees the same values.
    """
    if where is None or not partition_columns:
        return None
    tree = parse_sql(where) if isinstance(where, str) else where
    names = {name.lower() for name in ex.columns_of(tree)}
    if not names or not names <= {c.lower() for c in partition_columns}:
        return None
    values = files.column(fi.PARTITION).combine_chunks()
    table = pa.Table.from_struct_array(values)
    truth = pc.fill_null(evaluate_predicate(where, table), False)
    return truth.combine_chunks()


def live_count(ctx: DmlContext, row: Mapping[str, Any]) -> int:
    """Rows of the file not deleted by its deletion vector: from its index row, or (a file
    whose ``numRecords`` the log lacks) its Parquet footer."""
    records = row.get(fi.RECORD_COUNT)
    if records is None:
        # No columns asked: the reader takes the count from the footer alone.
        records = ctx.reader.read_batch(row, pa.schema([])).num_rows
    deletion = row.get(fi.DELETION) or {}
    return int(records) - int(deletion.get("cardinality") or 0)


def live_rows(ctx: DmlContext, files: pa.Table) -> int:
    """Live rows of every file of ``files`` (``live_count``, the footer read only for the
    files without a record count)."""
    return int(live_counts(ctx, files).sum())


def live_counts(ctx: DmlContext, files: pa.Table) -> np.ndarray:
    """``live_count`` of each file of ``files`` (int64), by Arrow compute over the index;
    only the files without a record count are read (their footers)."""
    records = files.column(fi.RECORD_COUNT)
    counts: np.ndarray = np.array(pc.fill_null(records, 0).to_numpy(), dtype=np.int64)
    if fi.DELETION in files.column_names:
        cardinality = pc.struct_field(files.column(fi.DELETION), fi.CARDINALITY)
        counts -= pc.fill_null(cardinality, 0).to_numpy().astype(np.int64)
    unknown = np.flatnonzero(pc.is_null(records).to_numpy(zero_copy_only=False))
    if unknown.size:
        rows = file_rows(files.take(pa.array(unknown)))
        counts[unknown] = [live_count(ctx, row) for row in rows]
    return counts


def update_rows(
    ctx: DmlContext, files: pa.Table, assignments: Mapping[str, Any], where: Condition
) -> ChangeSet:
    """Plan an UPDATE setting ``assignments`` (column -> SQL) on rows matching ``where``."""
    schema = ctx.layout.schema
    out = ChangeSet()
    for row, table, live, match in touched_files(ctx, files, where):
        before = table.filter(pa.array(match))
        after = apply_assignments(before, assignments, schema)
        _drop_rows(ctx, out, row, table, live, match)
        out.new_rows.append(after)
        out.updated += before.num_rows
        if ctx.cdf:
            out.changes.append(tagged(before, "update_preimage"))
            out.changes.append(tagged(after, "update_postimage"))
    return out


def apply_assignments(
    rows: pa.Table, assignments: Mapping[str, Any], schema: pa.Schema
) -> pa.Table:
    """``rows`` with each assigned column replaced by its value (SQL text, a tree or a
    Python literal: ``lakecore.expr.assign``).

    Raises ``SchemaError`` when a value does not go into its column (``cast_assigned``: a
    text into a number column, an integer that overflows) and ``InvalidArgumentError`` for a
    literal that does not convert exactly.
    """
    out = rows
    for name, value in assignments.items():
        f = schema.field(name)
        out = out.set_column(schema.get_field_index(name), f.name, assigned_values(value, f, rows))
    return out


def to_actions(ctx: DmlContext, out: ChangeSet, write_rows: Any) -> list[Action]:
    """Turn a ChangeSet into actions; ``write_rows(table) -> AddFiles`` writes new rows."""
    actions: list[Action] = []
    removed = [t for t in out.removed if t.num_rows]
    if removed:
        actions.append(RemoveFiles(_index_rows(ctx, removed)))
    if out.new_dvs:
        dv_rows = _index_rows(ctx, [d.row for d in out.new_dvs])
        counts = pa.array([d.record_count for d in out.new_dvs], pa.int64())
        deletions = pa.array([d.deletion for d in out.new_dvs], DELETION_TYPE)
        dv_rows = dv_rows.set_column(
            dv_rows.schema.get_field_index(fi.RECORD_COUNT), fi.RECORD_COUNT, counts
        )
        dv_rows = dv_rows.set_column(
            dv_rows.schema.get_field_index(fi.DELETION), fi.DELETION, deletions
        )
        dv_rows = index_bounds(dv_rows, ctx.string_prefix_length)
        dv_rows = dv_rows.append_column(
            pa.field(POSITIONS, POSITIONS_TYPE), _positions([d.positions for d in out.new_dvs])
        )
        actions.append(DeleteRows(dv_rows, owned=True))
    rows = [t for t in out.new_rows if t.num_rows]
    if rows:
        actions.append(write_rows(pa.concat_tables(rows, promote_options="default")))
    changes = [t for t in out.changes if t.num_rows]
    if changes:
        cdc_schema = pa.schema([*ctx.layout.schema, pa.field(CHANGE_TYPE, pa.string())])
        layout = FileLayout(
            cdc_schema,
            ctx.layout.partition_columns,
            ctx.layout.column_mapping_mode,
            ctx.layout.target_file_size,
            prefix="_change_data",
        )
        cdc = write_data_files(
            ctx.storage,
            layout,
            pa.concat_tables(changes, promote_options="default").cast(cdc_schema),
        )
        actions.append(AddChangeFiles(cdc, owned=True))
    return actions


def _index_rows(ctx: DmlContext, rows: list[pa.Table]) -> pa.Table:
    """Rows of ``Snapshot.files()`` as one table of the index's own column types (the
    ``FILE_COLUMNS`` and ``deletion``; a column a row lacks is null): typed stats and
    partition values stay typed and Arrow, no Delta encoding is added."""
    keep = [f for f in ctx.index_schema if f.name in fi.FILE_COLUMNS]
    schema = pa.schema([*keep, pa.field(fi.DELETION, DELETION_TYPE)])
    table = pa.concat_tables(rows, promote_options="permissive")
    n = table.num_rows
    columns = [
        table.column(f.name).cast(f.type) if f.name in table.column_names else pa.nulls(n, f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(columns, schema=schema)


def _positions(deleted: Sequence[np.ndarray]) -> pa.Array:
    # One list per file, built from the arrays without a per-position Python loop.
    offsets = np.zeros(len(deleted) + 1, dtype=np.int64)
    np.cumsum([len(d) for d in deleted], out=offsets[1:])
    values = np.concatenate(deleted) if deleted else np.zeros(0, np.uint64)
    return pa.LargeListArray.from_arrays(
        pa.array(offsets, pa.int64()), pa.array(values.astype(np.uint64), pa.uint64())
    )
