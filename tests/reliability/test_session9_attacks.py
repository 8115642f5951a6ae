"""Attack review of session 9's changes (review9).

- 71b9890: ``Scan.files()`` on a predicate-scoped Hudi index returns its pruned rows; they must
  equal (every column) what a scan on the full index returns, with the same plan and count;
- 87a71cc: Hudi overwrite-where metrics from the index of the touched partitions only;
- 63883ca: the Delta reader fills partition columns from Arrow struct scalars;
- b7c8427: Delta log paths spelt with ``./`` or ``//`` name one file;
- c0096ad: Delta refuses a decimal scale outside 0..precision at create / schema merge.

Strict xfails pin: the c0096ad check refusing commits that write no Parquet (whole-file
delete, set_properties, add_constraint, an unrelated add_column) on a table whose log already
holds decimal(5,7), and rewrites of such a table failing as CommitStorageError; log paths whose
trailing ``/.`` or ``/`` (or a bare ``.``/empty path) carry no normalising marker; DML, append
and restore on a year-0 date partition raising a raw OverflowError (63883ca fixed reads only;
30c1302 the writes).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import shutil
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from lakecore_hudi.source import HudiSnapshotSource

import lakecore
from lakecore.errors import CorruptTableError, LakecoreError, MigrationError, SchemaError
from lakecore.migrate.run import migrate
from tests.delta.builders import DeltaTableBuilder, add, field, remove
from tests.hudi.write.helpers import CORPUS, copy_corpus_table

HUDI = CORPUS / "hudi"

# ----------------------------------------------------------------------------- 71b9890


def _literal(v: Any) -> str:
    return repr(v) if isinstance(v, str) else str(v)


def _predicates(table: lakecore.Table, partition_columns: list[str]) -> list[str]:
    """Partition-only, mixed, OR across partition and data columns, IN, NOT and null shapes
    over values the table holds."""
    data = table.to_arrow()
    data_columns = [
        f.name
        for f in data.schema
        if not f.name.startswith("_hoodie")
        and f.name not in partition_columns
        and (
            pa.types.is_integer(f.type)
            or pa.types.is_floating(f.type)
            or pa.types.is_string(f.type)
        )
    ][:3]
    out: list[str] = []
    for p in partition_columns:
        values = [v for v in data.column(p).unique().to_pylist() if v is not None][:2]
        for v in values:
            lit = _literal(v)
            out += [
                f"{p} = {lit}",
                f"NOT ({p} = {lit})",
                f"{p} IN ({lit})",
                f"{p} IS NULL",
                f"{p} = {lit} OR {p} IS NULL",
            ]
            for c in data_columns:
                known = data.column(c).drop_null()
                if len(known) == 0:
                    continue
                m = _literal(known[len(known) // 2].as_py())
                out += [
                    f"{p} = {lit} AND {c} > {m}",
                    f"{p} = {lit} OR {c} > {m}",
                    f"NOT ({p} = {lit} OR {c} <= {m})",
                    f"{p} = {lit} AND {c} IS NULL",
                    f"({p} = {lit} AND {c} > {m}) OR ({p} <> {lit} AND {c} < {m})",
                ]
    return out


def _scoped_equals_full(name: str, options: dict[str, str] | None, version: Any = None) -> int:
    root = str(HUDI / name)
    table = lakecore.open(root, options=options)
    source = table.snapshot().source
    assert isinstance(source, HudiSnapshotSource)
    partition_columns = list(source.scan_context().partition_columns)
    cases = 0
    for where in _predicates(table, partition_columns):
        scan = lakecore.open(root, options=options).scan(where, version=version)
        got, plan, count = scan.files(), scan.explain(), scan.count()
        reference_snapshot = lakecore.open(root, options=options).scan(version=version).snapshot
        reference_snapshot.files()  # the full index: Scan.files() prunes it
        reference = reference_snapshot.scan(where)
        assert got.equals(reference.files()), (name, options, where)
        assert plan == reference.explain(), (name, options, where)
        assert count == reference.count(), (name, options, where)
        cases += 1
    return cases


PARTITIONED = [
    "mor_avro_v8_trips_8i3u1d",  # metadata table with column_stats, log files
    "cow_v9_txns_simple_overwrite",  # column_stats
    "mor_parquet_v6_simplekeygen_nonhivestyle",  # no metadata table, log files
]


@pytest.mark.parametrize("name", PARTITIONED)
@pytest.mark.parametrize("options", [None, {"read_optimized": "true"}], ids=["snapshot", "ro"])
def test_scoped_index_files_equal_the_full_index_scan(
    name: str, options: dict[str, str] | None
) -> None:
    assert _scoped_equals_full(name, options) >= 10


@pytest.mark.slow
def test_scoped_index_files_equal_the_full_index_scan_on_every_corpus_table() -> None:
    cases = 0
    for root in sorted(HUDI.iterdir()):
        source = lakecore.open(str(root)).snapshot().source
        assert isinstance(source, HudiSnapshotSource)
        if not source.scan_context().partition_columns:
            continue
        for options in (None, {"read_optimized": "true"}):
            cases += _scoped_equals_full(root.name, options)
    assert cases >= 500


def test_scoped_index_files_equal_the_full_index_scan_at_older_versions() -> None:
    name = "mor_avro_v8_trips_8i3u1d"
    versions = lakecore.open(str(HUDI / name)).history()
    instants = [h.version for h in versions][1:3]  # not the latest: real time travel
    assert len(instants) >= 2
    cases = sum(_scoped_equals_full(name, None, version=v) for v in instants)
    assert cases >= 10


# ----------------------------------------------------------------------------- 87a71cc


def test_hudi_overwrite_where_counts_the_replaced_rows_after_a_scoped_scan(
    tmp_path: Path,
) -> None:
    root = copy_corpus_table("mor_parquet_v6_simplekeygen_nonhivestyle", tmp_path)
    table = lakecore.open(str(root))
    data = table.to_arrow()
    where = "byteField = 10"
    before = table.count(where)
    assert before == 2
    table.scan("byteField = 20").files()  # a scoped index of another partition, memoised
    new = data.filter(pc.equal(data.column("byteField"), 10)).slice(0, 1)
    new = new.drop_columns([c for c in new.column_names if c.startswith("_hoodie_")])
    result = table.overwrite(new, where=where)
    assert result.rows_deleted == before
    assert lakecore.open(str(root)).count(where) == 1


@pytest.mark.parametrize("name", ["mor_avro_v9_txns_nonpart_meta", "cow_v6_nonpartitioned"])
def test_hudi_overwrite_where_counts_on_a_non_partitioned_table(tmp_path: Path, name: str) -> None:
    """The touched partition path is '' here (files_of_partitions(frozenset({''})))."""
    root = copy_corpus_table(name, tmp_path)
    table = lakecore.open(str(root))
    data = table.to_arrow()
    column = "txn_ts" if "txn_ts" in data.column_names else "longField"
    top = pc.max(data.column(column)).as_py()
    where = f"{column} >= {top}"
    assert table.count(where) == 1
    new = data.filter(pc.greater_equal(data.column(column), top))
    new = new.drop_columns([c for c in new.column_names if c.startswith("_hoodie_")])
    result = table.overwrite(new, where=where)
    assert result.rows_deleted == 1
    assert lakecore.open(str(root)).count() == data.num_rows


# ----------------------------------------------------------------------------- 63883ca

PARTITION_VALUES: dict[str, pa.Array] = {
    "s": pa.array(["a", None, "x/y=z%", " é", "a:b"], pa.string()),
    "i": pa.array([1, -2, None, 2**31 - 1, 0], pa.int32()),
    "l": pa.array([1, -2, None, 2**62, 0], pa.int64()),
    "sh": pa.array([1, -2, None, 300, 0], pa.int16()),
    "by": pa.array([1, -2, None, 127, 0], pa.int8()),
    "b": pa.array([True, False, None, True, False]),
    "d": pa.array([dt.date(2020, 1, 1), dt.date(1, 1, 1), None, dt.date(9999, 12, 31), None]),
    "ts": pa.array(
        [dt.datetime(2020, 1, 1, 1, 2, 3, 456789), dt.datetime(1900, 1, 1), None, None, None],
        pa.timestamp("us", "UTC"),
    ),
    "tsn": pa.array(
        [dt.datetime(2020, 1, 1, 1, 2, 3, 456789), dt.datetime(1900, 1, 1), None, None, None],
        pa.timestamp("us"),
    ),
    "dec": pa.array(
        [decimal.Decimal(x) if x else None for x in ("1.23", "-0.01", None, "999.99", "0")],
        pa.decimal128(5, 2),
    ),
    "bin": pa.array([b"a", None, b"\x01q", b"z", b"a"], pa.binary()),
    "f": pa.array([1.5, float("nan"), None, -0.0, float("inf")], pa.float64()),
}


def _same(a: list[Any], b: list[Any]) -> bool:
    return [repr(x) for x in a] == [repr(x) for x in b]  # NaN equals NaN by repr


@pytest.mark.parametrize("name", list(PARTITION_VALUES))
def test_delta_partition_values_of_every_type_read_back(tmp_path: Path, name: str) -> None:
    values = PARTITION_VALUES[name]
    data = pa.table({name: values, "v": pa.array(range(5), pa.int64())})
    table = lakecore.create(str(tmp_path / "t"), data.schema, format="delta", partition_by=[name])
    table.append(data)
    got = lakecore.open(str(tmp_path / "t")).to_arrow().sort_by("v")
    assert got.schema.field(name).type == values.type
    assert _same(got.column(name).to_pylist(), values.to_pylist())
    only = lakecore.open(str(tmp_path / "t")).scan(columns=[name]).to_arrow()
    assert sorted(map(repr, only.column(name).to_pylist())) == sorted(map(repr, values.to_pylist()))
    # DML rewrites read the partition values through the same reader.
    table = lakecore.open(str(tmp_path / "t"))
    table.delete("v = 0")
    table.update({"v": "v + 10"}, "v = 1")
    after = lakecore.open(str(tmp_path / "t")).to_arrow().sort_by("v")
    expected = [values[i].as_py() for i in (2, 3, 4, 1)]
    assert _same(after.column(name).to_pylist(), expected)


def test_delta_partition_cases_ran() -> None:
    assert len(PARTITION_VALUES) == 12


# ----------------------------------------------------------------------------- b7c8427


def _builder(tmp_path: Path) -> DeltaTableBuilder:
    b = DeltaTableBuilder(tmp_path / "t")
    b.init([field("i", "long")])
    return b


def _one(b: DeltaTableBuilder, relative: str, log_path: str, value: int) -> dict[str, Any]:
    return b.data_file(relative, pa.table({"i": pa.array([value], pa.int64())}), log_path=log_path)


def test_a_checkpoint_of_spelt_otherwise_paths_keeps_the_live_files(tmp_path: Path) -> None:
    b = _builder(tmp_path)
    b.commit(
        1, _one(b, "sub/a.parquet", "sub//a.parquet", 1), _one(b, "b.parquet", "./b.parquet", 2)
    )
    b.commit(2, remove("sub/./a.parquet"))
    lakecore.open(b.uri).checkpoint()
    (b.log / f"{1:020d}.json").unlink()  # the checkpoint must carry the state alone
    table = lakecore.open(b.uri)
    assert table.snapshot().files().column("path").to_pylist() == ["b.parquet"]
    assert table.to_arrow().column("i").to_pylist() == [2]
    # delta-rs reads lakecore's checkpoint to the same file list (it cannot read './b' itself).
    peer = deltalake.DeltaTable(b.uri)
    assert [u.rsplit("/", 1)[-1] for u in peer.file_uris()] == ["b.parquet"]
    assert peer.to_pyarrow_table().column("i").to_pylist() == [2]


def test_names_ending_with_a_dot_reconcile_with_dot_segment_spellings(tmp_path: Path) -> None:
    b = _builder(tmp_path)
    b.commit(1, _one(b, "p=1./a.parquet", "p=1./a.parquet", 1), _one(b, "x.", "x.", 2))
    assert sorted(lakecore.open(b.uri).to_arrow().column("i").to_pylist()) == [1, 2]
    b.commit(2, remove("./p=1./a.parquet"), remove(".//x."))
    assert lakecore.open(b.uri).snapshot().files().num_rows == 0


def test_vacuum_keeps_files_referenced_under_dot_spellings(tmp_path: Path) -> None:
    b = _builder(tmp_path)
    b.commit(
        1, _one(b, "a.parquet", "./a.parquet", 1), _one(b, "sub/b.parquet", "sub//b.parquet", 2)
    )
    (b.root / "sub/orphan.parquet").write_bytes(b"x")  # proves vacuum deletes here
    for path in ("a.parquet", "sub/b.parquet", "sub/orphan.parquet"):
        os.utime(b.root / path, (1, 1))
    table = lakecore.open(b.uri)
    doomed = table.vacuum(retention_hours=0, enforce_retention=False, dry_run=False)
    assert doomed == ["sub/orphan.parquet"]
    assert sorted(lakecore.open(b.uri).to_arrow().column("i").to_pylist()) == [1, 2]


def test_lakecore_delete_removes_a_file_added_as_dot_slash(tmp_path: Path) -> None:
    b = _builder(tmp_path)
    b.commit(1, _one(b, "a.parquet", "./a.parquet", 1), _one(b, "b.parquet", "b.parquet", 2))
    lakecore.open(b.uri).delete("i = 1")
    assert lakecore.open(b.uri).to_arrow().column("i").to_pylist() == [2]
    assert lakecore.open(b.uri).scan(version=1).to_arrow().num_rows == 2


# ----------------------------------------------------------------------------- c0096ad


def _wide_scale_table(tmp_path: Path) -> str:
    """A Delta table (hand-written log, as another writer could leave it) whose schema holds
    ``decimal(5,7)``; its only data file has no such column (the column reads as nulls)."""
    b = DeltaTableBuilder(tmp_path / "t")
    b.init([field("x", "decimal(5,7)"), field("i", "long")])
    b.commit(1, b.data_file("a.parquet", pa.table({"i": pa.array([1, 2], pa.int64())})))
    return b.uri


def test_a_table_whose_log_holds_a_wide_scale_decimal_still_reads(tmp_path: Path) -> None:
    table = lakecore.open(_wide_scale_table(tmp_path))
    assert table.schema.field("x").type == pa.decimal128(5, 7)
    assert table.to_arrow().column("x").null_count == 2
    assert table.count("i > 1") == 1
    table.checkpoint()
    assert lakecore.open(table.uri).count() == 2


def test_a_whole_file_delete_on_a_wide_scale_table_commits(tmp_path: Path) -> None:
    """Fixed in session 9; was: c0096ad: a whole-file DELETE writes no Parquet, yet the commit re-
    renders the  schema through to_delta_type, which now raises SchemaError for decimal(5,7)
    already in  the log (succeeded before c0096ad); the check belongs to create/schema merge
    only
    """
    table = lakecore.open(_wide_scale_table(tmp_path))
    result = table.delete("i >= 1")
    assert result.rows_deleted == 2
    assert lakecore.open(table.uri).count() == 0


def test_set_properties_on_a_wide_scale_table_commits(tmp_path: Path) -> None:
    """Fixed in session 9; was: c0096ad: set_properties rewrites only metadata, yet to_delta_type
    refuses the  decimal(5,7) already in the table's schema with SchemaError (succeeded before
    c0096ad)
    """
    table = lakecore.open(_wide_scale_table(tmp_path))
    table.set_properties({"a.b": "c"})
    assert lakecore.open(table.uri).version == 2


def test_add_constraint_on_a_wide_scale_table_commits(tmp_path: Path) -> None:
    """Fixed in session 9; was: c0096ad: add_constraint rewrites only metadata, yet to_delta_type
    refuses the  decimal(5,7) already in the table's schema with SchemaError (succeeded before
    c0096ad)
    """
    table = lakecore.open(_wide_scale_table(tmp_path))
    table.add_constraint("positive", "i > 0")
    assert lakecore.open(table.uri).version == 2


@pytest.mark.parametrize("op", ["delete", "update"])
def test_a_rewrite_of_a_wide_scale_table_fails_as_a_schema_error(tmp_path: Path, op: str) -> None:
    """Fixed in session 9; was: a partial DELETE/UPDATE that rewrites a file of a decimal(5,7)
    table fails in  the Parquet writer and surfaces as CommitStorageError ('the storage raised
    OSError'),  the misclassification c0096ad fixed for create/append only; expected SchemaError
    """
    table = lakecore.open(_wide_scale_table(tmp_path))
    with pytest.raises(SchemaError, match="'x'"):
        if op == "delete":
            table.delete("i = 1")
        else:
            table.update({"i": "i + 1"}, "i = 1")
    assert lakecore.open(table.uri).version == 1


@pytest.mark.parametrize("t", [pa.decimal128(5, -2), pa.decimal128(3, 5)], ids=str)
def test_migration_of_a_wide_scale_lance_table_into_delta_is_a_typed_error(
    tmp_path: Path, t: pa.DataType
) -> None:
    data = pa.table({"id": pa.array([1, 2], pa.int64()), "x": pa.array([None, None], t)})
    source = lakecore.create(str(tmp_path / "src"), data.schema, format="lance")
    source.append(data)
    with pytest.raises(MigrationError, match="scale outside") as info:
        migrate(str(tmp_path / "src"), str(tmp_path / "dst"), "delta")
    assert isinstance(info.value, LakecoreError)
    assert lakecore.open(str(tmp_path / "src")).count() == 2
    shutil.rmtree(tmp_path / "src")


# Paths whose only dot segment or empty segment is at the end carry none of paths._MARKERS
# ('./' needs a following slash), so they skip contained_path's normalisation while a
# spelling of the same file that carries a marker elsewhere is normalised.


def test_a_remove_with_a_trailing_dot_segment_reconciles(tmp_path: Path) -> None:
    """Fixed in session 9; was: b7c8427: a remove spelt 'sub/a.parquet/.' carries no marker ('./'
    needs a  following '/'), so decode_paths keeps the trailing '/.' and it does not reconcile
    with  the add 'sub/a.parquet' (the file is read on), while 'sub/./a.parquet/.' (flagged) is
    normalised and does; Hadoop's Path normalises both (paths.py _MARKERS)
    """
    b = _builder(tmp_path)
    b.commit(1, _one(b, "sub/a.parquet", "sub/a.parquet", 1))
    b.commit(2, remove("sub/./a.parquet/."))
    assert lakecore.open(b.uri).snapshot().files().num_rows == 0  # the flagged spelling
    b.commit(2, remove("sub/a.parquet/."))
    assert lakecore.open(b.uri).snapshot().files().num_rows == 0


def test_a_remove_with_a_trailing_slash_reconciles(tmp_path: Path) -> None:
    """Fixed in session 9; was: b7c8427: a remove spelt 'sub/a.parquet/' (trailing slash, no
    marker) keeps the  slash and does not reconcile with the add 'sub/a.parquet', while
    './sub/a.parquet/'  (flagged) is normalised by contained_path and does (paths.py _MARKERS)
    """
    b = _builder(tmp_path)
    b.commit(1, _one(b, "sub/a.parquet", "sub/a.parquet", 1))
    b.commit(2, remove("./sub/a.parquet/"))
    assert lakecore.open(b.uri).snapshot().files().num_rows == 0  # the flagged spelling
    b.commit(2, remove("sub/a.parquet/"))
    assert lakecore.open(b.uri).snapshot().files().num_rows == 0


@pytest.mark.parametrize("log_path", [".", ""])
def test_an_add_naming_the_root_is_a_corrupt_log_however_spelt(
    tmp_path: Path, log_path: str
) -> None:
    """Fixed in session 9; was: an add naming the table root as '.' or '' carries no marker, skips
    contained_path (which refuses them: 'names no file') and fails at read as StorageError  'Is
    a directory', while '%2E' and './' (the same path) fail as CorruptTableError
    """
    b = _builder(tmp_path)
    b.commit(1, _one(b, "a.parquet", "a.parquet", 1), add(log_path, size=10))
    with pytest.raises(CorruptTableError, match="names no file"):
        lakecore.open(b.uri).to_arrow()


@pytest.mark.parametrize("log_path", ["%2E", "./", "./."])
def test_an_add_naming_the_root_through_a_marker_is_a_corrupt_log(
    tmp_path: Path, log_path: str
) -> None:
    b = _builder(tmp_path)
    b.commit(1, _one(b, "a.parquet", "a.parquet", 1), add(log_path, size=10))
    with pytest.raises(CorruptTableError, match="names no file"):
        lakecore.open(b.uri).to_arrow()


# 63883ca fixed reads of partition values Python cannot hold (a date of year 0); 30c1302 fixed
# the write paths (DML, append, restore), which turned them into Python.

YEAR_0_DAYS = -719_528


def _year_0_table(tmp_path: Path, cdf: bool = False) -> lakecore.Table:
    b = DeltaTableBuilder(tmp_path / "t")
    configuration = {"delta.enableChangeDataFeed": "true"} if cdf else {}
    b.init([field("i", "long"), field("p", "date")], ["p"], configuration)
    rows = pa.table({"i": pa.array([1, 2], pa.int64())})
    b.commit(1, b.data_file("p=0000-01-01/x.parquet", rows, partition_values={"p": "0000-01-01"}))
    return lakecore.open(b.uri)


def _delta_rs_rows(uri: str) -> list[tuple[int, int]]:
    """Sorted (i, p as days) as delta-rs reads them (its DataFusion reader: ``to_pyarrow_table``
    goes through Python dates, which cannot hold year 0)."""
    query = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(uri))
    got = pa.table(query.execute("select i, p from t").read_all())
    days = got.column("p").cast(pa.int32()).to_pylist()
    return sorted(zip(got.column("i").to_pylist(), days, strict=True))


def test_a_year_0_partition_reads_counts_and_filters(tmp_path: Path) -> None:
    table = _year_0_table(tmp_path)
    assert table.count("i = 1") == 1
    assert table.count("p < DATE '2000-01-01'") == 2
    assert table.head(1).column("p").cast(pa.int32()).to_pylist() == [YEAR_0_DAYS]


@pytest.mark.parametrize("op", ["delete", "update", "merge"])
def test_dml_on_a_year_0_partition(tmp_path: Path, op: str) -> None:
    """Fixed in 30c1302; was: raw OverflowError from write/dml.py touched_files (and
    merge.py merge_rows), which turned the index's partition values into Python (to_pylist)
    """
    table = _year_0_table(tmp_path)
    if op == "delete":
        table.delete("i = 1")
    elif op == "update":
        table.update({"i": "i + 10"}, "i = 1")
    else:
        source = pa.table({"i": pa.array([1], pa.int64())})
        table.merge(source, "target.i = source.i").when_matched_delete().execute()
    got = lakecore.open(table.uri).to_arrow()
    assert got.column("p").cast(pa.int32()).to_pylist() == [YEAR_0_DAYS] * got.num_rows
    assert sorted(got.column("i").to_pylist()) == ([2] if op != "update" else [2, 11])
    expected = [(i, YEAR_0_DAYS) for i in ([2] if op != "update" else [2, 11])]
    assert _delta_rs_rows(table.uri) == expected
    log = (Path(table.uri) / "_delta_log" / f"{2:020d}.json").read_text()
    assert '"partitionValues":{"p":"0000-01-01"}' in log


def test_append_of_a_year_0_partition_value_is_written(tmp_path: Path) -> None:
    """Fixed in 30c1302; was: raw OverflowError from write/data_files.py partition_slices
    (Scalar.as_py of the partition key)
    """
    table = _year_0_table(tmp_path)
    year_0 = pa.array([YEAR_0_DAYS], pa.int32()).cast(pa.date32())
    table.append(pa.table({"i": pa.array([5], pa.int64()), "p": year_0}))
    table = lakecore.open(table.uri)
    assert table.version == 2
    got = table.to_arrow()
    assert sorted(got.column("i").to_pylist()) == [1, 2, 5]
    assert got.column("p").cast(pa.int32()).to_pylist() == [YEAR_0_DAYS] * 3
    assert _delta_rs_rows(table.uri) == [(i, YEAR_0_DAYS) for i in (1, 2, 5)]
    (add,) = [
        json.loads(line)["add"]
        for line in (Path(table.uri) / "_delta_log" / f"{2:020d}.json").read_text().splitlines()
        if '"add"' in line
    ]
    assert add["partitionValues"] == {"p": "0000-01-01"}
    assert add["path"].startswith("p=0000-01-01/")


def test_restore_before_a_year_0_partition_file(tmp_path: Path) -> None:
    """Fixed in 30c1302; was: raw OverflowError from write/log_out.py _rows (the remove
    action's partition values rendered through Python, via remove_lines)
    """
    table = _year_0_table(tmp_path)
    table.restore(0)
    assert lakecore.open(table.uri).count() == 0
    removes = (Path(table.uri) / "_delta_log" / f"{2:020d}.json").read_text()
    assert '"partitionValues":{"p":"0000-01-01"}' in removes
    lakecore.open(table.uri).restore(1)
    assert lakecore.open(table.uri).count() == 2
    assert _delta_rs_rows(table.uri) == [(1, YEAR_0_DAYS), (2, YEAR_0_DAYS)]


def test_adding_an_unrelated_column_to_a_wide_scale_table(tmp_path: Path) -> None:
    """Fixed in session 9; was: c0096ad: adding an unrelated long column to a table whose log
    already holds  decimal(5,7) is refused with SchemaError naming 'x' (to_delta_type re-checks
    every  existing field when the schema is rendered); only new or changed fields should be
    """
    table = lakecore.open(_wide_scale_table(tmp_path))
    with table.update_schema() as s:
        s.add_column("y", pa.int64())
    assert lakecore.open(table.uri).schema.names == ["x", "i", "y"]


def test_a_wide_scale_column_can_be_dropped_and_a_new_one_is_refused(tmp_path: Path) -> None:
    table = lakecore.open(_wide_scale_table(tmp_path))
    with table.update_schema() as s:
        s.drop_column("x")
    table = lakecore.open(table.uri)
    assert table.schema.names == ["i"]
    with pytest.raises(SchemaError, match="'z'"), table.update_schema() as s:
        s.add_column("z", pa.decimal128(4, 6))
    assert lakecore.open(table.uri).schema.names == ["i"]
    assert lakecore.open(table.uri).count() == 2
