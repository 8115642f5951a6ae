"""MERGE evaluation shared by every format: ``on`` parsing, clause order, per-file outcomes.

A format's ``FormatWriter.merge`` reads its candidate files (``merge_files``) and hands each
file's live rows to ``merge_file``, which says which target rows the WHEN MATCHED / WHEN NOT
MATCHED BY SOURCE clauses update (with their new values) or delete, and which source rows the
``on`` matched; after the last file ``merge_inserts`` gives the rows the WHEN NOT MATCHED
clauses insert. The format only turns those into its own actions (rewrites, deletion
vectors, log blocks, fragments), so every format has the same MERGE semantics:

- clauses of one kind are tried in order and a row takes the first whose condition is TRUE
  (NULL counts as false); rows no clause takes are left alone (copied);
- "matched" is decided by ``on`` alone (its key equalities and its other conjuncts), never by
  a clause's condition: a source row matched whose clause conditions all fail is not inserted;
- a target row that several source rows would update or delete (the ``on`` matches them and
  a WHEN MATCHED clause takes each pair) raises ``MergeConflictError``, as deltalake and
  Spark refuse it (which update wins would be undefined); duplicate source keys are
  otherwise fine (unmatched ones are all inserted).

``on`` is either key column names (a list, or a string that is a bare column name, e.g.
``"id"``) or an SQL predicate over ``<source_alias>.x`` / ``<target_alias>.x`` (a string with
any operator). The predicate's top-level ``source.a = target.b`` conjuncts are the join keys
(what the planner prunes files with); its other conjuncts are evaluated on each matched pair.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import MergeConflictError, PredicateError, SchemaError
from lakecore.expr import tree as ex
from lakecore.expr.assign import assigned_values
from lakecore.expr.evaluate import evaluate_predicate
from lakecore.expr.sql import parse_expression, parse_sql
from lakecore.model.data_input import cast_lossless
from lakecore.model.merge import (
    MATCHED,
    NOT_MATCHED,
    NOT_MATCHED_BY_SOURCE,
    MergeClause,
    MergeClauses,
    aliases_of,
    ordered_clauses,
    qualified_columns,
    reads_whole_table,
)
from lakecore.planning.candidates import merge_candidates
from lakecore.planning.tasks import ScanContext

_T = "__lakecore_merge_target_row"
_S = "__lakecore_merge_source_row"
_K = "__lakecore_merge_key"


@dataclass(frozen=True, slots=True)
class MergeOn:
    """A parsed ``on``: target key columns, the source column each equals, other conjuncts."""

    target_keys: tuple[str, ...]
    source_keys: tuple[str, ...]
    condition: str | None = None


def parse_on(on: str | Sequence[str], source_alias: str, target_alias: str) -> MergeOn:
    """Read ``on``: a list of key column names, a string that is one column name (a bare or
    backtick-quoted name: no operator), or an SQL predicate naming ``source_alias.x`` and
    ``target_alias.x`` (with the default aliases also ``s.x`` / ``t.x``).

    Raises ``PredicateError`` for text that does not parse, ``SchemaError`` for an empty key
    list.
    """
    if not isinstance(on, str):
        keys = tuple(on)
        if not keys:
            raise SchemaError("a merge needs at least one key column")
        return MergeOn(keys, keys)
    try:
        parsed = parse_expression(on)
    except PredicateError:
        parsed = None
    if isinstance(parsed, ex.Column):
        return MergeOn((parsed.name,), (parsed.name,))
    predicate = parse_sql(on)
    clauses = MergeClauses(source_alias=source_alias, target_alias=target_alias)
    aliases = aliases_of(clauses)
    conjuncts = predicate.operands if isinstance(predicate, ex.And) else (predicate,)
    target_keys: list[str] = []
    source_keys: list[str] = []
    rest: list[ex.Predicate] = []
    for term in conjuncts:
        pair = _key_pair(term, aliases)
        if pair is None:
            rest.append(term)
        else:
            target_keys.append(pair[0])
            source_keys.append(pair[1])
    condition = str(ex.and_(*rest)) if rest else None
    return MergeOn(tuple(target_keys), tuple(source_keys), condition)


def _key_pair(term: ex.Predicate, aliases: dict[str, tuple[str, ...]]) -> tuple[str, str] | None:
    """``(target column, source column)`` when ``term`` is ``source.a = target.b``."""
    if not (isinstance(term, ex.Compare) and term.op == "="):
        return None
    sides = []
    for node in (term.left, term.right):
        if not isinstance(node, ex.Column):
            return None
        sides.append(_side_of(node.name, aliases))
    if None in sides:
        return None
    (s1, n1), (s2, n2) = sides  # type: ignore[misc]
    if {s1, s2} != {"source", "target"}:
        return None
    return (n1, n2) if s1 == "target" else (n2, n1)


def _side_of(name: str, aliases: dict[str, tuple[str, ...]]) -> tuple[str, str] | None:
    for side, names in aliases.items():
        for alias in names:
            if name.startswith(alias + "."):
                return side, name[len(alias) + 1 :]
    return None


def with_on(clauses: MergeClauses, on: MergeOn) -> MergeClauses:
    """``clauses`` carrying ``on``'s non-key conjuncts and source key names."""
    return replace(clauses, on_condition=on.condition, source_keys=on.source_keys)


def check_merge(source: pa.Table, schema: pa.Schema, on: MergeOn, clauses: MergeClauses) -> None:
    """Check a MERGE before any file is read.

    Raises ``SchemaError`` for a key missing from its side, an assignment to an unknown
    column or a value that does not type-check, ``PredicateError`` for a condition that does
    not parse or names unknown columns. Two source rows with the same key are allowed (as in
    deltalake) unless they match the same target row: ``merge_file`` raises
    ``MergeConflictError`` then.
    """
    for t, s in zip(on.target_keys, on.source_keys, strict=True):
        if schema.get_field_index(t) < 0:
            raise SchemaError(f"merge key {t!r} must be a column of the target")
        if source.schema.get_field_index(s) < 0:
            raise SchemaError(f"merge key {s!r} must be a column of the source")
    empty_t = schema.empty_table()
    empty_s = source.slice(0, 0)
    both = qualified_columns(empty_t, empty_s, clauses)
    if on.condition:
        evaluate_predicate(on.condition, both)
    for clause in ordered_clauses(clauses):
        unknown = [c for c in clause.except_columns if source.schema.get_field_index(c) < 0]
        if unknown:
            raise SchemaError(f"except_cols {unknown} are not columns of the merge source")
        rows = both if clause.kind != NOT_MATCHED else _insert_scope(empty_s, schema, clauses)
        if clause.condition:
            evaluate_predicate(clause.condition, rows)
        for name, value in (clause.values or {}).items():
            if schema.get_field_index(name) < 0:
                raise SchemaError(f"merge cannot set unknown column {name!r}")
            assigned_values(value, schema.field(name), rows)


def merge_files(
    snapshot_files: pa.Table,
    source: pa.Table,
    on: MergeOn,
    clauses: MergeClauses,
    schema: pa.Schema,
    context: ScanContext,
) -> pa.Table:
    """The files a MERGE must read: every file when some clause is ``not_matched_by_source``
    or ``on`` has no key equality, else the planner's candidates for the source's key range
    (``merge_candidates``)."""
    if reads_whole_table(clauses) or not on.target_keys:
        return snapshot_files
    return merge_candidates(
        snapshot_files, keyed_source(source, on), on.target_keys, schema, context
    )


def whole_table(on: MergeOn, clauses: MergeClauses) -> bool:
    """Whether ``merge_files`` reads every file (the CommitInfo's ``read_whole_table``)."""
    return reads_whole_table(clauses) or not on.target_keys


def keyed_source(source: pa.Table, on: MergeOn) -> pa.Table:
    """The source's key columns under the target's key names (what pruning looks at)."""
    return pa.table(
        {t: source.column(s) for t, s in zip(on.target_keys, on.source_keys, strict=True)}
    )


@dataclass(frozen=True, slots=True)
class FileOutcome:
    """What a MERGE does to one file's rows (indices into the ``target`` given to
    ``merge_file``)."""

    updated: np.ndarray
    """Target rows updated (by a matched or a not-matched-by-source clause)."""
    after: pa.Table
    """Their new values (the schema's columns), aligned with ``updated``."""
    deleted: np.ndarray
    """Target rows deleted."""
    matched_source: np.ndarray
    """Source rows ``on`` matched with some row of this file."""

    @property
    def changed(self) -> int:
        return int(len(self.updated) + len(self.deleted))


def merge_file(
    target: pa.Table, source: pa.Table, on: MergeOn, clauses: MergeClauses, schema: pa.Schema
) -> FileOutcome:
    """Evaluate the WHEN MATCHED and WHEN NOT MATCHED BY SOURCE clauses over ``target`` (one
    file's live rows, holding ``schema``'s columns) against the whole ``source``.

    Raises ``MergeConflictError`` when several source rows would update or delete one target
    row, and the assignment errors of ``lakecore.expr.assign`` for values that do not fit.
    """
    ordered = ordered_clauses(clauses)
    t_rows, s_rows = _join(target, source, on)
    if clauses.on_condition and len(t_rows):
        both = qualified_columns(target.take(t_rows), source.take(s_rows), clauses)
        ok = _truth(evaluate_predicate(clauses.on_condition, both))
        t_rows, s_rows = t_rows[ok], s_rows[ok]
    updated: list[np.ndarray] = []
    after: list[pa.Table] = []
    deleted: list[np.ndarray] = []
    matched = [c for c in ordered if c.kind == MATCHED]
    if matched and len(t_rows):
        before, src = target.take(t_rows), source.take(s_rows)
        both = qualified_columns(before, src, clauses)
        choices = _first_clause(matched, both)
        taken = np.zeros(len(t_rows), dtype=bool)
        for _, chosen in choices:
            taken |= chosen
        # As deltalake and Spark: an error only when two source rows would both update or
        # delete one target row (pairs no clause takes change nothing).
        if len(np.unique(t_rows[taken])) != int(taken.sum()):
            raise MergeConflictError(
                "several source rows match the same key of one target row: the merge cannot "
                "decide which one updates or deletes it (deduplicate the source or narrow on=)"
            )
        for clause, chosen in choices:
            if not chosen.any():
                continue
            if clause.action == "delete":
                deleted.append(t_rows[chosen])
                continue
            sel = pa.array(chosen)
            updated.append(t_rows[chosen])
            after.append(_updated(before.filter(sel), src.filter(sel), schema, clause, clauses))
    by_source = [c for c in ordered if c.kind == NOT_MATCHED_BY_SOURCE]
    if by_source:
        lonely = np.setdiff1d(np.arange(target.num_rows), t_rows)
        if len(lonely):
            before = target.take(lonely)
            nulls = _nulls(source.schema, len(lonely))
            both = qualified_columns(before, nulls, clauses)
            for clause, chosen in _first_clause(by_source, both):
                if not chosen.any():
                    continue
                if clause.action == "delete":
                    deleted.append(lonely[chosen])
                    continue
                sel = pa.array(chosen)
                updated.append(lonely[chosen])
                after.append(
                    _updated(before.filter(sel), nulls.filter(sel), schema, clause, clauses)
                )
    names = list(schema.names)
    return FileOutcome(
        np.concatenate(updated) if updated else np.zeros(0, np.int64),
        pa.concat_tables(after) if after else schema.empty_table().select(names),
        np.concatenate(deleted) if deleted else np.zeros(0, np.int64),
        np.unique(s_rows),
    )


def merge_inserts(
    source: pa.Table, matched: np.ndarray, clauses: MergeClauses, schema: pa.Schema
) -> list[pa.Table]:
    """The rows the WHEN NOT MATCHED clauses insert: source rows not in ``matched`` (a boolean
    mask over ``source``), each by the first insert clause whose condition holds.

    One table per clause that inserts rows, holding only the columns that clause gives (an
    insert-all: the source's columns of ``schema``), typed as ``schema``'s: the format fills
    the rest as an append does (NULL, or a Delta generated column's value).
    """
    inserting = [c for c in ordered_clauses(clauses) if c.kind == NOT_MATCHED]
    lonely = source.filter(pa.array(~matched))
    if not inserting or lonely.num_rows == 0:
        return []
    scope = _insert_scope(lonely, schema, clauses)
    out: list[pa.Table] = []
    for clause, chosen in _first_clause(inserting, scope):
        if not chosen.any():
            continue
        sel = pa.array(chosen)
        rows, rows_scope = lonely.filter(sel), scope.filter(sel)
        fields, columns = [], []
        for f in schema:
            if clause.values is None:
                if rows.schema.get_field_index(f.name) < 0 or f.name in clause.except_columns:
                    continue
                columns.append(cast_lossless(rows.column(f.name), f.type, f.name))
            elif f.name in clause.values:
                columns.append(assigned_values(clause.values[f.name], f, rows_scope))
            else:
                continue
            fields.append(f)
        out.append(pa.Table.from_arrays(columns, schema=pa.schema(fields)))
    return out


def _insert_scope(source: pa.Table, schema: pa.Schema, clauses: MergeClauses) -> pa.Table:
    """What an insert clause's SQL sees: the source's columns qualified, the target's as NULL,
    and bare names as the source's (no target row exists)."""
    both = qualified_columns(_nulls(schema, source.num_rows), source, clauses)
    for name in source.column_names:
        i = both.schema.get_field_index(name)
        if i >= 0:
            both = both.set_column(i, name, source.column(name))
        else:
            both = both.append_column(name, source.column(name))
    return both


def _join(target: pa.Table, source: pa.Table, on: MergeOn) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs (target row, source row) whose keys are equal (SQL: NULL matches nothing)."""
    n_t, n_s = target.num_rows, source.num_rows
    if n_t == 0 or n_s == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if not on.target_keys:
        # No key equality: every pair is a candidate (the other conjuncts decide).
        return np.repeat(np.arange(n_t), n_s), np.tile(np.arange(n_s), n_t)
    left = {f"{_K}{i}": target.column(k) for i, k in enumerate(on.target_keys)}
    right = {f"{_K}{i}": source.column(k) for i, k in enumerate(on.source_keys)}
    keys = list(left)
    lt = pa.table({**left, _T: pa.array(np.arange(n_t), pa.int64())})
    rt = pa.table({**right, _S: pa.array(np.arange(n_s), pa.int64())})
    joined = lt.join(rt, keys, join_type="inner")
    t_rows = joined.column(_T).to_numpy()
    s_rows = joined.column(_S).to_numpy()
    order = np.lexsort((s_rows, t_rows))
    return t_rows[order], s_rows[order]


def _first_clause(
    clauses: Sequence[MergeClause], rows: pa.Table
) -> list[tuple[MergeClause, np.ndarray]]:
    """For each clause, the rows it takes: those its condition holds for and no earlier
    clause took."""
    free = np.ones(rows.num_rows, dtype=bool)
    out = []
    for clause in clauses:
        if clause.condition:
            holds = _truth(evaluate_predicate(clause.condition, rows))
        else:
            holds = np.ones(rows.num_rows, dtype=bool)
        chosen = free & holds
        free &= ~chosen
        out.append((clause, chosen))
    return out


def _truth(values: pa.ChunkedArray | pa.Array) -> np.ndarray:
    return np.asarray(pc.fill_null(values, False).to_numpy(zero_copy_only=False), dtype=bool)


def _nulls(schema: pa.Schema, n: int) -> pa.Table:
    return pa.table(
        {f.name: pa.nulls(n, f.type) for f in schema},
        schema=pa.schema([f.with_nullable(True) for f in schema]),
    )


def _updated(
    before: pa.Table,
    src: pa.Table,
    schema: pa.Schema,
    clause: MergeClause,
    clauses: MergeClauses,
) -> pa.Table:
    """``before`` (target rows) after ``clause``'s update, as ``schema``'s columns."""
    after = before.select(list(schema.names))
    if clause.values is None:
        for f in schema:
            if f.name in clause.except_columns:
                continue
            if src.schema.get_field_index(f.name) >= 0:
                value = cast_lossless(src.column(f.name), f.type, f.name)
                after = after.set_column(schema.get_field_index(f.name), f, value)
        return after
    both = qualified_columns(before, src, clauses)
    for name, value in clause.values.items():
        if schema.get_field_index(name) < 0:
            raise SchemaError(f"merge cannot set unknown column {name!r}")
        f = schema.field(name)
        after = after.set_column(schema.get_field_index(name), f, assigned_values(value, f, both))
    return after


def merge_on(on: Sequence[str], clauses: MergeClauses) -> MergeOn:
    """The ``MergeOn`` a ``FormatWriter.merge`` was given: target keys ``on`` and, from
    ``clauses`` (``with_on``), the source key names and the non-key conjuncts."""
    keys = tuple(on)
    return MergeOn(keys, clauses.source_keys or keys, clauses.on_condition)


def merge_parameters(on: MergeOn, clauses: MergeClauses) -> dict[str, str]:
    """The MERGE's clauses as the ``operationParameters`` deltalake and Spark record:
    ``mergePredicate`` (``on`` as SQL) and, per kind, a JSON list of
    ``{"actionType": ..., "predicate": ...}`` (no ``predicate`` for a clause without one)."""
    import json

    target, source = clauses.target_alias, clauses.source_alias
    terms = [
        f"{target}.{ex.sql_name(t)} = {source}.{ex.sql_name(s)}"
        for t, s in zip(on.target_keys, on.source_keys, strict=True)
    ]
    if on.condition:
        terms.append(on.condition)
    out = {"mergePredicate": " AND ".join(terms)}
    names = {
        MATCHED: "matchedPredicates",
        NOT_MATCHED: "notMatchedPredicates",
        NOT_MATCHED_BY_SOURCE: "notMatchedBySourcePredicates",
    }
    for kind, name in names.items():
        listed = []
        for c in ordered_clauses(clauses):
            if c.kind == kind:
                entry = {"actionType": c.action}
                if c.condition:
                    entry["predicate"] = c.condition
                listed.append(entry)
        out[name] = json.dumps(listed, separators=(",", ":"))
    return out
