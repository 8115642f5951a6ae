"""File-index statistics from Lance scalar indices (lakecore_lance.index_stats)."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lakecore
from lakecore.model import files as fi
from tests.lance.helpers import lance, sort_rows

CORPUS = Path("/work/shared/corpus/lance")


def _dataset(path: Path, index_type: str = "BTREE") -> None:
    values = pa.array([*range(100), None, None, None], pa.int64())
    table = pa.table({"id": pa.array(range(103), pa.int64()), "x": values})
    ds = lance.write_dataset(table, str(path), max_rows_per_file=40)
    ds.create_scalar_index("x", index_type)


def _files_after(path: Path, predicate: str, version: int | None = None) -> int:
    scan = lakecore.open(str(path)).snapshot(version=version).scan(predicate)
    return len(scan.files())


def _check_every_version(path: Path, predicates: list[str]) -> int:
    """lakecore's pruned scan equals pylance's filter (index used) at every version."""
    cases = 0
    table = lakecore.open(str(path))
    for v in [v["version"] for v in lance.dataset(str(path)).versions()]:
        ds = lance.dataset(str(path), version=v)
        for predicate in predicates:
            want = ds.scanner(filter=predicate, use_scalar_index=True).to_table()
            got = table.snapshot(version=v).scan(predicate).to_arrow()
            assert sort_rows(got).equals(sort_rows(want)), f"v{v} {predicate}"
            cases += 1
    return cases


@pytest.mark.parametrize("index_type", ["BTREE", "ZONEMAP"])
def test_index_prunes_fragments(tmp_path: Path, index_type: str) -> None:
    path = tmp_path / "d"
    _dataset(path, index_type)
    files = lakecore.open(str(path)).snapshot().files()
    assert pc.struct_field(files.column(fi.MIN), [0]).to_pylist() == [0, 40, 80]
    assert pc.struct_field(files.column(fi.MAX), [0]).to_pylist() == [39, 79, 99]
    assert pc.struct_field(files.column(fi.NULL_COUNT), [0]).to_pylist() == [0, 0, 3]
    assert _files_after(path, "x = 50") == 1
    assert _files_after(path, "x IS NULL") == 1
    assert _files_after(path, "x > 1000") == 0
    assert _files_after(path, "id = 50") == 3  # not indexed: might match
    # An append the index does not cover, then deletes (one fragment emptied).
    extra = pa.table({"id": pa.array([200, 201], pa.int64()), "x": pa.array([50, 7], pa.int64())})
    lance.write_dataset(extra, str(path), mode="append")
    assert _files_after(path, "x = 50") == 2
    ds = lance.dataset(str(path))
    ds.delete("x = 50 OR x < 40")
    ds.delete("x IS NULL")
    predicates = ["x = 50", "x = 7", "x IS NULL", "x >= 79", "x < 45", "x IS NOT NULL"]
    assert _check_every_version(path, predicates) == 5 * len(predicates)


def test_uncovered_column_field_id(tmp_path: Path) -> None:
    """A column dropped and re-added under its old name has a new field id: no bounds."""
    path = tmp_path / "d"
    _dataset(path)
    ds = lance.dataset(str(path))
    ds.drop_columns(["x"])
    ds = lance.dataset(str(path))
    ds.add_columns({"x": "id * 0 + 1000"})
    files = lakecore.open(str(path)).snapshot().files()
    assert fi.MIN not in files.column_names
    assert _files_after(path, "x = 1000") == 3
    assert lakecore.open(str(path)).scan("x = 1000").to_arrow().num_rows == 103


def test_broken_index_gives_no_stats(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "d"
    _dataset(path)
    (page_data,) = path.glob("_indices/*/page_data.lance")
    page_data.write_bytes(b"not a lance file")
    with caplog.at_level(logging.WARNING, logger="lakecore_lance.index_stats"):
        files = lakecore.open(str(path)).snapshot().files()
    assert fi.MIN not in files.column_names
    assert "gives no statistics" in caplog.text
    assert lakecore.open(str(path)).scan("x = 50").to_arrow().num_rows == 1


def test_missing_index_file_gives_no_stats(tmp_path: Path) -> None:
    path = tmp_path / "d"
    _dataset(path, "ZONEMAP")
    (zones,) = path.glob("_indices/*/zonemap.lance")
    zones.unlink()
    assert _files_after(path, "x = 50") == 3
    assert lakecore.open(str(path)).scan("x = 50").to_arrow().num_rows == 1


@pytest.mark.parametrize(
    ("name", "column", "expect_versions"),
    [
        ("v0.20.0__old_btree_bitmap_indices", "btree", 3),
        ("v0.18.2__index_no_details", "id", 2),
    ],
)
def test_corpus_btree_pruning_keeps_matching_rows(
    tmp_path: Path, name: str, column: str, expect_versions: int
) -> None:
    if not (CORPUS / name).exists():
        pytest.skip("corpus not present")
    path = tmp_path / name
    shutil.copytree(CORPUS / name, path)
    table = lakecore.open(str(path))
    versions = [h.version for h in table.history()]
    assert len(versions) == expect_versions
    pruned_somewhere = 0
    cases = 0
    for v in versions:
        snapshot = table.snapshot(version=v)
        everything = snapshot.to_arrow()
        for value in [*everything.column(column).to_pylist()[:5], -1, 10**6]:
            predicate = f"{column} = {value}"
            got = snapshot.scan(predicate).to_arrow()
            want = everything.filter(pc.equal(everything.column(column), value))
            assert got.num_rows == want.num_rows, f"v{v} {predicate}"
            pruned_somewhere += len(snapshot.scan(predicate).files()) == 0
            cases += 1
    assert cases > 0
    assert pruned_somewhere > 0  # the index's bounds are used (-1 and 10**6 match nothing)
