"""Proleptic Gregorian day numbers of any year, where Python's ``datetime`` stops at 1..9999.

Arrow dates and timestamps count days (microseconds) since 1970-01-01 in the proleptic
Gregorian calendar and hold year 0, negative years and years past 9999, which Python's
``datetime`` cannot. Hive partition texts (and Delta's ``{year}-{month}-{day}``) spell
four-digit years only: the days from ``YEAR_0_DAY`` (``0000-01-01``) up to, not including,
``YEAR_10000_DAY`` (``10000-01-01``); delta-rs writes other years with a sign
(``-0001-12-31``, ``+10000-01-01``), which readers compute with ``days_from_civil``.
"""

from __future__ import annotations

import calendar

DAY_US = 86_400_000_000
"""Microseconds in a day (timestamps ignore leap seconds, as Arrow's do)."""

_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def month_days(year: int, month: int) -> int:
    """The number of days of ``month`` (1..12) of ``year`` (any year, 0 and negative ones
    included: ``calendar.monthrange`` needs a ``datetime`` year, ``calendar.isleap`` does not)."""
    return 29 if month == 2 and calendar.isleap(year) else _MONTH_DAYS[month - 1]


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date of any year (H. Hinnant's method).

    ``month`` must be 1..12 and ``day`` 1..``month_days(year, month)``: other values are not
    checked and give the day number of no date.
    """
    y = year - (month <= 2)
    era = y // 400  # floor division: the era of negative years too
    yoe = y - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146_097 + doe - 719_468


YEAR_0_DAY = days_from_civil(0, 1, 1)
"""0000-01-01 (-719528): the first day with a four-digit year."""
YEAR_10000_DAY = days_from_civil(10_000, 1, 1)
"""10000-01-01 (2932897): the first day after the four-digit years."""
