"""Per-file statistics: the add actions' ``stats`` JSON as typed min/max/null_count structs."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

import lakecore

from .builders import DeltaTableBuilder, add, commit_info, field, metadata, protocol, struct

UTC = dt.timezone.utc

FIELDS = [
    field("id", "long"),
    field("i", "integer"),
    field("name", "string"),
    field("d", "date"),
    field("ts", "timestamp"),
    field("ntz", "timestamp_ntz"),
    field("dec", "decimal(10,2)"),
    field("big", "decimal(38,2)"),
    field("f", "double"),
    field("flag", "boolean"),
    field("bin", "binary"),
    field("s", struct(field("a", "integer"), field("b", struct(field("c", "string"))))),
]

GOOD_STATS = (
    '{"numRecords":3,'
    '"minValues":{"id":1,"i":-5,"name":"a","d":"2021-01-01","ts":"2021-01-01T10:00:00.123Z",'
    '"ntz":"2021-01-01T10:00:00.123456","dec":1.25,"big":12345678901234567890.12,"f":-0.5,'
    '"s":{"a":1,"b":{"c":"x"}}},'
    '"maxValues":{"id":3,"i":5,"name":"zz","d":"2021-12-31","ts":"2021-06-01T11:30:00.000+01:00",'
    '"ntz":"2022-01-01T00:00:00","dec":99.99,"big":-1,"f":2.5,'
    '"s":{"a":9,"b":{"c":"y"}}},'
    '"nullCount":{"id":0,"i":0,"name":1,"d":0,"ts":0,"ntz":2,"dec":0,"big":0,"f":0,"flag":1,'
    '"bin":3,"s":{"a":0,"b":{"c":2}}}}'
)


def stats_table(builder: DeltaTableBuilder, stats: list[str | None]) -> pa.Table:
    """A table with ``FIELDS`` and one add per stats value (files are never read); its index."""
    builder.init(FIELDS)
    adds = [add(f"f{i}.parquet", stats=s) for i, s in enumerate(stats)]
    builder.commit(1, commit_info(), *adds)
    return lakecore.open(builder.uri).snapshot().files().sort_by("path")


def stat(files: pa.Table, kind: str, row: int) -> dict[str, Any]:
    value = files.column(kind).to_pylist()[row]
    return value or {}


def test_full_stats(builder: DeltaTableBuilder) -> None:
    files = stats_table(builder, [GOOD_STATS])
    assert files.column("record_count").to_pylist() == [3]
    lo, hi, nulls = stat(files, "min", 0), stat(files, "max", 0), stat(files, "null_count", 0)
    assert lo["id"] == 1 and hi["id"] == 3
    assert lo["i"] == -5 and hi["i"] == 5
    assert lo["name"] == "a" and hi["name"] == "zz"
    assert lo["d"] == dt.date(2021, 1, 1) and hi["d"] == dt.date(2021, 12, 31)
    assert lo["ts"] == dt.datetime(2021, 1, 1, 10, 0, 0, 123000, tzinfo=UTC)
    assert hi["ts"] == dt.datetime(2021, 6, 1, 10, 30, tzinfo=UTC)  # +01:00 offset applied
    assert lo["ntz"] == dt.datetime(2021, 1, 1, 10, 0, 0, 123456)
    assert hi["ntz"] == dt.datetime(2022, 1, 1)
    assert lo["dec"] == Decimal("1.25") and hi["dec"] == Decimal("99.99")
    assert lo["big"] == Decimal("12345678901234567890.12") and hi["big"] == Decimal("-1.00")
    assert lo["f"] == -0.5 and hi["f"] == 2.5
    assert lo["s"] == {"a": 1, "b": {"c": "x"}}
    assert hi["s"] == {"a": 9, "b": {"c": "y"}}
    assert "flag" not in lo and "bin" not in hi  # no min/max for booleans and binaries
    assert nulls == {
        "id": 0,
        "i": 0,
        "name": 1,
        "d": 0,
        "ts": 0,
        "ntz": 2,
        "dec": 0,
        "big": 0,
        "f": 0,
        "flag": 1,
        "bin": 3,
        "s": {"a": 0, "b": {"c": 2}},
    }


def test_stat_types_follow_the_schema(builder: DeltaTableBuilder) -> None:
    files = stats_table(builder, [GOOD_STATS])
    lo = files.schema.field("min").type
    assert lo.field("id").type == pa.int64()
    assert lo.field("i").type == pa.int32()
    assert lo.field("d").type == pa.date32()
    assert lo.field("ts").type == pa.timestamp("us", "UTC")
    assert lo.field("ntz").type == pa.timestamp("us")
    assert lo.field("dec").type == pa.decimal128(10, 2)
    nulls = files.schema.field("null_count").type
    assert nulls.field("name").type == pa.int64()
    assert nulls.field("s").type.field("b").type.field("c").type == pa.int64()


def _all_unknown(value: Any) -> bool:
    if isinstance(value, dict):
        return all(_all_unknown(v) for v in value.values())
    return value is None


def test_missing_stats_are_null(builder: DeltaTableBuilder) -> None:
    files = stats_table(builder, [None, "", '{"numRecords": 4}', GOOD_STATS])
    assert files.column("record_count").to_pylist() == [None, None, 4, 3]
    for row in range(3):
        for kind in ("min", "max", "null_count"):
            assert _all_unknown(stat(files, kind, row)), (row, kind)
    assert stat(files, "min", 3)["id"] == 1


def test_partial_stats(builder: DeltaTableBuilder) -> None:
    partial = json.dumps(
        {"numRecords": 2, "minValues": {"id": 5}, "nullCount": {"s": {"a": 1}}, "tightBounds": True}
    )
    files = stats_table(builder, [partial])
    assert stat(files, "min", 0)["id"] == 5
    assert stat(files, "min", 0)["name"] is None
    assert _all_unknown(stat(files, "max", 0))
    assert stat(files, "null_count", 0)["s"]["a"] == 1
    assert stat(files, "null_count", 0)["s"]["b"]["c"] is None


GARBAGE = {
    "not-json": "not json at all",
    "truncated": '{"numRecords": 3, "minValues": {"id"',
    "wrong-type": '{"numRecords": "three"}',
    "wrong-leaf-type": '{"numRecords": 3, "minValues": {"id": "abc"}, "maxValues": {"id": 9}}',
    "struct-null-count-as-int": '{"numRecords": 3, "nullCount": {"s": 0}, "maxValues": {"id": 9}}',
    "array": "[1, 2, 3]",
    "json-null": "null",
    "number": "42",
    "too-big": '{"numRecords": 100000000000000000000000000000}',
    "two-objects": '{"numRecords": 1}\n{"numRecords": 2}',
    "pretty-printed": '{\n  "numRecords": 7\n}',
    "bad-date": '{"numRecords": 3, "minValues": {"d": "yesterday"}, "maxValues": {"id": 9}}',
}


@pytest.mark.parametrize("kind", sorted(GARBAGE))
def test_garbage_stats_for_one_file_do_not_break_the_others(
    builder: DeltaTableBuilder, kind: str
) -> None:
    files = stats_table(builder, [GOOD_STATS, GARBAGE[kind], GOOD_STATS])
    assert files.num_rows == 3
    counts = files.column("record_count").to_pylist()
    assert counts[0] == counts[2] == 3
    if kind == "pretty-printed":
        assert counts[1] == 7  # valid JSON, just not on one line
    elif kind in ("bad-date", "wrong-leaf-type", "struct-null-count-as-int"):
        assert counts[1] == 3  # only one statistic is bad: the others are kept
        assert stat(files, "max", 1)["id"] == 9
    else:
        assert counts[1] is None
    for row in (0, 2):
        assert stat(files, "min", row)["d"] == dt.date(2021, 1, 1)
        assert stat(files, "min", row)["big"] == Decimal("12345678901234567890.12")  # exact
        assert stat(files, "max", row)["s"]["b"]["c"] == "y"
    assert stat(files, "min", 1).get("d") is None


def test_garbage_cases_ran() -> None:
    assert len(GARBAGE) == 12


def test_stats_ignore_columns_no_longer_in_the_schema(builder: DeltaTableBuilder) -> None:
    old = json.dumps({"numRecords": 1, "minValues": {"id": 1, "dropped": 5}, "nullCount": {"x": 0}})
    files = stats_table(builder, [old])
    assert stat(files, "min", 0)["id"] == 1
    assert "dropped" not in stat(files, "min", 0)


def test_partition_columns_have_no_stats(builder: DeltaTableBuilder) -> None:
    builder.init([field("id", "long"), field("p", "string")], partition_columns=["p"])
    builder.commit(
        1,
        commit_info(),
        add(
            "p=a/f.parquet",
            partition_values={"p": "a"},
            stats={"numRecords": 2, "minValues": {"id": 3}, "nullCount": {"id": 0}},
        ),
    )
    files = lakecore.open(builder.uri).snapshot().files()
    assert files.column("min").to_pylist() == [{"id": 3}]
    assert files.column("null_count").to_pylist() == [{"id": 0}]


def test_stats_in_a_checkpoint(builder: DeltaTableBuilder) -> None:
    builder.init(FIELDS)
    adds = [add("f0.parquet", stats=GOOD_STATS), add("f1.parquet", stats=None)]
    builder.commit(1, commit_info(), *adds)
    builder.checkpoint(1, [protocol(), metadata(FIELDS), *adds])
    builder.commit_path(0).unlink()
    builder.commit_path(1).unlink()
    files = lakecore.open(builder.uri).snapshot().files().sort_by("path")
    assert files.column("record_count").to_pylist() == [3, None]
    assert stat(files, "max", 0)["d"] == dt.date(2021, 12, 31)


def test_record_counts_from_real_files(builder: DeltaTableBuilder) -> None:
    builder.init([field("id", "long"), field("v", "string")])
    t = pa.table({"id": pa.array([5, None, 1], pa.int64()), "v": ["b", "a", None]})
    builder.commit(1, commit_info(), builder.data_file("a.parquet", t))
    files = lakecore.open(builder.uri).snapshot().files()
    assert files.column("record_count").to_pylist() == [3]
    assert files.column("min").to_pylist() == [{"id": 1, "v": "a"}]
    assert files.column("max").to_pylist() == [{"id": 5, "v": "b"}]
    assert files.column("null_count").to_pylist() == [{"id": 1, "v": 1}]


@pytest.mark.parametrize("name", ["a.b", ".a", "[0]", "with space"])
def test_stats_of_columns_with_special_names(builder: DeltaTableBuilder, name: str) -> None:
    # "first" comes before the odd name, so "[0]" read as a field index would pick it
    inner = struct(field("first", "string"), field(name, "string"))
    fields = [field("first", "long"), field(name, "long"), field("s", inner)]
    builder.init(fields)
    stats = {
        "numRecords": 1,
        "minValues": {"first": 1, name: 4, "s": {"first": "f", name: "x"}},
        "nullCount": {"first": 0, name: 2, "s": {"first": 0, name: 1}},
    }
    builder.commit(1, commit_info(), add("f.parquet", stats=stats))
    files = lakecore.open(builder.uri).snapshot().files()
    assert files.column("min").to_pylist() == [
        {"first": 1, name: 4, "s": {"first": "f", name: "x"}}
    ]
    assert files.column("null_count").to_pylist() == [
        {"first": 0, name: 2, "s": {"first": 0, name: 1}}
    ]


def test_small_parsed_pieces_are_joined_in_order_before_typing() -> None:
    """The commits of a JSON log are parsed one by one; their small pieces are typed as a few
    chunks (``_regrouped``), big pieces are left alone (joining copies), rows in order."""
    from lakecore_delta.stats_text import _JOINED_ROWS, _SMALL_PIECE_ROWS, _regrouped

    small = _SMALL_PIECE_ROWS - 1
    sizes = [10, 10, _SMALL_PIECE_ROWS, 5, 0, 7, *[small] * (_JOINED_ROWS // small + 1)]
    tables, start = [], 0
    for n in sizes:
        tables.append(pa.table({"numRecords": pa.array(range(start, start + n), pa.int64())}))
        start += n
    out = _regrouped(tables)
    fit = (_JOINED_ROWS - 12) // small  # small pieces that join the run of 5 + 0 + 7 rows
    rest = len(sizes) - 6 - fit
    assert [t.num_rows for t in out] == [20, _SMALL_PIECE_ROWS, 12 + fit * small, rest * small]
    assert out[1] is tables[2]  # not copied
    assert all(t.column(0).num_chunks <= 1 for t in out)
    assert pa.concat_tables(out).column(0).to_pylist() == list(range(start))
