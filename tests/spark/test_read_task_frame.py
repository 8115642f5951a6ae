"""The task DataFrame of ``lakecore.spark.read``: built from Arrow, one chunk per partition.

(pyspark 3.5 cannot build a DataFrame from Arrow: there the rows are Python tuples, tested
here by switching ``ARROW_TASK_FRAME`` off.)

Built from Arrow (not Python tuples) the task rows are a local relation (an RDD of Arrow
batches past ``spark.sql.execution.arrow.localRelationThreshold``): no Python worker runs to
produce them before ``mapInArrow`` starts (issue 15, large-file reads).
"""

from __future__ import annotations

import importlib
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("pyspark", reason="needs pyspark (pip install 'lakecore[spark]')")

import lakecore
import lakecore.spark
from lakecore.planning.read import reading_columns
from lakecore.spark.read import balanced_chunks, from_ipc, task_table
from lakecore.spark.session import temporary_conf

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
FILES = 5


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> lakecore.Table:
    """Five files of 10 rows (ids 0-49), one append each."""
    t = lakecore.create(str(tmp_path_factory.mktemp("frame")), SCHEMA)
    for f in range(FILES):
        ids = list(range(10 * f, 10 * f + 10))
        t.append(pa.table({"id": ids, "name": [f"n{i}" for i in ids]}, schema=SCHEMA))
    return t


def test_task_table_has_one_batch_and_row_per_chunk(table: lakecore.Table) -> None:
    files = reading_columns(table.scan().files())
    chunks = balanced_chunks(files.column("size"), 3)
    tasks = task_table(files, chunks)
    assert tasks.num_rows == len(tasks.to_batches()) == 3
    assert tasks.column("chunk").to_pylist() == [0, 1, 2]
    shipped = [from_ipc(p) for p in tasks.column("files").to_pylist()]
    for rows, chunk in zip(shipped, chunks, strict=True):
        assert rows.column("path").to_pylist() == files.column("path").take(chunk).to_pylist()
    assert sorted(p for rows in shipped for p in rows.column("path").to_pylist()) == sorted(
        files.column("path").to_pylist()
    )


def _lineage(df: Any) -> str:
    """The RDD lineage of ``df``'s executed plan (a PythonRDD shows up by name)."""
    return str(df._jdf.queryExecution().toRdd().toDebugString())


@pytest.mark.parametrize("threshold", [None, "0"], ids=["local relation", "arrow rdd"])
def test_one_chunk_per_partition_without_a_python_input_worker(
    spark: Any, table: lakecore.Table, threshold: str | None
) -> None:
    key = "spark.sql.execution.arrow.localRelationThreshold"
    settings = {} if threshold is None else {key: threshold}
    cases = 0
    with temporary_conf(spark, settings):
        for partitions, expected in ((None, 2), (FILES + 3, FILES)):
            df = lakecore.spark.read(spark, table.uri, partitions=partitions)
            lineage = _lineage(df)
            # The task rows come from the JVM: no PythonRDD below (as Python tuples need).
            assert "ParallelCollectionRDD" in lineage and "PythonRDD" not in lineage, lineage
            ids = df.rdd.glom().map(lambda part: [r["id"] for r in part]).collect()
            assert len(ids) == expected
            assert all(ids), ids  # every partition reads a chunk
            assert sorted(i for part in ids for i in part) == list(range(10 * FILES))
            cases += 1
    assert cases == 2


def test_python_rows_on_pyspark_3_5(
    spark: Any, table: lakecore.Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    read_module = importlib.import_module("lakecore.spark.read")
    monkeypatch.setattr(read_module, "ARROW_TASK_FRAME", False)
    cases = 0
    for partitions, expected in ((None, 2), (1, 1), (FILES + 3, FILES)):
        df = lakecore.spark.read(spark, table.uri, partitions=partitions)
        assert "PythonRDD" in _lineage(df)  # the tuple path really ran
        ids = df.rdd.glom().map(lambda part: [r["id"] for r in part]).collect()
        assert len(ids) == expected
        assert all(ids), ids
        assert sorted(i for part in ids for i in part) == list(range(10 * FILES))
        cases += 1
    assert cases == 3
