"""Datasets pylance writes (tmp_path) read in lakecore equal to ``lance.dataset(...).to_table()``
at every version: append, delete (Arrow and bitmap deletion files), update, add/drop columns,
merge_insert, compaction, tags, restore; nested types; both manifest namings."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from lakecore_lance.deletions import read_deleted
from lakecore_lance.format import LanceFormat

import lakecore
from lakecore.errors import VersionNotFoundError
from lakecore.planning import read_files

from .helpers import assert_same_as_pylance, lance, reference, sort_rows

STORAGE_VERSIONS = ("2.0", "2.1")


def _rows(ids: range) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "name": [f"n{i}" for i in ids],
            "x": [i / 2 for i in ids],
        }
    )


@pytest.mark.parametrize("storage_version", STORAGE_VERSIONS)
def test_every_operation_at_every_version(tmp_path: Path, storage_version: str) -> None:
    path = tmp_path / "ds"
    ds = lance.write_dataset(
        _rows(range(0, 40)), str(path), data_storage_version=storage_version, max_rows_per_file=15
    )
    ds = lance.write_dataset(_rows(range(40, 60)), str(path), mode="append")
    ds.delete("id % 7 = 0")
    ds.update({"name": "'updated'"}, where="id >= 50")
    ds.add_columns({"y": "id * 3"})
    ds.drop_columns(["x"])
    ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(
        pa.table({"id": pa.array([1, 100], pa.int64()), "name": ["m1", "m100"], "y": [-1, -2]})
    )
    ds.optimize.compact_files(target_rows_per_fragment=1000)
    lance.dataset(str(path), version=3).restore()
    assert assert_same_as_pylance(path) == 10


@pytest.mark.parametrize("storage_version", STORAGE_VERSIONS)
def test_nested_types(tmp_path: Path, storage_version: str) -> None:
    n = 12
    table = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "point": pa.array([{"x": float(i), "y": -float(i)} for i in range(n)]),
            "tags": pa.array([[f"t{i}"] * (i % 3) for i in range(n)], pa.list_(pa.string())),
            "big": pa.array([[i, i + 1] for i in range(n)], pa.large_list(pa.int32())),
            "vec": pa.array([[float(i)] * 4 for i in range(n)], pa.list_(pa.float32(), 4)),
            "cat": pa.array([f"c{i % 2}" for i in range(n)]).dictionary_encode(),
            "ls": pa.array([f"s{i}" for i in range(n)], pa.large_string()),
            "ts": pa.array(range(n), pa.timestamp("us", "UTC")),
            "dec": pa.array([i for i in range(n)], pa.decimal128(10, 2)),
        }
    )
    path = tmp_path / "nested"
    ds = lance.write_dataset(table, str(path), data_storage_version=storage_version)
    ds.delete("id = 3")
    assert assert_same_as_pylance(path) == 2
    snap = lakecore.open(str(path)).snapshot()
    ids = [f.metadata[b"lakecore.field_id"] for f in snap.schema]
    assert len(set(ids)) == len(ids)
    point = snap.schema.field("point").type
    child_ids = [int(point.field(i).metadata[b"lakecore.field_id"]) for i in range(2)]
    assert child_ids == [int(ids[1]) + 1, int(ids[1]) + 2]  # depth first, after the struct


def test_projection_and_columns_from_several_files(tmp_path: Path) -> None:
    path = tmp_path / "proj"
    ds = lance.write_dataset(_rows(range(20)), str(path))
    ds.add_columns({"y": "id + 1000"})
    fragments = lance.dataset(str(path)).get_fragments()
    assert len(fragments[0].data_files()) == 2
    table = lakecore.open(str(path))
    got = table.to_arrow(columns=["y", "id"])
    assert got.column_names == ["y", "id"]
    assert sorted(got.column("y").to_pylist()) == [i + 1000 for i in range(20)]
    files = table.snapshot().files()
    assert files.column("data_files").to_pylist()[0][0] == files.column("path")[0].as_py()
    assert len(files.column("data_files")[0]) == 2


def test_bitmap_and_arrow_deletion_files(tmp_path: Path) -> None:
    path = tmp_path / "dels"
    ds = lance.write_dataset(_rows(range(14000)), str(path), max_rows_per_file=12000)
    ds.delete("id >= 12000 and id < 12010")  # few rows: an Arrow IPC deletion file
    ds.delete("id < 12000 and id % 2 = 0")  # over 5,000 rows: a roaring bitmap
    kinds = sorted(p.suffix for p in (path / "_deletions").iterdir())
    assert ".arrow" in kinds and ".bin" in kinds
    assert assert_same_as_pylance(path) == 3


def test_deleted_positions_equal_pylance(tmp_path: Path) -> None:
    path = tmp_path / "positions"
    ds = lance.write_dataset(_rows(range(3000)), str(path), max_rows_per_file=1000)
    ds.delete("id % 3 = 0 and id < 1500")
    ds.delete("id > 2100 and id < 2600")
    table = lakecore.open(str(path))
    snap = table.snapshot()
    files = snap.files()
    context = snap.source.scan_context()
    got = LanceFormat().deleted_positions(context, files)
    live = reference(path)
    addresses = lance.dataset(str(path)).to_table(with_row_address=True).column("_rowaddr")
    by_fragment: dict[int, set[int]] = {}
    for a in addresses.to_pylist():
        by_fragment.setdefault(a >> 32, set()).add(a & 0xFFFFFFFF)
    assert live.num_rows == sum(len(v) for v in by_fragment.values())
    checked = 0
    for fragment_id, rows, positions in zip(
        files.column("fragment_id").to_pylist(),
        files.column("record_count").to_pylist(),
        got,
        strict=True,
    ):
        expected = sorted(set(range(rows)) - by_fragment.get(fragment_id, set()))
        if not expected:
            assert positions is None
            continue
        assert positions is not None and positions.dtype == np.uint64
        assert positions.tolist() == expected
        checked += 1
    assert checked == 3


def test_tags_time_travel_and_history(tmp_path: Path) -> None:
    path = tmp_path / "tt"
    ds = lance.write_dataset(_rows(range(10)), str(path))
    ds = lance.write_dataset(_rows(range(10, 20)), str(path), mode="append")
    ds.delete("id < 5")
    ds.tags.create("before_delete", 2)
    table = lakecore.open(str(path))
    assert table.version == 3
    tagged = table.snapshot(version="before_delete")
    assert tagged.version == 2 and tagged.to_arrow().num_rows == 20
    with pytest.raises(VersionNotFoundError):
        table.snapshot(version="no_such_tag")
    with pytest.raises(VersionNotFoundError):
        table.snapshot(version=99)
    versions = lance.dataset(str(path)).versions()
    for v in versions:
        ms = int(v["timestamp"].timestamp() * 1000)
        assert table.snapshot(timestamp=ms + 1).version >= v["version"]
    with pytest.raises(VersionNotFoundError):
        table.snapshot(timestamp=0)
    history = table.history()
    assert [h.version for h in history] == [3, 2, 1]
    assert [h.operation for h in history] == ["delete", "append", "overwrite"]
    assert history[0].parameters["predicate"] == "id < 5"
    assert history[0].timestamp is not None
    assert [h.version for h in table.history(limit=1)] == [3]


def test_history_reads_the_inline_transaction_without_transaction_files(
    tmp_path: Path,
) -> None:
    # pylance 14 inlines each transaction in its manifest (field 23, ``transaction_section``)
    # besides the _transactions/ file: with those files gone the history still knows each
    # operation from the manifests alone.
    path = tmp_path / "inline"
    ds = lance.write_dataset(_rows(range(10)), str(path))
    ds = lance.write_dataset(_rows(range(10, 20)), str(path), mode="append")
    ds.delete("id < 5")
    removed = 0
    for txn in (path / "_transactions").iterdir():
        txn.unlink()
        removed += 1
    assert removed == 3
    history = lakecore.open(str(path)).history()
    assert [h.operation for h in history] == ["delete", "append", "overwrite"]
    assert history[0].parameters["predicate"] == "id < 5"


def test_scan_context_pickles_and_reads_in_another_process_shape(tmp_path: Path) -> None:
    path = tmp_path / "pickled"
    ds = lance.write_dataset(_rows(range(30)), str(path), max_rows_per_file=10)
    ds.delete("id = 4 or id = 25")
    snap = lakecore.open(str(path)).snapshot()
    context = snap.source.scan_context()
    clone = pickle.loads(pickle.dumps(context))
    assert clone.storage is None and clone.state == context.state
    rows = pa.Table.from_batches(list(read_files(clone, snap.files())))
    assert sort_rows(rows).equals(sort_rows(reference(path)))


def test_read_deleted_decodes_both_forms(tmp_path: Path) -> None:
    path = tmp_path / "forms"
    ds = lance.write_dataset(_rows(range(8000)), str(path))
    ds.delete("id < 3")
    ds.delete("id >= 1000")
    storage = lakecore.open(str(path)).storage
    found = {}
    for p in sorted((path / "_deletions").iterdir()):
        found[p.suffix] = read_deleted(storage, f"_deletions/{p.name}")
    assert found[".arrow"].tolist() == [0, 1, 2]
    assert found[".bin"].tolist() == [0, 1, 2, *range(1000, 8000)]


@pytest.mark.parametrize("storage_version", STORAGE_VERSIONS)
def test_renamed_and_dropped_fields_nested_too(tmp_path: Path, storage_version: str) -> None:
    """Data files keep their old field names: children are matched by field id, not name."""
    n = 10
    table = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "point": pa.array([{"x": float(i), "y": -float(i)} for i in range(n)]),
            "name": [f"n{i}" for i in range(n)],
            "ev": pa.array([[{"k": "a", "n": i}] for i in range(n)]),
        }
    )
    path = tmp_path / "renamed"
    ds = lance.write_dataset(
        table, str(path), data_storage_version=storage_version, enable_stable_row_ids=True
    )
    ds.alter_columns({"path": "name", "name": "label"})
    ds.drop_columns(["point.y"])
    ds.add_columns({"z": "id + 1"})
    ds.delete("id = 2")
    ds.alter_columns({"path": "point.x", "name": "px"})
    ds.alter_columns({"path": "ev.item.k", "name": "kind"})
    assert assert_same_as_pylance(path) == 7
    latest = lakecore.open(str(path)).to_arrow()
    assert sorted(r["px"] for r in latest.column("point").to_pylist()) == [
        float(i) for i in range(n) if i != 2
    ]


def test_scan_with_a_predicate_and_a_count(tmp_path: Path) -> None:
    path = tmp_path / "scan"
    ds = lance.write_dataset(_rows(range(50)), str(path), max_rows_per_file=20)
    ds.delete("id % 5 = 0")
    table = lakecore.open(str(path))
    got = table.scan(where="id >= 12 AND x < 20", columns=["name"]).to_arrow()
    want = lance.dataset(str(path)).to_table(columns=["name"], filter="id >= 12 AND x < 20")
    assert sorted(got.column("name").to_pylist()) == sorted(want.column("name").to_pylist())
    assert got.num_rows == 23  # ids 12..39 but multiples of 5
    assert table.snapshot().to_arrow(columns=[]).num_rows == lance.dataset(str(path)).count_rows()
    assert len(table.scan().tasks()) == 3
