"""Rollback and restore metadata: rollback plans, completed rollbacks, completed restores.

``RollbackPlan`` (``HoodieRollbackPlan``, the ``.rollback.requested`` content) names the
instant to undo and the files / log blocks to remove; ``RollbackMetadata``
(``HoodieRollbackMetadata``) records what a completed rollback did; a completed restore
(``HoodieRestoreMetadata``) is read only for the timestamps it rolled back. All are Avro
containers for every table version; empty content decodes to an empty object, malformed
content raises ``CorruptTableError`` naming the file. A plan whose target is not an instant
time is malformed: the target names files, so it must not reach outside the table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lakecore.errors import CorruptTableError
from lakecore_hudi.timeline import avro_schemas
from lakecore_hudi.timeline.payload import as_int, decode_payload, encode_avro, int_map, str_tuple


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
            success_delete_files=str_tuple(m.get("successDeleteFiles")),
            failed_delete_files=str_tuple(m.get("failedDeleteFiles")),
            rollback_log_files=int_map(m.get("rollbackLogFiles")),
            log_files_from_failed_commit=int_map(m.get("logFilesFromFailedCommit")),
        )
        for p, m in (raw.get("partitionMetadata") or {}).items()
    }
    return RollbackMetadata(
        start_rollback_time=str(raw.get("startRollbackTime") or ""),
        time_taken_ms=as_int(raw.get("timeTakenInMillis")),
        total_files_deleted=as_int(raw.get("totalFilesDeleted")),
        commits_rollback=str_tuple(raw.get("commitsRollback")),
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
                    files_to_delete=str_tuple(r.get("filesToBeDeleted")),
                    log_blocks_to_delete=int_map(r.get("logBlocksToBeDeleted")),
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
        stamps = set(str_tuple(raw.get("instantsToRollback")))
        stamps |= {str(i["commitTime"]) for i in raw.get("restoreInstantInfo") or ()}
        for rollbacks in (raw.get("hoodieRestoreMetadata") or {}).values():
            for rollback in rollbacks or ():
                stamps |= _rollback_from_dict(rollback).rolled_back_timestamps()
        return frozenset(stamps)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise CorruptTableError(f"{path}: malformed restore metadata: {exc}") from None
