"""The clauses of a MERGE, as data (built by ``Table.merge``, executed by a format)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import ConstraintViolationError, SchemaError


@dataclass(frozen=True, slots=True)
class MergeClauses:
    """What to do with target rows that match a source row, and with unmatched source rows.

    SQL in ``matched_update`` and the conditions may name ``source.x`` / ``s.x`` and
    ``target.x`` / ``t.x`` (a bare name is the target's column).
    """

    matched_update: Mapping[str, Any] | None = None
    """Column -> SET value for matched rows: SQL text, a tree or a Python literal
    (``lakecore.expr.assign``); None: no explicit update clause."""
    matched_update_all: bool = False
    """Matched rows take every column the source has."""
    matched_delete: bool = False
    insert_all: bool = False
    """Unmatched source rows are inserted."""
    matched_condition: str | None = None
    not_matched_condition: str | None = None


ALIASES = {"source": ("source", "s"), "target": ("target", "t")}
"""How MERGE conditions and SET expressions name each side's columns."""


def qualified_columns(target: pa.Table, source: pa.Table) -> pa.Table:
    """One table with both sides' columns under every alias (``t.x``, ``target.x``, ``s.x``),
    plus the target's columns unqualified; rows of ``target`` and ``source`` must align."""
    cols: dict[str, pa.ChunkedArray] = {}
    for side, table in (("target", target), ("source", source)):
        for name in table.column_names:
            for alias in ALIASES[side]:
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
