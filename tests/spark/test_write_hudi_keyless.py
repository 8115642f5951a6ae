"""lakecore.spark.write into a keyless Hudi table (no record key: keys generated per task as
``<instant>_<task file index>_<row>``); hudi-rs reads the same rows and keys."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyspark", reason="needs pyspark (pip install 'lakecore[spark]')")

import lakecore
import lakecore.spark
from tests.hudi.write.helpers import hudi_rs_rows, hudi_rs_table, lakecore_rows, rows

pytestmark = pytest.mark.spark


def _df(spark: Any, table: pa.Table) -> Any:
    schema = "id long, name string, ts long, city string"
    return spark.createDataFrame(table.to_pylist(), schema).repartition(2)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_spark_write_creates_and_appends_to_a_keyless_table(
    spark: Any, tmp_path: Path, table_type: str
) -> None:
    root = tmp_path / "t"
    data = rows((1, "a", 1, "x"), (2, "b", 1, "y"), (3, "c", 1, "x"))
    first = lakecore.spark.write(
        _df(spark, data), str(root), partition_by=["city"], format="hudi",
        properties={"table_type": table_type},
    ).version  # fmt: skip
    second = lakecore.spark.write(_df(spark, data), str(root)).version
    assert lakecore.open(str(root)).snapshot().features.record_key == ()
    assert len(lakecore_rows(root)) == 6  # the same ids twice: no key, no dedup
    assert lakecore_rows(root) == hudi_rs_rows(root)
    ours = lakecore.open(str(root)).to_arrow(columns=["_hoodie_record_key"]).column(0).to_pylist()
    assert len(set(ours)) == 6
    assert {k.split("_")[0] for k in ours} == {first, second}
    assert sorted(hudi_rs_table(root).column("_hoodie_record_key").to_pylist()) == sorted(ours)
