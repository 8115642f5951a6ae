"""``lakecore.spark.read`` on every corpus Delta table lakecore reads: the same rows.

DV, column-mapping, checkpointed, partitioned and every-type tables included: the Spark result
(read inside Spark tasks) must have the corpus digest of ``Table.to_arrow()``, and the
DataFrame's schema must be the table's logical schema converted.

The default run reads a representative set of tables (one per reader feature: deletion
vectors, column mapping by name and by id, checkpoints of every kind, partition values that
need escaping, nested and every primitive type, timestamps without time zone, type
widening, an empty table); ``-m slow`` reads every corpus Delta table lakecore reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="needs pyspark (pip install 'lakecore[spark]')")

import lakecore
import lakecore.spark
from lakecore.errors import LakecoreError

from .helpers import digest, same_rows, to_arrow

pytestmark = pytest.mark.spark

MIN_TABLES = 80
REPRESENTATIVE = (
    "deltars__table-with-dv-small",  # deletion vectors
    "golden__dv-partitioned-with-checkpoint",  # DVs + partitions + classic checkpoint
    "deltars__cdf-table-with-cdc-and-dvs",  # change data files + DVs
    "golden__table-with-columnmapping-mode-name",  # column mapping (name)
    "golden__data-skipping-basic-stats-all-types-columnmapping-id",  # column mapping (id)
    "deltars__checkpoint-v2-table",  # V2 checkpoint
    "golden__only-checkpoint-files",  # a log read from its checkpoint only
    "gen__partitioned_special_chars",  # partition values needing escapes
    "golden__data-reader-partition-values",  # a partition column of every type
    "golden__parquet-all-types",  # every primitive type
    "golden__data-reader-nested-struct",  # nested structs
    "golden__data-reader-map",  # maps
    "golden__data-reader-array-primitives",  # lists
    "golden__data-reader-timestamp_ntz",  # timestamps without time zone
    "golden__type-widening",  # widened column types
    "deltars__delta-0.8-empty",  # no rows
)
"""Read in the default run; each must be readable by lakecore."""


def readable_tables(corpus: Path, names: tuple[str, ...] | None = None) -> list[tuple[Path, Any]]:
    """(table root, lakecore's rows) of every corpus Delta table lakecore itself reads (of
    ``names`` only, when given)."""
    out = []
    for path in sorted((corpus / "delta").iterdir()):
        if names is not None and path.name not in names:
            continue
        try:
            out.append((path, lakecore.open(str(path)).to_arrow()))
        except LakecoreError:
            continue  # corrupt or unsupported: lakecore's own tests cover the refusal
    return out


def check_spark_reads(spark: Any, corpus: Path, tables: list[tuple[Path, Any]]) -> None:
    """Spark reads the rows and logical schema lakecore reads, for every table given."""
    wrong = []
    for path, expected in tables:
        df = lakecore.spark.read(spark, str(path))
        assert df.schema == lakecore.spark.to_spark_schema(expected.schema), path.name
        got = to_arrow(df)
        if not same_rows(corpus, got, expected):
            wrong.append(f"{path.name}: {got.num_rows} rows, lakecore has {expected.num_rows}")
    assert not wrong, "\n".join(wrong)


def test_representative_corpus_tables(spark: Any, corpus: Path) -> None:
    tables = readable_tables(corpus, REPRESENTATIVE)
    check_spark_reads(spark, corpus, tables)
    assert sorted(p.name for p, _ in tables) == sorted(REPRESENTATIVE)


@pytest.mark.slow
def test_every_readable_corpus_table(spark: Any, corpus: Path) -> None:
    tables = readable_tables(corpus)
    check_spark_reads(spark, corpus, tables)
    assert len(tables) > MIN_TABLES, f"only {len(tables)} corpus tables were read"


@pytest.mark.parametrize(
    "name",
    [
        "deltars__table-with-dv-small",  # deletion vectors
        "golden__dv-partitioned-with-checkpoint",  # DVs + partitions + checkpoint
        "golden__table-with-columnmapping-mode-name",  # column mapping (name)
        "golden__data-skipping-basic-stats-all-types-columnmapping-id",  # column mapping (id)
    ],
)
def test_every_version_of_feature_tables(spark: Any, corpus: Path, name: str) -> None:
    table = lakecore.open(str(corpus / "delta" / name))
    checked = 0
    for entry in table.history():
        try:
            expected = table.to_arrow(version=entry.version)
        except LakecoreError:
            continue  # a version whose log is gone (checkpointed and cleaned up)
        got = to_arrow(lakecore.spark.read(spark, table.uri, version=entry.version))
        assert digest(corpus, got) == digest(corpus, expected), (name, entry.version)
        checked += 1
    assert checked >= 1
