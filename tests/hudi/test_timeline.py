"""Instant file names, the active timeline, and instant lifecycle writes."""

from __future__ import annotations

import datetime as dt
import io
import json
import struct
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lakecore_hudi.table_config import PROPERTIES_PATH, TableConfig, read_table_config
from lakecore_hudi.table_config_out import new_table_properties, render_table_config
from lakecore_hudi.timeline import avro_schemas
from lakecore_hudi.timeline.active import Timeline, format_instant_time, load_timeline
from lakecore_hudi.timeline.archived import load_archived_timeline
from lakecore_hudi.timeline.commit_metadata import (
    CommitMetadata,
    WriteStat,
    encode_commit_metadata,
    parse_commit_metadata,
)
from lakecore_hudi.timeline.instants import (
    COMPLETED,
    INFLIGHT,
    REQUESTED,
    Instant,
    instant_file_name,
    make_instant,
    parse_instant_file,
)
from lakecore_hudi.timeline.lifecycle import (
    complete,
    new_instant_time,
    write_inflight,
    write_requested,
)
from lakecore_hudi.timeline.rollback_metadata import RollbackMetadata, encode_rollback_metadata

from lakecore.errors import CommitConflictError, CorruptTableError
from lakecore.storage import Storage, open_storage
from tests.corpus import CORPUS

HUDI_TABLES = sorted(p.name for p in (CORPUS / "hudi").iterdir()) if CORPUS.exists() else []
TS = "20240418173550988"
CT = "20240418173551000"


# ---------------------------------------------------------------- file names


@pytest.mark.parametrize(
    ("name", "layout", "expected"),
    [
        (f"{TS}.commit", 1, (TS, "commit", COMPLETED, None)),
        (f"{TS}.commit.requested", 1, (TS, "commit", REQUESTED, None)),
        (f"{TS}.inflight", 1, (TS, "commit", INFLIGHT, None)),
        (f"{TS}.inflight", 2, (TS, "commit", INFLIGHT, None)),
        (f"{TS}.deltacommit.inflight", 1, (TS, "deltacommit", INFLIGHT, None)),
        (f"{TS}.replacecommit.requested", 1, (TS, "replacecommit", REQUESTED, None)),
        (f"{TS}.compaction.requested", 1, (TS, "compaction", REQUESTED, None)),
        (f"{TS}.clean", 1, (TS, "clean", COMPLETED, None)),
        (f"{TS}.rollback.inflight", 1, (TS, "rollback", INFLIGHT, None)),
        (f"{TS}.savepoint", 1, (TS, "savepoint", COMPLETED, None)),
        (f"{TS}.restore.requested", 1, (TS, "restore", REQUESTED, None)),
        (f"{TS}.indexing.inflight", 2, (TS, "indexing", INFLIGHT, None)),
        (f"{TS}.clustering.requested", 2, (TS, "clustering", REQUESTED, None)),
        (f"{TS}_{CT}.replacecommit", 2, (TS, "replacecommit", COMPLETED, CT)),
        (f"{TS}_{CT}.deltacommit", 2, (TS, "deltacommit", COMPLETED, CT)),
        (f".hoodie/timeline/{TS}_{CT}.commit", 2, (TS, "commit", COMPLETED, CT)),
        (f"{TS}.commit", 2, (TS, "commit", COMPLETED, None)),  # upgraded table, no completion time
        ("20240418173550.commit", 1, ("20240418173550", "commit", COMPLETED, None)),  # seconds
    ],
)  # fmt: skip
def test_parse_instant_file(name: str, layout: int, expected: tuple[object, ...]) -> None:
    instant = parse_instant_file(name, layout)
    assert instant is not None
    assert (instant.timestamp, instant.action, instant.state, instant.completion_time) == expected
    assert instant.file_name == name.rsplit("/", 1)[-1]
    if layout == 1 or instant.state != COMPLETED or instant.completion_time is not None:
        assert instant_file_name(instant, layout) == instant.file_name


@pytest.mark.parametrize(
    "name",
    [
        "hoodie.properties",
        "hoodie.properties.backup",
        ".aux",
        ".temp",
        ".schema",
        ".index_defs",
        "metadata",
        "history",
        "archived",
        f"{TS}.unknownaction",
        f"{TS}_20240418173551000.commit.requested",
        f"{TS}.commit.crc",
        f".{TS}.commit.crc",
        "commit",
    ],
)
def test_non_instant_files_are_ignored(name: str) -> None:
    assert parse_instant_file(name, 2) is None
    assert parse_instant_file(name, 1) is None


def test_layout_1_ignores_completion_times() -> None:
    assert parse_instant_file(f"{TS}_20240418173551000.commit", 1) is None


@pytest.mark.parametrize(
    ("action", "state", "layout", "completion", "name"),
    [
        ("commit", REQUESTED, 1, None, f"{TS}.commit.requested"),
        ("commit", INFLIGHT, 1, None, f"{TS}.inflight"),
        ("commit", INFLIGHT, 2, None, f"{TS}.inflight"),
        ("deltacommit", INFLIGHT, 1, None, f"{TS}.deltacommit.inflight"),
        ("commit", COMPLETED, 1, None, f"{TS}.commit"),
        ("compaction", COMPLETED, 1, None, f"{TS}.commit"),
        ("compaction", INFLIGHT, 2, None, f"{TS}.compaction.inflight"),
        ("logcompaction", COMPLETED, 2, "2", f"{TS}_2.deltacommit"),
        ("clustering", COMPLETED, 2, "2", f"{TS}_2.replacecommit"),
        ("clean", COMPLETED, 2, "2", f"{TS}_2.clean"),
    ],
)
def test_make_instant_names(
    action: str, state: str, layout: int, completion: str | None, name: str
) -> None:
    instant = make_instant(TS, action, state, layout, completion)  # type: ignore[arg-type]
    assert instant.file_name == name
    assert parse_instant_file(name, layout) == instant


def test_layout_2_completed_needs_completion_time() -> None:
    with pytest.raises(ValueError):
        make_instant(TS, "commit", COMPLETED, 2)


def test_instant_ordering() -> None:
    names = [f"{TS}_1.commit", f"{TS}.inflight", f"{TS}.commit.requested", "1.commit"]
    instants = sorted(i for i in (parse_instant_file(n, 2) for n in names) if i is not None)
    assert [(i.timestamp, i.state) for i in instants] == [
        ("1", COMPLETED),
        (TS, REQUESTED),
        (TS, INFLIGHT),
        (TS, COMPLETED),
    ]
    assert instants[1] < instants[2] <= instants[3] and instants[3] > instants[0]


# ---------------------------------------------------------------- corpus timelines


def test_corpus_timelines_match_expected() -> None:
    if not HUDI_TABLES:
        pytest.fail(f"corpus not found at {CORPUS}; set LAKECORE_CORPUS")
    ran = 0
    for table in HUDI_TABLES:
        storage = open_storage(str(CORPUS / "hudi" / table))
        timeline = load_timeline(storage, read_table_config(storage))
        expected = json.loads((CORPUS / "expected" / "hudi" / f"{table}.json").read_text())
        got = [
            {"timestamp": i.timestamp, "action": i.action}
            for i in timeline.completed_write_instants()
        ]
        assert got == expected["timeline"], table
        # hudi-rs reports "<ts>.inflight" (a commit's inflight file) with an empty action
        want_files = sorted(
            (f["timestamp"], f["state"], f["action"] or "commit", f["completion_time"])
            for f in expected["timeline_files"]
        )
        got_files = sorted(
            (i.timestamp, i.state, i.action, i.completion_time) for i in timeline.instants
        )
        assert got_files == want_files, table
        assert list(timeline.instants) == sorted(timeline.instants)
        latest = timeline.latest_completed_write()
        assert (latest.timestamp if latest else None) == expected["latest_version"], table
        for instant in timeline.instants:
            timeline.read_details(storage, instant)  # every listed file is readable
        ran += 1
    assert ran == 20


def test_corpus_v9_timeline_queries() -> None:
    storage = open_storage(str(CORPUS / "hudi" / "mor_avro_v9_txns_nonpart_meta"))
    timeline = load_timeline(storage, read_table_config(storage))
    assert timeline.layout == 2 and timeline.timeline_dir == ".hoodie/timeline"
    assert timeline.pending() == ()
    actions = {i.action for i in timeline.completed()}
    assert actions == {"deltacommit", "commit", "replacecommit", "indexing"}
    assert "indexing" not in {i.action for i in timeline.completed_write_instants()}
    at = timeline.instant_at_or_before("20260307162715000")
    assert at is not None and (at.timestamp, at.action) == ("20260307162714722", "commit")
    assert timeline.instant_at_or_before("20200101000000000") is None
    second = timeline.instant_at_or_before("20260307162703")  # 14 digits: the whole second
    assert second is not None and second.timestamp == "20260307162703640"
    found = timeline.find("20260307162715560")
    assert found is not None and found.state == COMPLETED and found.action == "replacecommit"
    assert timeline.completion_time(found) == "20260307162716405"
    assert timeline.max_completion_time() == "20260307162718949"
    assert timeline.rolled_back_instants(storage) == frozenset()


def test_corpus_rollback_is_reported() -> None:
    storage = open_storage(str(CORPUS / "hudi" / "mor_avro_v9_nonpartitioned_rollback"))
    timeline = load_timeline(storage, read_table_config(storage))
    assert timeline.rolled_back_instants(storage) == frozenset({"20260403184242950"})


def test_v6_completion_time_falls_back_to_mtime() -> None:
    instant = Instant(TS, "commit", COMPLETED, None, f"{TS}.commit")
    moment = dt.datetime(2024, 4, 18, 17, 35, 51, 123000, tzinfo=dt.timezone.utc)
    mtime = int(moment.timestamp() * 1000)
    timeline = Timeline((instant,), 1, ".hoodie", {instant.file_name: mtime})
    assert timeline.completion_time(instant) == "20240418173551123"
    assert Timeline((instant,), 1, ".hoodie").completion_time(instant) is None


def test_missing_timeline_dir_is_empty(tmp_path: Path) -> None:
    storage, config = _new_table(tmp_path, 8)
    timeline = load_timeline(storage, config)
    assert timeline.instants == () and timeline.latest_completed_write() is None


# ---------------------------------------------------------------- lifecycle


def _new_table(tmp_path: Path, version: int) -> tuple[Storage, TableConfig]:
    storage = open_storage(str(tmp_path))
    props = new_table_properties("t", "MERGE_ON_READ", ["id"], None, [], table_version=version)
    storage.put(PROPERTIES_PATH, render_table_config(props))
    return storage, read_table_config(storage)


def test_new_instant_time() -> None:
    now = dt.datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=dt.timezone.utc)
    assert new_instant_time(None, now) == "20250102030405678"
    assert new_instant_time("20250102030405000", now) == "20250102030405678"
    assert new_instant_time("20250102030405678", now) == "20250102030405679"
    assert new_instant_time("20250102030459999", now) == "20250102030500000"
    assert new_instant_time("20991231235959", now) == "20991231235959001"  # seconds precision
    assert new_instant_time("00000000000000010", now) > "00000000000000010"
    assert new_instant_time("99999999999999999", now) == "100000000000000000"
    times = [new_instant_time()]
    for _ in range(50):
        times.append(new_instant_time(times[-1]))
    assert times == sorted(set(times)) and all(len(t) == 17 for t in times)
    assert format_instant_time(dt.datetime(2025, 1, 1, 0, 0, 0, 5000)) == "20250101000000005"


@pytest.mark.parametrize("version", [6, 8])
def test_lifecycle_writes_hudi_names(tmp_path: Path, version: int) -> None:
    storage, config = _new_table(tmp_path, version)
    ts = new_instant_time()
    requested = write_requested(storage, config, "deltacommit", ts)
    inflight = write_inflight(storage, config, "deltacommit", ts, b"{}")
    done = complete(storage, config, "deltacommit", ts, b'{"x": 1}')
    assert (requested.state, inflight.state, done.state) == (REQUESTED, INFLIGHT, COMPLETED)
    names = sorted(i.path.rsplit("/", 1)[-1] for i in storage.list_dir(config.timeline_dir))
    if version == 6:
        assert config.timeline_dir == ".hoodie"
        assert names == [f"{ts}.deltacommit", f"{ts}.deltacommit.inflight",
                         f"{ts}.deltacommit.requested", "hoodie.properties"]  # fmt: skip
        assert done.completion_time is None
    else:
        assert config.timeline_dir == ".hoodie/timeline"
        assert done.completion_time is not None and done.completion_time > ts
        assert names == [f"{ts}.deltacommit.inflight", f"{ts}.deltacommit.requested",
                         f"{ts}_{done.completion_time}.deltacommit"]  # fmt: skip
    timeline = load_timeline(storage, config)
    assert timeline.completed() == (done,)
    assert timeline.read_details(storage, done) == b'{"x": 1}'
    assert timeline.read_details(storage, inflight) == b"{}"


@pytest.mark.parametrize("version", [6, 8])
def test_commit_inflight_and_compaction_names(tmp_path: Path, version: int) -> None:
    storage, config = _new_table(tmp_path, version)
    ts = new_instant_time()
    assert write_inflight(storage, config, "commit", ts).file_name == f"{ts}.inflight"
    assert complete(storage, config, "commit", ts, b"").action == "commit"
    ts2 = new_instant_time(ts)
    write_requested(storage, config, "compaction", ts2, b"plan")
    write_inflight(storage, config, "compaction", ts2)
    done = complete(storage, config, "compaction", ts2, b"")
    assert done.action == "commit"
    timeline = load_timeline(storage, config)
    assert [i.timestamp for i in timeline.completed_write_instants()] == [ts, ts2]
    assert timeline.pending() == ()


@pytest.mark.parametrize("version", [6, 8])
def test_double_transitions_conflict(tmp_path: Path, version: int) -> None:
    storage, config = _new_table(tmp_path, version)
    ts = new_instant_time()
    write_requested(storage, config, "commit", ts)
    with pytest.raises(CommitConflictError):
        write_requested(storage, config, "commit", ts)
    write_inflight(storage, config, "commit", ts)
    with pytest.raises(CommitConflictError):
        write_inflight(storage, config, "commit", ts)
    complete(storage, config, "commit", ts, b"ours")
    with pytest.raises(CommitConflictError) as info:
        complete(storage, config, "commit", ts, b"another writer's")
    assert info.value.winning_version == ts
    if version < 8:
        # The same completion again is this completion (a retried write that had landed).
        complete(storage, config, "commit", ts, b"ours")
    assert len(load_timeline(storage, config).completed()) == 1


def test_completion_times_increase(tmp_path: Path) -> None:
    storage, config = _new_table(tmp_path, 8)
    # a completion time far in the future (clock skew of another writer) must still be exceeded
    storage.put(f"{config.timeline_dir}/{TS}_29990101000000000.deltacommit", b"")
    ts = new_instant_time()
    done = complete(storage, config, "deltacommit", ts, b"")
    assert done.completion_time is not None and done.completion_time > "29990101000000000"


class _RacingStorage:
    """Delegates to a storage; the first put_if_absent of a completed file also lands a rival's
    completed file for the same instant with an earlier completion time."""

    def __init__(self, inner: Storage, rival: str) -> None:
        self._inner = inner
        self._rival = rival

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)

    def put_if_absent(self, path: str, data: bytes) -> None:
        if "_" in path.rsplit("/", 1)[-1] and not self._inner.exists(self._rival):
            self._inner.put_if_absent(self._rival, b"rival")
        self._inner.put_if_absent(path, data)


def test_concurrent_completion_loser_backs_out(tmp_path: Path) -> None:
    storage, config = _new_table(tmp_path, 8)
    ts = new_instant_time()
    rival = f"{config.timeline_dir}/{ts}_{ts}.deltacommit"  # completion == ts: earliest possible
    racing = _RacingStorage(storage, rival)
    with pytest.raises(CommitConflictError, match="concurrently"):
        complete(racing, config, "deltacommit", ts, b"mine")  # type: ignore[arg-type]
    completed = load_timeline(storage, config).completed()
    assert [i.file_name for i in completed] == [f"{ts}_{ts}.deltacommit"]


def test_rolled_back_instants_from_written_rollback(tmp_path: Path) -> None:
    storage, config = _new_table(tmp_path, 8)
    ts = new_instant_time()
    meta = RollbackMetadata(start_rollback_time=ts, commits_rollback=("20240101000000000",),
                            instants_rollback=(("20240101000000001", "deltacommit"),))  # fmt: skip
    write_requested(storage, config, "rollback", ts)
    write_inflight(storage, config, "rollback", ts)
    complete(storage, config, "rollback", ts, encode_rollback_metadata(meta))
    timeline = load_timeline(storage, config)
    assert timeline.rolled_back_instants(storage) == {"20240101000000000", "20240101000000001"}
    assert timeline.completed_write_instants() == ()


# ---------------------------------------------------------------- archived timeline


def _lsm_file(storage: Storage, path: str, rows: list[dict[str, object]]) -> None:
    table = pa.Table.from_pylist(
        rows,
        schema=pa.schema([("instantTime", pa.string()), ("completionTime", pa.string()),
                          ("action", pa.string()), ("metadata", pa.binary()),
                          ("plan", pa.binary()), ("version", pa.int32())]),
    )  # fmt: skip
    sink = io.BytesIO()
    pq.write_table(table, sink)
    storage.put(path, sink.getvalue())


def archived_commit_and_clean(tmp_path: Path) -> tuple[Storage, TableConfig]:
    """A version-8 table whose LSM archive holds a commit ``001`` and a clean ``002``."""
    storage, config = _new_table(tmp_path, 8)
    row = {"completionTime": None, "plan": None, "version": 1, "metadata": b""}
    _lsm_file(
        storage,
        f"{config.archive_dir}/001_002_0.parquet",
        [
            {**row, "instantTime": "001", "action": "commit"},
            {**row, "instantTime": "002", "action": "clean"},
        ],
    )
    storage.put(
        f"{config.archive_dir}/manifest_1",
        b'{"files": [{"fileName": "001_002_0.parquet", "fileLen": 1}]}',
    )
    storage.put(f"{config.archive_dir}/_version_", b"1")
    return storage, config


def test_lsm_archived_timeline(tmp_path: Path) -> None:
    storage, config = _new_table(tmp_path, 8)
    history = config.archive_dir
    meta = CommitMetadata({"": [WriteStat("f-0", "f-0_0-1-0_1.parquet")]}, "INSERT")
    row = {"completionTime": None, "plan": None, "version": 1}
    _lsm_file(storage, f"{history}/001_002_0.parquet", [
        {**row, "instantTime": "001", "completionTime": "0015", "action": "commit",
         "metadata": encode_commit_metadata(meta, 8)},
        {**row, "instantTime": "002", "action": "clean", "metadata": b""},
    ])  # fmt: skip
    _lsm_file(
        storage,
        f"{history}/003_003_0.parquet",
        [{**row, "instantTime": "003", "action": "deltacommit"}],
    )
    _lsm_file(
        storage, f"{history}/009_009_0.parquet", [{**row, "instantTime": "009", "action": "commit"}]
    )
    manifest = {"files": [{"fileName": "001_002_0.parquet", "fileLen": 1},
                          {"fileName": "003_003_0.parquet", "fileLen": 1}]}  # fmt: skip
    storage.put(f"{history}/manifest_1", b'{"files": []}')
    storage.put(f"{history}/manifest_2", json.dumps(manifest).encode())
    storage.put(f"{history}/_version_", b"2")

    archived = load_archived_timeline(storage, config, with_details=True)
    assert [(a.timestamp, a.action, a.completion_time) for a in archived] == [
        ("001", "commit", "0015"),
        ("002", "clean", None),
        ("003", "deltacommit", None),
    ]  # 009 is not in the manifest: ignored
    assert archived[0].metadata is not None
    assert parse_commit_metadata(archived[0].metadata, "x") == meta
    assert [
        a.timestamp for a in load_archived_timeline(storage, config, start="002", end="002")
    ] == ["002"]
    assert all(a.metadata is None for a in load_archived_timeline(storage, config))

    storage.delete(f"{history}/_version_")  # falls back to the greatest manifest
    assert len(load_archived_timeline(storage, config)) == 3
    storage.put(f"{history}/manifest_3", b"{not json")
    with pytest.raises(CorruptTableError, match="manifest_3"):
        load_archived_timeline(storage, config)


def test_no_archive_is_empty(tmp_path: Path) -> None:
    for version in (6, 8):
        storage, config = _new_table(tmp_path / str(version), version)
        assert load_archived_timeline(storage, config) == ()


def test_v1_archived_timeline(tmp_path: Path) -> None:
    from lakecore_hudi.log.format import BlockType, HeaderKey, encode_log_block

    storage, config = _new_table(tmp_path, 6)
    assert config.archive_dir == ".hoodie/archived"
    schema = {
        "type": "record", "name": "HoodieArchivedMetaEntry",
        "namespace": "org.apache.hudi.avro.model",
        "fields": [
            {"name": "hoodieCommitMetadata", "type": ["null", avro_schemas.COMMIT_METADATA],
             "default": None},
            {"name": "commitTime", "type": ["null", "string"], "default": None},
            {"name": "actionType", "type": ["null", "string"], "default": None},
            {"name": "actionState", "type": ["null", "string"], "default": None},
        ],
    }  # fmt: skip
    meta = CommitMetadata({"p": [WriteStat("f-0", "p/f-0_0-1-0_1.parquet", "p")]}, "UPSERT")
    records = [
        {"commitTime": "001", "actionType": "commit", "actionState": "COMPLETED",
         "hoodieCommitMetadata": {**meta.to_dict(), "version": 1}},
        {"commitTime": "002", "actionType": "clean", "actionState": None},
        {"commitTime": "003", "actionType": "commit", "actionState": "INFLIGHT"},
    ]  # fmt: skip
    parsed = fastavro.parse_schema(schema)
    bodies = []
    for record in records:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, record)
        bodies.append(struct.pack(">i", len(buf.getvalue())) + buf.getvalue())
    content = struct.pack(">ii", 3, len(bodies)) + b"".join(bodies)
    header = {HeaderKey.INSTANT_TIME: "004", HeaderKey.SCHEMA: json.dumps(schema)}
    block = encode_log_block(BlockType.AVRO_DATA, header, content)
    storage.put(".hoodie/archived/.commits_.archive.1_1-0-1", block + b"#HUDI#torn")
    storage.put(".hoodie/archived/not-an-archive", b"ignored")

    archived = load_archived_timeline(storage, config, with_details=True)
    assert [(a.timestamp, a.action) for a in archived] == [("001", "commit"), ("002", "clean")]
    assert archived[0].metadata is not None
    back = parse_commit_metadata(archived[0].metadata, "x")
    assert back.operation_type == "UPSERT" and list(back.write_stats()) == list(meta.write_stats())
