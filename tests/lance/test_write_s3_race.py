"""Concurrency on an object store (moto S3): lakecore and pylance appending to one Lance
dataset at the same time land every commit exactly once (pylance through its own S3 client
with conditional puts, lakecore through its Storage's put_if_absent)."""

from __future__ import annotations

import threading
from typing import Any

import pyarrow as pa
import pytest

import lakecore
from tests.conftest import S3_KEY, S3_REGION, S3_SECRET

from .helpers import lance

pytestmark = pytest.mark.s3

SCHEMA = pa.schema([("id", pa.int64())])


def test_lakecore_and_pylance_append_on_s3(
    s3_uri: str, s3_endpoint: str, s3_storage_options: dict[str, Any]
) -> None:
    pylance_options = {
        "aws_access_key_id": S3_KEY,
        "aws_secret_access_key": S3_SECRET,
        "aws_region": S3_REGION,
        "aws_endpoint": s3_endpoint,
        "allow_http": "true",
    }
    lakecore.create(s3_uri, SCHEMA, format="lance", storage_options=s3_storage_options)
    rounds = 5
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def run(name: str) -> None:
        try:
            for i in range(rounds):
                barrier.wait()
                if name == "lakecore":
                    table = lakecore.open(s3_uri, storage_options=s3_storage_options)
                    table.append(pa.table({"id": [i]}, schema=SCHEMA))
                else:
                    data = pa.table({"id": [100 + i]}, schema=SCHEMA)
                    lance.write_dataset(
                        data, s3_uri, mode="append", storage_options=pylance_options
                    )
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(n,)) for n in ("lakecore", "pylance")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    expected = list(range(rounds)) + list(range(100, 100 + rounds))
    table = lakecore.open(s3_uri, storage_options=s3_storage_options)
    assert sorted(table.to_arrow().column("id").to_pylist()) == expected
    ds = lance.dataset(s3_uri, storage_options=pylance_options)
    assert sorted(ds.to_table().column("id").to_pylist()) == expected
    assert table.version == ds.version == 1 + 2 * rounds
