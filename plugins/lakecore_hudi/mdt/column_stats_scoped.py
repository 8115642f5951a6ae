"""The ``column_stats`` records of some data partitions and columns only.

Hudi keys a column-stats record ``ColumnIndexID + PartitionIndexID + FileIndexID``
(``HoodieMetadataPayload.getColumnStatsIndexKey``; ``stats_keys``): column first, so the
records of one (column, partition) pair are contiguous in every sorted HFile, and a scan
that selects a few partitions needs one key prefix per (column, partition) pair. This module
reads, per file group of the partition, the latest slice's base HFile through its block index
(``hfile_range``: trailer, root index, then only the data blocks that can hold a prefix) and
the slice's log files whole, as ``column_stats.load_column_stats`` does, keeping only the
records under the prefixes; records are folded exactly as there (same timeline, same block
order, same payload merge), so for the files of those partitions and those columns the
result equals the whole-partition load's.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from lakecore.errors import CorruptTableError
from lakecore.storage import Storage
from lakecore_hudi.log.format import BlockType, LogBlock
from lakecore_hudi.mdt.column_stats import (
    COLUMN_STATS_PARTITION,
    METADATA_DIR,
    READERS,
    _block_records,
    _fold,
    _has_column_stats,
    _live_blocks,
    _load_timeline,
    _metadata_config,
    _slice_files,
    _Timeline,
)
from lakecore_hudi.mdt.hfile_range import Reader, prefix_matcher, read_prefixed_cells
from lakecore_hudi.mdt.records import ColumnStats, MetadataRecord, decode_records, parse_schema
from lakecore_hudi.mdt.stats_keys import column_id, partition_id
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.view import FileSlice, latest_slices

__all__ = ["load_scoped_column_stats"]


def load_scoped_column_stats(
    storage: Storage,
    config: TableConfig | Mapping[str, str],
    partitions: Collection[str],
    columns: Collection[str],
) -> dict[str, dict[str, ColumnStats]] | None:
    """The live column-stats records of the data files in ``partitions`` (partition paths,
    ``""`` for a non-partitioned table's root) for ``columns`` (column paths, nested fields
    as ``"a.b"``): file name -> column -> stats, as ``load_column_stats`` gives them.

    Returns None when the table lists no complete ``column_stats`` partition or has no
    metadata table; {} (reading nothing) when ``partitions`` or ``columns`` is empty and the
    table lists one.

    Raises:
        CorruptTableError: a metadata-table file is unreadable; the message names it.
        UnsupportedFeatureError: a metadata-table file uses a feature lakecore cannot read.
    """
    if not _has_column_stats(config):
        return None
    if not partitions or not columns:
        return {}
    mdt = _metadata_config(storage)
    if mdt is None:
        return None
    timeline = _load_timeline(storage, mdt)
    listing = storage.list_dir(f"{METADATA_DIR}/{COLUMN_STATS_PARTITION}")
    slices = latest_slices(_slice_files(listing), timeline.visible, mdt.table_version >= 8)
    pids = {partition_id(p) for p in partitions}
    prefixes = sorted({(column_id(c) + p).encode("ascii") for c in columns for p in pids})

    def one(file_slice: FileSlice) -> dict[str, ColumnStats]:
        return _slice_stats(storage, file_slice, timeline, prefixes)

    with ThreadPoolExecutor(READERS) as pool:
        merged = list(pool.map(one, slices))
    out: dict[str, dict[str, ColumnStats]] = {}
    for stats in merged:
        for stat in stats.values():
            if not stat.is_deleted:
                out.setdefault(stat.file_name, {})[stat.column_name] = stat
    return out


def _slice_stats(
    storage: Storage, file_slice: FileSlice, timeline: _Timeline, prefixes: Sequence[bytes]
) -> dict[str, ColumnStats]:
    """Record key -> merged stats under ``prefixes`` of one metadata file slice."""
    merged: dict[str, ColumnStats] = {}
    base = file_slice.base_file
    if base is not None:
        path = base.path

        def read(start: int, end: int) -> bytes:
            return storage.read(path, start, end)

        _fold(merged, _hfile_records(read, base.size, path, None, prefixes), path)
    logs = [(f.path, storage.read(f.path)) for f in file_slice.log_files]
    for block in _live_blocks(logs, timeline):
        _fold(merged, _block_records_under(block, prefixes), block.path)
    return merged


def _block_records_under(block: LogBlock, prefixes: Sequence[bytes]) -> list[MetadataRecord]:
    if block.block_type == BlockType.HFILE_DATA:
        content = bytes(block.content)
        where = f"{block.path} (log block at byte {block.offset})"

        def read(start: int, end: int) -> bytes:
            return content[start:end]

        return _hfile_records(read, len(content), where, block.schema, prefixes)
    matches = prefix_matcher(prefixes)
    return [r for r in _block_records(block) if matches(r.key.encode("utf-8"))]


def _hfile_records(
    read: Reader, size: int, path: str, schema_json: str | None, prefixes: Sequence[bytes]
) -> list[MetadataRecord]:
    cells, info = read_prefixed_cells(read, size, path, prefixes)
    if not cells:
        return []
    if schema_json is None:
        raw = info.get(b"schema")
        if raw is None:
            raise CorruptTableError(f"{path}: HFile holds no record schema in its file info")
        schema_json = raw.decode("utf-8", "replace")
    return decode_records(cells, parse_schema(schema_json, path), path)
