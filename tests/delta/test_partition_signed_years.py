"""Partition values of years outside 0000..9999, as delta-rs writes them (``+10000-01-01``,
``-0001-12-31``): read as the dates and timestamps they spell."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import deltalake
import pyarrow as pa
import pytest
from lakecore_delta.partitions import parse_partition_strings

import lakecore
from lakecore.errors import CorruptTableError
from lakecore.model.civil_days import days_from_civil

_DAY_US = 86_400_000_000
# +10000-01-01, -0001-12-31, 1970-01-01, 0000-01-01, -0400-02-29 (a leap day)
_DAYS = [2_932_897, -719_529, 0, -719_528, -865_566]


@pytest.mark.parametrize("column", ["d", "ts"])
def test_signed_years_written_by_delta_rs_read_back(tmp_path: Path, column: str) -> None:
    days = pa.array(_DAYS, pa.int32()).cast(pa.date32())
    micros = [d * _DAY_US + k * 1_000_001 for k, d in enumerate(_DAYS)]
    ts = pa.array(micros, pa.int64()).cast(pa.timestamp("us", "UTC"))
    data = pa.table({"i": pa.array(range(len(_DAYS)), pa.int64()), "d": days, "ts": ts})
    uri = str(tmp_path / "t")
    deltalake.write_deltalake(uri, data, partition_by=[column])
    got = lakecore.open(uri).to_arrow().sort_by("i")
    # As integers: Python's datetime cannot hold these values.
    assert got.column(column).type == data.schema.field(column).type
    as_int = pa.int32() if column == "d" else pa.int64()
    assert got.column(column).cast(as_int).to_pylist() == (_DAYS if column == "d" else micros)


def test_days_from_civil_agrees_with_python_where_python_holds_the_date() -> None:
    epoch = dt.date(1970, 1, 1)
    rng = random.Random(7)
    ran = 0
    for _ in range(2_000):
        d = dt.date.fromordinal(rng.randint(1, dt.date.max.toordinal()))
        assert days_from_civil(d.year, d.month, d.day) == (d - epoch).days
        ran += 1
    assert ran == 2_000


@pytest.mark.parametrize(
    "text",
    ["+10000-13-01", "+10000-02-30", "-0001-02-29", "+1-01-01", "+10000-01-01x", "-"],
)
def test_a_malformed_signed_year_is_corruption(text: str) -> None:
    field = pa.field("d", pa.date32())
    with pytest.raises(CorruptTableError, match="does not parse"):
        parse_partition_strings(pa.array([text]), field)


def test_a_signed_timestamp_keeps_its_time_of_day() -> None:
    field = pa.field("ts", pa.timestamp("us"))
    out = parse_partition_strings(
        pa.array(["+10000-01-01 12:30:00.000001", "-0001-12-31T23:59:59Z", None]), field
    )
    assert out.cast(pa.int64()).to_pylist() == [
        2_932_897 * _DAY_US + 45_000_000_001,
        -719_529 * _DAY_US + 86_399_000_000,
        None,
    ]
