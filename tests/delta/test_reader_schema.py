"""Reading data files into the table schema: evolution, type widening, units, bad files."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakecore
from lakecore.errors import CorruptTableError, SchemaError

from .builders import DeltaTableBuilder, add, commit_info, field, metadata, protocol, struct
from .conftest import ID_FIELDS, id_rows

UTC = dt.timezone.utc
WIDENING = protocol(3, 7, ["typeWidening"], ["typeWidening"])


def test_column_added_later_is_null_in_older_files(builder: DeltaTableBuilder) -> None:
    builder.init(ID_FIELDS)
    builder.commit(1, commit_info(), builder.data_file("a.parquet", id_rows(1, 2)))
    builder.commit(2, commit_info("ADD COLUMNS"), metadata([*ID_FIELDS, field("extra", "double")]))
    newer = pa.table({"id": pa.array([3], pa.int64()), "v": ["v3"], "extra": [0.5]})
    builder.commit(3, commit_info(), builder.data_file("b.parquet", newer))
    table = lakecore.open(builder.uri)
    assert table.to_arrow(version=1).schema.names == ["id", "v"]
    assert table.to_arrow(version=2).sort_by("id").to_pylist() == [
        {"id": 1, "v": "v1", "extra": None},
        {"id": 2, "v": "v2", "extra": None},
    ]
    assert table.to_arrow().sort_by("id").column("extra").to_pylist() == [None, None, 0.5]
    assert table.to_arrow(columns=["extra"]).num_rows == 3


def test_nested_fields_added_later(builder: DeltaTableBuilder) -> None:
    old_s = struct(field("a", "integer"))
    new_s = struct(field("a", "integer"), field("b", "string"))
    new_elem = struct(field("k", "integer"), field("n", "long"))
    fields = [
        field("s", new_s),
        field("l", {"type": "array", "elementType": new_elem, "containsNull": True}),
        field(
            "m",
            {"type": "map", "keyType": "string", "valueType": new_s, "valueContainsNull": True},
        ),
    ]
    builder.init(fields)
    data = pa.table(
        {
            "s": pa.array([{"a": 1}, None], pa.struct([("a", pa.int32())])),
            "l": pa.array([[{"k": 1}], None], pa.list_(pa.struct([("k", pa.int32())]))),
            "m": pa.array(
                [[("x", {"a": 5})], []], pa.map_(pa.string(), pa.struct([("a", pa.int32())]))
            ),
        }
    )
    assert old_s["fields"][0]["name"] == "a"
    builder.commit(1, commit_info(), builder.data_file("a.parquet", data, stats=None))
    out = lakecore.open(builder.uri).to_arrow()
    assert out.column("s").to_pylist() == [{"a": 1, "b": None}, None]
    assert out.column("l").to_pylist() == [[{"k": 1, "n": None}], None]
    assert out.column("m").to_pylist() == [[("x", {"a": 5, "b": None})], []]


# (file type, file values, Delta type after widening, expected values)
WIDENINGS: list[tuple[pa.DataType, list[Any], str, list[Any]]] = [
    (pa.int32(), [1, -2, None, 2**31 - 1], "long", [1, -2, None, 2**31 - 1]),
    (pa.int8(), [1, -128], "short", [1, -128]),
    (pa.int16(), [300, -1], "integer", [300, -1]),
    (pa.int8(), [7], "long", [7]),
    (pa.float32(), [1.5, None], "double", [1.5, None]),
    (pa.int32(), [3, -4], "double", [3.0, -4.0]),
    (pa.int32(), [12345], "decimal(10,0)", [Decimal("12345")]),
    (pa.int64(), [5, -(2**63)], "decimal(22,2)", [Decimal("5.00"), Decimal(-(2**63))]),
    (pa.decimal128(5, 2), [Decimal("1.25")], "decimal(10,4)", [Decimal("1.2500")]),
    (pa.date32(), [dt.date(2021, 1, 2)], "timestamp_ntz", [dt.datetime(2021, 1, 2)]),
]


@pytest.mark.parametrize(
    ("file_type", "values", "delta_type", "expected"),
    WIDENINGS,
    ids=[f"{w[0]}->{w[2]}" for w in WIDENINGS],
)
def test_type_widening(
    builder: DeltaTableBuilder,
    file_type: pa.DataType,
    values: list[Any],
    delta_type: str,
    expected: list[Any],
) -> None:
    old_type = {
        pa.int32(): "integer",
        pa.int8(): "byte",
        pa.int16(): "short",
        pa.int64(): "long",
        pa.float32(): "float",
        pa.date32(): "date",
    }.get(file_type, "decimal(5,2)")
    builder.init([field("c", old_type)], proto=WIDENING)
    data = pa.table({"c": pa.array(values, file_type)})
    builder.commit(1, commit_info(), builder.data_file("a.parquet", data, stats=None))
    widened = field(
        "c",
        delta_type,
        metadata={"delta.typeChanges": [{"fromType": old_type, "toType": delta_type}]},
    )
    builder.commit(2, commit_info("CHANGE COLUMN"), metadata([widened]))
    table = lakecore.open(builder.uri)
    assert table.to_arrow(version=1).column("c").to_pylist() == values
    out = table.to_arrow()
    assert out.column("c").to_pylist() == expected
    assert (
        out.schema.field("c").type == lakecore.open(builder.uri).snapshot().schema.field("c").type
    )


def test_widening_cases_ran() -> None:
    assert len(WIDENINGS) == 10


def test_timestamp_units_and_int96(builder: DeltaTableBuilder) -> None:
    builder.init([field("id", "long"), field("ts", "timestamp"), field("ntz", "timestamp_ntz")])
    moment = dt.datetime(2021, 1, 1, 10, 0, 0, 123000, tzinfo=UTC)
    for i, unit in enumerate(("ms", "us", "ns")):
        t = pa.table(
            {
                "id": pa.array([i], pa.int64()),
                "ts": pa.array([moment], pa.timestamp(unit, "UTC")),
                "ntz": pa.array([moment.replace(tzinfo=None)], pa.timestamp(unit)),
            }
        )
        pq.write_table(t, builder.root / f"{unit}.parquet")
        builder.commit(1 + i, commit_info(), add(f"{unit}.parquet"))
    int96 = pa.table(
        {
            "id": pa.array([3], pa.int64()),
            "ts": pa.array([moment], pa.timestamp("ns", "UTC")),
            "ntz": pa.array([moment.replace(tzinfo=None)], pa.timestamp("ns")),
        }
    )
    pq.write_table(int96, builder.root / "int96.parquet", use_deprecated_int96_timestamps=True)
    builder.commit(4, commit_info(), add("int96.parquet"))
    out = lakecore.open(builder.uri).to_arrow().sort_by("id")
    assert out.schema.field("ts").type == pa.timestamp("us", "UTC")
    assert out.schema.field("ntz").type == pa.timestamp("us")
    assert out.column("ts").to_pylist() == [moment] * 4
    assert out.column("ntz").to_pylist() == [moment.replace(tzinfo=None)] * 4


def test_columns_matched_case_insensitively(builder: DeltaTableBuilder) -> None:
    builder.init(ID_FIELDS)
    t = pa.table({"ID": pa.array([1], pa.int64()), "V": ["x"], "junk": [1.0]})
    builder.commit(1, commit_info(), builder.data_file("a.parquet", t))
    assert lakecore.open(builder.uri).to_arrow().to_pylist() == [{"id": 1, "v": "x"}]


def test_columns_selection_order_and_unknown_names(builder: DeltaTableBuilder) -> None:
    builder.init(ID_FIELDS)
    builder.commit(1, commit_info(), builder.data_file("a.parquet", id_rows(1, 2)))
    table = lakecore.open(builder.uri)
    picked = table.to_arrow(columns=["v", "id"])
    assert picked.schema.names == ["v", "id"]
    with pytest.raises(SchemaError, match="nope"):
        table.to_arrow(columns=["id", "nope"])


def test_incompatible_file_type_is_a_schema_error(builder: DeltaTableBuilder) -> None:
    builder.init(ID_FIELDS)
    t = pa.table({"id": ["not a number"], "v": ["x"]})
    builder.commit(1, commit_info(), builder.data_file("a.parquet", t, stats=None))
    with pytest.raises(SchemaError, match="'id'"):
        lakecore.open(builder.uri).to_arrow()


def test_missing_data_file_is_corrupt(builder: DeltaTableBuilder) -> None:
    builder.init(ID_FIELDS)
    builder.commit(1, commit_info(), add("gone.parquet"))
    snap = lakecore.open(builder.uri).snapshot()
    assert snap.files().num_rows == 1  # listing needs no data file
    with pytest.raises(CorruptTableError, match=r"gone\.parquet"):
        snap.to_arrow()


def test_data_file_that_is_not_parquet_is_corrupt(builder: DeltaTableBuilder) -> None:
    builder.init(ID_FIELDS)
    builder.write_bytes("bad.parquet", b"this is not parquet")
    builder.commit(1, commit_info(), add("bad.parquet"))
    with pytest.raises(CorruptTableError, match=r"bad\.parquet"):
        lakecore.open(builder.uri).to_arrow()


def test_empty_table_has_the_schema(builder: DeltaTableBuilder) -> None:
    builder.init(ID_FIELDS)
    out = lakecore.open(builder.uri).to_arrow()
    assert out.num_rows == 0
    assert out.schema.names == ["id", "v"]
    assert out.schema.field("id").type == pa.int64()


def test_a_data_file_whose_column_does_not_convert_is_named(tmp_path: Path) -> None:
    """The error names the data file, not only the column (a table has many files)."""
    uri = str(tmp_path / "t")
    table = lakecore.create(uri, pa.schema([("i", pa.int64()), ("s", pa.string())]))
    table.append(pa.table({"i": pa.array([1, 2], pa.int64()), "s": ["a", "b"]}))
    (path,) = (tmp_path / "t").glob("*.parquet")
    pq.write_table(pa.table({"i": ["x", "y"], "s": ["a", "b"]}), path)
    with pytest.raises(SchemaError, match=rf"data file {path.name}: column 'i': file type string"):
        lakecore.open(uri).to_arrow()
