"""HFile v3 reading: every HFile of the Hudi corpus, synthetic files, and damaged input."""

from __future__ import annotations

import gzip
import json
import struct
from collections.abc import Sequence
from pathlib import Path

import pytest
from lakecore_hudi.log.format import BlockType, read_log_blocks
from lakecore_hudi.mdt.hfile import read_file_info, read_hfile, read_trailer
from lakecore_hudi.mdt.records import decode_records, parse_schema

from lakecore.errors import CorruptTableError, UnsupportedFeatureError
from tests.corpus import CORPUS

HUDI = CORPUS / "hudi"

# What the shared corpus holds; a change to the corpus must show up here.
CORPUS_HFILES = 55
CORPUS_HFILE_CELLS = 290
CORPUS_LOG_HFILE_BLOCKS = 175
CORPUS_LOG_HFILE_CELLS = 1024

_CODEC_IDS = {"LZO": 0, "GZ": 1, "NONE": 2, "SNAPPY": 3}


# ------------------------------------------------------------------ a tiny HFile writer


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _proto(fields: Sequence[tuple[int, int | bytes]]) -> bytes:
    out = bytearray()
    for number, value in fields:
        if isinstance(value, bytes):
            out += _varint(number << 3 | 2) + _varint(len(value)) + value
        else:
            out += _varint(number << 3) + _varint(value)
    return bytes(out)


def _block(magic: bytes, payload: bytes, codec: str, checksum_bytes: int = 0) -> bytes:
    stored = gzip.compress(payload) if codec == "GZ" else payload
    header = struct.pack(
        ">8siiqBii",
        magic,
        len(stored) + checksum_bytes,
        len(payload),
        -1,
        0,
        16384,
        33 + len(stored),
    )
    return header + stored + b"\0" * checksum_bytes


def _vlong(value: int) -> bytes:
    """Hadoop WritableUtils.writeVLong."""
    if -112 <= value <= 127:
        return struct.pack(">b", value)
    length = -112
    if value < 0:
        value, length = ~value, -120
    tmp = value
    while tmp:
        tmp >>= 8
        length -= 1
    size = -(length + 112) if length >= -120 else -(length + 120)
    return struct.pack(">b", length) + value.to_bytes(size, "big")


def _cell(row: bytes, value: bytes, tags: bool, mvcc: int | None) -> bytes:
    key = struct.pack(">h", len(row)) + row + b"\0" + struct.pack(">qB", 2**63 - 1, 4)
    out = struct.pack(">ii", len(key), len(value)) + key + value
    if tags:
        out += struct.pack(">h", 3) + b"tag"
    if mvcc is not None:
        out += _vlong(mvcc)
    return out


def build_hfile(
    cells: Sequence[tuple[bytes, bytes]],
    *,
    codec: str = "NONE",
    cells_per_block: int = 2,
    tags: bool = False,
    mvcc: int | None = 0,
    file_info: dict[bytes, bytes] | None = None,
    major_version: int = 3,
    checksum_bytes: int = 4,
    data_magic: bytes = b"DATABLK*",
    entry_count: int | None = None,
) -> bytes:
    """An HFile v3 laid out as HBase / hudi-io write it (root index content is not checked)."""
    out = bytearray()
    index = bytearray()
    for start in range(0, len(cells), cells_per_block):
        chunk = cells[start : start + cells_per_block]
        payload = b"".join(_cell(r, v, tags, mvcc) for r, v in chunk)
        block = _block(data_magic, payload, codec, checksum_bytes)
        index += struct.pack(">qi", len(out), len(block)) + _varint(len(chunk[0][0])) + chunk[0][0]
        out += block
    out += _block(b"METABLKc", b"bloom", codec, checksum_bytes)  # skipped by the reader
    load_on_open = len(out)
    out += _block(b"IDXROOT2", bytes(index), codec, checksum_bytes)
    info = dict(file_info or {})
    if mvcc is not None:
        info.setdefault(b"KEY_VALUE_VERSION", struct.pack(">i", 1))
        info.setdefault(b"MAX_MEMSTORE_TS_KEY", struct.pack(">q", mvcc))
    if tags:
        info.setdefault(b"MAX_TAGS_LEN", struct.pack(">i", 3))
    entries = b"".join(_proto([(1, _proto([(1, k), (2, v)]))]) for k, v in info.items())
    file_info_offset = len(out)
    out += _block(b"FILEINF2", b"PBUF" + _varint(len(entries)) + entries, codec, checksum_bytes)
    trailer = _proto(
        [
            (1, file_info_offset),
            (2, load_on_open),
            (7, len(cells) if entry_count is None else entry_count),
            (9, 0 if cells else -1),
            (11, b"org.apache.hudi.io.storage.HoodieHBaseKVComparator"),
            (12, _CODEC_IDS[codec]),
        ]
    )
    body = b'TRABLK"$' + _varint(len(trailer)) + trailer
    out += body + b"\0" * (4096 - 4 - len(body)) + struct.pack(">i", major_version)
    return bytes(out)


CELLS = [(f"key-{i:03d}".encode(), f"value {i}".encode() * (i % 4)) for i in range(7)]


# ------------------------------------------------------------------------------ corpus


def _corpus_hfiles() -> list[Path]:
    if not HUDI.is_dir():
        pytest.fail(f"corpus not found at {HUDI}; set LAKECORE_CORPUS")
    return sorted(HUDI.glob("*/.hoodie/metadata/*/*.hfile"))


def test_every_corpus_hfile_reads_in_key_order() -> None:
    files = _corpus_hfiles()
    cells = 0
    for path in files:
        data = path.read_bytes()
        pairs = read_hfile(data, str(path))
        keys = [k for k, _ in pairs]
        assert keys == sorted(keys), path
        assert read_trailer(data, str(path)).codec == "GZ"
        cells += len(pairs)
    assert (len(files), cells) == (CORPUS_HFILES, CORPUS_HFILE_CELLS)


def test_corpus_hfile_values_are_metadata_records() -> None:
    checked = 0
    for path in _corpus_hfiles():
        data = path.read_bytes()
        schema_json = read_file_info(data, str(path))[b"schema"]
        assert json.loads(schema_json)["name"] == "HoodieMetadataRecord"
        schema = parse_schema(schema_json, str(path))
        for (row, _), record in zip(
            read_hfile(data, str(path)),
            decode_records(read_hfile(data, str(path)), schema, ""),
            strict=True,
        ):
            assert record.key == row.decode()
            assert 1 <= record.type <= 7
            checked += 1
    assert checked == CORPUS_HFILE_CELLS


def test_hfile_blocks_of_corpus_metadata_logs() -> None:
    if not HUDI.is_dir():
        pytest.fail(f"corpus not found at {HUDI}; set LAKECORE_CORPUS")
    blocks = cells = 0
    for path in sorted(HUDI.glob("*/.hoodie/metadata/*/.*.log.*")):
        for block in read_log_blocks(path.read_bytes(), str(path)):
            if block.block_type == BlockType.HFILE_DATA:
                pairs = read_hfile(bytes(block.content), str(path))
                assert block.schema is not None
                decode_records(pairs, parse_schema(block.schema, str(path)), str(path))
                blocks += 1
                cells += len(pairs)
    assert (blocks, cells) == (CORPUS_LOG_HFILE_BLOCKS, CORPUS_LOG_HFILE_CELLS)


# --------------------------------------------------------------------------- synthetic


@pytest.mark.parametrize("codec", ["NONE", "GZ"])
@pytest.mark.parametrize("per_block", [1, 3, 100])
def test_round_trip(codec: str, per_block: int) -> None:
    data = build_hfile(CELLS, codec=codec, cells_per_block=per_block)
    assert read_hfile(data, "f.hfile") == CELLS
    assert read_trailer(data, "f.hfile").codec == codec


def test_file_info_holds_extra_keys() -> None:
    data = build_hfile(CELLS, file_info={b"schema": b'{"type": "int"}'})
    info = read_file_info(data, "f.hfile")
    assert info[b"schema"] == b'{"type": "int"}'
    assert info[b"KEY_VALUE_VERSION"] == struct.pack(">i", 1)


@pytest.mark.parametrize(("tags", "mvcc"), [(True, 0), (False, None), (True, None), (False, 5000)])
def test_tags_and_mvcc_timestamps_are_skipped(tags: bool, mvcc: int | None) -> None:
    data = build_hfile(CELLS, tags=tags, mvcc=mvcc, codec="GZ")
    assert read_hfile(data, "f.hfile") == CELLS


def test_hadoop_vlong_sizes() -> None:
    for value in (0, 127, -112, 128, 255, 256, 70000, 2**40, -113, -(2**33)):
        data = build_hfile(CELLS[:2], mvcc=value, cells_per_block=1)
        assert read_hfile(data, "f.hfile") == CELLS[:2], value


def test_empty_hfile() -> None:
    data = build_hfile([])
    assert read_hfile(data, "empty.hfile") == []
    assert read_trailer(data, "empty.hfile").first_data_block_offset == -1


def test_block_without_checksum_bytes() -> None:
    data = build_hfile(CELLS, checksum_bytes=0, codec="GZ")
    assert read_hfile(data, "f.hfile") == CELLS


# ----------------------------------------------------------------------------- damage


def _corrupt(data: bytes, path: str = "damaged/x.hfile") -> CorruptTableError:
    with pytest.raises(CorruptTableError) as info:
        read_hfile(data, path)
    assert path in str(info.value)
    return info.value


@pytest.mark.parametrize("keep", [0, 10, 4095, 4096, 0.5, -1, -4, -100, -4097])
def test_truncated_file(keep: float) -> None:
    data = build_hfile(CELLS, codec="GZ")
    _corrupt(data[: int(keep * len(data)) if isinstance(keep, float) else keep])


def test_truncated_corpus_file() -> None:
    path = _corpus_hfiles()[0]
    data = path.read_bytes()
    for keep in (len(data) // 2, len(data) - 1, 100):
        _corrupt(data[:keep], str(path))


def test_bad_trailer_magic() -> None:
    data = bytearray(build_hfile(CELLS))
    start = len(data) - 4096
    data[start : start + 8] = b"NOTMAGIC"
    assert "trailer magic" in str(_corrupt(bytes(data)))


def test_bad_block_magic() -> None:
    data = bytearray(build_hfile(CELLS, codec="GZ"))
    data[0:8] = b"GARBAGE!"
    assert "block header" in str(_corrupt(bytes(data)))


def test_block_running_past_the_end() -> None:
    data = bytearray(build_hfile(CELLS))
    struct.pack_into(">i", data, 8, 10**8)  # on-disk size of the first block
    _corrupt(bytes(data))


def test_corrupt_gzip_payload() -> None:
    data = bytearray(build_hfile(CELLS, codec="GZ", cells_per_block=100))
    for i in range(40, 60):
        data[i] ^= 0xFF
    _corrupt(bytes(data))


def test_cell_running_past_its_block() -> None:
    data = bytearray(build_hfile(CELLS[:1], cells_per_block=1))
    struct.pack_into(">i", data, 33 + 4, 10**6)  # value length of the first cell
    assert "cell" in str(_corrupt(bytes(data)))


def test_entry_count_mismatch() -> None:
    data = build_hfile(CELLS, entry_count=len(CELLS) + 1)
    assert "trailer says" in str(_corrupt(data))


def test_unknown_version_is_corrupt() -> None:
    _corrupt(build_hfile(CELLS, major_version=7))


def test_version_2_is_unsupported() -> None:
    with pytest.raises(UnsupportedFeatureError, match=r"v2\.hfile"):
        read_hfile(build_hfile(CELLS, major_version=2), "v2.hfile")


def test_unsupported_codec() -> None:
    data = bytearray(build_hfile(CELLS))
    # Re-label the codec in the trailer: NONE (2) -> SNAPPY (3).
    start = len(data) - 4096
    marker = _varint(12 << 3) + _varint(2)
    at = data.index(marker, start)
    data[at : at + 2] = _varint(12 << 3) + _varint(3)
    with pytest.raises(UnsupportedFeatureError, match="SNAPPY"):
        read_hfile(bytes(data), "snappy.hfile")


def test_encoded_data_blocks_are_unsupported() -> None:
    data = build_hfile(CELLS, data_magic=b"DATABLKE")
    with pytest.raises(UnsupportedFeatureError, match="encoding"):
        read_hfile(data, "encoded.hfile")
