"""DELETE, UPDATE and OVERWRITE ... WHERE planned over a snapshot's merged file slices.

Predicates and SET values (SQL, trees or Python literals: ``lakecore.expr.assign``) are
evaluated with ``lakecore.expr.evaluate`` (the one front end and tree) over each
slice's live records (meta columns included). Rewritten records keep their stored
``_hoodie_record_key``; their partition path is recomputed only when their partition values
changed, so tables whose paths were rendered by another writer keep them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import ConstraintViolationError, SchemaError, UnsupportedFeatureError
from lakecore.expr.assign import assigned_values
from lakecore.expr.evaluate import evaluate_predicate
from lakecore_hudi.keys import PARTITION_PATH, RECORD_KEY
from lakecore_hudi.write.changes import (
    ChangeSet,
    SliceRows,
    deletes_of,
    loses_on_order,
    route_rewritten,
)
from lakecore_hudi.write.layout import WriteLayout
from lakecore_hudi.write.rows_in import KEY, PARTITION, conform, partition_paths


def matching(sql: str | None, records: pa.Table) -> pa.Array:
    """Boolean mask of the ``records`` matching ``sql`` (all when None; unknown = no match)."""
    if sql is None:
        return pa.array(np.ones(records.num_rows, dtype=bool))
    return pc.fill_null(evaluate_predicate(sql, records), False).combine_chunks()


def plan_delete(rows: SliceRows, where: str | None, candidates: Sequence[int]) -> ChangeSet:
    """Delete the records matching ``where`` from every slice holding some.

    Only the ``candidates`` slices are read: they must include every slice that may hold a
    matching record (``candidate_slices``).
    """
    changes = ChangeSet()
    for i in candidates:
        records = rows.records(i)
        mask = matching(where, records)
        if pc.any(mask).as_py():
            changes.add_deletes(i, deletes_of(records.filter(mask)))
    return changes


def rewritten(before: pa.Table, after: pa.Table, layout: WriteLayout) -> pa.Table:
    """Keyed rows for records ``before`` (file columns) now holding data ``after`` (data schema).

    The key stays the stored one; the partition path changes only where partition values did.
    """
    after = conform(after, layout.data_schema)
    path = before.column(PARTITION_PATH)
    if layout.partition_fields:
        old = partition_paths(conform(before, layout.data_schema), layout)
        new = partition_paths(after, layout)
        path = pc.if_else(pc.equal(old, new), path, new)
    return after.append_column(KEY, before.column(RECORD_KEY)).append_column(PARTITION, path)


def keep_newer(before: pa.Table, after: pa.Table, layout: WriteLayout) -> pa.Array:
    """Mask of the rewritten rows that win over their old records under event-time ordering
    (every row when the table orders by commit time)."""
    field = layout.precombine_field
    if not field or layout.config.record_merge_mode != "EVENT_TIME_ORDERING":
        return pa.array(np.ones(after.num_rows, dtype=bool))
    existing = before.column(field).cast(after.schema.field(field).type)
    return pc.invert(loses_on_order(after.column(field), existing))


def check_assignments(assignments: Mapping[str, Any], layout: WriteLayout, table: pa.Table) -> None:
    """Validate UPDATE assignments before any data is read.

    Raises:
        SchemaError: an unknown column, or SQL naming unknown columns.
        UnsupportedFeatureError: a record key column is assigned (records are keyed by it).
    """
    unknown = [c for c in assignments if layout.data_schema.get_field_index(c) < 0]
    if unknown:
        raise SchemaError(f"cannot update unknown column(s) {unknown}")
    keys = [c for c in assignments if c in layout.key_fields]
    if keys:
        raise UnsupportedFeatureError(
            "hudi-update-record-key",
            f"cannot update record key column(s) {keys}: delete and insert the rows instead",
        )
    for name, value in assignments.items():
        assigned_values(value, layout.data_schema.field(name), table)


def assigned(records: pa.Table, assignments: Mapping[str, Any], layout: WriteLayout) -> pa.Table:
    """The data columns of ``records`` with ``assignments`` (column -> SQL text, tree or
    Python literal; see ``lakecore.expr.assign``) applied."""
    data = conform(records, layout.data_schema)
    for name, value in assignments.items():
        f = layout.data_schema.field(name)
        data = data.set_column(
            layout.data_schema.get_field_index(name), f, assigned_values(value, f, records)
        )
    return data


def plan_update(
    rows: SliceRows,
    layout: WriteLayout,
    assignments: Mapping[str, Any],
    where: str | None,
    candidates: Sequence[int],
) -> ChangeSet:
    """Set columns on the records matching ``where`` (rows whose partition values change move).

    Only the ``candidates`` slices are read (a superset of those holding matching records).
    """
    changes = ChangeSet()
    for i in candidates:
        records = rows.records(i)
        mask = matching(where, records)
        if not pc.any(mask).as_py():
            continue
        before = records.filter(mask)
        after = rewritten(before, assigned(before, assignments, layout), layout)
        newer = keep_newer(before, after, layout)
        route_rewritten(changes, i, before.filter(newer), after.filter(newer), rows.slices)
    return changes


def plan_overwrite(
    rows: SliceRows,
    layout: WriteLayout,
    data: pa.Table,
    where: str | None,
    candidates: Sequence[int],
) -> tuple[ChangeSet, set[int]]:
    """Replace the records matching ``where`` (all when None) by keyed ``data``.

    With ``where``, only the ``candidates`` slices are read (a superset of those holding
    matching records); without, every slice is replaced unread.

    Returns the change set (only inserts: new file groups) and the slices it replaces: every
    slice holding a matching record. Records of those slices that do not match are written
    again into the new file groups.

    Raises:
        ConstraintViolationError: a row of ``data`` does not match ``where``.
    """
    if where is not None:
        outside = pc.invert(matching(where, data))
        if pc.any(outside).as_py():
            raise ConstraintViolationError(
                f"{pc.sum(outside.cast(pa.int64())).as_py()} row(s) of the data do not match "
                f"the overwrite predicate {where!r}"
            )
    changes = ChangeSet(inserts=[data] if data.num_rows else [])
    if where is None:
        return changes, set(range(len(rows.slices)))
    replaced: set[int] = set()
    for i in candidates:
        records = rows.records(i)
        mask = matching(where, records)
        if not pc.any(mask).as_py():
            continue
        replaced.add(i)
        kept = records.filter(pc.invert(mask))
        if kept.num_rows:
            data_columns = conform(kept, layout.data_schema)
            changes.inserts.append(
                data_columns.append_column(KEY, kept.column(RECORD_KEY)).append_column(
                    PARTITION, kept.column(PARTITION_PATH)
                )
            )
    return changes, replaced
