"""Record keys of the metadata table's ``column_stats`` and ``partition_stats`` partitions.

Hudi keys a column-stats record by three hash ids, each Base64-encoded (standard alphabet,
padded) and concatenated (``HoodieMetadataPayload.getColumnStatsIndexKey``):

- ``ColumnIndexID(column)``: XXH64 of the column name's UTF-8 bytes with seed ``0xdabadaba``
  (Hudi's ``HashID``, 64 bits: the seed is a Java int sign-extended to the long seed), 8
  bytes big-endian;
- ``PartitionIndexID(partition)``: the same hash of the partition path, ``.`` for the table
  root of a non-partitioned table (``getColumnStatsIndexPartitionIdentifier``);
- ``FileIndexID(file name)``: MD5 of the data file's name (128 bits).

A partition-stats record is keyed by the first two only (``getPartitionStatsIndexKey``).
"""

from __future__ import annotations

import base64
import hashlib

__all__ = [
    "NON_PARTITIONED_ID",
    "column_id",
    "column_stats_key",
    "file_id",
    "partition_id",
    "partition_stats_key",
    "xxh64",
]

NON_PARTITIONED_ID = "."
"""What Hudi hashes for the partition of a non-partitioned table."""

_MASK = (1 << 64) - 1
_P1 = 0x9E3779B185EBCA87
_P2 = 0xC2B2AE3D27D4EB4F
_P3 = 0x165667B19E3779F9
_P4 = 0x85EBCA77C2B2AE63
_P5 = 0x27D4EB2F165667C5
_SEED = 0xDABADABA - (1 << 32)  # Java int 0xdabadaba, negative, widened to a long


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _MASK


def _round(acc: int, lane: int) -> int:
    acc = (acc + lane * _P2) & _MASK
    return (_rotl(acc, 31) * _P1) & _MASK


def _merge(acc: int, val: int) -> int:
    acc ^= _round(0, val)
    return (acc * _P1 + _P4) & _MASK


def xxh64(data: bytes, seed: int = _SEED) -> int:
    """XXH64 of ``data`` (the reference algorithm), as an unsigned 64-bit int."""
    seed &= _MASK
    n = len(data)
    pos = 0
    if n >= 32:
        v = [(seed + _P1 + _P2) & _MASK, (seed + _P2) & _MASK, seed, (seed - _P1) & _MASK]
        while pos + 32 <= n:
            for i in range(4):
                lane = int.from_bytes(data[pos + 8 * i : pos + 8 * i + 8], "little")
                v[i] = _round(v[i], lane)
            pos += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _MASK
        for lane in v:
            h = _merge(h, lane)
    else:
        h = (seed + _P5) & _MASK
    h = (h + n) & _MASK
    while pos + 8 <= n:
        h ^= _round(0, int.from_bytes(data[pos : pos + 8], "little"))
        h = (_rotl(h, 27) * _P1 + _P4) & _MASK
        pos += 8
    if pos + 4 <= n:
        h ^= (int.from_bytes(data[pos : pos + 4], "little") * _P1) & _MASK
        h = (_rotl(h, 23) * _P2 + _P3) & _MASK
        pos += 4
    while pos < n:
        h ^= (data[pos] * _P5) & _MASK
        h = (_rotl(h, 11) * _P1) & _MASK
        pos += 1
    h ^= h >> 33
    h = (h * _P2) & _MASK
    h ^= h >> 29
    h = (h * _P3) & _MASK
    return h ^ (h >> 32)


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def column_id(column: str) -> str:
    """``ColumnIndexID(column).asBase64EncodedString()``."""
    return _b64(xxh64(column.encode("utf-8")).to_bytes(8, "big"))


def partition_id(partition: str) -> str:
    """``PartitionIndexID`` of a data partition path (``""``: the table root)."""
    name = partition or NON_PARTITIONED_ID
    return _b64(xxh64(name.encode("utf-8")).to_bytes(8, "big"))


def file_id(file_name: str) -> str:
    """``FileIndexID(file name)``: MD5 of the name (no directory)."""
    return _b64(hashlib.md5(file_name.encode("utf-8"), usedforsecurity=False).digest())


def column_stats_key(partition: str, file_name: str, column: str) -> str:
    """The ``column_stats`` record key of ``column`` of data file ``file_name``."""
    return column_id(column) + partition_id(partition) + file_id(file_name)


def partition_stats_key(partition: str, column: str) -> str:
    """The ``partition_stats`` record key of ``column`` in data partition ``partition``."""
    return column_id(column) + partition_id(partition)
