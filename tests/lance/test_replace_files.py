"""Capability ``replace_files`` on Lance: ``file_writer("replace")`` + ``replace_files`` commit
one Lance ``Update`` (removed_fragment_ids + new_fragments) that pylance reads as lakecore
does, and that both conflict resolvers (lakecore's and pylance's) treat as Lance does: a
concurrent append rebases and lands once, a concurrent delete, update or compaction of a
removed fragment conflicts."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lakecore
from lakecore.errors import CommitConflictError, InvalidArgumentError
from lakecore.format import Capability
from lakecore.model import files as fi
from tests.lance.helpers import assert_same_as_pylance, lance

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def rows(ids: list[int], name: str) -> pa.Table:
    return pa.table({"id": ids, "name": [name] * len(ids)}, schema=SCHEMA)


def three_fragments(path: Path) -> lakecore.Table:
    """Fragments 0 (ids 0, 1; id 1 deleted), 1 (10, 11) and 2 (20, 21)."""
    table = lakecore.create(str(path), SCHEMA, format="lance")
    for i in range(3):
        table.append(rows([10 * i, 10 * i + 1], "a"))
    table.delete("id = 1")
    return table


def live_ids(path: Path, version: int | None = None) -> list[int]:
    return sorted(lance.dataset(str(path), version=version).to_table().column("id").to_pylist())


def lakecore_ids(table: lakecore.Table, version: int | None = None) -> list[int]:
    return sorted(table.snapshot(version=version).to_arrow().column("id").to_pylist())


class Replace:
    """A replace staged in an open transaction (committed by ``commit``)."""

    def __init__(self, table: lakecore.Table, new: list[pa.Table], fragment_ids: list[int]):
        self.tx = table.transaction()
        self.writer = table._format_writer(self.tx.snapshot)
        self.file_writer = self.writer.file_writer("replace", None)
        parts = [self.file_writer.write(p, task) for task, p in enumerate(new)]
        self.files = pa.concat_tables(parts) if parts else parts_schema_empty()
        index = self.tx.snapshot.files()
        keep = pa.array([int(i) in fragment_ids for i in index.column("fragment_id").to_pylist()])
        self.removed = index.filter(keep)
        self.tx.stage(*self.writer.replace_files(self.file_writer, self.files, self.removed))

    def commit(self) -> int:
        return int(self.tx.commit().version)


def parts_schema_empty() -> pa.Table:
    return pa.schema(list(fi.BASE_FIELDS)).empty_table()


def test_lance_declares_replace_files(tmp_path: Path) -> None:
    table = lakecore.create(str(tmp_path / "t"), SCHEMA, format="lance")
    assert Capability.REPLACE_FILES in table.capabilities


def test_replace_is_one_update_that_pylance_reads_now_and_later(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = three_fragments(path)
    base = table.version
    version = Replace(table, [rows([0, 5], "r"), rows([10, 11], "r")], [0, 1]).commit()
    assert version == base + 1
    txn = lance.dataset(str(path)).read_transaction(version)
    assert isinstance(txn.operation, lance.LanceOperation.Update)
    assert sorted(txn.operation.removed_fragment_ids) == [0, 1]
    assert txn.operation.updated_fragments == []
    assert [f.physical_rows for f in txn.operation.new_fragments] == [2, 2]
    want = [0, 5, 10, 11, 20, 21]
    assert live_ids(path, version) == lakecore_ids(table, version) == want
    # The removed fragments are gone whole, deletion file included; the new ones follow.
    fragments = lance.dataset(str(path)).get_fragments()
    assert [f.fragment_id for f in fragments] == [2, 3, 4]
    assert all(f.metadata.deletion_file is None for f in fragments)
    got = table.to_arrow()
    names = dict(zip(got.column("id").to_pylist(), got.column("name").to_pylist(), strict=True))
    assert names == {0: "r", 5: "r", 10: "r", 11: "r", 20: "a", 21: "a"}
    # Later versions too: pylance appends and deletes on top, lakecore reads them alike.
    lance.write_dataset(rows([30], "p"), str(path), mode="append")
    lance.dataset(str(path)).delete("id = 5")
    table.append(rows([40], "l"))
    assert live_ids(path) == lakecore_ids(table) == [0, 10, 11, 20, 21, 30, 40]
    assert assert_same_as_pylance(path) == version + 3
    assert table.history(1)[0].operation == "append"
    assert table.history()[3].operation == "update"
    assert table.history()[3].parameters["removed_fragments"] == 2


@pytest.mark.parametrize(
    ("new", "removed", "want"),
    [
        ([], [0, 2], [10, 11]),
        ([rows([7], "r")], [], [0, 7, 10, 11, 20, 21]),
        ([], [], [0, 10, 11, 20, 21]),
    ],
    ids=["only-removed", "only-added", "nothing"],
)
def test_either_side_may_be_empty(
    tmp_path: Path, new: list[pa.Table], removed: list[int], want: list[int]
) -> None:
    path = tmp_path / "t"
    table = three_fragments(path)
    version = Replace(table, new, removed).commit()
    txn = lance.dataset(str(path)).read_transaction(version)
    assert isinstance(txn.operation, lance.LanceOperation.Update)
    assert sorted(txn.operation.removed_fragment_ids) == removed
    assert live_ids(path, version) == lakecore_ids(table, version) == want
    assert assert_same_as_pylance(path) == version


def test_a_path_that_is_not_live_is_refused_before_anything_is_staged(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = three_fragments(path)
    table.delete("id >= 20")  # fragment 2 is gone from the latest version
    gone = table.snapshot(version=table.version - 1).files().filter(pc.field("fragment_id") == 2)
    made_up = gone.set_column(
        gone.schema.get_field_index(fi.PATH), fi.PATH, pa.array(["data/nope.lance"])
    )
    version = table.version
    for removed in (gone, made_up):
        with table.transaction() as tx:
            writer = table._format_writer(tx.snapshot)
            file_writer = writer.file_writer("replace", None)
            files = file_writer.write(rows([1], "r"), 0)
            with pytest.raises(InvalidArgumentError) as raised:
                writer.replace_files(file_writer, files, removed)
            assert type(raised.value) is InvalidArgumentError
            assert removed.column(fi.PATH)[0].as_py() in str(raised.value)
            writer.discard(file_writer)
        assert tx.version is None  # nothing was staged: the block committed nothing
    assert table.version == version
    assert not [p for p in (path / "data").iterdir() if p.name.startswith("w")]


def test_file_writer_replace_takes_no_where(tmp_path: Path) -> None:
    table = lakecore.create(str(tmp_path / "t"), SCHEMA, format="lance")
    writer = table._format_writer(table.snapshot())
    with pytest.raises(ValueError) as raised:
        writer.file_writer("replace", "id = 1")
    assert type(raised.value) is ValueError


def test_a_pylance_append_during_the_replace_lands_once(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = three_fragments(path)
    replace = Replace(table, [rows([0, 1], "r")], [0])
    lance.write_dataset(rows([99], "p"), str(path), mode="append")  # wins the race
    version = replace.commit()  # rebased past the append
    assert live_ids(path) == lakecore_ids(table) == [0, 1, 10, 11, 20, 21, 99]
    assert version == table.version
    assert assert_same_as_pylance(path) == version


def test_pylance_rebases_its_append_past_a_replace(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = three_fragments(path)
    base = table.version
    Replace(table, [rows([0, 1], "r")], [0]).commit()
    fragments = lance.fragment.write_fragments(rows([99], "p"), str(path))
    lance.LanceDataset.commit(str(path), lance.LanceOperation.Append(fragments), read_version=base)
    assert live_ids(path) == lakecore_ids(table) == [0, 1, 10, 11, 20, 21, 99]


def test_a_concurrent_delete_of_a_removed_fragment_conflicts(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = three_fragments(path)
    replace = Replace(table, [rows([10, 11], "r")], [1])
    written = replace.files.column(fi.PATH).to_pylist()
    lance.dataset(str(path)).delete("id = 10")  # in fragment 1, which the replace removes
    with pytest.raises(CommitConflictError) as raised:
        replace.commit()
    assert type(raised.value) is CommitConflictError
    assert not any((path / p).exists() for p in written)  # the loser's files are removed
    assert live_ids(path) == lakecore_ids(table) == [0, 11, 20, 21]


def test_a_concurrent_delete_elsewhere_rebases(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = three_fragments(path)
    replace = Replace(table, [rows([10, 11], "r")], [1])
    lance.dataset(str(path)).delete("id = 20")  # fragment 2: not removed
    replace.commit()
    assert live_ids(path) == lakecore_ids(table) == [0, 10, 11, 21]


def test_pylance_refuses_a_delete_of_a_fragment_a_replace_removed(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = three_fragments(path)
    base = table.version
    Replace(table, [rows([10, 11], "r")], [1]).commit()
    fragment = lance.dataset(str(path), version=base).get_fragment(1).delete("id = 10")
    delete = lance.LanceOperation.Delete([fragment], [], "id = 10")
    from lance.commit import CommitConflictError as LanceConflict

    with pytest.raises(LanceConflict):
        lance.LanceDataset.commit(str(path), delete, read_version=base)
    assert live_ids(path) == lakecore_ids(table) == [0, 10, 11, 20, 21]


def test_a_concurrent_compaction_of_a_removed_fragment_conflicts(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = three_fragments(path)
    replace = Replace(table, [rows([20, 21], "r")], [2])
    lance.dataset(str(path)).optimize.compact_files(target_rows_per_fragment=1000)
    with pytest.raises(CommitConflictError) as raised:
        replace.commit()
    assert type(raised.value) is CommitConflictError
    assert live_ids(path) == lakecore_ids(table) == [0, 10, 11, 20, 21]


# ------------------------------------------------ through Transaction.replace_files


def test_transaction_replace_files_with_and_without_data(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = three_fragments(path)
    index = table.snapshot().files()
    with table.transaction() as tx:
        written = tx.replace_files([rows([0], "r"), rows([5, 6], "r")], index.slice(0, 1))
    assert [w.num_rows for w in written] == [1, 1]
    assert live_ids(path) == lakecore_ids(table) == [0, 5, 6, 10, 11, 20, 21]
    first = table.snapshot().files().slice(0, 1)  # fragment 1: ids 10, 11
    assert first.column("fragment_id").to_pylist() == [1]
    with table.transaction() as tx:
        assert tx.replace_files([], first) == []
    assert live_ids(path) == lakecore_ids(table) == [0, 5, 6, 20, 21]
    assert assert_same_as_pylance(path) == table.version


def test_an_exclusive_replace_conflicts_even_with_an_append(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = three_fragments(path)
    tx = table.transaction()
    written = tx.replace_files([rows([0], "r")], tx.snapshot.files().slice(0, 1), exclusive=True)
    lance.write_dataset(rows([99], "p"), str(path), mode="append")
    with pytest.raises(CommitConflictError) as raised:
        tx.commit()
    assert type(raised.value) is CommitConflictError
    assert not any((path / p).exists() for w in written for p in w.column(fi.PATH).to_pylist())
    assert live_ids(path) == lakecore_ids(table) == [0, 10, 11, 20, 21, 99]


def test_a_replace_keeps_the_indices_pylance_queries_with(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = three_fragments(path)
    lance.dataset(str(path)).create_scalar_index("id", "BTREE")
    Replace(table, [rows([10, 12], "r")], [1]).commit()
    dataset = lance.dataset(str(path))
    assert [i.name for i in dataset.describe_indices()] == ["id_idx"]
    for where, want in [("id = 10", [10]), ("id = 11", []), ("id = 12", [12])]:
        assert "ScalarIndex" in dataset.scanner(filter=where).explain_plan()
        assert sorted(dataset.to_table(filter=where).column("id").to_pylist()) == want
        assert sorted(table.scan(where).to_arrow().column("id").to_pylist()) == want
    assert live_ids(path) == lakecore_ids(table) == [0, 10, 12, 20, 21]


def test_the_change_feed_of_a_replace(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = three_fragments(path)
    version = Replace(table, [rows([0, 7], "r")], [0]).commit()
    changes = table.changes(version).select(["id", "name", "_change_type"]).to_pylist()
    # The removed fragment's live rows are deleted (id 1 was deleted before), the new inserted.
    assert sorted(changes, key=lambda c: (c["_change_type"], c["id"])) == [
        {"id": 0, "name": "a", "_change_type": "delete"},
        {"id": 0, "name": "r", "_change_type": "insert"},
        {"id": 7, "name": "r", "_change_type": "insert"},
    ]
