"""``lakecore.spark.write``: the Delta writer writes the files in Spark tasks, lakecore commits;
lakecore and delta-rs read back exactly the DataFrame's rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark", reason="needs pyspark (pip install 'lakecore[spark]')")

from lakecore_delta.write.stats_out import stats_json

import lakecore
import lakecore.spark
from lakecore.errors import (
    ConstraintViolationError,
    InvalidArgumentError,
    PredicateError,
    SchemaError,
    UnsupportedFeatureError,
)
from lakecore.spark.session import temporary_conf

from .helpers import rows, to_arrow

pytestmark = pytest.mark.spark

ALL_TYPES_SQL = """
select
  id,
  cast(id % 3 as string) as region,
  date_add(date'2024-02-28', cast(id % 4 as int)) as day,
  cast(id as tinyint) as b,
  cast(id * 7 as smallint) as sh,
  cast(id - 5 as int) as i,
  cast(id as float) / 8 as f,
  cast(id as double) / 3 as x,
  cast(id * 1000 + 0.125 as decimal(12, 3)) as dec,
  cast(-id as decimal(38, 10)) as wide,
  case when id % 4 = 1 then null else concat('name-', id, repeat('x', cast(id as int) * 3)) end
    as name,
  cast(concat('bin', id) as binary) as bin,
  id % 2 = 0 as flag,
  timestamp'2024-03-10 01:59:59.999999' + make_interval(0, 0, 0, 0, 0, 0, id * 1800) as ts,
  timestamp_ntz'0001-01-01 00:00:00' + make_interval(id * 300, 0, 0, 0, 0, 0, 0.5) as ntz,
  date'1582-10-04' - cast(id as int) as old_day,
  named_struct('a', id, 'b', case when id = 3 then null else cast(id as string) end) as st,
  case when id = 2 then null else array(id, null, id + 1) end as arr,
  map('k', id, 'l', null) as m
from range(24)
"""


def _df(spark: Any) -> Any:
    return spark.sql(ALL_TYPES_SQL).repartition(3)


def _delta_rs_rows(corpus: Path, uri: str) -> list[str]:
    import deltalake

    return rows(corpus, deltalake.DeltaTable(uri).to_pyarrow_table())


def _leftovers(root: Path, table: lakecore.Table) -> set[str]:
    """Data files under ``root`` that the table does not reference."""
    referenced = set(table.snapshot().files().column("path").to_pylist())
    found = {
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and "_delta_log" not in p.parts
    }
    return found - referenced


def test_round_trip_every_type(spark: Any, corpus: Path, tmp_path: Path) -> None:
    df = _df(spark)
    version = lakecore.spark.write(df, str(tmp_path)).version
    assert version == 1
    table = lakecore.open(str(tmp_path))
    expected = rows(corpus, to_arrow(df))
    assert rows(corpus, table.to_arrow()) == expected
    assert _delta_rs_rows(corpus, str(tmp_path)) == expected
    assert table.snapshot().schema.names == df.columns
    assert table.history(limit=1)[0].operation == "WRITE"
    assert not _leftovers(tmp_path, table)  # no _SUCCESS, no .crc files


def test_stats_are_what_lakecore_s_writer_computes(spark: Any, tmp_path: Path) -> None:
    df = spark.sql(ALL_TYPES_SQL).drop("arr", "m").repartition(2)
    lakecore.spark.write(df, str(tmp_path), partition_by=["region"])
    table = lakecore.open(str(tmp_path))
    schema = table.snapshot().schema
    data_fields = [f for f in schema if f.name != "region"]
    log = (tmp_path / "_delta_log" / "00000000000000000001.json").read_text().splitlines()
    adds = [json.loads(line)["add"] for line in log if '"add"' in line]
    assert len(adds) == table.snapshot().files().num_rows >= 3
    for add in adds:
        data = pq.read_table(tmp_path / add["path"]).cast(
            pa.schema([pa.field(f.name, f.type) for f in data_fields])
        )
        assert json.loads(add["stats"]) == json.loads(stats_json(data, data_fields)), add["path"]


def test_stats_prune_and_scan(spark: Any, tmp_path: Path) -> None:
    df = spark.range(0, 1000).selectExpr("id", "cast(id as string) as s")
    lakecore.spark.write(df.repartitionByRange(4, "id"), str(tmp_path))
    table = lakecore.open(str(tmp_path))
    scan = table.scan("id = 123")
    assert scan.explain().files_after_stats_pruning < scan.explain().files_total
    assert scan.to_arrow().column("s").to_pylist() == ["123"]


def test_nan_drops_float_bounds(spark: Any, tmp_path: Path) -> None:
    df = spark.sql("select * from values (1.0D, 1), (cast('NaN' as double), 2) as t(x, id)")
    lakecore.spark.write(df.coalesce(1), str(tmp_path))
    (stats,) = lakecore.open(str(tmp_path)).snapshot().files().column("max").to_pylist()
    assert stats["x"] is None and stats["id"] == 2
    assert lakecore.open(str(tmp_path)).scan("x > 5").to_arrow().num_rows == 0


def test_append_twice_then_overwrite(spark: Any, corpus: Path, tmp_path: Path) -> None:
    uri = str(tmp_path)
    first = spark.range(0, 10).selectExpr("id", "id * 2 as double_id")
    second = spark.range(10, 15).selectExpr("id", "id * 2 as double_id")
    assert lakecore.spark.write(first, uri).version == 1
    assert lakecore.spark.write(second, uri, mode="append").version == 2
    both = rows(corpus, to_arrow(first.union(second)))
    assert rows(corpus, lakecore.open(uri).to_arrow()) == both
    assert _delta_rs_rows(corpus, uri) == both
    third = spark.range(100, 103).selectExpr("id", "id * 2 as double_id")
    assert lakecore.spark.write(third, uri, mode="overwrite").version == 3
    assert rows(corpus, lakecore.open(uri).to_arrow()) == rows(corpus, to_arrow(third))
    assert _delta_rs_rows(corpus, uri) == rows(corpus, to_arrow(third))
    assert rows(corpus, lakecore.open(uri).to_arrow(version=2)) == both  # time travel


PARTITION_SQL = """
select * from values
  (1, 'eu', date'2024-01-01', 1.5D),
  (2, 'a/b=c%d', date'2024-01-02', 2.5D),
  (3, 'x y #?é', null, 3.5D),
  (4, null, date'1970-01-01', 4.5D),
  (5, 'eu', date'2024-01-01', 5.5D)
as t(id, region, day, x)
"""


def test_partitioned_by_a_string_and_a_date(spark: Any, corpus: Path, tmp_path: Path) -> None:
    uri = str(tmp_path)
    df = spark.sql(PARTITION_SQL)
    assert lakecore.spark.write(df, uri, partition_by=["region", "day"]).version == 1
    table = lakecore.open(uri)
    snapshot = table.snapshot()
    assert snapshot.partition_columns == ("region", "day")
    expected = rows(corpus, to_arrow(df))
    assert rows(corpus, table.to_arrow()) == expected
    assert _delta_rs_rows(corpus, uri) == expected
    assert table.scan("region = 'a/b=c%d'").to_arrow().column("id").to_pylist() == [2]
    assert table.scan("day IS NULL").explain().files_after_partition_pruning == 1
    # Appending keeps the table's partitioning; a different one is refused.
    assert lakecore.spark.write(df.limit(1), uri).version == 2
    with pytest.raises(SchemaError, match="partitioned by"):
        lakecore.spark.write(df, uri, partition_by=["day"])


def test_overwrite_where_replaces_matching_rows(spark: Any, corpus: Path, tmp_path: Path) -> None:
    uri = str(tmp_path)
    df = spark.sql(PARTITION_SQL).drop("day")
    lakecore.spark.write(df, uri, partition_by=["region"])
    new = spark.sql("select * from values (10, 'eu', 0.5D) as t(id, region, x)")
    assert lakecore.spark.write(new, uri, mode="overwrite", where="region = 'eu'").version == 2
    ids = sorted(lakecore.open(uri).to_arrow().column("id").to_pylist())
    assert ids == [2, 3, 4, 10]
    assert sorted(r.split('"id":')[1].split(",")[0] for r in _delta_rs_rows(corpus, uri)) == [
        "10",
        "2",
        "3",
        "4",
    ]
    # A row outside the predicate is refused and nothing is left behind.
    bad = spark.sql("select * from values (11, 'us', 0.5D) as t(id, region, x)")
    dirs = _old_dirs(tmp_path)
    with pytest.raises(ConstraintViolationError, match="where"):
        lakecore.spark.write(bad, uri, mode="overwrite", where="region = 'eu'")
    assert lakecore.open(uri).version == 2
    assert _old_dirs(tmp_path) == dirs


def _old_dirs(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.startswith("write-"))


def test_failed_writes_leave_no_files(spark: Any, tmp_path: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("x", pa.float64())])
    table = lakecore.create(str(tmp_path), schema)
    df = spark.sql("select * from values (1L, 1.0D), (null, 2.0D) as t(id, x)")
    with pytest.raises(ConstraintViolationError, match="NOT NULL"):
        lakecore.spark.write(df, str(tmp_path))
    assert table.version == 0
    assert _old_dirs(tmp_path) == []
    ok = spark.sql("select * from values (1L, 1.0D) as t(id, x)")
    assert lakecore.spark.write(ok, str(tmp_path)).version == 1


def test_check_constraints_are_enforced(spark: Any, tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64())])
    table = lakecore.create(
        str(tmp_path), schema, properties={"delta.constraints.positive": "id > 0"}
    )
    with pytest.raises(ConstraintViolationError, match="positive"):
        lakecore.spark.write(spark.range(-1, 2), str(tmp_path))
    assert table.version == 0 and _old_dirs(tmp_path) == []
    assert lakecore.spark.write(spark.range(1, 3), str(tmp_path)).version == 1


def test_append_only_tables_refuse_overwrite(spark: Any, tmp_path: Path) -> None:
    lakecore.create(
        str(tmp_path), pa.schema([("id", pa.int64())]), properties={"delta.appendOnly": "true"}
    )
    assert lakecore.spark.write(spark.range(3), str(tmp_path)).version == 1
    with pytest.raises(ConstraintViolationError, match="append-only"):
        lakecore.spark.write(spark.range(3), str(tmp_path), mode="overwrite")
    assert len(_old_dirs(tmp_path)) == 1


def test_schema_must_match(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path)
    lakecore.spark.write(spark.sql("select 1L as id, 'a' as s"), uri)
    for sql, message in [
        ("select 1L as id", "missing column"),
        ("select 1L as id, 'a' as s, 2 as extra", "not in the table"),
        ("select 1 as id, 'a' as s", "'id' is int"),
        ("select 1L as id, 'a' as s, 2 as s", "duplicate"),
    ]:
        with pytest.raises(SchemaError, match=message):
            lakecore.spark.write(spark.sql(sql), uri)
    # Column order does not matter; names and types do.
    assert lakecore.spark.write(spark.sql("select 'b' as s, 2L as id"), uri).version == 2
    assert sorted(lakecore.open(uri).to_arrow().column("s").to_pylist()) == ["a", "b"]
    assert len(_old_dirs(tmp_path)) == 2


def test_bad_arguments_fail_before_writing(spark: Any, tmp_path: Path) -> None:
    df = spark.range(3)
    with pytest.raises(InvalidArgumentError, match="mode"):
        lakecore.spark.write(df, str(tmp_path), mode="upsert")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="overwrite"):
        lakecore.spark.write(df, str(tmp_path), where="id > 1")
    with pytest.raises(SchemaError, match="not in the DataFrame"):
        lakecore.spark.write(df, str(tmp_path), partition_by=["nope"])
    with pytest.raises(SchemaError, match="cannot be partition columns"):
        lakecore.spark.write(
            df.selectExpr("id", "cast('x' as binary) as b"), str(tmp_path), partition_by=["b"]
        )
    with pytest.raises(PredicateError):
        lakecore.spark.write(df, str(tmp_path), mode="overwrite", where="id >>> 1")
    with pytest.raises(SchemaError, match="cannot store"):
        lakecore.spark.write(df.selectExpr("id", "interval 1 day as i"), str(tmp_path))
    with pytest.raises(UnsupportedFeatureError, match="memory"):
        lakecore.spark.write(df, "memory://lakecore-spark-write")
    assert not any(tmp_path.iterdir())


def test_column_mapped_tables_are_written(spark: Any, tmp_path: Path) -> None:
    # Refused while Spark's Parquet writer wrote the files (it knows only logical names); the
    # Delta writer in the tasks writes physical names (more in test_write_formats.py).
    lakecore.create(
        str(tmp_path),
        pa.schema([("id", pa.int64())]),
        properties={"delta.columnMapping.mode": "name"},
    )
    assert lakecore.spark.write(spark.range(3), str(tmp_path)).version == 1
    assert sorted(lakecore.open(str(tmp_path)).to_arrow().column("id").to_pylist()) == [0, 1, 2]
    assert len(_old_dirs(tmp_path)) == 1


def test_empty_dataframe(spark: Any, tmp_path: Path) -> None:
    uri = str(tmp_path)
    lakecore.spark.write(spark.range(5), uri)
    assert lakecore.spark.write(spark.range(0), uri).version == 1  # nothing to commit
    assert lakecore.open(uri).to_arrow().num_rows == 5
    assert lakecore.spark.write(spark.range(0), uri, mode="overwrite").version == 2
    assert lakecore.open(uri).to_arrow().num_rows == 0


def test_timestamp_partitions_in_any_session_time_zone(
    spark: Any, corpus: Path, tmp_path: Path
) -> None:
    sql = """select * from values
        (1, timestamp'2024-01-01 00:00:00', timestamp_ntz'2024-01-01 00:00:00.5'),
        (2, timestamp'2024-07-01 12:34:56.123456', timestamp_ntz'1900-12-31 23:59:59'),
        (3, null, null)
      as t(id, ts, ntz)"""
    for zone, name in (("UTC", "utc"), ("America/New_York", "ny"), ("+05:30", "offset")):
        uri = str(tmp_path / name)
        with temporary_conf(spark, {"spark.sql.session.timeZone": zone}):
            df = spark.sql(sql)
            lakecore.spark.write(df, uri, partition_by=["ts", "ntz"])
            expected = rows(corpus, to_arrow(df))
        assert rows(corpus, lakecore.open(uri).to_arrow()) == expected, zone
        assert _delta_rs_rows(corpus, uri) == expected, zone


def test_session_confs_are_restored(spark: Any, tmp_path: Path) -> None:
    key = "spark.sql.parquet.outputTimestampType"
    unset = "spark.sql.parquet.datetimeRebaseModeInWrite"
    assert spark.conf.get(unset, None) is None
    with temporary_conf(spark, {key: "INT96"}):
        lakecore.spark.write(spark.sql("select current_timestamp() as ts"), str(tmp_path))
        assert spark.conf.get(key) == "INT96"  # the user's setting is back ...
    assert spark.conf.get(key, None) is None  # ... and gone with the block
    assert spark.conf.get(unset, None) is None
    (path,) = lakecore.open(str(tmp_path)).snapshot().files().column("path").to_pylist()
    column = pq.ParquetFile(tmp_path / path).schema.column(0)
    assert column.physical_type == "INT64"  # the file has microseconds all the same


def test_a_new_table_is_nullable_and_readable_by_spark(
    spark: Any, corpus: Path, tmp_path: Path
) -> None:
    df = spark.range(4).selectExpr("id", "named_struct('a', id) as s")
    assert not df.schema["id"].nullable
    lakecore.spark.write(df, str(tmp_path))
    schema = lakecore.open(str(tmp_path)).snapshot().schema
    assert schema.field("id").nullable and schema.field("s").type.field(0).nullable
    back = lakecore.spark.read(spark, str(tmp_path))
    assert rows(corpus, to_arrow(back)) == rows(corpus, to_arrow(df))
