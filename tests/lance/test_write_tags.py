"""Lance tags written by lakecore: pylance reads them, and they pin versions in vacuum."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import lakecore
from lakecore.errors import InvalidArgumentError, VersionNotFoundError
from tests.lance.helpers import lance


def test_tags_as_pylance_writes_them(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = lakecore.create(str(path), pa.schema([("id", pa.int64())]), format="lance")
    first = int(table.append(pa.table({"id": [1]})).version)
    table.append(pa.table({"id": [2]}))
    table.create_tag("first", first)
    assert lance.dataset(str(path)).tags.list()["first"]["version"] == first
    assert lance.dataset(str(path), version="first").to_table().column("id").to_pylist() == [1]
    assert table.to_arrow(version="first").column("id").to_pylist() == [1]
    removed = table.vacuum(retention_hours=0, dry_run=False, enforce_retention=False)
    assert [v["version"] for v in lance.dataset(str(path)).versions()] == [first, first + 1]
    assert removed
    for bad in ("", "a/b", "..x", "12", "tag name"):
        with pytest.raises(InvalidArgumentError):
            table.create_tag(bad, first)
    with pytest.raises(InvalidArgumentError):
        table.create_tag("first", first)  # exists
    with pytest.raises(VersionNotFoundError):
        table.create_tag("later", 99)
    table.delete_tag("first")
    assert lance.dataset(str(path)).tags.list() == {}
    with pytest.raises(VersionNotFoundError):
        table.delete_tag("first")
    lance.dataset(str(path)).tags.create("theirs", first + 1)
    assert table.tags() == {"theirs": first + 1}
    table.delete_tag("theirs")  # a tag pylance wrote
    assert lance.dataset(str(path)).tags.list() == {}
    table.create_tag("latest")  # the latest version by default
    assert table.tags() == {"latest": first + 1}
