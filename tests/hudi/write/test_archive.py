"""Timeline archiving on lakecore-written tables (``write.archive``): the active timeline stays
bounded, the archive is what Hudi writes (decoded independently), and readers keep the history:
``history()`` lists every commit as before, time travel to an archived instant returns what it
returned before archiving, and hudi-rs reads the same rows (latest and as of archived
instants: it keeps every file whose instant is older than the active timeline)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from lakecore_hudi.table_config import read_table_config
from lakecore_hudi.timeline.archived import load_archived_timeline
from lakecore_hudi.write.archive import archive_table

import lakecore
from lakecore.errors import InvalidArgumentError
from lakecore.storage import open_storage
from tests.hudi.write.archive_tables import (
    Run,
    active_commits,
    active_files,
    archived_commit_times,
    archiving_table,
    commit_many,
    decode_lsm,
    decode_v1_archive,
    hudi_rs_rows_as_of,
    set_properties,
)
from tests.hudi.write.helpers import hudi_rs_rows, lakecore_rows

MAX_COMMITS = 3


def check_archived(run: Run, version: str) -> int:
    """Every invariant of an archived table; returns how many instants were archived."""
    root = run.root
    assert run.max_active <= MAX_COMMITS
    active = active_commits(root)
    archived = [v for v in run.versions if v not in active]
    assert archived, "nothing was archived"
    # The independent decoders and lakecore's reader see the same archived commits.
    assert archived_commit_times(root, version) == sorted(
        set(archived) | {e for e in run.entry_at if e not in active}
    )
    storage = open_storage(str(root))
    ours = load_archived_timeline(storage, read_table_config(storage))
    assert sorted({a.timestamp for a in ours if a.action in ("commit", "deltacommit")}) == (
        archived_commit_times(root, version)
    )
    # history(): every commit, with what it said before archiving.
    history = {str(e.version): e for e in lakecore.open(str(root)).history()}
    for instant, before in run.entry_at.items():
        after = history[instant]
        assert after.operation == before.operation
        expected = {**before.info, "archived": True} if instant not in active else before.info
        if version == "6" and instant not in active:
            expected = {**expected, "completion_time": None}  # the v6 archive has none
        assert after.info == expected, instant
    # Time travel to every archived instant: what lakecore read then; hudi-rs agrees.
    table = lakecore.open(str(root))
    for instant in archived:
        got = lakecore_rows_at(table, instant)
        assert got == run.rows_at[instant], instant
        assert hudi_rs_rows_as_of(root, instant) == got, instant
    assert lakecore_rows(root) == run.rows_at[run.versions[-1]] == hudi_rs_rows(root)
    return len(archived)


def lakecore_rows_at(table: lakecore.Table, instant: str) -> list[dict[str, object]]:
    data = table.snapshot(version=instant).to_arrow()
    data = data.drop_columns([c for c in data.column_names if c.startswith("_hoodie_")])
    import json

    return sorted(data.to_pylist(), key=lambda r: json.dumps(r, sort_keys=True, default=str))


@pytest.fixture(scope="module", params=["8", "6"])
def archived_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Run:
    root = tmp_path_factory.mktemp(f"v{request.param}") / "t"
    archiving_table(root, request.param)
    return commit_many(root, 6)


def _version(run: Run) -> str:
    return "8" if (run.root / ".hoodie/timeline").exists() else "6"


def test_archiving_keeps_history_and_time_travel(archived_run: Run) -> None:
    assert check_archived(archived_run, _version(archived_run)) == 4


def test_active_timeline_holds_only_recent_instants(archived_run: Run) -> None:
    active = active_commits(archived_run.root)
    assert active == archived_run.versions[-len(active) :]
    assert 2 <= len(active) <= MAX_COMMITS
    # Every state file of an archived instant left the active timeline.
    stamps = {f[:17] for f in active_files(archived_run.root)}
    assert stamps == set(active)


def test_lsm_timeline_layout(archived_run: Run) -> None:
    if _version(archived_run) != "8":
        pytest.skip("the LSM timeline is table version 8+'s")
    history = archived_run.root / ".hoodie/timeline/history"
    names = sorted(p.name for p in history.iterdir())
    assert "_version_" in names
    version = int((history / "_version_").read_text())
    assert f"manifest_{version}" in names
    # Compaction ran: a layer-1 file replaced layer-0 files (batch size 2).
    assert any(n.endswith("_1.parquet") for n in names)
    rows = decode_lsm(archived_run.root)
    assert [r["version"] for r in rows] == [1] * len(rows)
    for r in rows:
        assert r["completionTime"] > r["instantTime"]
        assert r["metadata"].startswith(b"Obj\x01")  # the completed file: Avro commit metadata
    # Cleaning kept 3 + (compactions) manifests at most.
    assert len([n for n in names if n.startswith("manifest_")]) <= 6


def test_v6_archive_log_layout(archived_run: Run) -> None:
    if _version(archived_run) != "6":
        pytest.skip("the classic archive is table version 6's")
    archived_dir = archived_run.root / ".hoodie/archived"
    # Each archiving (two here: 4 -> 2 commits twice) rolls over to a new log file.
    names = [".commits_.archive.1_1-0-1", ".commits_.archive.2_1-0-1"]
    assert sorted(p.name for p in archived_dir.iterdir()) == names
    records = [r for name in names for r in decode_v1_archive(archived_dir / name)]
    # One record per state file: requested, inflight and completed of each archived commit.
    by_state = {(r["commitTime"], r["actionState"]) for r in records}
    assert len(by_state) == len(records) == 3 * 4
    completed = [r for r in records if r["actionState"] == "COMPLETED"]
    assert all(r["actionType"] == "commit" for r in completed)
    assert all(r["hoodieCommitMetadata"]["operationType"] == "UPSERT" for r in completed)


def test_archive_table_explicitly(tmp_path: Path) -> None:
    root = tmp_path / "t"
    archiving_table(root, "8", **{"hoodie.archive.automatic": "false"})
    run = commit_many(root, 5)
    assert len(active_commits(root)) == 5  # automatic archiving is off
    result = archive_table(lakecore.open(str(root)))
    assert [t for t, _ in result.archived] == run.versions[:3]
    assert active_commits(root) == run.versions[3:]
    assert archive_table(lakecore.open(str(root))).archived == ()  # nothing left to do
    assert [str(e.version) for e in lakecore.open(str(root)).history()] == run.versions[::-1]


def test_archive_table_refuses_other_formats(tmp_path: Path) -> None:
    import pyarrow as pa

    table = lakecore.create(str(tmp_path / "d"), pa.schema([("a", pa.int64())]))
    with pytest.raises(InvalidArgumentError, match="not a Hudi table"):
        archive_table(table)


def test_clean_archives_and_bounds_archiving(tmp_path: Path) -> None:
    """A clean's earliest commit to retain bounds archiving; ``clean`` archives too."""
    root = tmp_path / "t"
    archiving_table(
        root, "8", **{"hoodie.archive.automatic": "false", "hoodie.keep.max.commits": "4"}
    )
    run = commit_many(root, 6, keys=2)  # updates: old slices for the clean
    set_properties(root, {"hoodie.archive.automatic": "true"})
    assert lakecore.open(str(root)).clean(retain_commits=3)  # retains from the 4th commit
    # 6 commits > 4: down to 2, but never past the 4th commit (the clean retains it).
    assert active_commits(root) == run.versions[3:]
    history = lakecore.open(str(root)).history()
    assert next(e.operation for e in history) == "clean"
    assert sorted(str(e.version) for e in history if e.operation == "upsert") == run.versions


@pytest.mark.slow
@pytest.mark.parametrize("version", ["8", "9", "6"])
def test_forty_commits(version: str, tmp_path: Path) -> None:
    root = tmp_path / "t"
    archiving_table(root, version)
    run = commit_many(root, 40)
    assert check_archived(run, version) == 38


@pytest.mark.slow
@pytest.mark.parametrize("version", ["8", "6"])
def test_merge_on_read_with_compactions(version: str, tmp_path: Path) -> None:
    root = tmp_path / "t"
    archiving_table(root, version, "MERGE_ON_READ")
    run = commit_many(root, 16, compact_every=3)
    archived = check_archived(dataclasses.replace(run, max_active=0), version)
    assert archived >= 10


@pytest.mark.parametrize("version", ["8", "6"])
def test_clean_deletes_old_slices_of_archived_instants(version: str, tmp_path: Path) -> None:
    """Files written by archived instants are completed ones: a later clean deletes the old
    slices among them (they would otherwise stay forever)."""
    root = tmp_path / "t"
    archiving_table(root, version)
    run = commit_many(root, 6, keys=2)  # two file groups, rewritten by every commit
    first_active = active_commits(root)[0]
    before = lakecore_rows(root)
    doomed = lakecore.open(str(root)).clean(retain_commits=1)
    instants = {Path(p).name.rsplit("_", 1)[-1].split(".")[0] for p in doomed}
    assert instants and all(i < first_active for i in instants)  # archived writers' files
    assert set(instants) <= set(run.versions)
    assert lakecore_rows(root) == before == hudi_rs_rows(root)


def test_archived_delta_commits_keep_their_completion_times(tmp_path: Path) -> None:
    """v8 MoR: a log file whose delta commit was archived joins slices by the completion time
    the LSM timeline recorded (as Hudi's view looks it up), not by its instant time."""
    from lakecore_hudi.options import ReadOptions
    from lakecore_hudi.state import load_state

    root = tmp_path / "t"
    archiving_table(root, "8", "MERGE_ON_READ")
    run = commit_many(root, 6, keys=2)
    storage = open_storage(str(root))
    state = load_state(storage, None, None, ReadOptions.parse(None))
    archived = [v for v in run.versions if v not in active_commits(root)]
    logs = {n.instant for s in state.slices for n in s.log_names}
    assert logs & set(archived), "no log file of an archived delta commit is read"
    for instant in logs & set(archived):
        assert state.visible.completion[instant] > instant
    assert lakecore_rows(root) == run.rows_at[run.versions[-1]] == hudi_rs_rows(root)
