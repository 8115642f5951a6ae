"""The formats' own engines (deltalake, hudi-rs, pylance) as readers of migration targets, and
the corpus tables a migration suite runs over.

Each engine reads a table the way the corpus oracle read its source (``DeltaTable.scan()``,
``HudiTableBuilder...read()``, ``lance.dataset().to_table()``), so a target's digest compares
with the corpus's expected digest of the source's latest version.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pyarrow as pa
import pytest

from conformance.cases import Corpus
from conformance.overrides import null_empty_strings, override_for

from ..corpus import CORPUS

FORMATS = ("delta", "hudi", "lance")
HOODIE_PREFIX = "_hoodie_"


@dataclass(frozen=True, slots=True)
class SourceTable:
    """A corpus table and what the corpus says about its latest version."""

    format: str
    name: str
    expected: dict[str, Any]

    @property
    def id(self) -> str:
        return f"{self.format}/{self.name}"

    @property
    def path(self) -> Path:
        return CORPUS / self.format / self.name

    @property
    def skip_reason(self) -> str | None:
        """Why the corpus does not give this table's rows (``oracle_error``), else None."""
        error = self.expected.get("oracle_error")
        if error:
            return f"oracle_error: {str(error).splitlines()[0][:120]}"
        if self.latest_entry is None or not self.latest_entry.get("digest"):
            return "no digest of the latest version"
        return None

    @property
    def latest_entry(self) -> dict[str, Any] | None:
        """The version entry of the latest version (Hudi without commits: ``empty_snapshot``)."""
        latest = self.expected.get("latest_version")
        if latest is None:
            entry = self.expected.get("empty_snapshot")
        else:
            entry = (self.expected.get("versions") or {}).get(str(latest))
        return entry if isinstance(entry, dict) else None

    @property
    def features(self) -> list[str]:
        return [str(f) for f in self.expected.get("features") or []]


def source_tables(fmt: str) -> list[SourceTable]:
    """Every table of ``expected/<fmt>/`` (not ``delta-bad``), sorted by name."""
    folder = CORPUS / "expected" / fmt
    if not folder.is_dir():
        return []
    return [
        SourceTable(fmt, p.stem, json.loads(p.read_text(encoding="utf-8")))
        for p in sorted(folder.glob("*.json"))
    ]


@cache
def corpus() -> Corpus:
    """The shared corpus (fails when it is missing: the suites must not pass vacuously)."""
    if not (CORPUS / "digest.py").is_file():
        pytest.fail(f"no corpus at {CORPUS}; set LAKECORE_CORPUS")
    return Corpus(CORPUS)


@cache
def _digest_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lakecore_corpus_digest", CORPUS / "digest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def canonical_rows(rows: pa.Table) -> list[str]:
    """One canonical JSON string per row (the rows the corpus digest hashes, ``digest.py``)."""
    corpus()  # fails clearly when the corpus is missing
    return list(_digest_module().canonical_rows(rows))


def expected_digest(c: Corpus, table: SourceTable) -> str:
    """The digest of the source's latest rows, on user columns (Hudi: ``digest_no_meta``).

    ``gen__partitioned_special_chars``: an empty-string partition value means NULL (the
    conformance override): the digest is recomputed from the rows file with that applied.
    """
    entry = table.latest_entry
    assert entry is not None
    if override_for(table.id).empty_partition_string_is_null:
        import pyarrow.parquet as pq

        rows = pq.read_table(CORPUS / "expected" / table.format / str(entry["rows_file"]))
        rows = null_empty_strings(rows, tuple(table.expected.get("partition_columns") or ()))
        return c.digest(rows)
    if table.format == "hudi" and entry.get("digest_no_meta"):
        return str(entry["digest_no_meta"])
    return str(entry["digest"])


def read_with_engine(fmt: str, path: Path) -> pa.Table:
    """The latest rows of the ``fmt`` table at ``path`` as that format's own engine reads them.

    Delta: deltalake's kernel ``scan()`` (handles deletion vectors and column mapping, which
    its ``to_pyarrow_table()`` refuses or misreads). Hudi: hudi-rs snapshot read. Lance:
    pylance ``to_table()``.
    """
    if fmt == "delta":
        import deltalake

        return pa.table(deltalake.DeltaTable(str(path)).scan().read_all())
    if fmt == "hudi":
        import hudi

        if not hasattr(hudi, "HudiTableBuilder"):
            pytest.fail(f"'import hudi' found {hudi.__file__}, not hudi-rs")
        built = hudi.HudiTableBuilder.from_base_uri(str(path)).build()
        batches = built.read()
        if not batches:
            return pa.schema(built.get_schema()).empty_table()
        return pa.Table.from_batches(batches)
    if fmt == "lance":
        import lance

        return lance.dataset(str(path)).to_table()
    raise ValueError(f"unknown format {fmt!r}")


def user_columns(rows: pa.Table) -> pa.Table:
    """``rows`` less Hudi's ``_hoodie_*`` meta columns (not user data)."""
    return rows.drop_columns([n for n in rows.column_names if n.startswith(HOODIE_PREFIX)])
