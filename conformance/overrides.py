"""Per-table expectations that the expected JSON states only in prose (``notes``/``expect_detail``).

Each entry quotes its source. Keep this list short: everything the JSON says in fields is read
from the JSON.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from lakecore import errors


@dataclass(frozen=True, slots=True)
class Override:
    """What the corpus's prose adds to a table's expected JSON."""

    source: str  # the sentence of notes / expect_detail this comes from
    must_refuse: bool = False  # lakecore must raise a typed error (it loads -> FAIL)
    refusal_classes: tuple[type[errors.LakecoreError], ...] = ()  # accepted refusals, if pinned
    detection_refusal_ok: bool = False  # a FormatDetectionError is a valid refusal here
    latest_version: int | None = None
    num_files: int | None = None  # live files of the latest snapshot
    empty_partition_string_is_null: bool = False  # expected rows: '' partition values -> NULL


NONE = Override(source="")

OVERRIDES: dict[str, Override] = {
    "delta/deltars__simple_table_features": Override(
        source="notes: minReaderVersion 5 with unknown reader feature 'blahabl'; "
        "a conforming reader refuses it",
        must_refuse=True,
    ),
    "delta/gen__partitioned_special_chars": Override(
        source="notes: an empty-string partition value means NULL (protocol); the oracle "
        "returns '' - the protocol-conformant answer is the secondary digest",
        empty_partition_string_is_null=True,
    ),
    "delta/golden__canonicalized-paths-normal-a": Override(
        source="notes: after path canonicalization the remove cancels the add: version 1, "
        "0 active files",
        latest_version=1,
        num_files=0,
    ),
    "delta/golden__canonicalized-paths-special-a": Override(
        source="notes: as canonicalized-paths-normal-a: version 1, 0 active files",
        latest_version=1,
        num_files=0,
    ),
    "delta-bad/golden__corrupted-last-checkpoint": Override(
        source="expect_detail: requires the snapshot to load (version 10, 11 files)",
        latest_version=10,
        num_files=11,
    ),
    "delta-bad/golden__deltalog-invalid-protocol-version": Override(
        source="expect_detail: minReaderVersion 99; must fail with an unsupported-protocol error",
        refusal_classes=(errors.UnsupportedFeatureError,),
    ),
    "delta-bad/golden__no-delta-log-folder": Override(
        source="expect_detail: folder without _delta_log; must fail with table-not-found "
        "(auto-detection may call it an unknown format)",
        refusal_classes=(errors.TableNotFoundError, errors.UnknownFormatError),
        detection_refusal_ok=True,
    ),
}


def override_for(case_id: str) -> Override:
    """Return the override of ``<group>/<table>``, or an empty one."""
    return OVERRIDES.get(case_id, NONE)


def null_empty_strings(rows: pa.Table, columns: tuple[str, ...]) -> pa.Table:
    """Return ``rows`` with ``''`` replaced by NULL in the string ``columns`` present."""
    for name in columns:
        i = rows.schema.get_field_index(name)
        if i < 0 or not pa.types.is_string(rows.schema.field(i).type):
            continue
        col = rows.column(i)
        fixed = pc.if_else(pc.equal(col, ""), pa.scalar(None, col.type), col)
        rows = rows.set_column(i, rows.schema.field(i), fixed)
    return rows
