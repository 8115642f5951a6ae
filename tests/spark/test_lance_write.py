"""``lakecore.spark.write`` on Lance datasets: Spark tasks write the data files with the
Lance plugin's ``DataFileWriter``, lakecore commits; pylance reads every version identically."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="needs pyspark (pip install 'lakecore[spark]')")
lance = pytest.importorskip("lance", reason="needs pylance (the lance extra)")
pytestmark = pytest.mark.spark


def test_spark_writes_lance(spark: Any, tmp_path: Path) -> None:
    from lakecore.spark import write as spark_write
    from tests.lance.helpers import assert_same_as_pylance

    uri = str(tmp_path / "ds")
    df = spark.createDataFrame(
        [(i, "a" if i % 2 else "b") for i in range(100)], "id long, p string"
    )
    spark_write(df.repartition(3), uri, format="lance")
    more = spark.createDataFrame([(i, "a") for i in range(200, 205)], "id long, p string")
    spark_write(more, uri, mode="append")
    replacement = spark.createDataFrame([(1000, "b")], "id long, p string")
    spark_write(replacement, uri, mode="overwrite", where="p = 'b'")
    got = sorted(lance.dataset(uri).to_table().column("id").to_pylist())
    assert got == [i for i in range(100) if i % 2] + list(range(200, 205)) + [1000]
    assert assert_same_as_pylance(tmp_path / "ds") == 4
