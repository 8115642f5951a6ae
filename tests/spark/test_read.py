"""``lakecore.spark.read``: where / columns / version / timestamp, empty tables, partitions."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyspark", reason="needs pyspark (pip install 'lakecore[spark]')")

from pyspark.sql import types as st

import lakecore
import lakecore.spark
from lakecore.errors import (
    PredicateError,
    SchemaError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from lakecore.planning.read import reading_columns
from lakecore.spark.read import TASKS_SCHEMA, balanced_chunks, conform_batch, from_ipc, to_ipc
from lakecore.spark.types import spark_arrow_schema

from .helpers import rows, to_arrow

pytestmark = pytest.mark.spark

SCHEMA = pa.schema(
    [
        ("region", pa.string()),
        ("id", pa.int64()),
        ("x", pa.float64()),
        ("ts", pa.timestamp("us", "UTC")),
        ("tags", pa.list_(pa.field("element", pa.string()))),
    ]
)


def _batch(ids: range, region: str) -> pa.Table:
    return pa.table(
        {
            "region": [region] * len(ids),
            "id": list(ids),
            "x": [i / 4 for i in ids],
            "ts": [
                dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(hours=i) for i in ids
            ],
            "tags": [[f"t{i % 3}"] if i % 5 else None for i in ids],
        },
        schema=SCHEMA,
    )


@pytest.fixture(scope="module")
def events(tmp_path_factory: pytest.TempPathFactory) -> lakecore.Table:
    """Versions 1-3: eu 0-9 and us 10-19, then eu 20-29, then us 30-39 (partitioned)."""
    root = tmp_path_factory.mktemp("events")
    table = lakecore.create(str(root), SCHEMA, partition_by=["region"])
    table.append(pa.concat_tables([_batch(range(0, 10), "eu"), _batch(range(10, 20), "us")]))
    table.append(_batch(range(20, 30), "eu"))
    table.append(_batch(range(30, 40), "us"))
    return table


CASES: list[dict[str, Any]] = [
    {},
    {"where": "region = 'eu'"},
    {"where": "id > 25"},  # stats pruning and a residual filter inside files
    {"where": "region = 'us' AND x >= 3.5", "columns": ["x", "id"]},
    {"where": "x < 1 OR id = 39", "columns": ["id"]},  # residual column not returned
    {"columns": ["ts"]},
    {"version": 1},
    {"version": 2, "where": "id IN (1, 3, 22, 25)"},
    {"where": "id > 1000"},  # every file pruned: no task at all
    {"where": "ts >= TIMESTAMP '2024-01-02 00:00:00'", "columns": ["id", "ts"]},
]


@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
def test_same_rows_as_a_lakecore_scan(
    spark: Any, corpus: Path, events: lakecore.Table, case: dict[str, Any]
) -> None:
    expected = events.scan(**case).to_arrow()
    df = lakecore.spark.read(spark, events.uri, **case)
    assert df.schema == lakecore.spark.to_spark_schema(expected.schema)
    got = to_arrow(df)
    assert rows(corpus, got) == rows(corpus, expected)
    assert df.columns == expected.column_names


def test_time_travel_by_timestamp(spark: Any, corpus: Path, events: lakecore.Table) -> None:
    entry = next(h for h in events.history() if h.version == 2)
    assert entry.timestamp is not None
    got = to_arrow(lakecore.spark.read(spark, events.uri, timestamp=entry.timestamp))
    assert rows(corpus, got) == rows(corpus, events.to_arrow(version=2))


def test_the_dataframe_is_an_ordinary_dataframe(spark: Any, events: lakecore.Table) -> None:
    df = lakecore.spark.read(spark, events.uri)
    counts = {r["region"]: r["count"] for r in df.groupBy("region").count().collect()}
    assert counts == {"eu": 20, "us": 20}
    assert df.filter("id >= 35").count() == 5  # re-executes the read: still right
    assert df.select("id").distinct().count() == 40


def test_partitions_spread_files_over_spark_tasks(spark: Any, events: lakecore.Table) -> None:
    files = events.scan().files().num_rows
    for partitions, expected in ((1, 1), (3, 3), (files + 10, files)):
        df = lakecore.spark.read(spark, events.uri, partitions=partitions)
        assert df.rdd.getNumPartitions() == expected
        assert df.count() == 40
    assert lakecore.spark.read(spark, events.uri).rdd.getNumPartitions() == min(files, 2)
    with pytest.raises(ValueError):
        lakecore.spark.read(spark, events.uri, partitions=0)


def test_empty_table_has_the_schema(spark: Any, tmp_path: Path) -> None:
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("m", pa.map_(pa.string(), pa.int32())),
            ("s", pa.struct([("a", pa.date32()), ("b", pa.decimal128(12, 3))])),
            ("n", pa.timestamp("us")),
        ]
    )
    table = lakecore.create(str(tmp_path), schema)
    df = lakecore.spark.read(spark, table.uri)
    assert df.schema == st.StructType(
        [
            st.StructField("id", st.LongType()),
            st.StructField("m", st.MapType(st.StringType(), st.IntegerType())),
            st.StructField(
                "s",
                st.StructType(
                    [
                        st.StructField("a", st.DateType()),
                        st.StructField("b", st.DecimalType(12, 3)),
                    ]
                ),
            ),
            st.StructField("n", st.TimestampNTZType()),
        ]
    )
    assert df.count() == 0
    assert to_arrow(df.select("id")).num_rows == 0


def test_deletion_vectors_with_a_predicate(spark: Any, corpus: Path) -> None:
    table = lakecore.open(str(corpus / "delta" / "golden__dv-partitioned-with-checkpoint"))
    column = table.snapshot().schema.names[0]
    for where in (f"{column} IS NOT NULL", f"{column} IS NULL"):
        expected = table.scan(where).to_arrow()
        got = to_arrow(lakecore.spark.read(spark, table.uri, where=where))
        assert rows(corpus, got) == rows(corpus, expected)


def test_errors_come_before_any_spark_job(spark: Any, events: lakecore.Table) -> None:
    with pytest.raises(SchemaError):
        lakecore.spark.read(spark, events.uri, columns=["nope"])
    with pytest.raises(PredicateError):
        lakecore.spark.read(spark, events.uri, where="id >>> 3")
    with pytest.raises(VersionNotFoundError):
        lakecore.spark.read(spark, events.uri, version=99)
    with pytest.raises(lakecore.TableNotFoundError):
        lakecore.spark.read(spark, events.uri + "-missing")


def test_memory_tables_are_refused(spark: Any) -> None:
    with pytest.raises(UnsupportedFeatureError, match="memory"):
        lakecore.spark.read(spark, "memory://lakecore-spark-test")


# ------------------------------------------------------------------ driver-side helpers


def test_balanced_chunks_keep_every_row_once() -> None:
    sizes: list[int | None] = [100, 1, 50, 50, 7, 99, 3, 60, 40, None]
    for n in range(1, len(sizes) + 1):
        chunks = balanced_chunks(sizes, n)
        assert len(chunks) == n and all(chunks)
        assert sorted(i for chunk in chunks for i in chunk) == list(range(len(sizes)))
        assert all(chunk == sorted(chunk) for chunk in chunks)  # planned order kept
    loads = [sum(sizes[i] or 0 for i in chunk) for chunk in balanced_chunks(sizes, 2)]
    assert max(loads) - min(loads) <= 100
    with pytest.raises(ValueError):
        balanced_chunks(sizes, 0)
    with pytest.raises(ValueError):
        balanced_chunks(sizes, len(sizes) + 1)


def test_conform_batch_gives_spark_s_arrow_types() -> None:
    batch = pa.record_batch(
        {
            "u8": pa.array([1, 255], pa.uint8()),
            "u64": pa.array([0, 2**64 - 1], pa.uint64()),
            "s": pa.array(["a", None], pa.large_string()),
            "ns": pa.array([1_500, -1_500], pa.timestamp("ns", "Europe/Paris")),
            "ms": pa.array([1, 2], pa.timestamp("ms")),
            "d64": pa.array([0, 86_400_000], pa.date64()),
            "dict": pa.array(["x", "y"]).dictionary_encode(),
            "nested": pa.array([[1], None], pa.large_list(pa.timestamp("ns"))),
        }
    )
    target = spark_arrow_schema(batch.schema)
    out = conform_batch(batch, target)
    assert out.schema == target
    assert out.column("u64").to_pylist()[1] == 2**64 - 1
    assert out.column("ns").type == pa.timestamp("us", "UTC")
    assert out.column("ns").cast(pa.int64()).to_pylist() == [1, -1]  # truncated to us
    assert out.column("ms").cast(pa.int64()).to_pylist() == [1_000, 2_000]
    assert out.column("dict").to_pylist() == ["x", "y"]
    same = pa.record_batch({"a": pa.array([1], pa.int64())})
    assert conform_batch(same, same.schema) is same


def test_conform_batch_refuses_lossy_casts_other_than_nanoseconds() -> None:
    batch = pa.record_batch({"d": pa.array([86_400_000 + 1], pa.date64())})
    target = spark_arrow_schema(batch.schema)
    with pytest.raises(pa.ArrowInvalid):
        conform_batch(batch, target)


ONE_PATH_TABLES = (
    "delta/golden__dv-partitioned-with-checkpoint",  # deletion vectors
    "delta/golden__table-with-columnmapping-mode-name",  # column mapping
    "hudi/mor_avro_v8_trips_8i3u1d",  # merge-on-read slices (base + log files)
)


def test_spark_snapshot_and_scan_read_the_same_rows(spark: Any, corpus: Path) -> None:
    """Spark executors, ``Snapshot.to_arrow`` and ``Scan.to_arrow`` share one read path."""
    checked = 0
    for name in ONE_PATH_TABLES:
        table = lakecore.open(str(corpus / name))
        expected = table.snapshot().to_arrow()
        assert expected.num_rows > 0, name
        assert rows(corpus, table.scan().to_arrow()) == rows(corpus, expected), name
        got = to_arrow(lakecore.spark.read(spark, table.uri, partitions=2))
        assert rows(corpus, got) == rows(corpus, expected), name
        checked += 1
    assert checked == 3


def test_tasks_carry_arrow_rows_not_pickled_objects(events: lakecore.Table) -> None:
    """A task row is the Arrow IPC stream of planned file-index rows, stats left on the driver."""
    assert TASKS_SCHEMA.names == ["chunk", "files"]
    files = events.scan("region = 'eu'").files()
    payload = to_ipc(reading_columns(files))
    assert payload.startswith(b"\xff\xff\xff\xff")  # an Arrow IPC stream, not a pickle
    shipped = from_ipc(payload)
    assert shipped.num_rows == files.num_rows > 0
    assert {"min", "max", "null_count"}.isdisjoint(shipped.column_names)
    assert shipped.column("path").equals(files.column("path"))
