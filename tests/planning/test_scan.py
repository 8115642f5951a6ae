"""Table.scan end to end on corpus tables: pruning counts, explain, tasks, reading, errors."""

from __future__ import annotations

import doctest
import pickle
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from lakecore_delta.source import DeltaSnapshotSource

import lakecore
from lakecore.errors import PredicateError, SchemaError
from lakecore.expr.tree import col
from lakecore.planning import Scan, read_files
from lakecore.table import Table


def open_table(corpus: Path, name: str) -> Table:
    return lakecore.open(str(corpus / "delta" / name))


def counts(scan: Scan) -> tuple[int, int, int]:
    e = scan.explain()
    return e.files_total, e.files_after_partition_pruning, e.files_after_stats_pruning


# ------------------------------------------------------------------------------ pruning on corpus


@pytest.mark.parametrize(
    ("where", "files"),
    [
        ("as_int = 0", 1),
        ("as_int > 0", 0),
        ("as_long IN (1, 2)", 0),
        ("as_byte < 0", 0),
        ("as_short >= 1", 0),
        ("as_float < 0", 0),
        ("as_double > 0.5", 0),
        ("as_string > '0'", 0),
        ("as_string LIKE '1%'", 0),
        ("as_date > DATE '2000-01-01'", 0),
        ("as_date = '2000-01-01'", 1),
        ("as_timestamp = TIMESTAMP '2000-01-01 00:00:00-08:00'", 1),
        ("as_timestamp > TIMESTAMP '2000-01-01 08:00:00.001+00:00'", 0),
        ("as_timestamp < '2000-01-01T08:00:00Z'", 0),
        ("as_big_decimal = 1", 0),
        ("as_big_decimal BETWEEN -1 AND 0", 1),
        ("as_int IS NULL", 0),
        ("as_int IS NOT NULL", 1),
        ("NOT (as_int = 0)", 0),
        ("as_int != 0", 0),
        ("as_int = 0 AND as_string = '1'", 0),
        ("as_int = 1 OR as_string = '0'", 1),
    ],
)
@pytest.mark.parametrize(
    "name",
    [
        "golden__data-skipping-basic-stats-all-types",
        "golden__data-skipping-basic-stats-all-types-checkpoint",
        "golden__data-skipping-basic-stats-all-types-columnmapping-id",
    ],
)
def test_all_types_table_skips_files(corpus: Path, name: str, where: str, files: int) -> None:
    table = open_table(corpus, name)
    scan = table.scan(where)
    assert counts(scan) == (1, 1, files)
    assert scan.to_arrow().num_rows == files  # the one file holds one matching row


@pytest.mark.parametrize(
    ("where", "files", "rows"),
    [
        ("part = 0", 2, [(0, 0), (0, 1)]),
        ("part = 0 AND id = 1", 1, [(0, 1)]),
        ("part = 1 OR id = 0", 3, [(0, 0), (1, 0), (1, 1)]),
        ("NOT (part = 1 OR id = 0)", 1, [(0, 1)]),
        ("id BETWEEN 2 AND 5", 0, []),
    ],
)
def test_partition_and_data_column_table(
    corpus: Path, where: str, files: int, rows: list[tuple[int, int]]
) -> None:
    scan = open_table(corpus, "golden__data-skipping-partition-and-data-column").scan(where)
    assert counts(scan) == (4, 4, files)
    got = sorted((r["part"], r["id"]) for r in scan.to_arrow().to_pylist())
    assert got == rows


def test_stats_collected_across_versions(corpus: Path) -> None:
    """Files whose stats lack a column (dataSkippingNumIndexedCols changed) are kept."""
    table = open_table(corpus, "golden__data-skipping-change-stats-collected-across-versions")
    assert counts(table.scan("col2 = 5")) == (3, 3, 2)
    assert counts(table.scan("col1 = 5")) == (3, 3, 1)
    assert counts(table.scan("col1 = 0 AND col2 = 0")) == (3, 3, 3)
    assert counts(table.scan("col1 = 5", version=0)) == (1, 1, 0)
    assert table.scan("col1 = 0").to_arrow().num_rows == 3


def test_partition_pruning_counts(corpus: Path) -> None:
    table = open_table(corpus, "deltars__delta-0.8.0-partitioned")
    scan = table.scan("year = '2021' AND day = '5'")
    assert counts(scan) == (6, 1, 1)
    full = table.to_arrow()
    expected = full.filter((pc.field("year") == "2021") & (pc.field("day") == "5"))
    assert scan.to_arrow().sort_by("value").equals(expected.sort_by("value"))


def test_null_partition_values(corpus: Path) -> None:
    table = open_table(corpus, "deltars__delta-0.8.0-null-partition")
    assert counts(table.scan("k IS NULL")) == (2, 1, 1)
    assert counts(table.scan("k IS NOT NULL")) == (2, 1, 1)
    assert counts(table.scan("k != 'A'")) == (2, 0, 0)  # NULL != 'A' is NULL
    assert table.scan("k IS NULL").to_arrow().column("k").null_count == 1


@pytest.mark.parametrize(
    ("where", "values"),
    [
        ("as_int = 0", ["0"]),
        ("as_boolean", ["0"]),
        ("NOT as_boolean", ["1"]),
        ("as_float >= 0.5", ["1"]),
        ("as_big_decimal != 0", ["1"]),
        ("as_date = '2021-09-08' AND as_string IN ('1', '7')", ["1"]),
        ("as_timestamp = TIMESTAMP '2021-09-08 11:11:11+00:00'", ["0", "1"]),
        ("as_timestamp > TIMESTAMP '2021-09-08 11:11:11+00:00'", []),
        ("as_string_lit_null = 'null'", ["0", "1"]),
        ("as_long IS NULL", ["2"]),
    ],
)
def test_typed_partition_values(corpus: Path, where: str, values: list[str]) -> None:
    scan = open_table(corpus, "golden__data-reader-partition-values").scan(where, ["value"])
    assert counts(scan) == (3, len(values), len(values))
    assert sorted(scan.to_arrow().column("value").to_pylist()) == values


def test_deletion_vectors_are_applied(corpus: Path) -> None:
    table = open_table(corpus, "golden__dv-partitioned-with-checkpoint")
    scan = table.scan("part IN (6, 8)", columns=["col1"])
    tasks = scan.tasks()
    assert len(tasks) == 2 and all(t.deletes is not None for t in tasks)
    full = table.to_arrow()
    expected = full.filter(pc.field("part").isin([6, 8])).select(["col1"]).sort_by("col1")
    assert expected.num_rows < sum(t.record_count or 0 for t in tasks)
    assert scan.to_arrow().sort_by("col1").equals(expected)


# ------------------------------------------------------------------------------ the Scan API


def test_tasks_carry_what_a_reader_needs(corpus: Path) -> None:
    root = corpus / "delta" / "golden__dv-partitioned-with-checkpoint"
    scan = lakecore.open(str(root)).scan("part = 6 AND col1 > 0")
    task = next(t for t in scan.tasks() if t.deletes is not None)
    assert task.path.startswith(str(root) + "/") and Path(task.path).exists()
    assert (task.format, task.file_format) == ("delta", "parquet")
    assert task.partition_values == {"part": 6}
    assert task.size > 0 and task.record_count is not None
    assert set(task.deletes or {}) == {"cardinality", "descriptor"}
    assert str(task.residual) == "part = 6 AND col1 > 0"


def test_rows_and_context_pickle_and_read_elsewhere(corpus: Path) -> None:
    """What a Spark executor does: unpickle the context and the planned rows, read them."""
    scan = open_table(corpus, "golden__dv-partitioned-with-checkpoint").scan("col1 >= 3")
    shipped = pickle.loads(pickle.dumps((scan.context, scan.files(), scan.predicate)))
    assert shipped[0] == scan.context and shipped[1].equals(scan.files())
    context, files, residual = shipped
    assert context.storage is None and scan.context.storage is not None
    batches = list(read_files(context, files, ["col1"], residual))
    got = pa.Table.from_batches(batches).sort_by("col1")
    assert got.equals(scan.to_arrow().select(["col1"]).sort_by("col1"))


def test_projection_without_the_filtered_column(corpus: Path) -> None:
    table = open_table(corpus, "golden__data-skipping-partition-and-data-column")
    result = table.scan("part = 0", columns=["id"]).to_arrow()
    assert result.schema.names == ["id"] and sorted(result.column("id").to_pylist()) == [0, 1]
    assert table.scan("part = 5", columns=["id"]).to_arrow().schema.names == ["id"]
    assert table.scan(columns=[]).to_arrow().num_rows == 4
    assert table.scan("part = 0", columns=[]).to_arrow().num_rows == 2


def test_batches_hold_only_matching_rows(corpus: Path) -> None:
    scan = open_table(corpus, "golden__dv-partitioned-with-checkpoint").scan("col1 < 5")
    for batch in scan.to_batches():
        assert batch.num_rows and pc.all(pc.less(batch.column("col1"), 5)).as_py()


def test_where_forms_agree(corpus: Path) -> None:
    table = open_table(corpus, "golden__dv-partitioned-with-checkpoint")
    forms = [
        "part = 1 AND col1 IN (1, 5, 9)",
        col("part").eq(1) & col("col1").isin([1, 5, 9]),
        (pc.field("part") == 1) & pc.field("col1").isin([1, 5, 9]),
    ]
    results = [table.scan(w).to_arrow().sort_by("col1") for w in forms]
    assert results[0].num_rows > 0
    assert all(r.equals(results[0]) for r in results)
    assert len({table.scan(w).where_sql for w in forms[:2]}) == 1


def test_explain_renders(corpus: Path) -> None:
    table = open_table(corpus, "deltars__delta-0.8.0-partitioned")
    explain = table.scan("year = '2021'", columns=["value"]).explain()
    text = str(explain)
    assert "6 total -> 3 after partition pruning -> 3 after stats pruning" in text
    assert "predicate: year = '2021'" in text and "columns:   value" in text
    assert explain.files_pruned == 3 and 0 < explain.bytes_to_read < explain.bytes_total
    no_filter = table.scan().explain()
    assert no_filter.files_after_stats_pruning == 6 and "predicate: (none)" in str(no_filter)


def test_snapshot_scan(corpus: Path) -> None:
    snapshot = open_table(corpus, "deltars__delta-0.8.0-partitioned").snapshot()
    assert counts(snapshot.scan("month = '12'")) == (6, 2, 2)


# ------------------------------------------------------------------------------ errors first


def test_syntax_errors_raise_before_any_io(corpus: Path, tmp_path: Path) -> None:
    root = tmp_path / "t"
    shutil.copytree(corpus / "delta" / "deltars__delta-0.8.0-partitioned", root)
    table = lakecore.open(str(root))
    shutil.rmtree(root)
    with pytest.raises(PredicateError):
        table.scan("year = = 1")
    with pytest.raises(PredicateError):
        table.scan(pc.field("year").cast(pa.int32()) == 1)


def test_unknown_columns_raise_before_files_are_indexed(
    corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_index(self: DeltaSnapshotSource) -> pa.Table:
        raise AssertionError("the file index must not be built")

    table = open_table(corpus, "deltars__delta-0.8.0-partitioned")
    monkeypatch.setattr(DeltaSnapshotSource, "files", no_index)
    with pytest.raises(SchemaError, match="nope"):
        table.scan("nope = 1")
    with pytest.raises(SchemaError, match="nope"):
        table.scan(columns=["value", "nope"])
    with pytest.raises(PredicateError, match="expected text"):
        table.scan(col("value").eq(1.5))
    with pytest.raises(TypeError):
        table.scan(columns="value")


def test_table_scan_docstring_example_runs() -> None:
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    (test,) = finder.find(Table.scan, "Table.scan", globs={})
    assert test.examples
    result = runner.run(test)
    assert result.failed == 0 and result.attempted == len(test.examples)
