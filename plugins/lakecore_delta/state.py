"""Loading the reconciled state of a Delta table at one version (log replay)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import CorruptTableError, SchemaError
from lakecore.model.schema import physical_name
from lakecore.storage import Storage
from lakecore_delta.log.checkpoint import (
    CheckpointActions,
    _empty_adds,
    read_checkpoint_actions,
    read_checkpoint_adds,
)
from lakecore_delta.log.commits import find_last_action, first_action, parse_file_actions, read_all
from lakecore_delta.log.files import LogFile
from lakecore_delta.log.replay import reconcile
from lakecore_delta.log.segment import (
    LogSegment,
    build_segment,
    complete_checkpoints,
    list_log,
    read_last_checkpoint_hint,
)
from lakecore_delta.log.validate import check_action
from lakecore_delta.protocol import ensure_readable
from lakecore_delta.schema import parse_schema_string

log = logging.getLogger(__name__)

ICT_ENABLED = "delta.enableInCommitTimestamps"


@dataclass(frozen=True, slots=True)
class DeltaState:
    """The table at one version: protocol, metadata, schema and the live add actions."""

    version: int
    timestamp: int | None
    protocol: dict[str, Any]
    metadata: dict[str, Any]
    schema: pa.Schema
    partition_columns: tuple[str, ...]
    txns: dict[str, int]
    adds: pa.Table
    """Reconciled add actions: path (decoded), partitionValues (strings by physical name),
    size, modificationTime, stats (JSON text), deletionVector."""

    @property
    def configuration(self) -> dict[str, str]:
        return dict(self.metadata.get("configuration") or {})

    def partition_fields(self) -> list[pa.Field]:
        """The schema fields of the partition columns, in partition order."""
        return [self.schema.field(c) for c in self.partition_columns]

    def data_fields(self) -> list[pa.Field]:
        """The schema fields that are stored in data files (not partition columns)."""
        return [f for f in self.schema if f.name not in self.partition_columns]


def list_for(storage: Storage, version: int | None) -> list[LogFile]:
    """List the log from the newest usable checkpoint hint (or from the start)."""
    hint = read_last_checkpoint_hint(storage)
    if hint is not None and (version is None or version >= hint):
        files = list_log(storage, hint)
        if any(c.version == hint for c in complete_checkpoints(files)):
            return files
        log.info("_last_checkpoint names version %s but that checkpoint is incomplete", hint)
    return list_log(storage, 0)


def load_state(
    storage: Storage, version: int | None = None, previous: DeltaState | None = None
) -> DeltaState:
    """Replay the log up to ``version`` (latest by default).

    With ``previous`` (an older state of the same table), only the commits after it are
    replayed on top of it when the log allows; the result is the same as a full load.
    Falls back to an older checkpoint (or full replay) when a checkpoint is unreadable.
    Raises ``TableNotFoundError``, ``VersionNotFoundError``, ``CorruptTableError``,
    ``UnsupportedFeatureError`` (before any add action is read).
    """
    files = list_for(storage, version)
    skipped: list[int] = []
    unusable: CorruptTableError | None = None
    while True:
        try:
            segment = build_segment(files, version, skipped)
        except CorruptTableError as exc:
            if unusable is None:
                raise
            # Say why the checkpoint could not be used: that is what needs repairing.
            raise CorruptTableError(f"{exc}; the checkpoint: {unusable}") from unusable
        if previous is not None and _can_continue(previous, segment):
            return _continue(storage, previous, segment)
        try:
            return _load_segment(storage, segment)
        except CorruptTableError as exc:
            cp = segment.checkpoint
            if cp is None or cp.version in skipped or not _is_checkpoint_error(exc, segment):
                raise
            log.warning("checkpoint %s is unusable (%s); trying an older one", cp.version, exc)
            skipped.append(cp.version)
            unusable = exc
            if len(files) and files[0].version > 0:
                files = list_log(storage, 0)


def _can_continue(previous: DeltaState, segment: LogSegment) -> bool:
    """Whether ``segment``'s version is ``previous`` plus commits the segment lists."""
    floor = segment.checkpoint.version if segment.checkpoint else -1
    listed = {c.version for c in segment.commits}
    return floor <= previous.version <= segment.version and all(
        v in listed for v in range(previous.version + 1, segment.version + 1)
    )


def _continue(storage: Storage, previous: DeltaState, segment: LogSegment) -> DeltaState:
    """Replay the commits after ``previous`` on top of it."""
    commits = tuple(c for c in segment.commits if c.version > previous.version)
    if not commits:
        return previous
    chunks = read_all(storage, commits)
    protocol = find_last_action(chunks, commits, "protocol") or previous.protocol
    metadata = find_last_action(chunks, commits, "metaData")
    if metadata is not None and (
        tuple(metadata.get("partitionColumns") or ()) != previous.partition_columns
        or metadata.get("schemaString") != previous.metadata.get("schemaString")
    ):
        # Partition value types may change with the schema: replay from the start instead.
        return _load_segment(storage, segment)
    metadata = metadata or previous.metadata
    configuration = dict(metadata.get("configuration") or {})
    ensure_readable(protocol, configuration)
    physical = list(previous.adds.schema.field("partitionValues").type.names)
    timestamp = _timestamp(storage, segment, commits, chunks, configuration)
    actions = parse_file_actions(chunks, commits, physical)
    del chunks
    adds = reconcile(previous.adds, actions, storage.root, base_decoded=True)
    txns = dict(previous.txns)
    txns.update(_txns(actions))
    return DeltaState(
        version=segment.version,
        timestamp=timestamp,
        protocol=protocol,
        metadata=metadata,
        schema=previous.schema,
        partition_columns=previous.partition_columns,
        txns=txns,
        adds=adds,
    )


def _is_checkpoint_error(exc: CorruptTableError, segment: LogSegment) -> bool:
    return segment.checkpoint is not None and "checkpoint" in str(exc)


def _load_segment(storage: Storage, segment: LogSegment) -> DeltaState:
    to_read = segment.files_to_read()
    chunks = read_all(storage, to_read)
    protocol = find_last_action(chunks, to_read, "protocol")
    metadata = find_last_action(chunks, to_read, "metaData")
    cp_actions: CheckpointActions | None = None
    if segment.checkpoint is not None:
        cp_actions = read_checkpoint_actions(storage, segment.checkpoint)
        source = segment.checkpoint.files[0].path
        if protocol is None and cp_actions.protocol is not None:
            check_action("protocol", cp_actions.protocol, source)
            protocol = cp_actions.protocol
        if metadata is None and cp_actions.metadata is not None:
            check_action("metaData", cp_actions.metadata, source)
            metadata = cp_actions.metadata
    where = f"the log up to version {segment.version}"
    if protocol is None:
        raise CorruptTableError(f"{where} has no protocol action")
    if metadata is None:
        raise CorruptTableError(f"{where} has no metaData action")
    configuration = dict(metadata.get("configuration") or {})
    ensure_readable(protocol, configuration)
    schema_string = metadata.get("schemaString")
    schema = parse_schema_string(schema_string) if schema_string is not None else pa.schema([])
    partition_columns = tuple(metadata.get("partitionColumns") or ())
    unknown = [c for c in partition_columns if schema.get_field_index(c) < 0]
    if unknown and schema_string is not None:
        raise SchemaError(f"{where}: partition column(s) {unknown} are not in the schema")
    physical = [
        physical_name(schema.field(c)) if c not in unknown else c for c in partition_columns
    ]
    timestamp = _timestamp(storage, segment, to_read, chunks, configuration)
    actions = parse_file_actions(chunks, to_read, physical)
    del chunks  # the raw commits (as large as the parsed actions) are not needed past here
    cp_adds = (
        read_checkpoint_adds(storage, cp_actions, physical)
        if cp_actions is not None
        else _empty_adds(physical)
    )
    adds = reconcile(cp_adds, actions, storage.root)
    txns = dict(cp_actions.txns) if cp_actions else {}
    txns.update(_txns(actions))
    return DeltaState(
        version=segment.version,
        timestamp=timestamp,
        protocol=protocol,
        metadata=metadata,
        schema=schema,
        partition_columns=partition_columns,
        txns=txns,
        adds=adds,
    )


def _txns(actions: pa.Table) -> dict[str, int]:
    txn = actions.column("txn")
    rows = txn.filter(pc.is_valid(txn)).to_pylist()
    return {r["appId"]: int(r["version"]) for r in rows if r and r.get("appId") is not None}


def commit_timestamp(f: LogFile, chunk: bytes | None, ict: bool) -> int:
    """A commit's timestamp: its in-commit timestamp when enabled, else the file's mtime."""
    if ict and chunk is not None:
        action = first_action(chunk, f) or {}
        info = action.get("commitInfo")
        if isinstance(info, dict) and info.get("inCommitTimestamp") is not None:
            return int(info["inCommitTimestamp"])
    return f.info.modification_time


def _timestamp(
    storage: Storage,
    segment: LogSegment,
    read: tuple[LogFile, ...],
    chunks: list[bytes],
    configuration: dict[str, str],
) -> int | None:
    last = segment.tip
    if last is None:
        cp = segment.checkpoint
        return cp.files[0].info.modification_time if cp else None
    ict = configuration.get(ICT_ENABLED, "false").lower() == "true"
    if not ict:
        return last.info.modification_time
    chunk = chunks[-1] if read and read[-1] is last else _read_commit(storage, last)
    return commit_timestamp(last, chunk, ict)


def _read_commit(storage: Storage, f: LogFile) -> bytes | None:
    try:
        return storage.read(f.path)
    except FileNotFoundError:
        return None
