"""Instant details: commit, clean, rollback and plan metadata, decoded and encoded.

Hudi stores an instant's details in its timeline file in one of two encodings:

* JSON (Jackson) for commit / deltacommit / replacecommit metadata of table versions <= 7
  (completed and inflight files);
* an Avro object container file (``Obj\\x01`` magic, one record, writer schema embedded) for
  every other kind, and for commit metadata of table version 8+.

Decoders look at the bytes, not the version, so they read either. Requested and inflight files
are often empty; empty content decodes to an empty object.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import fastavro

from lakecore.errors import CorruptTableError
from lakecore_hudi.timeline import avro_schemas

AVRO_MAGIC = b"Obj\x01"


def decode_payload(data: bytes, path: str) -> dict[str, Any] | None:
    """Decode an instant file's bytes (Avro container or JSON) into a dict; None when empty.

    Raises:
        CorruptTableError: the bytes are neither a readable Avro container nor a JSON object.
    """
    if not data.strip():
        return None
    if data.startswith(AVRO_MAGIC):
        try:
            records = list(fastavro.reader(io.BytesIO(data)))
        except Exception as exc:  # fastavro raises many types on damaged input
            raise CorruptTableError(f"{path}: unreadable Avro instant metadata: {exc}") from None
        if not records or not isinstance(records[0], dict):
            raise CorruptTableError(f"{path}: Avro instant metadata holds no record")
        return records[0]
    try:
        decoded = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptTableError(
            f"{path}: instant metadata is neither Avro nor JSON: {exc}"
        ) from None
    if not isinstance(decoded, dict):
        raise CorruptTableError(f"{path}: instant metadata JSON is not an object")
    return decoded


def encode_avro(schema: Mapping[str, Any], record: Mapping[str, Any]) -> bytes:
    """One-record Avro container, uncompressed, as Hudi's timeline serializer writes."""
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(dict(schema)), [dict(record)], codec="null")
    return out.getvalue()


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def _int(value: Any, default: int = 0) -> int:
    return default if value is None else int(value)


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _strs(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if value else ()


def _str_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items() if v is not None} if value else {}


def _int_map(value: Any) -> dict[str, int]:
    return {str(k): int(v) for k, v in value.items()} if value else {}


# ---------------------------------------------------------------- commit metadata


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
        prev = _str(raw.get("prevCommit"))
        cdc = raw.get("cdcStats")
        return cls(
            file_id=str(raw.get("fileId") or ""),
            path=_str(raw.get("path")),
            partition_path=_str(raw.get("partitionPath")),
            prev_commit=None if prev in (None, "null") else prev,
            **{name: _int(raw.get(key)) for name, key in _COUNTERS.items()},
            base_file=_str(raw.get("baseFile")),
            log_files=_strs(raw.get("logFiles")),
            log_version=_opt_int(raw.get("logVersion")),
            log_offset=_opt_int(raw.get("logOffset")),
            prev_base_file=_str(raw.get("prevBaseFile")),
            min_event_time=_opt_int(raw.get("minEventTime")),
            max_event_time=_opt_int(raw.get("maxEventTime")),
            temp_path=_str(raw.get("tempPath")),
            cdc_stats=_int_map(cdc) if cdc else None,
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
        replace_ids = {str(p): _strs(ids) for p, ids in (replace_raw or {}).items()}
        return CommitMetadata(
            partition_to_write_stats=stats,
            operation_type=_str(raw.get("operationType")),
            extra_metadata=_str_map(raw.get("extraMetadata")),
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


# ---------------------------------------------------------------- clean


@dataclass(frozen=True, slots=True)
class CleanPartitionMetadata:
    """What a clean deleted in one partition."""

    partition_path: str
    policy: str = ""
    delete_path_patterns: tuple[str, ...] = ()
    success_delete_files: tuple[str, ...] = ()
    failed_delete_files: tuple[str, ...] = ()
    is_partition_deleted: bool | None = None


@dataclass(frozen=True, slots=True)
class CleanMetadata:
    """``HoodieCleanMetadata`` of a completed clean."""

    start_clean_time: str = ""
    time_taken_ms: int = 0
    total_files_deleted: int = 0
    earliest_commit_to_retain: str = ""
    last_completed_commit_timestamp: str = ""
    policy: str = ""
    partition_metadata: Mapping[str, CleanPartitionMetadata] = field(default_factory=dict)


def parse_clean_metadata(data: bytes, path: str) -> CleanMetadata:
    """Decode a completed clean (Avro); empty content gives an empty CleanMetadata.

    Raises:
        CorruptTableError: undecodable or malformed content; names ``path``.
    """
    raw = decode_payload(data, path)
    if raw is None:
        return CleanMetadata()
    try:
        parts = {
            str(p): CleanPartitionMetadata(
                partition_path=str(m.get("partitionPath", p)),
                policy=str(m.get("policy") or ""),
                delete_path_patterns=_strs(m.get("deletePathPatterns")),
                success_delete_files=_strs(m.get("successDeleteFiles")),
                failed_delete_files=_strs(m.get("failedDeleteFiles")),
                is_partition_deleted=m.get("isPartitionDeleted"),
            )
            for p, m in (raw.get("partitionMetadata") or {}).items()
        }
        return CleanMetadata(
            start_clean_time=str(raw.get("startCleanTime") or ""),
            time_taken_ms=_int(raw.get("timeTakenInMillis")),
            total_files_deleted=_int(raw.get("totalFilesDeleted")),
            earliest_commit_to_retain=str(raw.get("earliestCommitToRetain") or ""),
            last_completed_commit_timestamp=str(raw.get("lastCompletedCommitTimestamp") or ""),
            policy=str(raw.get("policy") or ""),
            partition_metadata=parts,
        )
    except (AttributeError, TypeError, ValueError) as exc:
        raise CorruptTableError(f"{path}: malformed clean metadata: {exc}") from None


def encode_clean_metadata(meta: CleanMetadata) -> bytes:
    """Serialize a completed clean as Hudi does for every table version (Avro container)."""
    record = {
        "policy": meta.policy,
        "startCleanTime": meta.start_clean_time,
        "timeTakenInMillis": meta.time_taken_ms,
        "totalFilesDeleted": meta.total_files_deleted,
        "earliestCommitToRetain": meta.earliest_commit_to_retain,
        "lastCompletedCommitTimestamp": meta.last_completed_commit_timestamp,
        "partitionMetadata": {
            p: {
                "partitionPath": m.partition_path,
                "policy": m.policy,
                "deletePathPatterns": list(m.delete_path_patterns),
                "successDeleteFiles": list(m.success_delete_files),
                "failedDeleteFiles": list(m.failed_delete_files),
                "isPartitionDeleted": m.is_partition_deleted,
            }
            for p, m in meta.partition_metadata.items()
        },
        "version": 2,
        "bootstrapPartitionMetadata": None,
    }
    return encode_avro(avro_schemas.CLEAN_METADATA, record)


@dataclass(frozen=True, slots=True)
class CleanerPlan:
    """``HoodieCleanerPlan`` of a requested clean: which files it will delete."""

    policy: str = ""
    earliest_instant_to_retain: tuple[str, str, str] | None = None  # (timestamp, action, state)
    files_to_delete: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    partitions_to_delete: tuple[str, ...] = ()


def parse_cleaner_plan(data: bytes, path: str) -> CleanerPlan:
    """Decode a requested/inflight clean plan; empty content gives an empty plan.

    Raises:
        CorruptTableError: undecodable or malformed content; names ``path``.
    """
    raw = decode_payload(data, path)
    if raw is None:
        return CleanerPlan()
    try:
        files: dict[str, tuple[str, ...]] = {}
        for p, infos in (raw.get("filePathsToBeDeletedPerPartition") or {}).items():
            files[str(p)] = tuple(str(i["filePath"]) for i in infos if i.get("filePath"))
        for p, names in (raw.get("filesToBeDeletedPerPartition") or {}).items():
            files.setdefault(str(p), _strs(names))  # pre-0.8 plans list file names only
        earliest = raw.get("earliestInstantToRetain")
        return CleanerPlan(
            policy=str(raw.get("policy") or ""),
            earliest_instant_to_retain=(
                (str(earliest["timestamp"]), str(earliest["action"]), str(earliest["state"]))
                if earliest
                else None
            ),
            files_to_delete=files,
            partitions_to_delete=_strs(raw.get("partitionsToBeDeleted")),
        )
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise CorruptTableError(f"{path}: malformed cleaner plan: {exc}") from None


def encode_cleaner_plan(plan: CleanerPlan) -> bytes:
    """Serialize a clean plan (``.clean.requested``) as an Avro container, plan version 2."""
    earliest = plan.earliest_instant_to_retain
    record = {
        "earliestInstantToRetain": (
            {"timestamp": earliest[0], "action": earliest[1], "state": earliest[2]}
            if earliest
            else None
        ),
        "policy": plan.policy,
        "filesToBeDeletedPerPartition": None,
        "version": 2,
        "filePathsToBeDeletedPerPartition": {
            p: [{"filePath": f, "isBootstrapBaseFile": False} for f in files]
            for p, files in plan.files_to_delete.items()
        },
        "partitionsToBeDeleted": list(plan.partitions_to_delete),
    }
    return encode_avro(avro_schemas.CLEANER_PLAN, record)


# ---------------------------------------------------------------- rollback


@dataclass(frozen=True, slots=True)
class RollbackPartitionMetadata:
    """What a rollback did in one partition.

    ``rollback_log_files`` maps a log file to its size after the rollback appended a command
    block to it; ``log_files_from_failed_commit`` lists log files the failed commit wrote.
    """

    partition_path: str
    success_delete_files: tuple[str, ...] = ()
    failed_delete_files: tuple[str, ...] = ()
    rollback_log_files: Mapping[str, int] = field(default_factory=dict)
    log_files_from_failed_commit: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RollbackMetadata:
    """``HoodieRollbackMetadata`` of a completed rollback.

    ``instants_rollback`` holds (timestamp, action) of the rolled-back instants;
    ``commits_rollback`` their timestamps (older files carry only this list).
    """

    start_rollback_time: str = ""
    time_taken_ms: int = 0
    total_files_deleted: int = 0
    commits_rollback: tuple[str, ...] = ()
    instants_rollback: tuple[tuple[str, str], ...] = ()
    partition_metadata: Mapping[str, RollbackPartitionMetadata] = field(default_factory=dict)

    def rolled_back_timestamps(self) -> frozenset[str]:
        """Every instant timestamp this rollback undid."""
        return frozenset(self.commits_rollback) | {ts for ts, _ in self.instants_rollback}


def _rollback_from_dict(raw: Mapping[str, Any]) -> RollbackMetadata:
    parts = {
        str(p): RollbackPartitionMetadata(
            partition_path=str(m.get("partitionPath", p)),
            success_delete_files=_strs(m.get("successDeleteFiles")),
            failed_delete_files=_strs(m.get("failedDeleteFiles")),
            rollback_log_files=_int_map(m.get("rollbackLogFiles")),
            log_files_from_failed_commit=_int_map(m.get("logFilesFromFailedCommit")),
        )
        for p, m in (raw.get("partitionMetadata") or {}).items()
    }
    return RollbackMetadata(
        start_rollback_time=str(raw.get("startRollbackTime") or ""),
        time_taken_ms=_int(raw.get("timeTakenInMillis")),
        total_files_deleted=_int(raw.get("totalFilesDeleted")),
        commits_rollback=_strs(raw.get("commitsRollback")),
        instants_rollback=tuple(
            (str(i["commitTime"]), str(i["action"])) for i in raw.get("instantsRollback") or ()
        ),
        partition_metadata=parts,
    )


def parse_rollback_metadata(data: bytes, path: str) -> RollbackMetadata:
    """Decode a completed rollback; empty content gives an empty RollbackMetadata.

    Raises:
        CorruptTableError: undecodable or malformed content; names ``path``.
    """
    raw = decode_payload(data, path)
    if raw is None:
        return RollbackMetadata()
    try:
        return _rollback_from_dict(raw)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise CorruptTableError(f"{path}: malformed rollback metadata: {exc}") from None


def encode_rollback_metadata(meta: RollbackMetadata) -> bytes:
    """Serialize a completed rollback as Hudi does for every table version (Avro container)."""
    record = {
        "startRollbackTime": meta.start_rollback_time,
        "timeTakenInMillis": meta.time_taken_ms,
        "totalFilesDeleted": meta.total_files_deleted,
        "commitsRollback": list(meta.commits_rollback),
        "partitionMetadata": {
            p: {
                "partitionPath": m.partition_path,
                "successDeleteFiles": list(m.success_delete_files),
                "failedDeleteFiles": list(m.failed_delete_files),
                "rollbackLogFiles": dict(m.rollback_log_files),
                "logFilesFromFailedCommit": dict(m.log_files_from_failed_commit),
            }
            for p, m in meta.partition_metadata.items()
        },
        "version": 1,
        "instantsRollback": [{"commitTime": t, "action": a} for t, a in meta.instants_rollback],
    }
    return encode_avro(avro_schemas.ROLLBACK_METADATA, record)


@dataclass(frozen=True, slots=True)
class RollbackRequest:
    """One unit of a rollback plan: files to delete / log blocks to roll back in a file group."""

    partition_path: str
    file_id: str = ""
    latest_base_instant: str = ""
    files_to_delete: tuple[str, ...] = ()
    log_blocks_to_delete: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RollbackPlan:
    """``HoodieRollbackPlan`` of a requested rollback."""

    instant_to_rollback: tuple[str, str] | None = None  # (timestamp, action)
    requests: tuple[RollbackRequest, ...] = ()


def _is_instant_time(text: str) -> bool:
    return text.isascii() and text.isdigit()


def parse_rollback_plan(data: bytes, path: str) -> RollbackPlan:
    """Decode a requested rollback plan; empty content gives an empty plan.

    Raises:
        CorruptTableError: undecodable or malformed content; names ``path``.
    """
    raw = decode_payload(data, path)
    if raw is None:
        return RollbackPlan()
    try:
        target = raw.get("instantToRollback")
        if target and not _is_instant_time(str(target["commitTime"])):
            # The instant time names files (its heartbeat, its timeline files): a crafted one
            # such as "../../x" would reach outside the table.
            raise CorruptTableError(
                f"{path}: rollback plan targets {target['commitTime']!r}, not an instant time"
            )
        return RollbackPlan(
            instant_to_rollback=(str(target["commitTime"]), str(target["action"]))
            if target
            else None,
            requests=tuple(
                RollbackRequest(
                    partition_path=str(r["partitionPath"]),
                    file_id=str(r.get("fileId") or ""),
                    latest_base_instant=str(r.get("latestBaseInstant") or ""),
                    files_to_delete=_strs(r.get("filesToBeDeleted")),
                    log_blocks_to_delete=_int_map(r.get("logBlocksToBeDeleted")),
                )
                for r in raw.get("RollbackRequests") or ()
            ),
        )
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise CorruptTableError(f"{path}: malformed rollback plan: {exc}") from None


def encode_rollback_plan(plan: RollbackPlan) -> bytes:
    """Serialize a rollback plan (``.rollback.requested``) as an Avro container."""
    target = plan.instant_to_rollback
    record = {
        "instantToRollback": {"commitTime": target[0], "action": target[1]} if target else None,
        "RollbackRequests": [
            {
                "partitionPath": r.partition_path,
                "fileId": r.file_id,
                "latestBaseInstant": r.latest_base_instant,
                "filesToBeDeleted": list(r.files_to_delete),
                "logBlocksToBeDeleted": dict(r.log_blocks_to_delete),
            }
            for r in plan.requests
        ],
        "version": 1,
    }
    return encode_avro(avro_schemas.ROLLBACK_PLAN, record)


def parse_restore_rolled_back(data: bytes, path: str) -> frozenset[str]:
    """Timestamps a completed restore (``HoodieRestoreMetadata``) rolled back.

    Raises:
        CorruptTableError: undecodable or malformed content; names ``path``.
    """
    raw = decode_payload(data, path)
    if raw is None:
        return frozenset()
    try:
        stamps = set(_strs(raw.get("instantsToRollback")))
        stamps |= {str(i["commitTime"]) for i in raw.get("restoreInstantInfo") or ()}
        for rollbacks in (raw.get("hoodieRestoreMetadata") or {}).values():
            for rollback in rollbacks or ():
                stamps |= _rollback_from_dict(rollback).rolled_back_timestamps()
        return frozenset(stamps)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise CorruptTableError(f"{path}: malformed restore metadata: {exc}") from None


# ---------------------------------------------------------------- compaction / clustering plans


@dataclass(frozen=True, slots=True)
class FileSliceRef:
    """A file slice named by a compaction or clustering plan (paths as the plan writes them)."""

    file_id: str
    partition_path: str
    base_file: str | None
    log_files: tuple[str, ...] = ()
    base_instant_time: str | None = None


@dataclass(frozen=True, slots=True)
class CompactionPlan:
    """``HoodieCompactionPlan``: the slices a (log) compaction merges, one per operation."""

    operations: tuple[FileSliceRef, ...] = ()
    extra_metadata: Mapping[str, str] = field(default_factory=dict)


def parse_compaction_plan(data: bytes, path: str) -> CompactionPlan:
    """Decode a requested compaction / logcompaction plan; empty gives an empty plan.

    Raises:
        CorruptTableError: undecodable or malformed content; names ``path``.
    """
    raw = decode_payload(data, path)
    if raw is None:
        return CompactionPlan()
    try:
        ops = tuple(
            FileSliceRef(
                file_id=str(op.get("fileId") or ""),
                partition_path=str(op.get("partitionPath") or ""),
                base_file=_str(op.get("dataFilePath")) or None,
                log_files=_strs(op.get("deltaFilePaths")),
                base_instant_time=_str(op.get("baseInstantTime")),
            )
            for op in raw.get("operations") or ()
        )
        return CompactionPlan(ops, _str_map(raw.get("extraMetadata")))
    except (AttributeError, TypeError, ValueError) as exc:
        raise CorruptTableError(f"{path}: malformed compaction plan: {exc}") from None


@dataclass(frozen=True, slots=True)
class ClusteringPlan:
    """``HoodieRequestedReplaceMetadata``: a requested replacecommit / clustering.

    ``input_groups`` holds, per clustering group, the slices it rewrites (empty for a plain
    insert-overwrite request, whose plan is null).
    """

    operation_type: str | None = None
    input_groups: tuple[tuple[FileSliceRef, ...], ...] = ()
    extra_metadata: Mapping[str, str] = field(default_factory=dict)

    def file_groups(self) -> Iterator[tuple[str, str]]:
        """(partition path, file id) of every file group in the plan."""
        for group in self.input_groups:
            for ref in group:
                yield ref.partition_path, ref.file_id


def parse_clustering_plan(data: bytes, path: str) -> ClusteringPlan:
    """Decode a requested replacecommit / clustering; empty gives an empty plan.

    Raises:
        CorruptTableError: undecodable or malformed content; names ``path``.
    """
    raw = decode_payload(data, path)
    if raw is None:
        return ClusteringPlan()
    try:
        plan = raw.get("clusteringPlan") or {}
        groups = tuple(
            tuple(
                FileSliceRef(
                    file_id=str(s.get("fileId") or ""),
                    partition_path=str(s.get("partitionPath") or ""),
                    base_file=_str(s.get("dataFilePath")) or None,
                    log_files=_strs(s.get("deltaFilePaths")),
                )
                for s in group.get("slices") or ()
            )
            for group in plan.get("inputGroups") or ()
        )
        return ClusteringPlan(
            _str(raw.get("operationType")), groups, _str_map(raw.get("extraMetadata"))
        )
    except (AttributeError, TypeError, ValueError) as exc:
        raise CorruptTableError(f"{path}: malformed clustering plan: {exc}") from None


def encode_requested_replace(operation_type: str | None) -> bytes:
    """A ``.replacecommit.requested`` without a clustering plan (insert overwrite), as Hudi
    writes it for every table version (Avro container)."""
    record = {
        "operationType": operation_type,
        "clusteringPlan": None,
        "extraMetadata": None,
        "version": 1,
    }
    return encode_avro(avro_schemas.REQUESTED_REPLACE_METADATA, record)
