"""Metadata-table file groups: how Hudi names them and routes a record key to one.

A metadata-table partition holds a fixed number of file groups, fixed when the partition is
initialised (``files``: 1, ``column_stats``: 2, ``partition_stats``: 1, ``record_index``
and secondary indexes: 10 by default in the corpus). A record goes to file group
``file_group_index(key, n)``: Hudi's ``HoodieTableMetadataUtil.mapRecordKeyToFileGroupIndex``,
Java's ``String.hashCode`` (over UTF-16 code units, 32-bit signed overflow) then
``abs(abs(h) % n)`` (Java's ``abs`` of ``Integer.MIN_VALUE`` stays negative; the outer
``abs`` of the truncated remainder then makes it ``2**31 % n``).

File group ids are ``<prefix><index:04d>-0`` (``HoodieTableMetadataUtil.getFileIDForFileGroup``)
with the partition type's prefix (``files-``, ``col-stats-``, ``partition-stats-``,
``record-index-``); secondary and expression index partitions use their partition name with
``_`` replaced by ``-`` (``secondary_index_rider_idx`` -> ``secondary-index-rider-idx-0003-0``).
"""

from __future__ import annotations

import re

from lakecore.errors import CorruptTableError

__all__ = [
    "FILE_ID_PREFIXES",
    "file_group_id",
    "file_group_index",
    "file_group_ordinal",
    "file_id_prefix",
    "java_string_hash",
]

FILE_ID_PREFIXES = {
    "files": "files-",
    "column_stats": "col-stats-",
    "partition_stats": "partition-stats-",
    "record_index": "record-index-",
    "bloom_filters": "bloom-filters-",
}
"""The file id prefix of each fixed metadata-table partition type (Hudi's MetadataPartitionType)."""

_INDEXED_PREFIXES = ("secondary_index_", "expr_index_")
_FILE_ID = re.compile(r"^(?P<prefix>.*-)(?P<index>\d{4,})-(?P<suffix>\d+)$")


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode`` of ``s``: ``h = 31*h + c`` over the UTF-16 code units
    (a character beyond the BMP counts as its two surrogates), wrapped to a signed 32-bit int."""
    data = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def file_group_index(routing_key: str, n: int) -> int:
    """The file group (0 .. n-1) of a partition with ``n`` file groups that Hudi writes a
    record routed by ``routing_key`` to (``mapRecordKeyToFileGroupIndex``).

    Raises:
        ValueError: ``n`` is not positive.
    """
    if n <= 0:
        raise ValueError(f"a metadata partition has at least one file group, not {n}")
    # Python's abs of -2**31 is 2**31 where Java's stays negative, but the outer abs of Java's
    # truncated remainder gives the same non-negative value: abs(h) % n in exact arithmetic.
    return abs(java_string_hash(routing_key)) % n


def file_id_prefix(partition: str) -> str:
    """The file id prefix of metadata-table partition ``partition``.

    Raises:
        KeyError: ``partition`` is not a metadata-table partition Hudi knows.
    """
    if partition.startswith(_INDEXED_PREFIXES):
        return partition.replace("_", "-") + "-"
    return FILE_ID_PREFIXES[partition]


def file_group_id(partition: str, index: int) -> str:
    """The id of file group ``index`` of ``partition`` (``getFileIDForFileGroup``)."""
    return f"{file_id_prefix(partition)}{index:04d}-0"


def file_group_ordinal(file_id: str) -> int:
    """The index a metadata file group id carries (``col-stats-0001-0`` -> 1).

    Raises:
        CorruptTableError: ``file_id`` is not a metadata-table file group id.
    """
    match = _FILE_ID.match(file_id)
    if match is None:
        raise CorruptTableError(f"metadata table file group id {file_id!r} has no index")
    return int(match["index"])
