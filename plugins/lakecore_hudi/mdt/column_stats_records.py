"""Records of the metadata table's ``column_stats`` partition, as Hudi 1.x writes them.

One record per (data file, indexed column), type 3, key ``stats_keys.column_stats_key``,
payload ``ColumnStatsMetadata`` (``stats_wrappers.stats_payload``):

- a write, delta commit, compaction or replace commit adds the ranges of every file its write
  stats name (``file_ranges``: Parquet footers for base files, the instant's log blocks for
  log files; Lance base files get none). Replaced file groups get nothing: their records stay
  until a clean deletes the files (Hudi's ``convertMetadataToColumnStatsRecords`` reads the
  write stats only; the corpus insert-overwrite shows the same);
- a clean adds a tombstone (``isDeleted``, no bounds, counts -1: Hudi's
  ``HoodieColumnRangeMetadata.stub``) for every indexed column of every deleted file.

Indexed columns (Hudi's ``getColumnsToIndex``): the ``sourceFields`` of the ``column_stats``
index definition (``.hoodie/.index_defs/index.json``); without one, the meta fields
``_hoodie_commit_time``, ``_hoodie_record_key``, ``_hoodie_partition_path`` (when the table
populates meta fields) and the first 32 top-level columns of the writer schema of a type
Hudi indexes (not nested, no decimal wider than the wrapper's decimal(30, 15)). The index
version is the definition's ``version`` (``V1``/``V2``), by default 1 for table version 8 and
2 for table version 9 (``stats_values`` explains the difference).

Records with the same key fold with ``merge`` (Hudi's ``HoodieMetadataPayload`` merge of
column stats: a tombstone deletes the key, a tight-bound newer record wins, otherwise the
ranges combine); a compacted base file holds no tombstone (``compacted``). They route to file
groups by their whole key (``routing_key``); Hudi gives the partition 2 file groups.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa

from lakecore.errors import UnsupportedFeatureError
from lakecore_hudi.avro_schema import avro_to_arrow
from lakecore_hudi.mdt.file_groups import FILE_ID_PREFIXES
from lakecore_hudi.mdt.file_ranges import file_ranges
from lakecore_hudi.mdt.index_context import IndexContext
from lakecore_hudi.mdt.records import unwrap_stat_value
from lakecore_hudi.mdt.stats_keys import column_stats_key
from lakecore_hudi.mdt.stats_values import (
    NULL_KIND,
    ColumnRange,
    combine,
    java_order_key,
    kind_of,
    kind_of_value_type,
)
from lakecore_hudi.mdt.stats_wrappers import stats_payload, wrap
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.timeline.commit_metadata import CommitMetadata

__all__ = [
    "DEFAULT_FILE_GROUPS",
    "FILE_ID_PREFIX",
    "PARTITION",
    "RECORD_TYPE",
    "column_stats_record",
    "columns_to_index",
    "commit_records",
    "compacted",
    "ensure_supported",
    "index_definition",
    "index_version",
    "merge",
    "range_of",
    "routing_key",
    "writer_schema",
    "written_ranges",
]

PARTITION = "column_stats"
FILE_ID_PREFIX = FILE_ID_PREFIXES[PARTITION]
RECORD_TYPE = 3
"""``HoodieMetadataRecord.type`` of a column-stats record."""

DEFAULT_FILE_GROUPS = 2
"""File groups Hudi gives the partition
(``hoodie.metadata.index.column.stats.file.group.count``)."""
MAX_COLUMNS = 32
"""Hudi's ``hoodie.metadata.index.column.stats.max.columns.to.index`` default."""
READERS = 8
"""Files whose footers / log blocks are read at once."""

META_COLUMNS = ("_hoodie_commit_time", "_hoodie_record_key", "_hoodie_partition_path")
_ALL_META = frozenset(
    (*META_COLUMNS, "_hoodie_commit_seqno", "_hoodie_file_name", "_hoodie_operation")
)


def index_definition(index_defs: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    """The definition of index ``name`` in a parsed ``index.json`` (or its
    ``indexDefinitions`` map); None when absent."""
    definitions = index_defs.get("indexDefinitions", index_defs)
    found = definitions.get(name) if isinstance(definitions, Mapping) else None
    return found if isinstance(found, Mapping) else None


def ensure_supported(index_defs: Mapping[str, Any], table_version: int) -> None:
    """Refuse stats indexes lakecore cannot keep as Hudi does: an index version other than
    V1/V2, version 2 on a table version before 9 (its record schema has no ``valueType``), or
    a ``column_stats`` definition computing something other than plain column statistics.
    Call it before any data file is written (``commit_records`` calls it too).

    Raises:
        UnsupportedFeatureError: naming the partition and what is not supported.
    """
    for name in (PARTITION, "partition_stats"):
        version = index_version(index_defs, name, table_version)
        if version not in (1, 2) or (version == 2 and table_version < 9):
            raise UnsupportedFeatureError(
                f"hudi-metadata-{name}-index-version-{version}",
                f"the metadata table's {name} index is version {version} on a table of "
                f"version {table_version}; lakecore writes versions 1 and 2 (2 from table "
                "version 9)",
            )
    definition = index_definition(index_defs, PARTITION) or {}
    function = str(definition.get("indexFunction") or PARTITION)
    if function != PARTITION:
        raise UnsupportedFeatureError(
            f"hudi-metadata-column_stats-function-{function}",
            f"the metadata table's column_stats index applies function {function!r}; "
            "lakecore keeps plain column statistics only",
        )


def index_version(index_defs: Mapping[str, Any], name: str, table_version: int) -> int:
    """The index version (1 or 2) of metadata partition ``name``: its definition's
    ``version``, else Hudi's default for the table version (8: 1, 9 and later: 2)."""
    definition = index_definition(index_defs, name) or {}
    version = str(definition.get("version") or "")
    if version.upper().startswith("V") and version[1:].isdigit():
        return int(version[1:])
    return 2 if table_version >= 9 else 1


def columns_to_index(
    config: TableConfig, index_defs: Mapping[str, Any], schema: pa.Schema | None
) -> list[str]:
    """The columns Hudi indexes (see the module docstring); ``schema`` is the writer schema
    without meta fields (None: the table's create schema)."""
    definition = index_definition(index_defs, PARTITION)
    fields = definition.get("sourceFields") if definition is not None else None
    if isinstance(fields, list) and fields:
        return [str(f) for f in fields]
    if schema is None:
        create = config.create_schema
        schema = avro_to_arrow(create) if create else pa.schema([])
    data = [f.name for f in schema if f.name not in _ALL_META and _indexable(f.type)]
    meta = list(META_COLUMNS) if config.populate_meta_fields else []
    return meta + data[:MAX_COLUMNS]


def _indexable(t: pa.DataType) -> bool:
    """Hudi's ``isColumnTypeSupported``: no nested types, and no decimal that does not fit
    the ``DecimalWrapper``'s decimal(30, 15) (precision + 15 - scale > 30, or scale > 15)."""
    kind = kind_of(t)
    if kind is None:
        return False
    return kind.name != "DECIMAL" or (kind.precision + 15 - kind.scale <= 30 and kind.scale <= 15)


def writer_schema(meta: CommitMetadata | None) -> pa.Schema | None:
    """The writer schema ``meta`` records (Hudi's ``schema`` extra metadata), as Arrow."""
    text = meta.schema if meta is not None else None
    return avro_to_arrow(text) if text else None


def commit_records(ctx: IndexContext) -> list[dict[str, Any]]:
    """The ``column_stats`` records data instant ``ctx.instant`` adds (module docstring).

    Reads the footer of every base file and the instant's blocks of every log file the
    write stats name, in threads.

    Raises:
        CorruptTableError: a written file is unreadable (names it).
        FileNotFoundError: a file the write stats name is missing.
        UnsupportedFeatureError: a base file format other than Parquet or Lance, or an index
            ``ensure_supported`` refuses.
    """
    ensure_supported(ctx.index_defs, ctx.table_version)
    columns = columns_to_index(ctx.config, ctx.index_defs, writer_schema(ctx.meta))
    version2 = index_version(ctx.index_defs, PARTITION, ctx.table_version) >= 2
    if not columns:
        return []
    if ctx.meta is None:
        return _tombstones(ctx.cleaned, columns, version2)
    out: list[dict[str, Any]] = []
    for partition, ranges in written_ranges(ctx, columns).items():
        out.extend(column_stats_record(partition, r, version2) for r in ranges)
    return out


def written_ranges(ctx: IndexContext, columns: Sequence[str]) -> dict[str, list[ColumnRange]]:
    """Partition path -> the ranges of ``columns`` of every file ``ctx.meta``'s write stats
    name (log files: the blocks ``ctx.instant`` wrote), in write-stat order."""
    if ctx.meta is None:
        return {}
    stats = [s for s in ctx.meta.write_stats() if s.path]
    only_this: Callable[[str], bool] = ctx.instant.__eq__

    def one(path: str) -> list[ColumnRange]:
        return file_ranges(ctx.storage, path, columns, only_this)

    with ThreadPoolExecutor(READERS) as pool:
        ranges = list(pool.map(one, [str(s.path) for s in stats]))
    out: dict[str, list[ColumnRange]] = {}
    for stat, found in zip(stats, ranges, strict=True):
        out.setdefault(stat.partition_path or "", []).extend(found)
    return out


def _tombstones(
    cleaned: Mapping[str, Sequence[str]], columns: Sequence[str], version2: bool
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for partition, names in cleaned.items():
        for name in names:
            file_name = name.rsplit("/", 1)[-1]
            for column in columns:
                stub = ColumnRange(file_name, column, None, None, -1, -1, -1, -1, NULL_KIND)
                out.append(column_stats_record(partition, stub, version2, is_deleted=True))
    return out


def column_stats_record(
    partition: str, stats: ColumnRange, version2: bool, *, is_deleted: bool = False
) -> dict[str, Any]:
    """The ``HoodieMetadataRecord`` of one file's column range (meta fields unset, as in
    Hudi's log blocks)."""
    return {
        "key": column_stats_key(partition, stats.name, stats.column),
        "type": RECORD_TYPE,
        "ColumnStatsMetadata": stats_payload(stats, version2=version2, is_deleted=is_deleted),
    }


def range_of(payload: Mapping[str, Any]) -> ColumnRange:
    """The range a stored ``ColumnStatsMetadata`` holds (values unwrapped by their type).

    Raises:
        ValueError: an unreadable min/max or value type.
    """
    value_type = payload.get("valueType")
    kind = kind_of_value_type(value_type)
    return ColumnRange(
        name=str(payload.get("fileName") or ""),
        column=str(payload.get("columnName") or ""),
        min_value=unwrap_stat_value(payload.get("minValue"), value_type),
        max_value=unwrap_stat_value(payload.get("maxValue"), value_type),
        null_count=_count(payload.get("nullCount")),
        value_count=_count(payload.get("valueCount")),
        total_size=_count(payload.get("totalSize")),
        total_uncompressed_size=_count(payload.get("totalUncompressedSize")),
        kind=kind,
    )


def _count(value: Any) -> int:
    return value if isinstance(value, int) else 0


def merge(older: dict[str, Any] | None, newer: dict[str, Any]) -> dict[str, Any] | None:
    """Hudi's merge of two column-stats (or partition-stats) records with the same key.

    A tombstone folded onto an older record deletes the key: None (Hudi's payload is then a
    deleted record, which its compaction drops and its readers skip). A tombstone with nothing
    older is kept (it must reach the log block). A newer record replaces an older tombstone,
    and a tight-bound newer record any older one; otherwise the ranges combine (newer file
    name, min of the mins, max of the maxes, counts and sizes summed), keeping the stored
    wrappers that hold the bounds.
    """
    if older is None:
        return newer
    old, new = older["ColumnStatsMetadata"], newer["ColumnStatsMetadata"]
    if new["isDeleted"]:
        return None
    if old["isDeleted"] or new.get("isTightBound"):
        return newer
    combined = combine(range_of(old), range_of(new))
    payload = dict(new)
    payload.update(
        minValue=_bound(combined.min_value, old, new, "minValue"),
        maxValue=_bound(combined.max_value, old, new, "maxValue"),
        valueCount=combined.value_count,
        nullCount=combined.null_count,
        totalSize=combined.total_size,
        totalUncompressedSize=combined.total_uncompressed_size,
    )
    return {**newer, "ColumnStatsMetadata": payload}


def compacted(record: dict[str, Any]) -> dict[str, Any] | None:
    """The record a compacted base file holds for a folded record: None for a tombstone
    (Hudi's ``getInsertValue`` of a deleted column-stats payload is empty)."""
    return None if record["ColumnStatsMetadata"]["isDeleted"] else record


def _bound(value: Any, old: Mapping[str, Any], new: Mapping[str, Any], field: str) -> Any:
    """The stored wrapper holding ``value`` (the newer one on ties), re-wrapped if neither."""
    target = java_order_key(value) if value is not None else None
    for payload in (new, old):
        stored = unwrap_stat_value(payload.get(field), payload.get("valueType"))
        # Java order, not ==: -0.0 and 0.0 are different bounds to Hudi.
        if stored is not None and target is not None and java_order_key(stored) == target:
            return payload.get(field)
    kind = kind_of_value_type(new.get("valueType"))
    return wrap(value, kind, new.get("valueType") is not None)


def routing_key(key: str, table_version: int) -> str:
    """The string Hudi hashes to pick a column-stats record's file group: the whole key."""
    return key
