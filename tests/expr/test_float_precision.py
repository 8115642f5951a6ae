"""FLOAT columns compare with fractional literals in double precision, as Spark compares them.

``0.7`` in Spark SQL is a decimal; against a FLOAT column both sides become doubles, so the
stored float32(0.7) = 0.699999988... is below it. Integers and text are cast to FLOAT first.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import lakecore

F32 = float(pa.scalar(0.7, pa.float32()).as_py())
CASES = [
    ("f < 0.7", [F32, 0.5]),
    ("f = 0.7", []),
    ("f >= 0.7", [2.0]),
    ("f IN (0.7, 0.5)", [0.5]),
    ("f = '0.7'", [F32]),
    ("f BETWEEN 0.6 AND 0.7", [F32]),
    ("f > 0", [F32, 0.5, 2.0]),
    ("f = 2", [2.0]),
]


@pytest.fixture
def table(tmp_path: Path) -> lakecore.Table:
    schema = pa.schema([("id", pa.int64()), ("f", pa.float32())])
    table = lakecore.create(str(tmp_path / "t"), schema)
    table.append(pa.table({"id": [1, 2, 3], "f": pa.array([0.7, 0.5, 2.0], pa.float32())}))
    return table


@pytest.mark.parametrize(("where", "expected"), CASES)
def test_scan_and_delete_agree_with_spark_semantics(
    table: lakecore.Table, where: str, expected: list[float]
) -> None:
    scanned = table.scan(where, columns=["f"]).to_arrow().column("f").to_pylist()
    assert sorted(scanned) == sorted(expected)
    before = table.to_arrow().column("f").to_pylist()
    table.delete(where)
    after = table.to_arrow().column("f").to_pylist()
    assert sorted(before) == sorted(after + expected)


def test_case_count() -> None:
    assert len(CASES) == 8
