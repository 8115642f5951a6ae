"""Reading the record-level index partitions of the metadata table: ``record_index`` and
``secondary_index_<name>``.

Both partitions hold one record per key and change by whole records: a newer record of a key
replaces the older one, and a deletion removes the key. Hudi writes deletions into the DELETE
block of the delta commit's log file (an ``EmptyHoodieRecordPayload``, or a secondary-index
entry whose ``isDeleted`` is set: ``HoodieMetadataPayload`` turns both into no record), so
folding a file slice applies its base HFile, then its log blocks in log order, data and delete
blocks alike. As for the ``files`` partition (``files_partition``), a log block counts only
when its instant is completed on the metadata timeline and is a valid data instant.

``read_index_partition`` returns the live records with the metadata file group holding each
(routing checks); ``record_locations`` decodes ``record_index`` entries into data locations.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lakecore.errors import ConstraintViolationError, CorruptTableError
from lakecore.storage import Storage
from lakecore_hudi.log.delete_blocks import decode_delete_block
from lakecore_hudi.log.format import BlockType, read_log_blocks
from lakecore_hudi.log.scanner import order_log_blocks
from lakecore_hudi.mdt.column_stats import (
    METADATA_DIR,
    _block_records,
    _hfile_records,
    _load_timeline,
    _metadata_config,
    _slice_files,
)
from lakecore_hudi.mdt.file_groups import file_group_id, file_group_index
from lakecore_hudi.mdt.files_partition import is_init_instant, valid_data_instants
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.view import latest_slices

__all__ = [
    "MAX_KEY_BYTES",
    "RECORD_INDEX",
    "IndexEntry",
    "ensure_keys_fit",
    "is_deleted",
    "read_index_partition",
    "record_location",
    "record_locations",
]

RECORD_INDEX = "record_index"
MAX_KEY_BYTES = 32767
"""The longest metadata record key an HFile cell holds (its row length is a Java short), in
UTF-8 bytes: Hudi's writer cannot store a longer one either."""
MISSING_FILE_INDEX = -1
"""``fileIndex`` of a UUID file id without a ``-<n>`` suffix
(``RECORD_INDEX_MISSING_FILEINDEX_FALLBACK``)."""


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """A live record of an index partition and the metadata file group that holds it."""

    key: str
    record: Mapping[str, Any]
    file_group: str


def is_deleted(record: Mapping[str, Any]) -> bool:
    """Whether ``record`` deletes its key: no payload (Hudi's empty payload), or a
    secondary-index entry marked ``isDeleted``."""
    info = record.get("SecondaryIndexMetadata")
    if isinstance(info, Mapping) and info.get("isDeleted"):
        return True
    return record.get("recordIndexMetadata") is None and info is None


def read_index_partition(
    storage: Storage,
    config: TableConfig,
    partition: str,
    route: Callable[[int], Collection[str]] | None = None,
) -> dict[str, IndexEntry] | None:
    """The live records of metadata partition ``partition`` (``record_index`` or a secondary
    index), folded over every file group's latest slice, or, with ``route``, over the file
    groups ``route(number of file groups)`` names only (the others are not read).

    Returns None when the table has no metadata table or does not list ``partition`` as built.

    Raises:
        CorruptTableError: a metadata file is unreadable, or a key sits in two file groups.
        UnsupportedFeatureError: a metadata file uses a feature lakecore cannot read.
    """
    if partition not in config.metadata_partitions:
        return None
    mdt = _metadata_config(storage)
    if mdt is None:
        return None
    completed, first = valid_data_instants(storage, config)
    timeline = _load_timeline(storage, mdt)

    def valid(instant: str) -> bool:
        if not timeline.block_is_live(instant):
            return False
        if is_init_instant(instant) or instant in completed:
            return True
        return first is not None and instant < first

    directory = f"{METADATA_DIR}/{partition}"
    files = _slice_files(storage.list_dir(directory))
    if route is not None:
        wanted = set(route(len({f.name.file_id for f in files})))
        files = [f for f in files if f.name.file_id in wanted]
    slices = latest_slices(files, timeline.visible, mdt.table_version >= 8)
    out: dict[str, IndexEntry] = {}
    for s in slices:
        live: dict[str, Mapping[str, Any]] = {}
        if s.base_file is not None:
            path = s.base_file.path
            for r in _hfile_records(storage.read(path), path, None):
                _apply(live, r.key, r.record)
        blocks = [
            b
            for f in s.log_files
            for b in read_log_blocks(storage.read(f.path), f.path, skip_corrupt=True)
        ]
        for block in order_log_blocks(blocks, valid):
            if block.block_type in (BlockType.HFILE_DATA, BlockType.AVRO_DATA):
                for r in _block_records(block):
                    _apply(live, r.key, r.record)
            elif block.block_type == BlockType.DELETE:
                for key in decode_delete_block(block).column("record_key").to_pylist():
                    live.pop(str(key), None)
        for key, record in live.items():
            if key in out:
                raise CorruptTableError(
                    f"{directory}: key {key!r} is live in file groups "
                    f"{out[key].file_group} and {s.file_id}"
                )
            out[key] = IndexEntry(key, record, s.file_id)
    return out


def _apply(live: dict[str, Mapping[str, Any]], key: str, record: Mapping[str, Any]) -> None:
    if is_deleted(record):
        live.pop(key, None)
    else:
        live[key] = {**record, "key": key}


def ensure_keys_fit(keys: Iterable[str], partition: str) -> None:
    """Refuse metadata record keys longer than ``MAX_KEY_BYTES`` UTF-8 bytes.

    Raises:
        ConstraintViolationError: naming the partition, the key's start and its length.
    """
    for key in keys:
        size = len(key.encode("utf-8", "surrogatepass"))
        if size > MAX_KEY_BYTES:
            raise ConstraintViolationError(
                f"{partition}: key {key[:40]!r}... is {size} UTF-8 bytes; the metadata table "
                f"holds keys of at most {MAX_KEY_BYTES} (a record key, or a secondary index "
                "value with its record key, that long cannot be indexed, by Hudi either)"
            )


def record_location(record: Mapping[str, Any], path: str = RECORD_INDEX) -> tuple[str, str]:
    """(data partition path, file id) a ``record_index`` record points to.

    Raises:
        CorruptTableError: the record has no ``recordIndexMetadata``, an unknown encoding or
            a UUID encoding without its bits.
    """
    info = record.get("recordIndexMetadata")
    if not isinstance(info, Mapping):
        raise CorruptTableError(f"{path}: record {record.get('key')!r} has no location")
    encoding = info.get("fileIdEncoding")
    if encoding == 1:
        return str(info.get("partitionName") or ""), str(info.get("fileId"))
    if encoding != 0:
        raise CorruptTableError(
            f"{path}: record {record.get('key')!r} has unknown fileIdEncoding {encoding!r}"
        )
    high, low = info.get("fileIdHighBits"), info.get("fileIdLowBits")
    if not isinstance(high, int) or not isinstance(low, int):
        raise CorruptTableError(f"{path}: record {record.get('key')!r} has no file id bits")
    value = ((high & (1 << 64) - 1) << 64) | (low & (1 << 64) - 1)
    file_id = str(uuid.UUID(int=value))
    index = info.get("fileIndex")
    if index is not None and index != MISSING_FILE_INDEX:
        file_id += f"-{index}"
    return str(info.get("partitionName") or ""), file_id


def record_locations(
    storage: Storage, config: TableConfig, keys: Collection[str] | None = None
) -> dict[str, tuple[str, str]] | None:
    """Record key -> (partition path, file id) as the ``record_index`` partition holds it;
    None without a built ``record_index`` partition.

    With ``keys``, only those found are returned and only the file groups Hudi routes them to
    are read (``mapRecordKeyToFileGroupIndex`` of each key), as Hudi's index lookup does: the
    cost follows the keys, not the index.
    """

    def route(n: int) -> set[str]:
        assert keys is not None
        return {file_group_id(RECORD_INDEX, file_group_index(k, n)) for k in keys}

    entries = read_index_partition(storage, config, RECORD_INDEX, None if keys is None else route)
    if entries is None:
        return None
    wanted = entries.keys() if keys is None else [k for k in keys if k in entries]
    return {k: record_location(entries[k].record) for k in wanted}
