"""MERGE (upsert) of a source into a Delta table, matched on key columns.

The caller passes the candidate target files (``merge_candidates``: the files whose key
min/max cover the source's key range). They are read whole (row positions kept), and
``lakecore.planning.merge_eval.merge_file`` says which rows the clauses update or delete;
they change the same way DELETE/UPDATE change rows (rewrite or deletion vector), and
``merge_inserts`` gives the source rows to insert.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lakecore.model.merge import MergeClauses
from lakecore.planning.merge_eval import MergeOn, merge_file, merge_inserts
from lakecore_delta.write.dml import (
    ChangeSet,
    DmlContext,
    _drop_rows,
    file_rows,
    read_file,
    tagged,
)


def merge_rows(
    ctx: DmlContext, files: pa.Table, source: pa.Table, on: MergeOn, clauses: MergeClauses
) -> tuple[ChangeSet, list[pa.Table]]:
    """Plan the target-row changes over ``files``; return them and the rows to insert
    (``merge_inserts``: one table per insert clause, to conform as user data).

    ``files`` must include every file that may hold a row matching a source row's keys
    (``merge_files``: every file with a not-matched-by-source clause). The clause semantics
    are ``lakecore.planning.merge_eval``'s.
    """
    schema = ctx.layout.schema
    matched_source = np.zeros(source.num_rows, dtype=bool)
    out = ChangeSet()
    for at, row in enumerate(file_rows(files)):
        table, live = read_file(ctx, row)
        n = table.num_rows
        positions = np.flatnonzero(live)
        # The new values are computed first: a value that does not fit raises before a DV
        # file is written.
        rows = table if len(positions) == n else table.take(pa.array(positions))
        outcome = merge_file(rows, source, on, clauses, schema)
        matched_source[outcome.matched_source] = True
        if outcome.changed == 0:
            continue
        gone = np.zeros(n, dtype=bool)
        gone[positions[outcome.updated]] = True
        gone[positions[outcome.deleted]] = True
        _drop_rows(ctx, out, files.slice(at, 1), table, live, gone)
        out.updated += int(outcome.updated.size)
        out.deleted += int(outcome.deleted.size)
        if outcome.updated.size:
            out.new_rows.append(outcome.after)
        if ctx.cdf:
            if outcome.deleted.size:
                out.changes.append(
                    tagged(table.take(pa.array(positions[outcome.deleted])), "delete")
                )
            if outcome.updated.size:
                before = table.take(pa.array(positions[outcome.updated]))
                out.changes.append(tagged(before, "update_preimage"))
                out.changes.append(tagged(outcome.after, "update_postimage"))
    return out, merge_inserts(source, matched_source, clauses, schema)
