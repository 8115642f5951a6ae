"""Avro schema JSON <-> Arrow, and Avro values <-> Arrow tables."""

from __future__ import annotations

import datetime
import decimal
import io
import json
import uuid
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lakecore_hudi.avro_schema import (
    arrow_to_avro,
    arrow_to_records,
    avro_to_arrow,
    physical_avro_schema,
    raw_records_to_arrow,
    records_to_arrow,
)
from lakecore_hudi.log.format import read_log_blocks

import lakecore
from lakecore.errors import SchemaError
from tests.corpus import CORPUS

UTC = datetime.timezone.utc


def _hudi() -> Path:
    if not (CORPUS / "hudi").exists():
        pytest.fail(f"corpus not found at {CORPUS}; set LAKECORE_CORPUS")
    return CORPUS / "hudi"


def _property(table: Path, key: str) -> str | None:
    for line in (table / ".hoodie" / "hoodie.properties").read_text().splitlines():
        if line.startswith(f"{key}="):
            # java.util.Properties escapes ':' and '=' with a backslash
            return line.split("=", 1)[1].replace("\\:", ":").replace("\\=", "=")
    return None


def _create_schema(table: Path) -> str:
    schema = _property(table, "hoodie.table.create.schema")
    assert schema is not None, table
    return schema


def _expected_schema(table: str) -> pa.Schema | None:
    """The schema of the table's latest expected rows file; None for tables without rows."""
    rows = sorted((CORPUS / "expected" / "hudi").glob(f"{table}.v*.parquet"))
    return pq.read_schema(rows[-1]).remove_metadata() if rows else None


def _field(t: Any) -> dict[str, Any]:
    return {"type": "record", "name": "r", "fields": [{"name": "f", "type": t}]}


def test_every_corpus_create_schema_matches_the_expected_rows() -> None:
    tables = sorted(p for p in _hudi().iterdir() if p.is_dir())
    compared = 0
    for table in tables:
        arrow = avro_to_arrow(_create_schema(table))
        assert len(arrow) > 0
        expected = _expected_schema(table.name)
        if expected is None:  # empty tables have no rows file
            continue
        # time-based key generators replace the partition column by its formatted string
        timestamp_keygen = "timebased" in table.name
        partition = (_property(table, "hoodie.table.partition.fields") or "").split(",")
        for field in arrow:
            if timestamp_keygen and field.name in partition:
                continue
            assert expected.field(field.name).type == field.type, (table.name, field)
        compared += 1
    assert len(tables) == 20
    assert compared == 18


def test_every_corpus_log_writer_schema_matches_the_expected_rows() -> None:
    logs = sorted(p for p in _hudi().glob("*/**/.*.log.*") if ".hoodie" not in p.parts)
    for log in logs:
        table = log.relative_to(_hudi()).parts[0]
        (block,) = read_log_blocks(log.read_bytes(), str(log))
        assert block.schema is not None
        arrow = avro_to_arrow(block.schema)
        expected = _expected_schema(table)
        assert expected is not None
        assert set(arrow.names) == set(expected.names)
        for field in arrow:
            assert expected.field(field.name).type == field.type, (log.name, field)
    assert len(logs) == 20


def test_arrow_to_avro_reproduces_hudis_writer_schema() -> None:
    log = next((_hudi() / "mor_parquet_v6_nonpartitioned").glob(".*.log.*"))
    (block,) = read_log_blocks(log.read_bytes(), str(log))
    assert block.schema is not None
    written = json.loads(block.schema)
    expected = _expected_schema("mor_parquet_v6_nonpartitioned")
    assert expected is not None
    data_columns = pa.schema(list(expected)[5:])
    mine = arrow_to_avro(data_columns, "v6_nonpartitioned_record", "hoodie.v6_nonpartitioned")
    assert mine["name"] == written["name"] and mine["namespace"] == written["namespace"]
    # decimals as named fixed, nested records named after their field, ["null", T] defaults
    assert mine["fields"] == written["fields"][5:]
    fastavro.parse_schema(mine)  # valid Avro


def test_both_union_orders_are_nullable() -> None:
    for union in (["null", "long"], ["long", "null"]):
        schema = avro_to_arrow(_field(union))
        assert schema.field("f").type == pa.int64() and schema.field("f").nullable
    required = avro_to_arrow(_field("long")).field("f")
    assert not required.nullable


@pytest.mark.parametrize(
    ("avro", "arrow"),
    [
        ("boolean", pa.bool_()),
        ("int", pa.int32()),
        ("float", pa.float32()),
        ("double", pa.float64()),
        ("bytes", pa.binary()),
        ("string", pa.string()),
        ({"type": "string"}, pa.string()),
        ({"type": "int", "logicalType": "date"}, pa.date32()),
        ({"type": "int", "logicalType": "time-millis"}, pa.time32("ms")),
        ({"type": "long", "logicalType": "time-micros"}, pa.time64("us")),
        ({"type": "long", "logicalType": "timestamp-millis"}, pa.timestamp("ms", "UTC")),
        ({"type": "long", "logicalType": "timestamp-micros"}, pa.timestamp("us", "UTC")),
        ({"type": "long", "logicalType": "local-timestamp-millis"}, pa.timestamp("ms")),
        ({"type": "long", "logicalType": "local-timestamp-micros"}, pa.timestamp("us")),
        ({"type": "string", "logicalType": "uuid"}, pa.string()),
        (
            {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2},
            pa.decimal128(9, 2),
        ),
        (
            {
                "type": "fixed",
                "name": "d",
                "size": 5,
                "logicalType": "decimal",
                "precision": 10,
                "scale": 5,
            },
            pa.decimal128(10, 5),
        ),
        (
            {"type": "bytes", "logicalType": "decimal", "precision": 50, "scale": 2},
            pa.decimal256(50, 2),
        ),
        ({"type": "bytes", "logicalType": "decimal", "precision": 2, "scale": 3}, pa.binary()),
        ({"type": "long", "logicalType": "something-new"}, pa.int64()),
        ({"type": "enum", "name": "E", "symbols": ["A", "B"]}, pa.string()),
        ({"type": "fixed", "name": "F", "size": 3}, pa.binary()),
        ({"type": "array", "items": "int"}, pa.list_(pa.field("element", pa.int32(), False))),
        ({"type": "map", "values": ["null", "long"]}, pa.map_(pa.string(), pa.int64())),
    ],
)
def test_type_mapping(avro: Any, arrow: pa.DataType) -> None:
    assert avro_to_arrow(_field(avro)).field("f").type == arrow


def test_named_type_references_and_namespaces() -> None:
    schema = {
        "type": "record",
        "name": "outer",
        "namespace": "ns",
        "fields": [
            {
                "name": "a",
                "type": {
                    "type": "record",
                    "name": "Inner",
                    "fields": [{"name": "x", "type": "int"}],
                },
            },
            {"name": "b", "type": ["null", "Inner"]},
            {"name": "c", "type": "ns.Inner"},
            {"name": "d", "type": {"type": "fixed", "name": "F", "size": 2}},
            {"name": "e", "type": "F"},
        ],
    }
    arrow = avro_to_arrow(json.dumps(schema))
    inner = pa.struct([pa.field("x", pa.int32(), False)])
    assert arrow.field("b").type == inner and arrow.field("b").nullable
    assert arrow.field("c").type == inner
    assert arrow.field("e").type == pa.binary()


@pytest.mark.parametrize(
    ("schema", "match"),
    [
        ('{"type": "record"', "invalid Avro schema JSON"),
        ({"type": "array", "items": "int"}, "must be a record"),
        (_field(["null", "int", "string"]), "several non-null branches"),
        (_field("Missing"), "'Missing'.*not defined"),
    ],
)
def test_bad_schemas_raise_schema_error(schema: Any, match: str) -> None:
    with pytest.raises(SchemaError, match=match):
        avro_to_arrow(schema)


def test_arrow_to_avro_widens_and_rejects() -> None:
    schema = pa.schema(
        [
            pa.field("i8", pa.int8(), False),
            pa.field("u32", pa.uint32()),
            pa.field("ts_ns", pa.timestamp("ns", "Asia/Tokyo")),
            pa.field("ts_local", pa.timestamp("ms")),
            pa.field("ls", pa.large_string()),
            pa.field("dict", pa.dictionary(pa.int32(), pa.string())),
            pa.field("fsb", pa.binary(4)),
        ]
    )
    avro = arrow_to_avro(schema, "r", "")
    types = {f["name"]: f["type"] for f in avro["fields"]}
    assert "namespace" not in avro
    assert types["i8"] == "int"
    assert types["u32"] == ["null", "long"]
    assert types["ts_ns"] == ["null", {"type": "long", "logicalType": "timestamp-micros"}]
    assert types["ts_local"] == ["null", {"type": "long", "logicalType": "local-timestamp-millis"}]
    assert types["ls"] == types["dict"] == ["null", "string"]
    assert types["fsb"] == [
        "null",
        {"type": "fixed", "name": "fixed", "namespace": "r.fsb", "size": 4},
    ]
    for bad in (pa.uint64(), pa.duration("s"), pa.map_(pa.int32(), pa.int32())):
        with pytest.raises(SchemaError):
            arrow_to_avro(pa.schema([("x", bad)]), "r", "ns")


@pytest.mark.parametrize(
    ("schema", "named"),
    [
        (
            pa.schema([("id", pa.int64()), ("Company Very Short", pa.string())]),
            "'Company Very Short'",
        ),
        (pa.schema([("1st", pa.int32())]), "'1st'"),
        (pa.schema([("a-b", pa.int32())]), "'a-b'"),
        (pa.schema([("s", pa.struct([("ok", pa.int32()), ("x.y", pa.int32())]))]), "'x.y'"),
        (pa.schema([("l", pa.list_(pa.struct([("é", pa.int32())])))]), "'é'"),
    ],
)
def test_arrow_to_avro_refuses_names_avro_rejects(schema: pa.Schema, named: str) -> None:
    """Avro names are [A-Za-z_][A-Za-z0-9_]* at every depth; others are a SchemaError naming
    the field (hudi-rs and Avro's parser reject the table's schema otherwise)."""
    with pytest.raises(SchemaError, match="not a valid Avro name") as caught:
        arrow_to_avro(schema, "r", "ns")
    assert named in str(caught.value)


def test_create_refuses_a_column_name_avro_rejects_before_writing(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("Company Very Short", pa.string())])
    with pytest.raises(SchemaError, match="'Company Very Short'"):
        lakecore.create(str(tmp_path / "t"), schema, format="hudi")
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert written == []


def _nested_schema() -> pa.Schema:
    element = pa.struct([("a", pa.string()), ("d", pa.decimal128(12, 3))])
    return pa.schema(
        [
            pa.field("id", pa.int64(), False),
            ("name", pa.string()),
            ("amount", pa.decimal128(10, 2)),
            ("big", pa.decimal256(45, 5)),
            ("day", pa.date32()),
            ("at", pa.timestamp("us", "UTC")),
            ("local", pa.timestamp("us")),
            ("millis", pa.timestamp("ms", "UTC")),
            ("tod", pa.time64("us")),
            ("bin", pa.binary()),
            ("items", pa.list_(pa.field("element", element))),
            ("props", pa.map_(pa.string(), pa.decimal128(5, 1))),
            (
                "nested",
                pa.struct(
                    [("inner", pa.struct([("x", pa.float64()), ("m", pa.decimal128(4, 0))]))]
                ),
            ),
        ]
    )


def _nested_table() -> pa.Table:
    d = decimal.Decimal
    rows = [
        {
            "id": 1,
            "name": "a",
            "amount": d("12345678.90"),
            "big": d("-1234567890123456789012345678901234567890.12345"),
            "day": datetime.date(2024, 2, 29),
            "at": datetime.datetime(2024, 1, 1, 12, 0, 0, 123456, tzinfo=UTC),
            "local": datetime.datetime(2024, 1, 1, 12, 0),
            "millis": datetime.datetime(1960, 1, 1, tzinfo=UTC),
            "tod": datetime.time(23, 59, 59, 999999),
            "bin": b"\x00\xff",
            "items": [{"a": "x", "d": d("-0.001")}, None, {"a": None, "d": None}],
            "props": [("k", d("-1.5")), ("z", None)],
            "nested": {"inner": {"x": 1.5, "m": d("-128")}},
        },
        {
            "id": 2,
            "name": None,
            "amount": d("-0.01"),
            "items": [],
            "props": [],
            "nested": {"inner": None},
        },
        {"id": 3, "amount": d("0"), "big": d("0.00001"), "nested": None},
        {"id": 4, "amount": d("-99999999.99"), "items": None, "props": None},
    ]
    return pa.Table.from_pylist(rows, schema=_nested_schema())


def _write_read(table: pa.Table, physical: bool) -> list[dict[str, Any]]:
    avro = arrow_to_avro(table.schema, "t_record", "hoodie.t")
    parsed = fastavro.parse_schema(avro)
    buffer = io.BytesIO()
    for record in arrow_to_records(table):
        fastavro.schemaless_writer(buffer, parsed, record)
    buffer.seek(0)
    read_schema = fastavro.parse_schema(physical_avro_schema(avro)) if physical else parsed
    records: list[dict[str, Any]] = []
    for _ in range(len(table)):
        decoded: Any = fastavro.schemaless_reader(buffer, read_schema, None)
        records.append(decoded)
    return records


def test_round_trip_through_fastavro_with_logical_values() -> None:
    table = _nested_table()
    records = _write_read(table, physical=False)
    assert isinstance(records[0]["amount"], decimal.Decimal)
    assert records_to_arrow(records, table.schema).equals(table)


def test_round_trip_through_fastavro_with_raw_values() -> None:
    table = _nested_table()
    records = _write_read(table, physical=True)
    assert isinstance(records[0]["amount"], bytes)
    assert isinstance(records[0]["at"], int)
    assert raw_records_to_arrow(records, table.schema).equals(table)


def test_raw_decimals_every_byte_length() -> None:
    values = [0, 1, -1, 127, 128, -128, -129, 255, 256, 2**63, -(2**63), 10**37, -(10**37) + 1]
    raw: list[dict[str, bytes | None]] = [
        {"d": v.to_bytes((v.bit_length() + 8) // 8, "big", signed=True)} for v in values
    ]
    raw.append({"d": b""})  # Java writes zero as one byte, but an empty value is 0 too
    raw.append({"d": None})
    table = raw_records_to_arrow(raw, pa.schema([("d", pa.decimal128(38, 0))]))
    expected = [decimal.Decimal(v) for v in values] + [decimal.Decimal(0), None]
    assert table.column("d").to_pylist() == expected
    with pytest.raises(SchemaError, match="does not fit"):
        raw_records_to_arrow([{"d": b"\x01" * 17}], pa.schema([("d", pa.decimal128(38, 0))]))


def test_records_to_arrow_converts_uuid_objects_and_rejects_misfits() -> None:
    u = uuid.uuid4()
    table = records_to_arrow(
        [{"id": u, "n": 1}, {"n": None}], pa.schema([("id", pa.string()), ("n", pa.int32())])
    )
    assert table.to_pylist() == [{"id": str(u), "n": 1}, {"id": None, "n": None}]
    with pytest.raises(SchemaError):
        records_to_arrow([{"n": "x"}], pa.schema([("n", pa.int32())]))
    with pytest.raises(SchemaError):
        raw_records_to_arrow([{"n": 2**40}], pa.schema([("n", pa.int32())]))


def test_arrow_to_records_converts_nanoseconds_and_dictionaries() -> None:
    table = pa.table(
        {
            "ts": pa.array([1_000_000_000], pa.timestamp("ns", "UTC")),
            "cat": pa.array(["a"]).dictionary_encode(),
            "m": pa.array([[("k", 1)]], pa.map_(pa.string(), pa.int64())),
        }
    )
    (record,) = arrow_to_records(table)
    assert record == {
        "ts": datetime.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC),
        "cat": "a",
        "m": {"k": 1},
    }
    lossy = pa.table({"ts": pa.array([1], pa.timestamp("ns"))})
    with pytest.raises(SchemaError, match="'ts'"):
        arrow_to_records(lossy)
