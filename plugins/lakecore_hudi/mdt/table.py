"""The metadata table as a table: its ``hoodie.properties``, and creating it.

Hudi 1.x (data table versions 8 and 9) keeps the metadata table at ``.hoodie/metadata``: a
MERGE_ON_READ table of the data table's version with HFile base files, keyed by ``key``, merged by
``HoodieMetadataPayload``. Initialising its ``files`` partition (instant
``00000000000000000``, a delta commit) writes, as Hudi does:

- ``files/.hoodie_partition_metadata``;
- the base file ``files/files-0000-0_0-0-0_00000000000000000.hfile`` listing the data table's
  partitions (none for a new table) under ``__all_partitions__``;
- the log file ``files/.files-0000-0_00000000000000000.log.1_0-0-0`` holding one empty delete
  block (Hudi creates every file group's first log file that way);
- the instant's requested, inflight and completed files on the metadata timeline.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from lakecore.errors import UnsupportedFeatureError
from lakecore.storage import Storage
from lakecore_hudi.bloom import DYNAMIC_V0, BloomSettings, build_filter
from lakecore_hudi.java_properties import parse_properties
from lakecore_hudi.log.format import BlockType, HeaderKey, encode_log_block
from lakecore_hudi.mdt.files_records import (
    ALL_PARTITIONS,
    PARTITION_LIST,
    encode_cells,
    schema_json,
)
from lakecore_hudi.mdt.hfile_writer import write_hfile
from lakecore_hudi.mdt.prefixed import PrefixedStorage
from lakecore_hudi.names import base_file_name, log_file_name
from lakecore_hudi.table_config import PROPERTIES_PATH, TableConfig
from lakecore_hudi.table_config_out import render_table_config
from lakecore_hudi.timeline.commit_metadata import CommitMetadata, WriteStat, encode_commit_metadata
from lakecore_hudi.timeline.instants import DELTA_COMMIT
from lakecore_hudi.timeline.lifecycle import complete, write_inflight, write_requested

__all__ = [
    "FILES_FILE_ID",
    "INIT_INSTANT",
    "METADATA_DIR",
    "MAINTAINED_PARTITIONS",
    "METADATA_TABLE_VERSIONS",
    "initialise_metadata_table",
    "metadata_config",
    "metadata_storage",
]

METADATA_DIR = ".hoodie/metadata"
FILES_PARTITION = "files"
FILES_FILE_ID = "files-0000-0"
INIT_INSTANT = "00000000000000000"
MAINTAINED_PARTITIONS = frozenset({FILES_PARTITION})
METADATA_TABLE_VERSIONS = frozenset({8, 9})
"""Data table versions whose metadata table lakecore creates and maintains."""
"""Metadata-table partitions lakecore keeps up to date on every commit."""
PAYLOAD = "org.apache.hudi.metadata.HoodieMetadataPayload"
_WRITE_TOKEN = "0-0-0"
_BLOOM = BloomSettings(DYNAMIC_V0, num_entries=10_000, fpp=1e-9, max_entries=100_000)
# An empty HoodieDeleteBlock: version 3, then the length-prefixed Avro of an empty array.
_EMPTY_DELETE_BLOCK = bytes.fromhex("000000030000000100")


def metadata_storage(storage: Storage) -> PrefixedStorage:
    """The metadata table's own Storage (rooted at ``.hoodie/metadata``)."""
    return PrefixedStorage(storage, METADATA_DIR)


def metadata_config(mdt: Storage) -> TableConfig | None:
    """The metadata table's configuration, or None when it has no ``hoodie.properties``."""
    try:
        text = mdt.read(PROPERTIES_PATH).decode("latin-1")
    except FileNotFoundError:
        return None
    return TableConfig.from_properties(parse_properties(text), f"{METADATA_DIR}/{PROPERTIES_PATH}")


def metadata_properties(data: Mapping[str, str]) -> dict[str, str]:
    """The ``hoodie.properties`` of the metadata table of a version 8 or 9 data table (the
    metadata table takes the data table's version)."""
    version = data.get("hoodie.table.version", "8")
    if int(version) not in METADATA_TABLE_VERSIONS:
        raise UnsupportedFeatureError(
            f"hudi-metadata-table-v{version}",
            f"lakecore maintains metadata tables of table versions 8 and 9, not {version}",
        )
    return {
        "hoodie.table.name": f"{data['hoodie.table.name']}_metadata",
        "hoodie.table.type": "MERGE_ON_READ",
        "hoodie.table.version": version,
        "hoodie.table.initial.version": version,
        "hoodie.table.keygenerator.type": "HOODIE_TABLE_METADATA",
        "hoodie.table.recordkey.fields": "key",
        "hoodie.table.base.file.format": "HFILE",
        "hoodie.populate.meta.fields": "false",
        "hoodie.compaction.payload.class": PAYLOAD,
        "hoodie.record.merge.mode": "CUSTOM",
        "hoodie.record.merge.strategy.id": "00000000-0000-0000-0000-000000000000",
        "hoodie.archivelog.folder": "history",
        "hoodie.timeline.layout.version": "2",
        "hoodie.timeline.path": "timeline",
        "hoodie.timeline.history.path": "history",
        "hoodie.datasource.write.drop.partition.columns": "false",
    }


def files_hfile(
    records: Sequence[Mapping[str, Any]], table_version: int, create_time_ms: int | None = None
) -> bytes:
    """A ``files``-partition base HFile holding ``records``, as Hudi writes base files: the
    writer schema, a ``DYNAMIC_V0`` bloom filter of the record keys (10000 entries per row,
    fpp 1e-9: Hudi's metadata-table settings) as meta block ``bloomFilter`` with its type
    code, and the min/max record keys in the file info."""
    cells = encode_cells(records, table_version)
    keys = pa.array([row.decode() for row, _ in cells], pa.string())
    bloom = build_filter(keys, _BLOOM).serialize().encode("ascii")
    info = {
        "schema": schema_json(table_version).encode(),
        "bloomFilterTypeCode": DYNAMIC_V0.encode(),
        "minRecordKey": cells[0][0] if cells else b"",
        "maxRecordKey": cells[-1][0] if cells else b"",
    }
    created = int(time.time() * 1000) if create_time_ms is None else create_time_ms
    return write_hfile(cells, info, meta_blocks=[("bloomFilter", bloom)], create_time_ms=created)


def initialise_metadata_table(storage: Storage, data_properties: Mapping[str, str]) -> None:
    """Create the metadata table of a new, empty data table, its ``files`` partition built.

    Must run before the data table's ``hoodie.properties`` (which then lists ``files`` in
    ``hoodie.table.metadata.partitions``) is written, and only while it does not exist: any
    metadata table already there is a failed create's leftover and is deleted first.

    Raises:
        UnsupportedFeatureError: the data table is not of version 8 or 9.
    """
    props = metadata_properties(data_properties)
    mdt = metadata_storage(storage)
    # Left by a create that died before the data table's hoodie.properties (which decides
    # that the table exists) was written: nobody reads it.
    for leftover in storage.list_all(METADATA_DIR):
        storage.delete(leftover.path)
    mdt.put(PROPERTIES_PATH, render_table_config(props, comment="Created by lakecore"))
    config = metadata_config(mdt)
    assert config is not None
    mdt.put(
        f"{FILES_PARTITION}/.hoodie_partition_metadata",
        f"#partition metadata\ncommitTime={INIT_INSTANT}\npartitionDepth=1\n".encode(),
    )
    write_requested(mdt, config, DELTA_COMMIT, INIT_INSTANT)
    write_inflight(mdt, config, DELTA_COMMIT, INIT_INSTANT)
    base = base_file_name(FILES_FILE_ID, _WRITE_TOKEN, INIT_INSTANT, "hfile")
    record = {"key": ALL_PARTITIONS, "type": PARTITION_LIST, "filesystemMetadata": {}}
    content = files_hfile([record], config.table_version)
    mdt.put(f"{FILES_PARTITION}/{base}", content)
    log = log_file_name(FILES_FILE_ID, INIT_INSTANT, 1, _WRITE_TOKEN)
    block = encode_log_block(
        BlockType.DELETE, {HeaderKey.INSTANT_TIME: INIT_INSTANT}, _EMPTY_DELETE_BLOCK
    )
    mdt.put(f"{FILES_PARTITION}/{log}", block)
    stats = [
        WriteStat(
            file_id=FILES_FILE_ID,
            path=f"{FILES_PARTITION}/{base}",
            partition_path=FILES_PARTITION,
            prev_commit="null",
            num_writes=1,
            num_inserts=1,
            total_write_bytes=len(content),
            file_size_in_bytes=len(content),
        )
    ]
    meta = CommitMetadata(
        partition_to_write_stats={FILES_PARTITION: stats},
        operation_type="BULK_INSERT_PREPPED",
        extra_metadata={"schema": schema_json(config.table_version)},
    )
    complete(
        mdt, config, DELTA_COMMIT, INIT_INSTANT, encode_commit_metadata(meta, config.table_version)
    )
