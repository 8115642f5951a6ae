"""Writing Lance datasets on an object store (moto S3): data files are encoded locally and
uploaded through lakecore's Storage; pylance reads the downloaded dataset identically."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lakecore
from lakecore.storage import open_storage

from .helpers import assert_same_as_pylance, sort_rows

pytestmark = pytest.mark.s3


def test_write_on_s3(tmp_path: Path, s3_uri: str, s3_storage_options: dict[str, Any]) -> None:
    schema = pa.schema([("id", pa.int64()), ("s", pa.string())])
    table = lakecore.create(s3_uri, schema, format="lance", storage_options=s3_storage_options)
    table.append(pa.table({"id": list(range(6000)), "s": ["x"] * 6000}, schema=schema))
    table.delete("id < 10")
    table.delete("id >= 1000")  # 5,000 rows: a bitmap deletion file
    table.update({"s": "'u'"}, "id = 500")
    table.append(pa.table({"id": [9000], "s": ["y"]}, schema=schema))
    got = sort_rows(table.to_arrow())
    assert got.column("id").to_pylist() == [*range(10, 1000), 9000]
    storage = open_storage(s3_uri, s3_storage_options)
    local = tmp_path / "copy"
    count = 0
    for info in storage.list_all():
        target = local / info.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(storage.read(info.path))
        count += 1
    assert count == 19  # 3 data, 3 deletion, 6 transaction files, 6 manifests, the hint
    assert assert_same_as_pylance(local) == 6
