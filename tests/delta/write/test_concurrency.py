"""Concurrent writers: K processes appending to one table, and conflicting transactions.

The default run races 4 processes (local: 10 appends each, moto S3: 5); ``-m slow`` races
8 processes x 20 appends on both.
"""

from __future__ import annotations

import json
import os
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lakecore
from tests.racing import run_barrier_writers

from .helpers import LOG, canonical, commit_versions, delta_rs_rows, lakecore_rows

SCHEMA = pa.schema([("id", pa.int64()), ("worker", pa.int32())])
K = 8
"""Writer processes (slow run)."""
M = 20
"""Appends per writer (slow run)."""
LOCAL_SIZES = [(4, 10), pytest.param(K, M, marks=pytest.mark.slow, id=f"{K}x{M}")]
S3_SIZES = [(4, 5), pytest.param(K, M, marks=pytest.mark.slow, id=f"{K}x{M}")]
"""(writers, appends per writer): a default size and the full one under ``-m slow``."""
R = 3
"""Rows per append."""

WORKER = textwrap.dedent(
    """
    import json, os, sys, time
    import pyarrow as pa
    import lakecore

    uri, options, worker, m, r, barrier = sys.argv[1:7]
    worker, m, r = int(worker), int(m), int(r)
    table = lakecore.open(uri, storage_options=json.loads(options) or None)
    open(f"{barrier}.ready.{worker}", "w").close()
    deadline = time.monotonic() + 60
    while not os.path.exists(f"{barrier}.go"):
        if time.monotonic() > deadline:
            sys.exit("no go signal")
        time.sleep(0.005)
    versions = []
    for j in range(m):
        ids = [worker * 100_000 + j * r + k for k in range(r)]
        data = pa.table({"id": ids, "worker": pa.array([worker] * r, pa.int32())})
        versions.append(table.append(data).version)
    print(json.dumps(versions))
    """
)


def run_writers(
    uri: str, options: dict[str, Any], barrier: Path, k: int, m: int
) -> list[list[int]]:
    """Start ``k`` writer processes of ``m`` appends, release them together, return each
    one's versions."""
    argvs = [[uri, json.dumps(options), str(w), str(m), str(R), str(barrier)] for w in range(k)]
    reports: list[list[int]] = run_barrier_writers(
        WORKER, argvs, barrier, start_timeout=60, run_timeout=240
    )
    return reports


def expected_ids(k: int, m: int) -> list[int]:
    return sorted(w * 100_000 + i for w in range(k) for i in range(m * R))


def check_outcome(
    uri: str, versions: list[list[int]], k: int, m: int, options: dict[str, Any] | None = None
) -> None:
    """1 + k*m commits (create + every append), every row exactly once."""
    assert len(versions) == k
    flat = sorted(v for vs in versions for v in vs)
    assert flat == list(range(1, 1 + k * m)), "every append got its own version"
    for vs in versions:
        assert vs == sorted(vs), "a writer's own appends land in order"
    table = lakecore.open(uri, storage_options=options)
    history = table.history()
    assert [h.version for h in history] == list(range(k * m, -1, -1))
    assert [h.operation for h in history].count("WRITE") == k * m
    ids = sorted(table.to_arrow().column("id").to_pylist())
    assert len(ids) == k * m * R
    assert ids == expected_ids(k, m)


@pytest.mark.parametrize(("k", "m"), LOCAL_SIZES)
def test_processes_append_to_a_local_table(tmp_path: Path, k: int, m: int) -> None:
    path = tmp_path / "t"
    lakecore.create(str(path), SCHEMA)
    started = time.monotonic()
    versions = run_writers(str(path), {}, tmp_path / "barrier", k, m)
    print(f"local: {k} processes x {m} appends in {time.monotonic() - started:.1f}s")
    check_outcome(str(path), versions, k, m)
    assert commit_versions(path) == list(range(1 + k * m))
    assert delta_rs_rows(path) == lakecore_rows(path)
    checkpoints = sorted((path / LOG).glob("*.checkpoint.parquet"))
    assert [int(c.name[:20]) for c in checkpoints] == list(range(10, k * m + 1, 10))


@pytest.mark.s3
@pytest.mark.parametrize(("k", "m"), S3_SIZES)
def test_processes_append_to_an_s3_table(
    s3_uri: str, s3_storage_options: dict[str, Any], tmp_path: Path, k: int, m: int
) -> None:
    lakecore.create(s3_uri, SCHEMA, storage_options=s3_storage_options)
    started = time.monotonic()
    versions = run_writers(s3_uri, s3_storage_options, tmp_path / "barrier", k, m)
    print(f"s3 (moto): {k} processes x {m} appends in {time.monotonic() - started:.1f}s")
    check_outcome(s3_uri, versions, k, m, s3_storage_options)


class _VanishedEntry:
    """A directory entry for a file deleted right after ``scandir`` saw it (a temp file)."""

    def __init__(self, directory: str) -> None:
        self.name = f".{0:020d}.json.{'0' * 32}.tmp"
        self.path = os.path.join(directory, self.name)

    def is_file(self, follow_symlinks: bool = True) -> bool:
        return True

    def stat(self, follow_symlinks: bool = True) -> os.stat_result:
        raise FileNotFoundError(self.path)


def test_listing_survives_a_file_vanishing_mid_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t"
    lakecore.create(str(path), SCHEMA).append(batch(1))
    real_scandir = os.scandir

    class Listing:
        """``os.scandir``'s context manager over a vanished entry and the real ones."""

        def __init__(self, directory: str) -> None:
            with real_scandir(directory) as entries:
                self._entries: list[Any] = [_VanishedEntry(directory), *entries]

        def __enter__(self) -> Listing:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def __iter__(self) -> Iterator[Any]:
            return iter(self._entries)

    def scandir(directory: Any) -> Any:
        if str(directory).rstrip("/").endswith(LOG):
            return Listing(str(directory))
        return real_scandir(directory)

    monkeypatch.setattr(os, "scandir", scandir)
    table = lakecore.open(str(path))
    assert table.version == 1
    assert table.append(batch(2)).version == 2
    assert lakecore_rows(path) == canonical(batch(1, 2))


# ------------------------------------------------------------------ conflicting transactions


@pytest.fixture
def table(tmp_path: Path) -> lakecore.Table:
    t = lakecore.create(str(tmp_path / "t"), SCHEMA)
    t.append(batch(1, 2))
    return t


def batch(*ids: int) -> pa.Table:
    return pa.table({"id": list(ids), "worker": pa.array([0] * len(ids), pa.int32())})


def test_delete_all_loses_to_a_concurrent_append(table: lakecore.Table) -> None:
    loser = table.transaction()
    loser.delete()
    winner = table.append(batch(3)).version
    with pytest.raises(lakecore.CommitConflictError) as info:
        loser.commit()
    assert info.value.winning_version == winner == 2
    assert str(winner) in str(info.value)
    assert table.version == 2
    assert commit_versions(table.uri) == [0, 1, 2]
    assert lakecore_rows(table.uri) == delta_rs_rows(table.uri) == canonical(batch(1, 2, 3))


def test_overwrite_loses_to_a_concurrent_append(table: lakecore.Table) -> None:
    loser = table.transaction()
    loser.overwrite(batch(9))
    table.append(batch(3))
    with pytest.raises(lakecore.CommitConflictError) as info:
        loser.commit()
    assert info.value.winning_version == 2
    assert lakecore_rows(table.uri) == canonical(batch(1, 2, 3))


def test_two_deletes_of_the_same_files_conflict(table: lakecore.Table) -> None:
    first, second = table.transaction(), table.transaction()
    first.delete()
    second.delete()
    assert first.commit().version == 2
    with pytest.raises(lakecore.CommitConflictError) as info:
        second.commit()
    assert info.value.winning_version == 2
    assert commit_versions(table.uri) == [0, 1, 2]
    assert lakecore_rows(table.uri) == []


def test_same_application_transaction_twice(table: lakecore.Table) -> None:
    first, second = table.transaction(), table.transaction()
    for tx in (first, second):
        tx.append(batch(7))
        tx.set_app_transaction("nightly-job", 42)
    assert second.commit().version == 2
    with pytest.raises(lakecore.CommitConflictError) as info:
        first.commit()
    assert info.value.winning_version == 2
    assert lakecore_rows(table.uri) == canonical(batch(1, 2, 7))


def test_concurrent_appends_both_land(table: lakecore.Table) -> None:
    first, second = table.transaction(), table.transaction()
    first.append(batch(10))
    second.append(batch(20))
    assert second.commit().version == 2
    assert first.commit().version == 3  # retried past version 2
    assert lakecore_rows(table.uri) == delta_rs_rows(table.uri) == canonical(batch(1, 2, 10, 20))
    assert [h.info.get("readVersion") for h in table.history(limit=2)] == [1, 1]


def test_blind_append_survives_a_concurrent_delete(table: lakecore.Table) -> None:
    appender = table.transaction()
    appender.append(batch(5))
    assert table.delete().version == 2
    assert appender.commit().version == 3
    assert lakecore_rows(table.uri) == canonical(batch(5))


def test_winner_changing_the_protocol_conflicts_with_an_append(table: lakecore.Table) -> None:
    loser = table.transaction()
    loser.append(batch(3))
    protocol = {"minReaderVersion": 1, "minWriterVersion": 4}
    lines = [{"commitInfo": {"timestamp": 1, "operation": "UPGRADE"}}, {"protocol": protocol}]
    (Path(table.uri) / LOG / f"{2:020d}.json").write_text(
        "\n".join(json.dumps(a) for a in lines) + "\n"
    )
    with pytest.raises(lakecore.CommitConflictError) as info:
        loser.commit()
    assert info.value.winning_version == 2
    assert commit_versions(table.uri) == [0, 1, 2]
