"""Local-only behaviour: put_if_absent across processes, URIs, no temp files left behind."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import fsspec
import pytest

from lakecore.storage import FsspecStorage, Storage, normalize_uri, open_storage

PROCESSES = 8

# Each racer signals it is ready, waits for "go", then tries the conditional put once.
RACER = """
import os, sys, time
from lakecore.storage import FsspecStorage

root, index, ready_dir, go = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
storage = FsspecStorage(root)
payload = (f"process {index:02d} ".encode()) * 65536
open(os.path.join(ready_dir, str(index)), "w").close()
deadline = time.monotonic() + 120
while not os.path.exists(go):
    if time.monotonic() > deadline:
        sys.exit(3)
    time.sleep(0.0005)
try:
    storage.put_if_absent("_delta_log/00000000000000000001.json", payload)
except FileExistsError:
    sys.exit(17)
sys.exit(0)
"""


def test_put_if_absent_across_processes_has_one_winner(tmp_path: Path) -> None:
    root = tmp_path / "table"
    ready, go = tmp_path / "ready", tmp_path / "go"
    ready.mkdir()
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(root), str(i), str(ready), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for i in range(PROCESSES)
    ]
    try:
        deadline = time.monotonic() + 120
        while len(os.listdir(ready)) < PROCESSES:
            assert all(r.poll() is None for r in racers), "a racer died before the start"
            assert time.monotonic() < deadline, "racers did not start in time"
            time.sleep(0.01)
        go.touch()
        codes = [r.wait(timeout=120) for r in racers]
    finally:
        for r in racers:
            if r.poll() is None:
                r.kill()
            r.communicate()
    assert sorted(codes) == [0] + [17] * (PROCESSES - 1), codes
    winner = codes.index(0)
    storage = FsspecStorage(str(root))
    assert storage.read("_delta_log/00000000000000000001.json") == (
        f"process {winner:02d} ".encode() * 65536
    )
    # No temp file of any loser is left next to the commit.
    assert os.listdir(root / "_delta_log") == ["00000000000000000001.json"]


def test_put_if_absent_leaves_no_temp_files(tmp_path: Path) -> None:
    storage = FsspecStorage(str(tmp_path))
    storage.put_if_absent("log/00.json", b"a")
    with pytest.raises(FileExistsError):
        storage.put_if_absent("log/00.json", b"b")
    storage.put("log/00.json", b"c")
    storage.put("log/01.json", b"d")
    assert sorted(os.listdir(tmp_path / "log")) == ["00.json", "01.json"]


def test_put_into_a_file_path_fails_and_leaves_nothing(tmp_path: Path) -> None:
    storage = FsspecStorage(str(tmp_path))
    storage.put("a", b"a file, not a directory")
    with pytest.raises(OSError):
        storage.put_if_absent("a/b.json", b"x")
    with pytest.raises(OSError):
        storage.put("a/b.json", b"x")
    assert os.listdir(tmp_path) == ["a"]


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("/data/t", "/data/t"),
        ("/data/t/", "/data/t"),
        ("file:/data/t", "/data/t"),  # Hadoop/Spark style
        ("file:///data/t", "/data/t"),
        ("file://localhost/data/t", "/data/t"),
        ("file:///data/with%20space", "/data/with space"),
        ("memory://bucket/t/", "memory://bucket/t"),
        ("s3://bucket/t/", "s3://bucket/t"),
    ],
)
def test_normalize_uri(uri: str, expected: str) -> None:
    assert normalize_uri(uri) == expected


def test_normalize_uri_makes_relative_paths_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert normalize_uri("t") == str(tmp_path / "t")
    assert FsspecStorage("t").root == str(tmp_path / "t")


def test_file_uris_reach_local_files(tmp_path: Path) -> None:
    storage = FsspecStorage(str(tmp_path))
    storage.put("d/a.parquet", b"parquet")
    absolute = tmp_path / "d" / "a.parquet"
    for path in (str(absolute), absolute.as_uri(), f"file:{absolute.as_posix()}"):
        assert storage.read(path) == b"parquet"
        assert storage.head(path).path == "d/a.parquet"
    assert storage.resolve(absolute.as_uri()) == str(absolute)


def test_is_local(tmp_path: Path) -> None:
    assert FsspecStorage(str(tmp_path)).is_local
    assert FsspecStorage(tmp_path.as_uri()).is_local
    assert not FsspecStorage("memory://lakecore-test-is-local").is_local


def test_open_storage_returns_a_storage(tmp_path: Path) -> None:
    storage = open_storage(str(tmp_path))
    assert isinstance(storage, Storage)
    assert storage.root == str(tmp_path)


def test_memory_put_if_absent_is_exclusive_across_instances() -> None:
    root = f"memory://lakecore-test-{uuid.uuid4().hex}"
    try:
        # Separate instances on one root share fsspec's process-wide memory store.
        storages = [FsspecStorage(root) for _ in range(16)]

        def attempt(i: int) -> bool:
            try:
                storages[i].put_if_absent("log/00.json", str(i).encode())
            except FileExistsError:
                return False
            return True

        with ThreadPoolExecutor(max_workers=16) as pool:
            won = list(pool.map(attempt, range(16)))
        assert won.count(True) == 1
        assert storages[0].read("log/00.json") == str(won.index(True)).encode()
    finally:
        fsspec.filesystem("memory").rm(root, recursive=True)
