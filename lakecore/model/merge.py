"""The clauses of a MERGE, as data (built by ``Table.merge``, executed by a format)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import ConstraintViolationError, InvalidArgumentError, SchemaError

MATCHED = "matched"
NOT_MATCHED = "not_matched"
NOT_MATCHED_BY_SOURCE = "not_matched_by_source"


@dataclass(frozen=True, slots=True)
class MergeClause:
    """One WHEN clause of a MERGE.

    ``kind`` is ``"matched"`` (target rows the ``on`` matches with a source row),
    ``"not_matched"`` (source rows matching no target row) or ``"not_matched_by_source"``
    (target rows matching no source row); ``action`` is ``"update"``, ``"delete"`` or (for
    ``not_matched`` only) ``"insert"``. ``values``: column -> SQL text, tree or Python literal
    (``lakecore.expr.assign``); None for an update means every column the source has (update
    all) and for an insert every source column by name (insert all). ``condition``: SQL over
    the aliased columns; the clause applies only to rows where it is TRUE.
    """

    kind: str
    action: str
    values: Mapping[str, Any] | None = None
    condition: str | None = None
    except_columns: tuple[str, ...] = ()
    """Update all / insert all: source columns left out (deltalake's ``except_cols``)."""


@dataclass(frozen=True, slots=True)
class MergeClauses:
    """The WHEN clauses of a MERGE and how its SQL names the two sides.

    ``clauses`` are evaluated in order within each kind: a row takes the first clause of its
    kind whose condition holds (as Delta/Spark MERGE). The legacy single-clause fields below
    are still read when ``clauses`` is empty (``ordered_clauses``).

    SQL in values and conditions names ``<source_alias>.x`` and ``<target_alias>.x`` (with the
    default aliases also ``s.x`` / ``t.x``); a bare name is the target's column (the source's
    in a ``not_matched`` clause, where no target row exists).
    """

    matched_update: Mapping[str, Any] | None = None
    """Legacy: column -> SET value for matched rows; None: no explicit update clause."""
    matched_update_all: bool = False
    """Legacy: matched rows take every column the source has."""
    matched_delete: bool = False
    insert_all: bool = False
    """Legacy: unmatched source rows are inserted."""
    matched_condition: str | None = None
    not_matched_condition: str | None = None
    clauses: tuple[MergeClause, ...] = ()
    source_alias: str = "source"
    target_alias: str = "target"
    on_condition: str | None = None
    """The non-key conjuncts of an SQL ``on`` (evaluated per matched pair), or None."""
    source_keys: tuple[str, ...] = ()
    """The source column each key of ``on`` equals (same order); empty: the same names."""


def ordered_clauses(clauses: MergeClauses) -> tuple[MergeClause, ...]:
    """Every WHEN clause of ``clauses`` in evaluation order (legacy fields converted)."""
    if clauses.clauses:
        return clauses.clauses
    out: list[MergeClause] = []
    if clauses.matched_delete:
        out.append(MergeClause(MATCHED, "delete", None, clauses.matched_condition))
    elif clauses.matched_update is not None:
        out.append(
            MergeClause(MATCHED, "update", clauses.matched_update, clauses.matched_condition)
        )
    elif clauses.matched_update_all:
        out.append(MergeClause(MATCHED, "update", None, clauses.matched_condition))
    if clauses.insert_all:
        out.append(MergeClause(NOT_MATCHED, "insert", None, clauses.not_matched_condition))
    return tuple(out)


def check_clause_order(clauses: Sequence[MergeClause]) -> None:
    """Raise ``InvalidArgumentError`` when a clause without condition is followed by another
    clause of its kind (it could never apply), or when a clause's action does not fit its
    kind, as Spark/Delta MERGE refuses them."""
    for i, clause in enumerate(clauses):
        allowed = ("insert",) if clause.kind == NOT_MATCHED else ("update", "delete")
        if clause.action not in allowed:
            raise InvalidArgumentError(f"a {clause.kind} clause cannot {clause.action}")
        later = [c for c in clauses[i + 1 :] if c.kind == clause.kind]
        if clause.condition is None and later:
            raise InvalidArgumentError(
                f"only the last WHEN {clause.kind.upper().replace('_', ' ')} clause may omit "
                "its condition: the later ones could never apply"
            )


def changes_target(clauses: MergeClauses) -> bool:
    """Whether some clause may update or delete target rows (not just insert)."""
    return any(c.kind != NOT_MATCHED for c in ordered_clauses(clauses))


def reads_whole_table(clauses: MergeClauses) -> bool:
    """Whether a clause makes the merge read every target row: a ``not_matched_by_source``
    clause looks at rows no source key points to (``merge_eval.whole_table`` adds an ``on``
    without key equality)."""
    return any(c.kind == NOT_MATCHED_BY_SOURCE for c in ordered_clauses(clauses))


ALIASES: dict[str, tuple[str, ...]] = {"source": ("source", "s"), "target": ("target", "t")}
"""How MERGE conditions and SET expressions name each side's columns (default aliases)."""


def aliases_of(clauses: MergeClauses | None) -> dict[str, tuple[str, ...]]:
    """The names each side goes by: the configured alias, plus ``s``/``t`` with defaults."""
    if clauses is None:
        return ALIASES
    out: dict[str, tuple[str, ...]] = {}
    for side, alias in (("source", clauses.source_alias), ("target", clauses.target_alias)):
        out[side] = ALIASES[side] if alias == side else (alias,)
    return out


def qualified_columns(
    target: pa.Table, source: pa.Table, clauses: MergeClauses | None = None
) -> pa.Table:
    """One table with both sides' columns under every alias (``t.x``, ``target.x``, ``s.x``),
    plus the target's columns unqualified; rows of ``target`` and ``source`` must align."""
    aliases = aliases_of(clauses)
    cols: dict[str, pa.ChunkedArray] = {}
    for side, table in (("target", target), ("source", source)):
        for name in table.column_names:
            for alias in aliases[side]:
                cols[f"{alias}.{name}"] = table.column(name)
    for name in target.column_names:
        cols.setdefault(name, target.column(name))
    return pa.table(cols)


def check_keys(source: pa.Table, schema: pa.Schema, keys: Sequence[str]) -> None:
    """Check a MERGE's key columns before any file is read.

    Raises ``SchemaError`` when there is no key or a key is missing from either side, and
    ``ConstraintViolationError`` when two source rows share a key (a target row could then
    match several source rows).
    """
    if not keys:
        raise SchemaError("a merge needs at least one key column")
    for k in keys:
        if source.schema.get_field_index(k) < 0 or schema.get_field_index(k) < 0:
            raise SchemaError(f"merge key {k!r} must be a column of both source and target")
    counts = source.group_by(list(keys)).aggregate([([], "count_all")])
    if counts.num_rows and pc.max(counts.column("count_all")).as_py() > 1:
        raise ConstraintViolationError(
            "the merge source has several rows with the same key: a target row could match "
            "more than one source row"
        )
