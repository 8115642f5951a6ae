"""Decimal columns Parquet cannot store (a scale below 0 or above the precision) are refused
when the table is created, naming the column, before anything is written."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import lakecore
from lakecore.errors import SchemaError


@pytest.mark.parametrize("t", [pa.decimal128(5, -2), pa.struct([("d", pa.decimal128(5, -1))])])
def test_a_negative_scale_is_refused_at_create(tmp_path: Path, t: pa.DataType) -> None:
    with pytest.raises(SchemaError, match=r"scale outside 0\.\.precision"):
        lakecore.create(str(tmp_path / "t"), pa.schema([("x", t)]))
    assert not (tmp_path / "t" / "_delta_log").exists() or not any(
        (tmp_path / "t" / "_delta_log").iterdir()
    )


def test_a_negative_scale_column_added_by_schema_evolution_is_refused(tmp_path: Path) -> None:
    table = lakecore.create(str(tmp_path / "t"), pa.schema([("i", pa.int64())]))
    data = pa.table({"i": [1], "x": pa.array([None], pa.decimal128(5, -2))})
    with pytest.raises(SchemaError, match="'x'"):
        table.append(data, schema_mode="merge")
    assert table.version == 0
