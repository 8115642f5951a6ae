"""The Storage contract as an abstract pytest suite.

An implementation opts in with one line, providing a ``storage`` fixture that returns a fresh,
empty Storage (its root need not exist yet)::

    class TestLocalStorage(StorageContract, LocalStorageFixture):
        pass

Every test here states one clause of the ``lakecore.storage.Storage`` docstrings.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakecore.storage import FileInfo, Storage

RACERS = 16
"""Threads racing on one ``put_if_absent`` path."""

MTIME_TOLERANCE_MS = 5 * 60 * 1000
"""How far a reported mtime may be from this machine's clock (object stores stamp times)."""

PAYLOAD = bytes(range(256)) * 4
"""1 KiB with every byte value, so ranges and binary round trips are checked byte for byte."""


def _paths(infos: list[FileInfo]) -> list[str]:
    return [info.path for info in infos]


def _posix(path: str) -> str:
    return path.replace("\\", "/")


class StorageContract:
    """Abstract suite: subclass it together with a class providing the ``storage`` fixture."""

    # --- put / read -----------------------------------------------------------------------

    def test_list_all_is_recursive_and_sorted(self, storage: Storage) -> None:
        for path in ("b/x/2.bin", "a.bin", "b/1.bin", "b/x/y/3.bin"):
            storage.put(path, b"v")
        assert [f.path for f in storage.list_all()] == [
            "a.bin",
            "b/1.bin",
            "b/x/2.bin",
            "b/x/y/3.bin",
        ]
        assert [f.path for f in storage.list_all("b/x")] == ["b/x/2.bin", "b/x/y/3.bin"]
        assert storage.list_all("missing") == []

    def test_put_then_read_round_trip(self, storage: Storage) -> None:
        storage.put("a.bin", PAYLOAD)
        assert storage.read("a.bin") == PAYLOAD

    def test_put_and_read_empty_file(self, storage: Storage) -> None:
        storage.put("empty", b"")
        assert storage.read("empty") == b""
        assert storage.head("empty").size == 0

    @pytest.mark.parametrize(
        ("start", "end"),
        [
            (None, None),
            (0, None),
            (10, None),
            (None, 10),
            (None, 1),
            (0, 10),
            (10, 20),
            (1000, 1024),
            (1023, None),
        ],
    )
    def test_read_range(self, storage: Storage, start: int | None, end: int | None) -> None:
        storage.put("a.bin", PAYLOAD)
        assert storage.read("a.bin", start, end) == PAYLOAD[start:end]

    def test_read_range_past_end_is_clamped(self, storage: Storage) -> None:
        storage.put("a.bin", PAYLOAD)
        assert storage.read("a.bin", 1000, 5000) == PAYLOAD[1000:]
        assert storage.read("a.bin", 5000, 6000) == b""

    def test_read_empty_range(self, storage: Storage) -> None:
        storage.put("a.bin", PAYLOAD)
        assert storage.read("a.bin", 10, 10) == b""
        assert storage.read("a.bin", 20, 10) == b""
        assert storage.read("a.bin", None, 0) == b""
        assert storage.read("a.bin", 0, 0) == b""

    # function_scoped_fixture: every example writes the same file, so sharing one fresh storage
    # across examples is fine. differing_executors: a mixin's test runs on each opted-in class by
    # design, and the property must hold for all of them.
    @settings(
        max_examples=25,
        deadline=None,
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.differing_executors,
        ],
    )
    @given(
        start=st.none() | st.integers(min_value=0, max_value=len(PAYLOAD) + 8),
        end=st.none() | st.integers(min_value=0, max_value=len(PAYLOAD) + 8),
    )
    def test_read_range_matches_slicing(
        self, storage: Storage, start: int | None, end: int | None
    ) -> None:
        if not storage.exists("h.bin"):
            storage.put("h.bin", PAYLOAD)
        assert storage.read("h.bin", start, end) == PAYLOAD[start:end]

    def test_read_negative_range_raises_value_error(self, storage: Storage) -> None:
        storage.put("a.bin", PAYLOAD)
        with pytest.raises(ValueError):
            storage.read("a.bin", -10)
        with pytest.raises(ValueError):
            storage.read("a.bin", 0, -1)

    def test_read_missing_raises_file_not_found(self, storage: Storage) -> None:
        with pytest.raises(FileNotFoundError):
            storage.read("missing.bin")
        with pytest.raises(FileNotFoundError):
            storage.read("missing.bin", 0, 10)
        with pytest.raises(FileNotFoundError):
            storage.read("no/such/dir/missing.bin")

    def test_open_input_random_access(self, storage: Storage) -> None:
        storage.put("a.bin", PAYLOAD)
        with storage.open_input("a.bin") as f:
            f.seek(100)
            assert f.read(4) == PAYLOAD[100:104]
            f.seek(0)
            assert f.read() == PAYLOAD

    def test_open_input_missing_raises_file_not_found(self, storage: Storage) -> None:
        with pytest.raises(FileNotFoundError):
            storage.open_input("missing.bin").close()

    def test_put_overwrites(self, storage: Storage) -> None:
        storage.put("a.json", b"old contents, longer than the new ones")
        storage.put("a.json", b"new")
        assert storage.read("a.json") == b"new"
        assert storage.head("a.json").size == 3

    def test_put_creates_nested_directories(self, storage: Storage) -> None:
        storage.put("x/y/z/deep.bin", b"deep")
        assert storage.read("x/y/z/deep.bin") == b"deep"
        assert _paths(storage.list_dir("x/y/z")) == ["x/y/z/deep.bin"]

    def test_read_after_write_sees_new_data(self, storage: Storage) -> None:
        for i in range(3):
            storage.put("v.txt", f"version {i}".encode())
            assert storage.read("v.txt") == f"version {i}".encode()
            assert storage.head("v.txt").size == len(f"version {i}")

    # --- head / exists --------------------------------------------------------------------

    def test_head_reports_path_size_and_mtime(self, storage: Storage) -> None:
        before = time.time() * 1000
        storage.put("d/a.bin", PAYLOAD)
        info = storage.head("d/a.bin")
        assert info.path == "d/a.bin"
        assert info.size == len(PAYLOAD)
        assert abs(info.modification_time - before) < MTIME_TOLERANCE_MS

    def test_head_missing_raises_file_not_found(self, storage: Storage) -> None:
        with pytest.raises(FileNotFoundError):
            storage.head("missing.bin")

    def test_head_of_directory_raises_file_not_found(self, storage: Storage) -> None:
        storage.put("d/a.bin", b"a")
        with pytest.raises(FileNotFoundError):
            storage.head("d")

    def test_exists(self, storage: Storage) -> None:
        assert not storage.exists("a.bin")
        storage.put("d/a.bin", b"a")
        assert storage.exists("d/a.bin")
        assert not storage.exists("d")  # a directory is not a file
        assert not storage.exists("d/b.bin")

    # --- listing --------------------------------------------------------------------------

    def _fill_log(self, storage: Storage) -> None:
        for name in ["10.json", "02.json", "00.json", "02.crc", "01.json"]:
            storage.put(f"log/{name}", name.encode())
        storage.put("log/sub/03.json", b"in a subdirectory")
        storage.put("log/sub/deeper/04.json", b"deeper still")
        storage.put("other/05.json", b"another directory")
        storage.put("top.bin", b"at the root")

    def test_list_dir_sorted_files_only(self, storage: Storage) -> None:
        self._fill_log(storage)
        infos = storage.list_dir("log")
        assert _paths(infos) == [
            "log/00.json",
            "log/01.json",
            "log/02.crc",
            "log/02.json",
            "log/10.json",
        ]
        assert [i.size for i in infos] == [7, 7, 6, 7, 7]

    def test_list_dir_with_trailing_slash(self, storage: Storage) -> None:
        self._fill_log(storage)
        assert _paths(storage.list_dir("log/")) == _paths(storage.list_dir("log"))

    def test_list_dir_root(self, storage: Storage) -> None:
        self._fill_log(storage)
        assert _paths(storage.list_dir("")) == ["top.bin"]

    def test_list_dir_missing_directory_is_empty(self, storage: Storage) -> None:
        assert storage.list_dir("nope") == []
        assert storage.list_dir("") == []  # the root itself need not exist yet
        storage.put("d/a.bin", b"a")
        assert storage.list_dir("d/nope") == []

    def test_list_dir_of_file_is_empty(self, storage: Storage) -> None:
        storage.put("d/a.bin", b"a")
        assert storage.list_dir("d/a.bin") == []

    def test_list_dir_agrees_with_head(self, storage: Storage) -> None:
        self._fill_log(storage)
        for info in storage.list_dir("log"):
            head = storage.head(info.path)
            assert (head.path, head.size) == (info.path, info.size)
            assert abs(head.modification_time - info.modification_time) < 2000

    def test_list_from_lists_names_at_or_after(self, storage: Storage) -> None:
        self._fill_log(storage)
        expected = ["log/01.json", "log/02.crc", "log/02.json", "log/10.json"]
        assert _paths(list(storage.list_from("log/01"))) == expected
        assert _paths(list(storage.list_from("log/01.json"))) == expected
        assert _paths(list(storage.list_from("log/02.d"))) == ["log/02.json", "log/10.json"]
        assert _paths(list(storage.list_from("log/11"))) == []

    def test_list_from_directory_like_path_lists_all(self, storage: Storage) -> None:
        self._fill_log(storage)
        assert _paths(list(storage.list_from("log/"))) == _paths(storage.list_dir("log"))

    def test_list_from_at_root(self, storage: Storage) -> None:
        self._fill_log(storage)
        assert _paths(list(storage.list_from("t"))) == ["top.bin"]
        assert _paths(list(storage.list_from("u"))) == []

    def test_list_from_missing_directory_is_empty(self, storage: Storage) -> None:
        assert list(storage.list_from("nope/00")) == []

    def test_listing_sees_new_and_deleted_files(self, storage: Storage) -> None:
        storage.put("log/00.json", b"0")
        assert _paths(storage.list_dir("log")) == ["log/00.json"]
        storage.put("log/01.json", b"1")
        assert _paths(list(storage.list_from("log/00"))) == ["log/00.json", "log/01.json"]
        storage.delete("log/00.json")
        assert _paths(storage.list_dir("log")) == ["log/01.json"]

    # --- put_if_absent --------------------------------------------------------------------

    def test_put_if_absent_creates(self, storage: Storage) -> None:
        storage.put_if_absent("log/00.json", b"first")
        assert storage.read("log/00.json") == b"first"
        assert _paths(storage.list_dir("log")) == ["log/00.json"]

    def test_put_if_absent_existing_raises_and_keeps_bytes(self, storage: Storage) -> None:
        storage.put_if_absent("log/00.json", b"first")
        with pytest.raises(FileExistsError):
            storage.put_if_absent("log/00.json", b"second, longer than the first")
        assert storage.read("log/00.json") == b"first"
        assert _paths(storage.list_dir("log")) == ["log/00.json"]

    def test_put_if_absent_refuses_file_written_by_put(self, storage: Storage) -> None:
        storage.put("log/00.json", b"first")
        with pytest.raises(FileExistsError):
            storage.put_if_absent("log/00.json", b"second")
        assert storage.read("log/00.json") == b"first"

    def test_put_if_absent_empty_data(self, storage: Storage) -> None:
        storage.put_if_absent("log/empty", b"")
        assert storage.read("log/empty") == b""
        with pytest.raises(FileExistsError):
            storage.put_if_absent("log/empty", b"")
        with pytest.raises(FileExistsError):
            storage.put_if_absent("log/empty", b"not empty")
        assert storage.read("log/empty") == b""

    def test_put_if_absent_under_contention_has_one_winner(self, storage: Storage) -> None:
        payloads = [f"writer {i:02d} ".encode() * 4096 for i in range(RACERS)]
        barrier = threading.Barrier(RACERS, timeout=60)

        def race(i: int) -> Callable[[], bool]:
            def attempt() -> bool:
                barrier.wait()
                try:
                    storage.put_if_absent("race/00.json", payloads[i])
                except FileExistsError:
                    return False
                return True

            return attempt

        with ThreadPoolExecutor(max_workers=RACERS) as pool:
            futures = [pool.submit(race(i)) for i in range(RACERS)]
            won = [f.result(timeout=120) for f in futures]
        assert won.count(True) == 1
        assert won.count(False) == RACERS - 1
        assert storage.read("race/00.json") == payloads[won.index(True)]
        assert _paths(storage.list_dir("race")) == ["race/00.json"]

    # --- delete ---------------------------------------------------------------------------

    def test_delete(self, storage: Storage) -> None:
        storage.put("d/a.bin", b"a")
        storage.put("d/b.bin", b"b")
        storage.delete("d/a.bin")
        assert not storage.exists("d/a.bin")
        assert _paths(storage.list_dir("d")) == ["d/b.bin"]
        with pytest.raises(FileNotFoundError):
            storage.read("d/a.bin")

    def test_delete_is_idempotent(self, storage: Storage) -> None:
        storage.put("a.bin", b"a")
        storage.delete("a.bin")
        storage.delete("a.bin")
        storage.delete("never/existed.bin")
        assert not storage.exists("a.bin")

    def test_put_if_absent_after_delete(self, storage: Storage) -> None:
        storage.put_if_absent("a.bin", b"one")
        storage.delete("a.bin")
        storage.put_if_absent("a.bin", b"two")
        assert storage.read("a.bin") == b"two"

    # --- paths ----------------------------------------------------------------------------

    def test_root_has_no_trailing_slash(self, storage: Storage) -> None:
        assert storage.root
        assert not storage.root.endswith("/") or storage.root == "/"

    def test_resolve_relative_joins_root(self, storage: Storage) -> None:
        assert _posix(storage.resolve("a/b.json")) == f"{_posix(storage.root)}/a/b.json"

    def test_resolve_absolute_is_unchanged(self, storage: Storage) -> None:
        absolute = storage.resolve("a/b.json")
        assert storage.resolve(absolute) == absolute

    def test_absolute_paths_reach_the_same_files(self, storage: Storage) -> None:
        storage.put("a/b.json", b"relative")
        absolute = storage.resolve("a/b.json")
        assert storage.read(absolute) == b"relative"
        assert storage.head(absolute).size == len(b"relative")
        assert storage.exists(absolute)
        storage.put(storage.resolve("a/c.json"), b"absolute")
        assert storage.read("a/c.json") == b"absolute"
        assert _paths(storage.list_dir(storage.resolve("a"))) == ["a/b.json", "a/c.json"]
        storage.delete(absolute)
        assert not storage.exists("a/b.json")
