"""Writing Hudi tables end to end: every operation, read back by lakecore and by hudi-rs."""

from __future__ import annotations

from pathlib import Path

import pytest
from lakecore_hudi.names import parse_base_file_name, parse_log_file_name
from lakecore_hudi.write.layout import layout_for
from lakecore_hudi.write.writer import state_of

import lakecore
from tests.hudi.write.helpers import (
    Row,
    assert_reads,
    create,
    hudi_rs_rows,
    lakecore_rows,
    model_of,
    rows,
    upsert,
)

# (table type, table version, partitioned)
CASES = [
    ("COPY_ON_WRITE", "8", True),
    ("COPY_ON_WRITE", "8", False),
    ("MERGE_ON_READ", "8", True),
    ("MERGE_ON_READ", "8", False),
    ("COPY_ON_WRITE", "6", True),
    ("MERGE_ON_READ", "6", True),
]
KINDS = {"COPY_ON_WRITE": "cow", "MERGE_ON_READ": "mor"}
IDS = [f"{KINDS[t]}-v{v}-{'part' if p else 'nonpart'}" for t, v, p in CASES]


def _upsert(root: Path, data: object) -> None:
    table = lakecore.open(str(root))
    table.merge(data, on="id").when_matched_update_all().when_not_matched_insert_all().execute()


@pytest.mark.parametrize(("table_type", "version", "partitioned"), CASES, ids=IDS)
def test_every_operation(tmp_path: Path, table_type: str, version: str, partitioned: bool) -> None:
    root = tmp_path / "t"
    table = create(root, table_type, version, partitioned)
    first = rows((1, "a", 1, "x"), (2, "b", 1, "y"), (3, "c", 1, "x"), (4, "d", 1, "y"))
    table.append(first)
    model: dict[int, Row] = model_of(first)
    assert_reads(root, model)

    # Upsert: 2 updated in place, 3 moves to partition z, 5 is new.
    change = rows((2, "B", 2, "y"), (3, "C", 2, "z"), (5, "e", 2, "x"))
    _upsert(root, change)
    model.update(model_of(change))
    assert_reads(root, model)

    table.delete("id = 1")
    del model[1]
    assert_reads(root, model)

    table.update({"name": "upper(name)", "ts": "ts + 10"}, "city = 'x'")
    for row in model.values():
        if row["city"] == "x":
            row.update(name=row["name"].upper(), ts=row["ts"] + 10)
    assert_reads(root, model)

    replacement = rows((6, "f", 3, "y"))
    table.overwrite(replacement, where="city = 'y'")
    model = {k: v for k, v in model.items() if v["city"] != "y"} | model_of(replacement)
    assert_reads(root, model)

    assert (table.compact() is not None) == (table_type == "MERGE_ON_READ")
    assert_reads(root, model)
    assert table.clean(retain_commits=1)
    assert_reads(root, model)

    everything = rows((7, "g", 1, "x"), (8, "h", 1, "z"))
    table.overwrite(everything)
    model = model_of(everything)
    assert_reads(root, model)

    table.delete()
    assert_reads(root, {})
    table.append(rows((9, "i", 1, "x")))
    assert_reads(root, {9: {"id": 9, "name": "i", "ts": 1, "city": "x"}})


@pytest.mark.parametrize("version", ["8", "6"])
def test_mor_updates_go_to_log_files(tmp_path: Path, version: str) -> None:
    root = tmp_path / "t"
    table = create(root, "MERGE_ON_READ", version)
    table.append(rows((1, "a", 1, "x"), (2, "b", 1, "x")))
    _upsert(root, rows((1, "A", 2, "x")))
    table.delete("id = 2")
    logs = sorted(p.name for p in (root / "city=x").iterdir() if parse_log_file_name(p.name))
    bases = [p.name for p in (root / "city=x").iterdir() if parse_base_file_name(p.name)]
    assert len(logs) == 2 and len(bases) == 1
    base = parse_base_file_name(bases[0])
    assert base is not None
    parsed = [parse_log_file_name(n) for n in logs]
    assert all(p is not None and p.file_id == base.file_id for p in parsed)
    if version == "8":  # named after the delta commits that wrote them
        assert {p.instant for p in parsed if p} == set(
            lakecore.open(str(root)).history()[i].version for i in (0, 1)
        )
    else:  # named after the base instant, numbered
        assert {(p.instant, p.version) for p in parsed if p} == {
            (base.instant, 1),
            (base.instant, 2),
        }
    assert_reads(root, {1: {"id": 1, "name": "A", "ts": 2, "city": "x"}})


def test_upsert_keeps_the_greatest_precombine_value(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = create(root, "MERGE_ON_READ")
    table.append(rows((1, "a", 5, "x")))
    # In the batch the greater ts wins; against the table a lower ts loses (event-time order).
    upsert(table, rows((1, "old", 3, "x"), (2, "b1", 2, "x"), (2, "b2", 1, "x")))
    assert_reads(
        root,
        {
            1: {"id": 1, "name": "a", "ts": 5, "city": "x"},
            2: {"id": 2, "name": "b1", "ts": 2, "city": "x"},
        },
    )
    table.update({"name": "'z'"}, "id = 2")
    assert_reads(
        root,
        {
            1: {"id": 1, "name": "a", "ts": 5, "city": "x"},
            2: {"id": 2, "name": "z", "ts": 2, "city": "x"},
        },
    )


def test_merge_clauses(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = create(root, "COPY_ON_WRITE")
    table.append(rows((1, "a", 1, "x"), (2, "b", 1, "y"), (3, "c", 1, "x")))
    source = rows((1, "s1", 2, "x"), (2, "s2", 2, "y"), (4, "s4", 2, "z"))
    table.merge(source, on="id").when_matched_delete("s.name = 's2'").execute()
    model = {
        1: {"id": 1, "name": "a", "ts": 1, "city": "x"},
        3: {"id": 3, "name": "c", "ts": 1, "city": "x"},
    }
    assert_reads(root, model)
    (
        table.merge(source, on="id")
        .when_matched_update({"name": "concat(t.name, s.name)"})
        .when_not_matched_insert_all("s.id > 3")
        .execute()
    )
    model[1]["name"] = "as1"
    model[4] = {"id": 4, "name": "s4", "ts": 2, "city": "z"}
    assert_reads(root, model)


def test_null_partition_value_and_plain_paths(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = create(root, "COPY_ON_WRITE", hive_style=False)
    table.append(rows((1, "a", 1, None), (2, "b", 1, "x")))
    assert (root / "__HIVE_DEFAULT_PARTITION__" / ".hoodie_partition_metadata").exists()
    assert (root / "x" / ".hoodie_partition_metadata").read_text().splitlines()[2:] == [
        f"commitTime={lakecore.open(str(root)).version}",
        "partitionDepth=1",
    ]
    got = lakecore.open(str(root)).to_arrow(columns=["id", "_hoodie_partition_path"])
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "_hoodie_partition_path": "__HIVE_DEFAULT_PARTITION__"},
        {"id": 2, "_hoodie_partition_path": "x"},
    ]


def test_meta_fields(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = create(root, "COPY_ON_WRITE")
    version = table.append(rows((1, "a", 1, "x"), (2, "b", 1, "x"))).version
    got = lakecore.open(str(root)).to_arrow().sort_by("id").to_pylist()
    base = sorted(p.name for p in (root / "city=x").iterdir() if parse_base_file_name(p.name))
    assert [r["_hoodie_commit_time"] for r in got] == [version, version]
    assert [r["_hoodie_commit_seqno"] for r in got] == [f"{version}_0_0", f"{version}_0_1"]
    assert [r["_hoodie_record_key"] for r in got] == ["1", "2"]
    assert {r["_hoodie_partition_path"] for r in got} == {"city=x"}
    assert {r["_hoodie_file_name"] for r in got} == set(base)


def test_complex_keys(tmp_path: Path) -> None:
    root = tmp_path / "t"
    props = {"record_key": "id,name", "table_type": "MERGE_ON_READ"}
    table = lakecore.create(str(root), rows().schema, "hudi", ["city"], props)
    table.append(rows((1, "a", 1, "x")))
    table.merge(rows((1, "a", 2, "x")), on=["id", "name"]).when_matched_update_all().execute()
    got = lakecore.open(str(root)).to_arrow()
    assert got.column("_hoodie_record_key").to_pylist() == ["id:1,name:a"]
    assert got.column("ts").to_pylist() == [2]


def test_complex_keygen_over_one_field(tmp_path: Path) -> None:
    root = tmp_path / "t"
    props = {"record_key": "id", "precombine_field": "ts"}
    table = lakecore.create(str(root), rows().schema, "hudi", ["city", "name"], props)
    table.append(rows((1, "a", 1, "x")))
    upsert(table, rows((1, "a", 2, "x")))
    got = lakecore.open(str(root)).to_arrow()
    # Hudi <= 0.14.0 and >= 1.1 prefix the field name (HUDI-7001)
    assert got.column("_hoodie_record_key").to_pylist() == ["id:1"]
    assert got.column("_hoodie_partition_path").to_pylist() == ["x/a"]
    assert got.column("ts").to_pylist() == [2]
    assert hudi_rs_rows(root) == lakecore_rows(root)
    config = state_of(table.snapshot()).config
    schema = table.snapshot().schema
    assert layout_for(config, schema, "id:1").complex_keys
    assert not layout_for(config, schema, "1").complex_keys  # written by Hudi 0.14.1-1.0.2
