"""Clean metadata: the plan of a requested clean and the record of a completed one.

``CleanerPlan`` (``HoodieCleanerPlan``, the ``.clean.requested`` / ``.clean.inflight``
content) lists the files a clean will delete; ``CleanMetadata`` (``HoodieCleanMetadata``,
the completed ``.clean``) what it deleted. Both are Avro containers for every table version;
empty content decodes to an empty object, malformed content raises ``CorruptTableError``
naming the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from lakecore.errors import CorruptTableError
from lakecore_hudi.timeline import avro_schemas
from lakecore_hudi.timeline.payload import as_int, decode_payload, encode_avro, str_tuple


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
                delete_path_patterns=str_tuple(m.get("deletePathPatterns")),
                success_delete_files=str_tuple(m.get("successDeleteFiles")),
                failed_delete_files=str_tuple(m.get("failedDeleteFiles")),
                is_partition_deleted=m.get("isPartitionDeleted"),
            )
            for p, m in (raw.get("partitionMetadata") or {}).items()
        }
        return CleanMetadata(
            start_clean_time=str(raw.get("startCleanTime") or ""),
            time_taken_ms=as_int(raw.get("timeTakenInMillis")),
            total_files_deleted=as_int(raw.get("totalFilesDeleted")),
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
            files.setdefault(str(p), str_tuple(names))  # pre-0.8 plans list file names only
        earliest = raw.get("earliestInstantToRetain")
        return CleanerPlan(
            policy=str(raw.get("policy") or ""),
            earliest_instant_to_retain=(
                (str(earliest["timestamp"]), str(earliest["action"]), str(earliest["state"]))
                if earliest
                else None
            ),
            files_to_delete=files,
            partitions_to_delete=str_tuple(raw.get("partitionsToBeDeleted")),
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
