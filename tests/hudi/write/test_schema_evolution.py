"""Hudi schema evolution: added nullable columns and widened types, read back by lakecore and
hudi-rs over files written before and after the change; what Hudi cannot record is refused
before the timeline changes."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from lakecore_hudi.write.schema_update import ALTER_SCHEMA

import lakecore
from lakecore.errors import CommitConflictError, SchemaError, UnsupportedFeatureError
from tests.hudi.write.helpers import create, hudi_rs_table, rows, upsert

TYPES = ["COPY_ON_WRITE", "MERGE_ON_READ"]


def _timeline(root: Path) -> list[str]:
    return sorted(p.name for p in (root / ".hoodie").rglob("*") if p.is_file())


def _data(table: pa.Table) -> list[dict[str, object]]:
    keep = [c for c in table.column_names if not c.startswith("_hoodie_")]
    return sorted(table.select(keep).to_pylist(), key=lambda r: json.dumps(r, default=str))


@pytest.mark.parametrize("table_type", TYPES)
def test_added_column_reads_null_in_old_files_and_values_in_new(
    tmp_path: Path, table_type: str
) -> None:
    t = create(tmp_path, table_type)
    t.append(rows((1, "a", 1, "x"), (2, "b", 1, "y")))
    with t.update_schema() as u:
        u.add_column("score", pa.float64())
    assert t.schema.field("score").type == pa.float64()
    entry = t.history(limit=1)[0]
    assert entry.operation == ALTER_SCHEMA.lower()
    new = pa.table(
        {"id": [2, 3], "name": ["b2", "c"], "ts": [2, 2], "city": ["y", "y"], "score": [0.5, 1.5]}
    )
    upsert(t, new)
    want = [
        {"id": 1, "name": "a", "ts": 1, "city": "x", "score": None},
        {"id": 2, "name": "b2", "ts": 2, "city": "y", "score": 0.5},
        {"id": 3, "name": "c", "ts": 2, "city": "y", "score": 1.5},
    ]
    assert _data(lakecore.open(str(tmp_path)).to_arrow()) == want
    assert _data(hudi_rs_table(tmp_path)) == want


@pytest.mark.parametrize("table_type", TYPES)
def test_widened_column_reads_old_values_as_the_new_type(tmp_path: Path, table_type: str) -> None:
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("n", pa.int32()),
            pa.field("f", pa.float32()),
            pa.field("ts", pa.int64()),
        ]
    )
    t = lakecore.create(
        str(tmp_path),
        schema,
        "hudi",
        [],
        {"record_key": "id", "precombine_field": "ts", "table_type": table_type},
    )
    t.append(pa.table({"id": [1], "n": [7], "f": [0.5], "ts": [1]}, schema=schema))
    with t.update_schema() as u:
        u.widen_type("n", pa.int64()).widen_type("f", pa.float64())
    assert t.schema.field("n").type == pa.int64()
    assert t.schema.field("f").type == pa.float64()
    t.append(pa.table({"id": [2], "n": [2**40], "f": [0.25], "ts": [1]}))
    got = lakecore.open(str(tmp_path)).to_arrow()
    assert got.schema.field("n").type == pa.int64()
    want = [{"id": 1, "n": 7, "f": 0.5, "ts": 1}, {"id": 2, "n": 2**40, "f": 0.25, "ts": 1}]
    assert _data(got) == want
    assert _data(hudi_rs_table(tmp_path)) == want


def test_time_travel_before_the_change_has_the_old_schema(tmp_path: Path) -> None:
    t = create(tmp_path)
    t.append(rows((1, "a", 1, "x")))
    before = t.version
    with t.update_schema() as u:
        u.add_column("extra", pa.string())
    assert "extra" not in t.snapshot(version=before).schema.names
    assert "extra" in t.snapshot().schema.names


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (lambda u: u.add_column("name", pa.string()), SchemaError),
        (lambda u: u.add_column("req", pa.int64(), False), SchemaError),
        (lambda u: u.widen_type("ts", pa.int32()), SchemaError),
        (lambda u: u.widen_type("missing", pa.int64()), SchemaError),
        (lambda u: u.widen_type("id", pa.float64()), UnsupportedFeatureError),
        (lambda u: u.rename_column("name", "label"), UnsupportedFeatureError),
        (lambda u: u.drop_column("name"), UnsupportedFeatureError),
    ],
    ids=["exists", "not-null", "narrowing", "missing", "key-column", "rename", "drop"],
)
def test_refusals_leave_the_timeline_unchanged(
    tmp_path: Path, change: object, error: type[Exception]
) -> None:
    t = create(tmp_path)
    t.append(rows((1, "a", 1, "x")))
    before = _timeline(tmp_path)
    with pytest.raises(error), t.update_schema() as u:
        change(u)  # type: ignore[operator]
    assert _timeline(tmp_path) == before
    assert t.schema.names == lakecore.open(str(tmp_path)).schema.names


def test_a_write_concurrent_with_a_schema_change_conflicts(tmp_path: Path) -> None:
    # The later instant's schema is what readers take: a write planned with the old schema
    # must not complete after the change and hide the added column.
    t = create(tmp_path)
    t.append(rows((1, "a", 1, "x")))
    tx = t.transaction()
    tx.__enter__()
    writer = t._format_writer(tx.snapshot)
    tx.stage(*writer.append(rows((2, "b", 1, "x"))))  # type: ignore[attr-defined]
    with t.update_schema() as u:
        u.add_column("extra", pa.string())
    with pytest.raises(CommitConflictError):
        tx.__exit__(None, None, None)
    reopened = lakecore.open(str(tmp_path))
    assert "extra" in reopened.schema.names
    assert sorted(reopened.to_arrow(columns=["id"]).column(0).to_pylist()) == [1]


@pytest.mark.parametrize("table_type", TYPES)
def test_append_and_overwrite_with_schema_mode_merge(tmp_path: Path, table_type: str) -> None:
    """schema_mode="merge" (deltalake's): the data's new column joins the schema in the
    write's own instant; rows written before read it as null, in lakecore and hudi-rs."""
    t = create(tmp_path, table_type)
    t.append(rows((1, "a", 1, "x"), (2, "b", 1, "y")))
    versions = len(t.history())
    wide = pa.table(
        {"id": [3], "name": ["c"], "ts": [1], "city": ["x"], "score": pa.array([1], pa.int8())}
    )
    t.append(wide, schema_mode="merge")
    assert len(t.history()) == versions + 1  # one instant: the write itself
    assert t.schema.field("score").type == pa.int32()  # Avro has no int8
    again = pa.table(
        {"id": [4], "name": ["d"], "ts": [1], "city": ["y"], "score": [7], "tag": ["t"]}
    )
    t.overwrite(again, "city = 'y'", schema_mode="merge")
    want = [
        {"id": 1, "name": "a", "ts": 1, "city": "x", "score": None, "tag": None},
        {"id": 3, "name": "c", "ts": 1, "city": "x", "score": 1, "tag": None},
        {"id": 4, "name": "d", "ts": 1, "city": "y", "score": 7, "tag": "t"},
    ]
    assert _data(lakecore.open(str(tmp_path)).to_arrow()) == want
    assert _data(hudi_rs_table(tmp_path)) == want
    before = _timeline(tmp_path)
    with pytest.raises(SchemaError, match="'NAME'"):  # Hudi readers match names ignoring case
        t.append(pa.table({"id": [9], "NAME": ["n"]}), schema_mode="merge")
    assert _timeline(tmp_path) == before


def test_schema_mode_overwrite_is_refused_before_any_write(tmp_path: Path) -> None:
    t = create(tmp_path)
    t.append(rows((1, "a", 1, "x")))
    before = _timeline(tmp_path)
    with pytest.raises(UnsupportedFeatureError, match="schema_overwrite"):
        t.overwrite(rows((2, "b", 1, "x")), schema_mode="overwrite")
    assert _timeline(tmp_path) == before
