"""Data files' column ranges as the metadata table's ``column_stats`` partition stores them.

Hudi's partition stats on commit (``HoodieTableMetadataUtil``) take the ranges of a
partition's untouched files from the ``column_stats`` records already in the metadata
table, not from the files. ``stored_file_ranges`` does the same, reading only the records it
needs: a record key is ``ColumnIndexID + PartitionIndexID + FileIndexID``, so the records of
one (column, partition) are contiguous in every sorted HFile of the partition, and each key
lives in the file group its whole key routes to (``file_groups.file_group_index``). Per
file group it reads the block index of the latest slice's base HFile and only the data blocks
holding those prefixes (``hfile_range``), then the slice's log files (whose HFile blocks are
read the same way), and folds the wanted keys as the metadata table's compaction folds them
(``file_group_fold``: log records merged in block order, rolled-back and uncommitted blocks
and blocks of invalid data instants dropped, then merged onto the base record).

A stored record becomes the ``ColumnRange`` the file's footer / log blocks give
(``file_ranges``): index version 2 records carry their value type; a version 1 record's
type is the schema kind its wrapper matches (a timestamp's ``LongWrapper`` read back as the
instant), else the wrapper's own primitive type. A file whose records do not read back
exactly (re-wrapping gives other bytes) is left out, as is a file without records (Lance
base files have none): the caller computes those from the files.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from lakecore.errors import CorruptTableError
from lakecore.storage import Storage
from lakecore_hudi.log.delete_blocks import decode_delete_block
from lakecore_hudi.log.format import BlockType, LogBlock, read_log_blocks
from lakecore_hudi.log.scanner import order_log_blocks
from lakecore_hudi.mdt import column_stats_records as csr
from lakecore_hudi.mdt.column_stats import _block_records, _load_timeline, _slice_files
from lakecore_hudi.mdt.file_groups import file_group_id, file_group_index
from lakecore_hudi.mdt.files_partition import is_init_instant, valid_data_instants
from lakecore_hudi.mdt.hfile_range import Reader, read_prefixed_cells
from lakecore_hudi.mdt.records import decode_records, parse_schema, unwrap_stat_value
from lakecore_hudi.mdt.stats_keys import column_id, file_id, partition_id
from lakecore_hudi.mdt.stats_values import NULL_KIND, ColumnRange, ValueKind
from lakecore_hudi.mdt.stats_wrappers import wrap
from lakecore_hudi.mdt.table import metadata_config, metadata_storage
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.view import FileSlice, latest_slices

__all__ = ["record_range", "stored_file_ranges"]

PARTITION = csr.PARTITION
_FILE_ID_LENGTH = len(file_id(""))
"""A key's ``FileIndexID`` part: the rest, column and partition ids, is its range prefix."""
Record = dict[str, Any]

# The primitive kind a version-1 wrapper names (a timestamp or time stays its primitive).
_V1_WRAPPER_KINDS = {
    "BooleanWrapper": ValueKind("BOOLEAN"),
    "IntWrapper": ValueKind("INT"),
    "LongWrapper": ValueKind("LONG"),
    "FloatWrapper": ValueKind("FLOAT"),
    "DoubleWrapper": ValueKind("DOUBLE"),
    "StringWrapper": ValueKind("STRING"),
    "BytesWrapper": ValueKind("BYTES"),
    "DateWrapper": ValueKind("DATE"),
    "DecimalWrapper": ValueKind("DECIMAL", 30, 15),
    "TimestampMicrosWrapper": ValueKind("TIMESTAMP_MICROS"),
}


def stored_file_ranges(
    storage: Storage,
    config: TableConfig,
    files: Mapping[str, Sequence[str]],
    columns: Sequence[str],
    kinds: Mapping[str, ValueKind],
) -> dict[tuple[str, str], list[ColumnRange]]:
    """(partition, file name) -> the ranges of ``columns`` the ``column_stats`` partition
    holds for it, in ``columns`` order, for the files of ``files`` (partition -> file names)
    that have records which read back exactly (see the module docstring); ``kinds`` maps a
    column to its schema kind (version 1 records need it for timestamps and times).

    {} when the table has no built ``column_stats`` partition. The metadata table must hold
    nothing newer than the state the caller wants (the caller holds the table lock and no
    completed data instant is later than its own).

    Raises:
        CorruptTableError: a metadata-table file is unreadable (names it).
        UnsupportedFeatureError: a metadata-table file uses a feature lakecore cannot read.
    """
    if PARTITION not in config.metadata_partitions or PARTITION in (
        config.metadata_partitions_inflight
    ):
        return {}
    mdt = metadata_storage(storage)
    mconfig = metadata_config(mdt)
    if mconfig is None:
        return {}
    timeline = _load_timeline(storage, mconfig)
    completed, first = valid_data_instants(storage, config)

    def live(instant: str) -> bool:
        valid = is_init_instant(instant) or instant in completed
        valid = valid or (first is not None and instant < first)
        return valid and timeline.block_is_live(instant)

    listing = _slice_files(mdt.list_dir(PARTITION))
    groups = len({f.name.file_id for f in listing})
    if groups == 0:
        return {}
    slices = {s.file_id: s for s in latest_slices(listing, timeline.visible, True)}
    wanted: dict[str, dict[str, tuple[str, str, str]]] = {}  # group -> key -> (part, file, col)
    for partition, names in files.items():
        pid = partition_id(partition)
        for name in names:
            fid = file_id(name)
            for column in columns:
                key = column_id(column) + pid + fid
                index = file_group_index(csr.routing_key(key, mconfig.table_version), groups)
                routed = wanted.setdefault(file_group_id(PARTITION, index), {})
                routed[key] = (partition, name, column)
    found: dict[tuple[str, str], dict[str, ColumnRange]] = {}
    broken: set[tuple[str, str]] = set()
    for group, keys in sorted(wanted.items()):
        file_slice = slices.get(group)
        if file_slice is None:
            continue
        for key, record in _fold(mdt, file_slice, keys.keys(), live).items():
            partition, name, column = keys[key]
            where = (partition, name)
            r = record_range(record["ColumnStatsMetadata"], kinds.get(column))
            if r is None or r.name != name or r.column != column:
                broken.add(where)
            else:
                found.setdefault(where, {})[column] = r
    return {
        where: [ranges[c] for c in columns if c in ranges]
        for where, ranges in found.items()
        if where not in broken
    }


def record_range(payload: Mapping[str, Any], kind: ValueKind | None) -> ColumnRange | None:
    """The ``ColumnRange`` a live ``column_stats`` payload stores, as ``file_ranges`` gives it
    (``kind``: the column's schema kind); None when it does not read back exactly."""
    try:
        r = csr.range_of(payload)
    except ValueError:
        return None
    if r.kind is not None:
        return r
    low, high = payload.get("minValue"), payload.get("maxValue")
    wrapper = next((str(w[0]).rsplit(".", 1)[-1] for w in (low, high) if w is not None), None)
    candidates = [kind] if kind is not None else []
    if wrapper is None:
        candidates.append(NULL_KIND)
    elif wrapper in _V1_WRAPPER_KINDS:
        candidates.append(_V1_WRAPPER_KINDS[wrapper])
    for candidate in candidates:
        values = [_v1_value(w, candidate) for w in (low, high)]
        if all(wrap(v, candidate, False) == w for v, w in zip(values, (low, high), strict=True)):
            return ColumnRange(
                r.name,
                r.column,
                values[0],
                values[1],
                r.null_count,
                r.value_count,
                r.total_size,
                r.total_uncompressed_size,
                candidate,
            )
    return None


def _v1_value(wrapped: Any, kind: ValueKind) -> Any:
    """A version-1 bound read as ``kind``: timestamps and times are stored as their primitive
    and read back as the instant / time of day, as the footer gives them."""
    if wrapped is None:
        return None
    try:
        if kind.name.startswith(("TIMESTAMP_", "LOCAL_TIMESTAMP_", "TIME_")):
            return unwrap_stat_value(wrapped, kind.value_type())
        return unwrap_stat_value(wrapped, None)
    except (ValueError, TypeError, OverflowError):
        return None


# ------------------------------------------------------------------- folding


def _fold(
    mdt: Storage,
    file_slice: FileSlice,
    keys: Iterable[str],
    live: Callable[[str], bool],
) -> dict[str, Record]:
    """key -> live record of ``keys`` in ``file_slice`` (``file_group_fold.fold_slice``,
    restricted to ``keys``)."""
    wanted = frozenset(keys)
    prefixes = sorted({k[: len(k) - _FILE_ID_LENGTH].encode("ascii") for k in wanted})
    base: dict[str, Record] = {}
    if file_slice.base_file is not None:
        info = file_slice.base_file
        path = info.path

        def read(start: int, end: int) -> bytes:
            return mdt.read(path, start, end)

        base = _records(read, info.size, path, None, prefixes, wanted)
    state: dict[str, Record | None] = {}
    blocks = [
        b
        for f in file_slice.log_files
        for b in read_log_blocks(mdt.read(f.path), f.path, skip_corrupt=True)
    ]
    for block in order_log_blocks(blocks, live):
        for key, record in _block(block, prefixes, wanted):
            state[key] = None if record is None else csr.merge(state.get(key), record)
    out = dict(base)
    for key, record in state.items():
        result = None if record is None else csr.merge(base.get(key), record)
        if result is None or result["ColumnStatsMetadata"]["isDeleted"]:
            out.pop(key, None)
        else:
            out[key] = result
    return {k: v for k, v in out.items() if not v["ColumnStatsMetadata"]["isDeleted"]}


def _block(
    block: LogBlock, prefixes: Sequence[bytes], wanted: frozenset[str]
) -> list[tuple[str, Record | None]]:
    if block.block_type == BlockType.DELETE:
        keys = decode_delete_block(block).column("record_key").to_pylist()
        return [(str(k), None) for k in keys if str(k) in wanted]
    if block.block_type == BlockType.HFILE_DATA:
        content = bytes(block.content)
        where = f"{block.path} (log block at byte {block.offset})"

        def read(start: int, end: int) -> bytes:
            return content[start:end]

        found = _records(read, len(content), where, block.schema, prefixes, wanted)
        return list(found.items())
    if block.block_type == BlockType.AVRO_DATA:
        records = _block_records(block)
        return [(r.key, {**r.record, "key": r.key}) for r in records if r.key in wanted]
    return []


def _records(
    read: Reader,
    size: int,
    path: str,
    schema_json: str | None,
    prefixes: Sequence[bytes],
    wanted: frozenset[str],
) -> dict[str, Record]:
    cells, info = read_prefixed_cells(read, size, path, prefixes)
    cells = [c for c in cells if c[0].decode("ascii", "replace") in wanted]
    if not cells:
        return {}
    if schema_json is None:
        raw = info.get(b"schema")
        if raw is None:
            raise CorruptTableError(f"{path}: HFile holds no record schema in its file info")
        schema_json = raw.decode("utf-8", "replace")
    records = decode_records(cells, parse_schema(schema_json, path), path)
    return {r.key: {**r.record, "key": r.key} for r in records}
