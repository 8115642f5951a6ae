"""``lakecore.spark.read`` on Lance datasets: fragments read in Spark tasks, deletions applied."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lakecore

from .helpers import rows, to_arrow

pytest.importorskip("pyspark", reason="needs pyspark (pip install 'lakecore[spark]')")
lance = pytest.importorskip("lance", reason="needs pylance (the lance extra)")
pytestmark = pytest.mark.spark


def test_lance_with_deletions_equals_to_arrow(spark: Any, corpus: Path, tmp_path: Path) -> None:
    path = tmp_path / "ds"
    data = pa.table(
        {"id": pa.array(range(12000), pa.int64()), "s": [f"r{i}" for i in range(12000)]}
    )
    ds = lance.write_dataset(data, str(path), max_rows_per_file=6000)
    ds.delete("id % 2 = 0 and id < 6000")  # 3,000 positions: an Arrow IPC deletion file
    ds.delete("id >= 6000 and id < 11500")  # 5,500 positions: a roaring bitmap
    checked = 0
    for uri in (str(path), str(corpus / "lance" / "gen__deletions_v2_manifest")):
        table = lakecore.open(uri)
        files = table.snapshot().files()
        assert files.column("deletion").null_count < files.num_rows  # some fragments have deletes
        expected = table.to_arrow()
        from lakecore.spark import read as spark_read

        got = to_arrow(spark_read(spark, uri, partitions=2))
        assert expected.num_rows > 0
        assert rows(corpus, got) == rows(corpus, expected)
        checked += 1
    assert checked == 2
    assert lakecore.open(str(path)).to_arrow().num_rows == 12000 - 3000 - 5500
