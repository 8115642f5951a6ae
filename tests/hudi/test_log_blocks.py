"""Hudi log block contents: corpus blocks against the expected rows, round trips, damage."""

from __future__ import annotations

import datetime
import decimal
import json
import struct
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lakecore_hudi.avro_schema import arrow_to_avro
from lakecore_hudi.log.blocks import (
    conform_table,
    decode_avro_block,
    decode_data_block,
    decode_parquet_block,
    encode_avro_data_block,
    encode_parquet_data_block,
    encode_rollback_command_block,
    hfile_content,
)
from lakecore_hudi.log.delete_blocks import decode_delete_block, encode_delete_block
from lakecore_hudi.log.format import (
    BlockType,
    CommandType,
    HeaderKey,
    LogBlock,
    encode_log_block,
    read_log_blocks,
)

from lakecore.errors import CorruptTableError, SchemaError, UnsupportedFeatureError
from tests.corpus import CORPUS

UTC = datetime.timezone.utc
D = decimal.Decimal


def _one(raw: bytes) -> LogBlock:
    (block,) = read_log_blocks(raw, "t/.f-0_001.log.1_0-1-2")
    return block


# ------------------------------------------------------------------------------ the corpus


def _data_logs() -> list[tuple[str, Path]]:
    hudi = CORPUS / "hudi"
    if not hudi.exists():
        pytest.fail(f"corpus not found at {CORPUS}; set LAKECORE_CORPUS")
    logs = sorted(p for p in hudi.glob("*/**/.*.log.*") if ".hoodie" not in p.parts)
    return [(p.relative_to(hudi).parts[0], p) for p in logs]


def _expected(table: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(
        (CORPUS / "expected" / "hudi" / f"{table}.json").read_text()
    )
    return loaded


def _rows_at_or_after(table: str, instant: str) -> tuple[str, list[dict[str, Any]]]:
    """The first expected version >= ``instant`` that has a rows file, and its rows."""
    versions = _expected(table)["versions"]
    version = min(v for v, info in versions.items() if v >= instant and info["rows_file"])
    rows_file = CORPUS / "expected" / "hudi" / versions[version]["rows_file"]
    return version, pq.read_table(rows_file).to_pylist()


def test_corpus_log_records_are_the_rows_the_reference_reader_returns() -> None:
    blocks = [(t, b) for t, p in _data_logs() for b in read_log_blocks(p.read_bytes(), str(p))]
    deletes = {
        (t, b.instant_time or "", key)
        for t, b in blocks
        if b.block_type == BlockType.DELETE
        for key in decode_delete_block(b).column("record_key").to_pylist()
    }
    checked = 0
    for table, block in blocks:
        if block.block_type == BlockType.DELETE:
            continue
        instant = block.instant_time
        assert instant is not None
        version, rows = _rows_at_or_after(table, instant)
        by_key = {r["_hoodie_record_key"]: r for r in rows}
        decoded = decode_data_block(block)
        assert decoded.num_rows > 0
        for record in decoded.to_pylist():
            key = record["_hoodie_record_key"]
            if any(t == table and instant < i <= version and k == key for t, i, k in deletes):
                assert key not in by_key  # deleted again before the next expected snapshot
                continue
            expected = by_key[key]
            data = {k: v for k, v in record.items() if not k.startswith("_hoodie")}
            assert data == {k: expected[k] for k in data}, (table, key)
            assert record["_hoodie_commit_time"] == instant
            checked += 1
    assert len(blocks) == 20
    assert checked == 13  # 14 data records; one was deleted again before the next snapshot


def test_corpus_deletes_remove_rows_that_existed_before() -> None:
    checked = 0
    for table, path in _data_logs():
        for block in read_log_blocks(path.read_bytes(), str(path)):
            if block.block_type != BlockType.DELETE:
                continue
            assert block.instant_time is not None
            deletes = decode_delete_block(block)
            assert deletes.schema.names == ["record_key", "partition_path", "ordering_value"]
            # Hudi writes IntWrapper(0), its "no ordering value" marker, for these deletes
            assert deletes.column("ordering_value").null_count == deletes.num_rows
            _, after = _rows_at_or_after(table, block.instant_time)
            versions = _expected(table)["versions"]
            before = max(
                v for v, i in versions.items() if v < block.instant_time and i["rows_file"]
            )
            _, earlier = _rows_at_or_after(table, before)
            for key, partition in zip(
                deletes.column("record_key").to_pylist(),
                deletes.column("partition_path").to_pylist(),
                strict=True,
            ):
                assert key not in {r["_hoodie_record_key"] for r in after}
                assert (key, partition) in {
                    (r["_hoodie_record_key"], r["_hoodie_partition_path"]) for r in earlier
                }
                checked += 1
    assert checked == 6


def test_corpus_delete_block_content_is_version_3() -> None:
    versions = set()
    for _, path in _data_logs():
        for block in read_log_blocks(path.read_bytes(), str(path)):
            if block.block_type == BlockType.DELETE:
                versions.add(struct.unpack(">i", block.content[:4])[0])
    assert versions == {3}


def test_corpus_reader_schema_projection() -> None:
    path = next(p for t, p in _data_logs() if t == "mor_avro_v8_trips_8i3u1d")
    block = read_log_blocks(path.read_bytes(), str(path))[0]
    reader = pa.schema([("uuid", pa.string()), ("fare", pa.float64()), ("tip", pa.float32())])
    decoded = decode_data_block(block, reader)
    assert decoded.schema == reader
    assert decoded.column("tip").null_count == decoded.num_rows == 1


def test_corpus_hfile_blocks_expose_raw_content() -> None:
    path = next((CORPUS / "hudi").glob("*/.hoodie/metadata/files/.files-*.log.1_3-*"))
    hfiles = [
        b
        for b in read_log_blocks(path.read_bytes(), str(path))
        if b.block_type == BlockType.HFILE_DATA
    ]
    assert len(hfiles) == 1
    assert bytes(hfile_content(hfiles[0])[:8]) == b"DATABLK*"
    with pytest.raises(UnsupportedFeatureError, match="HFILE_DATA block"):
        decode_data_block(hfiles[0])


# ------------------------------------------------------------------------------ round trips


def _table() -> pa.Table:
    schema = pa.schema(
        [
            pa.field("_hoodie_record_key", pa.string()),
            pa.field("id", pa.int64(), nullable=False),
            ("name", pa.string()),
            ("amount", pa.decimal128(15, 2)),
            ("day", pa.date32()),
            ("at", pa.timestamp("us", "UTC")),
            ("tags", pa.list_(pa.field("element", pa.string()))),
            ("attrs", pa.map_(pa.string(), pa.int32())),
            ("point", pa.struct([("x", pa.float64()), ("y", pa.float64())])),
        ]
    )
    rows = [
        {
            "_hoodie_record_key": "k1",
            "id": 1,
            "name": "ä",
            "amount": D("-12.34"),
            "day": datetime.date(2024, 1, 2),
            "at": datetime.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=UTC),
            "tags": ["a", None],
            "attrs": [("x", 1)],
            "point": {"x": 1.0, "y": None},
        },
        {"_hoodie_record_key": "k2", "id": 2},
    ]
    return pa.Table.from_pylist(rows, schema=schema)


def test_avro_data_block_round_trip() -> None:
    table = _table()
    avro = arrow_to_avro(table.schema, "t_record", "hoodie.t")
    block = _one(encode_avro_data_block(table, avro, "20240101000000000"))
    assert block.block_type == BlockType.AVRO_DATA
    assert block.instant_time == "20240101000000000"
    assert block.schema is not None and json.loads(block.schema) == avro
    assert struct.unpack(">ii", block.content[:8]) == (3, 2)
    assert decode_avro_block(block).equals(table)


def test_empty_avro_data_block() -> None:
    table = _table().slice(0, 0)
    block = _one(encode_avro_data_block(table, arrow_to_avro(table.schema, "r", "ns"), "1"))
    assert decode_avro_block(block).equals(table)


def test_parquet_data_block_round_trip() -> None:
    table = _table()
    avro = arrow_to_avro(table.schema, "t_record", "hoodie.t")
    block = _one(encode_parquet_data_block(table, avro, "20240101000000000"))
    assert block.block_type == BlockType.PARQUET_DATA
    assert decode_parquet_block(block).equals(table)
    assert decode_data_block(block).equals(table)


def test_parquet_data_block_with_int96_timestamps_outside_the_ns_range() -> None:
    """Spark may write Parquet log blocks with INT96 timestamps; years 1 and 9999 must not wrap
    (pyarrow decodes INT96 to nanoseconds by default)."""
    values = [datetime.datetime(1, 1, 1), datetime.datetime(9999, 12, 31, 23, 59, 59, 999999)]
    table = pa.table({"ts": pa.array(values, pa.timestamp("us"))})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, use_deprecated_int96_timestamps=True)
    header = {
        HeaderKey.INSTANT_TIME: "1",
        HeaderKey.SCHEMA: json.dumps(arrow_to_avro(table.schema, "r", "ns")),
    }
    block = _one(encode_log_block(BlockType.PARQUET_DATA, header, sink.getvalue().to_pybytes()))
    assert decode_parquet_block(block).column("ts").to_pylist() == values


def test_schema_evolution_on_decode() -> None:
    table = pa.table(
        {
            "id": pa.array([1, 2], pa.int32()),
            "gone": ["x", "y"],
            "s": pa.array([{"a": 1}, None], pa.struct([("a", pa.int32())])),
        }
    )
    block = _one(encode_avro_data_block(table, arrow_to_avro(table.schema, "r", "ns"), "1"))
    reader = pa.schema(
        [
            ("new", pa.string()),
            ("id", pa.int64()),
            ("s", pa.struct([("a", pa.int64()), ("b", pa.string())])),
        ]
    )
    decoded = decode_avro_block(block, reader)
    assert decoded.schema == reader
    assert decoded.to_pylist() == [
        {"new": None, "id": 1, "s": {"a": 1, "b": None}},
        {"new": None, "id": 2, "s": None},
    ]
    with pytest.raises(SchemaError, match="'id'"):
        decode_avro_block(block, pa.schema([("id", pa.timestamp("s"))]))
    with pytest.raises(SchemaError, match="missing and not nullable"):
        conform_table(table, pa.schema([pa.field("other", pa.int32(), nullable=False)]))


def test_log_rows_conform_finer_timestamps_as_base_files_do() -> None:
    """A log block's timestamps finer than the table's unit truncate, as a base file's do
    (``cast_column``); was a SchemaError for the log rows only."""
    table = pa.table({"ts": pa.array([1_700_000_000_123_456_789, None], pa.timestamp("ns"))})
    got = conform_table(table, pa.schema([("ts", pa.timestamp("us"))]))
    assert got.column("ts").cast(pa.int64()).to_pylist() == [1_700_000_000_123_456, None]
    with pytest.raises(SchemaError, match="'ts'"):
        conform_table(table, pa.schema([("ts", pa.int32())]))


@pytest.mark.parametrize(
    ("ordering", "values"),
    [
        (pa.int64(), [5, None, 2**40]),
        (pa.int32(), [7, None, -1]),
        (pa.string(), ["b", None, "a"]),
        (pa.float64(), [1.5, None, -0.0]),
        (pa.bool_(), [True, None, False]),
        (pa.binary(), [b"\x00", None, b""]),
        (pa.date32(), [datetime.date(2024, 1, 1), None, datetime.date(1960, 5, 6)]),
        (pa.decimal128(30, 15), [D("1.500000000000000"), None, D("-2.000000000000001")]),
        (
            pa.timestamp("us", "UTC"),
            [
                datetime.datetime(2024, 1, 1, tzinfo=UTC),
                None,
                datetime.datetime(1969, 12, 31, tzinfo=UTC),
            ],
        ),
        (pa.time64("us"), [datetime.time(1, 2, 3, 4), None, datetime.time(0)]),
    ],
)
def test_delete_block_round_trip(ordering: pa.DataType, values: list[Any]) -> None:
    keys = pa.table(
        {
            "record_key": ["k1", "k2", "k3"],
            "partition_path": ["p=1", "", None],
            "ordering_value": pa.array(values, ordering),
        }
    )
    block = _one(encode_delete_block(keys, "20240101000000000", writer_schema='{"type":"record"}'))
    assert block.block_type == BlockType.DELETE
    assert block.instant_time == "20240101000000000" and block.schema == '{"type":"record"}'
    decoded = decode_delete_block(block)
    assert decoded.equals(keys)


def test_delete_block_without_ordering_and_integer_zero() -> None:
    keys = pa.table({"record_key": ["a", "b"], "partition_path": ["p", "p"]})
    decoded = decode_delete_block(_one(encode_delete_block(keys, "1")))
    assert decoded.column("ordering_value").to_pylist() == [None, None]
    zero = pa.table(
        {"record_key": ["a"], "partition_path": ["p"], "ordering_value": pa.array([0], pa.int32())}
    )
    # an int 0 is Hudi's "no ordering value" marker, so it reads back as null
    assert decode_delete_block(_one(encode_delete_block(zero, "1"))).column(
        "ordering_value"
    ).to_pylist() == [None]
    assert decode_delete_block(_one(encode_delete_block(keys.slice(0, 0), "1"))).num_rows == 0


def test_rollback_command_block() -> None:
    block = _one(encode_rollback_command_block("20240102000000000", "20240101000000000"))
    assert block.block_type == BlockType.COMMAND
    assert block.command_block_type == CommandType.ROLLBACK
    assert block.instant_time == "20240102000000000"
    assert block.target_instant_time == "20240101000000000"
    assert bytes(block.content) == b""


# ------------------------------------------------------------------------------ damage


def _reframe(
    block: LogBlock, content: bytes, header: dict[HeaderKey, str] | None = None
) -> LogBlock:
    return _one(
        encode_log_block(block.block_type, header if header is not None else block.header, content)
    )


def test_damaged_avro_content_raises() -> None:
    table = _table()
    block = _one(encode_avro_data_block(table, arrow_to_avro(table.schema, "r", "ns"), "1"))
    content = bytes(block.content)
    with pytest.raises(CorruptTableError, match=r"t/\.f-0_001.*AVRO_DATA block at byte 0"):
        decode_avro_block(_reframe(block, content[:-3]))
    with pytest.raises(CorruptTableError, match="left after"):
        decode_avro_block(_reframe(block, content + b"\x00\x00"))
    wrong_len = bytearray(content)
    struct.pack_into(">i", wrong_len, 8, struct.unpack_from(">i", content, 8)[0] + 1)
    with pytest.raises(CorruptTableError, match="length prefixes"):
        decode_avro_block(_reframe(block, bytes(wrong_len)))
    with pytest.raises(CorruptTableError, match="shorter than its 8-byte head"):
        decode_avro_block(_reframe(block, b"\x00\x00\x00\x03"))
    with pytest.raises(CorruptTableError, match="no SCHEMA header"):
        decode_avro_block(_reframe(block, content, {HeaderKey.INSTANT_TIME: "1"}))
    with pytest.raises(UnsupportedFeatureError, match="version 0"):
        decode_avro_block(_reframe(block, b"\x00" * 8))


def test_damaged_parquet_content_raises() -> None:
    table = _table()
    block = _one(encode_parquet_data_block(table, arrow_to_avro(table.schema, "r", "ns"), "1"))
    with pytest.raises(CorruptTableError, match="not a readable Parquet file"):
        decode_parquet_block(_reframe(block, bytes(block.content)[:-20]))


def test_old_and_damaged_delete_blocks() -> None:
    keys = pa.table({"record_key": ["a"], "partition_path": ["p"]})
    block = _one(encode_delete_block(keys, "1"))
    kryo = struct.pack(">ii", 2, 3) + b"\x01\x02\x03"
    with pytest.raises(UnsupportedFeatureError, match="Kryo"):
        decode_delete_block(_reframe(block, kryo))
    with pytest.raises(CorruptTableError, match="runs past"):
        decode_delete_block(_reframe(block, struct.pack(">ii", 3, 99) + b"\x02"))
    with pytest.raises(CorruptTableError, match="do not decode"):
        decode_delete_block(_reframe(block, struct.pack(">ii", 3, 2) + b"\x02\x09"))


def test_wrong_block_kind_is_a_programming_error() -> None:
    block = _one(encode_rollback_command_block("2", "1"))
    for decode in (decode_avro_block, decode_parquet_block, decode_delete_block, hfile_content):
        with pytest.raises(ValueError):
            decode(block)


# ------------------------------------------------------------------------------ speed


def test_decoding_many_records_is_not_a_per_record_python_loop() -> None:
    n = 50_000
    table = pa.table(
        {
            "key": [f"key-{i}" for i in range(n)],
            "ts": pa.array(range(n), pa.int64()),
            "at": pa.array(range(n), pa.timestamp("us", "UTC")),
            "amount": pa.array([D(i) / 100 for i in range(n)], pa.decimal128(12, 2)),
            "note": [None if i % 3 else "x" * (i % 50) for i in range(n)],
        }
    )
    raw = encode_avro_data_block(table, arrow_to_avro(table.schema, "r", "ns"), "1")
    block = _one(raw)
    start = time.perf_counter()
    decoded = decode_avro_block(block)
    elapsed = time.perf_counter() - start
    assert decoded.equals(table)
    # ~0.1 s on a laptop; a per-record schemaless_reader + datetime/Decimal loop is ~5x that
    assert elapsed < 2.0, elapsed
