"""Lance commits: rebasing past compatible concurrent commits (lakecore's and pylance's),
conflicts named by the winner, and aborts that leave no file behind."""

from __future__ import annotations

import threading
from pathlib import Path

import pyarrow as pa
import pytest

import lakecore
from lakecore import Table
from lakecore.errors import CommitConflictError
from tests.lance.helpers import assert_same_as_pylance, lance

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def rows(ids: list[int], name: str = "a") -> pa.Table:
    return pa.table({"id": ids, "name": [name] * len(ids)}, schema=SCHEMA)


def ids(table: Table) -> list[int]:
    return sorted(table.to_arrow().column("id").to_pylist())


def files(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()}


def two_fragments(path: Path) -> Table:
    table = lakecore.create(str(path), SCHEMA, format="lance")
    table.append(rows([1, 2, 3]))
    table.append(rows([4, 5, 6]))
    return table


def test_two_appends_from_one_snapshot_both_land(tmp_path: Path) -> None:
    table = two_fragments(tmp_path / "t")
    first, second = table.transaction(), table.transaction()
    first.append(rows([7]))
    second.append(rows([8]))
    won = first.commit().version
    assert second.commit().version == int(won) + 1
    assert ids(table) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert assert_same_as_pylance(tmp_path / "t") == 5


def test_deletes_on_disjoint_fragments_both_land(tmp_path: Path) -> None:
    table = two_fragments(tmp_path / "t")
    first, second = table.transaction(), table.transaction()
    first.delete("id = 1")
    second.update({"name": "'u'"}, "id = 5")
    first.commit()
    second.commit()
    assert ids(table) == [2, 3, 4, 5, 6]
    assert table.to_arrow().to_pylist()[-1] == {"id": 5, "name": "u"}
    assert assert_same_as_pylance(tmp_path / "t") == 5


def test_a_delete_racing_a_delete_on_one_fragment_conflicts(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = two_fragments(path)
    first, second = table.transaction(), table.transaction()
    first.delete("id = 1")
    staged = files(path)
    second.delete("id = 2")
    losers = files(path) - staged
    won = first.commit().version
    with pytest.raises(CommitConflictError) as info:
        second.commit()
    assert info.value.winning_version == won
    # the loser's deletion file and transaction file are gone; the winner's stay
    assert losers and not files(path) & losers
    assert len(list((path / "_transactions").iterdir())) == 4
    assert len(list((path / "_deletions").iterdir())) == 1
    assert ids(table) == [2, 3, 4, 5, 6]
    assert assert_same_as_pylance(path) == 4


def test_an_overwrite_racing_an_append_conflicts(tmp_path: Path) -> None:
    table = two_fragments(tmp_path / "t")
    overwrite, append = table.transaction(), table.transaction()
    overwrite.overwrite(rows([9]))
    append.append(rows([7]))
    append.commit()
    with pytest.raises(CommitConflictError):
        overwrite.commit()
    assert ids(table) == [1, 2, 3, 4, 5, 6, 7]


def test_an_aborted_transaction_leaves_no_file(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = two_fragments(path)
    before = files(path)
    tx = table.transaction()
    tx.delete("id = 1")
    tx.update({"name": "'x'"}, "id = 4")
    tx.append(rows([10]))
    assert files(path) != before
    tx.abort()
    assert files(path) == before
    # a lost race: the loser's transaction file was written before its manifest; abort
    # removes it with the data and deletion files
    winner, loser = table.transaction(), table.transaction()
    winner.delete("id = 2")
    staged = files(path)
    loser.update({"name": "'l'"}, "id = 2")
    losers = files(path) - staged
    assert losers
    winner.commit()
    with pytest.raises(CommitConflictError):
        loser.commit()
    assert not files(path) & losers
    assert len(list((path / "_transactions").iterdir())) == 4  # one per version
    assert assert_same_as_pylance(path) == 4


def test_lakecore_and_pylance_appends_racing_land_exactly_once(tmp_path: Path) -> None:
    path = tmp_path / "race"
    table = lakecore.create(str(path), SCHEMA, format="lance")
    rounds = 8
    errors: list[BaseException] = []

    def run(name: str, base: int) -> None:
        try:
            for i in range(rounds):
                barrier.wait()
                if name == "lakecore":
                    lakecore.open(str(path)).append(rows([base + i], name))
                else:
                    lance.write_dataset(rows([base + i], name), str(path), mode="append")
        except BaseException as exc:  # the main thread reports it
            errors.append(exc)
            barrier.abort()

    barrier = threading.Barrier(2)
    threads = [
        threading.Thread(target=run, args=("lakecore", 0)),
        threading.Thread(target=run, args=("pylance", 100)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    expected = list(range(rounds)) + list(range(100, 100 + rounds))
    assert ids(table) == expected
    assert sorted(lance.dataset(str(path)).to_table().column("id").to_pylist()) == expected
    assert assert_same_as_pylance(path) == 1 + 2 * rounds


def test_an_append_rebases_past_a_pylance_delete_and_update(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = two_fragments(path)
    tx = table.transaction()
    tx.append(rows([7]))
    lance.dataset(str(path)).delete("id = 1")
    lance.dataset(str(path)).update({"name": "'p'"}, "id = 4")
    tx.commit()
    assert ids(table) == [2, 3, 4, 5, 6, 7]
    delete = table.transaction()
    delete.delete("id = 2")
    lance.dataset(str(path)).delete("id = 3")  # the same fragment: a conflict
    with pytest.raises(CommitConflictError):
        delete.commit()
    assert assert_same_as_pylance(path) == 7


def _worker(kind: str, path: str, rounds: int) -> None:
    """One writer process (spawned): ``rounds`` commits of its kind."""
    import lance as pylance

    import lakecore as lc

    for i in range(rounds):
        if kind == "lakecore-append":
            lc.open(path).append(rows([1000 + i], "l"))
        elif kind == "pylance-append":
            pylance.write_dataset(rows([2000 + i], "p"), path, mode="append")
        else:  # lakecore-update: increments row 0's counter once per round
            lc.open(path).update({"name": "CAST(CAST(name AS BIGINT) + 1 AS STRING)"}, "id = 0")


def test_writer_processes_racing_land_every_commit_once(tmp_path: Path) -> None:
    import multiprocessing

    path = tmp_path / "procs"
    table = lakecore.create(str(path), SCHEMA, format="lance")
    table.append(rows([0], "0"))
    context = multiprocessing.get_context("spawn")
    rounds = 6
    procs = [
        context.Process(target=_worker, args=(kind, str(path), rounds))
        for kind in ("lakecore-append", "pylance-append", "lakecore-update")
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    expected = [0, *range(1000, 1000 + rounds), *range(2000, 2000 + rounds)]
    assert ids(table) == expected
    by_id = {r["id"]: r["name"] for r in table.to_arrow().to_pylist()}
    assert by_id[0] == str(rounds)  # no update lost, none applied twice
    assert assert_same_as_pylance(path) == 2 + 3 * rounds
