"""Recovering what Spark wrote: Hive partition values and Delta stats from Parquet footers."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark", reason="needs pyspark (pip install 'lakecore[spark]')")

from lakecore_delta.write.stats_out import stats_json

from lakecore.errors import SchemaError, UnsupportedFeatureError
from lakecore.spark.written import (
    HIVE_NULL,
    footer_stats,
    leaf_columns,
    partition_value,
    partition_values,
    session_zone,
    unescape,
)

pytestmark = pytest.mark.spark
UTC = dt.timezone.utc


@pytest.mark.parametrize(
    ("text", "t", "value"),
    [
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
    ],
)
def test_partition_values_are_typed(text: str, t: pa.DataType, value: object) -> None:
    got = partition_value(text, t, UTC)
    assert got == value and type(got) is type(value)


def test_timestamps_are_read_in_the_session_time_zone() -> None:
    ny = ZoneInfo("America/New_York")
    t = pa.timestamp("us", "UTC")
    assert partition_value("2024-07-01 08:00:00", t, ny) == dt.datetime(2024, 7, 1, 12, tzinfo=UTC)
    assert partition_value("2024-03-10 03:30:00", t, ny) == dt.datetime(
        2024, 3, 10, 7, 30, tzinfo=UTC
    )
    with pytest.raises(UnsupportedFeatureError, match="two instants"):
        partition_value("2024-11-03 01:30:00", t, ny)  # shown twice at the DST fall-back
    # Without a time zone the value is the wall clock, whatever the session's zone.
    assert partition_value("2024-11-03 01:30:00", pa.timestamp("us"), ny) == dt.datetime(
        2024, 11, 3, 1, 30
    )


def test_bad_partition_values_raise() -> None:
    with pytest.raises(ValueError):
        partition_value("yes", pa.bool_(), UTC)
    with pytest.raises(ValueError):
        partition_value("2024-01-01T00:00:00", pa.timestamp("us"), UTC)
    with pytest.raises(ValueError, match="finer"):
        partition_value("2024-01-01 00:00:00.0000001", pa.timestamp("us"), UTC)
    with pytest.raises(SchemaError):
        partition_value("00", pa.binary(), UTC)


def test_session_zones() -> None:
    assert session_zone("UTC") is UTC
    assert session_zone("+05:30").utcoffset(None) == dt.timedelta(hours=5, minutes=30)
    assert session_zone("GMT-8").utcoffset(None) == dt.timedelta(hours=-8)
    assert session_zone("Europe/Paris") == ZoneInfo("Europe/Paris")
    with pytest.raises(UnsupportedFeatureError):
        session_zone("Mars/Olympus")


def test_partition_directories() -> None:
    fields = [pa.field("region", pa.string()), pa.field("day", pa.date32())]
    assert unescape("a%2Fb%3Dc%25d") == "a/b=c%d"
    assert partition_values("region=a%2Fb/day=2024-01-01", fields, UTC) == {
        "region": "a/b",
        "day": dt.date(2024, 1, 1),
    }
    assert partition_values(f"day={HIVE_NULL}/region=x", fields, UTC) == {
        "region": "x",
        "day": None,
    }
    for bad in ("region=x", "region=x/day=2024-01-01/extra=1", "region=x/region=y", "x/y"):
        with pytest.raises(ValueError):
            partition_values(bad, fields, UTC)


def test_leaf_columns_follow_parquet_order() -> None:
    schema = pa.schema(
        [
            ("a", pa.int64()),
            ("l", pa.list_(pa.struct([("x", pa.int8()), ("y", pa.int8())]))),
            ("s", pa.struct([("m", pa.map_(pa.string(), pa.int8())), ("b", pa.string())])),
            ("c", pa.float64()),
        ]
    )
    assert leaf_columns(schema) == {("a",): 0, ("s", "b"): 5, ("c",): 6}


def _write(path: Path, table: pa.Table, **kwargs: object) -> pq.FileMetaData:
    pq.write_table(table, path, **kwargs)
    return pq.ParquetFile(path).metadata


def test_footer_stats_equal_computed_stats(tmp_path: Path) -> None:
    table = pa.table(
        {
            "i": pa.array([3, None, -7, 12], pa.int32()),
            "s": ["b", "a" * 40, None, "zz"],
            "d": pa.array([Decimal("1.50"), None, Decimal("-2.25"), None], pa.decimal128(9, 2)),
            "ts": pa.array([0, 1_700_000_000_123_456, None, 5], pa.timestamp("us", "UTC")),
            "day": pa.array([1, 2, 3, None], pa.date32()),
            "st": pa.array(
                [{"a": 1, "b": None}, None, {"a": 5, "b": "q"}, {"a": None, "b": "r"}],
                pa.struct([("a", pa.int64()), ("b", pa.string())]),
            ),
            "flag": [True, None, False, True],
        }
    )
    # Row groups of one row: bounds and null counts are combined across them.
    metadata = _write(tmp_path / "f.parquet", table, row_group_size=1)
    assert metadata.num_row_groups == 4
    fields = list(table.schema)
    assert json.loads(footer_stats(metadata, fields)) == json.loads(stats_json(table, fields))


def test_unknown_stats_are_left_out(tmp_path: Path) -> None:
    table = pa.table({"x": [1.0, float("nan"), 2.0], "i": [1, 2, 3], "l": [[1], None, []]})
    metadata = _write(tmp_path / "nan.parquet", table)
    stats = json.loads(footer_stats(metadata, list(table.schema)))
    # pyarrow leaves NaN out of float bounds: they cannot tell whether NaN is there.
    assert "x" not in stats["minValues"] and "x" not in stats["maxValues"]
    assert stats["minValues"]["i"] == 1 and stats["nullCount"] == {"x": 0, "i": 0}
    bare = _write(tmp_path / "bare.parquet", table, write_statistics=False)
    stats = json.loads(footer_stats(bare, list(table.schema)))
    assert stats == {"numRecords": 3, "minValues": {}, "maxValues": {}, "nullCount": {}}


def test_all_null_row_groups_keep_the_other_bounds(tmp_path: Path) -> None:
    table = pa.table({"i": pa.array([None, None, 4, 9], pa.int64())})
    metadata = _write(tmp_path / "f.parquet", table, row_group_size=2)
    stats = json.loads(footer_stats(metadata, list(table.schema)))
    assert stats["minValues"] == {"i": 4} and stats["maxValues"] == {"i": 9}
    assert stats["nullCount"] == {"i": 2}
