"""Two writers planned on the same snapshot: disjoint file groups both land, overlaps conflict."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from lakecore_hudi.timeline.active import load_timeline
from lakecore_hudi.write.writer import state_of

from lakecore.errors import CommitConflictError, UnsupportedFeatureError
from lakecore.table import Table
from lakecore.transaction import Transaction
from tests.hudi.write.helpers import assert_reads, create, model_of, rows


def _upsert(table: Table, tx: Transaction, data: pa.Table) -> None:
    tx.stage(*table._format_writer(tx.snapshot).upsert(data))  # type: ignore[attr-defined]


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_disjoint_writers_both_commit(tmp_path: Path, table_type: str) -> None:
    root = tmp_path / "t"
    table = create(root, table_type)
    first = rows((1, "a", 1, "x"), (2, "b", 1, "y"))
    table.append(first)
    model = model_of(first)
    one, two, three = table.transaction(), table.transaction(), table.transaction()
    one.append(rows((3, "c", 1, "x")))  # a new file group
    two.append(rows((4, "d", 1, "x")))  # another new file group, same partition
    _upsert(table, three, rows((2, "B", 2, "y")))  # the existing group of partition y
    for tx in (three, one, two):
        tx.commit()
    model.update(model_of(rows((3, "c", 1, "x"), (4, "d", 1, "x"), (2, "B", 2, "y"))))
    assert_reads(root, model)


@pytest.mark.parametrize(
    ("table_type", "version"),
    [("COPY_ON_WRITE", "8"), ("MERGE_ON_READ", "8"), ("MERGE_ON_READ", "6")],
)
def test_upserts_of_one_file_group_conflict(tmp_path: Path, table_type: str, version: str) -> None:
    root = tmp_path / "t"
    table = create(root, table_type, version)
    first = rows((1, "a", 1, "x"), (2, "b", 1, "x"))
    table.append(first)
    winner, loser = table.transaction(), table.transaction()
    _upsert(table, winner, rows((1, "won", 2, "x")))
    before_loser = _files(root)
    _upsert(table, loser, rows((2, "lost", 2, "x")))
    winner.commit()
    with pytest.raises(CommitConflictError) as caught:
        loser.commit()
    assert caught.value.winning_version == winner.version
    model = model_of(first)
    model[1]["name"] = "won"
    model[1]["ts"] = 2
    assert_reads(root, model)
    # The loser's data files are gone and its instant was rolled back.
    config = state_of(table.snapshot()).config
    timeline = load_timeline(table.storage, config)
    assert timeline.pending() == ()
    assert [i.action for i in timeline.completed()][-1] == "rollback"
    data_files = [f for f in _files(root) if not f.startswith(".hoodie")]
    assert data_files == [f for f in before_loser if not f.startswith(".hoodie")]
    # The table stays writable.
    table.append(rows((3, "c", 1, "x")))
    model[3] = {"id": 3, "name": "c", "ts": 1, "city": "x"}
    assert_reads(root, model)


def test_overwrite_conflicts_with_any_concurrent_write(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = create(root)
    table.append(rows((1, "a", 1, "x")))
    append, overwrite = table.transaction(), table.transaction()
    append.append(rows((2, "b", 1, "y")))
    overwrite.overwrite(rows((3, "c", 1, "z")))
    append.commit()
    with pytest.raises(CommitConflictError):
        overwrite.commit()
    assert_reads(root, model_of(rows((1, "a", 1, "x"), (2, "b", 1, "y"))))


def test_compaction_conflicts_with_a_concurrent_update(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = create(root, "MERGE_ON_READ")
    table.append(rows((1, "a", 1, "x")))
    tx = table.transaction()
    _upsert(table, tx, rows((1, "b", 2, "x")))
    tx.commit()
    planned_on = table.snapshot()  # one log file to compact
    tx = table.transaction()
    _upsert(table, tx, rows((1, "c", 3, "x")))
    tx.commit()  # lands while the compaction below works from the older snapshot
    fmt = table._format
    with pytest.raises(CommitConflictError):
        fmt.compact(table.storage, planned_on)  # type: ignore[attr-defined]
    assert_reads(root, {1: {"id": 1, "name": "c", "ts": 3, "city": "x"}})
    assert table.compact() is not None
    assert_reads(root, {1: {"id": 1, "name": "c", "ts": 3, "city": "x"}})


def test_one_transaction_with_several_operations(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = create(root, "MERGE_ON_READ")
    table.append(rows((1, "a", 1, "x"), (2, "b", 1, "y")))
    with table.transaction() as tx:
        tx.delete("id = 1")
        tx.append(rows((3, "c", 1, "z")))
    model = model_of(rows((2, "b", 1, "y"), (3, "c", 1, "z")))
    assert_reads(root, model)
    with pytest.raises(UnsupportedFeatureError), table.transaction() as tx:
        tx.delete("id = 2")
        tx.update({"name": "'q'"}, "id = 2")  # the same file group again
    assert_reads(root, model)
    config = state_of(table.snapshot()).config
    assert load_timeline(table.storage, config).pending() == ()
