"""MERGE into a Hudi table, matched on the record key.

Hudi identifies records by key, so a merge must match on exactly the record key columns.
The clauses (several of each kind, conditions, not-matched-by-source) are evaluated by
``lakecore.planning.merge_eval`` per file slice; matched records are rewritten (log blocks or
new base files) or deleted, and unmatched source rows inserted.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import MergeConflictError, SchemaError, UnsupportedFeatureError
from lakecore.expr import tree as ex
from lakecore.expr.assign import assignment
from lakecore.model.data_input import cast_lossless
from lakecore.model.merge import MergeClauses, aliases_of, ordered_clauses
from lakecore.planning.merge_eval import MergeOn, merge_file, merge_inserts
from lakecore_hudi.write.changes import ChangeSet, SliceRows, deletes_of, route_rewritten
from lakecore_hudi.write.dml import keep_newer, rewritten
from lakecore_hudi.write.layout import WriteLayout
from lakecore_hudi.write.rows_in import conform, keyed, record_keys


def check_merge(on: Sequence[str], clauses: MergeClauses, layout: WriteLayout) -> None:
    """Raise ``UnsupportedFeatureError`` unless the merge can be expressed on Hudi keys: ``on``
    must be exactly the record key columns, equal to the same-named source columns, with no
    other conjunct (a source row whose key exists but fails another conjunct would be
    inserted as a second record with that key), no update may set a key column and an
    insert's key columns must be the source row's own (``source.k``)."""
    if sorted(on) != sorted(layout.key_fields):
        raise UnsupportedFeatureError(
            "hudi-merge-on-non-key",
            f"a Hudi merge must match on the record key {list(layout.key_fields)}, not {list(on)}",
        )
    if clauses.on_condition or (clauses.source_keys and tuple(clauses.source_keys) != tuple(on)):
        raise UnsupportedFeatureError(
            "hudi-merge-on-non-key",
            "a Hudi merge's on= must be only source.k = target.k for each record key column k",
        )
    sources = aliases_of(clauses)["source"]
    for clause in ordered_clauses(clauses):
        left_out = [k for k in layout.key_fields if k in clause.except_columns]
        if clause.action == "insert" and left_out:
            raise UnsupportedFeatureError(
                "hudi-merge-insert-key", f"a Hudi merge insert needs record key(s) {left_out}"
            )
        if clause.action == "insert" and clause.values is not None:
            # An inserted key other than the source row's own could be a key some slice
            # outside the merge's reads already holds: a second record with that key.
            for k in layout.key_fields:
                given = clause.values.get(k)
                names = {k, *(f"{a}.{k}" for a in sources)}
                node = assignment(given) if isinstance(given, str | ex.Expr) else None
                if not (isinstance(node, ex.Column) and node.name in names):
                    raise UnsupportedFeatureError(
                        "hudi-merge-insert-key",
                        f"a Hudi merge insert must set record key column {k!r} to the "
                        f"source's {k!r}",
                    )
        if clause.action == "update" and clause.values:
            keys = [c for c in clause.values if c in layout.key_fields]
            if keys:
                raise UnsupportedFeatureError(
                    "hudi-update-record-key", f"cannot update record key column(s) {keys}"
                )


def source_keys(source: pa.Table, layout: WriteLayout) -> pa.ChunkedArray:
    """The record keys of the source rows.

    Raises:
        SchemaError: a key column is missing.
        MergeConflictError: two source rows share a key (the error of every format for a
            target row matched by several source rows; a Hudi table cannot take two records
            of one key either, so the key need not be in the target).
    """
    keys = record_keys(source, layout)
    if pc.count_distinct(keys).as_py() != source.num_rows:
        raise MergeConflictError(
            "the merge source has several rows with the same key: a target row could match "
            "more than one source row (deduplicate the source)"
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
    """Plan the merge of ``source`` (from ``merge_source``) into the snapshot, with the
    clause semantics of ``lakecore.planning.merge_eval``.

    Only the ``candidates`` slices are read: they must include every slice that may hold one
    of the source's keys (``slices_for_keys``), every slice with a not-matched-by-source
    clause.
    """
    source_keys(source, layout)
    on = MergeOn(tuple(layout.key_fields), tuple(layout.key_fields))
    schema = layout.data_schema
    matched = np.zeros(source.num_rows, dtype=bool)
    changes = ChangeSet()
    for i in candidates:
        records = rows.records(i)
        outcome = merge_file(records, source, on, clauses, schema)
        matched[outcome.matched_source] = True
        if outcome.deleted.size:
            changes.add_deletes(i, deletes_of(records.take(pa.array(outcome.deleted))))
        if outcome.updated.size:
            before = records.take(pa.array(outcome.updated))
            after = rewritten(before, conform(outcome.after, schema), layout)
            newer = keep_newer(before, after, layout)
            route_rewritten(changes, i, before.filter(newer), after.filter(newer), rows.slices)
    for inserts in merge_inserts(source, matched, clauses, schema):
        changes.inserts.append(keyed(conform(inserts, schema), layout))
    return changes


def _cast(values: pa.ChunkedArray | pa.Array, f: pa.Field) -> pa.ChunkedArray | pa.Array:
    """Source values into the table's column, as an append takes them (lossless only)."""
    return cast_lossless(values, f.type, f.name)
