"""A partition value Arrow holds but Python's ``datetime`` cannot (a date of year 0) is read
without converting it to Python: the Delta reader fills partition columns from the file
index's Arrow scalars."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import lakecore

YEAR_0_DAYS = -719_528
"""Days from 1970-01-01 back to 0000-01-01 (proleptic Gregorian)."""


def _table(root: Path) -> str:
    (root / "_delta_log").mkdir(parents=True)
    (root / "p=0000-01-01").mkdir()
    pq.write_table(
        pa.table({"i": pa.array([1, 2], pa.int64())}), root / "p=0000-01-01" / "x.parquet"
    )
    schema = {
        "type": "struct",
        "fields": [
            {"name": "i", "type": "long", "nullable": True, "metadata": {}},
            {"name": "p", "type": "date", "nullable": True, "metadata": {}},
        ],
    }
    size = (root / "p=0000-01-01" / "x.parquet").stat().st_size
    actions = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {
            "metaData": {
                "id": "t",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(schema),
                "partitionColumns": ["p"],
                "configuration": {},
            }
        },
        {
            "add": {
                "path": "p=0000-01-01/x.parquet",
                "partitionValues": {"p": "0000-01-01"},
                "size": size,
                "modificationTime": 0,
                "dataChange": True,
            }
        },
    ]
    log = "\n".join(json.dumps(a) for a in actions) + "\n"
    (root / "_delta_log" / "00000000000000000000.json").write_text(log)
    return str(root)


def test_a_year_0_date_partition_reads(tmp_path: Path) -> None:
    got = lakecore.open(_table(tmp_path / "t")).to_arrow()
    assert got.column("i").to_pylist() == [1, 2]
    days = got.column("p").cast(pa.int32()).to_pylist()
    assert days == [YEAR_0_DAYS, YEAR_0_DAYS]


def test_projection_and_batches_of_a_year_0_partition(tmp_path: Path) -> None:
    table = lakecore.open(_table(tmp_path / "t"))
    only = table.to_arrow(columns=["p"])
    assert only.column("p").cast(pa.int32()).to_pylist() == [YEAR_0_DAYS, YEAR_0_DAYS]
    rows = sum(b.num_rows for b in table.scan().to_batches(batch_size=1))
    assert rows == 2
