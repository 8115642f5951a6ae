"""The bitmap of a Delta deletion vector: ``RoaringBitmapArray`` bytes and row indexes.

Implements the bitmap part of the "Deletion Vector Format" appendix of the Delta PROTOCOL.md.
A DV is the set of row indexes (0-based positions in one Parquet data file) that are
logically deleted. It is serialized as a ``RoaringBitmapArray``: the little-endian magic
number 1681511377 followed by a 64-bit Roaring bitmap in the "portable" format of the
RoaringFormatSpec (little-endian 8-byte bucket count, then per bucket in ascending key order a
4-byte key holding the high 32 bits and a standard 32-bit Roaring bitmap of the low 32 bits).
Delta additionally requires every key to have its most significant bit clear. The older
"native" layout (magic 1681511376), used by the protocol's own inline example, is read too.

Row indexes are sorted, duplicate-free ``numpy.uint64`` arrays (``RowIndexes``). Decoding
raises ``CorruptTableError`` naming the DV for any malformed byte; encoding raises
``ValueError`` for a row index outside ``[0, 2**63 - 1]``. Pure: no IO. Where a DV is stored
(inline, DV files) is ``lakecore_delta.deletion_vectors``.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Iterable
from typing import Any, Final

import numpy as np
import numpy.typing as npt
from pyroaring import BitMap

from lakecore.errors import CorruptTableError

__all__ = [
    "DV_MAGIC_NUMBER",
    "MAX_ROW_INDEX",
    "NATIVE_DV_MAGIC_NUMBER",
    "RowIndexes",
    "as_row_indexes",
    "deserialize_deletion_vector",
    "serialize_deletion_vector",
]

RowIndexes = npt.NDArray[np.uint64]
"""Sorted, duplicate-free deleted row indexes of one data file."""

DV_MAGIC_NUMBER: Final = 1681511377
NATIVE_DV_MAGIC_NUMBER: Final = 1681511376
MAX_ROW_INDEX: Final = 2**63 - 1

_SERIAL_COOKIE_NO_RUNCONTAINER: Final = 12346
_SERIAL_COOKIE: Final = 12347
_NO_OFFSET_THRESHOLD: Final = 4
_ARRAY_CONTAINER_MAX_CARDINALITY: Final = 4096
_BITSET_CONTAINER_BYTES: Final = 8192
_EMPTY_BUCKET_BYTES: Final = 4 + 8  # key + a 32-bit bitmap with no containers
_U32_TYPECODE: Final = "I" if array("I").itemsize == 4 else "L"


def deserialize_deletion_vector(data: bytes, *, source: str = "deletion vector") -> RowIndexes:
    """Parse ``RoaringBitmapArray`` bytes (magic number first) into sorted row indexes.

    The format the protocol specifies is the portable one (little-endian magic 1681511377).
    The protocol's own inline example (JSON Example 3) is in the reference implementation's
    older "native" format instead (big-endian magic 1681511376, a big-endian 4-byte bitmap
    count, then per bitmap a big-endian 4-byte length and a 32-bit Roaring bitmap whose key is
    its position), so that format is read too. Every byte must be consumed, buckets must be in
    strictly ascending key order with the key's top bit clear, and each 32-bit bitmap must be
    well formed.

    Raises:
        CorruptTableError: naming ``source`` and what is wrong.
    """
    view = memoryview(data)
    if len(view) < 4:
        raise CorruptTableError(f"{source}: {len(view)} bytes is too short for a bitmap")
    if struct.unpack_from("<I", view)[0] == DV_MAGIC_NUMBER:
        parts = _portable_buckets(view, source)
    elif struct.unpack_from(">I", view)[0] == NATIVE_DV_MAGIC_NUMBER:
        parts = _native_buckets(view, source)
    else:
        raise CorruptTableError(
            f"{source}: bad magic number {struct.unpack_from('<I', view)[0]} (expected "
            f"{DV_MAGIC_NUMBER}, the portable RoaringBitmapArray format)"
        )
    if not parts:
        return np.empty(0, dtype=np.uint64)
    return np.concatenate(parts)


def serialize_deletion_vector(row_indexes: Iterable[int] | npt.NDArray[Any]) -> bytes:
    """Serialize row indexes as ``RoaringBitmapArray`` bytes (magic number first).

    Duplicates are dropped and order does not matter. Containers are run-length optimized.
    The result is what ``sizeInBytes`` counts and what :func:`encode_dv_file` stores.

    Raises:
        ValueError: if a row index is negative or above ``2**63 - 1``.
    """
    rows = as_row_indexes(row_indexes)
    starts = np.flatnonzero(np.diff(rows >> np.uint64(32))) + 1
    chunks = np.split(rows, starts) if rows.size else []
    out = [struct.pack("<IQ", DV_MAGIC_NUMBER, len(chunks))]
    for chunk in chunks:
        low = array(_U32_TYPECODE)
        low.frombytes((chunk & np.uint64(0xFFFFFFFF)).astype(np.uint32).tobytes())
        bitmap = BitMap(low)
        bitmap.run_optimize()
        out.append(struct.pack("<I", int(chunk[0] >> np.uint64(32))))
        out.append(bitmap.serialize())
    return b"".join(out)


def _portable_buckets(view: memoryview, source: str) -> list[RowIndexes]:
    if len(view) < 12:
        raise CorruptTableError(f"{source}: {len(view)} bytes is too short for a bitmap")
    (num_buckets,) = struct.unpack_from("<Q", view, 4)
    if num_buckets > (len(view) - 12) // _EMPTY_BUCKET_BYTES:
        raise CorruptTableError(f"{source}: {num_buckets} buckets cannot fit in {len(view)} bytes")
    parts: list[RowIndexes] = []
    pos, previous_key = 12, -1
    for _ in range(num_buckets):
        (key,) = struct.unpack_from("<I", view, pos)
        if key >= 2**31 or key <= previous_key:
            raise CorruptTableError(
                f"{source}: bucket key {key} is out of order or has its top bit set"
            )
        end = _roaring32_end(view, pos + 4, source)
        parts.append(_bucket_rows(view[pos + 4 : end], key, source))
        pos, previous_key = end, key
    if pos != len(view):
        raise CorruptTableError(f"{source}: {len(view) - pos} unexpected bytes after the bitmap")
    return parts


def _native_buckets(view: memoryview, source: str) -> list[RowIndexes]:
    if len(view) < 8:
        raise CorruptTableError(f"{source}: {len(view)} bytes is too short for a bitmap")
    (num_bitmaps,) = struct.unpack_from(">I", view, 4)
    parts: list[RowIndexes] = []
    pos = 8
    for key in range(num_bitmaps):
        if pos + 4 > len(view):
            raise CorruptTableError(f"{source}: bitmap {key} of {num_bitmaps} is cut off")
        (length,) = struct.unpack_from(">I", view, pos)
        end = _roaring32_end(view, pos + 4, source)
        if end != pos + 4 + length:
            raise CorruptTableError(
                f"{source}: bitmap {key} is {end - pos - 4} bytes, its header says {length}"
            )
        parts.append(_bucket_rows(view[pos + 4 : end], key, source))
        pos = end
    if pos != len(view):
        raise CorruptTableError(f"{source}: {len(view) - pos} unexpected bytes after the bitmap")
    return parts


def _roaring32_end(view: memoryview, start: int, source: str) -> int:
    """Return where the 32-bit portable Roaring bitmap starting at ``start`` ends."""
    try:
        (cookie,) = struct.unpack_from("<I", view, start)
        if cookie == _SERIAL_COOKIE_NO_RUNCONTAINER:
            (count,) = struct.unpack_from("<I", view, start + 4)
            run_flags, pos, has_offsets = b"", start + 8, True
        elif cookie & 0xFFFF == _SERIAL_COOKIE:
            count = (cookie >> 16) + 1
            flag_bytes = (count + 7) // 8
            run_flags = bytes(view[start + 4 : start + 4 + flag_bytes])
            pos, has_offsets = start + 4 + flag_bytes, count >= _NO_OFFSET_THRESHOLD
        else:
            raise CorruptTableError(f"{source}: bad 32-bit Roaring cookie {cookie:#x}")
        if count > 65536 or pos + 4 * count > len(view):
            raise CorruptTableError(f"{source}: Roaring header of {count} containers is cut off")
        cardinalities = np.frombuffer(view[pos : pos + 4 * count], dtype="<u2")[1::2]
        pos += 4 * count * (2 if has_offsets else 1)
        for i in range(count):
            if run_flags and run_flags[i // 8] >> (i % 8) & 1:
                (runs,) = struct.unpack_from("<H", view, pos)
                pos += 2 + 4 * runs
            elif int(cardinalities[i]) + 1 <= _ARRAY_CONTAINER_MAX_CARDINALITY:
                pos += 2 * (int(cardinalities[i]) + 1)
            else:
                pos += _BITSET_CONTAINER_BYTES
    except struct.error as exc:
        raise CorruptTableError(f"{source}: bitmap is cut off") from exc
    if pos > len(view):
        raise CorruptTableError(f"{source}: bitmap is cut off")
    return int(pos)


def _bucket_rows(bucket: memoryview, key: int, source: str) -> RowIndexes:
    try:
        bitmap = BitMap.deserialize(bytes(bucket))
    except ValueError as exc:
        raise CorruptTableError(f"{source}: malformed Roaring bitmap for key {key}") from exc
    low = np.frombuffer(bitmap.to_array(), dtype=np.uint32)
    return low.astype(np.uint64) | np.uint64(key << 32)


def as_row_indexes(row_indexes: Iterable[int] | npt.NDArray[Any]) -> RowIndexes:
    """``row_indexes`` as ``RowIndexes``; ``ValueError`` for one outside [0, 2**63 - 1]."""
    if isinstance(row_indexes, np.ndarray):
        if row_indexes.dtype.kind not in "iu":
            raise ValueError(f"row indexes must be integers, got dtype {row_indexes.dtype}")
        values = row_indexes.ravel()
        if values.size and values.dtype.kind == "i" and int(values.min()) < 0:
            raise ValueError(f"row index {int(values.min())} is negative")
        rows = values.astype(np.uint64)
    else:
        try:
            signed = np.fromiter(row_indexes, dtype=np.int64)
        except OverflowError as exc:
            raise ValueError(f"a row index is outside [0, {MAX_ROW_INDEX}]") from exc
        if signed.size and int(signed.min()) < 0:
            raise ValueError(f"row index {int(signed.min())} is negative")
        rows = signed.astype(np.uint64)
    if rows.size and int(rows.max()) > MAX_ROW_INDEX:
        raise ValueError(f"row index {int(rows.max())} is above {MAX_ROW_INDEX}")
    return np.unique(rows)
