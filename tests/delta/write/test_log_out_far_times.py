"""Stats bounds Python cannot take are left out of the log; every bound it can take is kept."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
from lakecore_delta.write.log_out import _far_times_nulled

FIRST = dt.datetime(1, 1, 1, 0, 0, 0, 500_000)
LAST = dt.datetime(9999, 12, 31, 23, 59, 59, 999_999)


@pytest.mark.parametrize("tz", [None, "UTC"])
def test_the_ends_of_python_s_range_are_kept_without_a_zone_or_in_utc(tz: str | None) -> None:
    values = pa.array([FIRST, LAST, None], pa.timestamp("us"))
    if tz is not None:
        values = values.cast(pa.timestamp("us", tz=tz))
    assert _far_times_nulled(values).equals(values)


def test_dates_at_the_ends_are_kept() -> None:
    dates = pa.array([dt.date(1, 1, 1), dt.date(9999, 12, 31)], pa.date32())
    assert _far_times_nulled(dates).to_pylist() == [dt.date(1, 1, 1), dt.date(9999, 12, 31)]


def test_past_the_range_or_a_day_from_it_in_another_zone_is_unknown() -> None:
    after = pa.array([253_402_300_800 * 1_000_000], pa.int64()).cast(pa.timestamp("us"))
    assert _far_times_nulled(after).to_pylist() == [None]
    zoned = pa.array([FIRST, LAST, dt.datetime(2024, 1, 1)], pa.timestamp("us"))
    zoned = zoned.cast(pa.timestamp("us", tz="America/New_York"))
    assert _far_times_nulled(zoned).null_count == 2
    assert _far_times_nulled(zoned).to_pylist()[2] is not None
