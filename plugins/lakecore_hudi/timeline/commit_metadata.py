"""Commit metadata: what a commit, deltacommit or replacecommit wrote, decoded and encoded.

``CommitMetadata`` (``HoodieCommitMetadata`` / ``HoodieReplaceCommitMetadata``) lists the
instant's ``WriteStat``s per partition, the file groups a replacecommit replaced, and extra
metadata such as the writer's Avro schema. It is read from JSON (table versions <= 7) or an
Avro container (version 8+), whichever the bytes are; it is written the way Hudi of the
table's version writes it. Malformed content raises ``CorruptTableError`` naming the file.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lakecore.errors import CorruptTableError
from lakecore_hudi.timeline import avro_schemas
from lakecore_hudi.timeline.payload import (
    as_int,
    decode_payload,
    encode_avro,
    int_map,
    opt_int,
    opt_str,
    str_map,
    str_tuple,
)


@dataclass(frozen=True, slots=True)
class WriteStat:
    """What one commit wrote into one file group (``HoodieWriteStat``).

    ``path`` is relative to the table root (a base file, or for MOR updates a log file).
    ``prev_commit`` is the instant of the slice this write built on; Hudi writes the string
    ``"null"`` for none, which reads as None here (and is written back as ``"null"``).
    """

    file_id: str
    path: str | None
    partition_path: str | None = None
    prev_commit: str | None = None
    num_writes: int = 0
    num_deletes: int = 0
    num_inserts: int = 0
    num_update_writes: int = 0
    total_write_bytes: int = 0
    total_write_errors: int = 0
    file_size_in_bytes: int = 0
    total_log_records: int = 0
    total_log_blocks: int = 0
    total_log_files_compacted: int = 0
    total_log_size_compacted: int = 0
    total_updated_records_compacted: int = 0
    total_corrupt_log_block: int = 0
    total_rollback_blocks: int = 0
    base_file: str | None = None
    log_files: tuple[str, ...] = ()
    log_version: int | None = None
    log_offset: int | None = None
    prev_base_file: str | None = None
    min_event_time: int | None = None
    max_event_time: int | None = None
    temp_path: str | None = None
    cdc_stats: Mapping[str, int] | None = None

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> WriteStat:
        """Build from a decoded ``HoodieWriteStat`` (JSON or Avro field names)."""
        prev = opt_str(raw.get("prevCommit"))
        cdc = raw.get("cdcStats")
        return cls(
            file_id=str(raw.get("fileId") or ""),
            path=opt_str(raw.get("path")),
            partition_path=opt_str(raw.get("partitionPath")),
            prev_commit=None if prev in (None, "null") else prev,
            **{name: as_int(raw.get(key)) for name, key in _COUNTERS.items()},
            base_file=opt_str(raw.get("baseFile")),
            log_files=str_tuple(raw.get("logFiles")),
            log_version=opt_int(raw.get("logVersion")),
            log_offset=opt_int(raw.get("logOffset")),
            prev_base_file=opt_str(raw.get("prevBaseFile")),
            min_event_time=opt_int(raw.get("minEventTime")),
            max_event_time=opt_int(raw.get("maxEventTime")),
            temp_path=opt_str(raw.get("tempPath")),
            cdc_stats=int_map(cdc) if cdc else None,
        )

    def to_dict(self) -> dict[str, Any]:
        """The ``HoodieWriteStat`` field dict (valid for both the JSON and the Avro encoding)."""
        out: dict[str, Any] = {
            "fileId": self.file_id,
            "path": self.path,
            "prevCommit": self.prev_commit if self.prev_commit is not None else "null",
            "partitionPath": self.partition_path,
            **{key: getattr(self, name) for name, key in _COUNTERS.items()},
            "totalLogFiles": None,
            "numUpdates": None,
            "totalLogReadTimeMs": None,
            "logVersion": self.log_version,
            "logOffset": self.log_offset,
            "baseFile": self.base_file,
            "logFiles": list(self.log_files) if self.log_files else None,
            "cdcStats": dict(self.cdc_stats) if self.cdc_stats is not None else None,
            "prevBaseFile": self.prev_base_file,
            "minEventTime": self.min_event_time,
            "maxEventTime": self.max_event_time,
            "runtimeStats": None,
            "tempPath": self.temp_path,
        }
        return out


_AVRO_ONLY_STAT_FIELDS = ("totalLogFiles", "numUpdates", "totalLogReadTimeMs")

# WriteStat counter attribute -> Hudi field name.
_COUNTERS = {
    "num_writes": "numWrites",
    "num_deletes": "numDeletes",
    "num_inserts": "numInserts",
    "num_update_writes": "numUpdateWrites",
    "total_write_bytes": "totalWriteBytes",
    "total_write_errors": "totalWriteErrors",
    "file_size_in_bytes": "fileSizeInBytes",
    "total_log_records": "totalLogRecords",
    "total_log_blocks": "totalLogBlocks",
    "total_log_files_compacted": "totalLogFilesCompacted",
    "total_log_size_compacted": "totalLogSizeCompacted",
    "total_updated_records_compacted": "totalUpdatedRecordsCompacted",
    "total_corrupt_log_block": "totalCorruptLogBlock",
    "total_rollback_blocks": "totalRollbackBlocks",
}


@dataclass(frozen=True, slots=True)
class CommitMetadata:
    """``HoodieCommitMetadata`` / ``HoodieReplaceCommitMetadata`` of one instant.

    ``replace`` marks replace-commit metadata (``partition_to_replace_file_ids`` lists the file
    groups the instant replaced; it may be empty, e.g. an overwrite of an empty table).
    ``extra_metadata["schema"]`` holds the writer's Avro schema JSON.
    """

    partition_to_write_stats: Mapping[str, Sequence[WriteStat]] = field(default_factory=dict)
    operation_type: str | None = None
    extra_metadata: Mapping[str, str] = field(default_factory=dict)
    partition_to_replace_file_ids: Mapping[str, Sequence[str]] = field(default_factory=dict)
    compacted: bool = False
    replace: bool = False

    def __post_init__(self) -> None:
        # Normalize to dicts of tuples so that equality does not depend on list vs tuple.
        stats = {p: tuple(s) for p, s in self.partition_to_write_stats.items()}
        replaced = {p: tuple(ids) for p, ids in self.partition_to_replace_file_ids.items()}
        object.__setattr__(self, "partition_to_write_stats", stats)
        object.__setattr__(self, "partition_to_replace_file_ids", replaced)
        object.__setattr__(self, "extra_metadata", dict(self.extra_metadata))

    @property
    def schema(self) -> str | None:
        """The writer Avro schema JSON recorded by the commit, if any."""
        return self.extra_metadata.get("schema") or None

    def write_stats(self) -> Iterator[WriteStat]:
        """Every write stat, partition by partition."""
        for stats in self.partition_to_write_stats.values():
            yield from stats

    def replaced_file_ids(self) -> Iterator[tuple[str, str]]:
        """(partition path, file id) of every file group this instant replaced."""
        for partition, ids in self.partition_to_replace_file_ids.items():
            for file_id in ids:
                yield partition, file_id

    def to_dict(self) -> dict[str, Any]:
        """The Hudi field dict (shared by the JSON and Avro encodings)."""
        out: dict[str, Any] = {
            "partitionToWriteStats": {
                p: [s.to_dict() for s in stats]
                for p, stats in self.partition_to_write_stats.items()
            },
            "compacted": self.compacted,
            "extraMetadata": dict(self.extra_metadata),
            "version": None,
            "operationType": self.operation_type,
        }
        if self.replace or self.partition_to_replace_file_ids:
            out["partitionToReplaceFileIds"] = {
                p: list(ids) for p, ids in self.partition_to_replace_file_ids.items()
            }
        return out


def stats_by_partition(
    stats: Iterable[WriteStat],
    into: Mapping[str, Sequence[WriteStat]] | None = None,
) -> dict[str, tuple[WriteStat, ...]]:
    """``partitionToWriteStats`` of ``stats`` (a non-partitioned table's under ``""``), after
    the stats already in ``into``, in order."""
    out: dict[str, list[WriteStat]] = {p: list(v) for p, v in (into or {}).items()}
    for stat in stats:
        out.setdefault(stat.partition_path or "", []).append(stat)
    return {p: tuple(v) for p, v in out.items()}


def parse_commit_metadata(data: bytes, path: str, replace: bool | None = None) -> CommitMetadata:
    """Decode commit / deltacommit / replacecommit details (JSON or Avro; empty -> empty).

    ``replace`` forces the replace flag (pass True for ``replacecommit`` files); by default it
    is set when the content carries ``partitionToReplaceFileIds``.

    Raises:
        CorruptTableError: undecodable content or a malformed field; names ``path``.
    """
    raw = decode_payload(data, path)
    if raw is None:
        return CommitMetadata(replace=bool(replace))
    try:
        stats_raw = raw.get("partitionToWriteStats") or {}
        stats = {
            str(partition): tuple(WriteStat.from_dict(s) for s in (entries or ()))
            for partition, entries in stats_raw.items()
        }
        replace_raw = raw.get("partitionToReplaceFileIds")
        replace_ids = {str(p): str_tuple(ids) for p, ids in (replace_raw or {}).items()}
        return CommitMetadata(
            partition_to_write_stats=stats,
            operation_type=opt_str(raw.get("operationType")),
            extra_metadata=str_map(raw.get("extraMetadata")),
            partition_to_replace_file_ids=replace_ids,
            compacted=bool(raw.get("compacted") or False),
            replace=replace if replace is not None else replace_raw is not None,
        )
    except (AttributeError, TypeError, ValueError) as exc:
        raise CorruptTableError(f"{path}: malformed commit metadata: {exc}") from None


def encode_commit_metadata(meta: CommitMetadata, table_version: int) -> bytes:
    """Serialize commit metadata the way Hudi of ``table_version`` writes it.

    Table version < 8: Jackson-style JSON (UTF-8). Version 8+: an Avro container with Hudi's
    ``HoodieCommitMetadata`` schema, or ``HoodieReplaceCommitMetadata`` when ``meta.replace``
    or replaced file ids are set (Java readers resolve records by name, so the schema must
    match the action).
    """
    record = meta.to_dict()
    if table_version < 8:
        # Fields only the Avro schema has stay out of the JSON, as in Hudi 0.x's files.
        record.pop("version")
        for stats in record["partitionToWriteStats"].values():
            for stat in stats:
                for key in _AVRO_ONLY_STAT_FIELDS:
                    stat.pop(key)
        return json.dumps(record, indent=2).encode("utf-8")
    is_replace = meta.replace or bool(meta.partition_to_replace_file_ids)
    if is_replace:
        return encode_avro(avro_schemas.REPLACE_COMMIT_METADATA, record)
    record.pop("partitionToReplaceFileIds", None)
    return encode_avro(avro_schemas.COMMIT_METADATA, record)
