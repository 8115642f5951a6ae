"""What the maintenance machinery knows about each metadata-table partition it keeps.

Every maintained partition is a ``PartitionSpec``: the records a data instant adds to it
(``commit_records``), Hudi's payload merge of two records of one key (``merge``), the string
Hudi hashes to pick a record's file group (``routing_key``), how many file groups Hudi gives
the partition when it initialises it, and the form a record takes in a compacted base file
(``compacted``). The ``files`` partition is one like the others; the index partitions come
from their generator modules (``<name>_records``, the session contract ``mdt_contract.md``),
wired here one by one once each is tested end to end (``WIRED``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lakecore_hudi.mdt.files_records import FileListing, listing_records
from lakecore_hudi.mdt.index_context import IndexContext
from lakecore_hudi.timeline.commit_metadata import CommitMetadata

__all__ = [
    "FILES",
    "WIRED",
    "PartitionSpec",
    "commit_listing",
    "is_maintained",
    "spec_for",
]

Record = dict[str, Any]


@dataclass(frozen=True)
class PartitionSpec:
    """One maintained metadata-table partition (see the module docstring).

    ``merge(older, newer)`` returns None when the key is deleted; ``compacted(record)``
    returns None when a compacted base file must not hold the record.
    """

    name: str
    commit_records: Callable[[IndexContext], list[Record]]
    merge: Callable[[Record | None, Record], Record | None]
    routing_key: Callable[[str, int], str]
    default_file_groups: int
    compacted: Callable[[Record], Record | None] = lambda record: record
    """A generator module's ``compacted`` when it has one (column stats: a lone tombstone
    leaves the compacted base file)."""


def commit_listing(meta: CommitMetadata) -> FileListing:
    """The files a data commit adds, from its write stats (name and size of each file)."""
    added: dict[str, dict[str, int]] = {}
    for partition, stats in meta.partition_to_write_stats.items():
        for stat in stats:
            if stat.path:
                name = stat.path.rsplit("/", 1)[-1]
                added.setdefault(partition, {})[name] = stat.file_size_in_bytes
    return FileListing(added)


def _files_records(ctx: IndexContext) -> list[Record]:
    if ctx.meta is None:
        return listing_records(FileListing({}, deleted=ctx.cleaned))
    return listing_records(commit_listing(ctx.meta))


def _files_merge(older: Record | None, newer: Record) -> Record | None:
    """HoodieMetadataPayload's file-list merge: newer entries win, two live entries of one
    file keep the larger size (a log file listed by several appends); a tombstone stays a
    tombstone so that merging in any grouping folds the same (``compacted`` drops them)."""
    if older is None:
        return newer
    files = dict(older.get("filesystemMetadata") or {})
    for name, info in (newer.get("filesystemMetadata") or {}).items():
        old = files.get(name)
        if old is not None and not old["isDeleted"] and not info["isDeleted"]:
            files[name] = {"size": max(int(old["size"]), int(info["size"])), "isDeleted": False}
        else:
            files[name] = info
    return {**newer, "filesystemMetadata": files}


def _files_compacted(record: Record) -> Record | None:
    files = record.get("filesystemMetadata") or {}
    live = {n: i for n, i in files.items() if not i["isDeleted"]}
    return {**record, "filesystemMetadata": live}


FILES = PartitionSpec(
    name="files",
    commit_records=_files_records,
    merge=_files_merge,
    routing_key=lambda key, _version: key,
    default_file_groups=1,
    compacted=_files_compacted,
)

WIRED: Mapping[str, str] = {
    "column_stats": "lakecore_hudi.mdt.column_stats_records",
    "partition_stats": "lakecore_hudi.mdt.partition_stats_records",
    "record_index": "lakecore_hudi.mdt.record_index_records",
    "secondary_index_": "lakecore_hudi.mdt.secondary_index_records",
}
"""Index partitions (or, for secondary indexes, the partition name prefix) -> the generator
module maintaining them. Only partitions tested end to end are listed."""

_SECONDARY = "secondary_index_"


def _module_for(partition: str) -> str | None:
    if partition in WIRED:
        return WIRED[partition]
    if partition.startswith(_SECONDARY) and _SECONDARY in WIRED:
        return WIRED[_SECONDARY]
    return None


def is_maintained(partition: str) -> bool:
    """Whether lakecore keeps metadata partition ``partition`` up to date."""
    return partition == FILES.name or _module_for(partition) is not None


def spec_for(partition: str) -> PartitionSpec:
    """The spec of maintained partition ``partition``.

    Raises:
        KeyError: ``partition`` is not maintained (``is_maintained``).
    """
    if partition == FILES.name:
        return FILES
    module_name = _module_for(partition)
    if module_name is None:
        raise KeyError(partition)
    module = importlib.import_module(module_name)
    default = int(getattr(module, "DEFAULT_FILE_GROUPS", 1))
    return PartitionSpec(
        name=partition,
        commit_records=_for_partition(module, partition),
        merge=module.merge,
        routing_key=module.routing_key,
        default_file_groups=default,
        compacted=getattr(module, "compacted", _as_is),
    )


def _as_is(record: Record) -> Record | None:
    return record


def _for_partition(module: Any, partition: str) -> Callable[[IndexContext], list[Record]]:
    """The secondary index module serves every secondary index partition: it is told which
    (``commit_records(ctx, partition)``)."""
    if not partition.startswith(_SECONDARY):
        return module.commit_records  # type: ignore[no-any-return]

    def records(ctx: IndexContext) -> list[Record]:
        return module.commit_records(ctx, partition)  # type: ignore[no-any-return]

    return records
