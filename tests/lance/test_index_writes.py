"""lakecore writes on Lance datasets with scalar indices (lakecore_lance.write.indices)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest

import lakecore
from lakecore.errors import CommitConflictError, UnsupportedFeatureError
from tests.lance.helpers import lance, sort_rows

CORPUS = Path("/work/shared/corpus/lance")
PREDICATES = ["x = 5", "x = 60", "x = 1060", "x > 100", "x < 45", "x IS NULL"]


def _indexed(path: Path, *, key: bool = False, x_type: pa.DataType | None = None) -> lakecore.Table:
    table = pa.table(
        {"id": pa.array(range(120), pa.int64()), "x": pa.array(range(120), x_type or pa.int64())}
    )
    schema = None
    if key:
        meta = {b"lance-schema:unenforced-primary-key": b"true"}
        schema = pa.schema([pa.field("id", pa.int64(), False, meta), pa.field("x", pa.int64())])
        table = table.cast(schema)
    ds = lance.write_dataset(table, str(path), schema=schema, max_rows_per_file=40)
    ds.create_scalar_index("x", "BTREE")
    return lakecore.open(str(path))


def _rows(ids: list[int], xs: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "x": pa.array(xs, pa.int64())})


def _index_names(ds: object) -> list[str]:
    return sorted(i.name for i in ds.describe_indices())  # type: ignore[attr-defined]


def _check(path: Path) -> int:
    """pylance (its index used) and lakecore agree on every predicate at the latest version,
    and the index is still listed. Returns the cases compared."""
    ds = lance.dataset(str(path))
    assert _index_names(ds) == ["x_idx"]
    table = lakecore.open(str(path))
    for predicate in PREDICATES:
        scanner = ds.scanner(filter=predicate, use_scalar_index=True)
        if predicate == "x = 60":
            assert "ScalarIndexQuery" in scanner.explain_plan()
        want = sort_rows(scanner.to_table())
        got = sort_rows(table.scan(predicate).to_arrow())
        assert got.equals(want), predicate
    assert sort_rows(table.to_arrow()).equals(sort_rows(ds.to_table()))
    return len(PREDICATES)


def test_dml_keeps_the_index(tmp_path: Path) -> None:
    path = tmp_path / "d"
    table = _indexed(path)
    cases = 0
    table.append(_rows([500, 501], [5, 500]))
    cases += _check(path)
    table.delete("x < 40")  # fragment 0 entirely: dropped, still in the bitmap
    cases += _check(path)
    table.update({"x": "x + 1000"}, "id = 60")
    cases += _check(path)
    table.overwrite(_rows([700], [70]), where="x = 70")
    cases += _check(path)
    table.merge(
        _rows([61, 900], [6100, 900]), on="id"
    ).when_matched_update_all().when_not_matched_insert_all().execute()
    cases += _check(path)
    with table.update_schema() as update:
        update.rename_column("id", "key")
    assert cases == 5 * len(PREDICATES)
    ds = lance.dataset(str(path))
    assert sorted(ds.describe_indices()[0].segments[0].fragment_ids) == [0, 1, 2]
    ds.optimize.optimize_indices()
    ds = lance.dataset(str(path))
    assert ds.to_table(filter="x = 1060").column("key").to_pylist() == [60]
    assert lakecore.open(str(path)).scan("x = 1060").to_arrow().num_rows == 1
    # lakecore writes on after pylance's index optimization.
    lakecore.open(str(path)).delete("x = 1060")
    assert lance.dataset(str(path)).to_table(filter="x = 1060").num_rows == 0


def test_upsert_and_restore_keep_the_index(tmp_path: Path) -> None:
    path = tmp_path / "d"
    table = _indexed(path, key=True)
    table.upsert(_rows([1, 300], [1001, 300]))
    assert _check(path) == len(PREDICATES)
    table.restore(2)  # the version right after the index was created
    assert _check(path) == len(PREDICATES)
    assert lakecore.open(str(path)).scan("x = 1001").to_arrow().num_rows == 0


def test_index_breaking_operations_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "d"
    table = _indexed(path, x_type=pa.int32())
    version = table.snapshot().version
    files = sorted(p.name for p in (path / "data").iterdir())
    with pytest.raises(UnsupportedFeatureError, match="x_idx"):
        table.overwrite(_rows([1], [1]))
    assert sorted(p.name for p in (path / "data").iterdir()) == files  # nothing left behind
    table.delete("id < 5")
    table.append(_rows([800], [800]))  # a small fragment: something to compact
    files = sorted(p.name for p in (path / "data").iterdir())
    with pytest.raises(UnsupportedFeatureError, match="remapped"):
        table.optimize()
    assert sorted(p.name for p in (path / "data").iterdir()) == files  # its rewrite removed
    with pytest.raises(UnsupportedFeatureError, match="x_idx"), table.update_schema() as update:
        update.drop_column("x")
    with pytest.raises(UnsupportedFeatureError, match="x_idx"), table.update_schema() as update:
        update.widen_type("x", pa.float64())
    assert lakecore.open(str(path)).snapshot().version == version + 2
    assert _check(path) == len(PREDICATES)
    # Dropping a column no index covers is fine.
    lakecore.open(str(path)).append(_rows([801], [801]))
    with lakecore.open(str(path)).update_schema() as update:
        update.drop_column("id")
    assert _index_names(lance.dataset(str(path))) == ["x_idx"]


def test_a_concurrent_index_creation_conflicts(tmp_path: Path) -> None:
    path = tmp_path / "d"
    lance.write_dataset(_rows(list(range(80)), list(range(80))), str(path), max_rows_per_file=40)
    table = lakecore.open(str(path))
    tx = table.transaction()
    tx.append(_rows([900], [900]))
    lance.dataset(str(path)).create_scalar_index("x", "BTREE")
    with pytest.raises(CommitConflictError):
        tx.commit()
    # On an indexed dataset: appends still rebase past appends and deletes; a new index
    # (another column) still conflicts.
    table = lakecore.open(str(path))
    tx = table.transaction()
    tx.append(_rows([901], [901]))
    lance.write_dataset(_rows([902], [902]), str(path), mode="append")
    lance.dataset(str(path)).delete("x = 3")
    tx.commit()
    tx = lakecore.open(str(path)).transaction()
    tx.delete("x = 50")
    lance.dataset(str(path)).create_scalar_index("id", "BTREE")
    with pytest.raises(CommitConflictError):
        tx.commit()
    ds = lance.dataset(str(path))
    assert _index_names(ds) == ["id_idx", "x_idx"]
    got = sort_rows(lakecore.open(str(path)).to_arrow())
    assert got.equals(sort_rows(ds.to_table()))
    assert got.num_rows == 80 + 2 - 1


def test_pylance_rebases_past_a_lakecore_commit_on_an_indexed_dataset(tmp_path: Path) -> None:
    """pylance reads the transaction of lakecore's manifest (after its index section) when it
    resolves a conflict with it."""
    path = tmp_path / "d"
    _indexed(path)
    stale = lance.dataset(str(path))
    lakecore.open(str(path)).append(_rows([500], [500]))
    stale.delete("x = 7")  # committed from the version before lakecore's append
    assert _check(path) == len(PREDICATES)
    assert lakecore.open(str(path)).to_arrow().num_rows == 120


def test_append_to_a_manifest_without_max_fragment_id(tmp_path: Path) -> None:
    """Lance < 0.20 wrote no max_fragment_id: new fragments take ids after the largest in use
    (before: id 0 again, and pylance read the first fragment twice)."""
    source = CORPUS / "v0.18.2__index_no_details"
    if not source.is_dir():
        pytest.skip("no corpus")
    path = tmp_path / "old"
    shutil.copytree(source, path)
    lakecore.open(str(path)).append(pa.table({"id": pa.array([1000], pa.int64())}))
    ds = lance.dataset(str(path))
    assert [f.fragment_id for f in ds.get_fragments()] == [0, 1]
    want = sort_rows(ds.scanner(filter="id >= 99", use_scalar_index=True).to_table())
    assert want.column("id").to_pylist() == [99, 1000]
    assert sort_rows(lakecore.open(str(path)).scan("id >= 99").to_arrow()).equals(want)
    assert sort_rows(lakecore.open(str(path)).to_arrow()).equals(sort_rows(ds.to_table()))
