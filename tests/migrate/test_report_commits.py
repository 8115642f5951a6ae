"""``MigrationReport.commits`` counts the commits the target received: its history holds
exactly that many entries after a first run, whatever the target format (a Hudi target's
creation writes ``hoodie.properties`` but no instant; a Delta target's creation is version 0),
and a re-run adds as many entries as it reports."""

from __future__ import annotations

from pathlib import Path

import pytest

import lakecore
from tests.migrate.test_history import build_source

PAIRS = [("delta", "hudi"), ("hudi-mor", "delta"), ("hudi-cow", "delta")]


@pytest.mark.parametrize("history", [True, False], ids=["history", "latest"])
@pytest.mark.parametrize(("kind", "to"), PAIRS, ids=[f"{s}-to-{t}" for s, t in PAIRS])
def test_commits_are_the_target_history_entries_the_run_added(
    kind: str, to: str, history: bool, tmp_path: Path
) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    build_source(kind, src, add_column=to != "hudi")
    report = lakecore.migrate(str(src), str(dst), to=to, history=history)
    entries = lakecore.open(str(dst), format=to).history()
    assert report.commits == len(entries)
    assert report.commits >= len(report.versions) >= 1
    lakecore.open(str(src)).delete("id = 4")
    again = lakecore.migrate(str(src), str(dst), to=to, history=history)
    after = lakecore.open(str(dst), format=to).history()
    assert again.commits == len(after) - len(entries) == 1
