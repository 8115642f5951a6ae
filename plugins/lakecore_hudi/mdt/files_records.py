"""Records of the metadata table's ``files`` partition: encoding, merging, external files.

The ``files`` partition lists the data table's partitions and files. Every record is a
``HoodieMetadataRecord`` whose ``filesystemMetadata`` maps a name to
``HoodieMetadataFileInfo {size, isDeleted}``:

- type 1, key ``__all_partitions__``: the partition paths (size 0); a deleted partition has
  ``isDeleted`` true;
- type 2, key the partition path (``.`` for the table root of a non-partitioned table): file
  names of that partition with their sizes; a file removed by a clean or rollback has
  ``isDeleted`` true.

Records of one key fold as Hudi's ``HoodieMetadataPayload`` folds them: an entry of the newer
record replaces the older one, except that two live entries of one file keep the larger size
(a log file appended to by several commits is listed by each); a deleted entry removes the
file. Readers list only live entries.

External files (files not named by Hudi's scheme, such as a Delta table's Parquet files a
zero-copy migration adopts) are listed under ``<file name>_<commit time>_hudiext`` (Hudi's
``ExternalFilePathUtil``); a file inside a sub-directory ``d`` of the partition gets
``<file name>_<commit time>_fg%3D<d, URL-encoded>_hudiext``. Hudi strips the suffix to find
the file, uses the file name (``d/<file name>`` with a prefix) as the file group id and the
commit time as the base instant.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lakecore_hudi.mdt.record_codec import encode_record_cells
from lakecore_hudi.mdt.record_schema import metadata_record_schema_json

__all__ = [
    "ALL_PARTITIONS",
    "FILE_LIST",
    "NON_PARTITIONED",
    "PARTITION_LIST",
    "FileListing",
    "encode_cells",
    "external_file_name",
    "fold_listing",
    "listing_records",
    "partition_key",
    "partition_path",
    "schema_json",
]

ALL_PARTITIONS = "__all_partitions__"
NON_PARTITIONED = "."
PARTITION_LIST = 1
FILE_LIST = 2
EXTERNAL_SUFFIX = "_hudiext"


def schema_json(table_version: int = 8) -> str:
    """The writer schema of a data table of ``table_version``, as the text Hudi writes
    (file info, SCHEMA header, commit metadata)."""
    return metadata_record_schema_json(table_version)


def partition_key(partition: str) -> str:
    """The metadata-table key of a data partition path (``""`` is the table root: ``.``)."""
    return partition or NON_PARTITIONED


def partition_path(key: str) -> str:
    """The data partition path of a ``partition_key``."""
    return "" if key == NON_PARTITIONED else key


def external_file_name(file_name: str, commit_time: str, prefix: str | None = None) -> str:
    """The name a file not named by Hudi's scheme is listed under (see the module docstring).

    ``prefix`` is the sub-directory of the partition the file lives in, if any.
    """
    marker = f"_fg%3D{urllib.parse.quote(prefix, safe='')}" if prefix else ""
    return f"{file_name}_{commit_time}{marker}{EXTERNAL_SUFFIX}"


@dataclass(frozen=True, slots=True)
class FileListing:
    """The change one instant makes to the ``files`` partition.

    ``added``: partition path -> file name -> size in bytes (for a log file, its whole size
    after the instant's append). ``deleted``: partition path -> removed file names.
    ``deleted_partitions``: partition paths that no longer exist.
    """

    added: Mapping[str, Mapping[str, int]]
    deleted: Mapping[str, Iterable[str]] = field(default_factory=dict)
    deleted_partitions: Iterable[str] = ()


def listing_records(change: FileListing) -> list[dict[str, Any]]:
    """The ``HoodieMetadataRecord`` values (Avro-ready dicts) of one instant's change.

    As Hudi does, every partition the instant touched is (re)listed in ``__all_partitions__``,
    and each touched partition gets one file-list record.
    """
    deleted = dict(change.deleted)
    touched = sorted(set(change.added) | set(deleted))
    parts = {partition_key(p): _info(0, False) for p in touched}
    parts.update({partition_key(p): _info(0, True) for p in change.deleted_partitions})
    records = [_record(ALL_PARTITIONS, PARTITION_LIST, parts)]
    for p in touched:
        files = {n: _info(s, False) for n, s in change.added.get(p, {}).items()}
        files.update({n: _info(0, True) for n in deleted.get(p, ())})
        records.append(_record(partition_key(p), FILE_LIST, files))
    return records


def fold_listing(records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Fold ``files``-partition records (oldest first) into key -> live name -> size.

    Keys are record keys: ``__all_partitions__`` and partition keys (``partition_key``).
    """
    merged: dict[str, dict[str, dict[str, Any]]] = {}
    for record in records:
        key = record.get("key")
        files = record.get("filesystemMetadata")
        if not isinstance(key, str) or not isinstance(files, dict):
            continue
        current = merged.setdefault(key, {})
        for name, info in files.items():
            old = current.get(name)
            if info.get("isDeleted"):
                current.pop(name, None)
            elif old is not None:
                current[name] = _info(max(int(old["size"]), int(info["size"])), False)
            else:
                current[name] = _info(int(info["size"]), False)
    return {k: {n: int(i["size"]) for n, i in v.items()} for k, v in merged.items()}


def encode_cells(
    records: Iterable[Mapping[str, Any]], table_version: int = 8
) -> list[tuple[bytes, bytes]]:
    """HFile cells (row key, Avro value) of metadata records of any partition in the writer
    schema of ``table_version`` (``schema_json``), sorted by key (``record_codec``).

    Raises:
        ValueError: two records share a key (they must have been combined already).
    """
    return encode_record_cells(records, table_version)


def combine(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Records of the same key combined into one (newer entries win, as ``fold_listing``),
    keeping deletion markers so that a log block can carry them."""
    merged: dict[str, dict[str, Any]] = {}
    for record in records:
        key = str(record["key"])
        if key not in merged:
            merged[key] = {**record, "filesystemMetadata": dict(record["filesystemMetadata"])}
            continue
        files = merged[key]["filesystemMetadata"]
        for name, info in record["filesystemMetadata"].items():
            old = files.get(name)
            if old is not None and not old["isDeleted"] and not info["isDeleted"]:
                files[name] = _info(max(old["size"], info["size"]), False)
            else:
                files[name] = info
    return list(merged.values())


def snapshot_records(listing: Mapping[str, Mapping[str, int]]) -> list[dict[str, Any]]:
    """Records holding a folded listing (``fold_listing``'s result): a compacted base file."""
    records = []
    for key, files in sorted(listing.items()):
        kind = PARTITION_LIST if key == ALL_PARTITIONS else FILE_LIST
        records.append(_record(key, kind, {n: _info(s, False) for n, s in files.items()}))
    return records


def _record(key: str, kind: int, files: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {"key": key, "type": kind, "filesystemMetadata": files}


def _info(size: int, deleted: bool) -> dict[str, Any]:
    return {"size": size, "isDeleted": deleted}
