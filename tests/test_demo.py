"""The README's demo: its write sections run and print the rows they should."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

import lakecore
from lakecore.demo import hudi_write_demo, lance_demo, write_demo


def _run(section: object) -> str:
    out = io.StringIO()
    section(Console(file=out, width=200))  # type: ignore[operator]
    return out.getvalue()


def test_delta_write_demo_prints_the_merged_rows() -> None:
    text = _run(write_demo)
    assert "{'id': 5, 'region': 'us', 'amount': 50.0}" in text
    assert "MERGE" in text


def test_hudi_write_demo_upserts_deletes_and_compacts() -> None:
    text = _run(hudi_write_demo)
    assert (
        "[{'id': 't2', 'fare': 25.0}, {'id': 't3', 'fare': 30.0}, {'id': 't4', 'fare': 40.0}]"
        in text
    )
    assert "compact" in text
    assert "first instant 3 rows" in text


def test_lance_demo_writes_versions_and_reads_them_back(tmp_path: Path) -> None:
    pytest.importorskip("lance", reason="needs pylance (the lance extra)")
    out = io.StringIO()
    assert lance_demo(Console(file=out, width=200), str(tmp_path / "inventory.lance"))
    text = out.getvalue()
    for line in ("v1  overwrite", "v2  append", "v4  delete", "v5  update"):
        assert line in text
    assert "3 fragments" in text and "1 deleted" in text
    assert "{'id': 3, 'qty': 30}" in text and "{'id': 7, 'qty': -1}" in text
    assert "{'id': 2," not in text
    assert "time travel version 2: 4 rows" in text
    assert "time travel version 3: 8 rows" in text
    # The dataset is an ordinary Lance dataset: lakecore reopens it at its latest version.
    assert lakecore.open(str(tmp_path / "inventory.lance")).to_arrow().num_rows == 7
