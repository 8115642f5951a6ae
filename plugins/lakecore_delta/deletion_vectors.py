"""Delta Lake deletion vectors (DVs): descriptors, loading, and the files they are stored in.

Implements the "Deletion Vectors" section and the DV file part of the "Deletion Vector Format"
appendix of the Delta PROTOCOL.md. A DV is the set of row indexes (0-based positions in one
Parquet data file) that are logically deleted; its bitmap bytes (a ``RoaringBitmapArray``) are
encoded and decoded by ``lakecore_delta.dv_bitmap``.

A DV lives inline in the log (``storageType='i'``, Z85 text of the bitmap bytes) or in a DV file
(``'u'``: a UUID-named file under the table root, ``'p'``: an absolute path). A DV file is a
version byte (1) followed by one or more DVs, each stored big-endian as a 4-byte data size, the
bitmap bytes, and the CRC-32 of the bitmap bytes.

Loaded DVs are sorted, duplicate-free ``numpy.uint64`` arrays of deleted row indexes: cheap to
turn into a keep-mask (:func:`keep_mask`), to slice per row group with ``numpy.searchsorted``,
and to merge with ``numpy.union1d`` when a writer adds deletes.

This module does IO only through the ``Storage`` or read callable it is given.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from lakecore.errors import CorruptTableError
from lakecore.storage import Storage
from lakecore.storage.paths import contained_path
from lakecore_delta.dv_bitmap import (
    RowIndexes,
    as_row_indexes,
    deserialize_deletion_vector,
    serialize_deletion_vector,
)
from lakecore_delta.z85 import z85_decode, z85_encode

__all__ = [
    "DV_FILE_FORMAT_VERSION",
    "DeletionVectorDescriptor",
    "RangeReader",
    "encode_dv_file",
    "inline_descriptor",
    "keep_mask",
    "load_deletion_vector",
    "uuid_descriptor",
]

RangeReader = Callable[[str, int, int], bytes]
"""``read(path, start, end)``: the bytes of ``path`` in ``[start, end)``.

Must raise ``FileNotFoundError`` for a missing file; may return fewer bytes at the end of file.
"""

DV_FILE_FORMAT_VERSION: Final = 1
STORAGE_TYPES: Final = frozenset({"u", "i", "p"})
UUID_Z85_LENGTH: Final = 20
# A DV starting within this many bytes of the file start is fetched in the same request as the
# version byte; a DV further in costs a second 1-byte request for the version byte.
_VERSION_PREFETCH_LIMIT: Final = 64 * 1024


@dataclass(frozen=True, slots=True)
class DeletionVectorDescriptor:
    """The ``deletionVector`` struct of an ``add``/``remove`` action.

    Attributes:
        storage_type: ``'u'`` (UUID-named file relative to the table root), ``'i'`` (inline in
            the log) or ``'p'`` (file at an absolute path).
        path_or_inline_dv: ``'u'``: an optional random prefix followed by the 20-character Z85
            encoding of the file's UUID; ``'i'``: the Z85-encoded bitmap bytes; ``'p'``: the
            absolute path or URI of the file.
        offset: Byte position of this DV (its size field) in its file; ``None`` for inline DVs.
        size_in_bytes: Size of the serialized bitmap (before Z85 encoding, if inline).
        cardinality: Number of rows the DV deletes.

    Raises:
        CorruptTableError: on construction, if the storage type is not one of ``u``, ``i``,
            ``p`` or a size, offset or cardinality is negative.
    """

    storage_type: str
    path_or_inline_dv: str
    offset: int | None
    size_in_bytes: int
    cardinality: int

    def __post_init__(self) -> None:
        if not isinstance(self.path_or_inline_dv, str):
            raise CorruptTableError(
                f"deletion vector has pathOrInlineDv {self.path_or_inline_dv!r}, not a string"
            )
        for name in ("size_in_bytes", "cardinality", "offset"):
            value = getattr(self, name)
            if value is None and name == "offset":
                continue
            if not isinstance(value, int) or isinstance(value, bool):
                raise CorruptTableError(f"deletion vector has {name}={value!r}, not a number")
        if self.storage_type not in STORAGE_TYPES:
            raise CorruptTableError(
                f"deletion vector has unknown storageType {self.storage_type!r} "
                "(expected 'u', 'i' or 'p')"
            )
        for name in ("size_in_bytes", "cardinality", "offset"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise CorruptTableError(f"deletion vector {self.unique_id} has {name}={value}")

    @property
    def unique_id(self) -> str:
        """``<storageType><pathOrInlineDv>``, plus ``@<offset>`` when the offset is set."""
        base = f"{self.storage_type}{self.path_or_inline_dv}"
        return base if self.offset is None else f"{base}@{self.offset}"

    @property
    def is_inline(self) -> bool:
        """Whether the bitmap is stored in the log itself (``storageType='i'``)."""
        return self.storage_type == "i"

    @property
    def relative_path(self) -> str | None:
        """For ``'u'``: ``<prefix>/deletion_vector_<uuid>.bin`` (no ``<prefix>/`` if empty).

        ``None`` for ``'i'`` and ``'p'``.

        Raises:
            CorruptTableError: if ``pathOrInlineDv`` does not end in a Z85-encoded UUID, or
                its prefix leads outside the table (``../``).
        """
        if self.storage_type != "u":
            return None
        encoded = self.path_or_inline_dv
        if len(encoded) < UUID_Z85_LENGTH:
            raise CorruptTableError(
                f"deletion vector {self.unique_id}: pathOrInlineDv is shorter than a "
                f"{UUID_Z85_LENGTH}-character Z85 UUID"
            )
        prefix, uuid_text = encoded[:-UUID_Z85_LENGTH], encoded[-UUID_Z85_LENGTH:]
        try:
            file_uuid = uuid.UUID(bytes=z85_decode(uuid_text))
        except ValueError as exc:
            raise CorruptTableError(
                f"deletion vector {self.unique_id}: bad Z85 UUID {uuid_text!r}: {exc}"
            ) from exc
        name = f"deletion_vector_{file_uuid}.bin"
        # The prefix comes from the log: "../.." in it must not reach outside the table.
        joined = f"{prefix}/{name}" if prefix else name
        return contained_path(
            joined, "(the table root)", source=f"deletion vector {self.unique_id}"
        )

    def absolute_path(self, table_root: str) -> str | None:
        """The DV file's location: ``'u'`` joined to ``table_root``, ``'p'`` as written.

        ``'p'`` paths are returned exactly as stored (an absolute path or URI such as
        ``s3://b/t/dv.bin`` or ``file:/t/dv.bin``); ``None`` for inline DVs.

        Raises:
            CorruptTableError: as :attr:`relative_path`.
        """
        if self.storage_type == "p":
            return self.path_or_inline_dv
        relative = self.relative_path
        if relative is None:
            return None
        return f"{table_root.rstrip('/')}/{relative}"


def load_deletion_vector(
    descriptor: DeletionVectorDescriptor,
    storage_or_reader: Storage | RangeReader,
    table_root: str | None = None,
) -> RowIndexes:
    """Load the deleted row indexes a descriptor points at, verifying everything on the way.

    Inline DVs are decoded from the descriptor and never touch storage. File DVs are read with
    one ranged read (two if the DV starts beyond the first 64 KiB of its file): the version
    byte must be 1, the size stored at ``offset`` must equal ``size_in_bytes``, and the stored
    CRC-32 must match the bitmap bytes. For every DV the bitmap must parse completely and hold
    exactly ``cardinality`` rows.

    Args:
        descriptor: The DV to load.
        storage_or_reader: A ``Storage`` or a ``read(path, start, end)`` callable.
        table_root: ``None`` (default): ``'u'`` DVs are read by their path relative to the
            table root (:attr:`DeletionVectorDescriptor.relative_path`), so the Storage/reader
            must be rooted at the table. A string: they are read by
            ``descriptor.absolute_path(table_root)``. ``'p'`` DVs are always read by the path
            stored in the log.

    Returns:
        The deleted row indexes, sorted ascending, without duplicates, dtype ``uint64``.

    Raises:
        CorruptTableError: if the DV file is missing, truncated, has another version, size or
            checksum, the bitmap is malformed, or its cardinality differs from the descriptor.
            The message names the DV file (or the inline DV).
    """
    if descriptor.is_inline:
        source = f"inline deletion vector {_abbreviate(descriptor.unique_id)}"
        data = _inline_bytes(descriptor, source)
    else:
        path = _storage_path(descriptor, table_root)
        source = f"deletion vector file {path}"
        read = _range_reader(storage_or_reader)
        data = _read_from_file(descriptor, read, path, source)
    rows = deserialize_deletion_vector(data, source=source)
    if rows.size != descriptor.cardinality:
        raise CorruptTableError(
            f"{source}: bitmap holds {rows.size} rows but the log says cardinality="
            f"{descriptor.cardinality}"
        )
    return rows


def keep_mask(
    deleted: RowIndexes, num_rows: int, *, source: str = "deletion vector"
) -> npt.NDArray[np.bool_]:
    """Return a boolean array of length ``num_rows``: ``False`` at deleted rows, else ``True``.

    ``deleted`` need not be sorted. ``pyarrow.array(mask)`` turns the result into the
    ``BooleanArray`` that ``Table.filter`` takes.

    Raises:
        CorruptTableError: if a deleted row index is ``>= num_rows`` (the DV does not belong
            to a file of that many rows); ``source`` names the DV in the message.
    """
    mask = np.ones(num_rows, dtype=np.bool_)
    if deleted.size:
        highest = int(deleted.max())
        if highest >= num_rows:
            raise CorruptTableError(
                f"{source} deletes row {highest} but the data file has only {num_rows} rows"
            )
        mask[deleted] = False
    return mask


def encode_dv_file(bitmap_data: bytes) -> tuple[bytes, int, int]:
    """Build a one-DV file: version byte, big-endian size, ``bitmap_data``, big-endian CRC-32.

    ``bitmap_data`` is normally :func:`serialize_deletion_vector` output; it is stored as given.

    Returns:
        ``(file_bytes, offset, size_in_bytes)`` for the descriptor: ``offset`` is 1 (the DV
        follows the version byte) and ``size_in_bytes`` is ``len(bitmap_data)``.
    """
    body = struct.pack(">I", len(bitmap_data)) + bitmap_data
    checksum = struct.pack(">I", zlib.crc32(bitmap_data))
    return bytes([DV_FILE_FORMAT_VERSION]) + body + checksum, 1, len(bitmap_data)


def inline_descriptor(row_indexes: Iterable[int] | npt.NDArray[Any]) -> DeletionVectorDescriptor:
    """Return an inline (``'i'``) descriptor holding ``row_indexes``.

    The bitmap bytes are zero-padded to a multiple of 4 for Z85; ``size_in_bytes`` keeps the
    unpadded size so readers drop the padding.

    Raises:
        ValueError: as :func:`serialize_deletion_vector`.
    """
    rows = as_row_indexes(row_indexes)
    data = serialize_deletion_vector(rows)
    padded = data + bytes(-len(data) % 4)
    return DeletionVectorDescriptor("i", z85_encode(padded), None, len(data), int(rows.size))


def uuid_descriptor(
    file_uuid: uuid.UUID,
    *,
    offset: int,
    size_in_bytes: int,
    cardinality: int,
    prefix: str = "",
) -> DeletionVectorDescriptor:
    """Return a ``'u'`` descriptor for the DV file ``[<prefix>/]deletion_vector_<uuid>.bin``."""
    encoded = prefix + z85_encode(file_uuid.bytes)
    return DeletionVectorDescriptor("u", encoded, offset, size_in_bytes, cardinality)


def _abbreviate(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else f"{text[:limit]}..."


def _storage_path(descriptor: DeletionVectorDescriptor, table_root: str | None) -> str:
    if descriptor.storage_type == "p" or table_root is not None:
        path = descriptor.absolute_path(table_root or "")
    else:
        path = descriptor.relative_path
    assert path is not None  # only inline DVs have no path
    return path


def _range_reader(storage_or_reader: Storage | RangeReader) -> RangeReader:
    if isinstance(storage_or_reader, Storage):
        return storage_or_reader.read
    if callable(storage_or_reader):
        return storage_or_reader
    raise TypeError(
        f"expected a Storage or a read(path, start, end) callable, got {storage_or_reader!r}"
    )


def _inline_bytes(descriptor: DeletionVectorDescriptor, source: str) -> bytes:
    try:
        decoded = z85_decode(descriptor.path_or_inline_dv)
    except ValueError as exc:
        raise CorruptTableError(f"{source}: bad Z85 text: {exc}") from exc
    if len(decoded) < descriptor.size_in_bytes:
        raise CorruptTableError(
            f"{source}: decodes to {len(decoded)} bytes but sizeInBytes={descriptor.size_in_bytes}"
        )
    return decoded[: descriptor.size_in_bytes]


def _read_from_file(
    descriptor: DeletionVectorDescriptor, read: RangeReader, path: str, source: str
) -> bytes:
    # The protocol says to read an absent offset as 0, but byte 0 of a DV file is its version
    # byte; a DV without an offset can only be the first one, right after that byte.
    offset = 1 if descriptor.offset is None else descriptor.offset
    if offset < 1:
        raise CorruptTableError(f"{source}: offset {offset} points at the version byte")
    size = descriptor.size_in_bytes
    end = offset + 4 + size + 4
    try:
        if offset <= _VERSION_PREFETCH_LIMIT:
            head = read(path, 0, end)
            version, chunk = head[:1], head[offset:]
        else:
            version, chunk = read(path, 0, 1), read(path, offset, end)
    except FileNotFoundError as exc:
        raise CorruptTableError(f"{source} is referenced by the log but missing") from exc
    if version != bytes([DV_FILE_FORMAT_VERSION]):
        found = version[0] if version else "nothing (empty file)"
        raise CorruptTableError(
            f"{source}: format version is {found}, expected {DV_FILE_FORMAT_VERSION}"
        )
    if len(chunk) < end - offset:
        raise CorruptTableError(
            f"{source} is truncated: the DV at offset {offset} needs {end - offset} bytes, "
            f"found {len(chunk)}"
        )
    (stored_size,) = struct.unpack_from(">I", chunk, 0)
    if stored_size != size:
        raise CorruptTableError(
            f"{source}: the DV at offset {offset} is {stored_size} bytes, the log says "
            f"sizeInBytes={size}"
        )
    data = bytes(chunk[4 : 4 + size])
    (stored_crc,) = struct.unpack_from(">I", chunk, 4 + size)
    actual_crc = zlib.crc32(data)
    if stored_crc != actual_crc:
        raise CorruptTableError(
            f"{source}: checksum mismatch for the DV at offset {offset} "
            f"(stored {stored_crc:#010x}, computed {actual_crc:#010x})"
        )
    return data
