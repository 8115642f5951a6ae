"""Reading the cells of an HFile whose rows start with given prefixes, through its block index.

``mdt.hfile`` reads every data block. A metadata-table lookup needs the few keys of a small
key range (the ``column_stats`` records of one column in one partition are contiguous:
``ColumnIndexID + PartitionIndexID + FileIndexID``), so this reader fetches, through a
``read(start, end)`` callable (a ranged storage read, or a slice of bytes in memory):

1. the 4096-byte trailer (load-on-open offset, data index entry count and levels, codec);
2. the load-on-open section up to the trailer: the root data index (``IDXROOT2``: per data
   block its offset, on-disk size and first key, the key a Hadoop vint-prefixed byte string
   holding int16 row length + row, then, as HBase writes it, the rest of the cell key) and the
   file info;
3. only the data blocks that can hold a row starting with a prefix: block ``i`` holds the
   rows in ``[first_i, first_{i+1})``; contiguous blocks are fetched in one read.

A file whose data index has more than one level (HBase writes intermediate and leaf index
blocks for very large files; Hudi's own writer never does) is read whole with
``hfile.read_hfile`` and filtered.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import struct
from collections.abc import Callable, Sequence

from lakecore.errors import CorruptTableError, UnsupportedFeatureError
from lakecore_hudi.mdt.hfile import (
    DATA_MAGIC,
    ENCODED_DATA_MAGIC,
    TRAILER_SIZE,
    _file_info,
    _info_int,
    _int_field,
    _read_block,
    _read_cells,
    parse_trailer,
    read_hfile,
)

__all__ = ["Reader", "prefix_matcher", "read_prefixed_cells"]

Reader = Callable[[int, int], bytes]
"""``read(start, end)``: the bytes ``[start, end)`` of the file."""

_ROOT_INDEX_MAGIC = b"IDXROOT2"
_ENTRY = struct.Struct(">qi")
_SHORT = struct.Struct(">h")
_PAST = b"\xff"
"""Greater than every byte of a metadata-table key (Base64 and ASCII): ``prefix + _PAST``
bounds the rows starting with ``prefix``."""


def read_prefixed_cells(
    read: Reader, size: int, path: str, prefixes: Sequence[bytes]
) -> tuple[list[tuple[bytes, bytes]], dict[bytes, bytes]]:
    """The cells ``(row, value)`` of HFile ``path`` (``size`` bytes, read through ``read``)
    whose row starts with one of ``prefixes``, in row order, and the file-info map.

    Rows must be ASCII (metadata-table keys are): a prefix's rows are bounded by
    ``prefix + b"\\xff"``.

    Raises:
        CorruptTableError: a bad trailer, index, block or cell; the message names ``path``.
        UnsupportedFeatureError: an unsupported HFile version, codec or data block encoding.
    """
    if size < TRAILER_SIZE:
        raise CorruptTableError(
            f"HFile {path} is truncated: {size} bytes, shorter than its {TRAILER_SIZE}-byte trailer"
        )
    trailer, fields = parse_trailer(read(size - TRAILER_SIZE, size), size, path)
    count, levels = _int_field(fields, 5) or 0, _int_field(fields, 8) or 1
    if levels != 1:
        whole = read(0, size)
        return _keep(read_hfile(whole, path), prefixes), _file_info(whole, path, trailer)
    section = read(trailer.load_on_open_offset, size - TRAILER_SIZE)
    relative = dataclasses.replace(
        trailer, file_info_offset=trailer.file_info_offset - trailer.load_on_open_offset
    )
    info = _file_info(section, path, relative)
    with_tags = b"MAX_TAGS_LEN" in info
    with_mvcc = _info_int(info, b"KEY_VALUE_VERSION", path) == 1
    if trailer.first_data_block_offset < 0 or count == 0 or not prefixes:
        return [], info
    magic, payload, _ = _read_block(section, 0, path, trailer.codec)
    if magic != _ROOT_INDEX_MAGIC:
        raise CorruptTableError(f"HFile {path} has no root data index where its trailer says")
    index = _root_entries(payload, count, path)
    cells: list[tuple[bytes, bytes]] = []
    for start, end in _runs(_wanted(index, prefixes, trailer.load_on_open_offset, path)):
        chunk = read(start, end)
        offset = 0
        while offset < len(chunk):
            magic, payload, offset = _read_block(chunk, offset, path, trailer.codec)
            if magic == ENCODED_DATA_MAGIC:
                raise UnsupportedFeatureError(
                    "hfile-data-block-encoding",
                    f"HFile {path} uses a data block encoding; lakecore reads unencoded ones only",
                )
            if magic != DATA_MAGIC:
                raise CorruptTableError(f"HFile {path}: its data index points at a {magic!r} block")
            found: list[tuple[bytes, bytes]] = []
            _read_cells(payload, path, with_tags, with_mvcc, found)
            cells.extend(_keep(found, prefixes))
    return cells, info


def prefix_matcher(prefixes: Sequence[bytes]) -> Callable[[bytes], bool]:
    """Whether a row starts with one of ``prefixes``, in time independent of their number
    (a scan's prefixes are one per column and partition: thousands on a big table)."""
    by_length: dict[int, set[bytes]] = {}
    for prefix in prefixes:
        by_length.setdefault(len(prefix), set()).add(prefix)
    groups = sorted(by_length.items())

    def matches(row: bytes) -> bool:
        return any(row[:length] in wanted for length, wanted in groups)

    return matches


def _keep(
    cells: Sequence[tuple[bytes, bytes]], prefixes: Sequence[bytes]
) -> list[tuple[bytes, bytes]]:
    matches = prefix_matcher(prefixes)
    return [c for c in cells if matches(c[0])]


def _root_entries(payload: bytes, count: int, path: str) -> list[tuple[int, int, bytes]]:
    """(block offset, on-disk size, first row) of each entry of a root data index block."""
    out = []
    pos = 0
    try:
        for _ in range(count):
            offset, size = _ENTRY.unpack_from(payload, pos)
            length, pos = _vint(payload, pos + _ENTRY.size)
            key = payload[pos : pos + length]
            pos += length
            row_length = _SHORT.unpack_from(key, 0)[0]
            if length < 2 + row_length or row_length < 0 or pos > len(payload):
                raise CorruptTableError(f"HFile {path} has a data index entry running past its key")
            out.append((offset, size, key[2 : 2 + row_length]))
    except (struct.error, IndexError) as exc:
        raise CorruptTableError(f"HFile {path} has an unreadable root data index") from exc
    if any(b[2] <= a[2] for a, b in itertools.pairwise(out)):
        raise CorruptTableError(f"HFile {path} has a root data index out of key order")
    return out


def _vint(buf: bytes, pos: int) -> tuple[int, int]:
    """A Hadoop ``WritableUtils`` variable-length int at ``pos``: (value, position after)."""
    first = buf[pos] - 256 if buf[pos] > 127 else buf[pos]
    if first >= -112:
        return first, pos + 1
    size = (-119 - first) if first < -120 else (-111 - first)
    value = int.from_bytes(buf[pos + 1 : pos + size], "big")
    if pos + size > len(buf):
        raise IndexError("vint past the end")
    return (~value if first < -120 else value), pos + size


def _wanted(
    index: Sequence[tuple[int, int, bytes]], prefixes: Sequence[bytes], limit: int, path: str
) -> list[tuple[int, int]]:
    """(start, end) of the data blocks that may hold a row starting with a prefix.

    Block ``i`` holds the rows in ``[first_i, first_{i+1})``: the rows starting with ``p`` lie
    in ``[p, p + b"\\xff")``, so the blocks from the one holding ``p`` (the last whose first
    row is at most ``p``) to the last whose first row is below ``p + b"\\xff"``.
    """
    firsts = [first for _, _, first in index]
    chosen: set[int] = set()
    for prefix in prefixes:
        lo = max(bisect.bisect_right(firsts, prefix) - 1, 0)
        hi = bisect.bisect_left(firsts, prefix + _PAST)
        chosen.update(range(lo, hi))
    out = []
    for i in sorted(chosen):
        offset, size, _ = index[i]
        if not 0 <= offset < offset + size <= limit:
            raise CorruptTableError(f"HFile {path} has a data index entry outside its blocks")
        out.append((offset, offset + size))
    return out


def _runs(blocks: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Contiguous blocks merged into single reads."""
    out: list[tuple[int, int]] = []
    for start, end in blocks:
        if out and out[-1][1] == start:
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out
