"""``lakecore.spark.read`` on the corpus Hudi tables: Spark tasks merge MoR slices like lakecore.

Each task is one file slice (base file + log files); executors merge the log blocks with the
same code ``Table.to_arrow()`` runs, so the rows must be identical at every instant. The
default run compares the first and the latest write instant of every MoR table; ``-m slow``
compares every write instant.
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


def _write_versions(table: lakecore.Table) -> list[tuple[Any, Any]]:
    """(version, lakecore's rows) of every write instant of ``table``, oldest first."""
    out = []
    for entry in reversed(table.history()):
        if entry.operation in ("clean", "rollback", "indexing", "compaction"):
            continue
        try:
            out.append((entry.version, table.to_arrow(version=entry.version)))
        except ValueError:
            continue  # not a write instant (e.g. an indexing instant)
    return out


def _check_mor_tables(spark: Any, corpus: Path, every_instant: bool) -> tuple[int, int, int]:
    """Spark reads lakecore's rows at the write instants of every MoR table (all of them, or
    the first and the latest); returns (tables, instants compared, slices with logs)."""
    tables = _mor_tables(corpus)
    checked = 0
    with_logs = 0
    for path in tables:
        table = lakecore.open(str(path))
        versions = _write_versions(table)
        assert versions, path.name
        if not every_instant:
            versions = [versions[0], versions[-1]] if len(versions) > 1 else versions
        for version, expected in versions:
            got = to_arrow(lakecore.spark.read(spark, str(path), version=version))
            assert got.num_rows == expected.num_rows, (path.name, version)
            assert digest(corpus, got) == digest(corpus, expected), (path.name, version)
            checked += 1
        files = table.snapshot().files()
        data_files = files.column("data_files").to_pylist()
        with_logs += sum(1 for d in data_files if any(is_log_file(p) for p in d))
    assert len(tables) >= MIN_MOR_TABLES, f"only {len(tables)} MoR tables"
    assert with_logs > 0, "no file slice with log files was read through Spark"
    return len(tables), checked, with_logs


def test_mor_tables_at_first_and_latest_instants(spark: Any, corpus: Path) -> None:
    tables, checked, _ = _check_mor_tables(spark, corpus, every_instant=False)
    assert tables < checked <= 2 * tables, f"{checked} instants compared over {tables} tables"


@pytest.mark.slow
def test_mor_tables_at_every_instant(spark: Any, corpus: Path) -> None:
    _, checked, _ = _check_mor_tables(spark, corpus, every_instant=True)
    assert checked >= 40, f"only {checked} instants compared"


def test_where_on_a_merged_table(spark: Any, corpus: Path) -> None:
    path = corpus / "hudi" / "mor_avro_v8_trips_8i3u1d"
    expected = lakecore.open(str(path)).scan(where="fare > 20").to_arrow()
    got = to_arrow(lakecore.spark.read(spark, str(path), where="fare > 20"))
    assert digest(corpus, got) == digest(corpus, expected)
    assert 0 < got.num_rows < lakecore.open(str(path)).to_arrow().num_rows
