"""Cleaning the metadata table after a compaction: every file group of every partition.

Hudi keeps the slice a compaction replaced for readers still on it; older slices go. Per file
group, slices start at its base files' instants (and, before its first base file, at the
group's first log file: file groups Hudi initialises without a base file); once a group has
at least three slices, the files of those older than the second-latest are deleted: base
files by their instant, log files by the completion time of the delta commit that wrote them
(table version 8 file slicing; a delta commit archived from the active timeline completed
before any compaction still active, so its log file goes with the slice it lies in). All
partitions' deletions make ONE ``clean`` instant (``KEEP_LATEST_FILE_VERSIONS``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lakecore_hudi.mdt.prefixed import PrefixedStorage
from lakecore_hudi.names import BaseFile, LogFile, parse_base_file_name, parse_log_file_name
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.timeline.active import load_timeline
from lakecore_hudi.timeline.clean_metadata import (
    CleanerPlan,
    CleanMetadata,
    CleanPartitionMetadata,
    encode_clean_metadata,
    encode_cleaner_plan,
)
from lakecore_hudi.timeline.instants import CLEAN, COMMIT
from lakecore_hudi.timeline.lifecycle import (
    complete,
    new_instant_time,
    write_inflight,
    write_requested,
)

__all__ = ["clean_metadata", "doomed_files"]

POLICY = "KEEP_LATEST_FILE_VERSIONS"


def doomed_files(
    mdt: PrefixedStorage, partition: str, completion: Mapping[str, str], first_active: str | None
) -> list[str]:
    """The file names of ``partition`` that slices older than the second-latest hold."""
    groups: dict[str, list[tuple[str, str, bool]]] = {}  # file id -> (name, instant, is base)
    for info in mdt.list_dir(partition):
        name = info.path.rsplit("/", 1)[1]
        parsed: BaseFile | LogFile | None = parse_log_file_name(name)
        if parsed is None:
            parsed = parse_base_file_name(name)
        if parsed is None or (isinstance(parsed, BaseFile) and parsed.extension != "hfile"):
            continue
        groups.setdefault(parsed.file_id, []).append(
            (name, parsed.instant, isinstance(parsed, BaseFile))
        )
    doomed: list[str] = []
    for files in groups.values():
        starts = sorted(i for _, i, base in files if base)
        if not starts or any(
            _log_time(i, completion, first_active) < starts[0] for _, i, b in files if not b
        ):
            starts.insert(0, "")
        if len(starts) < 3:
            continue
        keep_from = starts[-2]
        for name, instant, base in files:
            when = instant if base else _log_time(instant, completion, first_active)
            if when < keep_from:
                doomed.append(name)
    return sorted(doomed)


def _log_time(instant: str, completion: Mapping[str, str], first_active: str | None) -> str:
    """When the delta commit that wrote a log file completed; "~" (never) when unknown,
    "" (long ago) when it was archived."""
    if instant in completion:
        return completion[instant]
    if first_active is not None and instant < first_active:
        return ""
    return "~"


def clean_metadata(
    mdt: PrefixedStorage, mconfig: TableConfig, partitions: Sequence[str], compaction: str
) -> None:
    """Delete, under one clean instant, the slices the compaction ``compaction`` made
    obsolete in ``partitions`` (see the module docstring); a no-op when none are.

    Raises:
        OSError: the storage failed (the clean stays pending; its files are gone or not).
    """
    timeline = load_timeline(mdt, mconfig)
    completion = {i.timestamp: timeline.completion_time(i) or "" for i in timeline.completed()}
    first = min((i.timestamp for i in timeline.instants), default=None)
    doomed = {p: doomed_files(mdt, p, completion, first) for p in partitions}
    doomed = {p: names for p, names in doomed.items() if names}
    if not doomed:
        return
    ts = new_instant_time(max([compaction, *completion.values()]))
    plan = CleanerPlan(
        POLICY,
        (compaction, COMMIT, "COMPLETED"),
        {p: tuple(mdt.resolve(f"{p}/{n}") for n in names) for p, names in doomed.items()},
    )
    content = encode_cleaner_plan(plan)
    write_requested(mdt, mconfig, CLEAN, ts, content)
    write_inflight(mdt, mconfig, CLEAN, ts, content)
    for p, names in doomed.items():
        for name in names:
            mdt.delete(f"{p}/{name}")
    meta = CleanMetadata(
        start_clean_time=ts,
        total_files_deleted=sum(len(n) for n in doomed.values()),
        earliest_commit_to_retain=compaction,
        last_completed_commit_timestamp=compaction,
        policy=POLICY,
        partition_metadata={
            p: CleanPartitionMetadata(
                partition_path=p,
                policy=POLICY,
                delete_path_patterns=tuple(names),
                success_delete_files=tuple(names),
                is_partition_deleted=False,
            )
            for p, names in doomed.items()
        },
    )
    complete(mdt, mconfig, CLEAN, ts, encode_clean_metadata(meta))
