"""Nothing outside a table's root is deleted (or read) because its metadata says so.

Crafted Delta logs and Hudi timelines name files outside the table: ``..`` at several depths,
URL-encoded escapes, absolute paths and ``file:`` URIs. Every operation (open and read, append,
vacuum, clean, a rollback run by the next write) raises ``CorruptTableError`` or leaves such
paths alone; sentinel files outside the table keep existing and are never opened.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lakecore_hudi.timeline.active import load_timeline
from lakecore_hudi.timeline.commit_metadata import encode_commit_metadata, parse_commit_metadata
from lakecore_hudi.timeline.instants import ROLLBACK
from lakecore_hudi.timeline.lifecycle import new_instant_time, write_requested
from lakecore_hudi.timeline.rollback_metadata import (
    RollbackPlan,
    RollbackRequest,
    encode_rollback_plan,
)
from lakecore_hudi.write.heartbeat import heartbeat_path
from lakecore_hudi.write.planned import PlannedInstant
from lakecore_hudi.write.writer import state_of

import lakecore
from lakecore.errors import CorruptTableError
from lakecore.model.actions import FormatPayload
from lakecore.storage import fsspec_storage
from lakecore.storage.paths import contained_path
from lakecore.table import Table
from tests.hudi.write.helpers import add_crafted_write_stat

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("city", pa.string())])
SENTINEL = "sentinel.parquet"
ESCAPE_ERROR = r"outside the table root|escapes the table root"

# The table lives at <tmp>/a/t, sentinels at <tmp>/a/ and <tmp>/; (log path, sentinel hit).
DELTA_ESCAPES = [
    f"../{SENTINEL}",
    f"../../{SENTINEL}",
    f"x/../../{SENTINEL}",
    f"x/y/../../../../{SENTINEL}",
    f"./../{SENTINEL}",
    f"%2E%2E/{SENTINEL}",
    f"%2e%2e/%2e%2e/{SENTINEL}",
    f"..%2F{SENTINEL}",
    f"x/%2E%2E/%2E%2E/{SENTINEL}",
    "..",
    "%2E%2E",
]


def _rows(*ids: int) -> pa.Table:
    return pa.table({"id": ids, "city": ["x"] * len(ids)}, schema=SCHEMA)


@pytest.fixture
def sentinels(tmp_path: Path) -> list[Path]:
    """Valid Parquet files outside the table (one and two levels above its root)."""
    out = []
    for directory in (tmp_path / "a", tmp_path):
        directory.mkdir(parents=True, exist_ok=True)
        pq.write_table(_rows(666), directory / SENTINEL)
        out.append(directory / SENTINEL)
    return out


@pytest.fixture
def touched(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every location any FsspecStorage resolves (reads, lists, writes, deletes)."""
    seen: list[str] = []
    original = fsspec_storage.FsspecStorage._locate

    def spy(self: fsspec_storage.FsspecStorage, path: str) -> tuple[Any, str]:
        fs, full = original(self, path)
        seen.append(os.path.normpath(full) if "://" not in full else full)
        return fs, full

    monkeypatch.setattr(fsspec_storage.FsspecStorage, "_locate", spy)
    return seen


def _assert_untouched(sentinels: list[Path], touched: list[str], root: Path) -> None:
    for s in sentinels:
        assert s.exists(), f"{s} was deleted"
        assert pq.read_table(s).column("id").to_pylist() == [666]
    outside = [p for p in touched if not (p == str(root) or p.startswith(f"{root}/"))]
    assert outside == [], f"lakecore resolved paths outside the table: {outside}"


# ----------------------------------------------------------------------------- the helper


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("a/b.parquet", "a/b.parquet"),
        ("a/./b/../c.parquet", "a/c.parquet"),
        ("a//b.parquet", "a/b.parquet"),
        ("/r/t/a.parquet", "a.parquet"),
        ("file:/r/t/a.parquet", "a.parquet"),
        ("file:///r/t/x/../a.parquet", "a.parquet"),
        ("file://localhost/r/t/a.parquet", "a.parquet"),
        # '://' inside a relative path (a decoded partition value) is not a scheme.
        ("url=http://x/part.parquet", "url=http:/x/part.parquet"),
        ("p=a..b/x.parquet", "p=a..b/x.parquet"),
    ],
)
def test_contained_paths_are_normalised_relative(path: str, expected: str) -> None:
    assert contained_path(path, "/r/t", source="log") == expected


ESCAPING = [
    "../x",
    "../../x",
    "a/../../x",
    "..",
    "",
    ".",
    "a/..",
    "/r/t",
    "/r/t/../x",
    "/r/tt/x",
    "/etc/passwd",
    "file:/etc/passwd",
    "file:///r/t/../../x",
    "s3://bucket/x",
    "a\x00b",
    # A network-path reference (RFC 3986: host "a.parquet"): lakecore read it as the local
    # "/a.parquet" before, delta-rs as "<root>/a.parquet".
    "//a.parquet",
    "//r/t/a.parquet",
    # A file URI naming another host names no local file (was: its host dropped).
    "file://host/r/t/a.parquet",
]


@pytest.mark.parametrize("path", ESCAPING)
def test_escaping_paths_raise_naming_source_and_path(path: str) -> None:
    with pytest.raises(CorruptTableError) as info:
        contained_path(path, "/r/t", source="the/plan.file")
    assert "the/plan.file" in str(info.value) and repr(path) in str(info.value)


def test_absolute_references_outside_are_kept_only_when_allowed() -> None:
    got = contained_path("file:/o/x/../y.parquet", "/r/t", source="l", allow_outside=True)
    assert got == "/o/y.parquet"
    assert contained_path("s3a://b/t/k", "s3://b/t", source="l") == "k"
    assert contained_path("s3://b/t/../u/k", "s3://b/t", source="l", allow_outside=True) == (
        "s3://b/u/k"
    )
    with pytest.raises(CorruptTableError):
        contained_path("s3://b/t/../u/k", "s3://b/t", source="l")
    assert len(ESCAPING) == 18


# ----------------------------------------------------------------------------- Delta


def _delta_table(tmp_path: Path) -> tuple[Path, Table]:
    root = tmp_path / "a" / "t"
    table = lakecore.create(str(root), SCHEMA, "delta")
    table.append(_rows(1, 2))
    table.append(_rows(3))
    return root, table


def _commit(root: Path, version: int, *actions: dict[str, Any]) -> None:
    lines = [{"commitInfo": {"timestamp": int(time.time() * 1000), "operation": "WRITE"}}]
    path = root / "_delta_log" / f"{version:020d}.json"
    path.write_text("\n".join(json.dumps(a) for a in [*lines, *actions]) + "\n")


def _add(path: str) -> dict[str, Any]:
    now = int(time.time() * 1000)
    return {
        "add": {
            "path": path,
            "partitionValues": {},
            "size": 100,
            "modificationTime": now,
            "dataChange": True,
        }
    }


def _remove(path: str) -> dict[str, Any]:
    now = int(time.time() * 1000)
    return {"remove": {"path": path, "deletionTimestamp": now, "dataChange": True}}


DELTA_OPERATIONS: dict[str, Callable[[str], object]] = {
    "read": lambda uri: lakecore.open(uri).to_arrow(),
    "files": lambda uri: lakecore.open(uri).snapshot().files(),
    "append": lambda uri: lakecore.open(uri).append(_rows(9)),
    "vacuum": lambda uri: lakecore.open(uri).vacuum(0, dry_run=False, enforce_retention=False),
}


@pytest.mark.parametrize("operation", sorted(DELTA_OPERATIONS))
@pytest.mark.parametrize("action", ["add", "remove"])
@pytest.mark.parametrize("escape", DELTA_ESCAPES)
def test_delta_escaping_log_paths_are_refused(
    tmp_path: Path,
    sentinels: list[Path],
    touched: list[str],
    escape: str,
    action: str,
    operation: str,
) -> None:
    root, _ = _delta_table(tmp_path)
    _commit(root, 3, _add(escape) if action == "add" else _remove(escape))
    touched.clear()
    with pytest.raises(CorruptTableError, match="escapes the table root"):
        DELTA_OPERATIONS[operation](str(root))
    _assert_untouched(sentinels, touched, root)


@pytest.mark.parametrize("operation", sorted(DELTA_OPERATIONS))
def test_delta_network_path_reference_is_refused(
    tmp_path: Path, sentinels: list[Path], touched: list[str], operation: str
) -> None:
    """``//host/x`` in a log names a host (RFC 3986), not a file: every operation refuses
    it. Fixed in session 11; was: read as the local absolute path ``/host/x``."""
    root, _ = _delta_table(tmp_path)
    outside = sentinels[1].as_posix()
    _commit(root, 3, _add("/" + outside))
    touched.clear()
    with pytest.raises(CorruptTableError, match="network-path reference"):
        DELTA_OPERATIONS[operation](str(root))
    _assert_untouched(sentinels, touched, root)


def test_delta_escape_cases_ran() -> None:
    assert len(DELTA_ESCAPES) * 2 * len(DELTA_OPERATIONS) == 88


def test_delta_escaping_path_in_a_checkpoint_is_refused(
    tmp_path: Path, sentinels: list[Path], touched: list[str]
) -> None:
    root, table = _delta_table(tmp_path)
    table.checkpoint()
    (cp,) = (root / "_delta_log").glob("*.checkpoint.parquet")
    data = pq.read_table(cp)
    rows = data.to_pylist()
    for row in rows:
        if row.get("add"):
            row["add"]["path"] = f"../{SENTINEL}"
    pq.write_table(pa.Table.from_pylist(rows, schema=data.schema), cp)
    touched.clear()
    with pytest.raises(CorruptTableError, match="escapes the table root"):
        lakecore.open(str(root)).to_arrow()
    _assert_untouched(sentinels, touched, root)


@pytest.mark.parametrize("style", ["file:", "file://", ""])
def test_delta_absolute_references_are_read_never_vacuumed(
    tmp_path: Path, sentinels: list[Path], style: str
) -> None:
    root, _ = _delta_table(tmp_path)
    outside = sentinels[1].as_posix()
    _commit(root, 3, _add(f"{style}{outside}"))
    table = lakecore.open(str(root))
    assert sorted(table.to_arrow().column("id").to_pylist()) == [1, 2, 3, 666]
    _commit(root, 4, _remove(f"{style}{outside}"))
    table = lakecore.open(str(root))
    assert sorted(table.to_arrow().column("id").to_pylist()) == [1, 2, 3]
    table.vacuum(0, dry_run=False, enforce_retention=False)
    assert sentinels[1].exists()
    assert pq.read_table(sentinels[1]).column("id").to_pylist() == [666]


def test_delta_vacuum_never_follows_symlinks_out_of_the_table(
    tmp_path: Path, sentinels: list[Path]
) -> None:
    root, table = _delta_table(tmp_path)
    outside_dir = tmp_path / "outside"
    outside_dir.mkdir()
    pq.write_table(_rows(7), outside_dir / "part-0.parquet")
    (root / "linked").symlink_to(outside_dir, target_is_directory=True)
    (root / "linked-file.parquet").symlink_to(sentinels[0])
    old = time.time() - 30 * 24 * 3600
    os.utime(outside_dir / "part-0.parquet", (old, old))
    os.utime(sentinels[0], (old, old))
    deleted = table.vacuum(0, dry_run=False, enforce_retention=False)
    assert "linked/part-0.parquet" not in deleted
    assert (outside_dir / "part-0.parquet").exists()
    assert sentinels[0].exists()  # the link may go, never its target
    assert sorted(lakecore.open(str(root)).to_arrow().column("id").to_pylist()) == [1, 2, 3]


# ----------------------------------------------------------------------------- Hudi


def _hudi_table(tmp_path: Path, table_type: str, version: str) -> tuple[Path, Table]:
    root = tmp_path / "a" / "t"
    properties = {
        "record_key": "id",
        "precombine_field": "id",
        "table_type": table_type,
        "table_version": version,
    }
    table = lakecore.create(str(root), SCHEMA, "hudi", [], properties)
    table.append(_rows(1, 2))
    return root, table


def _crash(table: Table, data: pa.Table) -> PlannedInstant:
    """Run a writer up to inflight (files written) and never commit: a crashed writer."""
    writer = table._format_writer(table.snapshot())
    actions, _ = writer.upsert(data)
    payload = actions[0]
    assert isinstance(payload, FormatPayload) and isinstance(payload.payload, PlannedInstant)
    return payload.payload


def _expire(root: Path, instant: str) -> None:
    old = time.time() - 3600
    os.utime(root / heartbeat_path(instant), (old, old))


def _inflight_file(table: Table, ts: str) -> Path:
    config = state_of(table.snapshot()).config
    timeline = load_timeline(table.storage, config)
    (inflight,) = [i for i in timeline.instants if i.timestamp == ts and i.state == "INFLIGHT"]
    return Path(table.storage.resolve(timeline.path_of(inflight)))


HUDI_KINDS = [("COPY_ON_WRITE", "8"), ("COPY_ON_WRITE", "6"), ("MERGE_ON_READ", "8")]


def _hudi_escapes(tmp_path: Path) -> list[str]:
    outside = (tmp_path / SENTINEL).as_posix()
    return [
        f"../{SENTINEL}",
        f"../../{SENTINEL}",
        f"x/../../../{SENTINEL}",
        outside,
        f"file:{outside}",
        f"file://{outside}",
    ]


@pytest.mark.parametrize(("table_type", "version"), HUDI_KINDS)
@pytest.mark.parametrize("which", range(6))
def test_hudi_rollback_of_crafted_inflight_metadata_deletes_nothing_outside(
    tmp_path: Path,
    sentinels: list[Path],
    touched: list[str],
    table_type: str,
    version: str,
    which: int,
) -> None:
    root, table = _hudi_table(tmp_path, table_type, version)
    crashed = _crash(table, _rows(1, 5))
    inflight = _inflight_file(table, crashed.timestamp)
    meta = parse_commit_metadata(inflight.read_bytes(), str(inflight))
    (partition,) = meta.partition_to_write_stats
    first = meta.partition_to_write_stats[partition][0]
    crafted = type(first)(file_id=first.file_id, path=_hudi_escapes(tmp_path)[which])
    stats = {partition: (*meta.partition_to_write_stats[partition], crafted)}
    bad = type(meta)(stats, meta.operation_type, meta.extra_metadata)
    inflight.write_bytes(encode_commit_metadata(bad, int(version)))
    _expire(root, crashed.timestamp)
    touched.clear()
    with pytest.raises(CorruptTableError, match=ESCAPE_ERROR):
        lakecore.open(str(root)).append(_rows(7))
    _assert_untouched(sentinels, touched, root)
    assert all((root / f).exists() for f in crashed.files)  # nothing deleted at all


@pytest.mark.parametrize(("table_type", "version"), HUDI_KINDS)
@pytest.mark.parametrize("which", range(6))
def test_hudi_resumed_rollback_plan_deletes_nothing_outside(
    tmp_path: Path,
    sentinels: list[Path],
    touched: list[str],
    table_type: str,
    version: str,
    which: int,
) -> None:
    root, table = _hudi_table(tmp_path, table_type, version)
    crashed = _crash(table, _rows(1, 5))
    config = state_of(table.snapshot()).config
    inside = [table.storage.resolve(f) for f in crashed.files]
    plan = RollbackPlan(
        (crashed.timestamp, crashed.action),
        (RollbackRequest("", "", "", (*inside, _hudi_escapes(tmp_path)[which])),),
    )
    write_requested(
        table.storage,
        config,
        ROLLBACK,
        new_instant_time(crashed.timestamp),
        encode_rollback_plan(plan),
    )
    touched.clear()
    with pytest.raises(CorruptTableError, match=ESCAPE_ERROR):
        lakecore.open(str(root)).append(_rows(7))
    _assert_untouched(sentinels, touched, root)
    assert all((root / f).exists() for f in crashed.files)  # checked before any delete


def test_hudi_rollback_plan_targeting_a_path_is_refused(
    tmp_path: Path, sentinels: list[Path], touched: list[str]
) -> None:
    root, table = _hudi_table(tmp_path, "COPY_ON_WRITE", "8")
    config = state_of(table.snapshot()).config
    # The target's heartbeat would be .hoodie/.heartbeat/<target>: here, the sentinel.
    plan = RollbackPlan((f"../../../{SENTINEL}", "commit"), ())
    write_requested(
        table.storage, config, ROLLBACK, new_instant_time(None), encode_rollback_plan(plan)
    )
    touched.clear()
    with pytest.raises(CorruptTableError, match="not an instant time"):
        lakecore.open(str(root)).append(_rows(7))
    _assert_untouched(sentinels, touched, root)


def test_hudi_cases_ran() -> None:
    assert len(HUDI_KINDS) * 6 * 2 == 36


HUDI_OPERATIONS: dict[str, Callable[[str], object]] = {
    "read": lambda uri: lakecore.open(uri).to_arrow(),
    "append": lambda uri: lakecore.open(uri).append(_rows(9)),
    "clean": lambda uri: lakecore.open(uri).clean(1),
}


@pytest.fixture
def hudi_with_escaping_commit(tmp_path: Path) -> Iterator[Path]:
    root, table = _hudi_table(tmp_path, "COPY_ON_WRITE", "8")
    table.append(_rows(3))
    table.append(_rows(4))
    add_crafted_write_stat(table, f"../../{SENTINEL}")
    yield root


@pytest.mark.parametrize("operation", sorted(HUDI_OPERATIONS))
def test_hudi_escaping_commit_metadata_is_refused(
    hudi_with_escaping_commit: Path,
    sentinels: list[Path],
    touched: list[str],
    operation: str,
) -> None:
    root = hudi_with_escaping_commit
    touched.clear()
    with pytest.raises(CorruptTableError, match="escapes the table root"):
        HUDI_OPERATIONS[operation](str(root))
    _assert_untouched(sentinels, touched, root)


# Directories hoodie.properties names: (table version, key, escaping value).
HUDI_DIR_KEYS = [
    ("8", "hoodie.timeline.path", "../.."),
    ("8", "hoodie.timeline.path", "../../../a"),
    ("8", "hoodie.timeline.history.path", "../../../.."),
    ("6", "hoodie.archivelog.folder", "../.."),
    ("6", "hoodie.archivelog.folder", "x/../../../a"),
]


@pytest.mark.parametrize(("version", "key", "value"), HUDI_DIR_KEYS)
def test_hudi_timeline_directories_stay_inside_the_table(
    tmp_path: Path, touched: list[str], version: str, key: str, value: str
) -> None:
    root, _ = _hudi_table(tmp_path, "COPY_ON_WRITE", version)
    properties = root / ".hoodie" / "hoodie.properties"
    properties.write_text(properties.read_text() + f"{key}={value}\n")
    touched.clear()
    with pytest.raises(CorruptTableError, match=key):
        table = lakecore.open(str(root))
        table.to_arrow()
        table.history()
    _assert_untouched([], touched, root)


def test_hudi_directory_cases_ran() -> None:
    assert len(HUDI_DIR_KEYS) == 5


# ------------------------------------------------------------------ user data and raw paths


@pytest.mark.parametrize("value", ["..", "."])
def test_hudi_partition_values_naming_other_directories_are_refused(
    tmp_path: Path, value: str
) -> None:
    """Without hive-style partitioning a partition value is a path segment: ``..`` would put
    the data file outside the table (Hudi's writer refuses it too)."""
    from lakecore.errors import ConstraintViolationError

    schema = pa.schema([("id", pa.int64()), ("city", pa.string())])
    root = tmp_path / "t"
    table = lakecore.create(str(root), schema, "hudi", ["city"], {"record_key": "id"})
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    with pytest.raises(ConstraintViolationError, match="partition column 'city'"):
        table.append(pa.table({"id": [1], "city": [value]}, schema=schema))
    assert sorted(str(p) for p in tmp_path.rglob("*") if "heartbeat" not in str(p)) == [
        p for p in before if "heartbeat" not in p
    ]
    assert list(tmp_path.glob("*.parquet")) == []


@pytest.mark.parametrize("path", ["../x", "a/../../x", "..", "./../x"])
def test_storage_refuses_relative_paths_out_of_the_root(tmp_path: Path, path: str) -> None:
    """Whatever names a relative path, the storage layer never leaves its root through it."""
    from lakecore.errors import InvalidArgumentError

    (tmp_path / "x").write_bytes(b"outside")
    storage = fsspec_storage.FsspecStorage(str(tmp_path / "t"))
    operations: list[Callable[[], object]] = [
        lambda: storage.put(path, b"1"),
        lambda: storage.put_if_absent(path, b"1"),
        lambda: storage.delete(path),
        lambda: storage.read(path),
        lambda: storage.exists(path),
        lambda: storage.list_dir(path),
    ]
    for operation in operations:
        with pytest.raises(InvalidArgumentError, match="leads out of the storage root"):
            operation()
    assert (tmp_path / "x").read_bytes() == b"outside"
    assert len(operations) == 6
