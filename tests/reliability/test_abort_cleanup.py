"""An aborted transaction removes what it wrote, and nothing else.

Aborts: an exception inside ``with table.transaction()``, a commit that ends in
``CommitConflictError`` or ``CommitStorageError``, an explicit ``Transaction.abort()``. Delta:
the data, change-data and deletion-vector files the transaction wrote are deleted; files it
merely references (a restore's re-added files) stay. Hudi: the instant is rolled back under
the lock (its files, then its requested/inflight files), so the next writer has nothing to
roll back. After ``CommitStateUnknownError`` nothing is deleted: the commit may have landed.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from lakecore_delta.write import commit as delta_commit
from lakecore_delta.write.committer import DeltaCommitter
from lakecore_hudi.timeline.active import load_timeline
from lakecore_hudi.write import commit as hudi_commit
from lakecore_hudi.write.rollback import rollback_failed_writes
from lakecore_hudi.write.writer import state_of

import lakecore
from lakecore.errors import CommitConflictError, CommitStateUnknownError, CommitStorageError
from lakecore.table import Table
from lakecore.transaction import Transaction
from tests.hudi.write.helpers import assert_reads, model_of
from tests.hudi.write.helpers import create as create_hudi
from tests.hudi.write.helpers import rows as hudi_rows

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


def _rows(*ids: int) -> pa.Table:
    return pa.table({"id": list(ids), "p": [f"p{i % 2}" for i in ids]}, schema=SCHEMA)


def _files(root: Path, meta: str) -> set[str]:
    """Every file under ``root`` outside the metadata directory ``meta``."""
    return {
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and meta not in p.relative_to(root).parts
    }


def _ids(root: Path) -> list[int]:
    return sorted(lakecore.open(str(root)).to_arrow().column("id").to_pylist())


def _delta(tmp_path: Path, dvs: bool = False) -> tuple[Path, Table]:
    root = tmp_path / "d"
    props = {"delta.enableDeletionVectors": "true", "delta.enableChangeDataFeed": "true"}
    table = lakecore.create(
        str(root), SCHEMA, partition_by=["p"], properties=props if dvs else None
    )
    table.append(_rows(*range(0, 2000)))
    return root, table


def _stage_update(tx: Transaction) -> None:
    # Rewrites rows: new data files, a DV file per touched file (> 256 bytes of bitmap), CDC
    # files.
    tx.update({"p": "p"}, "id % 3 = 0")


# ------------------------------------------------------------------ Delta


def test_delta_exception_in_the_block_deletes_the_written_files(tmp_path: Path) -> None:
    root, table = _delta(tmp_path, dvs=True)
    before = _files(root, "_delta_log")
    with pytest.raises(RuntimeError, match="boom"), table.transaction() as tx:
        _stage_update(tx)
        tx.append(_rows(5000))
        written = _files(root, "_delta_log") - before
        raise RuntimeError("boom")
    kinds = {"deletion_vector" in f or f.startswith("_change_data") for f in written}
    assert kinds == {True, False}  # DV or CDC files and data files were written
    assert _files(root, "_delta_log") == before
    assert lakecore.open(str(root)).version == 1
    assert _ids(root) == list(range(2000))


def test_delta_conflict_deletes_the_losers_files_and_keeps_the_winners(tmp_path: Path) -> None:
    root, table = _delta(tmp_path, dvs=True)
    before = _files(root, "_delta_log")
    loser = table.transaction()
    _stage_update(loser)
    mine = _files(root, "_delta_log") - before
    assert mine
    lakecore.open(str(root)).delete("id % 3 = 0")  # the winner changes the same rows
    theirs = _files(root, "_delta_log") - before - mine
    with pytest.raises(CommitConflictError) as caught:
        loser.commit()
    assert caught.value.winning_version == 2
    assert _files(root, "_delta_log") == before | theirs
    assert _ids(root) == [i for i in range(2000) if i % 3]
    # The next writer is not disturbed.
    assert lakecore.open(str(root)).append(_rows(7000)).version == 3


def test_delta_storage_fault_while_rebasing_deletes_the_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, table = _delta(tmp_path)
    before = _files(root, "_delta_log")
    tx = table.transaction()
    tx.append(_rows(5000, 5001))
    mine = _files(root, "_delta_log") - before
    lakecore.open(str(root)).append(_rows(6000))  # a winner that does not conflict
    theirs = _files(root, "_delta_log") - before - mine

    def unreachable(*args: object) -> None:
        raise ConnectionResetError("connection reset by peer")

    monkeypatch.setattr(delta_commit, "check_conflicts", unreachable)
    with pytest.raises(CommitStorageError, match="nothing was committed"):
        tx.commit()
    assert mine and theirs
    assert _files(root, "_delta_log") == before | theirs
    assert _ids(root) == [*range(2000), 6000]


def test_delta_malformed_winner_while_rebasing_deletes_the_files(tmp_path: Path) -> None:
    root, table = _delta(tmp_path)
    before = _files(root, "_delta_log")
    tx = table.transaction()
    tx.append(_rows(5000, 5001))
    mine = _files(root, "_delta_log") - before
    # Version 2 is taken by an entry the rebase cannot read: nothing of this commit landed.
    (root / "_delta_log" / f"{2:020d}.json").write_text('{"add": [not json\n')
    with pytest.raises(lakecore.CorruptTableError):
        tx.commit()
    assert mine
    assert _files(root, "_delta_log") == before


def test_delta_unknown_outcome_deletes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, table = _delta(tmp_path)
    before = _files(root, "_delta_log")

    def lost_reply(self: DeltaCommitter, prepared: object) -> None:
        raise TimeoutError("the reply to the PUT was lost")

    monkeypatch.setattr(DeltaCommitter, "commit", lost_reply)
    tx = table.transaction()
    tx.append(_rows(5000))
    written = _files(root, "_delta_log") - before
    with pytest.raises(CommitStateUnknownError):
        tx.commit()
    tx.abort()  # a no-op: the commit may have landed
    assert written and _files(root, "_delta_log") - before == written


def test_delta_aborted_restore_keeps_the_files_it_re_adds(tmp_path: Path) -> None:
    root, table = _delta(tmp_path)
    table.delete()  # version 2 removes every file; they stay on disk for time travel
    before = _files(root, "_delta_log")
    fmt = table._writable_format()
    with pytest.raises(RuntimeError, match="boom"), table.transaction() as tx:
        tx.stage(*fmt.restore(table.storage, tx.snapshot, 1))  # type: ignore[attr-defined]
        raise RuntimeError("boom")
    assert _files(root, "_delta_log") == before
    assert table.restore(1).version == 3
    assert _ids(root) == list(range(2000))


def test_delta_explicit_abort_deletes_the_written_files(tmp_path: Path) -> None:
    root, table = _delta(tmp_path)
    before = _files(root, "_delta_log")
    tx = table.transaction()
    tx.overwrite(_rows(1, 2, 3))
    assert _files(root, "_delta_log") != before
    tx.abort()
    assert _files(root, "_delta_log") == before
    assert lakecore.open(str(root)).version == 1


# ------------------------------------------------------------------ Hudi


def _hudi(tmp_path: Path, table_type: str, version: str) -> tuple[Path, Table, pa.Table]:
    root = tmp_path / "h"
    table = create_hudi(root, table_type, version)
    first = hudi_rows((1, "a", 1, "x"), (2, "b", 1, "y"))
    table.append(first)
    return root, table, first


def _pending(table: Table) -> list[str]:
    config = state_of(table.snapshot()).config
    return [i.timestamp for i in load_timeline(table.storage, config).pending()]


def _upsert(table: Table, tx: Transaction, data: pa.Table) -> None:
    tx.stage(*table._format_writer(tx.snapshot).upsert(data))  # type: ignore[attr-defined]


HUDI_CASES = [("COPY_ON_WRITE", "8"), ("MERGE_ON_READ", "8"), ("MERGE_ON_READ", "6")]


@pytest.mark.parametrize(("table_type", "version"), HUDI_CASES)
def test_hudi_exception_in_the_block_rolls_the_instant_back(
    tmp_path: Path, table_type: str, version: str
) -> None:
    root, table, first = _hudi(tmp_path, table_type, version)
    before = _files(root, ".hoodie")
    with pytest.raises(RuntimeError, match="boom"), table.transaction() as tx:
        _upsert(table, tx, hudi_rows((1, "A", 2, "x"), (3, "c", 1, "x")))
        assert _pending(table) and _files(root, ".hoodie") != before
        raise RuntimeError("boom")
    assert _pending(table) == []
    assert _files(root, ".hoodie") == before
    config = state_of(table.snapshot()).config
    assert rollback_failed_writes(table.storage, config) == []  # nothing left to roll back
    assert_reads(root, model_of(first))


def test_hudi_conflict_leaves_no_pending_instant_or_files(tmp_path: Path) -> None:
    root, table, first = _hudi(tmp_path, "MERGE_ON_READ", "8")
    winner, loser = table.transaction(), table.transaction()
    _upsert(table, winner, hudi_rows((1, "won", 2, "x")))
    after_winner = _files(root, ".hoodie")
    _upsert(table, loser, hudi_rows((1, "lost", 3, "x")))
    winner.commit()
    with pytest.raises(CommitConflictError):
        loser.commit()
    assert _pending(table) == []
    assert _files(root, ".hoodie") == after_winner
    model = model_of(first)
    model.update(model_of(hudi_rows((1, "won", 2, "x"))))
    assert_reads(root, model)


def test_hudi_explicit_abort_and_unknown_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, table, first = _hudi(tmp_path, "COPY_ON_WRITE", "8")
    before = _files(root, ".hoodie")
    tx = table.transaction()
    _upsert(table, tx, hudi_rows((3, "c", 1, "x")))
    tx.abort()
    assert _pending(table) == [] and _files(root, ".hoodie") == before

    def unknown(*args: object) -> None:
        raise CommitStateUnknownError("completing failed and a completed file exists")

    monkeypatch.setattr(hudi_commit, "_complete_all", unknown)
    tx = table.transaction()
    _upsert(table, tx, hudi_rows((4, "d", 1, "x")))
    (instant,) = _pending(table)
    written = _files(root, ".hoodie") - before
    with pytest.raises(CommitStateUnknownError):
        tx.commit()
    tx.abort()  # a no-op after an unknown outcome
    assert _pending(table) == [instant]
    assert written and _files(root, ".hoodie") - before == written
    assert_reads(root, model_of(first))
