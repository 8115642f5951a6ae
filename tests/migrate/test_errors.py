"""lakecore.migrate refuses what it cannot do, before writing anything."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import lakecore
from lakecore.errors import InvalidArgumentError, MigrationError, PluginNotInstalledError

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


@pytest.fixture
def source(tmp_path: Path) -> str:
    uri = str(tmp_path / "src")
    table = lakecore.create(uri, SCHEMA)
    table.append(pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]}))
    return uri


def _untouched(path: Path) -> bool:
    return not path.exists() or not any(path.rglob("*"))


def test_unknown_mode(source: str, tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="mode"):
        lakecore.migrate(source, str(tmp_path / "t"), to="lance", mode="copy")
    assert _untouched(tmp_path / "t")


def test_metadata_mode_elsewhere_is_refused(source: str, tmp_path: Path) -> None:
    # Zero-copy keeps the source's files where they are: only in place (test_zero_copy.py).
    with pytest.raises(MigrationError, match="migrate in place"):
        lakecore.migrate(source, str(tmp_path / "t"), to="hudi", mode="metadata")
    assert _untouched(tmp_path / "t")


def test_unknown_target_format(source: str, tmp_path: Path) -> None:
    with pytest.raises(PluginNotInstalledError):
        lakecore.migrate(source, str(tmp_path / "t"), to="iceberg")
    assert _untouched(tmp_path / "t")


def test_same_location(source: str) -> None:
    # In place needs a target that adopts the source's files; Lance does not (its encoding
    # differs; Delta -> Hudi in place: test_zero_copy_hudi.py).
    with pytest.raises(MigrationError, match="in place into one is not possible"):
        lakecore.migrate(source, source, to="lance")


def test_target_holding_another_table(source: str, tmp_path: Path) -> None:
    other = str(tmp_path / "other")
    lakecore.create(other, SCHEMA).append(pa.table({"id": [9], "name": ["z"]}))
    with pytest.raises(MigrationError, match="did not write"):
        lakecore.migrate(source, other, to="delta")
    assert lakecore.open(other).to_arrow().num_rows == 1
