"""HFile version 3 reading: the base-file format of Hudi's metadata table.

Hudi writes metadata-table base files (and the content of log HFile data blocks) as HBase
HFiles, version 3 — through HBase's writer in 0.x and through its own writer in hudi-io in
1.x; both produce the same layout:

- a fixed 4096-byte trailer at the end: magic ``TRABLK"$``, a length-delimited protobuf
  (``TrailerProto``: load-on-open offset, entry count, compression codec, ...), zero padding,
  and the version as a big-endian int (``minor << 24 | major``) in the last four bytes;
- blocks, each with a 33-byte header: 8-byte magic, on-disk size without header (int32),
  uncompressed size without header (int32), previous block offset (int64), checksum type
  (byte), bytes per checksum (int32), on-disk data size with header (int32). The payload is
  the ``[33, on-disk data size with header)`` range, compressed with the file's codec; the
  checksums follow it and are not verified here;
- data blocks (``DATABLK*``) come first, from ``first_data_block_offset``; meta blocks
  (bloom filters), the root indexes and the file-info block (``FILEINF2``: ``PBUF`` plus a
  length-delimited ``FileInfoProto`` of key/value byte pairs — Hudi keeps the Avro schema
  there under ``schema``) follow at and after the load-on-open offset.

A data block's payload is a run of cells: key length (int32), value length (int32), key, value,
then tags (int16 length plus bytes, only when the file info has ``MAX_TAGS_LEN``) and the
MVCC timestamp (a Hadoop variable-length long, only when ``KEY_VALUE_VERSION`` is 1). The key
is row length (int16), row, family length (byte), family, qualifier, timestamp (int64) and
type (byte); Hudi keys cells by the row alone.

Codecs: NONE and GZ (the one Hudi uses by default, and the only one in metadata tables we
have seen). Others raise ``UnsupportedFeatureError`` naming the codec and the file.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from lakecore.errors import CorruptTableError, UnsupportedFeatureError

__all__ = [
    "HFileTrailer",
    "parse_trailer",
    "read_file_info",
    "read_hfile",
    "read_trailer",
]

TRAILER_SIZE = 4096
TRAILER_MAGIC = b'TRABLK"$'
DATA_MAGIC = b"DATABLK*"
ENCODED_DATA_MAGIC = b"DATABLKE"
FILE_INFO_MAGIC = b"FILEINF2"
PROTOBUF_MAGIC = b"PBUF"
HEADER_SIZE = 33
# Every block kind HBase and hudi-io write; anything else means the offsets are off.
_BLOCK_MAGICS = frozenset(
    {
        DATA_MAGIC,
        ENCODED_DATA_MAGIC,
        FILE_INFO_MAGIC,
        b"METABLKc",
        b"IDXLEAF2",
        b"IDXINTE2",
        b"IDXROOT2",
        b"BLMFBLK2",
        b"BLMFMET2",
        b"DFBLMET2",
    }
)

# Compression.Algorithm ordinals as HBase (and hudi-io's HFileCompressionCodec) number them.
_CODECS = ("LZO", "GZ", "NONE", "SNAPPY", "LZ4", "BZIP2", "ZSTD")
_SUPPORTED_CODECS = ("NONE", "GZ")

_HEADER = struct.Struct(">8siiqBii")
_INT = struct.Struct(">i")
_CELL_LENGTHS = struct.Struct(">ii")
_SHORT = struct.Struct(">h")


@dataclass(frozen=True, slots=True)
class HFileTrailer:
    """The fields of an HFile trailer this reader uses (offsets are from the file start)."""

    major_version: int
    minor_version: int
    file_info_offset: int
    load_on_open_offset: int
    entry_count: int | None
    """Cells in the file; None when the writer left the field out."""
    first_data_block_offset: int
    """-1 when the file holds no data blocks (an empty file)."""
    codec: str
    """``NONE``, ``GZ``, ... (HBase's names)."""


def read_trailer(data: bytes, path: str) -> HFileTrailer:
    """Parse the trailer at the end of ``data``, the whole content of HFile ``path``.

    Raises:
        CorruptTableError: ``data`` is too short, has no trailer magic or an unreadable
            trailer; the message names ``path``.
        UnsupportedFeatureError: the file is a valid HFile of another major version.
    """
    if len(data) < TRAILER_SIZE:
        raise CorruptTableError(
            f"HFile {path} is truncated: {len(data)} bytes, shorter than its {TRAILER_SIZE}-byte "
            "trailer"
        )
    return parse_trailer(data[-TRAILER_SIZE:], len(data), path)[0]


def parse_trailer(
    tail: bytes, size: int, path: str
) -> tuple[HFileTrailer, list[tuple[int, int | bytes]]]:
    """Parse ``tail``, the last ``TRAILER_SIZE`` bytes of HFile ``path`` (``size`` bytes long).

    Returns the trailer and all its protobuf fields (the range reader needs the data index
    entry count and levels, which ``HFileTrailer`` leaves out).

    Raises:
        CorruptTableError: no trailer magic, an unreadable trailer or offsets outside the
            file; the message names ``path``.
        UnsupportedFeatureError: the file is a valid HFile of another major version.
    """
    raw_version = _INT.unpack_from(tail, len(tail) - 4)[0]
    major, minor = raw_version & 0x00FFFFFF, (raw_version >> 24) & 0xFF
    start = size - TRAILER_SIZE
    if tail[:8] != TRAILER_MAGIC:
        raise CorruptTableError(f"HFile {path} has no trailer magic (truncated or not an HFile)")
    if major == 2:
        raise UnsupportedFeatureError(
            "hfile-v2", f"HFile {path} is version 2; lakecore reads HFile version 3 only"
        )
    if major != 3:
        raise CorruptTableError(f"HFile {path} has an unknown version {major}.{minor}")
    try:
        length, pos = _varint(tail, 8)
        fields = _proto_fields(tail[pos : pos + length], path)
    except IndexError as exc:
        raise CorruptTableError(f"HFile {path} has an unreadable trailer") from exc
    if pos + length > len(tail) - 4:
        raise CorruptTableError(f"HFile {path} has an unreadable trailer")
    codec_id = _int_field(fields, 12)
    codec_id = 2 if codec_id is None else codec_id  # absent: NONE
    if not 0 <= codec_id < len(_CODECS):
        raise CorruptTableError(f"HFile {path} names unknown compression codec {codec_id}")
    trailer = HFileTrailer(
        major_version=major,
        minor_version=minor,
        file_info_offset=_int_field(fields, 1) or 0,
        load_on_open_offset=_int_field(fields, 2) or 0,
        entry_count=_int_field(fields, 7),
        first_data_block_offset=_signed(_int_field(fields, 9) or 0),
        codec=_CODECS[codec_id],
    )
    if not -1 <= trailer.first_data_block_offset <= trailer.load_on_open_offset <= start:
        raise CorruptTableError(f"HFile {path} has block offsets outside the file")
    if not trailer.load_on_open_offset <= trailer.file_info_offset < start:
        raise CorruptTableError(f"HFile {path} has a file-info offset outside the file")
    return trailer, fields


def read_file_info(data: bytes, path: str) -> dict[bytes, bytes]:
    """The file-info map of HFile ``path`` (``data``: its whole content).

    Hudi stores the Avro writer schema under ``b"schema"``; HBase keeps its own keys
    (``KEY_VALUE_VERSION``, ``MAX_MEMSTORE_TS_KEY``, ``hfile.LASTKEY``, ...).

    Raises:
        CorruptTableError: the trailer or the file-info block is unreadable (names ``path``).
        UnsupportedFeatureError: unsupported HFile version or compression codec.
    """
    return _file_info(data, path, read_trailer(data, path))


def read_hfile(data: bytes, path: str) -> list[tuple[bytes, bytes]]:
    """Every cell of HFile ``path`` as ``(row key, value)``, in file (= key) order.

    ``data`` is the file's whole content (a metadata-table base file, or the content of a log
    file's HFile data block). The count of cells read must equal the trailer's entry count.

    Raises:
        CorruptTableError: truncated data, a bad magic, a block or cell running past its end,
            or a cell count that disagrees with the trailer; the message names ``path``.
        UnsupportedFeatureError: unsupported HFile version, compression codec or data block
            encoding.
    """
    trailer = read_trailer(data, path)
    info = _file_info(data, path, trailer)
    with_tags = b"MAX_TAGS_LEN" in info
    with_mvcc = _info_int(info, b"KEY_VALUE_VERSION", path) == 1
    cells: list[tuple[bytes, bytes]] = []
    offset = trailer.first_data_block_offset
    if offset < 0:  # an empty file: the writer stores -1
        offset = trailer.load_on_open_offset
    # Data blocks precede everything else; meta blocks (bloom filters) and leaf index blocks
    # may sit between them and the load-on-open section and are skipped.
    while offset < trailer.load_on_open_offset:
        magic, payload, offset = _read_block(data, offset, path, trailer.codec)
        if magic == DATA_MAGIC:
            _read_cells(payload, path, with_tags, with_mvcc, cells)
        elif magic == ENCODED_DATA_MAGIC:
            raise UnsupportedFeatureError(
                "hfile-data-block-encoding",
                f"HFile {path} uses a data block encoding; lakecore reads unencoded blocks only",
            )
    if trailer.entry_count is not None and trailer.entry_count != len(cells):
        raise CorruptTableError(
            f"HFile {path} holds {len(cells)} cells but its trailer says {trailer.entry_count}"
        )
    return cells


def _file_info(data: bytes, path: str, trailer: HFileTrailer) -> dict[bytes, bytes]:
    magic, payload, _ = _read_block(data, trailer.file_info_offset, path, trailer.codec)
    if magic != FILE_INFO_MAGIC or payload[:4] != PROTOBUF_MAGIC:
        raise CorruptTableError(f"HFile {path} has no file-info block where its trailer says")
    info: dict[bytes, bytes] = {}
    try:
        length, pos = _varint(payload, 4)
        for number, entry in _proto_fields(payload[pos : pos + length], path):
            if number == 1 and isinstance(entry, bytes):  # BytesBytesPair map_entry
                pair = dict(_proto_fields(entry, path))
                first, second = pair.get(1, b""), pair.get(2, b"")
                if isinstance(first, bytes) and isinstance(second, bytes):
                    info[first] = second
    except IndexError as exc:
        raise CorruptTableError(f"HFile {path} has an unreadable file-info block") from exc
    return info


def _info_int(info: dict[bytes, bytes], key: bytes, path: str) -> int | None:
    raw = info.get(key)
    if raw is None:
        return None
    if len(raw) != 4:
        raise CorruptTableError(f"HFile {path} file info {key.decode()} is not a 4-byte int")
    return int(_INT.unpack(raw)[0])


def _read_block(data: bytes, offset: int, path: str, codec: str) -> tuple[bytes, bytes, int]:
    """Return (magic, uncompressed payload, offset of the next block) of the block at offset."""
    if offset < 0 or offset + HEADER_SIZE > len(data):
        raise CorruptTableError(f"HFile {path} is truncated: block header at {offset}")
    magic, on_disk, uncompressed, _, _, _, data_with_header = _HEADER.unpack_from(data, offset)
    end = offset + HEADER_SIZE + on_disk
    if (
        magic not in _BLOCK_MAGICS
        or on_disk < 0
        or uncompressed < 0
        or end > len(data)
        or not HEADER_SIZE <= data_with_header <= HEADER_SIZE + on_disk
    ):
        raise CorruptTableError(f"HFile {path} has a bad block header at offset {offset}")
    stored = data[offset + HEADER_SIZE : offset + data_with_header]
    payload = _decompress(stored, codec, path, offset)
    if len(payload) != uncompressed:
        raise CorruptTableError(
            f"HFile {path}: block at offset {offset} holds {len(payload)} bytes, header says "
            f"{uncompressed}"
        )
    return magic, payload, end


def _decompress(stored: bytes, codec: str, path: str, offset: int) -> bytes:
    if codec == "NONE":
        return stored
    if codec not in _SUPPORTED_CODECS:
        raise UnsupportedFeatureError(
            f"hfile-compression-{codec.lower()}",
            f"HFile {path} is compressed with {codec}; lakecore reads NONE and GZ HFiles",
        )
    out = []
    rest = stored
    try:
        # Hadoop's gzip streams may hold several members back to back.
        while rest:
            inflater = zlib.decompressobj(wbits=31)
            out.append(inflater.decompress(rest))
            if not inflater.eof:
                raise CorruptTableError(f"HFile {path}: gzip block at {offset} is truncated")
            rest = inflater.unused_data
    except zlib.error as exc:
        raise CorruptTableError(f"HFile {path}: gzip block at {offset} is corrupt") from exc
    return b"".join(out)


def _read_cells(
    payload: bytes,
    path: str,
    with_tags: bool,
    with_mvcc: bool,
    out: list[tuple[bytes, bytes]],
) -> None:
    pos, end = 0, len(payload)
    try:
        while pos < end:
            key_length, value_length = _CELL_LENGTHS.unpack_from(payload, pos)
            key_start = pos + 8
            value_start = key_start + key_length
            pos = value_start + value_length
            row_length = _SHORT.unpack_from(payload, key_start)[0]
            if key_length < 2 + row_length or value_length < 0 or row_length < 0 or pos > end:
                raise CorruptTableError(f"HFile {path} has a cell running past its block")
            row = payload[key_start + 2 : key_start + 2 + row_length]
            out.append((row, payload[value_start:pos]))
            if with_tags:
                pos += 2 + _SHORT.unpack_from(payload, pos)[0]
            if with_mvcc:
                pos += _vlong_size(payload[pos])
    except (struct.error, IndexError) as exc:
        raise CorruptTableError(f"HFile {path} has a cell running past its block") from exc
    if pos != end:
        raise CorruptTableError(f"HFile {path} has a cell running past its block")


def _vlong_size(first: int) -> int:
    """Bytes taken by a Hadoop ``WritableUtils`` variable-length long starting with ``first``."""
    signed = first - 256 if first > 127 else first
    if signed >= -112:
        return 1
    return (-119 - signed) if signed < -120 else (-111 - signed)


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Decode a protobuf varint at ``pos``; return (value, position after it)."""
    result = shift = 0
    while True:
        byte = buf[pos]  # IndexError past the end: callers turn it into CorruptTableError
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise IndexError("varint too long")


def _proto_fields(buf: bytes, path: str) -> list[tuple[int, int | bytes]]:
    """Decode a protobuf message into (field number, value) pairs (varints and byte fields)."""
    fields: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(buf):
        tag, pos = _varint(buf, pos)
        number, wire = tag >> 3, tag & 7
        value: int | bytes
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 2:
            length, pos = _varint(buf, pos)
            value = buf[pos : pos + length]
            pos += length
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value = int.from_bytes(buf[pos : pos + size], "little")
            pos += size
        else:
            raise CorruptTableError(f"HFile {path} has a protobuf field of wire type {wire}")
        if pos > len(buf):
            raise IndexError("field past the end")
        fields.append((number, value))
    return fields


def _signed(value: int) -> int:
    """A protobuf uint64 read back as the Java long it was written from."""
    return value - (1 << 64) if value >= 1 << 63 else value


def _int_field(fields: list[tuple[int, int | bytes]], number: int) -> int | None:
    """The last value of varint field ``number`` (protobuf: the last one wins); None if absent."""
    found = None
    for n, value in fields:
        if n == number and isinstance(value, int):
            found = value
    return found
