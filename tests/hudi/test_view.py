"""The file-system view: which base and log files make up each file group's latest slice.

Listings are built by hand: instants are short made-up timestamps ("001" < "002" < ...).
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from lakecore_hudi.view import FileSlice, Visible, data_files, latest_slices

from lakecore.storage import FileInfo

TOKEN = "0-1-2"


def base(partition: str, file_id: str, instant: str, token: str = TOKEN) -> str:
    name = f"{file_id}_{token}_{instant}.parquet"
    return f"{partition}/{name}" if partition else name


def log(partition: str, file_id: str, instant: str, version: int = 1, cdc: bool = False) -> str:
    name = f".{file_id}_{instant}.log.{version}_{TOKEN}" + (".cdc" if cdc else "")
    return f"{partition}/{name}" if partition else name


def view(
    paths: list[str],
    instants: set[str],
    *,
    v8: bool = False,
    completion: Mapping[str, str] | None = None,
    replaced: set[tuple[str, str]] | None = None,
) -> list[FileSlice]:
    listing = [FileInfo(p, 10 + i, 1000 + i) for i, p in enumerate(paths)]
    visible = Visible(frozenset(instants), dict(completion or {}), frozenset(replaced or ()))
    return latest_slices(data_files(listing), visible, completion_slicing=v8)


def summary(slices: list[FileSlice]) -> list[tuple[str, str, str | None, list[str]]]:
    """(partition, file id, base file path, log paths) of each slice."""
    return [
        (
            s.partition_path,
            s.file_id,
            None if s.base_file is None else s.base_file.path,
            [f.path for f in s.log_files],
        )
        for s in slices
    ]


# ----------------------------------------------------------------------------- listing


def test_data_files_keep_base_and_log_files_outside_the_timeline() -> None:
    listing = [
        FileInfo(".hoodie/hoodie.properties", 1, 0),
        FileInfo(".hoodie/metadata/files/.files-0000-0_001.log.1_0-0-0", 1, 0),
        FileInfo(".hoodie/metadata/files/files-0000-0_0-1-2_001.hfile", 1, 0),
        FileInfo("p=1/.hoodie_partition_metadata", 1, 0),
        FileInfo("p=1/.hoodie/" + base("", "g", "001"), 1, 0),
        FileInfo("p=1/README.txt", 1, 0),
        FileInfo(base("p=1", "g", "001"), 1, 0),
        FileInfo(log("p=1", "g", "001"), 1, 0),
        FileInfo(base("", "h", "001"), 1, 0),
    ]
    kept = [f.info.path for f in data_files(listing)]
    assert kept == [base("p=1", "g", "001"), log("p=1", "g", "001"), base("", "h", "001")]


def test_slices_are_per_partition_and_file_id_sorted_by_path() -> None:
    paths = [
        base("b", "f1", "001"),
        base("a", "f2", "001"),
        base("a", "f1", "001"),
        base("", "f3", "001"),
    ]
    got = summary(view(paths, {"001"}))
    assert got == [
        ("a", "f1", base("a", "f1", "001"), []),
        ("a", "f2", base("a", "f2", "001"), []),
        ("b", "f1", base("b", "f1", "001"), []),
        ("", "f3", base("", "f3", "001"), []),
    ]


def test_the_latest_visible_base_file_wins() -> None:
    paths = [base("p", "g", "001"), base("p", "g", "003"), base("p", "g", "002")]
    [s] = view(paths, {"001", "002", "003"})
    assert (s.base_instant, s.base_file and s.base_file.path) == ("003", base("p", "g", "003"))
    assert s.base_file is not None and s.base_file.size == 11  # the listed FileInfo is kept


@pytest.mark.parametrize("v8", [False, True])
def test_base_files_of_instants_not_completed_are_ignored(v8: bool) -> None:
    paths = [
        base("p", "g", "001"),
        base("p", "g", "002"),  # a newer version from an inflight / failed write
        base("p", "new", "002"),  # a file group that write created
    ]
    got = summary(view(paths, {"001"}, v8=v8))
    assert got == [("p", "g", base("p", "g", "001"), [])]


@pytest.mark.parametrize("v8", [False, True])
def test_replaced_file_groups_are_hidden_with_their_logs(v8: bool) -> None:
    paths = [
        base("p", "old", "001"),
        log("p", "old", "001" if not v8 else "002"),
        base("p", "new", "003"),
        base("q", "old", "001"),  # same file id in another partition: not replaced
    ]
    got = summary(view(paths, {"001", "002", "003"}, v8=v8, replaced={("p", "old")}))
    assert got == [
        ("p", "new", base("p", "new", "003"), []),
        ("q", "old", base("q", "old", "001"), []),
    ]


@pytest.mark.parametrize("v8", [False, True])
def test_cdc_logs_are_not_slice_logs(v8: bool) -> None:
    paths = [base("p", "g", "001"), log("p", "g", "001", cdc=True)]
    assert summary(view(paths, {"001"}, v8=v8)) == [("p", "g", base("p", "g", "001"), [])]


# ---------------------------------------------------------------------- table version 6


def test_v6_log_files_name_their_base_instant_and_sort_by_version() -> None:
    paths = [
        log("p", "g", "001", version=10),
        log("p", "g", "001", version=2),
        base("p", "g", "001"),
        log("p", "g", "001", version=1),
    ]
    [s] = view(paths, {"001", "002", "003"})
    assert [f.path for f in s.log_files] == [
        log("p", "g", "001", version=1),
        log("p", "g", "001", version=2),
        log("p", "g", "001", version=10),
    ]
    assert [n.version for n in s.log_names] == [1, 2, 10]
    assert s.path == base("p", "g", "001")


def test_v6_logs_of_an_older_base_were_compacted_and_are_excluded() -> None:
    paths = [
        base("p", "g", "001"),
        log("p", "g", "001"),
        log("p", "g", "001", version=2),
        base("p", "g", "004"),  # compaction 004
        log("p", "g", "004"),
    ]
    got = summary(view(paths, {"001", "002", "003", "004", "005"}))
    assert got == [("p", "g", base("p", "g", "004"), [log("p", "g", "004")])]


def test_v6_logs_against_a_pending_compaction_merge_into_the_previous_slice() -> None:
    paths = [
        base("p", "g", "001"),
        log("p", "g", "001"),
        base("p", "g", "004"),  # written by compaction 004, which has not completed
        log("p", "g", "004"),  # delta commit 005 wrote against the pending compaction
    ]
    visible = {"001", "002", "003", "005"}
    got = summary(view(paths, visible))
    assert got == [("p", "g", base("p", "g", "001"), [log("p", "g", "001"), log("p", "g", "004")])]
    # the same when the compaction completed after the snapshot instant (time travel)
    got = summary(view(paths, {"001", "002", "003"}))
    assert got == [("p", "g", base("p", "g", "001"), [log("p", "g", "001"), log("p", "g", "004")])]


def test_v6_log_only_slices() -> None:
    paths = [log("p", "g", "002", version=2), log("p", "g", "002")]
    [s] = view(paths, {"001", "002"})
    assert (s.base_file, s.base_instant) == (None, "")
    assert [f.path for f in s.log_files] == [log("p", "g", "002"), log("p", "g", "002", 2)]
    assert s.path == log("p", "g", "002")


def test_v6_log_only_slices_of_instants_not_visible_are_left_out() -> None:
    """A file group whose only files are logs of a write after the snapshot instant (time
    travel) or of a failed write is not part of the snapshot: Hudi drops slices whose base
    instant is not committed. (Its rows are empty either way; the slice must not count.)"""
    paths = [base("p", "g", "001"), log("p", "late", "005"), log("p", "failed", "003")]
    got = summary(view(paths, {"001", "002", "005"}))
    assert got == [
        ("p", "late", None, [log("p", "late", "005")]),  # paths sort ".late_..." first
        ("p", "g", base("p", "g", "001"), []),
    ]
    got = summary(view(paths, {"001", "002"}))
    assert got == [("p", "g", base("p", "g", "001"), [])]


def test_v6_log_only_slice_with_a_pending_compaction_keeps_both_logs() -> None:
    paths = [log("p", "g", "002"), log("p", "g", "004")]  # compaction 004 pending
    got = summary(view(paths, {"001", "002", "005"}))
    assert got == [("p", "g", None, [log("p", "g", "002"), log("p", "g", "004")])]


# ---------------------------------------------------------------- table version 8+ (slicing)


def test_v8_logs_name_their_delta_commit_and_join_by_completion_time() -> None:
    # compaction 005 completed; delta commit 003 completed before it was scheduled
    # (compacted), delta commit 004 completed after (its log belongs to the new slice).
    paths = [
        base("p", "g", "001"),
        log("p", "g", "003"),
        log("p", "g", "004"),
        base("p", "g", "005"),
        log("p", "g", "007"),
    ]
    completion = {"001": "002", "003": "0035", "004": "006", "005": "0065", "007": "008"}
    got = summary(view(paths, set(completion), v8=True, completion=completion))
    assert got == [("p", "g", base("p", "g", "005"), [log("p", "g", "004"), log("p", "g", "007")])]


def test_v8_pending_compaction_keeps_every_log_on_the_previous_slice() -> None:
    paths = [
        base("p", "g", "001"),
        log("p", "g", "003"),
        base("p", "g", "005"),  # compaction 005 inflight
        log("p", "g", "006"),
    ]
    completion = {"001": "002", "003": "004", "006": "007"}
    got = summary(view(paths, set(completion), v8=True, completion=completion))
    assert got == [("p", "g", base("p", "g", "001"), [log("p", "g", "003"), log("p", "g", "006")])]


def test_v8_logs_of_delta_commits_not_visible_are_excluded() -> None:
    paths = [
        base("p", "g", "001"),
        log("p", "g", "003"),
        log("p", "g", "006"),
        log("p", "h", "006"),
    ]
    completion = {"001": "002", "003": "004"}
    got = summary(view(paths, set(completion), v8=True, completion=completion))
    assert got == [("p", "g", base("p", "g", "001"), [log("p", "g", "003")])]


def test_v8_without_completion_times_falls_back_to_the_instant() -> None:
    paths = [
        base("p", "g", "001"),
        log("p", "g", "002"),
        base("p", "g", "003"),
        log("p", "g", "004"),
    ]
    got = summary(view(paths, {"001", "002", "003", "004"}, v8=True))
    assert got == [("p", "g", base("p", "g", "003"), [log("p", "g", "004")])]


def test_v8_log_only_slices() -> None:
    paths = [log("", "g", "004"), log("", "g", "002")]
    completion = {"002": "003", "004": "005"}
    [s] = view(paths, set(completion), v8=True, completion=completion)
    assert (s.partition_path, s.base_file, s.base_instant) == ("", None, "")
    assert [f.path for f in s.log_files] == [log("", "g", "002"), log("", "g", "004")]
    assert [n.instant for n in s.log_names] == ["002", "004"]
