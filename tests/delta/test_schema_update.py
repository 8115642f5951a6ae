"""Schema evolution through Table.update_schema(): add, rename, drop, widen."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import lakecore
from lakecore.errors import SchemaError

BASE = pa.schema([("id", pa.int32()), ("name", pa.string()), ("p", pa.string())])


def _table(tmp_path: Path) -> lakecore.Table:
    table = lakecore.create(str(tmp_path / "t"), BASE, partition_by=["p"])
    table.append(
        pa.table({"id": pa.array([1, 2], pa.int32()), "name": ["a", "b"], "p": ["x", "y"]})
    )
    return table


def _rows(table: lakecore.Table, version: int | None = None) -> list[dict[str, object]]:
    return sorted(table.to_arrow(version=version).to_pylist(), key=lambda r: str(r["id"]))


def test_add_column_reads_null_for_old_rows(tmp_path: Path) -> None:
    table = _table(tmp_path)
    with table.update_schema() as s:
        s.add_column("email", pa.string())
    table.append(
        pa.table({"id": pa.array([3], pa.int32()), "name": ["c"], "p": ["x"], "email": ["e"]})
    )
    assert [r["email"] for r in _rows(table)] == [None, None, "e"]
    assert table.snapshot().schema.names == ["id", "name", "p", "email"]


def test_rename_enables_column_mapping_and_keeps_old_files(tmp_path: Path) -> None:
    table = _table(tmp_path)
    with table.update_schema() as s:
        s.rename_column("name", "full_name")
    snap = table.snapshot()
    assert snap.properties["delta.columnMapping.mode"] == "name"
    assert "columnMapping" in snap.features.reader_features & snap.features.writer_features
    table.append(pa.table({"id": pa.array([3], pa.int32()), "full_name": ["c"], "p": ["y"]}))
    assert [r["full_name"] for r in _rows(table)] == ["a", "b", "c"]
    # Time travel before the rename sees the old name.
    assert [r["name"] for r in _rows(table, 1)] == ["a", "b"]
    deltalake = pytest.importorskip("deltalake")
    # scan() applies column mapping; to_pyarrow_table() does not (a known delta-rs gap).
    theirs = pa.table(deltalake.DeltaTable(table.uri).scan().read_all()).to_pylist()
    assert sorted(r["full_name"] for r in theirs) == ["a", "b", "c"]


def test_drop_column(tmp_path: Path) -> None:
    table = _table(tmp_path)
    with table.update_schema() as s:
        s.drop_column("name")
    assert table.snapshot().schema.names == ["id", "p"]
    assert [r for r in _rows(table)] == [{"id": 1, "p": "x"}, {"id": 2, "p": "y"}]


def test_drop_then_add_same_name_is_a_new_column(tmp_path: Path) -> None:
    table = _table(tmp_path)
    with table.update_schema() as s:
        s.drop_column("name")
    with table.update_schema() as s:
        s.add_column("name", pa.string())
    assert [r["name"] for r in _rows(table)] == [None, None]


def test_widen_type(tmp_path: Path) -> None:
    table = _table(tmp_path)
    with table.update_schema() as s:
        s.widen_type("id", pa.int64())
    table.append(pa.table({"id": [2**40], "name": ["big"], "p": ["x"]}))
    snap = table.snapshot()
    assert snap.schema.field("id").type == pa.int64()
    assert "typeWidening" in snap.features.reader_features
    assert sorted(table.to_arrow().column("id").to_pylist()) == [1, 2, 2**40]


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda s: s.add_column("id", pa.int64()), "already exists"),
        (lambda s: s.add_column("x", pa.int64(), nullable=False), "nullable"),
        (lambda s: s.rename_column("missing", "y"), "no column"),
        (lambda s: s.rename_column("id", "name"), "already exists"),
        (lambda s: s.rename_column("p", "q"), "partition"),
        (lambda s: s.drop_column("p"), "partition"),
        (lambda s: s.widen_type("id", pa.int16()), "widening"),
        (lambda s: s.widen_type("name", pa.int64()), "widening"),
    ],
)
def test_invalid_changes_raise_and_commit_nothing(tmp_path: Path, change, match: str) -> None:  # type: ignore[no-untyped-def]
    table = _table(tmp_path)
    before = table.version
    with pytest.raises(SchemaError, match=match), table.update_schema() as s:
        change(s)
    assert table.version == before


def test_error_inside_block_commits_nothing(tmp_path: Path) -> None:
    table = _table(tmp_path)
    before = table.version
    with pytest.raises(RuntimeError), table.update_schema() as s:
        s.add_column("email", pa.string())
        raise RuntimeError("boom")
    assert table.version == before
    assert "email" not in table.snapshot().schema.names
