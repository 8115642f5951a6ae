"""Data out (issue 14): Arrow C streams, pandas, bounded ``to_batches``, ``head``/``limit``
reading only the files they need, and ``count()`` from the file index where it is exact."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from lakecore_delta import reader as delta_reader
from lakecore_hudi import base_files as hudi_base_files

import lakecore
from lakecore.errors import CorruptTableError, InvalidArgumentError, UnsupportedFeatureError
from lakecore.expr import tree as ex
from lakecore.model import files as fi
from lakecore.planning import scan as scan_module
from lakecore.storage import open_storage
from lakecore.testing.faults import CountingStorage

from .corpus import CORPUS

SCHEMA = pa.schema([("region", pa.string()), ("id", pa.int64()), ("v", pa.string())])
FORMATS = ("delta", "hudi", "lance")


def rows(start: int, n: int, region: str | None = "eu") -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"region": [region] * n, "id": ids, "v": [f"v{i}" for i in ids]}, schema=SCHEMA)


def five_files(root: Path, fmt: str, partition_by: tuple[str, ...] = ()) -> lakecore.Table:
    """A table of 5 appends (one data file each) of 10 rows: ids 0..49, regions eu/us/eu/..."""
    table = lakecore.create(str(root), SCHEMA, format=fmt, partition_by=list(partition_by))
    for k in range(5):
        table.append(rows(10 * k, 10, "eu" if k % 2 == 0 else "us"))
    return table


def sort(table: pa.Table) -> pa.Table:
    return table.sort_by([(name, "ascending") for name in table.column_names])


# ------------------------------------------------------------------ Arrow streams, pandas


@pytest.fixture
def delta_table(tmp_path: Path) -> lakecore.Table:
    return five_files(tmp_path / "t", "delta", ("region",))


def test_arrow_c_stream_on_table_snapshot_and_scan(delta_table: lakecore.Table) -> None:
    expected = delta_table.to_arrow()
    snapshot = delta_table.snapshot()
    scan = delta_table.scan("id >= 20", columns=["id"])
    assert pa.table(delta_table).equals(expected)
    assert pa.table(snapshot).equals(expected)
    assert pa.RecordBatchReader.from_stream(snapshot).read_all().equals(expected)
    assert pa.table(scan).equals(scan.to_arrow())
    assert sorted(pa.table(scan).column("id").to_pylist()) == list(range(20, 50))
    capsule = scan.__arrow_c_stream__()
    assert type(capsule).__name__ == "PyCapsule"


def test_arrow_c_stream_requested_schema(delta_table: lakecore.Table) -> None:
    schema = delta_table.snapshot().schema
    reader = pa.RecordBatchReader.from_stream(delta_table, schema=schema)
    assert reader.read_all().num_rows == 50


def test_arrow_c_stream_sees_new_commits(delta_table: lakecore.Table) -> None:
    delta_table.append(rows(100, 3))
    assert pa.table(delta_table).num_rows == 53


def test_errors_while_streaming(delta_table: lakecore.Table) -> None:
    """A lakecore reader raises CorruptTableError; across the C stream (which carries only a
    message) a consumer gets pyarrow's ArrowInvalid with lakecore's message."""
    path = delta_table.snapshot().files().column(fi.PATH)[2].as_py()
    os.remove(Path(delta_table.uri) / path)
    with pytest.raises(CorruptTableError, match="missing from storage"):
        delta_table.scan().to_reader().read_all()
    with pytest.raises(CorruptTableError, match="missing from storage"):
        list(delta_table.to_batches())
    with pytest.raises(pa.ArrowInvalid, match="missing from storage"):
        pa.table(delta_table)


def test_polars_and_duckdb_read_the_stream(delta_table: lakecore.Table) -> None:
    polars = pytest.importorskip("polars", reason="polars is not installed in .venv")
    duckdb = pytest.importorskip("duckdb", reason="duckdb is not installed in .venv")
    assert polars.DataFrame(delta_table).height == 50
    stream = delta_table.scan(columns=["id"])
    assert duckdb.sql("select count(*) from stream").fetchone() == (50,)  # by its name
    del stream


def test_to_pandas(delta_table: lakecore.Table) -> None:
    expected = delta_table.to_arrow().to_pandas()
    assert delta_table.to_pandas().equals(expected)
    assert delta_table.snapshot().to_pandas().equals(expected)
    assert delta_table.scan().to_pandas().equals(expected)
    assert list(delta_table.to_pandas(columns=["id"]).columns) == ["id"]


def test_to_pandas_without_pandas(
    delta_table: lakecore.Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(__import__("sys").modules, "pandas", None)
    with pytest.raises(UnsupportedFeatureError, match="pip install pandas"):
        delta_table.to_pandas()


# ------------------------------------------------------------------ to_batches


def test_to_batches_respects_batch_size(delta_table: lakecore.Table) -> None:
    for source in (delta_table, delta_table.snapshot()):
        batches = list(source.to_batches(batch_size=3))
        assert max(b.num_rows for b in batches) == 3
        assert sort(pa.Table.from_batches(batches)).equals(sort(delta_table.to_arrow()))
    batches = list(delta_table.scan("id < 25").to_batches(batch_size=4))
    assert max(b.num_rows for b in batches) <= 4
    assert sum(b.num_rows for b in batches) == 25


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "10"])
def test_to_batches_rejects_bad_batch_size(delta_table: lakecore.Table, bad: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        delta_table.scan().to_batches(batch_size=bad)


def test_delta_large_file_streams_in_bounded_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file above SMALL_FILE_BYTES comes from the reader in READ_BATCH_ROWS pieces."""
    table = lakecore.create(str(tmp_path / "t"), SCHEMA)
    table.append(rows(0, 1000))
    monkeypatch.setattr(delta_reader, "SMALL_FILE_BYTES", 0)
    monkeypatch.setattr(delta_reader, "READ_BATCH_ROWS", 64)
    seen: list[int] = []
    original = scan_module.read_files

    def spy(*args: Any, **kwargs: Any) -> Iterator[pa.RecordBatch]:
        for batch in original(*args, **kwargs):
            seen.append(batch.num_rows)
            yield batch

    monkeypatch.setattr(scan_module, "read_files", spy)
    out = pa.Table.from_batches(list(table.to_batches(batch_size=1000)))
    assert max(seen) == 64 and sum(seen) == 1000
    assert out.column("id").to_pylist() == list(range(1000))


DV_TABLES = ("deltars__table-with-dv-small", "golden__dv-partitioned-with-checkpoint")


@pytest.mark.parametrize("name", DV_TABLES)
def test_delta_streamed_deletion_vectors_keep_positions(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Streaming a file in tiny batches drops exactly the rows its deletion vector names."""
    table = lakecore.open(str(CORPUS / "delta" / name))
    assert table.snapshot().features.merge_on_read
    whole = sort(table.to_arrow())
    monkeypatch.setattr(delta_reader, "SMALL_FILE_BYTES", 0)
    monkeypatch.setattr(delta_reader, "READ_BATCH_ROWS", 1)
    assert sort(table.to_arrow()).equals(whole)


@pytest.mark.parametrize("read_optimized", [False, True])
def test_hudi_base_files_stream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_optimized: bool
) -> None:
    """A Hudi slice without log files streams its Parquet base file in pieces."""
    table = lakecore.create(str(tmp_path / "h"), SCHEMA, format="hudi")
    table.append(rows(0, 300))
    monkeypatch.setattr(hudi_base_files, "READ_BATCH_ROWS", 7)
    batches = list(table.to_batches(batch_size=1000))
    assert max(b.num_rows for b in batches) == 7
    assert sorted(pa.Table.from_batches(batches).column("id").to_pylist()) == list(range(300))


# ------------------------------------------------------------------ head / limit


def data_files_read(storage: CountingStorage, fmt: str) -> set[str]:
    """Data files (not metadata) whose bytes were read."""
    skip = {"delta": "_delta_log/", "hudi": ".hoodie/", "lance": "_versions/"}[fmt]
    return {p for p, n in storage.bytes.items() if n and skip not in p and "_indices" not in p}


@pytest.mark.parametrize("fmt", FORMATS)
def test_head_plans_only_the_first_files(
    tmp_path: Path, fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every format: a limited scan hands the reader only the leading file-index rows."""
    snapshot = five_files(tmp_path / "t", fmt).snapshot()
    paths = snapshot.files().column(fi.PATH).to_pylist()
    planned: list[list[str]] = []
    original = scan_module.read_files

    def spy(context: Any, files: pa.Table, *args: Any, **kw: Any) -> Any:
        planned.append(files.column(fi.PATH).to_pylist())
        return original(context, files, *args, **kw)

    monkeypatch.setattr(scan_module, "read_files", spy)
    everything = snapshot.to_arrow()  # file-index order (Hudi's is not commit order)
    planned.clear()
    assert snapshot.head(7).equals(everything.slice(0, 7))
    assert snapshot.head(10).num_rows == 10
    assert snapshot.scan(columns=["id"], limit=11).to_arrow().num_rows == 11
    assert snapshot.head(0).num_rows == 0
    assert snapshot.head(500).num_rows == 50
    assert planned == [paths[:1], paths[:1], paths[:2], [], paths]


@pytest.mark.parametrize("fmt", ["delta", "hudi"])  # pylance reads Lance files itself
def test_head_reads_only_the_first_files(tmp_path: Path, fmt: str) -> None:
    five_files(tmp_path / "t", fmt)
    storage = CountingStorage(open_storage(str(tmp_path / "t")))
    snapshot = lakecore.open(str(tmp_path / "t"), storage=storage).snapshot()
    assert snapshot.files().num_rows == 5  # the index (Hudi: base-file footers) read here
    storage.bytes.clear()
    first = snapshot.head(7)
    assert first.num_rows == 7
    read = data_files_read(storage, fmt)
    assert len(read) == 1, read
    storage.bytes.clear()
    assert snapshot.scan(columns=["id"], limit=15).to_arrow().num_rows == 15
    assert len(data_files_read(storage, fmt)) == 2
    storage.bytes.clear()
    assert snapshot.head(0).num_rows == 0
    assert data_files_read(storage, fmt) == set()


def test_limit_keeps_order_and_where(delta_table: lakecore.Table) -> None:
    everything = delta_table.scan("id % 3 = 0").to_arrow()
    limited = delta_table.scan("id % 3 = 0", limit=4).to_arrow()
    assert limited.equals(everything.slice(0, 4))
    scan = delta_table.scan(columns=["id"]).with_limit(12)
    assert scan.to_arrow().num_rows == 12 and scan.count() == 12
    assert len(list(scan.to_batches(batch_size=5))) == 3
    assert pa.table(scan).num_rows == 12
    assert "limit=12" in repr(scan)
    assert delta_table.head(1000).num_rows == 50


@pytest.mark.parametrize("bad", [-1, 2.0, None])
def test_head_rejects_bad_n(delta_table: lakecore.Table, bad: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        delta_table.scan().with_limit(bad)


def test_head_with_partition_predicate_plans_by_counts(tmp_path: Path) -> None:
    five_files(tmp_path / "t", "delta", ("region",))
    storage = CountingStorage(open_storage(str(tmp_path / "t")))
    snapshot = lakecore.open(str(tmp_path / "t"), storage=storage).snapshot()
    snapshot.files()
    storage.bytes.clear()
    ids = snapshot.scan("region = 'us'", limit=5).to_arrow().column("id").to_pylist()
    assert ids == list(range(10, 15))
    assert len(data_files_read(storage, "delta")) == 1


# ------------------------------------------------------------------ count


def corpus_tables(fmt: str) -> list[str]:
    return sorted(os.listdir(CORPUS / fmt))


def readable(fmt: str, name: str) -> lakecore.Table | None:
    try:
        table = lakecore.open(str(CORPUS / fmt / name))
        table.to_arrow()
        return table
    except lakecore.LakecoreError:
        # A table lakecore refuses (its own tests pin why) or one whose data files the
        # corpus left out: count() from metadata does not open data files, so it cannot tell.
        return None


CORPUS_COUNTS = {"delta": 101, "hudi": 20, "lance": 17}
"""Corpus tables lakecore reads, per format (count() must equal the rows read on each)."""


@pytest.mark.parametrize("fmt", FORMATS)
def test_count_equals_rows_read_on_the_corpus(fmt: str) -> None:
    ran = 0
    for name in corpus_tables(fmt):
        table = readable(fmt, name)
        if table is None:
            continue
        assert table.count() == table.to_arrow().num_rows, name
        ran += 1
    assert ran == CORPUS_COUNTS[fmt]


def partition_predicates(files: pa.Table, columns: tuple[str, ...]) -> list[ex.Predicate]:
    """Predicates over one partition column: = the first file's value, IS NULL, NOT =."""
    out: list[ex.Predicate] = []
    for name in columns:
        value = pc.struct_field(files.column(fi.PARTITION), name)[0].as_py()
        column = ex.Column(name)
        out.append(ex.IsNull(column))
        out.append(ex.Not(ex.IsNull(column)))
        if value is not None:
            out.append(ex.Comparison("=", column, ex.Literal(value)))
            out.append(ex.Not(ex.Comparison("=", column, ex.Literal(value))))
    return out


def test_count_with_partition_predicates_on_the_corpus() -> None:
    """Counted from partition values alone, it equals what the read path filters."""
    ran = tables = 0
    for fmt in ("delta", "hudi"):
        for name in corpus_tables(fmt):
            table = readable(fmt, name)
            if table is None:
                continue
            scan = table.scan()
            files, columns = scan.files(), scan.context.partition_columns
            if not columns or files.num_rows == 0:
                continue
            tables += 1
            for predicate in partition_predicates(files, columns):
                expected = table.scan(predicate).to_arrow().num_rows
                assert table.count(predicate) == expected, (name, str(predicate))
                ran += 1
    assert (tables, ran) == (37, 228)


def test_count_reads_no_data_file_without_a_row_filter(tmp_path: Path) -> None:
    table = five_files(tmp_path / "t", "delta", ("region",))
    table.set_properties({"delta.enableDeletionVectors": "true"})
    table.delete("id % 4 = 0")
    assert table.snapshot().files().column(fi.DELETION).null_count < 5
    storage = CountingStorage(open_storage(str(tmp_path / "t")))
    counted = lakecore.open(str(tmp_path / "t"), storage=storage).snapshot()
    counted.files()
    storage.bytes.clear()
    assert counted.count() == 50 - 13 == counted.to_arrow().num_rows
    storage.bytes.clear()
    assert counted.count("region = 'us'") == 20 - 4  # 12, 16, 32, 36
    assert counted.count("region = 'eu' OR region IS NULL") == 30 - 9
    assert data_files_read(storage, "delta") == set()
    assert not any(p.endswith(".bin") for p in storage.bytes)  # deletion vectors unread


def test_count_reads_only_the_predicate_columns(
    delta_table: lakecore.Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[Any, Any]] = []
    original = scan_module.read_files

    def spy(context: Any, files: Any, columns: Any, residual: Any, **kw: Any) -> Any:
        calls.append((list(columns), residual))
        return original(context, files, columns, residual, **kw)

    monkeypatch.setattr(scan_module, "read_files", spy)
    assert delta_table.count("id > 41") == 8
    assert delta_table.count("region = 'eu' AND id < 5") == 5
    assert [c for c, _ in calls] == [[], []]
    assert all(residual is not None for _, residual in calls)
    calls.clear()
    assert delta_table.count("region != 'eu'") == 20
    assert calls == []


def test_count_hudi_mor_reads_only_slices_with_log_files() -> None:
    root = CORPUS / "hudi" / "mor_parquet_v6_simplekeygen_nonhivestyle"
    storage = CountingStorage(open_storage(str(root)))
    table = lakecore.open(str(root), storage=storage).snapshot()
    files = table.files()
    data_files = files.column(fi.DATA_FILES).to_pylist()
    with_logs = {
        p for p, d in zip(files.column(fi.PATH).to_pylist(), data_files, strict=True) if len(d) > 1
    }
    base_only = {d[0] for d in data_files if len(d) == 1}
    assert with_logs and base_only
    storage.bytes.clear()
    assert table.count() == table.to_arrow().num_rows
    storage.bytes.clear()
    table.count()
    read = data_files_read(storage, "hudi")
    assert not any(p.endswith(tuple(base_only)) for p in read)
    assert any(p.endswith(tuple(with_logs)) for p in read)


def test_count_with_limit_and_versions(delta_table: lakecore.Table) -> None:
    assert delta_table.scan(limit=7).count() == 7
    assert delta_table.count(version=1) == 10
    assert delta_table.snapshot(2).count("region = 'us'") == 10
    assert delta_table.snapshot().count("id IS NULL") == 0
