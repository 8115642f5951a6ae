"""The change feed derived from manifests: replaying ``changes(v, v)`` on version ``v - 1``'s rows
gives version ``v``'s rows, for every operation pylance writes."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

import lakecore
from lakecore.errors import VersionNotFoundError

from .helpers import lance, reference

CHANGE_COLUMNS = ("_change_type", "_commit_version", "_commit_timestamp")


def _rows(ids: range, tag: str = "a") -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()), "v": [f"{tag}{i}" for i in ids]})


def _bag(table: pa.Table) -> Counter[tuple[object, ...]]:
    return Counter(zip(*(table.column(c).to_pylist() for c in ("id", "v")), strict=True))


def test_replaying_each_version_s_changes_gives_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "ds"
    ds = lance.write_dataset(_rows(range(0, 30)), str(path), max_rows_per_file=10)  # v1
    ds = lance.write_dataset(_rows(range(30, 40)), str(path), mode="append")  # v2
    ds.delete("id % 4 = 0")  # v3: deletion files
    ds.delete("id < 10")  # v4: a fragment dropped whole
    ds.update({"v": "'u'"}, where="id >= 35")  # v5: delete + insert
    ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(
        _rows(range(38, 45), "m")
    )  # v6
    ds.optimize.compact_files(target_rows_per_fragment=1000)  # no row changes
    lance.dataset(str(path), version=2).restore()
    lance.write_dataset(_rows(range(100, 105)), str(path), mode="overwrite")
    table = lakecore.open(str(path))
    versions = [v["version"] for v in lance.dataset(str(path)).versions()]
    assert len(versions) >= 9
    operations = {h.version: h.operation for h in table.history()}
    assert {"delete", "update", "rewrite", "restore", "overwrite"} <= set(operations.values())
    state: Counter[tuple[object, ...]] = Counter()
    for v in versions:
        changes = table.changes(v, v)
        assert set(changes.column("_commit_version").to_pylist()) <= {v}
        kinds = changes.column("_change_type").to_pylist()
        for row, kind in zip(_bag_rows(changes), kinds, strict=True):
            state[row] += 1 if kind == "insert" else -1
        state = +state
        assert state == _bag(reference(path, v)), f"v{v}"
        if operations[v] == "rewrite":
            assert changes.num_rows == 0  # compaction moves rows, changes none
    everything = table.changes(1)
    assert everything.num_rows == sum(table.changes(v, v).num_rows for v in versions)
    assert everything.schema.names == ["id", "v", *CHANGE_COLUMNS]
    assert everything.schema.field("_commit_timestamp").type == pa.timestamp("us", tz="UTC")


def _bag_rows(table: pa.Table) -> list[tuple[object, ...]]:
    return list(zip(*(table.column(c).to_pylist() for c in ("id", "v")), strict=True))


def test_added_columns_change_no_rows_and_take_the_end_schema(tmp_path: Path) -> None:
    path = tmp_path / "cols"
    ds = lance.write_dataset(_rows(range(5)), str(path))
    ds.add_columns({"w": "id * 10"})  # v2
    ds = lance.write_dataset(
        pa.table({"id": pa.array([9], pa.int64()), "v": ["z"], "w": pa.array([90], pa.int64())}),
        str(path),
        mode="append",
    )  # v3
    table = lakecore.open(str(path))
    assert table.changes(2, 2).num_rows == 0
    changes = table.changes(1)
    assert changes.schema.names == ["id", "v", "w", *CHANGE_COLUMNS]
    first = changes.filter(pa.compute.equal(changes.column("_commit_version"), 1))
    assert first.column("w").null_count == 5  # version 1 had no column w
    assert changes.filter(pa.compute.equal(changes.column("id"), 9)).column("w").to_pylist() == [90]


def test_versions_the_dataset_lacks_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "few"
    lance.write_dataset(_rows(range(3)), str(path))
    table = lakecore.open(str(path))
    with pytest.raises(VersionNotFoundError):
        table.changes(5)
    with pytest.raises(VersionNotFoundError):
        table.changes(1, 7)


@pytest.mark.parametrize("restorer", ["pylance", "lakecore"])
def test_a_restore_that_unmarks_deleted_rows_inserts_them(tmp_path: Path, restorer: str) -> None:
    """Restoring to the version before a delete gives a fragment back its older deletion file
    (or none): the rows it brings back are inserts. Fixed in session 12; was: no change at
    all, so a reader of the feed (an incremental migration) never saw them again."""
    path = tmp_path / "ds"
    lance.write_dataset(_rows(range(0, 10)), str(path))  # v1
    lance.dataset(str(path)).delete("id % 3 = 0")  # v2: a deletion file
    lance.dataset(str(path)).delete("id = 1")  # v3: a bigger one
    if restorer == "pylance":
        lance.dataset(str(path), version=2).restore()  # v4
    else:
        lakecore.open(str(path)).restore(2)
    changes = lakecore.open(str(path)).changes(4, 4)
    assert changes.column("_change_type").to_pylist() == ["insert"]
    assert _bag_rows(changes) == [(1, "a1")]
    assert _bag(reference(path, 4)) == _bag(reference(path, 3)) + Counter({(1, "a1"): 1})
