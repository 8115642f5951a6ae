"""Finishing the metadata table's own table services that a writer died in.

Metadata compactions and cleans run under the data table's lock (``maintain``), so one still
pending when the next writer holds the lock was left by a writer that died. Hudi re-runs or
rolls them back before its next table service; lakecore does the same before it decides
whether to compact (otherwise a pending instant would stop every later compaction):

- a pending compaction is rolled back: its base files (``<file id>_*_<instant>.hfile`` in any
  partition) are deleted, then its instant files. Its plan folded only completed delta
  commits, whose log files stay, so nothing is lost; the next compaction, when due, folds them
  again. Until then readers never saw its base files (its instant was not completed).
- a pending clean is finished: the files its plan lists are deleted (those already gone are
  skipped) and the clean completes. Readers never needed them: a clean deletes only slices
  older than the latest two.
"""

from __future__ import annotations

from collections.abc import Sequence

from lakecore_hudi.mdt.prefixed import PrefixedStorage
from lakecore_hudi.names import parse_base_file_name
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.timeline.active import Timeline, load_timeline
from lakecore_hudi.timeline.clean_metadata import (
    CleanMetadata,
    CleanPartitionMetadata,
    encode_clean_metadata,
    parse_cleaner_plan,
)
from lakecore_hudi.timeline.instants import CLEAN, COMPACTION, REQUESTED, Instant
from lakecore_hudi.timeline.lifecycle import complete, write_inflight

__all__ = ["recover_table_services"]


def recover_table_services(
    mdt: PrefixedStorage, mconfig: TableConfig, partitions: Sequence[str]
) -> None:
    """Roll back a pending metadata compaction and finish a pending metadata clean (see the
    module docstring); the caller holds the data table's lock.

    Raises:
        OSError: the storage failed (the instant stays pending; the next writer retries).
        CorruptTableError: a pending clean's plan is unreadable.
    """
    timeline = load_timeline(mdt, mconfig)
    for instant in timeline.pending():
        if instant.action == COMPACTION:
            _roll_back_compaction(mdt, timeline, instant, partitions)
        elif instant.action == CLEAN:
            _finish_clean(mdt, mconfig, timeline, instant)


def _roll_back_compaction(
    mdt: PrefixedStorage, timeline: Timeline, instant: Instant, partitions: Sequence[str]
) -> None:
    for partition in partitions:
        for info in mdt.list_dir(partition):
            parsed = parse_base_file_name(info.path)
            if parsed is not None and parsed.instant == instant.timestamp:
                mdt.delete(info.path)
    mine = [i for i in timeline.instants if i.timestamp == instant.timestamp]
    for state in sorted(mine, key=lambda i: i.state != REQUESTED, reverse=True):
        mdt.delete(timeline.path_of(state))  # inflight first, the plan last


def _finish_clean(
    mdt: PrefixedStorage, mconfig: TableConfig, timeline: Timeline, instant: Instant
) -> None:
    requested = next(
        i for i in timeline.instants if i.timestamp == instant.timestamp and i.state == REQUESTED
    )
    plan = parse_cleaner_plan(timeline.read_details(mdt, requested), requested.file_name)
    deleted: dict[str, list[str]] = {}
    for partition, paths in plan.files_to_delete.items():
        for path in paths:
            name = path.rsplit("/", 1)[-1]
            mdt.delete(f"{partition}/{name}")  # idempotent: some may be gone already
            deleted.setdefault(partition, []).append(name)
    retain = plan.earliest_instant_to_retain[0] if plan.earliest_instant_to_retain else ""
    meta = CleanMetadata(
        start_clean_time=instant.timestamp,
        total_files_deleted=sum(len(n) for n in deleted.values()),
        earliest_commit_to_retain=retain,
        last_completed_commit_timestamp=retain,
        policy=plan.policy,
        partition_metadata={
            p: CleanPartitionMetadata(
                partition_path=p,
                policy=plan.policy,
                delete_path_patterns=tuple(names),
                success_delete_files=tuple(names),
                is_partition_deleted=False,
            )
            for p, names in deleted.items()
        },
    )
    if instant.state == REQUESTED:
        content = timeline.read_details(mdt, requested)
        write_inflight(mdt, mconfig, CLEAN, instant.timestamp, content)
    complete(mdt, mconfig, CLEAN, instant.timestamp, encode_clean_metadata(meta))
