"""``lakecore.spark.write`` is format-neutral: the table's format writes the files in Spark tasks.

Hudi tables (new and existing, CoW and MoR) and Delta tables (created by lakecore's own
writer, column-mapped) take appends, overwrites and overwrites with ``where``; lakecore and
the peers (hudi-rs, delta-rs) read back exactly the expected rows, and the Delta log holds the
stats lakecore's own append writes for the same data.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lakecore_hudi.table_config import read_table_config
from lakecore_hudi.timeline.active import load_timeline
from lakecore_hudi.timeline.instants import COMPLETED

pytest.importorskip("pyspark", reason="needs pyspark (pip install 'lakecore[spark]')")

import lakecore
import lakecore.spark
from lakecore.errors import (
    ConstraintViolationError,
    InvalidArgumentError,
    SchemaError,
    UnsupportedFeatureError,
)
from lakecore.format import Capability
from lakecore.storage import open_storage
from tests.hudi.write.helpers import (
    SCHEMA,
    Row,
    assert_reads,
    create,
    hudi_rs_rows,
    lakecore_rows,
    model_of,
    rows,
)

from .helpers import to_arrow

pytestmark = pytest.mark.spark
HUDI = {"record_key": "id", "precombine_field": "ts", "hive_style_partitioning": "true"}


def _df(spark: Any, table: pa.Table) -> Any:
    """``table`` (rows of ``SCHEMA``) as a DataFrame of two partitions."""
    schema = "id long, name string, ts long, city string"
    return spark.createDataFrame(table.to_pylist(), schema).repartition(2)


def _pending(root: Path) -> list[str]:
    """Instants of the timeline that never completed (and were not rolled back)."""
    storage = open_storage(str(root))
    timeline = load_timeline(storage, read_table_config(storage))
    done = {i.timestamp for i in timeline.instants if i.state == COMPLETED}
    return sorted({i.timestamp for i in timeline.instants} - done)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_hudi_new_table_every_mode(spark: Any, tmp_path: Path, table_type: str) -> None:
    root = tmp_path / "t"
    first = rows((1, "a", 1, "x"), (2, "b", 1, "y"), (3, "c", 1, None), (4, "d", 1, "x/y"))
    properties = {**HUDI, "table_type": table_type}
    with pytest.raises(ConstraintViolationError, match="'/'"):  # checked in the tasks
        lakecore.spark.write(
            _df(spark, first), str(root), partition_by=["city"], format="hudi",
            properties=properties,
        )  # fmt: skip
    first = first.slice(0, 3)
    v1 = lakecore.spark.write(
        _df(spark, first), str(root), partition_by=["city"], format="hudi", properties=properties
    ).version
    assert isinstance(v1, str) and lakecore.open(str(root)).format == "hudi"
    model: dict[int, Row] = model_of(first)
    assert_reads(root, model)
    assert (root / "city=__HIVE_DEFAULT_PARTITION__" / ".hoodie_partition_metadata").exists()

    more = rows((5, "e", 2, "x"), (6, "f", 2, "z"))
    # An existing table: its format.
    v2 = lakecore.spark.write(_df(spark, more), str(root)).version
    assert v2 > v1
    model |= model_of(more)
    assert_reads(root, model)

    # Replace partition x: the rows of x go, the new row comes; other partitions stay.
    new_x = rows((7, "g", 3, "x"))
    lakecore.spark.write(_df(spark, new_x), str(root), mode="overwrite", where="city = 'x'")
    model = {k: v for k, v in model.items() if v["city"] != "x"} | model_of(new_x)
    assert_reads(root, model)

    everything = rows((8, "h", 4, "y"))
    lakecore.spark.write(_df(spark, everything), str(root), mode="overwrite")
    assert_reads(root, model_of(everything))
    # Nothing is left pending: the refused write's instant was rolled back.
    assert _pending(root) == []


def test_hudi_existing_table_and_where_partial_slices(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = create(root, partitioned=False)
    first = rows((1, "a", 1, "x"), (2, "b", 1, "y"), (3, "c", 1, "x"))
    table.append(first)
    # One slice holds x and y rows: overwriting x rewrites the slice's y rows.
    new = rows((4, "d", 2, "x"))
    lakecore.spark.write(_df(spark, new), str(root), mode="overwrite", where="city = 'x'")
    model = {2: model_of(first)[2]} | model_of(new)
    assert_reads(root, model)
    with pytest.raises(ConstraintViolationError, match="do not match"):
        lakecore.spark.write(
            _df(spark, rows((9, "z", 1, "y"))), str(root), mode="overwrite", where="city = 'x'"
        )
    assert_reads(root, model)
    with pytest.raises(InvalidArgumentError, match="hudi table, not delta"):
        lakecore.spark.write(_df(spark, new), str(root), format="delta")
    with pytest.raises(SchemaError, match="missing column"):
        lakecore.spark.write(_df(spark, new).drop("name"), str(root))
    assert lakecore_rows(root) == hudi_rs_rows(root)
    assert len(lakecore_rows(root)) == 2
    # No rows: an append commits nothing (its instant is rolled back), an overwrite empties.
    version = lakecore.open(str(root)).version
    empty = _df(spark, rows()).limit(0)
    assert lakecore.spark.write(empty, str(root)).version == version
    assert _pending(root) == []
    lakecore.spark.write(empty, str(root), mode="overwrite")
    assert lakecore_rows(root) == hudi_rs_rows(root) == []


def _delta_adds(root: Path, version: int) -> list[dict[str, Any]]:
    log = (root / "_delta_log" / f"{version:020}.json").read_text().splitlines()
    return [json.loads(line)["add"] for line in log if '"add"' in line]


def test_delta_stats_equal_lakecore_append(spark: Any, tmp_path: Path) -> None:
    data = pa.table(
        {
            "id": pa.array(range(40), pa.int64()),
            "s": [("v" * (i % 40)) if i % 7 else None for i in range(40)],
            "x": [float(i) / 3 for i in range(40)],
            "d": pa.array([i * 86400 * 1000 for i in range(40)], pa.timestamp("ms")).cast(
                pa.timestamp("us", "UTC")
            ),
            "st": [{"a": i, "b": str(i)} if i % 5 else None for i in range(40)],
        }
    )
    ours, theirs = tmp_path / "spark", tmp_path / "append"
    df = spark.createDataFrame(data.to_pandas()).coalesce(1)
    lakecore.spark.write(df, str(ours))
    table = lakecore.create(str(theirs), lakecore.open(str(ours)).snapshot().schema)
    table.append(to_arrow(df))
    (spark_add,) = _delta_adds(ours, 1)
    (append_add,) = _delta_adds(theirs, 1)
    assert json.loads(spark_add["stats"]) == json.loads(append_add["stats"])
    assert json.loads(spark_add["stats"])["numRecords"] == 40


def test_delta_existing_table(spark: Any, corpus: Path, tmp_path: Path) -> None:
    import deltalake

    from .helpers import rows as digest_rows

    root = tmp_path / "t"
    table = lakecore.create(str(root), SCHEMA, partition_by=["city"])
    table.append(rows((1, "a", 1, "x")))
    df = _df(spark, rows((2, "b", 2, "x"), (3, "c", 3, "y")))
    assert lakecore.spark.write(df, str(root)).version == 2
    expected = digest_rows(
        corpus, pa.concat_tables([rows((1, "a", 1, "x")), rows((2, "b", 2, "x"), (3, "c", 3, "y"))])
    )
    assert digest_rows(corpus, lakecore.open(str(root)).to_arrow()) == expected
    assert digest_rows(corpus, deltalake.DeltaTable(str(root)).to_pyarrow_table()) == expected
    # NOT NULL is checked in the tasks; the error comes back as itself, nothing is left.
    nulls = _df(spark, rows((4, "d", 4, "x"))).selectExpr(
        "cast(null as long) as id", "name", "ts", "city"
    )
    before = sorted(root.iterdir())  # the committed write's own directory among them
    with pytest.raises(ConstraintViolationError, match="NOT NULL"):
        lakecore.spark.write(nulls, str(root))
    assert lakecore.open(str(root)).version == 2
    assert sorted(root.iterdir()) == before


def test_delta_column_mapped_table(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "t"
    properties = {"delta.columnMapping.mode": "name"}
    lakecore.create(str(root), SCHEMA, partition_by=["city"], properties=properties)
    data = rows((1, "a", 1, "x"), (2, "b", 2, None))
    assert lakecore.spark.write(_df(spark, data), str(root)).version == 1
    assert lakecore_rows(root) == sorted(data.to_pylist(), key=lambda r: r["id"])
    snapshot = lakecore.open(str(root)).snapshot()
    for path in snapshot.files().column("path").to_pylist():
        names = pq.read_schema(root / path).names
        assert "id" not in names and len(names) == 3, names  # physical names in the files


@pytest.mark.s3
@pytest.mark.parametrize("fmt", ["delta", "hudi"])
def test_object_store_tables(
    spark: Any, s3_uri: str, s3_storage_options: dict[str, Any], fmt: str
) -> None:
    # The executors write through lakecore's storage: storage_options travel with the writer.
    data = rows((1, "a", 1, "x"), (2, "b", 2, "y"), (3, "c", 3, None))
    properties = HUDI if fmt == "hudi" else None
    lakecore.spark.write(
        _df(spark, data),
        s3_uri,
        partition_by=["city"],
        storage_options=s3_storage_options,
        format=fmt,
        properties=properties,
    )
    table = lakecore.open(s3_uri, storage_options=s3_storage_options)
    assert table.format == fmt
    got = table.to_arrow().select(SCHEMA.names).to_pylist()
    assert sorted(got, key=lambda r: r["id"]) == data.to_pylist()


def test_capabilities_are_checked_before_writing(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lakecore_delta.format import DeltaFormat

    root = tmp_path / "t"
    lakecore.spark.write(_df(spark, rows((1, "a", 1, "x"))), str(root))
    before = sorted(p.name for p in root.iterdir())
    without = DeltaFormat.capabilities - {Capability.OVERWRITE}
    monkeypatch.setattr(DeltaFormat, "capabilities", without)
    with pytest.raises(UnsupportedFeatureError) as info:
        lakecore.spark.write(_df(spark, rows((2, "b", 2, "y"))), str(root), mode="overwrite")
    assert info.value.feature == "overwrite"
    assert sorted(p.name for p in root.iterdir()) == before  # nothing written
    monkeypatch.setattr(DeltaFormat, "capabilities", without - {Capability.WRITE})
    with pytest.raises(UnsupportedFeatureError) as info:
        lakecore.spark.write(_df(spark, rows((2, "b", 2, "y"))), str(root))
    assert info.value.feature == "write"
    assert lakecore.open(str(root)).version == 1


def test_capabilities_are_checked_before_any_snapshot_or_creation(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lakecore_delta.format import DeltaFormat

    from lakecore.table import Table

    root = tmp_path / "t"
    lakecore.spark.write(_df(spark, rows((1, "a", 1, "x"))), str(root))
    loaded: list[object] = []
    real_snapshot = Table.snapshot

    def spy(self: Table, *args: Any, **kwargs: Any) -> Any:
        loaded.append(args)
        return real_snapshot(self, *args, **kwargs)

    monkeypatch.setattr(Table, "snapshot", spy)
    monkeypatch.setattr(
        DeltaFormat, "capabilities", DeltaFormat.capabilities - {Capability.OVERWRITE}
    )
    df = _df(spark, rows((2, "b", 2, "y")))
    with pytest.raises(UnsupportedFeatureError) as info:
        lakecore.spark.write(df, str(root), mode="overwrite")
    assert info.value.feature == "overwrite"
    assert loaded == []  # refused on the format's capabilities, no snapshot loaded
    # A new table: refused on the named format's capabilities before it is created.
    new = tmp_path / "new"
    with pytest.raises(UnsupportedFeatureError) as info:
        lakecore.spark.write(df, str(new), mode="overwrite")
    assert info.value.feature == "overwrite"
    assert not new.exists()
