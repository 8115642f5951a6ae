"""Hive partition paths: typed values to ``col=value`` directories and back (one module)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from zoneinfo import ZoneInfo

import pyarrow as pa
import pytest

from lakecore.errors import SchemaError, UnsupportedFeatureError
from lakecore.model.partition_paths import (
    HIVE_NULL,
    escape_path_name,
    parse_partition_path,
    parse_value,
    partition_path,
    partition_segment,
    partition_text,
    split_segment,
    unescape_path_name,
)

UTC = dt.timezone.utc

TYPED = [
    ("eu", pa.string(), "eu"),
    (HIVE_NULL, pa.string(), None),
    (HIVE_NULL, pa.int32(), None),
    ("-12", pa.int64(), -12),
    ("true", pa.bool_(), True),
    ("1.0E-5", pa.float64(), 1e-5),
    ("-0.0", pa.float64(), -0.0),
    ("Infinity", pa.float32(), float("inf")),
    ("123.450", pa.decimal128(10, 3), Decimal("123.450")),
    ("0001-01-01", pa.date32(), dt.date(1, 1, 1)),
    ("2024-01-02 03:04:05", pa.timestamp("us"), dt.datetime(2024, 1, 2, 3, 4, 5)),
    ("2024-01-02 03:04:05.5", pa.timestamp("us"), dt.datetime(2024, 1, 2, 3, 4, 5, 500000)),
    (
        "2024-01-02 03:04:05.000001",
        pa.timestamp("us", "UTC"),
        dt.datetime(2024, 1, 2, 3, 4, 5, 1, tzinfo=UTC),
    ),
]


def test_typed_case_count() -> None:
    assert len(TYPED) == 13


@pytest.mark.parametrize(("text", "t", "value"), TYPED)
def test_values_parse_typed(text: str, t: pa.DataType, value: object) -> None:
    got = parse_value(text, t)
    assert got == value and type(got) is type(value)


ROUND_TRIPS = [
    ("a/b=c%d", pa.string()),
    ("x y #?é\x01{[]^*'\"\\:", pa.string()),
    (None, pa.string()),
    (True, pa.bool_()),
    (-7, pa.int16()),
    (2.5, pa.float64()),
    (Decimal("-0.010"), pa.decimal128(5, 3)),
    (dt.date(1582, 10, 4), pa.date32()),
    (dt.datetime(2024, 7, 1, 12, 34, 56, 123456), pa.timestamp("us")),
    (dt.datetime(1900, 1, 1, tzinfo=UTC), pa.timestamp("us", "UTC")),
]


@pytest.mark.parametrize(("value", "t"), ROUND_TRIPS)
def test_render_then_parse_is_the_value(value: object, t: pa.DataType) -> None:
    field = pa.field("col=x/y", t)
    path = partition_path([field.name], [value])
    assert "/" not in path  # one directory level, whatever the value
    assert parse_partition_path(path, [field]) == {field.name: value}


def test_round_trip_count() -> None:
    assert len(ROUND_TRIPS) == 10


def test_hive_rendering() -> None:
    assert partition_text(dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=ZoneInfo("Europe/Paris"))) == (
        "2024-01-02 02:04:05.000000"
    )
    assert partition_text(Decimal("1E+2")) == "100"
    assert partition_text(False) == "false"
    assert partition_segment("a", "") == f"a={HIVE_NULL}"  # Spark writes "" as null
    assert partition_segment("a", "x/y", escape=False) == "a=x/y"  # Hudi, no URL encoding
    assert escape_path_name("a/b=c%d") == "a%2Fb%3Dc%25d"
    assert unescape_path_name("a%2Fb%3Dc%25d") == "a/b=c%d"
    assert split_segment(f"day={HIVE_NULL}") == ("day", None)
    with pytest.raises(ValueError):
        split_segment("no-equals-sign")


def test_timestamps_are_read_in_the_given_time_zone() -> None:
    ny = ZoneInfo("America/New_York")
    t = pa.timestamp("us", "UTC")
    assert parse_value("2024-07-01 08:00:00", t, ny) == dt.datetime(2024, 7, 1, 12, tzinfo=UTC)
    with pytest.raises(UnsupportedFeatureError, match="two instants"):
        parse_value("2024-11-03 01:30:00", t, ny)  # shown twice at the DST fall-back
    # Without a time zone the value is the wall clock, whatever the zone.
    assert parse_value("2024-11-03 01:30:00", pa.timestamp("us"), ny) == dt.datetime(
        2024, 11, 3, 1, 30
    )


def test_bad_values_and_paths_raise() -> None:
    with pytest.raises(ValueError):
        parse_value("yes", pa.bool_())
    with pytest.raises(ValueError):
        parse_value("2024-01-01T00:00:00", pa.timestamp("us"))
    with pytest.raises(ValueError, match="finer"):
        parse_value("2024-01-01 00:00:00.0000001", pa.timestamp("us"))
    with pytest.raises(SchemaError):
        parse_value("00", pa.binary())
    fields = [pa.field("region", pa.string()), pa.field("day", pa.date32())]
    assert parse_partition_path(f"day={HIVE_NULL}/region=x", fields) == {
        "region": "x",
        "day": None,
    }
    for bad in ("region=x", "region=x/day=2024-01-01/extra=1", "region=x/region=y", "x/y"):
        with pytest.raises(ValueError):
            parse_partition_path(bad, fields)
