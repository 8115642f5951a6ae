"""The structure of a legacy (v0.1) Lance data file: footer, metadata, page table.

Layout, from the end of the file backwards::

    ... pages ... | page table | statistics | dictionaries | schema | Metadata | footer
    footer (16 bytes) = u64 metadata position | u16 major | u16 minor | b"LANC"

The ``Metadata`` message (protos/file.proto, ``lance.file.Metadata``) sits at the footer's
position as a little-endian u32 length and the protobuf bytes. It gives the batch offsets
(``[0, n0, n0+n1, ...]``: the file's rows are split into batches, "row groups") and the page
table position. The page table is an int64 array of ``(position, length)`` pairs, one per field
id in ``[min_field_id, max_field_id]`` (the data file's field ids in the manifest) and per batch,
field-major: entry ``(field - min_field_id) * num_batches + batch``. Missing pages (structs, ids
not in the file) are ``(0, 0)``. ``length`` counts items, not bytes (see ``decode.py``).
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import DecodeError

from lakecore.errors import CorruptTableError
from lakecore.storage import Storage
from lakecore_lance.proto import file_pb2, table_pb2

MAGIC = b"LANC"
FOOTER_SIZE = 16
# Versions the legacy writer stamps: 0.1 (the corpus files of Lance 0.7 and 0.10) and 0.2
# (Lance 0.15 and pylance 14 with data_storage_version="legacy"); 0.3 is the 2.0 format.
LEGACY_VERSIONS = frozenset({(0, 1), (0, 2)})
# The first read takes this much of the file's tail: it usually holds the metadata, the page
# table and the schema of a small file, so one request opens the file.
TAIL_BLOCK = 64 * 1024


class FileBytes:
    """Ranged, bounds-checked reads of one data file, with its tail cached.

    Every range is checked against the file size before it is read, so a corrupt offset or
    length raises ``CorruptTableError`` naming the file instead of reading garbage or
    allocating an absurd buffer.
    """

    def __init__(self, storage: Storage, path: str) -> None:
        self.storage = storage
        self.path = path
        self.size = storage.head(path).size
        tail_start = max(0, self.size - TAIL_BLOCK)
        self._tail_start = tail_start
        self._tail = storage.read(path, tail_start, self.size)
        if len(self._tail) != self.size - tail_start:
            raise self.corrupt("the file changed size while being read")

    def corrupt(self, what: str) -> CorruptTableError:
        """A ``CorruptTableError`` naming this file."""
        return CorruptTableError(f"legacy lance data file {self.path}: {what}")

    def read(self, start: int, end: int, what: str) -> bytes:
        """Return bytes ``[start, end)``; raises ``CorruptTableError`` if outside the file."""
        if start < 0 or end < start or end > self.size:
            raise self.corrupt(f"{what} at bytes [{start}, {end}) is outside the file")
        if start >= self._tail_start:
            lo = start - self._tail_start
            return self._tail[lo : lo + (end - start)]
        data = self.storage.read(self.path, start, end)
        if len(data) != end - start:
            raise self.corrupt(f"{what}: short read at bytes [{start}, {end})")
        return data


@dataclass(frozen=True, slots=True)
class FileLayout:
    """What the footer, metadata and page table of one legacy file say."""

    version: tuple[int, int]
    batch_offsets: tuple[int, ...]
    manifest_position: int
    # (field id, batch) -> (position, length); absent when the page table entry is (0, 0).
    pages: dict[tuple[int, int], tuple[int, int]]

    @property
    def num_batches(self) -> int:
        """How many batches (row groups) the file has."""
        return max(0, len(self.batch_offsets) - 1)

    def batch_length(self, batch: int) -> int:
        """Rows in batch ``batch``."""
        return self.batch_offsets[batch + 1] - self.batch_offsets[batch]


def read_layout(data: FileBytes, extent: tuple[int, int] | None) -> FileLayout:
    """Read the footer, metadata and the page table covering field ids ``extent`` (min, max).

    ``extent=None`` takes the extent from the schema the file embeds (the writer's field ids),
    for callers that do not know the file's field ids or whose ids are tombstoned.

    Raises:
        CorruptTableError: bad magic, a version that is not legacy, an undecodable metadata
            message, batch offsets that are not a non-decreasing sequence from 0, or a page
            table / page outside the file.
    """
    (major, minor), metadata = read_metadata(data)
    offsets = tuple(metadata.batch_offsets)
    if extent is None:
        ids = [f.id for f in embedded_fields(data, metadata.manifest_position)]
        if not ids:
            raise data.corrupt("the embedded schema has no fields")
        extent = (min(ids), max(ids))
    num_batches = max(0, len(offsets) - 1)
    pages = read_page_table(data, metadata.page_table_position, *extent, num_batches)
    return FileLayout(
        version=(major, minor),
        batch_offsets=offsets,
        manifest_position=metadata.manifest_position,
        pages=pages,
    )


def embedded_fields(data: FileBytes, manifest_position: int) -> Sequence[Any]:
    """The ``Field`` messages of the schema the legacy writer embeds in each data file.

    Raises:
        CorruptTableError: the file embeds none, or it does not decode.
    """
    if manifest_position == 0:
        raise data.corrupt("the file embeds no schema")
    manifest = table_pb2.Manifest()
    try:
        manifest.ParseFromString(read_message(data, manifest_position, "embedded schema"))
    except DecodeError as exc:
        raise data.corrupt(f"embedded schema does not decode: {exc}") from exc
    return list(manifest.fields)


def read_metadata(data: FileBytes) -> tuple[tuple[int, int], file_pb2.Metadata]:
    """The footer's (major, minor) version and the ``Metadata`` message, validated.

    Raises:
        CorruptTableError: as :func:`read_layout`.
    """
    if data.size < FOOTER_SIZE:
        raise data.corrupt(f"{data.size} bytes is too short for the 16-byte footer")
    footer = data.read(data.size - FOOTER_SIZE, data.size, "footer")
    meta_pos, major, minor, magic = struct.unpack("<QHH4s", footer)
    if magic != MAGIC:
        raise data.corrupt(f"bad magic {magic!r} (expected {MAGIC!r})")
    if (major, minor) not in LEGACY_VERSIONS:
        raise data.corrupt(
            f"file version {major}.{minor} is not the legacy format (0.1/0.2); "
            "it must be read with the current-format reader"
        )
    metadata = _read_metadata(data, meta_pos)
    offsets = list(metadata.batch_offsets)
    if offsets and (offsets[0] != 0 or any(b < a for a, b in itertools.pairwise(offsets))):
        raise data.corrupt(f"batch offsets {offsets[:8]} are not non-decreasing from 0")
    return (major, minor), metadata


def read_message(data: FileBytes, position: int, what: str) -> bytes:
    """The protobuf bytes of a u32-length-prefixed message at ``position``."""
    (length,) = struct.unpack("<I", data.read(position, position + 4, f"{what} length"))
    return data.read(position + 4, position + 4 + length, what)


def _read_metadata(data: FileBytes, position: int) -> file_pb2.Metadata:
    if position > data.size - FOOTER_SIZE:
        raise data.corrupt(f"metadata position {position} is past the footer")
    raw = read_message(data, position, "metadata")
    metadata = file_pb2.Metadata()
    try:
        metadata.ParseFromString(raw)
    except DecodeError as exc:
        raise data.corrupt(f"metadata message does not decode: {exc}") from exc
    return metadata


def read_page_table(
    data: FileBytes, position: int, min_field_id: int, max_field_id: int, num_batches: int
) -> dict[tuple[int, int], tuple[int, int]]:
    """The page table at ``position``: (field id, batch) -> (position, item count).

    Raises:
        CorruptTableError: the table or an entry lies outside the file.
    """
    if num_batches == 0:
        return {}
    if max_field_id < min_field_id or min_field_id < 0:
        raise data.corrupt(f"bad field id range [{min_field_id}, {max_field_id}]")
    count = (max_field_id - min_field_id + 1) * num_batches
    raw = data.read(position, position + 16 * count, "page table")
    values = struct.unpack(f"<{2 * count}q", raw)
    pages: dict[tuple[int, int], tuple[int, int]] = {}
    for i in range(count):
        pos, length = values[2 * i], values[2 * i + 1]
        if pos == 0 and length == 0:
            continue
        if pos < 0 or length < 0 or pos > data.size:
            raise data.corrupt(f"page table entry {i} ({pos}, {length}) is outside the file")
        field_id = min_field_id + i // num_batches
        pages[(field_id, i % num_batches)] = (pos, length)
    return pages
