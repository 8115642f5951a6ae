"""HFile version 3 writing, laid out as Hudi 1.1's own writer (hudi-io) lays it out.

``mdt.hfile`` describes the format; this module writes what Hudi writes for metadata-table
base files and the content of log HFile data blocks (learned from hudi-io's writer and the
files of Spark-written metadata tables, which a test re-encodes byte for byte):

- data blocks first, from offset 0; a block is flushed before a cell would take its
  uncompressed size past ``block_size`` (64 KiB). Cells are unencoded, with no tags, and
  with a one-byte MVCC timestamp 0 (``KEY_VALUE_VERSION`` is 1). A cell key is the row
  length (int16), the row, an empty family and qualifier, ``LATEST_TIMESTAMP`` and type Put;
- meta blocks (``METABLKc``, e.g. the bloom filter Hudi keeps in base files) follow, then
  the load-on-open section: the root data index (``IDXROOT2``: per data block its offset,
  its whole on-disk size and its first key as int16 length + row, the key being written as
  a Hadoop vint-prefixed byte string), the meta index (the same with meta block names), and
  the file info (``FILEINF2``: ``PBUF``, a varint length, a ``FileInfoProto``);
- every block: the 33-byte header with previous-offset -1, checksum type NULL, 16384 bytes
  per checksum, then the payload (gzip-compressed for GZ) and 4 zero checksum bytes (the
  on-disk size counts them, the "data size with header" does not);
- the 4096-byte trailer: magic, varint length, ``TrailerProto``, zeros, version 3.0.

File-info entries are written in the iteration order of the Java ``HashMap`` Hudi keeps
them in (string hash buckets), so a re-encoded file is identical to Hudi's.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import TypeVar

from lakecore.errors import InvalidArgumentError
from lakecore_hudi.mdt.hfile import (
    DATA_MAGIC,
    FILE_INFO_MAGIC,
    PROTOBUF_MAGIC,
    TRAILER_MAGIC,
    TRAILER_SIZE,
)

__all__ = [
    "DEFAULT_BLOCK_SIZE",
    "HFileCell",
    "cell_key",
    "java_hash_order",
    "write_hfile",
]

DEFAULT_BLOCK_SIZE = 64 * 1024
COMPARATOR = b"org.apache.hudi.io.storage.HoodieHBaseKVComparator"
META_MAGIC = b"METABLKc"
ROOT_INDEX_MAGIC = b"IDXROOT2"
_CODEC_IDS = {"GZ": 1, "NONE": 2}
_BYTES_PER_CHECKSUM = 16 * 1024
_CHECKSUM = b"\x00\x00\x00\x00"
_LATEST_TIMESTAMP = (1 << 63) - 1
_PUT = 4
# Java's GZIPOutputStream header: no name, no mtime, no extra flags, OS 0.
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x00"
_HEADER = struct.Struct(">8siiqBii")

_V = TypeVar("_V")

HFileCell = tuple[bytes, bytes]
"""(row key, value)."""


def cell_key(row: bytes) -> bytes:
    """The full HBase key of a cell whose row is ``row`` (what data blocks store)."""
    return struct.pack(">h", len(row)) + row + b"\x00" + struct.pack(">qB", _LATEST_TIMESTAMP, _PUT)


def write_hfile(
    cells: Iterable[HFileCell],
    file_info: Mapping[str, bytes],
    *,
    meta_blocks: Sequence[tuple[str, bytes]] = (),
    codec: str = "GZ",
    create_time_ms: int = 0,
    block_size: int = DEFAULT_BLOCK_SIZE,
) -> bytes:
    """The bytes of an HFile holding ``cells``.

    Args:
        cells: (row key, value) pairs; rows must be strictly increasing (byte order).
        file_info: The caller's file-info entries (Hudi: ``schema``, and for base files the
            bloom-filter and min/max record key entries), in the order they were added; the
            writer adds HFile's own (``hfile.LASTKEY``, average lengths, ...).
        meta_blocks: (name, content) meta blocks, e.g. ``("bloomFilter", ...)``.
        codec: ``GZ`` (Hudi's default) or ``NONE``.
        create_time_ms: ``hfile.CREATE_TIME_TS`` (epoch milliseconds).
        block_size: The uncompressed size a data block stays within (one cell may exceed it).

    Raises:
        InvalidArgumentError: rows out of order or repeated, or an unknown codec.
    """
    if codec not in _CODEC_IDS:
        raise InvalidArgumentError(f"HFile codec must be GZ or NONE, not {codec!r}")
    out = bytearray()
    index: list[tuple[int, int, bytes]] = []  # (offset, on-disk size, first row)
    rows = 0
    key_bytes = value_bytes = data_bytes = 0
    last_row: bytes | None = None
    block = bytearray()
    first_row = b""
    for row, value in cells:
        if last_row is not None and row <= last_row:
            raise InvalidArgumentError(
                f"HFile rows must be strictly increasing: {row!r} after {last_row!r}"
            )
        key = cell_key(row)
        size = len(key) + len(value) + 9
        if block and len(block) + size > block_size:
            index.append((len(out), *_flush(out, DATA_MAGIC, bytes(block), codec), first_row))
            block.clear()
        if not block:
            first_row = row
        block += struct.pack(">ii", len(key), len(value)) + key + value + b"\x00"
        rows += 1
        key_bytes += len(row)
        value_bytes += len(value)
        data_bytes += size
        last_row = row
    if block:
        index.append((len(out), *_flush(out, DATA_MAGIC, bytes(block), codec), first_row))
    meta_index: list[tuple[int, int, bytes]] = []
    for name, content in meta_blocks:
        offset = len(out)
        meta_index.append((offset, _flush(out, META_MAGIC, content, codec)[0], name.encode()))
    load_on_open = len(out)
    _flush(out, ROOT_INDEX_MAGIC, _root_index(index, prefixed=True), codec)
    _flush(out, ROOT_INDEX_MAGIC, _root_index(meta_index, prefixed=False), codec)
    info_offset = len(out)
    own = {
        "hfile.LASTKEY": _short_prefixed(last_row) if last_row is not None else b"",
        "hfile.AVG_KEY_LEN": struct.pack(">i", key_bytes // rows if rows else 0),
        "hfile.AVG_VALUE_LEN": struct.pack(">i", value_bytes // rows if rows else 0),
        "MAX_MEMSTORE_TS_KEY": struct.pack(">q", 0),
        "KEY_VALUE_VERSION": struct.pack(">i", 1),
        "hfile.CREATE_TIME_TS": struct.pack(">q", create_time_ms),
    }
    _flush(out, FILE_INFO_MAGIC, _file_info({**file_info, **own}), codec)
    trailer: list[tuple[int, int | bytes]] = [
        (1, info_offset),
        (2, load_on_open),
        (3, data_bytes),
        (5, len(index)),
        (6, len(meta_index)),
        (7, rows),
        (8, 1),
        (9, index[0][0] if index else (1 << 64) - 1),  # -1 as a uint64: no data block
        (10, index[-1][0] if index else 0),
        (11, COMPARATOR),
        (12, _CODEC_IDS[codec]),
    ]
    proto = _proto(trailer)
    tail = TRAILER_MAGIC + _varint(len(proto)) + proto
    out += tail + bytes(TRAILER_SIZE - len(tail) - 4) + struct.pack(">i", 3)
    return bytes(out)


def _flush(out: bytearray, magic: bytes, payload: bytes, codec: str) -> tuple[int]:
    """Append one block; return (its whole on-disk size,)."""
    stored = _gzip(payload) if codec == "GZ" else payload
    header = _HEADER.pack(
        magic,
        len(stored) + len(_CHECKSUM),
        len(payload),
        -1,
        0,
        _BYTES_PER_CHECKSUM,
        _HEADER.size + len(stored),
    )
    block = header + stored + _CHECKSUM
    out += block
    return (len(block),)


def _gzip(payload: bytes) -> bytes:
    # Level 6 is Java's default Deflater level; with it the bytes equal Hudi's.
    deflater = zlib.compressobj(6, zlib.DEFLATED, -15)
    raw = deflater.compress(payload) + deflater.flush()
    return _GZIP_HEADER + raw + struct.pack("<II", zlib.crc32(payload), len(payload) & 0xFFFFFFFF)


def _root_index(entries: Sequence[tuple[int, int, bytes]], prefixed: bool) -> bytes:
    parts = []
    for offset, size, key in entries:
        stored = _short_prefixed(key) if prefixed else key
        parts.append(struct.pack(">qi", offset, size) + _vint(len(stored)) + stored)
    return b"".join(parts)


def _short_prefixed(row: bytes) -> bytes:
    return struct.pack(">h", len(row)) + row


def _file_info(entries: Mapping[str, bytes]) -> bytes:
    pairs = b"".join(
        _field(1, _field(1, name.encode()) + _field(2, value))
        for name, value in java_hash_order(entries)
    )
    return PROTOBUF_MAGIC + _varint(len(pairs)) + pairs


def java_hash_order(entries: Mapping[str, _V]) -> list[tuple[str, _V]]:
    """``entries`` in the order a ``java.util.HashMap<String, byte[]>`` filled in this
    order iterates them: by bucket, then insertion order within a bucket."""
    capacity = 16
    while len(entries) > capacity * 3 // 4:
        capacity *= 2
    order = {name: n for n, name in enumerate(entries)}

    def bucket(name: str) -> tuple[int, int]:
        h = _java_string_hash(name)
        return ((h ^ (h >> 16)) & (capacity - 1), order[name])

    return [(name, entries[name]) for name in sorted(entries, key=bucket)]


def _java_string_hash(text: str) -> int:
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i : i + 2], "big")) & 0xFFFFFFFF
    return h


def _proto(fields: Sequence[tuple[int, int | bytes]]) -> bytes:
    out = bytearray()
    for number, value in fields:
        if isinstance(value, int):
            out += _varint(number << 3) + _varint(value)
        else:
            out += _field(number, value)
    return bytes(out)


def _field(number: int, value: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(value)) + value


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _vint(value: int) -> bytes:
    """A Hadoop ``WritableUtils`` variable-length int (non-negative values)."""
    if value <= 127:
        return bytes([value])
    size = (value.bit_length() + 7) // 8
    return bytes([256 - 112 - size]) + value.to_bytes(size, "big")
