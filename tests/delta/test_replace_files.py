"""Delta ``replace_files`` (capability of the migration contract): publish new files and
remove given files of the index whole, in one commit, with Delta's conflict rules."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from lakecore_delta.write.file_writer import DeltaFileWriter

import lakecore
from lakecore import Table
from lakecore.errors import (
    CommitConflictError,
    ConstraintViolationError,
    InvalidArgumentError,
    SchemaError,
)
from lakecore.format import Capability
from lakecore.model.files import PATH
from lakecore.transaction import Transaction

from .write.helpers import LOG, canonical, delta_rs_rows

SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string())])


def rows(*ids: int, part: str = "a") -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "part": [part] * len(ids)}, schema=SCHEMA)


def new_table(tmp_path: Path, **properties: str) -> Table:
    props = {k.replace("_", "."): v for k, v in properties.items()}
    return lakecore.create(str(tmp_path / "t"), SCHEMA, format="delta", properties=props)


def commit_lines(table: Table, version: int) -> list[dict[str, Any]]:
    text = (Path(table.uri) / LOG / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines()]


def files_of(table: Table, *ids: int) -> pa.Table:
    """The index rows of the files whose id range holds any of ``ids``."""
    index = table.snapshot().files()
    low = pc.struct_field(index.column("min"), "id")
    high = pc.struct_field(index.column("max"), "id")
    hit = pa.array([False] * index.num_rows)
    for i in ids:
        hit = pc.or_(hit, pc.and_(pc.less_equal(low, i), pc.greater_equal(high, i)))
    return index.filter(hit)


def parquet_files(table: Table) -> set[str]:
    root = Path(table.uri)
    return {str(p.relative_to(root)) for p in root.rglob("*.parquet") if LOG not in p.parts}


def test_delta_declares_replace_files(tmp_path: Path) -> None:
    assert Capability.REPLACE_FILES in new_table(tmp_path).capabilities


def test_replace_keeps_the_rows_and_deltalake_reads_them(tmp_path: Path) -> None:
    t = new_table(tmp_path)
    t.append(rows(1, 2))
    t.append(rows(3))
    t.append(rows(4, part="b"))
    before = canonical(t.to_arrow())
    removed = files_of(t, 1, 3)
    assert removed.num_rows == 2
    with t.transaction() as tx:
        written = tx.replace_files([rows(1, 2, 3)], removed)
    assert t.version == 4
    assert canonical(t.to_arrow()) == before
    assert delta_rs_rows(t.uri) == before
    assert t.snapshot().files().num_rows == 2
    lines = commit_lines(t, 4)
    info = lines[0]["commitInfo"]
    assert isinstance(info, dict) and info["operation"] == "REPLACE FILES"
    assert info["operationParameters"] == {"addedFiles": "1", "removedFiles": "2"}
    removes = sorted(line["remove"]["path"] for line in lines if "remove" in line)
    adds = [line["add"]["path"] for line in lines if "add" in line]
    assert removes == sorted(removed.column(PATH).to_pylist())
    assert adds == written[0].column(PATH).to_pylist()
    assert adds[0].startswith("write-")
    # Time travel still reads the replaced files.
    assert canonical(t.to_arrow(version=3)) == before


def test_file_writer_replace_writes_like_an_append(tmp_path: Path) -> None:
    t = new_table(tmp_path)
    with t.transaction() as tx:
        writer = t._format_writer(tx.snapshot)
        fw = writer.file_writer("replace", None)
        assert isinstance(fw, DeltaFileWriter)
        assert fw.schema == t.snapshot().schema
        with pytest.raises(SchemaError):
            fw.write(pa.table({"nope": [1]}), 0)
        files = fw.write(rows(5), 0)
        tx.stage(*writer.replace_files(fw, files, t.snapshot().files().slice(0, 0)))
    assert t.to_arrow().column("id").to_pylist() == [5]
    add = [line for line in commit_lines(t, 1) if "add" in line]
    assert len(add) == 1


def test_replace_takes_no_where(tmp_path: Path) -> None:
    t = new_table(tmp_path)
    writer = t._format_writer(t.snapshot())
    with pytest.raises(InvalidArgumentError):
        writer.file_writer("replace", "id = 1")


def test_a_removed_path_that_is_not_live_is_refused_before_staging(tmp_path: Path) -> None:
    t = new_table(tmp_path)
    t.append(rows(1))
    gone = t.snapshot().files()
    t.overwrite(rows(2))  # the first file is no longer live
    before = parquet_files(t)
    for removed in (gone, pa.table({PATH: ["no/such/file.parquet"]})):
        tx = t.transaction()
        with pytest.raises(InvalidArgumentError, match="not live"):
            tx.replace_files([rows(9)], removed)
        tx.abort()
        assert t.version == 2
        assert parquet_files(t) == before, "the replacement files were discarded"
    # Directly: the writer refuses before returning any action.
    writer = t._format_writer(t.snapshot())
    fw = writer.file_writer("replace", None)
    with pytest.raises(InvalidArgumentError, match="not live"):
        writer.replace_files(fw, fw.write(rows(9), 0), gone)
    writer.discard(fw)
    assert parquet_files(t) == before


def test_files_the_file_writer_did_not_write_are_refused(tmp_path: Path) -> None:
    t = new_table(tmp_path)
    t.append(rows(1))
    writer = t._format_writer(t.snapshot())
    fw = writer.file_writer("replace", None)
    foreign = t.snapshot().files()  # a live file: an abort must never delete it
    with pytest.raises(InvalidArgumentError, match="only files its file_writer wrote"):
        writer.replace_files(fw, foreign, foreign.slice(0, 0))
    with pytest.raises(InvalidArgumentError):
        writer.replace_files(object(), foreign.slice(0, 0), foreign.slice(0, 0))


def test_either_side_may_be_empty(tmp_path: Path) -> None:
    t = new_table(tmp_path)
    t.append(rows(1))
    t.append(rows(2))
    with t.transaction() as tx:  # only removes
        tx.replace_files([], files_of(t, 1))
    assert delta_rs_rows(t.uri) == canonical(rows(2)) == canonical(t.to_arrow())
    with t.transaction() as tx:  # only adds: a blind append
        tx.replace_files([rows(3)], pa.table({PATH: pa.array([], pa.string())}))
    assert commit_lines(t, 4)[0]["commitInfo"]["isBlindAppend"] is True
    with t.transaction(app_metadata={"k": "v"}) as tx:  # neither: still one commit (of its
        tx.replace_files([], t.snapshot().files().slice(0, 0))  # commitInfo alone)
    assert t.version == 5
    assert t.history(1)[0].app_metadata == {"k": "v"}
    assert [list(line) for line in commit_lines(t, 5)] == [["commitInfo"]]
    assert delta_rs_rows(t.uri) == canonical(rows(2, 3)) == canonical(t.to_arrow())


def test_a_file_with_a_deletion_vector_is_removed_whole(tmp_path: Path) -> None:
    t = new_table(tmp_path, delta_enableDeletionVectors="true")
    t.append(rows(1, 2, 3))
    t.delete("id = 2")
    removed = t.snapshot().files()
    assert removed.column("deletion").to_pylist()[0] is not None
    live = t.to_arrow()
    with t.transaction() as tx:
        tx.replace_files([live], removed)
    assert canonical(t.to_arrow()) == canonical(rows(1, 3)) == delta_rs_rows(t.uri)
    remove = next(line["remove"] for line in commit_lines(t, 3) if "remove" in line)
    assert remove["deletionVector"]["cardinality"] == 1
    assert t.snapshot().files().column("deletion").to_pylist() == [None]


def test_partitioned_table(tmp_path: Path) -> None:
    t = lakecore.create(str(tmp_path / "t"), SCHEMA, format="delta", partition_by=["part"])
    t.append(pa.concat_tables([rows(1, 2), rows(3, part="b")]))
    before = canonical(t.to_arrow())
    removed = t.snapshot().files()
    with t.transaction() as tx:
        tx.replace_files([rows(1, 2), rows(3, part="b")], removed)
    assert canonical(t.to_arrow()) == before == delta_rs_rows(t.uri)
    assert sorted(t.snapshot().files().column("partition").to_pylist(), key=str) == [
        {"part": "a"},
        {"part": "b"},
    ]


def test_the_change_feed_sees_deletes_and_inserts(tmp_path: Path) -> None:
    t = new_table(tmp_path, delta_enableChangeDataFeed="true")
    t.append(rows(1, 2))
    with t.transaction() as tx:
        tx.replace_files([rows(2, 7)], t.snapshot().files())
    changes = t.changes(2)
    ids, kinds = changes.column("id").to_pylist(), changes.column("_change_type").to_pylist()
    got = sorted(zip(ids, kinds, strict=True))
    assert got == [(1, "delete"), (2, "delete"), (2, "insert"), (7, "insert")]


def test_an_append_only_table_refuses_removals(tmp_path: Path) -> None:
    t = new_table(tmp_path, delta_appendOnly="true")
    t.append(rows(1))
    before = parquet_files(t)
    tx = t.transaction()
    with pytest.raises(ConstraintViolationError):
        tx.replace_files([rows(2)], t.snapshot().files())
    tx.abort()
    assert parquet_files(t) == before
    with t.transaction() as tx:
        tx.replace_files([rows(2)], t.snapshot().files().slice(0, 0))
    assert sorted(t.to_arrow().column("id").to_pylist()) == [1, 2]


# ------------------------------------------------------------------------ concurrency


def staged_replace(t: Table, removed_ids: tuple[int, ...]) -> tuple[Transaction, set[str]]:
    """A transaction replacing the files of ``removed_ids`` by one file of the same rows,
    staged but not committed; returns it and the paths it wrote."""
    tx = t.transaction()
    removed = files_of(t, *removed_ids)
    live = pc.is_in(t.to_arrow().column("id"), value_set=pa.array(removed_ids, pa.int64()))
    written = tx.replace_files([t.to_arrow().filter(live)], removed)
    return tx, set(written[0].column(PATH).to_pylist())


DV = {"delta.enableDeletionVectors": "true"}


@pytest.mark.parametrize(
    ("properties", "concurrent"),
    [
        pytest.param(DV, lambda other: other.delete("id = 1"), id="deletion-vector-added"),
        pytest.param({}, lambda other: other.delete("id <= 2"), id="file-removed"),
        pytest.param({}, lambda other: other.delete("id = 1"), id="file-rewritten"),
        pytest.param(DV, lambda other: other.update({"id": "id + 100"}, "id = 2"), id="updated"),
    ],
)
def test_a_concurrent_change_to_a_removed_file_conflicts(
    tmp_path: Path, properties: dict[str, str], concurrent: Callable[[Table], object]
) -> None:
    t = lakecore.create(str(tmp_path / "t"), SCHEMA, format="delta", properties=properties)
    t.append(rows(1, 2))
    t.append(rows(3))
    tx, written = staged_replace(t, (1, 2))
    other = lakecore.open(t.uri)
    concurrent(other)
    winner = other.version
    want = canonical(other.to_arrow())
    with pytest.raises(CommitConflictError) as caught:
        tx.commit()
    assert caught.value.winning_version == winner
    assert lakecore.open(t.uri).version == winner
    assert canonical(lakecore.open(t.uri).to_arrow()) == want == delta_rs_rows(t.uri)
    assert not written & parquet_files(t), "the loser's files were removed"


def test_a_dv_change_on_a_removed_file_conflicts(tmp_path: Path) -> None:
    # The winner changes a deletion vector the file already has (remove + add of one path).
    t = new_table(tmp_path, delta_enableDeletionVectors="true")
    t.append(rows(1, 2, 3))
    t.delete("id = 3")
    tx, written = staged_replace(t, (1, 2))
    other = lakecore.open(t.uri)
    other.delete("id = 1")
    assert isinstance(other.version, int)
    lines = commit_lines(other, other.version)
    assert [line["remove"]["path"] for line in lines if "remove" in line] == [
        line["add"]["path"] for line in lines if "add" in line
    ]
    with pytest.raises(CommitConflictError):
        tx.commit()
    assert canonical(lakecore.open(t.uri).to_arrow()) == canonical(rows(2))
    assert not written & parquet_files(t)


def test_a_concurrent_append_or_unrelated_change_does_not_conflict(tmp_path: Path) -> None:
    t = new_table(tmp_path, delta_enableDeletionVectors="true")
    t.append(rows(1, 2))
    t.append(rows(3, 4))
    tx, written = staged_replace(t, (1, 2))
    other = lakecore.open(t.uri)
    other.append(rows(5))
    other.delete("id = 4")  # a deletion vector on a file this replace does not touch
    version = tx.commit().version
    assert version == 5
    want = canonical(rows(1, 2, 3, 5))
    assert canonical(lakecore.open(t.uri).to_arrow()) == want == delta_rs_rows(t.uri)
    assert written <= parquet_files(t)
