"""Hudi-only checks of the latest snapshot: file slice count and read-optimized rows."""

from __future__ import annotations

import lakecore
from conformance.cases import Case, Corpus
from conformance.outcome import Findings, describe_error
from conformance.rows import HOODIE_PREFIX


def check_hudi_latest(corpus: Corpus, case: Case, found: Findings) -> None:
    """``num_files`` = file slices of the latest snapshot; MoR read-optimized rows match."""
    want_slices = case.expected.get("num_files")
    if want_slices is not None and case.expected.get("latest_version") is not None:
        try:
            got = lakecore.open(str(case.path)).snapshot().files().num_rows
        except Exception as exc:
            found.fail(f"latest: files() raises {describe_error(exc)}")
        else:
            if got != want_slices:
                found.fail(f"latest: {got} file slices, expected {want_slices}")
    optimized = case.expected.get("read_optimized")
    if not optimized:
        return
    try:
        table = lakecore.open(str(case.path), options={"read_optimized": "true"})
        rows = table.snapshot().to_arrow()
    except Exception as exc:
        found.fail(f"read_optimized: raises {describe_error(exc)}")
        return
    if rows.num_rows != optimized.get("num_rows"):
        found.fail(f"read_optimized: {rows.num_rows} rows, expected {optimized.get('num_rows')}")
    want = optimized.get("digest_no_meta")
    if want and corpus.digest(rows, drop_prefixes=(HOODIE_PREFIX,)) != want:
        found.fail("read_optimized: digest without _hoodie_* columns differs")
