"""Delta writes of partition values Python's ``datetime`` cannot hold (a date of year 0).

The write paths render partition values by Arrow casts (``write/partition_out.py``), never
through Python objects: appends (directories and ``partitionValues``), DML (the touched
files' index rows stay Arrow), restore and optimize. The log's text is the protocol's
``{year}-{month}-{day}`` (``0000-01-01``, what delta-rs writes); values outside years
0000..9999 have no such text and are refused with ``InvalidArgumentError`` before any file
is written. delta-rs (its DataFusion reader: its ``to_pyarrow_table`` goes through Python
dates and cannot hold year 0) reads every table written here to the same rows.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pytest
from lakecore_delta.write.partition_out import partition_texts

import lakecore
from lakecore.errors import InvalidArgumentError
from tests.delta.builders import DeltaTableBuilder, field, protocol
from tests.model.partition_text_reference import partition_text

YEAR_0 = -719_528
"""0000-01-01 as days since 1970-01-01 (proleptic Gregorian)."""
LAST_DAY = 2_932_896
"""9999-12-31 as days since 1970-01-01."""
DAY_US = 86_400_000_000

CONFIGURATIONS = {
    "plain": {},
    "dv": {"delta.enableDeletionVectors": "true"},
    "cdf": {"delta.enableChangeDataFeed": "true"},
}


def _dates(*days: int | None) -> pa.Array:
    return pa.array(days, pa.int32()).cast(pa.date32())


def _rows(i: list[int], p_days: list[int]) -> pa.Table:
    return pa.table({"i": pa.array(i, pa.int64()), "p": _dates(*p_days)})


def _table(tmp_path: Path, configuration: dict[str, str] | None = None) -> lakecore.Table:
    """A date-partitioned table written by lakecore: rows 1, 2 in year 0, row 3 in 1970."""
    table = lakecore.create(
        str(tmp_path / "t"),
        pa.schema([("i", pa.int64()), ("p", pa.date32())]),
        partition_by=["p"],
        properties=configuration,
    )
    table.append(_rows([1, 2, 3], [YEAR_0, YEAR_0, 0]))
    return lakecore.open(table.uri)


def _pairs(got: pa.Table) -> list[tuple[int, int]]:
    """Sorted (i, p as days) of ``got``."""
    days = got.column("p").cast(pa.int32()).to_pylist()
    return sorted(zip(got.column("i").to_pylist(), days, strict=True))


def _read(uri: str) -> list[tuple[int, int]]:
    return _pairs(lakecore.open(uri).to_arrow())


def _read_delta_rs(uri: str) -> list[tuple[int, int]]:
    query = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(uri))
    return _pairs(pa.table(query.execute("select i, p from t").read_all()))


def _log_partition_values(uri: str, version: int) -> list[tuple[str, str]]:
    """(action, value of ``p``) of the file actions of commit ``version``."""
    out = []
    text = (Path(uri) / "_delta_log" / f"{version:020d}.json").read_text()
    for line in text.splitlines():
        action = json.loads(line)
        for kind in ("add", "remove", "cdc"):
            if kind in action:
                out.append((kind, action[kind]["partitionValues"]["p"]))
    return sorted(out)


def _parquet_files(root: Path) -> set[Path]:
    return set(root.rglob("*.parquet"))


# ----------------------------------------------------------------------------- texts

_HELD: list[tuple[pa.DataType, list[Any]]] = [
    (pa.date32(), [dt.date(1, 1, 1), dt.date(1970, 1, 1), dt.date(9999, 12, 31), None]),
    (pa.timestamp("us"), [dt.datetime(1, 1, 1), dt.datetime(2024, 2, 3, 4, 5, 6, 7), None]),
    (
        pa.timestamp("us", "UTC"),
        [dt.datetime(2024, 2, 3, 4, 5, 6, 789, tzinfo=dt.timezone.utc), None],
    ),
    (
        pa.timestamp("us", "Europe/Paris"),
        [dt.datetime(2024, 7, 1, 12, tzinfo=dt.timezone.utc)],
    ),
    (pa.int8(), [-128, 0, 127, None]),
    (pa.int64(), [-(2**63), 2**63 - 1]),
    (pa.string(), ["a b", "", "x=y/z", "é", None]),
    (pa.large_string(), ["big"]),
    (pa.bool_(), [True, False, None]),
    (pa.float64(), [1.0, 100.0, 1e20, -0.0, 0.1, None]),
    (pa.float32(), [1.5]),
    (pa.decimal128(5, 2), [Decimal("1.50"), Decimal("-999.99"), None]),
    (pa.binary(), [b"\x01\x02", b"ab", None]),
]


def test_texts_equal_partition_text_for_values_python_holds() -> None:
    """The Arrow rendering agrees with the Python one wherever Python holds the value, but
    for an empty value: logged as null, as the protocol reads it and Delta Spark writes it."""
    ran = 0
    for t, values in _HELD:
        array = pa.array(values, t)
        expected = [partition_text(v) or None for v in array.to_pylist()]
        assert partition_texts(array, "c").to_pylist() == expected, t
        ran += 1
    assert ran == len(_HELD) == 13


def test_year_0_texts() -> None:
    assert partition_texts(_dates(YEAR_0, LAST_DAY), "p").to_pylist() == [
        "0000-01-01",
        "9999-12-31",
    ]
    first_us = YEAR_0 * DAY_US
    for tz in (None, "UTC"):
        stamps = pa.array([first_us, first_us + 1], pa.int64()).cast(pa.timestamp("us", tz))
        assert partition_texts(stamps, "ts").to_pylist() == [
            "0000-01-01 00:00:00.000000",
            "0000-01-01 00:00:00.000001",
        ]
    chunked = pa.chunked_array([_dates(YEAR_0), _dates(None)])
    assert partition_texts(chunked, "p").to_pylist() == ["0000-01-01", None]


@pytest.mark.parametrize(
    "values",
    [
        _dates(YEAR_0 - 1),
        _dates(LAST_DAY + 1),
        pa.array([YEAR_0 * DAY_US - 1], pa.int64()).cast(pa.timestamp("us")),
        pa.array([(LAST_DAY + 1) * DAY_US], pa.int64()).cast(pa.timestamp("us", "UTC")),
    ],
    ids=["date-year-minus-1", "date-year-10000", "ntz-year-minus-1", "utc-year-10000"],
)
def test_texts_outside_four_digit_years_are_refused(values: pa.Array) -> None:
    with pytest.raises(InvalidArgumentError, match=r"'c'.*outside years 0000\.\.9999"):
        partition_texts(values, "c")


def test_nanosecond_timestamp_text_is_refused() -> None:
    values = pa.array([1], pa.timestamp("ns"))
    with pytest.raises(InvalidArgumentError, match="finer than microseconds"):
        partition_texts(values, "c")


# ----------------------------------------------------------------------------- append


def test_append_of_year_0_is_written_as_the_protocol_spells_it(tmp_path: Path) -> None:
    table = _table(tmp_path)
    assert _log_partition_values(table.uri, 1) == [("add", "0000-01-01"), ("add", "1970-01-01")]
    dirs = sorted(p.parent.name for p in _parquet_files(Path(table.uri)))
    assert dirs == ["p=0000-01-01", "p=1970-01-01"]
    expected = [(1, YEAR_0), (2, YEAR_0), (3, 0)]
    assert _read(table.uri) == expected
    assert _read_delta_rs(table.uri) == expected
    assert table.count("p < DATE '1000-01-01'") == 2


def test_lakecore_appends_to_a_year_0_table_delta_rs_wrote(tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    deltalake.write_deltalake(root, _rows([1], [YEAR_0]), partition_by=["p"])
    lakecore.open(root).append(_rows([2, 3], [YEAR_0, 0]))
    expected = [(1, YEAR_0), (2, YEAR_0), (3, 0)]
    assert _read(root) == expected
    assert _read_delta_rs(root) == expected


@pytest.mark.parametrize("tz", [None, "UTC"])
def test_append_of_a_year_0_timestamp_partition(tmp_path: Path, tz: str | None) -> None:
    t = pa.timestamp("us", tz)
    table = lakecore.create(
        str(tmp_path / "t"), pa.schema([("i", pa.int64()), ("ts", t)]), partition_by=["ts"]
    )
    micros = [YEAR_0 * DAY_US + 1, 0]
    table.append(pa.table({"i": pa.array([1, 2], pa.int64()), "ts": pa.array(micros, t)}))
    text = (Path(table.uri) / "_delta_log" / f"{1:020d}.json").read_text()
    assert '"partitionValues":{"ts":"0000-01-01 00:00:00.000001"}' in text
    got = lakecore.open(table.uri).to_arrow().sort_by("i")
    assert got.column("ts").cast(pa.int64()).to_pylist() == micros
    query = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(table.uri))
    theirs = pa.table(query.execute("select i, ts from t order by i").read_all())
    assert theirs.column("ts").cast(pa.int64()).to_pylist() == micros


def test_append_of_year_0_under_column_mapping(tmp_path: Path) -> None:
    table = _table(tmp_path, {"delta.columnMapping.mode": "name"})
    physical = next(p.parent.name for p in _parquet_files(Path(table.uri)))
    assert physical.startswith("col-") and physical.endswith(("=0000-01-01", "=1970-01-01"))
    expected = [(1, YEAR_0), (2, YEAR_0), (3, 0)]
    assert _read(table.uri) == expected
    assert _read_delta_rs(table.uri) == expected


@pytest.mark.parametrize("days", [YEAR_0 - 1, LAST_DAY + 1], ids=["year-minus-1", "year-10000"])
def test_append_outside_four_digit_years_is_refused_before_any_file(
    tmp_path: Path, days: int
) -> None:
    table = _table(tmp_path)
    before = _parquet_files(Path(table.uri))
    with pytest.raises(InvalidArgumentError, match=r"'p'.*outside years 0000\.\.9999"):
        table.append(_rows([9, 10], [0, days]))
    assert lakecore.open(table.uri).version == 1
    assert _parquet_files(Path(table.uri)) == before
    assert _read(table.uri) == [(1, YEAR_0), (2, YEAR_0), (3, 0)]


# ----------------------------------------------------------------------------- DML


def _dml(table: lakecore.Table, op: str) -> list[tuple[int, int]]:
    """Run ``op`` touching row 1 (year 0); return the rows expected after it."""
    if op == "delete":
        table.delete("i = 1")
        return [(2, YEAR_0), (3, 0)]
    if op == "update":
        table.update({"i": "i + 10"}, "i = 1")
        return [(2, YEAR_0), (3, 0), (11, YEAR_0)]
    if op == "delete-partition":  # decided on partition values alone
        table.delete("p < DATE '1000-01-01'")
        return [(3, 0)]
    source = _rows([1, 4], [YEAR_0, YEAR_0])
    merge = table.merge(source, "target.i = source.i")
    merge.when_matched_update({"i": "source.i + 20"}).when_not_matched_insert_all().execute()
    return [(2, YEAR_0), (3, 0), (4, YEAR_0), (21, YEAR_0)]


@pytest.mark.parametrize("op", ["delete", "update", "merge", "delete-partition"])
@pytest.mark.parametrize("config", sorted(CONFIGURATIONS))
def test_dml_on_year_0_agrees_with_delta_rs(tmp_path: Path, config: str, op: str) -> None:
    table = _table(tmp_path, CONFIGURATIONS[config])
    expected = _dml(table, op)
    assert lakecore.open(table.uri).version == 2
    assert _read(table.uri) == expected
    assert _read_delta_rs(table.uri) == expected
    values = {value for _, value in _log_partition_values(table.uri, 2)}
    assert values == {"0000-01-01"}


def test_change_feed_of_a_year_0_delete(tmp_path: Path) -> None:
    table = _table(tmp_path, CONFIGURATIONS["cdf"])
    table.delete("i = 1")
    assert ("cdc", "0000-01-01") in _log_partition_values(table.uri, 2)
    changes = lakecore.open(table.uri).changes(2)
    assert changes.column("_change_type").to_pylist() == ["delete"]
    assert changes.column("i").to_pylist() == [1]
    assert changes.column("p").cast(pa.int32()).to_pylist() == [YEAR_0]


def test_dv_delete_of_a_file_whose_stats_hold_year_0(tmp_path: Path) -> None:
    """Stats of a data column holding year 0 (written by another engine) stay Arrow in the
    DML's index rows; re-added with a deletion vector, the year-0 minimum Python cannot
    render is left out of the stats (Delta stats are optional) and the rows still read."""
    b = DeltaTableBuilder(tmp_path / "t")
    configuration = CONFIGURATIONS["dv"]
    proto = protocol(3, 7, ["deletionVectors"], ["deletionVectors"])
    b.init(
        [field("i", "long"), field("d", "date"), field("p", "date")],
        ["p"],
        configuration,
        proto=proto,
    )
    rows = pa.table({"i": pa.array([1, 2], pa.int64()), "d": _dates(YEAR_0, 0)})
    stats = {
        "numRecords": 2,
        "minValues": {"i": 1, "d": "0000-01-01"},
        "maxValues": {"i": 2, "d": "1970-01-01"},
        "nullCount": {"i": 0, "d": 0},
    }
    b.commit(
        1,
        b.data_file(
            "p=0000-01-01/x.parquet", rows, partition_values={"p": "0000-01-01"}, stats=stats
        ),
    )
    table = lakecore.open(b.uri)
    assert table.snapshot().files().column("min").combine_chunks().field("d")[0].is_valid
    table.delete("i = 2")
    got = lakecore.open(b.uri).to_arrow()
    assert got.column("i").to_pylist() == [1]
    assert got.column("d").cast(pa.int32()).to_pylist() == [YEAR_0]
    assert got.column("p").cast(pa.int32()).to_pylist() == [YEAR_0]
    (add,) = [
        json.loads(line)["add"]
        for line in (Path(b.uri) / "_delta_log" / f"{2:020d}.json").read_text().splitlines()
        if '"add"' in line
    ]
    assert "deletionVector" in add and add["partitionValues"] == {"p": "0000-01-01"}
    assert "d" not in json.loads(add["stats"])["minValues"]
    assert _read_delta_rs(b.uri) == [(1, YEAR_0)]


# ----------------------------------------------------------------------------- maintenance


def test_restore_and_optimize_of_year_0_files(tmp_path: Path) -> None:
    table = _table(tmp_path)
    table.append(_rows([4], [YEAR_0]))  # a second small file in the year-0 partition
    table = lakecore.open(table.uri)
    table.restore(1)
    assert _log_partition_values(table.uri, 3) == [("remove", "0000-01-01")]
    expected = [(1, YEAR_0), (2, YEAR_0), (3, 0)]
    assert _read(table.uri) == expected
    lakecore.open(table.uri).restore(2)
    assert _log_partition_values(table.uri, 4) == [("add", "0000-01-01")]
    lakecore.open(table.uri).optimize()
    # The year-0 partition's two small files become one; 1970's single file stays.
    assert _log_partition_values(table.uri, 5) == [
        ("add", "0000-01-01"),
        ("remove", "0000-01-01"),
        ("remove", "0000-01-01"),
    ]
    assert lakecore.open(table.uri).snapshot().files().num_rows == 2
    expected = [(1, YEAR_0), (2, YEAR_0), (3, 0), (4, YEAR_0)]
    assert _read(table.uri) == expected
    assert _read_delta_rs(table.uri) == expected


def test_whole_file_deletes_count_live_rows_without_python_partition_values(
    tmp_path: Path,
) -> None:
    """A partition-only delete and an overwrite remove whole files, counting their live rows
    from the index (deletion vector cardinality subtracted) and, for a file whose add has no
    ``numRecords``, from its footer."""
    b = DeltaTableBuilder(tmp_path / "t")
    proto = protocol(3, 7, ["deletionVectors"], ["deletionVectors"])
    b.init([field("i", "long"), field("p", "date")], ["p"], CONFIGURATIONS["dv"], proto=proto)
    year_0 = {"p": "0000-01-01"}
    b.commit(
        1,
        b.data_file(
            "p=0000-01-01/a.parquet",
            {"i": pa.array([1, 2, 3], pa.int64())},
            partition_values=year_0,
        ),
        b.data_file(
            "p=0000-01-01/b.parquet",
            {"i": pa.array([4, 5], pa.int64())},
            partition_values=year_0,
            stats=False,
        ),
        b.data_file(
            "p=1970-01-01/c.parquet",
            {"i": pa.array([6], pa.int64())},
            partition_values={"p": "1970-01-01"},
        ),
    )
    table = lakecore.open(b.uri)
    table.delete("i = 2")  # a deletion vector on a.parquet
    result = lakecore.open(b.uri).delete("p < DATE '1000-01-01'")
    assert result.rows_deleted == 2 + 2
    assert _read(b.uri) == [(6, 0)]
    assert _read_delta_rs(b.uri) == [(6, 0)]
    result = lakecore.open(b.uri).overwrite(_rows([7], [YEAR_0]))
    assert result.rows_deleted == 1
    assert _read(b.uri) == [(7, YEAR_0)]
