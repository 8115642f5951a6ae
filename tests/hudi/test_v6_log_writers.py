"""Table version 6 names a log file after its slice's base instant, not the write that made
it: a state before that write must leave the file out of its file index, its slices and
everything built from them (migration fingerprints, the change feed's walk).

Fixed in session 12; was: time travel to an instant before a delta commit listed that
commit's log file (its blocks were filtered on read, so rows were right), and a migration
with history took the two versions for one unit: the update was never written to the target.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import lakecore
from lakecore.model import files as fi
from tests.hudi.write.helpers import create, rows

VERSIONS = ("6", "8")


def _table(tmp_path: Path, version: str) -> tuple[lakecore.Table, list[str]]:
    table = create(tmp_path / "t", "MERGE_ON_READ", version=version)
    instants = [str(table.append(rows((1, "a", 1, "x"), (2, "b", 1, "x"))).version)]
    instants.append(str(table.update({"name": "'u'", "ts": "ts + 1"}, "id = 1").version))
    instants.append(str(table.delete("id = 2").version))
    return table, instants


@pytest.mark.parametrize("version", VERSIONS)
def test_an_earlier_instant_lists_only_the_log_files_written_by_then(
    tmp_path: Path, version: str
) -> None:
    table, instants = _table(tmp_path, version)
    logs = [
        sum(1 for p in files if ".log." in p)
        for files in (
            table.snapshot(i).files().column(fi.DATA_FILES).to_pylist()[0] for i in instants
        )
    ]
    assert logs == [0, 1, 2]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("to", ["delta", "lance"])
def test_migration_with_history_keeps_each_log_write(tmp_path: Path, version: str, to: str) -> None:
    table, instants = _table(tmp_path, version)
    target = tmp_path / to
    report = lakecore.migrate(table.uri, str(target), to, history=True)
    assert [s for s, _ in report.versions] == instants
    migrated = lakecore.open(str(target))
    for source_version, target_version in report.versions:
        want = table.snapshot(source_version).to_arrow().select(["id", "name", "ts"])
        got = migrated.snapshot(target_version).to_arrow().select(["id", "name", "ts"])
        assert got.sort_by("id").to_pylist() == want.sort_by("id").to_pylist(), source_version
    assert migrated.to_arrow().select(["id", "name"]).to_pylist() == [{"id": 1, "name": "u"}]


@pytest.mark.parametrize("version", VERSIONS)
def test_the_change_feed_of_each_log_write(tmp_path: Path, version: str) -> None:
    table, instants = _table(tmp_path, version)
    kinds = [sorted(table.changes(i, i).column("_change_type").to_pylist()) for i in instants]
    assert kinds == [["insert", "insert"], ["update_postimage", "update_preimage"], ["delete"]]
