"""Generated columns: computed on write, verified when given, recomputed on update."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

import lakecore
from lakecore.errors import ConstraintViolationError

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("ts", pa.timestamp("us", tz="UTC")),
        pa.field("day", pa.date32(), metadata={"delta.generationExpression": "CAST(ts AS DATE)"}),
        pa.field("id2", pa.int64(), metadata={"delta.generationExpression": "id * 2"}),
    ]
)
T0 = dt.datetime(2024, 6, 1, 23, 30, tzinfo=dt.timezone.utc)


@pytest.fixture
def table(tmp_path: Path) -> lakecore.Table:
    return lakecore.create(str(tmp_path / "t"), SCHEMA, partition_by=["day"])


def test_generated_columns_are_computed_and_declared(table: lakecore.Table) -> None:
    table.append(pa.table({"id": [1, 2], "ts": pa.array([T0, T0 + dt.timedelta(hours=1)])}))
    rows = sorted(table.to_arrow().to_pylist(), key=lambda r: r["id"])
    assert [r["day"] for r in rows] == [dt.date(2024, 6, 1), dt.date(2024, 6, 2)]
    assert [r["id2"] for r in rows] == [2, 4]
    snap = table.snapshot()
    assert "generatedColumns" in snap.features.writer_features
    deltalake = pytest.importorskip("deltalake")
    theirs = deltalake.DeltaTable(table.uri)
    fields = {f.name: f for f in theirs.schema().fields}
    assert fields["id2"].metadata["delta.generationExpression"] == "id * 2"


def test_given_values_must_match(table: lakecore.Table) -> None:
    table.append(pa.table({"id": [1], "ts": pa.array([T0]), "id2": [2]}))
    with pytest.raises(ConstraintViolationError, match="id2"):
        table.append(pa.table({"id": [1], "ts": pa.array([T0]), "id2": [3]}))
    assert table.to_arrow().num_rows == 1


def test_update_recomputes(table: lakecore.Table) -> None:
    table.append(pa.table({"id": [1, 2], "ts": pa.array([T0, T0])}))
    table.update({"id": "id + 10"}, "id = 1")
    rows = sorted(table.to_arrow().to_pylist(), key=lambda r: r["id"])
    assert [(r["id"], r["id2"]) for r in rows] == [(2, 4), (11, 22)]
