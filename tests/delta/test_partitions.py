"""Partition values: the log's strings parsed to typed values in the file index and the rows."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

import lakecore
from lakecore.errors import CorruptTableError

from .builders import DeltaTableBuilder, commit_info, field

UTC = dt.timezone.utc

# (delta type, value as the log stores it, expected Python value, expected Arrow type)
CASES: list[tuple[str, str, Any, pa.DataType]] = [
    ("integer", "42", 42, pa.int32()),
    ("integer", "-7", -7, pa.int32()),
    ("long", "9007199254740993", 9007199254740993, pa.int64()),
    ("short", "-32768", -32768, pa.int16()),
    ("byte", "127", 127, pa.int8()),
    ("boolean", "true", True, pa.bool_()),
    ("boolean", "false", False, pa.bool_()),
    ("float", "-0.25", -0.25, pa.float32()),
    ("double", "1.5", 1.5, pa.float64()),
    ("double", "-Infinity", float("-inf"), pa.float64()),
    ("boolean", "TRUE", True, pa.bool_()),
    ("date", "2021-01-01", dt.date(2021, 1, 1), pa.date32()),
    ("date", "1969-12-31", dt.date(1969, 12, 31), pa.date32()),
    (
        "timestamp",
        "2021-01-01 10:00:00",
        dt.datetime(2021, 1, 1, 10, tzinfo=UTC),
        pa.timestamp("us", "UTC"),
    ),
    (
        "timestamp",
        "2021-01-01 10:00:00.123456",
        dt.datetime(2021, 1, 1, 10, 0, 0, 123456, tzinfo=UTC),
        pa.timestamp("us", "UTC"),
    ),
    (
        "timestamp",
        "2021-01-01T10:00:00.123456Z",
        dt.datetime(2021, 1, 1, 10, 0, 0, 123456, tzinfo=UTC),
        pa.timestamp("us", "UTC"),
    ),
    (
        "timestamp",
        "2021-01-01 10:00:00.5",
        dt.datetime(2021, 1, 1, 10, 0, 0, 500000, tzinfo=UTC),
        pa.timestamp("us", "UTC"),
    ),
    (
        "timestamp_ntz",
        "2021-01-01 10:00:00.123456",
        dt.datetime(2021, 1, 1, 10, 0, 0, 123456),
        pa.timestamp("us"),
    ),
    (
        "timestamp_ntz",
        "2021-01-01 00:00:00",
        dt.datetime(2021, 1, 1),
        pa.timestamp("us"),
    ),
    ("decimal(10,2)", "1.50", Decimal("1.50"), pa.decimal128(10, 2)),
    ("decimal(10,2)", "-3.1", Decimal("-3.10"), pa.decimal128(10, 2)),
    ("decimal(5,0)", "12345", Decimal("12345"), pa.decimal128(5, 0)),
    (
        "decimal(38,18)",
        "12345678901234567890.123456789012345678",
        Decimal("12345678901234567890.123456789012345678"),
        pa.decimal128(38, 18),
    ),
    ("string", "plain", "plain", pa.string()),
    ("string", "a=b/c%20", "a=b/c%20", pa.string()),
    ("string", " spaced  value ", " spaced  value ", pa.string()),
    ("string", "ünï©ødé 日本 🙂", "ünï©ødé 日本 🙂", pa.string()),
    ("string", 'quote"back\\slash', 'quote"back\\slash', pa.string()),
    ("string", "null", "null", pa.string()),  # the text "null" is a value, not a null
    ("binary", "abc", b"abc", pa.binary()),
]
NULL_TYPES = sorted({c[0] for c in CASES})


def partitioned_table(builder: DeltaTableBuilder, dtype: str, values: list[str | None]) -> None:
    """Partition column ``p`` of ``dtype``; one data file per value, holding id = its index."""
    builder.init([field("id", "long"), field("p", dtype)], partition_columns=["p"])
    adds = [
        builder.data_file(
            f"part-{i}.parquet",
            pa.table({"id": pa.array([i], pa.int64())}),
            partition_values={"p": v},
        )
        for i, v in enumerate(values)
    ]
    builder.commit(1, commit_info(), *adds)


def partition_values(uri: str) -> list[Any]:
    files = lakecore.open(uri).snapshot().files()
    files = files.sort_by("path")
    return [row["p"] for row in files.column("partition").to_pylist()]


def rows(uri: str) -> list[dict[str, Any]]:
    return lakecore.open(uri).to_arrow().sort_by("id").to_pylist()


@pytest.mark.parametrize(
    ("dtype", "raw", "expected", "arrow_type"), CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES]
)
def test_typed_partition_value(
    builder: DeltaTableBuilder, dtype: str, raw: str, expected: Any, arrow_type: pa.DataType
) -> None:
    partitioned_table(builder, dtype, [raw])
    snap = lakecore.open(builder.uri).snapshot()
    files = snap.files()
    assert files.schema.field("partition").type.field("p").type == arrow_type
    assert partition_values(builder.uri) == [expected]
    table = snap.to_arrow()
    assert table.schema.field("p").type == arrow_type
    assert table.to_pylist() == [{"id": 0, "p": expected}]


def test_partition_cases_ran() -> None:
    assert len(CASES) == 30


@pytest.mark.parametrize("dtype", NULL_TYPES)
def test_null_and_empty_string_are_null(builder: DeltaTableBuilder, dtype: str) -> None:
    partitioned_table(builder, dtype, [None, ""])
    assert partition_values(builder.uri) == [None, None]
    assert [r["p"] for r in rows(builder.uri)] == [None, None]


def test_missing_partition_key_is_null(builder: DeltaTableBuilder) -> None:
    builder.init([field("id", "long"), field("p", "integer")], partition_columns=["p"])
    a = builder.data_file("a.parquet", pa.table({"id": pa.array([1], pa.int64())}))
    a["add"]["partitionValues"] = {}
    builder.commit(1, commit_info(), a)
    assert rows(builder.uri) == [{"id": 1, "p": None}]


def test_value_that_does_not_parse_is_corrupt(builder: DeltaTableBuilder) -> None:
    partitioned_table(builder, "integer", ["forty-two"])
    with pytest.raises(CorruptTableError, match="'p'"):
        lakecore.open(builder.uri).snapshot().files()


@pytest.mark.parametrize("raw", ["yes", "1", "t"])
def test_boolean_value_that_is_not_true_or_false_is_corrupt(
    builder: DeltaTableBuilder, raw: str
) -> None:
    partitioned_table(builder, "boolean", [raw])
    with pytest.raises(CorruptTableError, match="'p'"):
        lakecore.open(builder.uri).snapshot().files()


def test_special_characters_in_partition_directories(builder: DeltaTableBuilder) -> None:
    """Hive-escaped directory names, URL-encoded again in the log: the value comes from the log."""
    values = ["a=b/c%20", "with space", "ünï 日本", "x:y"]
    builder.init([field("id", "long"), field("p", "string")], partition_columns=["p"])
    adds = []
    for i, value in enumerate(values):
        hive = "".join(
            c if c.isalnum() or c in " -_." or ord(c) > 127 else f"%{ord(c):02X}" for c in value
        )
        adds.append(
            builder.data_file(
                f"p={hive}/part-{i}.parquet",
                pa.table({"id": pa.array([i], pa.int64())}),
                partition_values={"p": value},
            )
        )
    assert adds[0]["add"]["path"] == "p=a%253Db%252Fc%252520/part-0.parquet"
    builder.commit(1, commit_info(), *adds)
    snap = lakecore.open(builder.uri).snapshot()
    paths = sorted(snap.files().column("path").to_pylist())
    assert "p=a%3Db%2Fc%2520/part-0.parquet" in paths
    assert [r["p"] for r in rows(builder.uri)] == values


def test_several_partition_columns_keep_schema_order(builder: DeltaTableBuilder) -> None:
    fields = [
        field("p1", "integer"),
        field("id", "long"),
        field("p2", "string"),
        field("v", "double"),
    ]
    builder.init(fields, partition_columns=["p2", "p1"])
    data = pa.table({"id": pa.array([1, 2], pa.int64()), "v": [0.5, 1.5]})
    a = builder.data_file("a.parquet", data, partition_values={"p1": "7", "p2": "x"})
    b = builder.data_file("b.parquet", data.slice(0, 1), partition_values={"p1": None, "p2": "y"})
    builder.commit(1, commit_info(), a, b)
    table = lakecore.open(builder.uri)
    snap = table.snapshot()
    assert snap.partition_columns == ("p2", "p1")
    out = snap.to_arrow()
    assert out.schema.names == ["p1", "id", "p2", "v"]
    assert sorted(out.to_pylist(), key=lambda r: (r["p2"], r["id"])) == [
        {"p1": 7, "id": 1, "p2": "x", "v": 0.5},
        {"p1": 7, "id": 2, "p2": "x", "v": 1.5},
        {"p1": None, "id": 1, "p2": "y", "v": 0.5},
    ]
    picked = snap.to_arrow(columns=["p2", "id"])
    assert picked.schema.names == ["p2", "id"]
    assert sorted(picked.column("p2").to_pylist()) == ["x", "x", "y"]
    only_partitions = snap.to_arrow(columns=["p1"])
    assert sorted(only_partitions.column("p1").to_pylist(), key=str) == [7, 7, None]


def test_partition_column_also_present_in_the_data_file(builder: DeltaTableBuilder) -> None:
    """The log's partition value is authoritative, not a copy of the column inside the file."""
    builder.init([field("id", "long"), field("p", "string")], partition_columns=["p"])
    a = builder.data_file(
        "a.parquet",
        pa.table({"id": pa.array([1], pa.int64()), "p": ["stale"]}),
        partition_values={"p": "log"},
    )
    builder.commit(1, commit_info(), a)
    assert rows(builder.uri) == [{"id": 1, "p": "log"}]


def test_partition_values_from_a_checkpoint(builder: DeltaTableBuilder) -> None:
    from .builders import metadata, protocol

    fields = [field("id", "long"), field("d", "date"), field("n", "integer")]
    builder.init(fields, partition_columns=["d", "n"])
    one = pa.table({"id": pa.array([1], pa.int64())})
    adds = [
        builder.data_file("a.parquet", one, partition_values={"d": "2021-01-01", "n": "5"}),
        builder.data_file("b.parquet", one, partition_values={"d": None, "n": ""}),
    ]
    builder.commit(1, commit_info(), *adds)
    builder.checkpoint(1, [protocol(), metadata(fields, ["d", "n"]), *adds])
    builder.commit_path(0).unlink()
    builder.commit_path(1).unlink()
    files = lakecore.open(builder.uri).snapshot().files().sort_by("path")
    assert files.column("partition").to_pylist() == [
        {"d": dt.date(2021, 1, 1), "n": 5},
        {"d": None, "n": None},
    ]


def test_table_of_only_partition_columns(builder: DeltaTableBuilder) -> None:
    builder.init([field("p", "string")], partition_columns=["p"])
    body = pa.table({"p": ["ignored", "ignored", "ignored"]})
    builder.commit(
        1, commit_info(), builder.data_file("a.parquet", body, partition_values={"p": "x"})
    )
    snap = lakecore.open(builder.uri).snapshot()
    assert snap.files().column("record_count").to_pylist() == [3]
    assert snap.to_arrow().to_pylist() == [{"p": "x"}] * 3


@pytest.mark.parametrize("name", ["p.q", ".p", "[0]", "with space"])
def test_partition_column_names_with_special_characters(
    builder: DeltaTableBuilder, name: str
) -> None:
    # "first" comes before the odd name, so "[0]" read as a field index would pick it
    fields = [field("id", "long"), field("first", "string"), field(name, "integer")]
    builder.init(fields, partition_columns=["first", name])
    one = pa.table({"id": pa.array([1], pa.int64())})
    values = {"first": "f", name: "3"}
    builder.commit(1, commit_info(), builder.data_file("a.parquet", one, partition_values=values))
    snap = lakecore.open(builder.uri).snapshot()
    assert snap.files().column("partition").to_pylist() == [{"first": "f", name: 3}]
    assert snap.to_arrow().to_pylist() == [{"id": 1, "first": "f", name: 3}]
