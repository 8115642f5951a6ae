"""MERGE into a Hudi table, matched on the record key.

Hudi identifies records by key, so a merge must match on exactly the record key columns.
Matched records are updated (from every source column, or by SQL assignments over
``source.x`` / ``s.x`` and ``target.x`` / ``t.x``) or deleted; unmatched source rows are
inserted. Conditions are SQL over the same names.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import ConstraintViolationError, SchemaError, UnsupportedFeatureError
from lakecore.expr.assign import assigned_values
from lakecore.expr.evaluate import evaluate_predicate
from lakecore.model.data_input import cast_lossless
from lakecore.model.merge import MergeClauses, qualified_columns
from lakecore_hudi.keys import RECORD_KEY
from lakecore_hudi.write.changes import ChangeSet, SliceRows, deletes_of, route_rewritten
from lakecore_hudi.write.dml import keep_newer, rewritten
from lakecore_hudi.write.layout import WriteLayout
from lakecore_hudi.write.rows_in import KEY, conform, keyed, record_keys

_ROW = "__lakecore_source_row"
_TARGET = "__lakecore_target_row"


def check_merge(on: Sequence[str], clauses: MergeClauses, layout: WriteLayout) -> None:
    """Raise ``UnsupportedFeatureError`` unless the merge can be expressed on Hudi keys."""
    if sorted(on) != sorted(layout.key_fields):
        raise UnsupportedFeatureError(
            "hudi-merge-on-non-key",
            f"a Hudi merge must match on the record key {list(layout.key_fields)}, not {list(on)}",
        )
    if clauses.matched_update:
        keys = [c for c in clauses.matched_update if c in layout.key_fields]
        if keys:
            raise UnsupportedFeatureError(
                "hudi-update-record-key", f"cannot update record key column(s) {keys}"
            )


def source_keys(source: pa.Table, layout: WriteLayout) -> pa.ChunkedArray:
    """The record keys of the source rows.

    Raises:
        SchemaError: a key column is missing.
        ConstraintViolationError: two source rows share a key.
    """
    keys = record_keys(source, layout)
    if pc.count_distinct(keys).as_py() != source.num_rows:
        raise ConstraintViolationError(
            "the merge source has several rows with the same key: a target row could match "
            "more than one source row"
        )
    return keys


def merge_source(source: pa.Table, layout: WriteLayout) -> pa.Table:
    """``source`` (user columns) cast into the table's column types.

    Raises:
        SchemaError: a column is not in the table, or its values do not convert losslessly.
    """
    unknown = [c for c in source.column_names if layout.data_schema.get_field_index(c) < 0]
    if unknown:
        raise SchemaError(f"source column(s) {unknown} are not in the table schema")
    schema = layout.data_schema
    return pa.table({c: _cast(source.column(c), schema.field(c)) for c in source.column_names})


def plan_merge(
    rows: SliceRows,
    layout: WriteLayout,
    source: pa.Table,
    clauses: MergeClauses,
    candidates: Sequence[int],
) -> ChangeSet:
    """Plan the merge of ``source`` (from ``merge_source``) into the snapshot.

    Only the ``candidates`` slices are read: they must include every slice that may hold one
    of the source's keys (``slices_for_keys``).
    """
    keys = source_keys(source, layout)
    probe = pa.table({KEY: keys, _ROW: pa.array(np.arange(source.num_rows, dtype=np.int64))})
    matched = np.zeros(source.num_rows, dtype=bool)
    changes = ChangeSet()
    for i in candidates:
        records = rows.records(i)
        target = pa.table(
            {
                KEY: records.column(RECORD_KEY),
                _TARGET: pa.array(np.arange(records.num_rows, dtype=np.int64)),
            }
        )
        joined = target.join(probe, KEY, join_type="inner")
        if joined.num_rows == 0:
            continue
        before = records.take(joined.column(_TARGET))
        src = source.take(joined.column(_ROW))
        s_rows = joined.column(_ROW).to_numpy()
        if clauses.matched_condition:
            ok = pc.fill_null(
                evaluate_predicate(clauses.matched_condition, qualified_columns(before, src)), False
            )
            s_rows = s_rows[ok.to_numpy(zero_copy_only=False)]
            before, src = before.filter(ok), src.filter(ok)
        matched[s_rows] = True
        if before.num_rows == 0:
            continue
        if clauses.matched_delete:
            changes.add_deletes(i, deletes_of(before))
        elif clauses.matched_update_all or clauses.matched_update is not None:
            after = rewritten(before, _updated(before, src, layout, clauses), layout)
            newer = keep_newer(before, after, layout)
            route_rewritten(changes, i, before.filter(newer), after.filter(newer), rows.slices)
    if clauses.insert_all:
        inserts = source.filter(pa.array(~matched))
        if clauses.not_matched_condition and inserts.num_rows:
            ok = evaluate_predicate(
                clauses.not_matched_condition, qualified_columns(inserts, inserts)
            )
            inserts = inserts.filter(pc.fill_null(ok, False))
        if inserts.num_rows:
            changes.inserts.append(keyed(conform(inserts, layout.data_schema), layout))
    return changes


def _updated(
    before: pa.Table, src: pa.Table, layout: WriteLayout, clauses: MergeClauses
) -> pa.Table:
    """The data columns of matched records after the WHEN MATCHED UPDATE clause."""
    after = conform(before, layout.data_schema)
    schema = layout.data_schema
    if clauses.matched_update_all:
        for name in src.column_names:
            f = schema.field(name)
            after = after.set_column(schema.get_field_index(name), f, _cast(src.column(name), f))
        return after
    both = qualified_columns(before, src)
    for name, sql in (clauses.matched_update or {}).items():
        if schema.get_field_index(name) < 0:
            raise SchemaError(f"cannot update unknown column {name!r}")
        f = schema.field(name)
        value = assigned_values(sql, f, both)
        after = after.set_column(schema.get_field_index(name), f, value)
    return after


def _cast(values: pa.ChunkedArray | pa.Array, f: pa.Field) -> pa.ChunkedArray | pa.Array:
    """Source values into the table's column, as an append takes them (lossless only)."""
    return cast_lossless(values, f.type, f.name)
