"""``lakecore.spark.read(native=...)``: Spark's own Parquet reader for files lakecore adds
nothing to gives exactly lakecore's rows, and every file it cannot vouch for stays with the
task list.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark", reason="needs pyspark (pip install 'lakecore[spark]')")

import lakecore
import lakecore.spark
from lakecore.errors import CorruptTableError
from lakecore.model import files as fi
from lakecore.spark import native, native_footer
from lakecore.spark.native import split_native
from lakecore.spark.native_footer import fits, same_type

from .helpers import same_rows, to_arrow

NATIVE_CORPUS = (
    "deltars__delta-0.8.0-null-partition",  # a null partition value
    "golden__data-reader-partition-values",  # a partition column of every type
    "gen__partitioned_special_chars",  # escaped partition paths; more groups than the cap
    "golden__dv-partitioned-with-checkpoint",  # some files with DVs: union with the task list
    "golden__type-widening",  # a widened file stays with the task list
    "golden__data-reader-nested-struct",  # nested and case-insensitive names
    "golden__data-reader-timestamp_ntz",
    "gen__schema_evolution",  # columns missing from older files
)
"""Corpus Delta tables read with ``native=True`` in the default run (every one of the 62
corpus tables that qualify with ``-m slow``)."""


def _expected(path: Path) -> pa.Table:
    return lakecore.open(str(path)).to_arrow()


def _check(spark: Any, corpus: Path, path: Path) -> tuple[int, int]:
    """Read ``path`` natively; return (native groups, files left to the task list)."""
    table = lakecore.open(str(path))
    scan = table.scan()
    split = split_native(scan, scan.reading_files(), True)
    expected = table.to_arrow()
    df = lakecore.spark.read(spark, str(path), native=True)
    assert df.schema == lakecore.spark.to_spark_schema(expected.schema), path.name
    assert same_rows(corpus, to_arrow(df), expected), path.name
    return len(split.groups), split.rest.num_rows


@pytest.mark.spark
def test_native_reads_of_corpus_tables_are_lakecore_s_rows(spark: Any, corpus: Path) -> None:
    results = {name: _check(spark, corpus, corpus / "delta" / name) for name in NATIVE_CORPUS}
    assert len(results) == len(NATIVE_CORPUS)
    assert all(groups for groups, _ in results.values()), results
    # Some tables mix Spark's reader and the task list (DVs, a widened file, group cap).
    assert results["golden__dv-partitioned-with-checkpoint"][1] > 0
    assert results["golden__type-widening"][1] > 0
    assert results["gen__partitioned_special_chars"] == (native.NATIVE_MAX_GROUPS, 22)


@pytest.mark.spark
@pytest.mark.slow
def test_every_qualifying_corpus_table(spark: Any, corpus: Path) -> None:
    native_tables = 0
    for path in sorted((corpus / "delta").iterdir()):
        try:
            table = lakecore.open(str(path))
            table.to_arrow()
        except lakecore.LakecoreError:
            continue  # corrupt or unsupported: lakecore's own tests cover the refusal
        scan = table.scan()
        files = scan.reading_files()
        if files.num_rows and split_native(scan, files, True).groups:
            _check(spark, corpus, path)
            native_tables += 1
    assert native_tables >= 60


SCHEMA = pa.schema([("id", pa.int64()), ("d", pa.date32()), ("ts", pa.timestamp("us", "UTC"))])


def _table(tmp_path: Path, rows: pa.Table | None = None, **create: Any) -> lakecore.Table:
    t = lakecore.create(str(tmp_path / "t"), SCHEMA, **create)
    t.append(rows if rows is not None else _rows([1, 2, 3]))
    return t


def _rows(ids: list[int], partition: str | None = None) -> pa.Table:
    data: dict[str, Any] = {
        "id": pa.array(ids, pa.int64()),
        "d": pa.array([dt.date(1, 1, 1)] * len(ids), pa.date32()),
        "ts": pa.array(
            [dt.datetime(1500, 3, 1, 12, tzinfo=dt.timezone.utc)] * len(ids),
            pa.timestamp("us", "UTC"),
        ),
    }
    if partition is not None:
        data["p"] = [partition] * len(ids)
    return pa.table(data)


def _split(t: lakecore.Table, native_: bool | None = True, where: str | None = None) -> Any:
    scan = t.scan(where)
    return split_native(scan, scan.reading_files(), native_)


@pytest.mark.spark
def test_old_dates_read_as_lakecore_reads_them(spark: Any, tmp_path: Path) -> None:
    """Files without Spark's calendar marks (lakecore's own) are read without rebasing,
    whatever the session's rebase mode (LEGACY would shift dates before 1582; EXCEPTION,
    Spark 3's default, would fail on them)."""
    t = _table(tmp_path)
    assert _split(t).groups
    conf = "spark.sql.parquet.datetimeRebaseModeInRead"
    spark.conf.set(conf, "LEGACY")
    try:
        got = to_arrow(lakecore.spark.read(spark, t.uri, native=True)).sort_by("id")
    finally:
        spark.conf.unset(conf)
    assert got.equals(t.to_arrow().sort_by("id"))


@pytest.mark.spark
def test_a_file_gone_after_planning_fails_the_job(spark: Any, tmp_path: Path) -> None:
    t = _table(tmp_path)
    df = lakecore.spark.read(spark, t.uri, native=True)
    (path,) = t.snapshot().files().column(fi.PATH).to_pylist()
    os.remove(os.path.join(t.uri, path))
    spark.conf.set("spark.sql.files.ignoreMissingFiles", "true")
    try:
        with pytest.raises(Exception, match=r"(?i)not exist|FileNotFound"):
            df.collect()
    finally:
        spark.conf.unset("spark.sql.files.ignoreMissingFiles")


def test_a_file_missing_at_planning_is_corrupt_table(tmp_path: Path) -> None:
    t = _table(tmp_path)
    (path,) = t.snapshot().files().column(fi.PATH).to_pylist()
    os.remove(os.path.join(t.uri, path))
    with pytest.raises(CorruptTableError, match="missing"):
        _split(t)


def test_by_default_only_large_local_files(tmp_path: Path, monkeypatch: Any) -> None:
    t = _table(tmp_path)
    assert not _split(t, None).groups  # a few hundred bytes
    monkeypatch.setattr(native, "NATIVE_MIN_BYTES", 0)
    assert _split(t, None).groups
    assert not _split(t, False).groups


def test_a_predicate_keeps_the_task_list(tmp_path: Path) -> None:
    t = _table(tmp_path)
    assert not _split(t, where="id > 1").groups


def test_deletion_vectors_keep_their_files_with_the_task_list(tmp_path: Path) -> None:
    t = _table(tmp_path, properties={"delta.enableDeletionVectors": "true"})
    t.append(_rows([4, 5]))
    t.delete("id = 2")
    split = _split(t)
    assert split.rest.num_rows == 1 and split.rest.column(fi.DELETION)[0].is_valid
    assert sum(len(uris) for _, uris in split.groups) == 1


def test_column_mapping_keeps_the_task_list(tmp_path: Path) -> None:
    t = _table(tmp_path, properties={"delta.columnMapping.mode": "name"})
    assert not _split(t).groups


def test_non_nullable_output_keeps_the_task_list(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    t = lakecore.create(str(tmp_path / "t"), schema)
    t.append(pa.table({"id": [1]}, schema=schema))
    assert not _split(t).groups


def test_partition_groups_carry_the_index_values(tmp_path: Path) -> None:
    schema = SCHEMA.append(pa.field("p", pa.string()))
    t = lakecore.create(str(tmp_path / "t"), schema, partition_by=["p"])
    t.append(pa.concat_tables([_rows([1], "a"), _rows([2, 3], "b")]))
    split = _split(t)
    assert sorted(values["p"] for values, _ in split.groups) == ["a", "b"]
    assert all(uri.startswith("file:///") for _, uris in split.groups for uri in uris)


def test_paths_spark_would_glob_or_hide_stay_with_the_task_list() -> None:
    paths = ["a.parquet", "p=[x]/a.parquet", "b*.parquet", "_hidden.parquet", "d/.x.parquet"]
    files = pa.table(
        {fi.PATH: paths, fi.SIZE: pa.array([100] * len(paths), pa.int64())},
    )
    assert native._plain_rows(files, 0).to_pylist() == [True, False, False, False, False]


def _footer(tmp_path: Path, table: pa.Table, **write: Any) -> pq.FileMetaData:
    path = tmp_path / f"f{len(list(tmp_path.iterdir()))}.parquet"
    pq.write_table(table, path, **write)
    return pq.read_metadata(path)


def test_footers_spark_reads_differently_are_refused(tmp_path: Path) -> None:
    fields = [pa.field("id", pa.int64()), pa.field("ts", pa.timestamp("us", "UTC"))]
    good = pa.table({"id": [1], "ts": pa.array([0], pa.timestamp("us", "UTC"))})
    assert fits(_footer(tmp_path, good), fields)
    assert fits(_footer(tmp_path, good.select(["id"])), fields)  # missing: nulls for both
    assert not fits(
        _footer(tmp_path, good.cast(pa.schema([("id", pa.int32()), fields[1]]))), fields
    )
    assert not fits(_footer(tmp_path, good, use_deprecated_int96_timestamps=True), fields)
    assert not fits(_footer(tmp_path, good.rename_columns(["ID", "ts"])), fields)
    twice = pa.table({"id": [1], "Id": [2]})
    assert not fits(_footer(tmp_path, twice), fields[:1])
    legacy = good.replace_schema_metadata({"org.apache.spark.legacyDateTime": ""})
    assert not fits(_footer(tmp_path, legacy), fields)
    spark2 = good.replace_schema_metadata({"org.apache.spark.version": "2.4.8"})
    assert not fits(_footer(tmp_path, spark2), fields)
    spark3 = good.replace_schema_metadata({"org.apache.spark.version": "3.5.1"})
    assert fits(_footer(tmp_path, spark3), fields)


def test_same_type_is_exact_but_for_nullability_and_list_names() -> None:
    assert same_type(pa.list_(pa.field("element", pa.int64())), pa.list_(pa.int64()))
    assert not same_type(pa.list_(pa.int32()), pa.list_(pa.int64()))
    assert not same_type(pa.large_string(), pa.string())
    assert not same_type(pa.struct([("a", pa.int64())]), pa.struct([("A", pa.int64())]))
    assert not same_type(
        pa.struct([("a", pa.int64())]), pa.struct([("a", pa.int64()), ("b", pa.int64())])
    )
    assert same_type(pa.map_(pa.string(), pa.int64()), pa.map_(pa.string(), pa.int64()))
    assert not same_type(pa.timestamp("ms", "UTC"), pa.timestamp("us", "UTC"))
    assert not same_type(pa.timestamp("us"), pa.timestamp("us", "UTC"))


@pytest.mark.spark
def test_names_with_dots_and_backticks(spark: Any, tmp_path: Path) -> None:
    schema = pa.schema([("a.b", pa.int64()), ("c`d", pa.string())])
    t = lakecore.create(str(tmp_path / "t"), schema)
    t.append(pa.table({"a.b": [1, 2], "c`d": ["x", "y"]}, schema=schema))
    assert _split(t).groups
    got = to_arrow(lakecore.spark.read(spark, t.uri, native=True))
    assert got.sort_by("a.b").equals(t.to_arrow().sort_by("a.b"))


def test_a_path_listed_twice_stays_with_the_task_list(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.append(_rows([4]))
    scan = t.scan()
    files = scan.reading_files()
    twice = pa.concat_tables([files, files.slice(0, 1)])
    split = split_native(scan, twice, True)
    assert split.rest.num_rows == 2
    assert sum(len(uris) for _, uris in split.groups) == 1


def test_timestamps_must_agree_with_the_parquet_types(tmp_path: Path) -> None:
    ntz = _footer(tmp_path, pa.table({"ts": pa.array([0], pa.timestamp("us"))}))
    agree = native_footer._timestamps_agree
    assert agree(ntz.schema, pa.schema([("ts", pa.timestamp("us"))]))
    # An ARROW:schema claiming a zone for a Parquet timestamp not adjusted to UTC.
    assert not agree(ntz.schema, pa.schema([("ts", pa.timestamp("us", "UTC"))]))
    assert not agree(ntz.schema, pa.schema([("ts", pa.int64())]))
    millis = _footer(tmp_path, pa.table({"ts": pa.array([0], pa.timestamp("ms", "UTC"))}))
    assert not agree(millis.schema, millis.schema.to_arrow_schema())


def test_types_spark_reads_otherwise_keep_the_task_list(tmp_path: Path) -> None:
    for t in (pa.duration("us"), pa.uint32(), pa.large_string(), pa.timestamp("ns", "UTC")):
        assert not native._plain_field(pa.field("x", t)), t
        assert not native._plain_field(pa.field("x", pa.list_(t))), t
    assert native._plain_field(pa.field("x", pa.map_(pa.string(), pa.decimal128(10, 2))))
