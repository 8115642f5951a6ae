"""DELETE / UPDATE / replaceWhere on Delta tables, copy-on-write and deletion-vector modes.

Every case is checked against delta-rs reading the same table, at every version, and (with
the change data feed on) against delta-rs's load_cdf.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import lakecore
from lakecore.errors import (
    ConstraintViolationError,
    PredicateError,
    SchemaError,
)

deltalake = pytest.importorskip("deltalake")

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.string())])
MODES = {
    "cow": {},
    "dv": {"delta.enableDeletionVectors": "true"},
    "dv+cdf": {"delta.enableDeletionVectors": "true", "delta.enableChangeDataFeed": "true"},
    "cow+cdf": {"delta.enableChangeDataFeed": "true"},
}


def _sorted(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    return sorted(rows, key=lambda r: (str(r["id"]), str(r["v"])))


def _theirs(path: str, version: int) -> list[dict[str, object]]:
    dt = deltalake.DeltaTable(path, version=version)
    return _sorted(pa.table(dt.scan().read_all()).to_pylist())


def _make(path: Path, properties: dict[str, str]) -> lakecore.Table:
    t = lakecore.create(str(path), SCHEMA, partition_by=["p"], properties=properties)
    t.append(
        pa.table({"id": list(range(20)), "v": [f"s{i}" for i in range(20)], "p": ["a", "b"] * 10})
    )
    t.append(pa.table({"id": [100, 101], "v": ["x", "y"], "p": ["a", "c"]}))
    return t


@pytest.fixture(params=sorted(MODES))
def table(request: pytest.FixtureRequest, tmp_path: Path) -> lakecore.Table:
    return _make(tmp_path / "t", MODES[request.param])


@pytest.fixture(params=["cow+cdf", "dv+cdf"])
def cdf_table(request: pytest.FixtureRequest, tmp_path: Path) -> lakecore.Table:
    return _make(tmp_path / "t", MODES[request.param])


def _check_all_versions(table: lakecore.Table) -> None:
    for version in range(int(table.version) + 1):
        ours = _sorted(table.to_arrow(version=version).to_pylist())
        assert ours == _theirs(table.uri, version), f"version {version}"


def test_delete_with_predicate(table: lakecore.Table) -> None:
    table.delete("id % 3 = 0 OR v = 'y'")
    ids = sorted(r["id"] for r in table.to_arrow().to_pylist())
    assert ids == [i for i in range(20) if i % 3] + [100]
    _check_all_versions(table)


def test_delete_twice_grows_the_deletion_vector(table: lakecore.Table) -> None:
    table.delete("id < 5")
    table.delete("id >= 15")
    assert sorted(r["id"] for r in table.to_arrow().to_pylist()) == list(range(5, 15))
    _check_all_versions(table)
    if table.snapshot().properties.get("delta.enableDeletionVectors") == "true":
        assert (
            table.snapshot().files().column("deletion").null_count
            < table.snapshot().files().num_rows
        )


def test_delete_nothing_commits_an_empty_change(table: lakecore.Table) -> None:
    table.delete("id > 1000")
    assert table.to_arrow().num_rows == 22


def test_update(table: lakecore.Table) -> None:
    table.update({"v": "upper(v) || '!'", "id": "id + 1000"}, "p = 'b' AND id < 6")
    rows = {r["id"]: r["v"] for r in table.to_arrow().to_pylist()}
    assert rows[1001] == "S1!" and rows[1005] == "S5!" and 1 not in rows
    assert len(rows) == 22
    _check_all_versions(table)


def test_update_partition_column_moves_rows(table: lakecore.Table) -> None:
    table.update({"p": "'z'"}, "id = 100")
    (row,) = [r for r in table.to_arrow().to_pylist() if r["id"] == 100]
    assert row["p"] == "z"
    _check_all_versions(table)


def test_replace_where(table: lakecore.Table) -> None:
    table.overwrite(pa.table({"id": [7, 8], "v": ["n7", "n8"], "p": ["a", "a"]}), where="p = 'a'")
    rows = table.to_arrow().to_pylist()
    assert sorted(r["id"] for r in rows if r["p"] == "a") == [7, 8]
    assert len([r for r in rows if r["p"] != "a"]) == 11
    _check_all_versions(table)


def test_replace_where_rejects_rows_outside(table: lakecore.Table) -> None:
    before = table.version
    with pytest.raises(ConstraintViolationError, match="replaceWhere"):
        table.overwrite(pa.table({"id": [1], "v": ["x"], "p": ["b"]}), where="p = 'a'")
    assert table.version == before


def test_change_feed_matches_delta_rs(cdf_table: lakecore.Table) -> None:
    table = cdf_table
    table.delete("id < 3")
    table.update({"v": "'upd'"}, "id = 10")
    table.overwrite(pa.table({"id": [50], "v": ["n"], "p": ["c"]}), where="p = 'c'")
    ours = table.changes(1).drop(["_commit_timestamp"])
    theirs = pa.table(deltalake.DeltaTable(table.uri).load_cdf(starting_version=1).read_all())
    theirs = theirs.drop(["_commit_timestamp"]).select(ours.column_names).cast(ours.schema)
    key = ["_commit_version", "_change_type", "id"]
    assert (
        ours.sort_by([(k, "ascending") for k in key]).to_pylist()
        == theirs.sort_by([(k, "ascending") for k in key]).to_pylist()
    )


@pytest.mark.parametrize(
    ("where", "error"),
    [("nope = 1", SchemaError), ("id ===", PredicateError), ("id", PredicateError)],
)
def test_bad_predicates_fail_before_any_write(
    table: lakecore.Table, where: str, error: type
) -> None:
    before = table.version
    with pytest.raises(error):
        table.delete(where)
    assert table.version == before


def test_check_constraint_blocks_bad_updates(tmp_path: Path) -> None:
    t = lakecore.create(
        str(tmp_path / "t"), SCHEMA, properties={"delta.constraints.positive": "id > 0"}
    )
    assert "checkConstraints" in t.snapshot().features.writer_features
    t.append(pa.table({"id": [1, 2], "v": ["a", "b"], "p": ["x", "x"]}))
    with pytest.raises(ConstraintViolationError, match="positive"):
        t.append(pa.table({"id": [0], "v": ["c"], "p": ["x"]}))
    with pytest.raises(ConstraintViolationError, match="positive"):
        t.update({"id": "id - 5"})
    assert sorted(t.to_arrow().column("id").to_pylist()) == [1, 2]


def test_append_only_table_refuses_deletes(tmp_path: Path) -> None:
    t = lakecore.create(str(tmp_path / "t"), SCHEMA, properties={"delta.appendOnly": "true"})
    t.append(pa.table({"id": [1], "v": ["a"], "p": ["x"]}))
    before = t.version
    for change in (lambda: t.delete("id = 1"), lambda: t.update({"v": "'b'"})):
        with pytest.raises(ConstraintViolationError, match="append-only"):
            change()
    assert t.version == before


def test_merge_upsert(table: lakecore.Table) -> None:
    updates = pa.table({"id": [1, 2, 500], "v": ["u1", "u2", "new"], "p": ["b", "a", "c"]})
    table.merge(updates, on="id").when_matched_update_all().when_not_matched_insert_all().execute()
    rows = {r["id"]: r["v"] for r in table.to_arrow().to_pylist()}
    assert rows[1] == "u1" and rows[2] == "u2" and rows[500] == "new" and len(rows) == 23
    _check_all_versions(table)


def test_merge_update_with_sql_and_condition(table: lakecore.Table) -> None:
    source = pa.table({"id": [3, 4], "v": ["x", "y"], "p": ["b", "a"]})
    (
        table.merge(source, on=["id"])
        .when_matched_update({"v": "target.v || '-' || source.v"}, condition="s.id > 3")
        .execute()
    )
    rows = {r["id"]: r["v"] for r in table.to_arrow().to_pylist()}
    assert rows[3] == "s3" and rows[4] == "s4-y"
    _check_all_versions(table)


def test_merge_delete(table: lakecore.Table) -> None:
    table.merge(pa.table({"id": [0, 1, 999]}), on="id").when_matched_delete().execute()
    ids = {r["id"] for r in table.to_arrow().to_pylist()}
    assert not ids & {0, 1} and len(ids) == 20
    _check_all_versions(table)


def test_merge_refuses_duplicate_source_keys(table: lakecore.Table) -> None:
    before = table.version
    source = pa.table({"id": [1, 1], "v": ["a", "b"], "p": ["b", "b"]})
    with pytest.raises(ConstraintViolationError, match="same key"):
        table.merge(source, on="id").when_matched_update_all().execute()
    assert table.version == before


def test_merge_unknown_key(table: lakecore.Table) -> None:
    with pytest.raises(SchemaError, match="merge key"):
        table.merge(pa.table({"x": [1]}), on="x").when_matched_delete().execute()


def test_add_and_drop_constraint(tmp_path: Path) -> None:
    t = _make(tmp_path / "t", {})
    before = t.version
    with pytest.raises(ConstraintViolationError, match="existing row"):
        t.add_constraint("small", "id < 50")
    assert t.version == before
    t.add_constraint("nonneg", "id >= 0")
    snap = t.snapshot()
    assert snap.properties["delta.constraints.nonneg"] == "id >= 0"
    assert "checkConstraints" in snap.features.writer_features
    with pytest.raises(ConstraintViolationError, match="nonneg"):
        t.append(pa.table({"id": [-1], "v": ["x"], "p": ["a"]}))
    t.drop_constraint("nonneg")
    t.append(pa.table({"id": [-1], "v": ["x"], "p": ["a"]}))
    with pytest.raises(SchemaError):
        t.drop_constraint("nonneg")
