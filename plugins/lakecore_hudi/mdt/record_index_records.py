"""Records of the metadata table's ``record_index`` partition: where each record key lives.

One record per live data record key (type 5, key = the data record key) holding
``HoodieRecordIndexInfo``: the data partition path and the file id of the file group holding
the record, and the epoch milliseconds of the instant that wrote it there. As Hudi writes them
(``HoodieMetadataPayload.createRecordIndexUpdate``, default ``_hoodie.writes.fileid.encoding``
0), a file id ``<UUID>-<n>`` is stored as the UUID's two 64-bit halves (``fileIdHighBits``,
``fileIdLowBits``, Java's signed longs) and ``fileIndex`` n with ``fileId`` ``""`` and
``fileIdEncoding`` 0 (a bare UUID: ``fileIndex`` -1); lakecore stores a file id that is not
UUID-based (an adopted external file) as the raw string (``fileIdEncoding`` 1, bits and index
-1), which Hudi's reader decodes as well. ``position`` is never set.

Per data instant (``commit_records``), as Hudi's ``convertMetadataToRecordIndexRecords``:

- a key newly stored in a file group (an insert, a key moved to another partition or file
  group, clustering) gets an entry pointing to that group, with the instant's time;
- a key the instant removes from the table (a delete, a replaced file group's records that
  were not rewritten) gets a deletion: a record without payload, which the metadata writer
  puts into the log file's DELETE block (Hudi's ``EmptyHoodieRecordPayload``);
- updates in place, compactions and cleans write nothing.

A key both removed from one group and stored in another by the same instant keeps only the
entry (Hudi's ``reduceByKeys``); a key one group lost that another touched group still holds
(a key stored twice, of which an upsert kept one copy) gets an entry pointing to that group,
where Hudi would delete it. The inserted and removed keys come from reading the touched
file groups before and after the instant (``group_changes``).

``instantTime``: Hudi parses the instant in its JVM's time zone unless
``hoodie.table.timeline.timezone`` is UTC; lakecore's instant times are UTC (and the corpus
tables' writers ran in UTC), so the instant is read as UTC.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from lakecore.errors import UnsupportedFeatureError
from lakecore_hudi.keys import RECORD_KEY
from lakecore_hudi.mdt.group_changes import group_changes
from lakecore_hudi.mdt.index_context import IndexContext
from lakecore_hudi.mdt.record_codec import blank_record
from lakecore_hudi.mdt.record_index import (
    MISSING_FILE_INDEX,
    RECORD_INDEX,
    ensure_keys_fit,
    is_deleted,
)
from lakecore_hudi.state import instant_epoch_ms

__all__ = [
    "DEFAULT_FILE_GROUPS",
    "FILE_ID_PREFIX",
    "PARTITION",
    "RECORD_TYPE",
    "commit_records",
    "deletion",
    "ensure_supported",
    "location_record",
    "merge",
    "routing_key",
]

PARTITION = RECORD_INDEX
FILE_ID_PREFIX = "record-index-"
RECORD_TYPE = 5
"""``HoodieMetadataRecord.type`` of record-index records (``MetadataPartitionType``)."""

DEFAULT_FILE_GROUPS = 10
"""File groups Hudi gives a new record index (its ``record.index.min.filegroup.count``)."""
UUID_ENCODING = 0
RAW_ENCODING = 1


def ensure_supported(index_defs: Mapping[str, Any]) -> None:
    """Refuse a record index lakecore cannot maintain: a partitioned one (Hudi 1.1's
    ``isPartitioned``, keyed by partition and key).

    Raises:
        UnsupportedFeatureError: naming the feature.
    """
    definition = (index_defs.get("indexDefinitions") or {}).get(RECORD_INDEX) or {}
    options = definition.get("indexOptions") or {}
    if str(options.get("isPartitioned", "false")).lower() == "true":
        raise UnsupportedFeatureError(
            "hudi-partitioned-record-index",
            "lakecore maintains the global record index, not a partitioned one "
            "(record_index indexOptions.isPartitioned=true)",
        )


def commit_records(ctx: IndexContext) -> list[dict[str, Any]]:
    """The ``record_index`` records data instant ``ctx.instant`` adds (see the module doc):
    entries sorted by key, then deletions sorted by key; ``[]`` for a clean or compaction.

    Raises:
        UnsupportedFeatureError: a partitioned record index (``ensure_supported``).
        ConstraintViolationError: a new key is too long to index (``MAX_KEY_BYTES``).
        CorruptTableError: a data file of a touched file group is unreadable.
    """
    ensure_supported(ctx.index_defs)
    stored: dict[str, tuple[str, str]] = {}
    held: dict[str, tuple[str, str]] = {}
    removed: set[str] = set()
    for change in group_changes(ctx):
        before = _keys(change.before)
        after = _keys(change.after)
        for key in after - before:
            stored[key] = (change.partition, change.file_id)
        held.update(dict.fromkeys(after, (change.partition, change.file_id)))
        removed |= before - after
    # A key one group lost that another touched group still holds (a key stored twice, of
    # which an upsert kept one copy) stays indexed, pointing to the group that holds it.
    for key in removed - stored.keys():
        if key in held:
            stored[key] = held[key]
    ensure_keys_fit(stored, PARTITION)
    instant_ms = instant_millis(ctx.instant)
    out = [
        location_record(key, partition, file_id, instant_ms)
        for key, (partition, file_id) in sorted(stored.items())
    ]
    out.extend(deletion(key) for key in sorted(removed - stored.keys()))
    return out


def merge(older: dict[str, Any] | None, newer: dict[str, Any]) -> dict[str, Any] | None:
    """Hudi's payload merge of two records of one key: the newer one wins (the record index
    keeps no history); None when it is a deletion (compaction drops the key)."""
    return None if is_deleted(newer) else newer


def routing_key(key: str, table_version: int) -> str:
    """The string Hudi hashes to pick a record's file group: the record key itself
    (``mapRecordKeyToFileGroupIndex``), in every table version."""
    return key


def instant_millis(instant: str) -> int:
    """Epoch milliseconds of instant time ``instant`` read as UTC (see the module doc).

    Raises:
        ValueError: ``instant`` is not a ``yyyyMMddHHmmss[SSS]`` time.
    """
    millis = instant_epoch_ms(instant)
    if millis is None:
        raise ValueError(f"instant time {instant!r} is not a date-time")
    return millis


def location_record(key: str, partition: str, file_id: str, instant_ms: int) -> dict[str, Any]:
    """The record saying data record ``key`` lives in file group ``file_id`` of data partition
    ``partition`` since ``instant_ms``."""
    encoded = _uuid_parts(file_id)
    if encoded is None:
        bits: tuple[int, int, int] = (-1, -1, -1)
        raw, encoding = file_id, RAW_ENCODING
    else:
        bits, raw, encoding = encoded, "", UUID_ENCODING
    info = {
        "partitionName": partition,
        "fileIdHighBits": bits[0],
        "fileIdLowBits": bits[1],
        "fileIndex": bits[2],
        "fileId": raw,
        "instantTime": instant_ms,
        "fileIdEncoding": encoding,
        "position": None,
    }
    return {**blank_record(key, RECORD_TYPE), "recordIndexMetadata": info}


def deletion(key: str) -> dict[str, Any]:
    """The record deleting ``key`` from the index (no payload: a DELETE-block entry)."""
    return blank_record(key, RECORD_TYPE)


def _uuid_parts(file_id: str) -> tuple[int, int, int] | None:
    """(high bits, low bits, file index) of a UUID-based file id, as Java's signed longs;
    None for any other file id."""
    text, index = file_id, MISSING_FILE_INDEX
    if len(file_id) != 36:
        text, sep, suffix = file_id.rpartition("-")
        if not sep or not suffix.isdigit() or len(suffix) > 9:
            return None
        index = int(suffix)
    try:
        value = uuid.UUID(text)
    except ValueError:
        return None
    if str(value) != text:  # Java would accept other spellings, then name the file differently
        return None
    return _signed(value.int >> 64), _signed(value.int & (1 << 64) - 1), index


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _keys(rows: pa.Table) -> set[str]:
    return {str(k) for k in rows.column(RECORD_KEY).to_pylist() if k is not None}
