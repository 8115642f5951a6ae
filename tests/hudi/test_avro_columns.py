"""The column-wise Avro decoder against fastavro's, on every type it reads, and on damage."""

from __future__ import annotations

import io
import json
import struct
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pytest
from lakecore_hudi.avro_schema import physical_avro_schema
from lakecore_hudi.log import blocks
from lakecore_hudi.log.avro_columns import compile_schema, decode_records
from lakecore_hudi.log.blocks import _decode_with_fastavro, decode_avro_blocks
from lakecore_hudi.log.format import (
    BlockType,
    HeaderKey,
    LogBlock,
    encode_log_block,
    read_log_blocks,
)

from lakecore.errors import CorruptTableError

DEC_FIXED = {
    "type": "fixed",
    "name": "dec",
    "size": 9,
    "logicalType": "decimal",
    "precision": 20,
    "scale": 3,
}
SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "r",
    "namespace": "ns",
    "fields": [
        {"name": "s", "type": ["null", "string"], "default": None},
        {"name": "s_req", "type": "string"},
        {"name": "b", "type": ["null", "boolean"]},
        {"name": "i", "type": ["int", "null"]},
        {"name": "l", "type": "long"},
        {"name": "f", "type": ["null", "float"]},
        {"name": "d", "type": "double"},
        {"name": "raw", "type": ["null", "bytes"]},
        {"name": "fx", "type": {"type": "fixed", "name": "four", "size": 4}},
        {"name": "fx_again", "type": ["null", "four"]},
        {
            "name": "e",
            "type": ["null", {"type": "enum", "name": "color", "symbols": ["R", "G", "B"]}],
        },
        {"name": "ts_ms", "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}]},
        {"name": "ts_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {
            "name": "ts_ns",
            "type": ["null", {"type": "long", "logicalType": "local-timestamp-nanos"}],
        },
        {"name": "day", "type": ["null", {"type": "int", "logicalType": "date"}]},
        {"name": "t_ms", "type": ["null", {"type": "int", "logicalType": "time-millis"}]},
        {"name": "t_us", "type": ["null", {"type": "long", "logicalType": "time-micros"}]},
        {"name": "u", "type": ["null", {"type": "string", "logicalType": "uuid"}]},
        {
            "name": "dec_b",
            "type": [
                "null",
                {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2},
            ],
        },
        {"name": "dec_f", "type": ["null", DEC_FIXED]},
        {"name": "nothing", "type": ["null"]},
        {"name": "n", "type": "null"},
        {
            "name": "inner",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "inner",
                    "fields": [
                        {"name": "x", "type": ["null", "long"]},
                        {"name": "y", "type": {"type": "string"}},
                        {
                            "name": "deep",
                            "type": [
                                "null",
                                {
                                    "type": "record",
                                    "name": "deep",
                                    "fields": [{"name": "z", "type": ["null", "int"]}],
                                },
                            ],
                        },
                    ],
                },
            ],
        },
        {"name": "inner_again", "type": "inner"},
    ],
}


@pytest.fixture
def columnar(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every block goes to the column-wise decoder, however few its records."""
    monkeypatch.setattr(blocks, "_COLUMNAR_MIN_RECORDS", 0)


def _value(rng: np.random.Generator, i: int) -> dict[str, Any]:
    def maybe(v: Any) -> Any:
        return None if rng.random() < 0.3 else v

    big = [0, 1, -1, 63, -64, 64, 2**31 - 1, -(2**31), 2**62, -(2**63), 2**63 - 1]
    long_value = big[i % len(big)] if i % 3 == 0 else int(rng.integers(-(10**12), 10**12))
    text = "".join(rng.choice(list("aé€𝄞z "), int(rng.integers(0, 150))))
    inner = {"x": maybe(long_value), "y": text[:5], "deep": maybe({"z": maybe(i)})}
    unscaled = int(rng.integers(-(10**11), 10**11))
    return {
        "s": maybe(text),
        "s_req": text[::-1],
        "b": maybe(bool(i % 2)),
        "i": maybe(int(rng.integers(-(2**31), 2**31 - 1))),
        "l": long_value,
        "f": maybe(float(np.float32(rng.normal()))),
        "d": float(rng.normal() * 1e6),
        "raw": maybe(rng.bytes(int(rng.integers(0, 300)))),
        "fx": rng.bytes(4),
        "fx_again": maybe(rng.bytes(4)),
        "e": maybe(["R", "G", "B"][i % 3]),
        "ts_ms": maybe(long_value // 1000),
        "ts_us": long_value,
        "ts_ns": maybe(long_value),
        "day": maybe(int(rng.integers(-50_000, 50_000))),
        "t_ms": maybe(int(rng.integers(0, 86_400_000))),
        "t_us": maybe(int(rng.integers(0, 86_400_000_000))),
        "u": maybe("123e4567-e89b-12d3-a456-426614174000"),
        "dec_b": maybe(unscaled.to_bytes(6, "big", signed=True)[: 1 + i % 6]),
        "dec_f": maybe(unscaled.to_bytes(9, "big", signed=True)),
        "nothing": None,
        "n": None,
        "inner": maybe(inner),
        "inner_again": inner,
    }


def _block(records: list[dict[str, Any]], schema: dict[str, Any], path: str = "a.log") -> LogBlock:
    parsed = fastavro.parse_schema(physical_avro_schema(json.loads(json.dumps(schema))))
    parts = [struct.pack(">ii", 3, len(records))]
    for record in records:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, record)
        parts += [struct.pack(">i", len(out.getvalue())), out.getvalue()]
    header = {HeaderKey.INSTANT_TIME: "1", HeaderKey.SCHEMA: json.dumps(schema)}
    (block,) = read_log_blocks(encode_log_block(BlockType.AVRO_DATA, header, b"".join(parts)), path)
    return block


def _blocks(sizes: list[int], seed: int = 7) -> list[LogBlock]:
    rng = np.random.default_rng(seed)
    out, start = [], 0
    for size in sizes:
        out.append(_block([_value(rng, start + i) for i in range(size)], SCHEMA, f"{start}.log"))
        start += size
    return out


@pytest.mark.usefixtures("columnar")
def test_every_type_decodes_like_fastavro() -> None:
    assert compile_schema(json.dumps(SCHEMA)) is not None  # the column-wise path is taken
    blocks = _blocks([300, 0, 1, 257])
    expected = pa.concat_tables([_decode_with_fastavro(b) for b in blocks])
    decoded = decode_avro_blocks(blocks)
    assert decoded.num_rows == 558
    assert decoded.schema == expected.schema
    for name in expected.column_names:
        assert decoded.column(name).equals(expected.column(name)), name
    # One at a time gives the same rows as all at once.
    singles = pa.concat_tables([decode_avro_blocks([b]) for b in blocks])
    assert singles.equals(decoded)


def test_few_records_go_to_fastavro(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def counting(*args: Any) -> Any:
        calls.append(1)
        return decode_records(*args)

    monkeypatch.setattr(blocks, "decode_records", counting)
    small = _blocks([blocks._COLUMNAR_MIN_RECORDS - 1])
    assert decode_avro_blocks(small).equals(_decode_with_fastavro(small[0]))
    assert calls == []
    decode_avro_blocks(_blocks([blocks._COLUMNAR_MIN_RECORDS]))
    assert calls == [1]


def test_arrays_and_maps_go_to_fastavro() -> None:
    schema = {
        "type": "record",
        "name": "r",
        "fields": [
            {"name": "a", "type": {"type": "array", "items": "long"}},
            {"name": "m", "type": ["null", {"type": "map", "values": "string"}]},
        ],
    }
    assert compile_schema(json.dumps(schema)) is None
    records = [{"a": [1, 2, i], "m": {"k": str(i)} if i % 2 else None} for i in range(5)]
    table = decode_avro_blocks([_block(records, schema)])
    assert table.column("a").to_pylist()[4] == [1, 2, 4]
    assert table.column("m").to_pylist()[:2] == [None, [("k", "1")]]


def _damaged(payload_of_record: bytes, schema: dict[str, Any]) -> LogBlock:
    content = struct.pack(">iii", 3, 1, len(payload_of_record)) + payload_of_record
    header = {HeaderKey.INSTANT_TIME: "1", HeaderKey.SCHEMA: json.dumps(schema)}
    (block,) = read_log_blocks(encode_log_block(BlockType.AVRO_DATA, header, content), "x.log")
    return block


def _one_field(avro_type: Any) -> dict[str, Any]:
    return {"type": "record", "name": "r", "fields": [{"name": "v", "type": avro_type}]}


@pytest.mark.usefixtures("columnar")
@pytest.mark.parametrize(
    ("avro_type", "payload", "message"),
    [
        (["null", "string"], b"\x04", "union branch"),  # branch 2 of 2
        (["null", "string"], b"\x02\x04\xff\xfe", "UTF-8"),
        ("string", b"\x08ab", "runs past"),  # length 4, 2 bytes
        ("string", b"\x01", "runs past"),  # negative length
        ("long", b"\xff" * 11, "longer than 10"),
        ("int", b"\xfe\xff\xff\xff\x1f", "32 bits"),
        ("boolean", b"\x02", "neither 0 nor 1"),
        ("double", b"\x00" * 7, "runs past"),
        ({"type": "enum", "name": "e", "symbols": ["A"]}, b"\x02", "enum index"),
        ("long", b"\x02\x00", "decodes to 1 bytes"),  # a byte left over in the record
    ],
)
def test_damaged_records_raise_naming_the_block(
    avro_type: Any, payload: bytes, message: str
) -> None:
    block = _damaged(payload, _one_field(avro_type))
    with pytest.raises(CorruptTableError, match=rf"x\.log: AVRO_DATA block at byte 0.*{message}"):
        decode_avro_blocks([block])


@pytest.mark.usefixtures("columnar")
def test_damage_in_a_later_block_names_that_block() -> None:
    good = _blocks([3])[0]
    bad = _damaged(b"\x04", _one_field(["null", "string"]))
    bad = LogBlock(bad.block_type, 1, good.header, bad.content, offset=77, path="bad.log")
    with pytest.raises(CorruptTableError, match=r"bad\.log: AVRO_DATA block at byte 77"):
        decode_avro_blocks([good, bad])
