"""Hudi log file framing: splitting a log file into blocks, and writing one block.

Every block (log format version 1, the only version Hudi has written since 0.x) is laid out
big-endian as::

    magic               6 bytes   b"#HUDI#"
    block length        int64     bytes after this field up to and including the trailer
    format version      int32     1
    block type          int32     ordinal of HoodieLogBlockType (COMMAND=0 ... CDC=6)
    header              map       int32 count, then per entry int32 key ordinal,
                                  int32 byte length, UTF-8 value
    content length      int64
    content             bytes
    footer              map       same encoding as the header (Hudi writes it empty)
    trailer             int64     bytes from the magic up to (not including) the trailer

so ``trailer == block length + 6`` and a block occupies ``14 + block length`` bytes.
(The old written spec numbers block types and header keys from 1; the files use the Java
enum ordinals, which start at 0 - verified on the corpus: Avro data blocks carry type 3.)
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field

from lakecore.errors import CorruptTableError, UnsupportedFeatureError

__all__ = [
    "MAGIC",
    "LOG_FORMAT_VERSION",
    "BlockType",
    "CommandType",
    "HeaderKey",
    "LogBlock",
    "encode_log_block",
    "read_log_blocks",
]

MAGIC = b"#HUDI#"
LOG_FORMAT_VERSION = 1

_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_I32_PAIR = struct.Struct(">ii")
# magic + block length + format version + block type
_PREAMBLE = len(MAGIC) + 8 + 4 + 4


class BlockType(enum.IntEnum):
    """HoodieLogBlockType, serialized as its ordinal."""

    COMMAND = 0
    DELETE = 1
    CORRUPT = 2
    AVRO_DATA = 3
    HFILE_DATA = 4
    PARQUET_DATA = 5
    CDC = 6


class HeaderKey(enum.IntEnum):
    """HoodieLogBlock.HeaderMetadataType, serialized as its ordinal."""

    INSTANT_TIME = 0
    TARGET_INSTANT_TIME = 1
    SCHEMA = 2
    COMMAND_BLOCK_TYPE = 3
    COMPACTED_BLOCK_TIMES = 4
    RECORD_POSITIONS = 5
    BLOCK_IDENTIFIER = 6
    IS_PARTIAL = 7
    BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS = 8


_HEADER_KEYS = frozenset(int(k) for k in HeaderKey)
_HEADER_KEY_OF = {int(k): k for k in HeaderKey}


class CommandType(enum.IntEnum):
    """HoodieCommandBlockTypeEnum; the COMMAND_BLOCK_TYPE header holds its ordinal as text."""

    ROLLBACK = 0


@dataclass(frozen=True, slots=True)
class LogBlock:
    """One block of a log file.

    ``content`` is a zero-copy view into the file's bytes for read blocks. A CORRUPT block is
    only produced by ``read_log_blocks(..., skip_corrupt=True)``; its content is the skipped
    bytes and its header is empty.
    """

    block_type: BlockType
    format_version: int
    header: Mapping[HeaderKey, str]
    content: bytes | memoryview
    footer: Mapping[HeaderKey, str] = field(default_factory=dict)
    offset: int = 0
    path: str = ""

    @property
    def instant_time(self) -> str | None:
        """The INSTANT_TIME header: the instant of the commit that wrote the block."""
        return self.header.get(HeaderKey.INSTANT_TIME)

    @property
    def target_instant_time(self) -> str | None:
        """The TARGET_INSTANT_TIME header: the instant a command block acts on."""
        return self.header.get(HeaderKey.TARGET_INSTANT_TIME)

    @property
    def schema(self) -> str | None:
        """The SCHEMA header: the Avro writer schema (JSON) of a data or delete block."""
        return self.header.get(HeaderKey.SCHEMA)

    @property
    def command_block_type(self) -> CommandType | None:
        """The COMMAND_BLOCK_TYPE header as an enum; None when absent.

        Raises:
            CorruptTableError: the header holds something other than a known ordinal.
        """
        raw = self.header.get(HeaderKey.COMMAND_BLOCK_TYPE)
        if raw is None:
            return None
        try:
            return CommandType(int(raw))
        except ValueError:
            raise CorruptTableError(
                f"{self.path}: block at byte {self.offset} has unknown command block type {raw!r}"
            ) from None


class _Cursor:
    """Bounds-checked big-endian reads inside one block; overruns raise CorruptTableError."""

    __slots__ = ("block_offset", "data", "end", "path", "pos")

    def __init__(self, data: memoryview, pos: int, end: int, path: str, block_offset: int):
        self.data = data
        self.pos = pos
        self.end = end
        self.path = path
        self.block_offset = block_offset

    def fail(self, what: str) -> CorruptTableError:
        return CorruptTableError(
            f"{self.path}: corrupt log block at byte {self.block_offset}: {what} "
            f"(at byte {self.pos}); the log file is damaged or was truncated by a failed write"
        )

    def take(self, n: int, what: str) -> memoryview:
        if n < 0 or self.pos + n > self.end:
            raise self.fail(f"{what} of {n} bytes runs past the end of the block")
        view = self.data[self.pos : self.pos + n]
        self.pos += n
        return view

    def i32(self, what: str) -> int:
        value: int = _I32.unpack(self.take(4, what))[0]
        return value

    def i64(self, what: str) -> int:
        value: int = _I64.unpack(self.take(8, what))[0]
        return value

    def metadata(self, what: str) -> dict[HeaderKey, str]:
        start = self.pos
        fast = self._metadata_fast()
        if fast is not None:
            return fast
        self.pos = start  # something is off: the checked path names it
        return self._metadata_checked(what)

    def _metadata_fast(self) -> dict[HeaderKey, str] | None:
        """The header/footer map, or None (cursor left anywhere) if anything is unusual."""
        data, pos, end = self.data, self.pos, self.end
        if pos + 4 > end:
            return None
        (count,) = _I32.unpack_from(data, pos)
        pos += 4
        out: dict[HeaderKey, str] = {}
        for _ in range(count):  # a negative count makes no entries here, then the check fails
            if pos + 8 > end:
                return None
            key, size = _I32_PAIR.unpack_from(data, pos)
            pos += 8
            if size < 0 or pos + size > end or key not in _HEADER_KEY_OF:
                return None
            try:
                out[_HEADER_KEY_OF[key]] = str(data[pos : pos + size], "utf-8")
            except UnicodeDecodeError:
                return None
            pos += size
        if count < 0:
            return None
        self.pos = pos
        return out

    def _metadata_checked(self, what: str) -> dict[HeaderKey, str]:
        count = self.i32(f"{what} entry count")
        if count < 0:
            raise self.fail(f"negative {what} entry count {count}")
        out: dict[HeaderKey, str] = {}
        for _ in range(count):
            key = self.i32(f"{what} key")
            size = self.i32(f"{what} value length")
            raw = self.take(size, f"{what} value")
            if key not in _HEADER_KEYS:
                # Newer Hudi versions append keys; guessing their meaning could change which
                # records survive, so refuse clearly instead of dropping them.
                raise UnsupportedFeatureError(
                    f"hudi log header key {key}",
                    f"{self.path}: log block at byte {self.block_offset} uses {what} key "
                    f"{key}, written by a newer Hudi than lakecore understands",
                )
            try:
                out[HeaderKey(key)] = bytes(raw).decode("utf-8")
            except UnicodeDecodeError:
                raise self.fail(f"{what} value for key {key} is not UTF-8") from None
        return out


def _read_block(data: memoryview, offset: int, path: str) -> tuple[LogBlock, int]:
    """Decode the block starting at ``offset``; return it and the offset after it."""
    size = len(data)
    cur = _Cursor(data, offset, size, path, offset)
    if bytes(cur.take(len(MAGIC), "magic")) != MAGIC:
        raise cur.fail("bad magic (expected b'#HUDI#')")
    block_length = cur.i64("block length")
    end = cur.pos + block_length
    if block_length < 4 + 4 + 4 + 8 + 4 + 8 or end > size:
        raise cur.fail(f"block length {block_length} runs past the end of the file ({size} bytes)")
    # Check the trailer first, as Hudi does: a torn block followed by another block has a
    # plausible length but a wrong trailer, and its insides must not be parsed as a block.
    (trailer,) = _I64.unpack_from(data, end - 8)
    if trailer != block_length + len(MAGIC):
        raise cur.fail(
            f"trailing total block length {trailer} disagrees with block length "
            f"{block_length} (expected {block_length + len(MAGIC)})"
        )
    cur.end = end - 8
    version = cur.i32("format version")
    if version != LOG_FORMAT_VERSION:
        raise UnsupportedFeatureError(
            f"hudi log format version {version}",
            f"{path}: log block at byte {offset} has log format version {version}; "
            f"lakecore reads version {LOG_FORMAT_VERSION} only",
        )
    raw_type = cur.i32("block type")
    try:
        block_type = BlockType(raw_type)
    except ValueError:
        raise cur.fail(f"unknown block type {raw_type}") from None
    header = cur.metadata("header")
    content = cur.take(cur.i64("content length"), "content")
    footer = cur.metadata("footer")
    if cur.pos != end - 8:
        raise cur.fail(f"block length {block_length} leaves {end - 8 - cur.pos} unread bytes")
    return LogBlock(block_type, version, header, content, footer, offset, path), end


def read_log_blocks(
    data: bytes | memoryview, path: str, *, skip_corrupt: bool = False
) -> list[LogBlock]:
    """Split the bytes of log file ``path`` into its blocks, in file order.

    Block contents are views into ``data`` (no copy); keep ``data`` alive while using them.

    Args:
        data: The whole log file.
        path: The file's path, used in error messages and recorded on each block.
        skip_corrupt: Instead of raising, return each damaged region as a CORRUPT block and
            resume at the next magic, as Hudi's own reader does for a torn append.

    Raises:
        CorruptTableError: (unless ``skip_corrupt``) bad magic, a length running past the end
            of the file or block, or a trailing total block length that disagrees with the
            block length; the message names ``path`` and the block's byte offset.
        UnsupportedFeatureError: a block uses a log format version or header key newer than
            lakecore understands.
    """
    view = memoryview(data).cast("B") if not isinstance(data, memoryview) else data.cast("B")
    blocks: list[LogBlock] = []
    offset = 0
    while offset < len(view):
        try:
            block, offset = _read_block(view, offset, path)
        except CorruptTableError:
            if not skip_corrupt:
                raise
            block, offset = _corrupt_region(view, offset, path)
        blocks.append(block)
    return blocks


def _corrupt_region(view: memoryview, offset: int, path: str) -> tuple[LogBlock, int]:
    """Return the bytes from ``offset`` to the next magic (or EOF) as a CORRUPT block."""
    found = bytes(view).find(MAGIC, offset + 1)
    end = len(view) if found < 0 else found
    return LogBlock(BlockType.CORRUPT, 0, {}, view[offset:end], {}, offset, path), end


def _encode_metadata(entries: Mapping[HeaderKey, str] | None) -> bytes:
    parts = [_I32.pack(len(entries or {}))]
    for key, value in (entries or {}).items():
        raw = value.encode("utf-8")
        parts += [_I32.pack(int(key)), _I32.pack(len(raw)), raw]
    return b"".join(parts)


def encode_log_block(
    block_type: BlockType,
    header: Mapping[HeaderKey, str],
    content: bytes,
    footer: Mapping[HeaderKey, str] | None = None,
) -> bytes:
    """Return one framed block (log format version 1) ready to append to a log file.

    Raises:
        ValueError: ``block_type`` is CORRUPT (a reader-side marker Hudi never writes).
    """
    if block_type == BlockType.CORRUPT:
        raise ValueError("CORRUPT blocks are never written")
    header_bytes = _encode_metadata(header)
    footer_bytes = _encode_metadata(footer)
    # Everything after the block-length field: version, type, header, content length,
    # content, footer, trailer.
    block_length = 4 + 4 + len(header_bytes) + 8 + len(content) + len(footer_bytes) + 8
    return b"".join(
        [
            MAGIC,
            _I64.pack(block_length),
            _I32.pack(LOG_FORMAT_VERSION),
            _I32.pack(int(block_type)),
            header_bytes,
            _I64.pack(len(content)),
            content,
            footer_bytes,
            _I64.pack(block_length + len(MAGIC)),
        ]
    )
