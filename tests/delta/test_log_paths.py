"""Paths in the log: URL-decoding and making absolute paths relative to the table root."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lakecore_delta.paths import decode_paths

import lakecore

# (table root, path as the log stores it, path lakecore keeps)
CASES: list[tuple[str, str | None, str | None]] = [
    ("/data/t", "plain.parquet", "plain.parquet"),
    ("/data/t", "a%20b%3Ac.parquet", "a b:c.parquet"),
    ("/data/t", "p=a%253Db/part.parquet", "p=a%3Db/part.parquet"),  # decoded exactly once
    ("/data/t", "p=x/y+z.parquet", "p=x/y+z.parquet"),  # '+' is not a space in a URI path
    ("/data/t", "%C3%BCn%C3%AF.parquet", "ünï.parquet"),
    ("/data/t", "d%.parquet", "d%.parquet"),  # a stray '%' that escapes nothing
    ("/data/t", "file:/data/t/x.parquet", "x.parquet"),
    ("/data/t", "file:///data/t/sub/x.parquet", "sub/x.parquet"),
    ("/data/t", "file://localhost/data/t/x.parquet", "x.parquet"),
    ("/data/t", "file:/data/t/a%20b.parquet", "a b.parquet"),
    ("/data/t", "/data/t/x.parquet", "x.parquet"),
    ("/data/t", "file:/data/t2/x.parquet", "/data/t2/x.parquet"),  # a sibling, not inside
    ("/data/t", "file:/other/x%20y.parquet", "/other/x y.parquet"),
    ("/data/my table", "file:/data/my%20table/x.parquet", "x.parquet"),
    ("s3://b/t", "s3://b/t/x%20y.parquet", "x y.parquet"),
    ("s3://b/t", "s3a://b/t/x.parquet", "x.parquet"),
    ("s3://b/t", "s3n://b/t/d/x.parquet", "d/x.parquet"),
    ("s3a://b/t", "s3://b/t/x.parquet", "x.parquet"),
    ("s3://b/t", "s3a://b/t2/x.parquet", "s3a://b/t2/x.parquet"),
    ("s3://b/t", "s3://other/t/x.parquet", "s3://other/t/x.parquet"),
    ("/data/t", "./a.parquet", "a.parquet"),  # one file, however the log spells it
    ("/data/t", "sub//a.parquet", "sub/a.parquet"),
    ("/data/t", "sub/./a.parquet", "sub/a.parquet"),
    ("/data/t", "p=1./a.parquet", "p=1./a.parquet"),
    ("/data/t", None, None),
]


@pytest.mark.parametrize(("root", "raw", "expected"), CASES, ids=[f"{c[0]}|{c[1]}" for c in CASES])
def test_decode_path(root: str, raw: str | None, expected: str | None) -> None:
    assert decode_paths(pa.array([raw], pa.string()), root).to_pylist() == [expected]


def test_decode_many_keeps_order_and_vectorised_rows() -> None:
    raw = pa.chunked_array([["a.parquet", "b%20c.parquet"], [None, "file:/r/d.parquet", "e"]])
    out = decode_paths(raw, "/r")
    assert out.to_pylist() == ["a.parquet", "b c.parquet", None, "d.parquet", "e"]
    assert out.type == pa.string()


def test_path_cases_ran() -> None:
    assert len(CASES) == 25


def test_a_remove_reconciles_with_an_add_spelt_otherwise(tmp_path: Path) -> None:
    root = tmp_path / "t"
    (root / "_delta_log").mkdir(parents=True)
    pq.write_table(pa.table({"i": pa.array([1], pa.int64())}), root / "a.parquet")
    pq.write_table(pa.table({"i": pa.array([2], pa.int64())}), root / "b.parquet")
    schema = {
        "type": "struct",
        "fields": [{"name": "i", "type": "long", "nullable": True, "metadata": {}}],
    }

    def add(path: str) -> dict[str, Any]:
        return {
            "add": {
                "path": path,
                "partitionValues": {},
                "size": 1,
                "modificationTime": 0,
                "dataChange": True,
            }
        }

    commits = [
        [
            {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
            {
                "metaData": {
                    "id": "t",
                    "format": {"provider": "parquet", "options": {}},
                    "schemaString": json.dumps(schema),
                    "partitionColumns": [],
                    "configuration": {},
                }
            },
            add("./a.parquet"),
            add("b.parquet"),
        ],
        [
            {"remove": {"path": "a.parquet", "deletionTimestamp": 1, "dataChange": True}},
            add(".//b.parquet"),
        ],
    ]
    for version, actions in enumerate(commits):
        text = "\n".join(json.dumps(a) for a in actions) + "\n"
        (root / "_delta_log" / f"{version:020d}.json").write_text(text)
    table = lakecore.open(str(root))
    assert table.snapshot().files().column("path").to_pylist() == ["b.parquet"]
    assert table.to_arrow().column("i").to_pylist() == [2]
