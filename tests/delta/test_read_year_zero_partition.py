"""A partition value Arrow holds but Python's ``datetime`` cannot (a date of year 0) is read
without converting it to Python: the Delta reader fills partition columns from the file
index's Arrow scalars."""

from __future__ import annotations

import pyarrow as pa

import lakecore

from .builders import DeltaTableBuilder, field

YEAR_0_DAYS = -719_528
"""Days from 1970-01-01 back to 0000-01-01 (proleptic Gregorian)."""


def _table(builder: DeltaTableBuilder) -> lakecore.Table:
    builder.init([field("i", "long"), field("p", "date")], partition_columns=["p"])
    rows = pa.table({"i": pa.array([1, 2], pa.int64())})
    builder.commit(
        1, builder.data_file("p=0000-01-01/x.parquet", rows, partition_values={"p": "0000-01-01"})
    )
    return lakecore.open(builder.uri)


def test_a_year_0_date_partition_reads(builder: DeltaTableBuilder) -> None:
    got = _table(builder).to_arrow()
    assert got.column("i").to_pylist() == [1, 2]
    assert got.column("p").cast(pa.int32()).to_pylist() == [YEAR_0_DAYS, YEAR_0_DAYS]


def test_projection_and_batches_of_a_year_0_partition(builder: DeltaTableBuilder) -> None:
    table = _table(builder)
    only = table.to_arrow(columns=["p"])
    assert only.column("p").cast(pa.int32()).to_pylist() == [YEAR_0_DAYS, YEAR_0_DAYS]
    assert sum(b.num_rows for b in table.scan().to_batches(batch_size=1)) == 2
