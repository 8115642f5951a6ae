"""Every Lance table of the shared corpus at every recorded version: rows equal the expected
answer (pylance 14.0.2's, by the corpus digest), files = fragments, the schema's columns.

``v0.10.5__corrupt_schema`` v6 has duplicate field ids (a Lance 0.10.5 bug: two data files of a
fragment claim ids 2 and 3); lakecore reads the first file's column, as pylance's reader does
(Lance repairs the schema on its next commit, ``fix_schema``, keeping the last file instead).
``hist__0.13.0_string_encoding`` is an early 2.0 file (labelled 0.3) whose strings take two
columns each (``column_indices`` 0, 1, 3, 5): read through ``lakecore_lance.columns``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import lakecore
from conformance.cases import Corpus
from lakecore.errors import CorruptTableError

from ..corpus import CORPUS

EXPECTED = CORPUS / "expected" / "lance"
TABLES = sorted(p.stem for p in EXPECTED.glob("*.json")) if EXPECTED.is_dir() else []
CASES = [
    (name, key)
    for name in TABLES
    for key in json.loads((EXPECTED / f"{name}.json").read_text())["versions"]
]


def _expected(name: str) -> dict[str, Any]:
    return json.loads((EXPECTED / f"{name}.json").read_text())  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    if not EXPECTED.is_dir():
        pytest.skip(f"no corpus at {CORPUS}")
    return Corpus(CORPUS)


def test_every_table_and_version_is_a_case() -> None:
    assert len(TABLES) == 19
    assert len(CASES) == 45


@pytest.mark.parametrize(("name", "key"), CASES, ids=[f"{n}@v{k}" for n, k in CASES])
def test_version_matches_expected(corpus: Corpus, name: str, key: str) -> None:
    expected = _expected(name)
    entry = expected["versions"][key]
    table = lakecore.open(str(CORPUS / "lance" / name))
    assert table.format == "lance"
    assert table.version == expected["latest_version"]
    snap = table.snapshot(version=int(key))
    assert snap.version == int(key)
    if entry.get("num_files") is not None:
        assert snap.files().num_rows == entry["num_files"]
    if entry.get("read_error"):
        # The oracle could not read it either (a data file is missing from the fixture).
        with pytest.raises(CorruptTableError, match="missing"):
            snap.to_arrow()
        return
    rows = snap.to_arrow()
    assert [f.name for f in rows.schema] == [c["name"] for c in entry["schema"]]
    assert rows.num_rows == entry["num_rows"]
    assert corpus.digest(rows) == entry["digest"]


def test_history_of_corpus_tables(corpus: Corpus) -> None:
    """Operations come from the transaction files; v0.5.9 wrote none."""
    table = lakecore.open(str(CORPUS / "lance" / "gen__deletions_v2_manifest"))
    ops = [h.operation for h in table.history()]
    assert ops[-1] == "overwrite" and "delete" in ops
    assert [h.version for h in table.history()] == [5, 4, 3, 2, 1]
    old = lakecore.open(str(CORPUS / "lance" / "v0.5.9__no_fragments"))
    assert [(h.version, h.operation) for h in old.history()] == [(1, None)]
