"""Lance datasets on an object store (moto S3): every file goes through lakecore's Storage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lakecore
from lakecore.storage import open_storage

from .helpers import lance, reference, sort_rows

pytestmark = pytest.mark.s3


def _upload(local: Path, uri: str, options: dict[str, Any]) -> int:
    storage = open_storage(uri, options)
    count = 0
    for path in sorted(local.rglob("*")):
        if path.is_file():
            storage.put(path.relative_to(local).as_posix(), path.read_bytes())
            count += 1
    return count


def test_read_every_version_from_s3(
    tmp_path: Path, s3_uri: str, s3_storage_options: dict[str, Any]
) -> None:
    local = tmp_path / "ds"
    data = pa.table({"id": pa.array(range(9000), pa.int64()), "s": [f"r{i}" for i in range(9000)]})
    ds = lance.write_dataset(data, str(local), max_rows_per_file=7000)
    ds.delete("id < 5")  # Arrow deletion file
    ds.delete("id >= 1000 and id < 6500")  # 5,500 rows: a bitmap
    ds.add_columns({"t": "id * 2"})  # a second data file per fragment
    ds.tags.create("two", 2)
    assert _upload(local, s3_uri, s3_storage_options) > 10
    table = lakecore.open(s3_uri, storage_options=s3_storage_options)
    assert table.format == "lance" and table.version == 4
    for version in (1, 2, 3, 4, "two"):
        got = sort_rows(table.snapshot(version=version).to_arrow())
        assert got.equals(sort_rows(reference(local, version))), version
    assert [h.operation for h in table.history()] == ["merge", "delete", "delete", "overwrite"]
    assert table.changes(3, 3).num_rows == 5500
    assert table.changes(2, 3).num_rows == 5505  # inclusive: v2 deleted 5 rows
