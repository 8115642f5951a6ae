"""The README's demo: its write sections run and print the rows they should."""

from __future__ import annotations

import io

from rich.console import Console

from lakecore.demo import hudi_write_demo, write_demo


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
