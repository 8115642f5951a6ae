"""replace_files on Hudi tables (capability ``replace_files``): one replacecommit publishing new
file groups (written by ``file_writer("replace")``) and replacing the file groups of given
file-index rows, copy-on-write and merge-on-read; hudi-rs reads the result."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lakecore
from lakecore.errors import CommitConflictError, InvalidArgumentError
from lakecore.model import files as fi
from lakecore.table import Table
from tests.hudi.write.helpers import (
    Row,
    assert_reads,
    create,
    expected_rows,
    hudi_rs_rows,
    lakecore_rows,
    model_of,
    rows,
    upsert,
)

TYPES = ["COPY_ON_WRITE", "MERGE_ON_READ"]


def _table(root: Path, table_type: str, version: str = "8") -> tuple[Table, dict[int, Row]]:
    """A table with slices in partitions x and y; x's slice has a log file on MoR."""
    table = create(root, table_type, version)
    first = rows((1, "a", 1, "x"), (2, "b", 1, "x"), (3, "c", 1, "y"))
    table.append(first)
    upsert(table, rows((2, "b2", 2, "x")))
    model = model_of(first)
    model[2] = {"id": 2, "name": "b2", "ts": 2, "city": "x"}
    return table, model


def _in(index: pa.Table, partition: str) -> pa.Table:
    """The file-index rows of ``partition``'s slices."""
    return index.filter(pc.starts_with(index.column(fi.PATH), f"city={partition}/"))


def _replace(table: Table, data: pa.Table | None, removed: pa.Table) -> int | str:
    """Commit ``replace_files`` through the format writer (as Transaction.replace_files)."""
    with table.transaction() as tx:
        writer = table._format_writer(tx.snapshot)
        file_writer = writer.file_writer("replace", None)
        written = [] if data is None else [file_writer.write(data, 0)]
        files = written[0] if written else pa.table({fi.PATH: pa.array([], pa.string())})
        tx.stage(*writer.replace_files(file_writer, files, removed))
    assert tx.version is not None
    return tx.version


def _timeline(root: Path) -> list[str]:
    return sorted(p.name for p in (root / ".hoodie" / "timeline").glob("*") if p.is_file())


@pytest.mark.parametrize("version", ["6", "8"])
@pytest.mark.parametrize("table_type", TYPES)
def test_replace_publishes_and_removes_in_one_replacecommit(
    tmp_path: Path, table_type: str, version: str
) -> None:
    root = tmp_path / "t"
    table, model = _table(root, table_type, version)
    index = table.snapshot().files()
    removed = _in(index, "x")
    if table_type == "MERGE_ON_READ":  # the removed slice merges a log file
        assert len(removed.column(fi.DATA_FILES)[0].as_py()) == 2
    version = _replace(table, rows((10, "n", 1, "x"), (11, "n", 1, "z")), removed)
    for gone in (1, 2):
        del model[gone]
    model |= {
        10: rows((10, "n", 1, "x")).to_pylist()[0],
        11: rows((11, "n", 1, "z")).to_pylist()[0],
    }
    assert_reads(root, model)
    entry = lakecore.open(str(root)).history()[0]
    assert entry.version == version
    assert entry.info["action"] == "replacecommit"
    assert entry.operation == "insert_overwrite"
    paths = set(lakecore.open(str(root)).snapshot().files().column(fi.PATH).to_pylist())
    assert not paths & set(removed.column(fi.PATH).to_pylist())
    assert set(_in(index, "y").column(fi.PATH).to_pylist()) <= paths


@pytest.mark.parametrize("table_type", TYPES)
def test_only_removing_or_only_adding(tmp_path: Path, table_type: str) -> None:
    root = tmp_path / "t"
    table, model = _table(root, table_type)
    _replace(table, None, _in(table.snapshot().files(), "y"))
    del model[3]
    assert_reads(root, model)
    _replace(table, rows((7, "n", 1, "y")), table.snapshot().files().slice(0, 0))
    model[7] = rows((7, "n", 1, "y")).to_pylist()[0]
    assert_reads(root, model)
    _replace(table, None, pa.table({fi.PATH: pa.array([], pa.string())}))
    assert_reads(root, model)


def test_a_removed_path_that_is_not_live_is_refused_and_nothing_stays(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table, model = _table(root, "MERGE_ON_READ")
    before = _timeline(root)
    removed = pa.table({fi.PATH: ["city=x/not-a-file.parquet"]})
    with pytest.raises(InvalidArgumentError) as caught, table.transaction() as tx:
        writer = table._format_writer(tx.snapshot)
        file_writer = writer.file_writer("replace", None)
        files = file_writer.write(rows((9, "n", 1, "q")), 0)
        written = root / files.column(fi.PATH)[0].as_py()
        assert written.exists()
        writer.replace_files(file_writer, files, removed)
    assert type(caught.value) is InvalidArgumentError
    assert not written.exists()  # discarded: the instant was rolled back
    completed = [n for n in _timeline(root) if n not in before and "rollback" not in n]
    assert not [n for n in completed if n.endswith(".replacecommit")], completed
    assert lakecore_rows(root) == hudi_rs_rows(root) == expected_rows(model)


def test_an_overwrite_file_writer_is_refused(tmp_path: Path) -> None:
    table, _ = _table(tmp_path / "t", "COPY_ON_WRITE")
    with pytest.raises(InvalidArgumentError) as caught, table.transaction() as tx:
        writer = table._format_writer(tx.snapshot)
        file_writer = writer.file_writer("overwrite", "city = 'x'")
        writer.replace_files(
            file_writer, file_writer.write(rows((9, "n", 1, "x")), 0), tx.snapshot.files()
        )
    assert type(caught.value) is InvalidArgumentError
    with pytest.raises(ValueError):
        table._format_writer(table.snapshot()).file_writer("replace", "city = 'x'")


@pytest.mark.parametrize("table_type", TYPES)
def test_a_concurrent_write_to_a_removed_file_group_conflicts(
    tmp_path: Path, table_type: str
) -> None:
    root = tmp_path / "t"
    table, model = _table(root, table_type)
    with pytest.raises(CommitConflictError) as caught, table.transaction() as tx:
        writer = table._format_writer(tx.snapshot)
        file_writer = writer.file_writer("replace", None)
        files = file_writer.write(rows((10, "n", 1, "x")), 0)
        tx.stage(*writer.replace_files(file_writer, files, _in(tx.snapshot.files(), "x")))
        lakecore.open(str(root)).update({"name": "'u'"}, "id = 1")  # wins the race
    assert caught.value.winning_version is not None
    model[1]["name"] = "u"
    assert_reads(root, model)


def test_an_exclusive_replace_conflicts_with_any_concurrent_write(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table, model = _table(root, "COPY_ON_WRITE")
    with pytest.raises(CommitConflictError) as caught, table.transaction() as tx:
        tx.replace_files([rows((10, "n", 1, "x"))], _in(tx.snapshot.files(), "x"), exclusive=True)
        lakecore.open(str(root)).append(rows((5, "e", 1, "w")))  # another partition
    assert caught.value.winning_version is not None
    model[5] = rows((5, "e", 1, "w")).to_pylist()[0]
    assert_reads(root, model)
    # Not exclusive: the same replace commits past a write to another file group.
    with table.transaction() as tx:
        tx.replace_files([rows((10, "n", 1, "x"))], _in(tx.snapshot.files(), "x"))
        lakecore.open(str(root)).append(rows((6, "e", 1, "w")))
    for gone in (1, 2):
        del model[gone]
    model |= {i: r for i, r in model_of(rows((6, "e", 1, "w"), (10, "n", 1, "x"))).items()}
    assert_reads(root, model)
