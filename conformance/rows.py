"""Row checks: row count and digest against the expected answer, with a diagnosis on mismatch."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from conformance.cases import Case, Corpus
from conformance.overrides import null_empty_strings, override_for

HOODIE_PREFIX = "_hoodie_"


def expected_rows(case: Case, entry: dict[str, Any]) -> pa.Table | None:
    """Return the expected rows of a version (its rows file), overrides applied; None if none."""
    name = entry.get("rows_file")
    if not name:
        return None
    rows = pq.read_table(case.expected_dir / str(name))
    if override_for(case.id).empty_partition_string_is_null:
        rows = null_empty_strings(rows, tuple(case.expected.get("partition_columns") or ()))
    return rows


def expected_digest(corpus: Corpus, case: Case, entry: dict[str, Any]) -> str | None:
    """Return the digest lakecore must produce (the JSON's, or recomputed after overrides)."""
    if override_for(case.id).empty_partition_string_is_null:
        rows = expected_rows(case, entry)
        return None if rows is None else corpus.digest(rows)
    digest = entry.get("digest")
    return str(digest) if digest else None


def row_problems(corpus: Corpus, case: Case, entry: dict[str, Any], rows: pa.Table) -> list[str]:
    """Return the row-count and digest failures of ``rows`` against a version entry."""
    problems: list[str] = []
    want_rows = entry.get("num_rows")
    if want_rows is not None and rows.num_rows != want_rows:
        problems.append(f"num_rows {rows.num_rows}, expected {want_rows}")
    want = expected_digest(corpus, case, entry)
    drop: tuple[str, ...] = ()
    if case.format == "hudi" and entry.get("digest_no_meta"):
        # Hudi: the rows must match without the _hoodie_* meta columns (their values, e.g.
        # commit sequence numbers and file names, are writer-specific).
        want, drop = str(entry["digest_no_meta"]), (HOODIE_PREFIX,)
    if want is None:
        return problems
    got = corpus.digest(rows, drop_prefixes=drop)
    if got != want:
        problems.append(
            f"digest {got[:12]}, expected {want[:12]}{_diagnose(corpus, case, entry, rows)}"
        )
    return problems


def _diagnose(corpus: Corpus, case: Case, entry: dict[str, Any], rows: pa.Table) -> str:
    """Say which columns differ (per-column digests against the rows file) and other hints."""
    hints: list[str] = []
    if entry.get("digest") and corpus.digest(rows) == entry["digest"]:
        hints.append("matches the oracle's own (non-conformant) digest")
    meta = entry.get("digest_no_meta")
    if meta and corpus.digest(rows, drop_prefixes=(HOODIE_PREFIX,)) == meta:
        hints.append(f"equal without the {HOODIE_PREFIX}* columns")
    want_rows = expected_rows(case, entry)
    if want_rows is not None:
        hints.append(_column_diff(corpus, rows, want_rows))
    return f" ({'; '.join(hints)})" if hints else ""


def _column_diff(corpus: Corpus, got: pa.Table, want: pa.Table) -> str:
    common = [c for c in want.column_names if c in got.column_names]
    differ = [
        c for c in common if corpus.digest(got.select([c])) != corpus.digest(want.select([c]))
    ]
    if differ:
        return f"values differ in columns {differ}"
    if len(common) < len(want.column_names) or len(common) < len(got.column_names):
        return "column names differ"
    return "every column matches alone: rows are combined differently"
