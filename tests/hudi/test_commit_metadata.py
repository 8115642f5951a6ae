"""Instant details: decoding the corpus, encode/decode round trips, and hudi-rs reading ours."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lakecore_hudi.table_config import PROPERTIES_PATH, TableConfig, read_table_config
from lakecore_hudi.table_config_out import new_table_properties, render_table_config
from lakecore_hudi.timeline import lifecycle
from lakecore_hudi.timeline.active import Timeline, load_timeline
from lakecore_hudi.timeline.clean_metadata import (
    CleanerPlan,
    CleanMetadata,
    CleanPartitionMetadata,
    encode_clean_metadata,
    encode_cleaner_plan,
    parse_clean_metadata,
    parse_cleaner_plan,
)
from lakecore_hudi.timeline.commit_metadata import (
    CommitMetadata,
    WriteStat,
    encode_commit_metadata,
    parse_commit_metadata,
)
from lakecore_hudi.timeline.instants import COMPLETED, REPLACE_COMMIT, WRITE_ACTIONS, Instant
from lakecore_hudi.timeline.payload import AVRO_MAGIC, decode_payload
from lakecore_hudi.timeline.rewrite_plans import (
    encode_requested_replace,
    parse_clustering_plan,
    parse_compaction_plan,
)
from lakecore_hudi.timeline.rollback_metadata import (
    RollbackMetadata,
    RollbackPartitionMetadata,
    RollbackPlan,
    RollbackRequest,
    encode_rollback_metadata,
    encode_rollback_plan,
    parse_rollback_metadata,
    parse_rollback_plan,
)

from lakecore.errors import CorruptTableError
from lakecore.storage import Storage, open_storage
from tests.corpus import CORPUS

HUDI_TABLES = sorted(p.name for p in (CORPUS / "hudi").iterdir()) if CORPUS.exists() else []


def _open(table: str) -> tuple[Storage, TableConfig, Timeline]:
    storage = open_storage(str(CORPUS / "hudi" / table))
    config = read_table_config(storage)
    return storage, config, load_timeline(storage, config)


def _commit(storage: Storage, timeline: Timeline, instant: Instant) -> CommitMetadata:
    data = timeline.read_details(storage, instant)
    return parse_commit_metadata(data, timeline.path_of(instant), instant.action == REPLACE_COMMIT)


# ---------------------------------------------------------------- corpus


def test_corpus_write_instants_decode_and_round_trip() -> None:
    if not HUDI_TABLES:
        pytest.fail(f"corpus not found at {CORPUS}; set LAKECORE_CORPUS")
    ran = 0
    for table in HUDI_TABLES:
        storage, config, timeline = _open(table)
        for instant in timeline.instants:
            if instant.state != COMPLETED or instant.action not in WRITE_ACTIONS:
                continue
            meta = _commit(storage, timeline, instant)
            data = timeline.read_details(storage, instant)
            assert data.startswith(AVRO_MAGIC) == (config.table_version >= 8), instant
            assert meta.operation_type, instant
            assert meta.schema and json.loads(meta.schema)["type"] == "record"
            for stat in meta.write_stats():
                assert stat.file_id and stat.path and stat.num_writes >= 0
            for version in (6, 8):  # both encodings, whatever the source was
                again = parse_commit_metadata(encode_commit_metadata(meta, version), "x")
                assert again == meta, (instant, version)
            ran += 1
    assert ran == 76  # = the completed write instants of the 20 expected timelines


def test_corpus_commit_details() -> None:
    storage, _, timeline = _open("mor_avro_v8_trips_8i3u1d")
    first = _commit(storage, timeline, timeline.completed_write_instants()[0])
    assert first.operation_type == "UPSERT" and not first.replace
    assert set(first.partition_to_write_stats) == {
        "city=san_francisco",
        "city=sao_paulo",
        "city=chennai",
    }
    stat = first.partition_to_write_stats["city=sao_paulo"][0]
    assert stat.file_id == "8aa68f7e-afd6-4c94-b86c-8a886552e08d-0"
    assert stat.path and stat.path.startswith("city=sao_paulo/8aa68f7e")
    assert (stat.num_writes, stat.num_inserts, stat.prev_commit) == (2, 2, None)
    compaction = timeline.find("20251220210129235")
    assert compaction is not None
    assert _commit(storage, timeline, compaction).compacted

    storage, _, timeline = _open("mor_parquet_v6_simplekeygen_nonhivestyle_overwritetable")
    writes = timeline.completed_write_instants()
    update = _commit(storage, timeline, writes[1])
    log_stat = update.partition_to_write_stats["10"][0]
    assert log_stat.log_files == (
        ".92e64357-e4d1-4639-a9d3-c3535829d0aa-0_20250121000647668.log.1_0-73-101",
    )
    assert (log_stat.log_version, log_stat.log_offset) == (1, 0)
    assert log_stat.prev_commit == "20250121000647668" and log_stat.base_file
    overwrite = _commit(storage, timeline, writes[2])
    assert overwrite.replace and overwrite.operation_type == "INSERT_OVERWRITE_TABLE"
    assert sorted(overwrite.replaced_file_ids()) == [
        ("10", "92e64357-e4d1-4639-a9d3-c3535829d0aa-0"),
        ("20", "d49ae379-4f20-4549-8e23-a5f9604412c0-0"),
        ("30", "de3550df-e12c-4591-9335-92ff992258a2-0"),
    ]  # fmt: skip


def test_corpus_plans_and_rollbacks() -> None:
    storage, _, timeline = _open("mor_avro_v8_trips_8i3u1d")
    requested = [
        i for i in timeline.instants if i.action == "compaction" and i.state == "REQUESTED"
    ]
    plan = parse_compaction_plan(timeline.read_details(storage, requested[0]), "x")
    assert len(plan.operations) == 3
    op = plan.operations[0]
    assert op.base_instant_time == "20251220210108078" and len(op.log_files) == 2
    assert op.base_file and op.partition_path == "city=chennai"

    storage, _, timeline = _open("cow_v9_txns_nonpart_nometa")
    clustering = [
        i for i in timeline.instants if i.action == "clustering" and i.state == "REQUESTED"
    ]
    cplan = parse_clustering_plan(timeline.read_details(storage, clustering[0]), "x")
    assert cplan.operation_type == "CLUSTER" and len(list(cplan.file_groups())) == 4
    replaced = _commit(storage, timeline, timeline.find("20260307135802835"))  # type: ignore[arg-type]
    assert {fid for _, fid in cplan.file_groups()} == {
        fid for _, fid in replaced.replaced_file_ids()
    }

    storage, _, timeline = _open("mor_avro_v9_nonpartitioned_rollback")
    rollbacks = [i for i in timeline.instants if i.action == "rollback"]
    rplan = parse_rollback_plan(timeline.read_details(storage, rollbacks[0]), "x")
    assert rplan.instant_to_rollback == ("20260403184242950", "deltacommit")
    assert len(rplan.requests) == 1 and len(rplan.requests[0].files_to_delete) == 1
    done = next(i for i in rollbacks if i.state == COMPLETED)
    meta = parse_rollback_metadata(timeline.read_details(storage, done), "x")
    assert meta.commits_rollback == ("20260403184242950",)
    assert meta.instants_rollback == (("20260403184242950", "deltacommit"),)
    assert meta.total_files_deleted == 1 and set(meta.partition_metadata) == {""}
    assert parse_rollback_metadata(encode_rollback_metadata(meta), "x") == meta
    assert parse_rollback_plan(encode_rollback_plan(rplan), "x") == rplan


# ---------------------------------------------------------------- bad / empty input


def test_empty_content_gives_empty_objects() -> None:
    assert parse_commit_metadata(b"", "x") == CommitMetadata()
    assert parse_commit_metadata(b"", "x", replace=True).replace
    assert parse_clean_metadata(b"", "x") == CleanMetadata()
    assert parse_rollback_metadata(b"  \n", "x") == RollbackMetadata()
    assert parse_rollback_plan(b"", "x") == RollbackPlan()
    assert parse_compaction_plan(b"", "x").operations == ()
    assert parse_clustering_plan(b"", "x").input_groups == ()
    assert decode_payload(b"", "x") is None


@pytest.mark.parametrize(
    "data",
    [
        b"not json",
        b"[1, 2]",
        AVRO_MAGIC + b"\x00garbage",
        b"\xff\xfe",
        b'{"partitionToWriteStats": 5}',
    ],
)
def test_undecodable_content_is_corrupt(data: bytes) -> None:
    with pytest.raises(CorruptTableError, match=r"\.hoodie/1\.commit"):
        parse_commit_metadata(data, ".hoodie/1.commit")


# ---------------------------------------------------------------- encoders


def _stat(**kw: Any) -> WriteStat:
    base: dict[str, Any] = {
        "file_id": "f-0",
        "path": "p/f-0_0-1-0_1.parquet",
        "partition_path": "p",
    }
    base.update(kw)
    return WriteStat(**base)


@pytest.mark.parametrize("version", [6, 8])
def test_commit_round_trip(version: int) -> None:
    meta = CommitMetadata(
        {"p": [_stat(num_writes=3, num_inserts=3, total_write_bytes=10, file_size_in_bytes=10)],
         "q": [_stat(file_id="g-0", path="q/.g-0_1.log.1_0-1-0", prev_commit="1", log_version=1,
                     log_offset=0, base_file="g-0_0-1-0_1.parquet",
                     log_files=(".g-0_1.log.1_0-1-0",), num_update_writes=1, num_deletes=2,
                     cdc_stats={"x": 1})]},
        operation_type="UPSERT",
        extra_metadata={"schema": '{"type":"record","name":"r","fields":[]}'},
    )  # fmt: skip
    data = encode_commit_metadata(meta, version)
    assert data.startswith(AVRO_MAGIC) == (version == 8)
    back = parse_commit_metadata(data, "x")
    assert back.operation_type == "UPSERT" and not back.replace
    assert {p: list(s) for p, s in back.partition_to_write_stats.items()} == {
        p: list(s) for p, s in meta.partition_to_write_stats.items()
    }
    if version == 6:
        raw = json.loads(data)
        assert raw["partitionToWriteStats"]["p"][0]["prevCommit"] == "null"


@pytest.mark.parametrize("version", [6, 8])
def test_replace_commit_round_trip(version: int) -> None:
    meta = CommitMetadata({"p": [_stat()]}, "INSERT_OVERWRITE", {}, {"p": ("old-0", "old-1")})
    back = parse_commit_metadata(encode_commit_metadata(meta, version), "x")
    assert back.replace and sorted(back.replaced_file_ids()) == [("p", "old-0"), ("p", "old-1")]
    empty = CommitMetadata(operation_type="INSERT_OVERWRITE_TABLE", replace=True)
    assert parse_commit_metadata(encode_commit_metadata(empty, version), "x").replace
    if version == 8:
        reader = fastavro.reader(io.BytesIO(encode_commit_metadata(empty, 8)))
        schema = reader.writer_schema
        assert isinstance(schema, dict)
        assert schema["name"].endswith("HoodieReplaceCommitMetadata")


def test_clean_round_trip() -> None:
    meta = CleanMetadata(
        start_clean_time="2", time_taken_ms=5, total_files_deleted=1, earliest_commit_to_retain="1",
        last_completed_commit_timestamp="1", policy="KEEP_LATEST_COMMITS",
        partition_metadata={"p": CleanPartitionMetadata("p", "KEEP_LATEST", ("a",), ("b",))},
    )  # fmt: skip
    data = encode_clean_metadata(meta)
    assert data.startswith(AVRO_MAGIC)
    assert parse_clean_metadata(data, "x") == meta
    plan = CleanerPlan(
        "KEEP_LATEST_COMMITS", ("1", "commit", "COMPLETED"), {"p": ("p/a.parquet",)}, ()
    )
    assert parse_cleaner_plan(encode_cleaner_plan(plan), "x") == plan


def test_rollback_round_trip() -> None:
    meta = RollbackMetadata(
        "3", 7, 1, ("2",), (("2", "deltacommit"),),
        {"p": RollbackPartitionMetadata("p", ("p/x.parquet",), (), {"p/.f.log.1": 99}, {})},
    )  # fmt: skip
    assert parse_rollback_metadata(encode_rollback_metadata(meta), "x") == meta
    plan = RollbackPlan(("2", "commit"), (RollbackRequest("p", "f", "1", ("p/x.parquet",), {}),))
    assert parse_rollback_plan(encode_rollback_plan(plan), "x") == plan


def test_requested_replace() -> None:
    plan = parse_clustering_plan(encode_requested_replace("INSERT_OVERWRITE"), "x")
    assert plan.operation_type == "INSERT_OVERWRITE" and plan.input_groups == ()


# ---------------------------------------------------------------- hudi-rs reads what we write


def _hudi() -> Any:
    import hudi  # a test dependency: missing it must fail, not skip

    if not hasattr(hudi, "HudiTableBuilder"):
        pytest.fail(
            f"'import hudi' found {hudi.__file__}, not hudi-rs: pytest puts tests/ on sys.path, "
            "so the tests/hudi package shadows it; add tests/__init__.py"
        )
    return hudi


def _hudi_rows(path: Path) -> list[dict[str, Any]]:
    table = _hudi().HudiTableBuilder.from_base_uri(str(path)).build()
    batches = table.read()
    rows = pa.Table.from_batches(batches).to_pylist() if batches else []
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


@pytest.mark.parametrize(
    "table",
    [
        "cow_v6_nonpartitioned",
        "mor_avro_v6_trips_8i1u",
        "mor_parquet_v6_simplekeygen_nonhivestyle_overwritetable",
        "cow_v8_simplekeygen_hivestyle_no_metafields",
        "cow_v9_txns_nonpart_nometa",
        "mor_avro_v9_txns_nonpart_nometa",
    ],
)  # fmt: skip
def test_hudi_rs_reads_reencoded_commits(tmp_path: Path, table: str) -> None:
    """Every completed write instant rewritten by our encoder: hudi-rs must read the same rows
    (the replace commits among them hide replaced file groups only if their ids decode)."""
    copy = tmp_path / table
    shutil.copytree(CORPUS / "hudi" / table, copy)
    for path in copy.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)  # the corpus is read-only
    before = _hudi_rows(copy)
    storage, config, timeline = _open(table)
    target = open_storage(str(copy))
    rewritten = 0
    for instant in timeline.completed_write_instants():
        meta = _commit(storage, timeline, instant)
        target.put(timeline.path_of(instant), encode_commit_metadata(meta, config.table_version))
        rewritten += 1
    assert rewritten >= 1
    assert _hudi_rows(copy) == before


def _write_base_file(
    root: Path, partition: str, file_id: str, ts: str, ids: list[int]
) -> WriteStat:
    name = f"{file_id}_0-1-0_{ts}.parquet"
    rows = pa.table({
        "_hoodie_commit_time": [ts] * len(ids),
        "_hoodie_commit_seqno": [f"{ts}_0_{i}" for i in ids],
        "_hoodie_record_key": [str(i) for i in ids],
        "_hoodie_partition_path": [partition] * len(ids),
        "_hoodie_file_name": [name] * len(ids),
        "id": pa.array(ids, pa.int64()),
        "part": [partition.split("=")[1]] * len(ids),
    })  # fmt: skip
    (root / partition).mkdir(parents=True, exist_ok=True)
    pq.write_table(rows, root / partition / name)
    size = (root / partition / name).stat().st_size
    return WriteStat(file_id, f"{partition}/{name}", partition, None, len(ids), 0, len(ids), 0,
                     size, 0, size)  # fmt: skip


_SCHEMA = json.dumps({
    "type": "record", "name": "t_record", "namespace": "hoodie.t",
    "fields": [{"name": "id", "type": ["null", "long"], "default": None},
               {"name": "part", "type": ["null", "string"], "default": None}],
})  # fmt: skip


@pytest.mark.parametrize("version", [6, 8])
def test_hudi_rs_reads_a_table_we_write(tmp_path: Path, version: int) -> None:
    storage = open_storage(str(tmp_path))
    props = new_table_properties("t", "COPY_ON_WRITE", ["id"], None, ["part"], version,
                                 hive_style=True, create_schema_json=_SCHEMA)  # fmt: skip
    storage.put(PROPERTIES_PATH, render_table_config(props))
    config = read_table_config(storage)

    ts1 = lifecycle.new_instant_time()
    lifecycle.write_requested(storage, config, "commit", ts1)
    lifecycle.write_inflight(storage, config, "commit", ts1)
    stat = _write_base_file(
        tmp_path, "part=a", "aaaaaaaa-0000-0000-0000-000000000000-0", ts1, [1, 2]
    )
    meta = CommitMetadata({"part=a": [stat]}, "INSERT", {"schema": _SCHEMA})
    lifecycle.complete(storage, config, "commit", ts1, encode_commit_metadata(meta, version))
    assert [r["id"] for r in _hudi_rows(tmp_path)] == [1, 2]

    # insert overwrite: a new file group replaces the first one
    ts2 = lifecycle.new_instant_time(ts1)
    lifecycle.write_requested(
        storage, config, "replacecommit", ts2, encode_requested_replace("INSERT_OVERWRITE")
    )
    lifecycle.write_inflight(storage, config, "replacecommit", ts2)
    stat2 = _write_base_file(tmp_path, "part=a", "bbbbbbbb-0000-0000-0000-000000000000-0", ts2, [7])
    replace = CommitMetadata({"part=a": [stat2]}, "INSERT_OVERWRITE", {"schema": _SCHEMA},
                             {"part=a": (stat.file_id,)}, replace=True)  # fmt: skip
    lifecycle.complete(
        storage, config, "replacecommit", ts2, encode_commit_metadata(replace, version)
    )
    assert [r["id"] for r in _hudi_rows(tmp_path)] == [7]

    timeline = _hudi().HudiTableBuilder.from_base_uri(str(tmp_path)).build().get_timeline()
    assert [i.timestamp for i in timeline.get_completed_commits()] == [ts1]
    assert [i.timestamp for i in timeline.get_completed_replacecommits()] == [ts2]
