"""``lakecore.spark.read`` on the corpus Hudi tables: Spark tasks merge MoR slices like lakecore.

Each task is one file slice (base file + log files); executors merge the log blocks with the
same code ``Table.to_arrow()`` runs, so the rows must be identical at every instant.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="needs pyspark (pip install 'lakecore[spark]')")

from lakecore_hudi.names import is_log_file

import lakecore
import lakecore.spark

from .helpers import digest, to_arrow

pytestmark = pytest.mark.spark

MIN_MOR_TABLES = 9


def _mor_tables(corpus: Path) -> list[Path]:
    return sorted(p for p in (corpus / "hudi").iterdir() if p.name.startswith("mor_"))


def test_mor_tables_at_every_instant(spark: Any, corpus: Path) -> None:
    tables = _mor_tables(corpus)
    checked = 0
    with_logs = 0
    for path in tables:
        table = lakecore.open(str(path))
        for entry in table.history():
            if entry.operation in ("clean", "rollback", "indexing", "compaction"):
                continue
            try:
                expected = table.to_arrow(version=entry.version)
            except ValueError:
                continue  # not a write instant (e.g. an indexing instant)
            df = lakecore.spark.read(spark, str(path), version=entry.version)
            got = to_arrow(df)
            assert got.num_rows == expected.num_rows, (path.name, entry.version)
            assert digest(corpus, got) == digest(corpus, expected), (path.name, entry.version)
            checked += 1
        files = table.snapshot().files()
        data_files = files.column("data_files").to_pylist()
        with_logs += sum(1 for d in data_files if any(is_log_file(p) for p in d))
    assert len(tables) >= MIN_MOR_TABLES, f"only {len(tables)} MoR tables"
    assert checked >= 40, f"only {checked} instants compared"
    assert with_logs > 0, "no file slice with log files was read through Spark"


def test_where_on_a_merged_table(spark: Any, corpus: Path) -> None:
    path = corpus / "hudi" / "mor_avro_v8_trips_8i3u1d"
    expected = lakecore.open(str(path)).scan(where="fare > 20").to_arrow()
    got = to_arrow(lakecore.spark.read(spark, str(path), where="fare > 20"))
    assert digest(corpus, got) == digest(corpus, expected)
    assert 0 < got.num_rows < lakecore.open(str(path)).to_arrow().num_rows
