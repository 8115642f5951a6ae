"""Rolling back, in the metadata table, a data instant that is being rolled back.

Hudi rolls back the metadata delta commit of a rolled-back data instant under a metadata
``rollback`` instant with the data rollback's own instant time, before the data rollback
completes. With table version 8 every metadata delta commit wrote its own log files (one per
file group it touched, in any partition: ``<partition>/.<file id>_<instant>.log.1_*``), so
rolling it back deletes those files, then deletes the instant's files from the metadata
timeline. Every step is idempotent: a data
rollback resumed after a crash runs this again.

A data instant is only rolled back while it is pending, and the metadata table never
compacts a delta commit whose data instant is pending (``maintain``), so the delta commit is
never folded into a base file by then.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence

from lakecore.errors import CommitConflictError
from lakecore.storage import Storage
from lakecore_hudi.mdt.prefixed import PrefixedStorage
from lakecore_hudi.mdt.table import metadata_config, metadata_storage
from lakecore_hudi.names import parse_log_file_name
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.timeline.active import load_timeline
from lakecore_hudi.timeline.instants import COMPLETED, DELTA_COMMIT, ROLLBACK
from lakecore_hudi.timeline.lifecycle import complete, write_inflight, write_requested
from lakecore_hudi.timeline.rollback_metadata import (
    RollbackMetadata,
    RollbackPartitionMetadata,
    RollbackPlan,
    RollbackRequest,
    encode_rollback_metadata,
    encode_rollback_plan,
)

__all__ = ["rollback_in_metadata"]


def rollback_in_metadata(storage: Storage, config: TableConfig, ts: str, target: str) -> None:
    """Roll back metadata delta commit ``target`` under metadata rollback ``ts`` (the data
    rollback's instant). A no-op without a metadata table or when ``target`` left nothing
    in it.

    Raises:
        OSError: the storage failed (the data rollback must not complete then).
    """
    if not config.metadata_partitions:
        return
    mdt = metadata_storage(storage)
    mconfig = metadata_config(mdt)
    if mconfig is None:
        return
    timeline = load_timeline(mdt, mconfig)
    mine = [i for i in timeline.instants if i.timestamp == target]
    logs = _logs_of(mdt, config.metadata_partitions, target)
    started = any(i.timestamp == ts and i.action == ROLLBACK for i in timeline.instants)
    if not mine and not logs and not started:
        return
    requests = tuple(
        RollbackRequest(p, file_id, "", tuple(mdt.resolve(path) for path in paths))
        for (p, file_id), paths in sorted(logs.items())
    )
    plan = RollbackPlan((target, DELTA_COMMIT), requests)
    began = time.time()
    with contextlib.suppress(CommitConflictError):  # resuming: already there
        write_requested(mdt, mconfig, ROLLBACK, ts, encode_rollback_plan(plan))
    with contextlib.suppress(CommitConflictError):
        write_inflight(mdt, mconfig, ROLLBACK, ts)
    for paths in logs.values():
        for path in paths:
            with contextlib.suppress(FileNotFoundError):
                mdt.delete(path)
    deleted: dict[str, list[str]] = {}
    for (p, _), paths in sorted(logs.items()):
        deleted.setdefault(p, []).extend(path.rsplit("/", 1)[1] for path in paths)
    meta = RollbackMetadata(
        start_rollback_time=ts,
        time_taken_ms=int((time.time() - began) * 1000),
        total_files_deleted=sum(len(paths) for paths in logs.values()),
        commits_rollback=(target,),
        instants_rollback=((target, DELTA_COMMIT),),
        partition_metadata={
            p: RollbackPartitionMetadata(p, success_delete_files=tuple(names))
            for p, names in deleted.items()
        },
    )
    if not any(
        i.timestamp == ts and i.action == ROLLBACK and i.state == COMPLETED
        for i in timeline.instants
    ):
        complete(mdt, mconfig, ROLLBACK, ts, encode_rollback_metadata(meta))
    # The target's instant files go last: until then a reader sees a completed delta
    # commit without its log file, which lists nothing.
    for instant in sorted(mine, key=lambda i: i.state != COMPLETED):
        with contextlib.suppress(FileNotFoundError):
            mdt.delete(timeline.path_of(instant))


def _logs_of(
    mdt: PrefixedStorage, partitions: Sequence[str], target: str
) -> dict[tuple[str, str], list[str]]:
    """(partition, file id) -> the log files delta commit ``target`` wrote there."""
    out: dict[tuple[str, str], list[str]] = {}
    for partition in partitions:
        for info in mdt.list_dir(partition):
            parsed = parse_log_file_name(info.path)
            if parsed is not None and parsed.instant == target:
                out.setdefault((partition, parsed.file_id), []).append(info.path)
    return out
