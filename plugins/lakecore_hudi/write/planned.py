"""A planned Hudi write: an instant that is requested and inflight, its files already written.

A ``HudiWriter`` returns one as the payload of ``FormatPayload("hudi", ...)``; ``HudiFormat
.commit`` completes it. Until then readers do not see its files (they belong to an instant that
is not completed), and if its writer dies the next writer rolls it back.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from lakecore.errors import CommitConflictError
from lakecore.storage import Storage
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.timeline.active import load_timeline
from lakecore_hudi.timeline.lifecycle import new_instant_time, write_requested
from lakecore_hudi.timeline.metadata import CommitMetadata
from lakecore_hudi.write.heartbeat import beat

FileGroup = tuple[str, str]
"""(partition path, file id)."""

MAX_START_ATTEMPTS = 16


@dataclass(frozen=True, slots=True)
class PlannedInstant:
    """A write waiting to be completed.

    ``files`` are the data files it wrote (table-relative). ``touched`` are the existing file
    groups it changes (updated, deleted from, replaced or compacted); a concurrent completed
    write to any of them is a conflict. ``exclusive`` writes (overwriting or deleting the whole
    table) conflict with any concurrent completed write.
    """

    timestamp: str
    action: str
    metadata: CommitMetadata
    files: tuple[str, ...]
    touched: frozenset[FileGroup]
    exclusive: bool = False


def file_groups_of(metadata: CommitMetadata) -> set[FileGroup]:
    """Every file group a commit wrote to or replaced."""
    groups: set[FileGroup] = set()
    for partition, stats in metadata.partition_to_write_stats.items():
        groups.update((partition, s.file_id) for s in stats if s.file_id)
    groups.update(metadata.replaced_file_ids())
    return groups


def start_instant(
    storage: Storage,
    config: TableConfig,
    action: str,
    requested: bytes = b"",
    heartbeat: bool = True,
) -> str:
    """Pick a new instant time after every instant on the timeline and write its requested file.

    With ``heartbeat`` the instant's heartbeat starts before the requested file appears, so no
    other writer ever sees it pending without one. Instant times taken concurrently by another
    writer are skipped.

    Raises:
        CommitConflictError: no free instant time after many attempts.
    """
    for _ in range(MAX_START_ATTEMPTS):
        timeline = load_timeline(storage, config)
        stamps: Iterable[str | None] = [
            *(i.timestamp for i in timeline.instants),
            timeline.max_completion_time(),
        ]
        present = [s for s in stamps if s]
        ts = new_instant_time(max(present) if present else None)
        if heartbeat:
            beat(storage, ts)
        try:
            write_requested(storage, config, action, ts, requested)
        except CommitConflictError:
            continue  # another writer took this instant time: pick a later one
        return ts
    raise CommitConflictError(f"could not start a {action}: other writers keep taking instants")
