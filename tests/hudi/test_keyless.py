"""Keyless Hudi tables (Hudi 0.14+ auto-generated record keys): lakecore creates them when no
record key is given and writes them (append, overwrite, update, delete, file_writer/add_files,
replace_files) with keys ``<instant>_<file index>_<row index>``; upsert and merge are refused
before any IO. hudi-rs reads what lakecore wrote."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lakecore
from lakecore.errors import UnsupportedFeatureError
from lakecore.model import files as fi
from lakecore.table import Table
from tests.hudi.write.helpers import SCHEMA, expected_rows, hudi_rs_rows, hudi_rs_table, rows

KEY = re.compile(r"^(\d{17})_(\d+)_(\d+)$")


def _create(root: Path, table_type: str, version: str = "8", partitioned: bool = True) -> Table:
    properties = {"table_type": table_type, "table_version": version}
    return lakecore.create(str(root), SCHEMA, "hudi", ["city"] if partitioned else [], properties)


def _keys(root: Path) -> list[dict[str, Any]]:
    table = lakecore.open(str(root)).to_arrow(
        columns=["_hoodie_record_key", "_hoodie_commit_time", "id"]
    )
    return table.to_pylist()


def _assert_reads(root: Path, model: dict[int, dict[str, Any]]) -> None:
    """lakecore and hudi-rs read ``model``; every key is a unique generated one, and hudi-rs
    sees the same keys."""
    want = expected_rows(model)
    assert lakecore.open(str(root)).to_arrow().num_rows == len(want)
    from tests.hudi.write.helpers import lakecore_rows

    assert lakecore_rows(root) == want
    assert hudi_rs_rows(root) == want
    keys = _keys(root)
    assert len({k["_hoodie_record_key"] for k in keys}) == len(keys)
    for k in keys:
        match = KEY.match(k["_hoodie_record_key"])
        assert match is not None, k
    if model:
        theirs = hudi_rs_table(root).column("_hoodie_record_key").to_pylist()
        assert sorted(theirs) == sorted(k["_hoodie_record_key"] for k in keys)


def _row(i: int, name: str, city: str) -> dict[str, Any]:
    return {"id": i, "name": name, "ts": 1, "city": city}


@pytest.mark.parametrize("version", ["6", "8"])
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_keyless_table_writes(tmp_path: Path, table_type: str, version: str) -> None:
    root = tmp_path / "t"
    table = _create(root, table_type, version)
    properties = table.snapshot().properties
    assert "hoodie.table.recordkey.fields" not in properties
    assert table.snapshot().features.record_key == ()
    table.append(rows((1, "a", 1, "x"), (2, "b", 1, "x"), (3, "c", 1, "y")))
    table.append(rows((1, "dup", 1, "x")))  # no key: the same id is another record
    model = {1: _row(1, "a", "x"), 2: _row(2, "b", "x"), 3: _row(3, "c", "y")}
    model[-1] = _row(1, "dup", "x")
    _assert_reads(root, model)
    first = {k["id"]: k for k in _keys(root) if k["id"] in (2, 3)}
    for k in first.values():  # keys start with the instant that wrote the record
        assert k["_hoodie_record_key"].startswith(k["_hoodie_commit_time"] + "_")

    table.update({"name": "'u'"}, "id = 2")
    model[2]["name"] = "u"
    table.delete("name = 'dup'")
    del model[-1]
    _assert_reads(root, model)
    after = {k["id"]: k["_hoodie_record_key"] for k in _keys(root)}
    assert after[2] == first[2]["_hoodie_record_key"]  # updated in place: its key stays
    assert after[3] == first[3]["_hoodie_record_key"]

    table.overwrite(rows((4, "o", 1, "y")), "city = 'y'")
    del model[3]
    model[4] = _row(4, "o", "y")
    _assert_reads(root, model)
    table.overwrite(rows((5, "w", 1, "z")))
    _assert_reads(root, {5: _row(5, "w", "z")})


def test_keyless_non_partitioned_table(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = _create(root, "MERGE_ON_READ", partitioned=False)
    table.append(rows((1, "a", 1, None), (2, "b", 1, None)))
    table.delete("id = 1")
    table.update({"name": "'u'"}, "id = 2")
    _assert_reads(root, {2: {"id": 2, "name": "u", "ts": 1, "city": None}})


@pytest.mark.parametrize("verb", ["upsert", "merge"])
def test_upsert_and_merge_are_refused_before_any_io(tmp_path: Path, verb: str) -> None:
    root = tmp_path / "t"
    table = _create(root, "MERGE_ON_READ")
    table.append(rows((1, "a", 1, "x")))
    listing = sorted(str(p) for p in root.rglob("*"))
    with pytest.raises(UnsupportedFeatureError) as caught:
        if verb == "upsert":
            table.upsert(rows((1, "b", 2, "x")))
        else:
            table.merge(rows((1, "b", 2, "x")), on="id").when_matched_update_all().execute()
    assert caught.value.feature == "hudi-keyless-table"
    assert verb in str(caught.value)
    assert sorted(str(p) for p in root.rglob("*")) == listing


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_file_writer_and_replace_files_on_a_keyless_table(tmp_path: Path, table_type: str) -> None:
    root = tmp_path / "t"
    table = _create(root, table_type)
    with table.transaction() as tx:  # as lakecore.spark.write: two tasks, one instant
        writer = table._format_writer(tx.snapshot)
        file_writer = writer.file_writer("append", None)
        parts = [
            file_writer.write(rows((1, "a", 1, "x"), (2, "b", 1, "y")), 0),
            file_writer.write(rows((3, "c", 1, "x")), 1),
        ]
        tx.stage(*writer.add_files(file_writer, pa.concat_tables(parts), "append", None))
    model = {1: _row(1, "a", "x"), 2: _row(2, "b", "y"), 3: _row(3, "c", "x")}
    _assert_reads(root, model)
    with table.transaction() as tx:
        index = tx.snapshot.files()
        removed = index.filter(pa.compute.starts_with(index.column(fi.PATH), "y/"))
        assert removed.num_rows == 1
        tx.replace_files([rows((7, "r", 1, "y"), (8, "r", 1, "y"))], removed)
    del model[2]
    model |= {7: _row(7, "r", "y"), 8: _row(8, "r", "y")}
    _assert_reads(root, model)


def test_keyless_create_records_no_key_but_a_key_generator(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _create(root, "COPY_ON_WRITE")
    text = (root / ".hoodie" / "hoodie.properties").read_text()
    assert "hoodie.table.recordkey.fields" not in text
    assert "hoodie.table.keygenerator.type=SIMPLE" in text
    keyed = lakecore.create(str(tmp_path / "k"), SCHEMA, "hudi", [], {"record_key": "id"})
    assert keyed.snapshot().features.record_key == ("id",)
    assert json.loads(json.dumps(keyed.snapshot().features.system_columns)) == [
        "_hoodie_commit_time",
        "_hoodie_commit_seqno",
        "_hoodie_record_key",
        "_hoodie_partition_path",
        "_hoodie_file_name",
    ]
