"""Secondary index records (``mdt/secondary_index_records``) against what Hudi wrote.

The corpus has two tables with secondary indexes: ``mor_avro_v8_trips_8i3u1d`` (Hudi 1.0,
``secondary_index_rider_idx``, built after the first write, then two deletes, two updates
that keep the rider, a compaction and a write) and ``mor_avro_v9_txns_nonpart_meta``
(Hudi 1.1, ``secondary_index_merchant_idx`` on a string column with nulls and
``secondary_index_txn_date_idx`` on a DATE column, both built after the last write). Every
instant written after an index was built is replayed and compared with Hudi's delta commit;
the instants before it, folded, must equal the base files Hudi built the index with; the live
index must be the tables' rows; the records fastavro round-trips.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from lakecore_hudi.mdt import secondary_index_records as si
from lakecore_hudi.mdt.column_stats import METADATA_DIR, _hfile_records
from lakecore_hudi.mdt.record_index import read_index_partition
from lakecore_hudi.table_config import read_table_config

from lakecore.errors import UnsupportedFeatureError
from lakecore.storage import open_storage
from tests.corpus import CORPUS
from tests.hudi.write.mdt_index_checks import (
    assert_secondary_index_matches_table,
    hudi_records_at,
    replay_context,
    replayable_instants,
    secondary_partitions,
)
from tests.hudi.write.mdt_stats_checks import avro_round_trip, index_defs

HUDI = CORPUS / "hudi"
TABLES = sorted(
    p.parent.parent.name
    for p in HUDI.glob("*/.hoodie/hoodie.properties")
    if "secondary_index_" in p.read_text(encoding="latin-1")
)
V8 = "mor_avro_v8_trips_8i3u1d"
RIDER = "secondary_index_rider_idx"
RIDER_BUILT = "20251220210117766"
"""The data timeline's ``indexing`` instant that built ``secondary_index_rider_idx``."""


def test_every_secondary_index_table_is_found() -> None:
    assert TABLES == [V8, "mor_avro_v9_txns_nonpart_meta"]
    assert [len(secondary_partitions(HUDI / t)) for t in TABLES] == [1, 2]


def _replay(root: Path, partition: str) -> list[tuple[str, list[dict[str, Any]]]]:
    return [
        (ts, si.commit_records(replay_context(root, ts), partition))
        for ts, _ in replayable_instants(root)
    ]


def test_commit_records_equal_hudis_delta_commits() -> None:
    compared = deletions = 0
    for ts, records in _replay(HUDI / V8, RIDER):
        if ts < RIDER_BUILT:
            continue
        ours = {r["key"]: (None if si.merge(None, r) is None else r) for r in records}
        assert ours == hudi_records_at(HUDI / V8, RIDER, ts), ts
        compared += 1
        deletions += sum(r is None for r in ours.values())
    assert (compared, deletions) == (6, 2)


def test_records_before_the_index_fold_to_hudis_initial_index() -> None:
    """Hudi built the index (instant 00000000000000004) from the rows of the writes before
    it: folding those writes' records gives the same entries."""
    folded: dict[str, dict[str, Any]] = {}
    for ts, records in _replay(HUDI / V8, RIDER):
        if ts > RIDER_BUILT:
            break
        for r in records:
            merged = si.merge(folded.get(r["key"]), r)
            folded.pop(r["key"], None) if merged is None else folded.update({r["key"]: merged})
    storage = open_storage(str(HUDI / V8))
    initial: dict[str, dict[str, Any]] = {}
    for info in storage.list_dir(f"{METADATA_DIR}/{RIDER}"):
        if info.path.endswith("_00000000000000004.hfile"):
            for r in _hfile_records(storage.read(info.path), info.path, None):
                initial[r.key] = {**r.record, "key": r.key, "_hoodie_file_name": None}
    assert len(initial) == 8
    assert folded == initial


@pytest.mark.parametrize("name", TABLES)
def test_live_index_is_the_tables_rows(name: str) -> None:
    assert assert_secondary_index_matches_table(HUDI / name) == {V8: 6}.get(name, 28)


def test_from_empty_records_equal_hudis_entries() -> None:
    """An instant inserting every live record writes exactly Hudi's live entries."""
    checked = 0
    for name in TABLES:
        storage = open_storage(str(HUDI / name))
        config = read_table_config(storage)
        for partition in secondary_partitions(HUDI / name):
            live = read_index_partition(storage, config, partition)
            assert live is not None
            for key, found in live.items():
                value, record_key = si.split_key(key)
                ours = si.entry(si.index_key(value, record_key))
                assert ours == {**found.record, "_hoodie_file_name": None}
                checked += 1
    assert checked == 34


def test_routing_by_table_version() -> None:
    key = si.index_key("a$b\\c", "k$1")
    assert key == "a\\$b\\\\c$k\\$1"
    assert si.split_key(key) == ("a$b\\c", "k$1")
    assert si.routing_key(key, 8) == key
    assert si.routing_key(key, 9) == "a\\$b\\\\c$"
    assert si.routing_key(key, 9, index_version=1) == key
    assert si.index_key(None, "k") == "\0$k"
    assert si.split_key("\0$k") == (None, "k")
    assert si.partition_name("rider_idx") == si.partition_name(RIDER) == RIDER
    assert si.file_id_prefix(RIDER) == "secondary-index-rider-idx-"


def test_records_round_trip_through_the_metadata_schema() -> None:
    count = 0
    for version in (8, 9):
        for record in (si.entry("v$k"), si.deletion("v$k"), si.entry("\0$k")):
            assert avro_round_trip(record, version) == record
            count += 1
    assert count == 6


def test_unsupported_indexes_are_refused() -> None:
    storage = open_storage(str(HUDI / V8))
    ctx = replay_context(HUDI / V8, "20251220210125441")
    defs = index_defs(storage)
    for definition, match in (
        ({"indexFunction": "lower", "sourceFields": ["rider"]}, "one top-level column"),
        ({"indexFunction": "identity", "sourceFields": ["fare"]}, "not a string"),
        ({"indexFunction": "identity", "sourceFields": ["a", "b"]}, "one top-level column"),
        ({"sourceFields": ["rider"], "version": "V2"}, "index version V2"),
    ):
        bad = {"indexDefinitions": {**defs["indexDefinitions"], RIDER: definition}}
        with pytest.raises(UnsupportedFeatureError, match=match):
            si.commit_records(dataclasses.replace(ctx, index_defs=bad), RIDER)
    with pytest.raises(UnsupportedFeatureError, match="no definition"):
        si.commit_records(dataclasses.replace(ctx, index_defs={}), RIDER)


def test_lakecore_writes_replay_to_the_tables_rows(tmp_path: Path) -> None:
    """On lakecore-written tables: an update changing the indexed value (deletion of the old
    entry + new entry), a key moved to another partition with its value unchanged (entry
    kept), a delete, a null value; folded, the records are the table's (value, key) pairs."""
    from tests.hudi.write.helpers import create, rows, upsert
    from tests.hudi.write.mdt_index_checks import table_records

    defs = {"indexDefinitions": {"secondary_index_name_idx": {"sourceFields": ["name"]}}}
    for table_type in ("COPY_ON_WRITE", "MERGE_ON_READ"):
        root = tmp_path / table_type
        table = create(root, table_type)
        table.append(rows((1, "a", 1, "x"), (2, "b", 1, "x"), (3, "c", 1, "y"), (5, None, 1, "y")))
        upsert(table, rows((1, "z", 2, "x"), (2, "b", 2, "y"), (4, "d", 2, "z")))
        table.delete("id = 3")
        folded: dict[str, dict[str, Any]] = {}
        changes = []
        for ts, _ in replayable_instants(root):
            ctx = dataclasses.replace(replay_context(root, ts), index_defs=defs)
            records = si.commit_records(ctx, "secondary_index_name_idx")
            changes.append(sorted((r["key"], si.merge(None, r) is None) for r in records))
            for r in records:
                merged = si.merge(folded.get(r["key"]), r)
                folded.pop(r["key"], None) if merged is None else folded.update({r["key"]: merged})
        assert changes[1] == [("a$1", True), ("b$2", False), ("d$4", False), ("z$1", False)]
        assert changes[2] == [("c$3", True)]
        found = table_records(root, ("name",))
        keys = found.column("_hoodie_record_key").to_pylist()
        pairs = set(zip(si.render(found.column("name")), keys, strict=True))
        assert (
            {si.split_key(k) for k in folded}
            == pairs
            == {("z", "1"), ("b", "2"), ("d", "4"), (None, "5")}
        ), table_type


def test_write_gate_refuses_before_any_file(tmp_path: Path) -> None:
    """``index_gate.ensure_index_partitions_writable`` passes the corpus tables and refuses
    an index definition lakecore cannot maintain, reading nothing but the definitions."""
    import json

    from lakecore_hudi.mdt.index_gate import ensure_index_partitions_writable
    from lakecore_hudi.options import ReadOptions
    from lakecore_hudi.state import load_state

    from tests.hudi.write.helpers import copy_corpus_table

    for name in TABLES:
        storage = open_storage(str(HUDI / name))
        state = load_state(storage, None, None, ReadOptions())
        ensure_index_partitions_writable(storage, state.config, state.table_schema)
    root = copy_corpus_table(V8, tmp_path)
    storage = open_storage(str(root))
    state = load_state(storage, None, None, ReadOptions())
    path = root / ".hoodie/.index_defs/index.json"
    defs = json.loads(path.read_text())
    defs["indexDefinitions"][RIDER]["sourceFields"] = ["fare"]
    path.write_text(json.dumps(defs))
    with pytest.raises(UnsupportedFeatureError, match="'fare'"):
        ensure_index_partitions_writable(storage, state.config, state.table_schema)
    defs["indexDefinitions"][RIDER]["sourceFields"] = ["rider"]
    defs["indexDefinitions"]["record_index"] = {"indexOptions": {"isPartitioned": "true"}}
    path.write_text(json.dumps(defs))
    with pytest.raises(UnsupportedFeatureError, match="partitioned"):
        ensure_index_partitions_writable(storage, state.config, state.table_schema)


def test_an_upsert_reads_its_touched_groups_once_for_every_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record index and the secondary index of one instant share one read of the touched
    file groups (group_changes memoises it on the instant's IndexContext)."""
    import pyarrow as pa
    from lakecore_hudi.mdt import group_changes as gc

    import lakecore
    from tests.hudi.write.helpers import copy_corpus_table, upsert
    from tests.hudi.write.mdt_index_checks import (
        assert_record_index_matches_table,
        assert_secondary_index_matches_table,
    )

    root = copy_corpus_table(V8, tmp_path)
    calls: list[list[str]] = []
    real = gc._read_changes

    def counting(ctx: Any, meta: Any, columns: Any, extra: Any) -> Any:
        out = real(ctx, meta, columns, extra)
        calls.append(out[0])
        return out

    monkeypatch.setattr(gc, "_read_changes", counting)
    table = lakecore.open(str(root))
    data = table.to_arrow()
    row = data.drop_columns([c for c in data.column_names if c.startswith("_hoodie_")])
    row = row.slice(0, 1)
    row = row.set_column(row.schema.get_field_index("rider"), "rider", pa.array(["rider-new"]))
    ts = row.schema.get_field_index("ts")
    row = row.set_column(ts, "ts", pa.array([row.column("ts")[0].as_py() + 1000]))
    upsert(table, row)
    assert calls == [["rider"]]  # one read, holding the secondary index's column
    assert_record_index_matches_table(root)
    assert_secondary_index_matches_table(root)
