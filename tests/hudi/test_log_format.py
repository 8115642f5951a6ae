"""Hudi log block framing: every corpus log file, round trips, and corrupt input."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from lakecore_hudi.log.format import (
    MAGIC,
    BlockType,
    CommandType,
    HeaderKey,
    LogBlock,
    encode_log_block,
    read_log_blocks,
)

from lakecore.errors import CorruptTableError, UnsupportedFeatureError
from tests.corpus import CORPUS

PATH = "p/.f-0_001.log.1_0-1-2"


def _corpus_logs() -> list[Path]:
    hudi = CORPUS / "hudi"
    if not hudi.exists():
        pytest.fail(f"corpus not found at {CORPUS}; set LAKECORE_CORPUS")
    return sorted(p for p in hudi.rglob(".*.log.*") if p.is_file())


def test_every_corpus_log_file_frames_and_re_encodes_byte_identically() -> None:
    logs = _corpus_logs()
    seen: dict[BlockType, int] = {}
    for path in logs:
        data = path.read_bytes()
        blocks = read_log_blocks(data, str(path))
        assert blocks, path
        assert blocks[0].offset == 0
        for block in blocks:
            seen[block.block_type] = seen.get(block.block_type, 0) + 1
            assert block.format_version == 1
            assert block.instant_time is not None and block.instant_time.isdigit()
            assert block.path == str(path)
        again = b"".join(
            encode_log_block(b.block_type, b.header, bytes(b.content), b.footer) for b in blocks
        )
        assert again == data, path
    assert len(logs) == 319  # 20 data-table logs + 299 metadata-table logs
    assert seen == {
        BlockType.AVRO_DATA: 11,
        BlockType.PARQUET_DATA: 3,
        BlockType.DELETE: 133,
        BlockType.HFILE_DATA: 175,
    }


def test_corpus_avro_block_header() -> None:
    path = next(p for p in _corpus_logs() if p.name.startswith(".8aa68f7e") and "130911" in p.name)
    (block,) = read_log_blocks(path.read_bytes(), str(path))
    assert block.block_type == BlockType.AVRO_DATA
    assert block.instant_time == "20251220210130911"
    assert block.schema is not None and '"name":"v8_trips_8i3u1d_record"' in block.schema
    assert set(block.header) == {HeaderKey.INSTANT_TIME, HeaderKey.SCHEMA}
    assert block.footer == {}
    assert bytes(block.content[:4]) == b"\x00\x00\x00\x03"  # Avro block version 3


def test_round_trip_several_blocks_with_offsets() -> None:
    first = encode_log_block(BlockType.AVRO_DATA, {HeaderKey.INSTANT_TIME: "001"}, b"abc")
    second = encode_log_block(
        BlockType.COMMAND,
        {
            HeaderKey.INSTANT_TIME: "003",
            HeaderKey.TARGET_INSTANT_TIME: "001",
            HeaderKey.COMMAND_BLOCK_TYPE: "0",
        },
        b"",
    )
    third = encode_log_block(
        BlockType.DELETE,
        {HeaderKey.INSTANT_TIME: "002", HeaderKey.SCHEMA: '{"ü": 1}'},
        b"\x00" * 100,
        footer={HeaderKey.BLOCK_IDENTIFIER: "0,1"},
    )
    blocks = read_log_blocks(first + second + third, PATH)
    assert [b.block_type for b in blocks] == [
        BlockType.AVRO_DATA,
        BlockType.COMMAND,
        BlockType.DELETE,
    ]
    assert [b.offset for b in blocks] == [0, len(first), len(first) + len(second)]
    assert bytes(blocks[0].content) == b"abc"
    assert blocks[1].command_block_type == CommandType.ROLLBACK
    assert blocks[1].target_instant_time == "001"
    assert blocks[2].schema == '{"ü": 1}'
    assert blocks[2].footer == {HeaderKey.BLOCK_IDENTIFIER: "0,1"}
    assert read_log_blocks(b"", PATH) == []


def test_layout_matches_hudi() -> None:
    raw = encode_log_block(BlockType.PARQUET_DATA, {HeaderKey.INSTANT_TIME: "1"}, b"xy")
    assert raw[:6] == MAGIC
    (block_length,) = struct.unpack(">q", raw[6:14])
    assert len(raw) == 14 + block_length
    assert struct.unpack(">ii", raw[14:22]) == (1, 5)  # log format 1, PARQUET_DATA ordinal 5
    (trailer,) = struct.unpack(">q", raw[-8:])
    assert trailer == len(raw) - 8


def _two_blocks() -> tuple[bytes, int]:
    a = encode_log_block(BlockType.AVRO_DATA, {HeaderKey.INSTANT_TIME: "001"}, b"abc")
    b = encode_log_block(BlockType.AVRO_DATA, {HeaderKey.INSTANT_TIME: "002"}, b"defg")
    return a + b, len(a)


@pytest.mark.parametrize("cut", [1, 5, 8, 30, 60])
def test_truncated_file_raises_naming_file_and_offset(cut: int) -> None:
    data, second = _two_blocks()
    with pytest.raises(CorruptTableError, match=rf"{PATH}.*byte {second}"):
        read_log_blocks(data[:-cut], PATH)


def test_bad_magic_raises() -> None:
    data, second = _two_blocks()
    bad = data[:second] + b"#HUDX#" + data[second + 6 :]
    with pytest.raises(CorruptTableError, match=rf"{PATH}.*byte {second}.*magic"):
        read_log_blocks(bad, PATH)


def test_trailing_length_mismatch_raises() -> None:
    data, _ = _two_blocks()
    bad = data[:-8] + struct.pack(">q", 12345)
    with pytest.raises(CorruptTableError, match="trailing total block length 12345"):
        read_log_blocks(bad, PATH)


def test_block_length_past_end_raises() -> None:
    data, _ = _two_blocks()
    bad = data[:6] + struct.pack(">q", 10_000) + data[14:]
    with pytest.raises(CorruptTableError, match=rf"{PATH}.*byte 0.*block length 10000"):
        read_log_blocks(bad, PATH)


def test_inner_length_past_block_raises() -> None:
    raw = bytearray(encode_log_block(BlockType.AVRO_DATA, {HeaderKey.INSTANT_TIME: "1"}, b"abc"))
    # the header value length sits after magic, length, version, type, count, key
    struct.pack_into(">i", raw, 30, 9999)
    with pytest.raises(CorruptTableError, match="header value of 9999 bytes"):
        read_log_blocks(bytes(raw), PATH)


def test_garbage_after_last_block_raises() -> None:
    data, _ = _two_blocks()
    with pytest.raises(CorruptTableError, match=rf"byte {len(data)}"):
        read_log_blocks(data + b"junk", PATH)


def test_skip_corrupt_resyncs_at_next_magic_like_hudi() -> None:
    data, second = _two_blocks()
    torn = data[: second - 5]  # a torn first block followed by a good one
    blocks = read_log_blocks(torn + data[second:], PATH, skip_corrupt=True)
    assert [b.block_type for b in blocks] == [BlockType.CORRUPT, BlockType.AVRO_DATA]
    assert blocks[0].offset == 0 and len(blocks[0].content) == second - 5
    assert blocks[1].instant_time == "002" and blocks[1].offset == second - 5


def test_unknown_versions_and_keys_are_refused() -> None:
    raw = bytearray(encode_log_block(BlockType.AVRO_DATA, {HeaderKey.INSTANT_TIME: "1"}, b""))
    struct.pack_into(">i", raw, 14, 2)
    with pytest.raises(UnsupportedFeatureError, match="log format version 2"):
        read_log_blocks(bytes(raw), PATH)
    raw = bytearray(encode_log_block(BlockType.AVRO_DATA, {HeaderKey.INSTANT_TIME: "1"}, b""))
    struct.pack_into(">i", raw, 26, 42)  # header key ordinal
    with pytest.raises(UnsupportedFeatureError, match="key 42"):
        read_log_blocks(bytes(raw), PATH)
    raw = bytearray(encode_log_block(BlockType.AVRO_DATA, {HeaderKey.INSTANT_TIME: "1"}, b""))
    struct.pack_into(">i", raw, 18, 99)  # block type
    with pytest.raises(CorruptTableError, match="unknown block type 99"):
        read_log_blocks(bytes(raw), PATH)


def test_bad_command_type_and_corrupt_encode() -> None:
    block = LogBlock(BlockType.COMMAND, 1, {HeaderKey.COMMAND_BLOCK_TYPE: "7"}, b"", path=PATH)
    with pytest.raises(CorruptTableError, match="unknown command block type"):
        _ = block.command_block_type
    with pytest.raises(ValueError):
        encode_log_block(BlockType.CORRUPT, {}, b"")
