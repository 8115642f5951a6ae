"""Writing one metadata-table delta commit: every maintained partition's records of one
data instant.

Each partition's records are combined per key (the partition's ``merge``, in the order the
instant produced them) and routed to file group ``file_group_index(routing_key(key), n)``, n
the number of file groups the partition has on storage. Every touched file group gets ONE new
log file ``<partition>/.<file id>_<instant>.log.1_0-0-0`` (table version 8+ names a log file
by the delta commit that writes it): an HFILE_DATA block of its records (HFile cells sorted
by key) and, when the instant deletes keys, a DELETE block of them, as Hudi writes record
index and secondary index removals. The commit metadata lists one write stat per log file,
as Hudi's (``UPSERT_PREPPED``, ``prevCommit`` the instant itself, the log file named).

Everything is computed before the first file is written, so a record that does not encode
or a partition without file groups fails with nothing on storage.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lakecore.errors import CommitError, CorruptTableError
from lakecore_hudi.log.format import BlockType, HeaderKey, encode_log_block
from lakecore_hudi.mdt.file_group_fold import file_group_ids
from lakecore_hudi.mdt.file_groups import file_group_id, file_group_index
from lakecore_hudi.mdt.files_records import schema_json
from lakecore_hudi.mdt.hfile_writer import write_hfile
from lakecore_hudi.mdt.partition_spec import PartitionSpec
from lakecore_hudi.mdt.prefixed import PrefixedStorage
from lakecore_hudi.mdt.record_codec import delete_block, encode_record_cells, is_deletion
from lakecore_hudi.names import log_file_name
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.timeline.commit_metadata import CommitMetadata, WriteStat, encode_commit_metadata
from lakecore_hudi.timeline.instants import DELTA_COMMIT
from lakecore_hudi.timeline.lifecycle import complete, write_inflight, write_requested

__all__ = ["LogWrite", "merge_in_commit", "plan_log_writes", "write_delta_commit"]

WRITE_TOKEN = "0-0-0"


@dataclass(frozen=True)
class LogWrite:
    """One log file of a delta commit: where, its bytes, and its record counts."""

    partition: str
    file_id: str
    path: str
    content: bytes
    writes: int
    deletes: int


def merge_in_commit(
    spec: PartitionSpec, records: Sequence[Mapping[str, Any]]
) -> dict[str, dict[str, Any] | None]:
    """One instant's records of ``spec``'s partition combined per key, in order: key ->
    record, or None for a key the instant deletes (its last record has no payload)."""
    state: dict[str, dict[str, Any] | None] = {}
    for record in records:
        key = str(record["key"])
        if is_deletion(record):
            state[key] = None
            continue
        merged = spec.merge(state.get(key), dict(record))
        # A merge may answer None for records a compaction drops (two column-stats
        # tombstones); a log block still holds the newer record, as Hudi's would: only a
        # payload-less record is a DELETE-block entry.
        state[key] = merged if merged is not None else dict(record)
    return state


def plan_log_writes(
    mdt: PrefixedStorage,
    mversion: int,
    ts: str,
    records: Mapping[str, tuple[PartitionSpec, Sequence[Mapping[str, Any]]]],
) -> list[LogWrite]:
    """The log files metadata delta commit ``ts`` writes for ``records`` (partition ->
    (spec, the instant's records)); nothing is written yet.

    Raises:
        CorruptTableError: a partition with records has no file group on storage.
        CommitError: a record does not fit the metadata record schema.
    """
    writes: list[LogWrite] = []
    schema = schema_json(mversion)
    for partition, (spec, items) in records.items():
        if not items:
            continue
        count = len(file_group_ids(mdt, partition))
        if count == 0:
            raise CorruptTableError(
                f"{mdt.resolve(partition)}: metadata table partition {partition!r} has no "
                "file group to write to"
            )
        groups: dict[int, dict[str, dict[str, Any] | None]] = {}
        for key, record in merge_in_commit(spec, items).items():
            index = file_group_index(spec.routing_key(key, mversion), count)
            groups.setdefault(index, {})[key] = record
        for index, entries in sorted(groups.items()):
            file_id = file_group_id(partition, index)
            data = [r for r in entries.values() if r is not None]
            gone = [k for k, r in entries.items() if r is None]
            content = b""
            if data:
                cells = _cells(partition, data, mversion)
                hfile = write_hfile(cells, {"schema": schema.encode()}, create_time_ms=_now_ms())
                header = {HeaderKey.INSTANT_TIME: ts, HeaderKey.SCHEMA: schema}
                content += encode_log_block(BlockType.HFILE_DATA, header, hfile)
            if gone:
                content += delete_block(gone, partition, ts, mversion)
            name = log_file_name(file_id, ts, 1, WRITE_TOKEN)
            writes.append(
                LogWrite(partition, file_id, f"{partition}/{name}", content, len(data), len(gone))
            )
    return writes


def _cells(partition: str, data: list[dict[str, Any]], mversion: int) -> list[tuple[bytes, bytes]]:
    try:
        return encode_record_cells(data, mversion)
    except ValueError as exc:
        # A generator's record that the schema cannot hold: a lakecore bug, caught before the
        # metadata table is touched (the data instant stays uncommitted).
        raise CommitError(
            f"metadata table partition {partition!r}: {exc}; nothing was committed"
        ) from exc


def write_delta_commit(
    mdt: PrefixedStorage, mconfig: TableConfig, ts: str, writes: Sequence[LogWrite]
) -> None:
    """Write and complete metadata delta commit ``ts`` holding ``writes``.

    Raises:
        OSError: the storage failed (the delta commit stays pending; a rollback removes it).
    """
    version = mconfig.table_version
    schema = schema_json(version)
    write_requested(mdt, mconfig, DELTA_COMMIT, ts)
    write_inflight(mdt, mconfig, DELTA_COMMIT, ts)
    stats: dict[str, list[WriteStat]] = {}
    for w in writes:
        mdt.put(w.path, w.content)
        stats.setdefault(w.partition, []).append(
            WriteStat(
                file_id=w.file_id,
                path=w.path,
                partition_path=w.partition,
                prev_commit=ts,
                num_writes=w.writes,
                num_update_writes=w.writes,
                num_deletes=w.deletes,
                total_write_bytes=len(w.content),
                file_size_in_bytes=len(w.content),
                base_file="",
                log_files=(w.path.rsplit("/", 1)[1],),
                log_version=1,
                log_offset=0,
            )
        )
    meta = CommitMetadata(
        partition_to_write_stats=stats,
        operation_type="UPSERT_PREPPED",
        extra_metadata={"schema": schema},
    )
    complete(mdt, mconfig, DELTA_COMMIT, ts, encode_commit_metadata(meta, version))


def _now_ms() -> int:
    return int(time.time() * 1000)
