"""Log listing and gaps: missing commits, cleaned-up history, files that are not log files."""

from __future__ import annotations

import pytest

import lakecore
from lakecore.errors import CorruptTableError, TableNotFoundError, VersionNotFoundError

from .builders import DeltaTableBuilder, commit_info, metadata, protocol
from .conftest import ID_FIELDS, id_rows


def five_versions(builder: DeltaTableBuilder) -> list[dict]:
    """v0 create, v1..v4 each add one file with id = version."""
    builder.init(ID_FIELDS)
    adds = []
    for v in range(1, 5):
        a = builder.data_file(f"f{v}.parquet", id_rows(v))
        builder.commit(v, commit_info(), a)
        adds.append(a)
    return adds


def ids(uri: str, version: int | None = None) -> list[int]:
    return sorted(lakecore.open(uri).to_arrow(version=version).column("id").to_pylist())


def test_missing_commit_after_checkpoint_is_corrupt(builder: DeltaTableBuilder) -> None:
    adds = five_versions(builder)
    builder.checkpoint(1, [protocol(), metadata(ID_FIELDS), adds[0]])
    builder.commit_path(3).unlink()
    table = lakecore.open(builder.uri)
    with pytest.raises(CorruptTableError, match=r"version\(s\) 3\b"):
        table.snapshot()
    with pytest.raises(CorruptTableError):
        table.snapshot(3)
    assert ids(builder.uri, 2) == [1, 2]  # before the gap is fine


def test_missing_commits_without_checkpoint_are_corrupt(builder: DeltaTableBuilder) -> None:
    five_versions(builder)
    builder.commit_path(2).unlink()
    builder.commit_path(3).unlink()
    with pytest.raises(CorruptTableError, match="2-3"):
        lakecore.open(builder.uri).snapshot()
    assert ids(builder.uri, 1) == [1]


def test_version_before_earliest_commit_without_checkpoint(builder: DeltaTableBuilder) -> None:
    five_versions(builder)
    builder.commit_path(0).unlink()
    builder.commit_path(1).unlink()
    table = lakecore.open(builder.uri)
    for v in (0, 1, 2):
        with pytest.raises(VersionNotFoundError):
            table.snapshot(v)


def test_versions_a_checkpoint_made_unreachable(builder: DeltaTableBuilder) -> None:
    adds = five_versions(builder)
    builder.checkpoint(2, [protocol(), metadata(ID_FIELDS), *adds[:2]])
    for v in (0, 1, 2):
        builder.commit_path(v).unlink()
    table = lakecore.open(builder.uri)
    assert ids(builder.uri, 2) == [1, 2]
    assert ids(builder.uri) == [1, 2, 3, 4]
    with pytest.raises(VersionNotFoundError):
        table.snapshot(1)


@pytest.mark.parametrize("version", [5, 100, -1, "x", "1.5"])
def test_versions_that_do_not_exist(builder: DeltaTableBuilder, version: object) -> None:
    five_versions(builder)
    with pytest.raises(VersionNotFoundError):
        lakecore.open(builder.uri).snapshot(version)  # type: ignore[arg-type]


def test_version_given_as_text(builder: DeltaTableBuilder) -> None:
    five_versions(builder)
    assert lakecore.open(builder.uri).snapshot("2").version == 2


def test_missing_commit_covered_by_a_checkpoint_is_fine(builder: DeltaTableBuilder) -> None:
    adds = five_versions(builder)
    builder.checkpoint(3, [protocol(), metadata(ID_FIELDS), *adds[:3]])
    builder.commit_path(3).unlink()  # the checkpoint stands in for it
    assert ids(builder.uri) == [1, 2, 3, 4]
    assert lakecore.open(builder.uri).version == 4


def test_files_that_are_not_log_files_are_ignored(builder: DeltaTableBuilder) -> None:
    five_versions(builder)
    junk = {
        "_delta_log/00000000000000000005.json.tmp": b"{garbage",
        "_delta_log/.00000000000000000005.json.crc": b"\x00",
        "_delta_log/00000000000000000004.crc": b"{}",
        "_delta_log/0000000000000000006.json": b"{garbage",  # 19 digits
        "_delta_log/00000000000000000007.checkpoint.parquet.tmp": b"x",
        "_delta_log/_commits/00000000000000000005.00000000-0000-0000-0000-000000000000.json": b"x",
        "_delta_log/README": b"hello",
    }
    for path, data in junk.items():
        builder.write_bytes(path, data)
    table = lakecore.open(builder.uri)
    assert table.version == 4
    assert ids(builder.uri) == [1, 2, 3, 4]
    assert [h.version for h in table.history()] == [4, 3, 2, 1, 0]


def test_empty_log_is_table_not_found(builder: DeltaTableBuilder) -> None:
    builder.write_bytes("data.parquet", b"x")
    with pytest.raises(TableNotFoundError):
        lakecore.open(builder.uri, format="delta")


def test_log_without_protocol_is_corrupt(builder: DeltaTableBuilder) -> None:
    builder.commit(0, commit_info(), metadata(ID_FIELDS))
    with pytest.raises(CorruptTableError, match="protocol"):
        lakecore.open(builder.uri).snapshot()


def test_log_without_metadata_is_corrupt(builder: DeltaTableBuilder) -> None:
    builder.commit(0, commit_info(), protocol())
    with pytest.raises(CorruptTableError, match="metaData"):
        lakecore.open(builder.uri).snapshot()
