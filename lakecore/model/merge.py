"""The clauses of a MERGE, as data (built by ``Table.merge``, executed by a format)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MergeClauses:
    """What to do with target rows that match a source row, and with unmatched source rows.

    SQL in ``matched_update`` and the conditions may name ``source.x`` / ``s.x`` and
    ``target.x`` / ``t.x`` (a bare name is the target's column).
    """

    matched_update: Mapping[str, str] | None = None
    """Column -> SQL for matched rows (None: no explicit update clause)."""
    matched_update_all: bool = False
    """Matched rows take every column the source has."""
    matched_delete: bool = False
    insert_all: bool = False
    """Unmatched source rows are inserted."""
    matched_condition: str | None = None
    not_matched_condition: str | None = None
