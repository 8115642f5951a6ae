"""record_index records (``mdt/record_index_records``) against what Hudi wrote.

Every corpus table whose metadata table has a ``record_index`` partition is replayed instant
by instant: the records ``commit_records`` computes for a completed instant (seen as it was
while inflight: the timeline cut before it) must be exactly the ones Hudi's delta commit of
that instant wrote into the partition (HFile data block entries and DELETE block keys), field
by field. One field cannot always be reproduced: ``instantTime`` is Hudi's parse of the
instant time in its JVM's time zone (``hoodie.table.timeline.timezone`` is LOCAL on the
corpus tables); lakecore reads instant times as UTC, which is what Hudi wrote on the tables
written in UTC, and 6 hours less than Hudi's on ``mor_avro_v9_txns_nonpart_meta``, written by
a JVM at UTC-06:00. The test pins that difference exactly.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
from lakecore_hudi.keys import PARTITION_PATH, RECORD_KEY
from lakecore_hudi.mdt import record_index_records as ri
from lakecore_hudi.mdt.file_groups import file_group_index
from lakecore_hudi.mdt.index_context import IndexContext
from lakecore_hudi.mdt.record_index import (
    MAX_KEY_BYTES,
    ensure_keys_fit,
    read_index_partition,
    record_location,
    record_locations,
)
from lakecore_hudi.table_config import read_table_config
from lakecore_hudi.timeline.commit_metadata import CommitMetadata

from lakecore.errors import ConstraintViolationError, CorruptTableError, UnsupportedFeatureError
from lakecore.storage import FileInfo, FsspecStorage, open_storage
from tests.corpus import CORPUS
from tests.hudi.write.mdt_index_checks import (
    CutTimelineStorage,
    assert_record_index_matches_table,
    file_group_count,
    holders,
    hudi_records_at,
    replay_context,
    replayable_instants,
    table_records,
)
from tests.hudi.write.mdt_stats_checks import avro_round_trip

HUDI = CORPUS / "hudi"
TABLES = sorted(
    p.parent.parent.name
    for p in HUDI.glob("*/.hoodie/hoodie.properties")
    if "record_index" in p.read_text(encoding="latin-1")
)
EXPECTED_TABLES = 6
EXPECTED_INSTANTS = 34
SIX_HOURS_MS = 6 * 3600 * 1000
ZONE_OFFSET_MS = {"mor_avro_v9_txns_nonpart_meta": SIX_HOURS_MS}
"""Hudi's instantTime minus lakecore's (the writer's JVM zone was UTC-06:00)."""


def test_every_record_index_table_is_found() -> None:
    assert len(TABLES) == EXPECTED_TABLES, TABLES


def _comparable(record: dict[str, Any] | None, offset: int) -> dict[str, Any] | None:
    """``record`` with the instantTime shifted by the writer's zone offset."""
    if record is None:
        return None
    info = record.get("recordIndexMetadata")
    if info is None:
        return record
    return {**record, "recordIndexMetadata": {**info, "instantTime": info["instantTime"] + offset}}


def _replayed(name: str) -> list[tuple[str, list[dict[str, Any]]]]:
    root = HUDI / name
    return [
        (ts, ri.commit_records(replay_context(root, ts))) for ts, _ in replayable_instants(root)
    ]


def test_commit_records_equal_hudis_delta_commits() -> None:
    instants = written = 0
    for name in TABLES:
        offset = ZONE_OFFSET_MS.get(name, 0)
        for ts, records in _replayed(name):
            ours = {r["key"]: _comparable(r, offset) for r in records}
            assert len(ours) == len(records), f"{name} {ts}: a key twice"
            deletions = {k for k, r in ours.items() if ri.merge(None, r) is None}
            hudi = hudi_records_at(HUDI / name, ri.PARTITION, ts)
            assert {k: r for k, r in ours.items() if k not in deletions} == {
                k: r for k, r in hudi.items() if r is not None
            }, f"{name} {ts}"
            assert deletions == {k for k, r in hudi.items() if r is None}, f"{name} {ts}"
            instants += 1
            written += len(records)
    assert instants == EXPECTED_INSTANTS
    assert written == 85


def test_replayed_records_fold_to_hudis_live_index() -> None:
    """Folding every instant's records with ``merge`` gives Hudi's live partition, field by
    field (instantTime up to the writer's zone)."""
    for name in TABLES:
        folded: dict[str, dict[str, Any]] = {}
        for _, records in _replayed(name):
            for r in records:
                merged = ri.merge(folded.get(r["key"]), r)
                if merged is None:
                    folded.pop(r["key"], None)
                else:
                    folded[r["key"]] = merged
        storage = open_storage(str(HUDI / name))
        live = read_index_partition(storage, read_table_config(storage), ri.PARTITION)
        assert live is not None
        offset = ZONE_OFFSET_MS.get(name, 0)
        ours = {k: _comparable(r, offset)["recordIndexMetadata"] for k, r in folded.items()}  # type: ignore[index]
        assert ours == {k: e.record["recordIndexMetadata"] for k, e in live.items()}, name


@pytest.mark.parametrize("name", TABLES)
def test_live_index_is_the_tables_records(name: str) -> None:
    assert assert_record_index_matches_table(HUDI / name) > 0


def test_from_empty_records_equal_hudis_entries() -> None:
    """The records an instant inserting every live record would write equal Hudi's live
    entries in every field but instantTime (Hudi's is each key's own inserting instant)."""
    checked = 0
    for name in TABLES:
        root = HUDI / name
        storage = open_storage(str(root))
        live = read_index_partition(storage, read_table_config(storage), ri.PARTITION)
        assert live is not None
        held = holders(table_records(root))
        for key, places in held.items():
            # A key Spark's insert left in two file groups: Hudi indexes one of them.
            place = record_location(live[key].record) if len(places) > 1 else next(iter(places))
            ours = ri.location_record(key, place[0], place[1], 0)
            theirs = {**live[key].record, "_hoodie_file_name": None}
            ours_info, theirs_info = (
                ours.pop("recordIndexMetadata"),
                theirs.pop("recordIndexMetadata"),
            )
            assert ours == theirs
            assert {**ours_info, "instantTime": None} == {**theirs_info, "instantTime": None}
            checked += 1
    assert checked == 45


def test_records_round_trip_through_the_metadata_schema() -> None:
    count = 0
    for name in TABLES:
        version = read_table_config(open_storage(str(HUDI / name))).table_version
        for _, records in _replayed(name):
            for record in records:
                assert avro_round_trip(record, version) == record
                count += 1
    assert count == 85


def test_file_id_encodings() -> None:
    uuid_id = "0ad34fbd-dd1a-4a9e-b367-63404003fa9c"
    for file_id, index in ((f"{uuid_id}-0", 0), (f"{uuid_id}-12", 12), (uuid_id, -1)):
        record = ri.location_record("k", "p=1", file_id, 5)
        info = record["recordIndexMetadata"]
        assert (info["fileIdEncoding"], info["fileIndex"], info["fileId"]) == (0, index, "")
        assert record_location(record) == ("p=1", file_id)
    for raw in ("part-0001.parquet_20240101_hudiext", f"{uuid_id.upper()}-0", "x-1"):
        info = ri.location_record("k", "", raw, 5)["recordIndexMetadata"]
        assert (info["fileIdEncoding"], info["fileIdHighBits"], info["fileId"]) == (1, -1, raw)
        assert record_location(ri.location_record("k", "", raw, 5)) == ("", raw)


def test_keys_too_long_for_an_hfile_are_refused() -> None:
    ensure_keys_fit(["k" * MAX_KEY_BYTES, "\u00e9" * (MAX_KEY_BYTES // 2)], ri.PARTITION)
    with pytest.raises(ConstraintViolationError, match="32768 UTF-8 bytes"):
        ensure_keys_fit(["ok", "k" * (MAX_KEY_BYTES + 1)], ri.PARTITION)
    with pytest.raises(ConstraintViolationError, match="32768 UTF-8 bytes"):
        ensure_keys_fit(["\u00e9" * (MAX_KEY_BYTES // 2 + 1)], ri.PARTITION)


def test_undecodable_locations_are_corrupt() -> None:
    good = ri.location_record("k", "p", "0ad34fbd-dd1a-4a9e-b367-63404003fa9c-0", 1)
    info = good["recordIndexMetadata"]
    for bad in (
        {**good, "recordIndexMetadata": None},
        {**good, "recordIndexMetadata": {**info, "fileIdEncoding": 7}},
        {**good, "recordIndexMetadata": {**info, "fileIdLowBits": None}},
    ):
        with pytest.raises(CorruptTableError, match="'k'"):
            record_location(bad)


def test_merge_newer_wins_and_deletions_drop() -> None:
    a = ri.location_record("k", "p", "f-0", 1)
    b = ri.location_record("k", "q", "g-0", 2)
    assert ri.merge(a, b) is b
    assert ri.merge(None, a) is a
    assert ri.merge(a, ri.deletion("k")) is None
    assert ri.merge(ri.deletion("k"), b) is b
    assert ri.routing_key("TXN-001", 8) == ri.routing_key("TXN-001", 9) == "TXN-001"


def _ctx(meta: CommitMetadata | None, action: str, defs: dict[str, Any] | None = None) -> Any:
    storage = open_storage(str(HUDI / TABLES[0]))
    return IndexContext(
        storage, read_table_config(storage), "20990101000000000", action, meta, {}, {}, 9,
        defs or {},
    )  # fmt: skip


def test_clean_and_compaction_write_nothing() -> None:
    assert ri.commit_records(_ctx(None, "clean")) == []
    assert ri.commit_records(_ctx(CommitMetadata(operation_type="COMPACT"), "commit")) == []


def test_partitioned_record_index_is_refused() -> None:
    defs = {"indexDefinitions": {"record_index": {"indexOptions": {"isPartitioned": "true"}}}}
    with pytest.raises(UnsupportedFeatureError, match="partitioned"):
        ri.commit_records(_ctx(CommitMetadata(), "commit", defs))


@pytest.mark.parametrize("meta_fields", ["true", "false"])
def test_lakecore_writes_replay_to_the_tables_records(tmp_path: Path, meta_fields: str) -> None:
    """On a lakecore-written table (inserts, an update moving keys to another partition, a
    delete, MoR logs; with meta fields and with virtual keys), the folded records of every
    instant are the table's records."""
    from tests.hudi.write.helpers import create, rows, upsert

    for table_type in ("COPY_ON_WRITE", "MERGE_ON_READ"):
        root = tmp_path / table_type
        table = create(root, table_type, populate_meta_fields=meta_fields)
        table.append(rows((1, "a", 1, "x"), (2, "b", 1, "x"), (3, "c", 1, "y")))
        upsert(table, rows((2, "b", 2, "y"), (4, "d", 2, "z")))
        table.delete("id = 3")
        upsert(table, rows((1, "a", 3, "x")))
        folded: dict[str, dict[str, Any]] = {}
        for ts, _ in replayable_instants(root):
            for r in ri.commit_records(replay_context(root, ts)):
                merged = ri.merge(folded.get(r["key"]), r)
                folded.pop(r["key"], None) if merged is None else folded.update({r["key"]: merged})
        held = holders(table_records(root))
        assert {k: {record_location(r)} for k, r in folded.items()} == held, table_type
        assert sorted(held) == ["1", "2", "4"]
        got = table_records(root).select([RECORD_KEY, PARTITION_PATH]).to_pylist()
        assert {r[RECORD_KEY]: r[PARTITION_PATH] for r in got}["2"] == "city=y"


class CountingStorage(FsspecStorage):
    """Records the data files read and the directories listed."""

    def __init__(self, uri: str) -> None:
        super().__init__(uri)
        self.reads: list[str] = []
        self.listed: list[str] = []

    def read(self, path: str, start: int | None = None, end: int | None = None) -> bytes:
        self.reads.append(path)
        return super().read(path, start, end)

    def list_dir(self, path: str) -> list[FileInfo]:
        self.listed.append(path)
        return super().list_dir(path)


def test_cost_follows_the_touched_file_groups(tmp_path: Path) -> None:
    """An upsert into one partition of a table with six lists that partition only and reads
    only the files of the file group it rewrote (plus the timeline)."""
    from tests.hudi.write.helpers import create, rows, upsert

    root = tmp_path / "t"
    table = create(root, "MERGE_ON_READ")
    table.append(rows(*[(i, "n", 1, c) for i, c in enumerate("abcdef")]))
    upsert(table, rows((2, "m", 2, "c")))
    ts = replayable_instants(root)[-1][0]
    counting = CountingStorage(str(root))
    ctx = dataclasses.replace(replay_context(root, ts), storage=CutTimelineStorage(counting, ts))
    assert ri.commit_records(ctx) == []  # an update in place
    data_reads = {p for p in counting.reads if not p.startswith(".hoodie/")}
    assert data_reads and {p.split("/")[0] for p in data_reads} == {"city=c"}
    assert [p for p in counting.listed if not p.startswith(".hoodie")] == ["city=c"]


def test_write_stats_naming_missing_or_external_files_are_refused() -> None:
    """A group read without the file its write stat names would turn its records into
    deletions: a missing file is CorruptTableError, an adopted external file unsupported."""
    name = "cow_v9_txns_simple_overwrite"
    ctx = replay_context(HUDI / name, replayable_instants(HUDI / name)[1][0])
    assert ctx.meta is not None
    partition, stats = next(iter(ctx.meta.partition_to_write_stats.items()))
    for path, error in (
        (f"{partition}/gone.parquet", CorruptTableError),
        (f"{partition}/part-0.parquet_20240101000000000_hudiext", UnsupportedFeatureError),
    ):
        stat = dataclasses.replace(stats[0], path=path)
        meta = dataclasses.replace(ctx.meta, partition_to_write_stats={partition: [stat]})
        with pytest.raises(error, match=path.rsplit("/", 1)[1]):
            ri.commit_records(dataclasses.replace(ctx, meta=meta))


def test_key_lookup_reads_only_the_routed_file_groups() -> None:
    """``record_locations(keys=...)`` equals the full read for those keys (absent keys left
    out) and reads the metadata files of the keys' routed file groups only."""
    looked_up = 0
    for name in TABLES:
        counting = CountingStorage(str(HUDI / name))
        config = read_table_config(counting)
        everything = record_locations(counting, config)
        assert everything
        n = file_group_count(HUDI / name, ri.PARTITION)
        for key, location in sorted(everything.items())[:3]:
            counting.reads.clear()
            assert record_locations(counting, config, [key, "absent-key"]) == {key: location}
            read = {m.group(1) for p in counting.reads if (m := _GROUP.search(p))}
            assert read == {f"{file_group_index(k, n):04d}" for k in (key, "absent-key")}
            looked_up += 1
    assert looked_up == 3 * EXPECTED_TABLES


_GROUP = re.compile(r"/record_index/\.?record-index-(\d{4})-0")
