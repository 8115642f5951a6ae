"""MERGE (upsert) of a source into a Delta table, matched on key columns.

The caller passes the candidate target files (``merge_candidates``: the files whose key
min/max cover the source's key range). They are read whole (row positions kept), joined with
the source on the keys, and the matched rows are updated or deleted the same way DELETE/UPDATE
change rows (rewrite or deletion vector); unmatched source rows are inserted. In
``when_matched_update`` SQL, ``source.x`` / ``s.x`` names the source's column and ``target.x``
/ ``t.x`` (or a bare name) the target's.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakecore.expr.assign import assigned_values
from lakecore.expr.evaluate import evaluate_predicate
from lakecore.model.data_input import cast_lossless
from lakecore.model.merge import MergeClauses, check_keys, qualified_columns
from lakecore_delta.write.dml import ChangeSet, DmlContext, _drop_rows, tagged

ROW = "__lakecore_row"


def merge_rows(
    ctx: DmlContext, files: pa.Table, source: pa.Table, keys: Sequence[str], clauses: MergeClauses
) -> tuple[ChangeSet, pa.Table]:
    """Plan the matched-row changes over ``files``; return them and the source rows to insert.

    ``files`` must include every file that may hold a row matching a source row's keys.
    """
    schema = ctx.layout.schema
    check_keys(source, schema, keys)
    src = source.append_column(ROW, pa.array(np.arange(source.num_rows), pa.int64()))
    matched_source = np.zeros(source.num_rows, dtype=bool)
    out = ChangeSet()
    for row in files.to_pylist():
        batch, deleted = ctx.reader.read_physical(row, schema)
        table = pa.Table.from_batches([batch], schema=schema)
        n = table.num_rows
        live = np.ones(n, dtype=bool)
        if deleted is not None and deleted.size:
            live[deleted.astype(np.int64)] = False
        positions = pa.array(np.arange(n), pa.int64())
        keyed = table.select(list(keys)).append_column("__target_row", positions)
        joined = keyed.filter(pa.array(live)).join(
            src.select([*keys, ROW]), list(keys), join_type="inner"
        )
        if joined.num_rows == 0:
            continue
        t_rows = joined.column("__target_row").to_numpy()
        s_rows = joined.column(ROW).to_numpy()
        before = table.take(pa.array(t_rows))
        src_rows = source.take(pa.array(s_rows))
        if clauses.matched_condition:
            ok = pc.fill_null(
                evaluate_predicate(clauses.matched_condition, qualified_columns(before, src_rows)),
                False,
            )
            keep = ok.to_numpy(zero_copy_only=False)
            t_rows, s_rows = t_rows[keep], s_rows[keep]
            before, src_rows = before.filter(ok), src_rows.filter(ok)
        matched_source[s_rows] = True
        if len(t_rows) == 0:
            continue
        # The new values first: a value that does not fit raises before a DV file is written.
        after = None if clauses.matched_delete else _updated(before, src_rows, schema, clauses)
        gone = np.zeros(n, dtype=bool)
        gone[t_rows] = True
        _drop_rows(ctx, out, row, table, live, gone)
        out.rows_changed += len(t_rows)
        if after is None:
            if ctx.cdf:
                out.changes.append(tagged(before, "delete"))
            continue
        out.new_rows.append(after)
        if ctx.cdf:
            out.changes.append(tagged(before, "update_preimage"))
            out.changes.append(tagged(after, "update_postimage"))
    inserts = source.filter(pa.array(~matched_source))
    if clauses.not_matched_condition and inserts.num_rows:
        ok = pc.fill_null(
            evaluate_predicate(clauses.not_matched_condition, qualified_columns(inserts, inserts)),
            False,
        )
        inserts = inserts.filter(ok)
    return out, inserts


def _updated(
    before: pa.Table, src_rows: pa.Table, schema: pa.Schema, clauses: MergeClauses
) -> pa.Table:
    after = before
    if clauses.matched_update_all:
        for f in schema:
            if src_rows.schema.get_field_index(f.name) >= 0:
                i = schema.get_field_index(f.name)
                value = cast_lossless(src_rows.column(f.name), f.type, f.name)
                after = after.set_column(i, f.name, value)
        return after
    both = qualified_columns(before, src_rows)
    for name, sql in (clauses.matched_update or {}).items():
        f = schema.field(name)
        value = assigned_values(sql, f, both)
        after = after.set_column(schema.get_field_index(name), f.name, value)
    return after
