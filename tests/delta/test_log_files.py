"""``_delta_log`` file names and log segments (pure functions, no storage)."""

from __future__ import annotations

import pytest
from lakecore_delta.log.files import LogFileKind, commit_path, parse_log_file
from lakecore_delta.log.segment import build_segment, complete_checkpoints, latest_version

from lakecore.errors import CorruptTableError, TableNotFoundError, VersionNotFoundError
from lakecore.storage import FileInfo

V2_UUID = "3a0d65cd-4056-49b8-937b-95f9e3ee90e5"

NAMES: list[tuple[str, LogFileKind | None, int | None]] = [
    ("00000000000000000000.json", LogFileKind.COMMIT, 0),
    ("00000000000000000123.json", LogFileKind.COMMIT, 123),
    ("00000000000000000010.crc", LogFileKind.CRC, 10),
    ("00000000000000000010.checkpoint.parquet", LogFileKind.CHECKPOINT, 10),
    (
        "00000000000000000010.checkpoint.0000000002.0000000003.parquet",
        LogFileKind.MULTIPART_CHECKPOINT,
        10,
    ),
    (f"00000000000000000010.checkpoint.{V2_UUID}.json", LogFileKind.V2_CHECKPOINT, 10),
    (f"00000000000000000010.checkpoint.{V2_UUID}.parquet", LogFileKind.V2_CHECKPOINT, 10),
    ("00000000000000000004.00000000000000000009.compacted.json", LogFileKind.COMPACTION, 4),
    ("0000000000000000001.json", None, None),
    ("000000000000000000001.json", None, None),
    ("00000000000000000001.json.tmp", None, None),
    (".00000000000000000001.json.crc", None, None),
    ("00000000000000000001.checkpoint.parquet.crc", None, None),
    ("00000000000000000001.checkpoint.1.2.parquet", None, None),
    ("_last_checkpoint", None, None),
    ("00000000000000000001.JSON", None, None),
]


def info(name: str, mtime: int = 0) -> FileInfo:
    return FileInfo(f"_delta_log/{name}", 10, mtime)


@pytest.mark.parametrize(("name", "kind", "version"), NAMES, ids=[n[0] for n in NAMES])
def test_parse_log_file_names(name: str, kind: LogFileKind | None, version: int | None) -> None:
    parsed = parse_log_file(info(name))
    if kind is None:
        assert parsed is None
        return
    assert parsed is not None
    assert (parsed.kind, parsed.version, parsed.path) == (kind, version, f"_delta_log/{name}")


def test_name_cases_ran() -> None:
    assert len(NAMES) == 16


def test_multipart_and_compaction_details() -> None:
    part = parse_log_file(info("00000000000000000010.checkpoint.0000000002.0000000003.parquet"))
    assert part is not None and (part.part, part.parts) == (2, 3)
    comp = parse_log_file(info("00000000000000000004.00000000000000000009.compacted.json"))
    assert comp is not None and comp.end_version == 9
    assert commit_path(7) == "_delta_log/00000000000000000007.json"


def log(*names: str):  # type: ignore[no-untyped-def]
    out = [parse_log_file(info(n)) for n in sorted(names)]
    assert all(f is not None for f in out)
    return out


def commits(*versions: int) -> list[str]:
    return [f"{v:020d}.json" for v in versions]


def multipart(version: int, parts: int, present: list[int]) -> list[str]:
    return [f"{version:020d}.checkpoint.{p:010d}.{parts:010d}.parquet" for p in present]


def test_complete_checkpoints_newest_first() -> None:
    files = log(
        *commits(0, 1, 2, 3),
        "00000000000000000001.checkpoint.parquet",
        *multipart(2, 3, [1, 3]),  # incomplete
        *multipart(3, 2, [1, 2]),
        f"00000000000000000000.checkpoint.{V2_UUID}.json",
    )
    found = complete_checkpoints(files)
    assert [c.version for c in found] == [3, 1, 0]
    assert [f.part for f in found[0].files] == [1, 2]
    assert latest_version(files) == 3


def test_build_segment_picks_newest_usable_checkpoint() -> None:
    files = log(*commits(0, 1, 2, 3, 4), "00000000000000000002.checkpoint.parquet")
    seg = build_segment(files)
    assert seg.version == 4
    assert seg.checkpoint is not None and seg.checkpoint.version == 2
    assert [c.version for c in seg.commits] == [3, 4]
    seg1 = build_segment(files, 1)
    assert seg1.checkpoint is None and [c.version for c in seg1.commits] == [0, 1]
    skipped = build_segment(files, None, skip_checkpoints=[2])
    assert skipped.checkpoint is None and len(skipped.commits) == 5


def test_build_segment_errors() -> None:
    with pytest.raises(TableNotFoundError):
        build_segment([])
    files = log(*commits(3, 4, 6), "00000000000000000003.checkpoint.parquet")
    with pytest.raises(CorruptTableError, match=r"5\b"):
        build_segment(files)
    with pytest.raises(VersionNotFoundError):
        build_segment(files, 2)
    with pytest.raises(VersionNotFoundError):
        build_segment(files, 7)
    # the only checkpoint is unreadable and the commits it stood in for are gone
    with pytest.raises(CorruptTableError, match="checkpoint 3"):
        build_segment(files, 4, skip_checkpoints=[3])
