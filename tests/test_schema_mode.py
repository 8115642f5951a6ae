"""``append(data, schema_mode=...)`` and ``overwrite(data, schema_mode=...)`` as deltalake's
``write_deltalake``: by default data must have the table's columns exactly (a missing nullable
column too is refused, naming it); ``"merge"`` adds the data's new columns (nullable) and
writes nulls for the missing ones, in the same commit; ``"overwrite"`` (overwrite only)
replaces the schema. Formats that cannot change the schema in a write refuse before any file
is written."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

import lakecore
from lakecore import Table
from lakecore.errors import (
    CommitConflictError,
    InvalidArgumentError,
    SchemaError,
    UnsupportedFeatureError,
)
from lakecore.format import Capability

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
WIDER = pa.table({"id": [3], "v": ["c"], "w": [1.5]})
NARROWER = pa.table({"id": [4]})


def make(fmt: str, root: Path, **kwargs: object) -> Table:
    props: dict[str, str] = dict(kwargs.pop("properties", {}) or {})  # type: ignore[call-overload]
    if fmt == "hudi":
        props.setdefault("record_key", "id")
    table = lakecore.create(str(root), SCHEMA, format=fmt, properties=props, **kwargs)  # type: ignore[arg-type]
    table.append(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    return table


def listing(root: Path) -> set[str]:
    return {str(Path(d, f).relative_to(root)) for d, _, fs in os.walk(root) for f in fs}


def deltalake_rows(root: Path) -> list[dict[str, object]]:
    """The rows as deltalake reads them, through DataFusion (``to_pyarrow_table`` of
    deltalake 1.6.6 reads a column-mapped table's columns as nulls, even its own)."""
    deltalake = pytest.importorskip("deltalake")
    table = deltalake.DeltaTable(str(root))
    result = deltalake.QueryBuilder().register("t", table).execute("select * from t")
    return sorted(pa.table(result).to_pylist(), key=str)


@pytest.mark.parametrize("fmt", ["delta", "hudi", "lance"])
def test_default_refuses_missing_and_extra_columns(fmt: str, tmp_path: Path) -> None:
    t = make(fmt, tmp_path / "t")
    before, version = listing(tmp_path / "t"), t.version
    with pytest.raises(SchemaError, match="'v'"):
        t.append(NARROWER)  # deltalake refuses a missing nullable column too
    with pytest.raises(SchemaError, match="'w'"):
        t.append(WIDER)
    with pytest.raises(SchemaError, match="'v'"):
        t.overwrite(NARROWER)
    assert t.version == version and listing(tmp_path / "t") == before


@pytest.mark.parametrize("mapping", ["none", "name"])
def test_delta_append_merge_adds_the_new_columns(mapping: str, tmp_path: Path) -> None:
    props = {} if mapping == "none" else {"delta.columnMapping.mode": "name"}
    t = make("delta", tmp_path / "t", properties=props)
    version = t.version
    result = t.append(WIDER, schema_mode="merge")
    assert result.version == t.version == version + 1  # one commit: schema and rows
    assert t.schema.names == ["id", "v", "w"] and t.schema.field("w").nullable
    assert t.schema.field("w").type == pa.float64()
    t.append(NARROWER, schema_mode="merge")  # the missing columns are written as nulls
    want = [
        {"id": 1, "v": "a", "w": None},
        {"id": 2, "v": "b", "w": None},
        {"id": 3, "v": "c", "w": 1.5},
        {"id": 4, "v": None, "w": None},
    ]
    assert sorted(t.to_arrow().to_pylist(), key=str) == sorted(want, key=str)
    assert deltalake_rows(tmp_path / "t") == sorted(want, key=str)


def test_delta_overwrite_schema_modes(tmp_path: Path) -> None:
    t = make("delta", tmp_path / "t")
    t.overwrite(pa.table({"id": [7], "x": [True]}), schema_mode="merge")
    assert t.schema.names == ["id", "v", "x"]
    assert t.to_arrow().to_pylist() == [{"id": 7, "v": None, "x": True}]
    new = pa.table({"k": pa.array(["z"]), "n": pa.array([5], pa.int32())})
    result = t.overwrite(new, schema_mode="overwrite")
    assert (result.rows_inserted, result.rows_deleted) == (1, 1)
    assert t.schema.names == ["k", "n"] and t.schema.field("n").type == pa.int32()
    assert t.to_arrow().to_pylist() == [{"k": "z", "n": 5}]
    assert deltalake_rows(tmp_path / "t") == [{"k": "z", "n": 5}]


def test_delta_overwrite_where_merge(tmp_path: Path) -> None:
    t = make("delta", tmp_path / "t")
    t.overwrite(pa.table({"id": [2], "v": ["B"], "w": [2.0]}), "id = 2", schema_mode="merge")
    want = [{"id": 1, "v": "a", "w": None}, {"id": 2, "v": "B", "w": 2.0}]
    assert sorted(t.to_arrow().to_pylist(), key=str) == sorted(want, key=str)
    assert deltalake_rows(tmp_path / "t") == sorted(want, key=str)


def test_bad_schema_modes_are_refused_before_any_io(tmp_path: Path) -> None:
    t = make("delta", tmp_path / "t")
    before = listing(tmp_path / "t")
    with pytest.raises(InvalidArgumentError, match="schema_mode"):
        t.append(WIDER, schema_mode="overwrite")  # deltalake: not supported for an append
    with pytest.raises(InvalidArgumentError, match="schema_mode"):
        t.append(WIDER, schema_mode="union")
    with pytest.raises(InvalidArgumentError, match="schema_mode"):
        t.overwrite(WIDER, "id = 3", schema_mode="overwrite")  # the other rows keep the old
    assert listing(tmp_path / "t") == before


def test_delta_schema_overwrite_keeps_partition_columns(tmp_path: Path) -> None:
    t = lakecore.create(str(tmp_path / "t"), SCHEMA, partition_by=["v"])
    t.append(pa.table({"id": [1], "v": ["a"]}))
    before = listing(tmp_path / "t")
    with pytest.raises(SchemaError, match="'v'"):
        t.overwrite(pa.table({"id": [2]}), schema_mode="overwrite")
    assert listing(tmp_path / "t") == before
    t.overwrite(pa.table({"v": ["b"], "n": [1]}), schema_mode="overwrite")
    assert t.snapshot().partition_columns == ("v",)
    assert deltalake_rows(tmp_path / "t") == [{"n": 1, "v": "b"}]


@pytest.mark.parametrize(
    ("fmt", "mode"), [("hudi", "overwrite"), ("lance", "merge"), ("lance", "overwrite")]
)
def test_formats_without_it_refuse_before_writing(fmt: str, mode: str, tmp_path: Path) -> None:
    # Hudi's schema_mode="merge" is tested in tests/hudi/write/test_schema_evolution.py.
    t = make(fmt, tmp_path / "t")
    declared = Capability.SCHEMA_MERGE if mode == "merge" else Capability.SCHEMA_OVERWRITE
    assert declared not in t.capabilities
    before, version = listing(tmp_path / "t"), t.version
    with pytest.raises(UnsupportedFeatureError, match=fmt) as caught:
        if mode == "merge":
            t.append(WIDER, schema_mode="merge")
        else:
            t.overwrite(WIDER, schema_mode="overwrite")
    assert caught.value.feature == declared.value
    assert listing(tmp_path / "t") == before and t.version == version


def test_transaction_append_takes_schema_mode(tmp_path: Path) -> None:
    t = make("delta", tmp_path / "t")
    with t.transaction() as tx:
        tx.delete("id = 1")
        tx.append(WIDER, schema_mode="merge")
    assert sorted(t.to_arrow().to_pylist(), key=str) == sorted(
        [{"id": 2, "v": "b", "w": None}, {"id": 3, "v": "c", "w": 1.5}], key=str
    )


def test_concurrent_writers_and_a_schema_merge(tmp_path: Path) -> None:
    """A schema merge rebases past a concurrent append of the old columns (its rows read the
    new column as null); a write staged before a concurrent schema change conflicts."""
    t = make("delta", tmp_path / "t")
    merging = t.transaction()
    merging.append(WIDER, schema_mode="merge")
    t.append(pa.table({"id": [5], "v": ["e"]}))
    assert merging.commit().version == t.version
    got = {r["id"]: r["w"] for r in t.to_arrow().to_pylist()}
    assert got == {1: None, 2: None, 3: 1.5, 5: None}
    late = t.transaction()
    late.append(pa.table({"id": [6], "v": ["f"], "w": [2.0]}))
    t.append(pa.table({"id": [7], "v": ["g"], "w": [3.0], "z": [1]}), schema_mode="merge")
    with pytest.raises(CommitConflictError, match="metadata"):
        late.commit()


def test_a_schema_overwrite_is_the_only_write_of_its_transaction(tmp_path: Path) -> None:
    """Rows staged before or after it were planned for the old schema: refused, and the
    transaction commits nothing."""
    t = make("delta", tmp_path / "t")
    version, before = t.version, listing(tmp_path / "t")
    new = pa.table({"k": ["z"]})
    with pytest.raises(InvalidArgumentError, match="only write"), t.transaction() as tx:
        tx.append(pa.table({"id": [3], "v": ["c"]}))
        tx.overwrite(new, schema_mode="overwrite")
    with pytest.raises(InvalidArgumentError, match="only write"), t.transaction() as tx:
        tx.overwrite(new, schema_mode="overwrite")
        tx.append(pa.table({"id": [3], "v": ["c"]}))
    assert t.version == version and listing(tmp_path / "t") == before  # files written: gone
    with t.transaction() as tx:
        tx.overwrite(new, schema_mode="overwrite")
        tx.set_app_transaction("job", 1)
    assert t.to_arrow().to_pylist() == [{"k": "z"}]
