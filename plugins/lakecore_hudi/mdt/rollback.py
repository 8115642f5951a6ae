"""Rolling back, in the metadata table, a data instant that is being rolled back.

Hudi rolls back the metadata delta commit of a rolled-back data instant under a metadata
``rollback`` instant with the data rollback's own instant time, before the data rollback
completes. With table version 8 every metadata delta commit wrote its own log file
(``files/.files-0000-0_<instant>.log.1_*``), so rolling it back deletes that file, then
deletes the instant's files from the metadata timeline. Every step is idempotent: a data
rollback resumed after a crash runs this again.

A data instant is only rolled back while it is pending, and the metadata table never
compacts a delta commit whose data instant is pending (``maintain``), so the delta commit is
never folded into a base file by then.
"""

from __future__ import annotations

import contextlib
import time

from lakecore.errors import CommitConflictError
from lakecore.storage import Storage
from lakecore_hudi.mdt.files_partition import FILES_PARTITION
from lakecore_hudi.mdt.table import FILES_FILE_ID, metadata_config, metadata_storage
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.timeline.active import load_timeline
from lakecore_hudi.timeline.instants import COMPLETED, DELTA_COMMIT, ROLLBACK
from lakecore_hudi.timeline.lifecycle import complete, write_inflight, write_requested
from lakecore_hudi.timeline.metadata import (
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
    prefix = f".{FILES_FILE_ID}_{target}.log."
    logs = [
        i.path for i in mdt.list_dir(FILES_PARTITION) if i.path.rsplit("/", 1)[1].startswith(prefix)
    ]
    started = any(i.timestamp == ts and i.action == ROLLBACK for i in timeline.instants)
    if not mine and not logs and not started:
        return
    plan = RollbackPlan(
        (target, DELTA_COMMIT),
        (RollbackRequest(FILES_PARTITION, FILES_FILE_ID, "", tuple(mdt.resolve(p) for p in logs)),),
    )
    began = time.time()
    with contextlib.suppress(CommitConflictError):  # resuming: already there
        write_requested(mdt, mconfig, ROLLBACK, ts, encode_rollback_plan(plan))
    with contextlib.suppress(CommitConflictError):
        write_inflight(mdt, mconfig, ROLLBACK, ts)
    for path in logs:
        with contextlib.suppress(FileNotFoundError):
            mdt.delete(path)
    names = tuple(p.rsplit("/", 1)[1] for p in logs)
    meta = RollbackMetadata(
        start_rollback_time=ts,
        time_taken_ms=int((time.time() - began) * 1000),
        total_files_deleted=len(logs),
        commits_rollback=(target,),
        instants_rollback=((target, DELTA_COMMIT),),
        partition_metadata={
            FILES_PARTITION: RollbackPartitionMetadata(FILES_PARTITION, success_delete_files=names)
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
