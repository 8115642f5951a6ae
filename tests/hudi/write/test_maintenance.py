"""Compaction of MoR tables and cleaning of old file slices, read back by lakecore and hudi-rs."""

from __future__ import annotations

from pathlib import Path

import pytest
from lakecore_hudi.names import parse_base_file_name, parse_log_file_name
from lakecore_hudi.timeline.active import load_timeline
from lakecore_hudi.timeline.clean_metadata import parse_clean_metadata, parse_cleaner_plan
from lakecore_hudi.timeline.commit_metadata import parse_commit_metadata
from lakecore_hudi.timeline.rewrite_plans import parse_compaction_plan
from lakecore_hudi.write.writer import state_of

import lakecore
from lakecore.errors import CommitConflictError
from tests.hudi.write.helpers import Row, assert_reads, create, model_of, rows, upsert


def _names(directory: Path) -> tuple[list[str], list[str]]:
    names = [p.name for p in directory.iterdir()]
    bases = sorted(n for n in names if parse_base_file_name(n))
    logs = sorted(n for n in names if parse_log_file_name(n))
    return bases, logs


@pytest.mark.parametrize("version", ["8", "6"])
def test_compaction(tmp_path: Path, version: str) -> None:
    root = tmp_path / "t"
    table = create(root, "MERGE_ON_READ", version)
    first = rows((1, "a", 1, "x"), (2, "b", 1, "x"), (3, "c", 1, "y"))
    table.append(first)
    model: dict[int, Row] = model_of(first)
    upsert(table, rows((1, "A", 2, "x")))
    table.delete("id = 2")
    model[1] = {"id": 1, "name": "A", "ts": 2, "city": "x"}
    del model[2]
    compacted = table.compact()
    assert compacted is not None
    instant = compacted.version
    assert_reads(root, model)

    storage = table.storage
    timeline = load_timeline(storage, state_of(table.snapshot()).config)
    states = sorted((i.action, i.state) for i in timeline.instants if i.timestamp == instant)
    assert states == [
        ("commit", "COMPLETED"),
        ("compaction", "INFLIGHT"),
        ("compaction", "REQUESTED"),
    ]
    requested = next(
        i for i in timeline.instants if i.timestamp == instant and i.state == "REQUESTED"
    )
    plan = parse_compaction_plan(timeline.read_details(storage, requested), requested.file_name)
    assert [(op.partition_path, len(op.log_files)) for op in plan.operations] == [("city=x", 2)]
    done = next(i for i in timeline.instants if i.timestamp == instant and i.state == "COMPLETED")
    meta = parse_commit_metadata(timeline.read_details(storage, done), done.file_name)
    assert meta.compacted and meta.operation_type == "COMPACT"

    bases, logs = _names(root / "city=x")
    assert len(logs) == 2 and len(bases) == 2  # the old slice stays until cleaned
    assert {parse_base_file_name(b).instant for b in bases} >= {instant}  # type: ignore[union-attr]
    got = lakecore.open(str(root)).to_arrow().sort_by("id").to_pylist()
    assert got[0]["_hoodie_commit_time"] != instant  # records keep their commit times

    # Writes after the compaction land on the new slice; a second compaction folds them in.
    upsert(table, rows((1, "AA", 3, "x"), (4, "d", 1, "y")))
    model[1] = {"id": 1, "name": "AA", "ts": 3, "city": "x"}
    model[4] = {"id": 4, "name": "d", "ts": 1, "city": "y"}
    assert_reads(root, model)
    if version == "6":
        _, logs = _names(root / "city=x")
        assert any(parse_log_file_name(n).instant == instant for n in logs)  # type: ignore[union-attr]
    assert table.compact() is not None
    assert_reads(root, model)
    assert table.compact() is None  # nothing left with log files
    assert table.clean(retain_commits=1)
    bases, logs = _names(root / "city=x")
    assert len(bases) == 1 and logs == []
    assert_reads(root, model)


def test_compaction_of_copy_on_write_does_nothing(tmp_path: Path) -> None:
    table = create(tmp_path / "t")
    table.append(rows((1, "a", 1, "x")))
    assert table.compact() is None


@pytest.mark.parametrize("version", ["8", "6"])
def test_clean_keeps_the_slices_retained_commits_need(tmp_path: Path, version: str) -> None:
    root = tmp_path / "t"
    table = create(root, "COPY_ON_WRITE", version, partitioned=False)
    versions = [table.append(rows((1, "a", 1, "x"))).version]
    for ts in (2, 3, 4):
        versions.append(upsert(table, rows((1, f"v{ts}", ts, "x"))))
    bases, _ = _names(root)
    assert len(bases) == 4
    assert table.clean(retain_commits=10) == []
    deleted = table.clean(retain_commits=2)
    assert sorted(deleted) == bases[:2]
    bases_after, _ = _names(root)
    assert bases_after == bases[2:]
    assert_reads(root, {1: {"id": 1, "name": "v4", "ts": 4, "city": "x"}})
    # Time travel to the earliest retained commit still works.
    old = lakecore.open(str(root)).to_arrow(version=versions[2])
    assert old.column("name").to_pylist() == ["v3"]

    timeline = load_timeline(table.storage, state_of(table.snapshot()).config)
    clean = [i for i in timeline.instants if i.action == "clean"]
    assert sorted(i.state for i in clean) == ["COMPLETED", "INFLIGHT", "REQUESTED"]
    done = next(i for i in clean if i.state == "COMPLETED")
    meta = parse_clean_metadata(timeline.read_details(table.storage, done), done.file_name)
    assert meta.total_files_deleted == 2 and meta.earliest_commit_to_retain == versions[2]
    requested = next(i for i in clean if i.state == "REQUESTED")
    plan = parse_cleaner_plan(timeline.read_details(table.storage, requested), "plan")
    assert plan.earliest_instant_to_retain == (versions[2], "commit", "COMPLETED")


def test_clean_deletes_replaced_file_groups(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = create(root, "MERGE_ON_READ")
    table.append(rows((1, "a", 1, "x")))
    upsert(table, rows((1, "b", 2, "x")))
    table.overwrite(rows((2, "c", 1, "x")))
    bases, logs = _names(root / "city=x")
    assert len(bases) == 2 and len(logs) == 1
    deleted = table.clean(retain_commits=1)
    assert len(deleted) == 2
    bases_after, logs_after = _names(root / "city=x")
    assert len(bases_after) == 1 and logs_after == []
    assert_reads(root, {2: {"id": 2, "name": "c", "ts": 1, "city": "x"}})


def test_clean_spares_what_a_pending_write_may_need(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = create(root, "MERGE_ON_READ", "6", partitioned=False)
    table.append(rows((1, "a", 1, "x")))
    upsert(table, rows((1, "b", 2, "x")))
    pending = table.transaction()
    pending.stage(*table._format_writer(pending.snapshot).upsert(rows((1, "c", 3, "x"))))
    table.compact()
    upsert(table, rows((1, "d", 4, "x")))
    assert table.clean(retain_commits=1) == []  # the pending upsert works on the first slice
    with pytest.raises(CommitConflictError):
        pending.commit()  # it changes the group compacted and updated meanwhile
    assert table.clean(retain_commits=1)
    assert_reads(root, {1: {"id": 1, "name": "d", "ts": 4, "city": "x"}})
