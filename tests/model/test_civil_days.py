"""Proleptic Gregorian day numbers of any year (``lakecore.model.civil_days``): the one
calendar the Delta reader of signed-year partition values and the partition renderer's year
bounds share."""

from __future__ import annotations

import datetime as dt
import random

import pyarrow as pa

from lakecore.model.civil_days import (
    DAY_US,
    YEAR_0_DAY,
    YEAR_10000_DAY,
    days_from_civil,
    month_days,
)


def test_bounds_of_the_four_digit_years() -> None:
    assert (YEAR_0_DAY, YEAR_10000_DAY) == (-719_528, 2_932_897)
    assert DAY_US == 24 * 3600 * 10**6
    assert (dt.date(9999, 12, 31) - dt.date(1970, 1, 1)).days == YEAR_10000_DAY - 1


def test_days_agree_with_python_and_arrow() -> None:
    """Python where it holds the date; Arrow's calendar (its date text) for every four-digit
    year, year 0 included."""
    epoch = dt.date(1970, 1, 1)
    rng = random.Random(5)
    days, texts = [], []
    for _ in range(2_000):
        d = dt.date.fromordinal(rng.randint(1, dt.date.max.toordinal()))
        assert days_from_civil(d.year, d.month, d.day) == (d - epoch).days
        y, m = rng.randint(0, 9999), rng.randint(1, 12)
        day = rng.randint(1, month_days(y, m))
        days.append(days_from_civil(y, m, day))
        texts.append(f"{y:04d}-{m:02d}-{day:02d}")
    arrow = pa.array(days, pa.int32()).cast(pa.date32()).cast(pa.string()).to_pylist()
    assert arrow == texts
    assert len(texts) == 2_000


def test_negative_years_follow_the_400_year_cycle() -> None:
    ran = 0
    for year in range(-2_000, 1):
        for month, day in ((1, 1), (2, month_days(year, 2)), (12, 31)):
            later = days_from_civil(year + 400, month, day)
            assert days_from_civil(year, month, day) == later - 146_097, (year, month)
            ran += 1
    assert ran == 2_001 * 3
    assert days_from_civil(-1, 12, 31) == YEAR_0_DAY - 1
    assert days_from_civil(-400, 2, 29) == -865_566


def test_month_lengths_make_the_year() -> None:
    assert [month_days(y, 2) for y in (0, -4, -100, -400, 1900, 2000, 2024, 2023)] == [
        29,
        29,
        28,
        29,
        28,
        29,
        29,
        28,
    ]
    ran = 0
    for year in range(-800, 2_401):
        length = days_from_civil(year + 1, 1, 1) - days_from_civil(year, 1, 1)
        assert sum(month_days(year, m) for m in range(1, 13)) == length, year
        ran += 1
    assert ran == 3_201
