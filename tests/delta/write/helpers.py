"""Helpers for the Delta writer tests: canonical row multisets, log inspection, readers."""

from __future__ import annotations

import importlib.util
import json
import os
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pyarrow as pa
import pytest

import lakecore

CORPUS = Path(os.environ.get("LAKECORE_CORPUS", Path(__file__).parents[4] / "shared" / "corpus"))
LOG = "_delta_log"


@cache
def _digest_module() -> ModuleType:
    path = CORPUS / "digest.py"
    if not path.is_file():
        pytest.fail(f"corpus digest {path} is missing; set LAKECORE_CORPUS to the shared corpus")
    spec = importlib.util.spec_from_file_location("lakecore_corpus_digest", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def canonical(table: pa.Table) -> list[str]:
    """The rows of ``table`` as sorted canonical JSON strings (the corpus digest's rows)."""
    return sorted(_digest_module().canonical_rows(table))


def lakecore_rows(path: str | Path, version: int | None = None) -> list[str]:
    return canonical(lakecore.open(str(path)).to_arrow(version=version))


def delta_rs_rows(path: str | Path, version: int | None = None, scan: bool = False) -> list[str]:
    """The rows delta-rs reads: ``to_pyarrow_table()``, or its kernel ``scan()`` when asked
    and for column-mapped or deletion-vector tables.

    delta-rs 1.6's pyarrow path reads mapped columns as nulls, refuses the deletionVectors
    reader feature, and cannot cast all-optional Parquet (what Spark writes too) to NOT NULL
    struct children.
    """
    import deltalake

    dt = deltalake.DeltaTable(str(path), version=version)
    mapped = dt.metadata().configuration.get("delta.columnMapping.mode", "none") != "none"
    dvs = "deletionVectors" in (dt.protocol().reader_features or [])
    if scan or mapped or dvs:
        return canonical(pa.table(dt.scan().read_all()))
    return canonical(dt.to_pyarrow_table())


def commit_versions(path: str | Path) -> list[int]:
    """Versions of the ``NNN.json`` commit files in the log, ascending."""
    log = Path(path) / LOG
    return sorted(int(p.name[:20]) for p in log.glob("*.json") if p.name[:20].isdigit())


def log_names(path: str | Path) -> set[str]:
    return {p.name for p in (Path(path) / LOG).iterdir()}


def data_files(path: str | Path) -> set[str]:
    """Every Parquet file under the table root outside ``_delta_log`` (relative, decoded)."""
    root = Path(path)
    return {
        str(p.relative_to(root))
        for p in root.rglob("*.parquet")
        if LOG not in p.relative_to(root).parts
    }


def commit_lines(path: str | Path, version: int) -> list[dict[str, Any]]:
    raw = (Path(path) / LOG / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in raw.splitlines() if line.strip()]


def protocol_of(path: str | Path, version: int = 0) -> dict[str, Any]:
    return next(a["protocol"] for a in commit_lines(path, version) if "protocol" in a)
