"""Table version 9 (Hudi 1.1) writes: tables lakecore creates and tables Hudi wrote accept an
insert, upsert, delete, compaction (MoR) and clean; after each, hudi-rs reads what lakecore
reads. What version 9 tables may declare that lakecore's merge does not follow is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lakecore
from lakecore.errors import UnsupportedFeatureError
from tests.hudi.write.helpers import (
    assert_reads,
    copy_corpus_table,
    create,
    hudi_rs_table,
    model_of,
    rows,
    upsert,
)

CORPUS_V9 = ["cow_v9_txns_nonpart_nometa", "mor_avro_v9_txns_nonpart_nometa"]


def _data(table: pa.Table) -> list[dict[str, Any]]:
    keep = [c for c in table.column_names if not c.startswith("_hoodie_")]
    rows = table.select(keep).to_pylist()
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def _same(root: Path) -> list[dict[str, Any]]:
    ours = _data(lakecore.open(str(root)).to_arrow())
    assert _data(hudi_rs_table(root)) == ours
    return ours


def _properties(root: Path) -> dict[str, str]:
    text = (root / ".hoodie" / "hoodie.properties").read_text()
    pairs = [line.split("=", 1) for line in text.splitlines() if "=" in line]
    return {k: v for k, v in pairs if not k.startswith("#")}


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_a_created_version_9_table_is_hudi_1_1s(tmp_path: Path, table_type: str) -> None:
    t = create(tmp_path, table_type, version="9")
    props = _properties(tmp_path)
    assert props["hoodie.table.version"] == "9"
    assert props["hoodie.table.initial.version"] == "9"
    assert props["hoodie.table.ordering.fields"] == "ts"
    assert "hoodie.table.precombine.field" not in props
    assert props["hoodie.record.merge.mode"] == "EVENT_TIME_ORDERING"
    assert "hoodie.record.merge.strategy.id" not in props
    assert "hoodie.compaction.payload.class" not in props
    assert props["hoodie.table.format"] == "native"
    model = model_of(rows((1, "a", 1, "x"), (2, "b", 1, "y"), (3, "c", 1, "x")))
    t.append(rows((1, "a", 1, "x"), (2, "b", 1, "y"), (3, "c", 1, "x")))
    assert_reads(tmp_path, model)
    upsert(t, rows((2, "b2", 2, "y"), (4, "d", 1, "y"), (1, "stale", 0, "x")))
    model.update(model_of(rows((2, "b2", 2, "y"), (4, "d", 1, "y"))))
    assert_reads(tmp_path, model)
    t.delete("id = 3")
    del model[3]
    assert_reads(tmp_path, model)
    if table_type == "MERGE_ON_READ":
        assert t.compact() is not None
        assert_reads(tmp_path, model)
    t.clean(retain_commits=1)
    assert_reads(tmp_path, model)


@pytest.mark.parametrize("name", CORPUS_V9)
def test_a_hudi_written_version_9_table_takes_every_write(tmp_path: Path, name: str) -> None:
    root = copy_corpus_table(name, tmp_path)
    table = lakecore.open(str(root))
    before = _same(root)
    data = table.to_arrow()
    data = data.drop_columns([c for c in data.column_names if c.startswith("_hoodie_")])
    assert data.num_rows >= 3

    # insert: new keys
    fresh = data.slice(0, 2)
    new_ids = pa.array([f"lakecore-{i}" for i in range(2)])
    fresh = fresh.set_column(fresh.schema.get_field_index("txn_id"), "txn_id", new_ids)
    table.append(fresh)
    after_insert = _same(root)
    assert len(after_insert) == len(before) + 2

    # upsert: one existing key, with a later ordering value so that it wins
    changed = data.slice(0, 1)
    i = changed.schema.get_field_index("txn_ts")
    bumped = pc.add(changed.column(i), pa.scalar(10**6, changed.schema.field(i).type))
    changed = changed.set_column(i, changed.schema.field(i), bumped)
    upsert(table, changed)
    after_upsert = _same(root)
    key = changed.column("txn_id")[0].as_py()
    assert [r["txn_ts"] for r in after_upsert if r["txn_id"] == key] == [
        changed.column("txn_ts")[0].as_py()
    ]

    # delete
    gone = data.column("txn_id")[1].as_py()
    table.delete(f"txn_id = '{gone}'")
    after_delete = _same(root)
    assert [r for r in after_delete if r["txn_id"] == gone] == []
    assert len(after_delete) == len(after_upsert) - 1

    if name.startswith("mor"):
        assert table.compact() is not None
        assert _same(root) == after_delete
    table.clean(retain_commits=1)
    assert _same(root) == after_delete


@pytest.mark.parametrize(
    ("key", "value", "feature"),
    [
        ("hoodie.table.ordering.fields", "ts,name", "hudi-ordering-fields"),
        ("hoodie.table.partial.update.mode", "IGNORE_DEFAULTS", "hudi-partial-update"),
        (
            "hoodie.record.merge.property.hoodie.payload.delete.field",
            "op",
            "hudi-merge-properties",
        ),
    ],
)
def test_what_lakecore_cannot_merge_by_is_refused_before_any_write(
    tmp_path: Path, key: str, value: str, feature: str
) -> None:
    t = create(tmp_path, version="9")
    t.append(rows((1, "a", 1, "x")))
    path = tmp_path / ".hoodie" / "hoodie.properties"
    lines = [ln for ln in path.read_text().splitlines() if not ln.startswith(f"{key}=")]
    path.write_text("\n".join([*lines, f"{key}={value}"]) + "\n")
    listing = sorted(str(p) for p in tmp_path.rglob("*"))
    with pytest.raises(UnsupportedFeatureError) as caught:
        lakecore.open(str(tmp_path)).append(rows((2, "b", 1, "x")))
    assert caught.value.feature == feature
    assert sorted(str(p) for p in tmp_path.rglob("*")) == listing
