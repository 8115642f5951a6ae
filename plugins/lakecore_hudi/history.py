"""History of a Hudi table: its completed instants, newest first, with action and operation."""

from __future__ import annotations

from lakecore.errors import CorruptTableError
from lakecore.model.history import HistoryEntry
from lakecore.storage import Storage
from lakecore_hudi.archived_writes import timeline_start
from lakecore_hudi.state import REPLACE_ACTIONS, instant_epoch_ms
from lakecore_hudi.table_config import TableConfig, read_table_config
from lakecore_hudi.timeline.active import Timeline, load_timeline
from lakecore_hudi.timeline.commit_metadata import CommitMetadata, parse_commit_metadata

_WITH_COMMIT_METADATA = ("commit", "deltacommit", *REPLACE_ACTIONS)
RESERVED_EXTRA_METADATA = frozenset({"schema"})
"""``extraMetadata`` keys Hudi's writers (and lakecore's) fill themselves; every other key
is application metadata (``CommitInfo.app_metadata``, Hudi's commit metadata key options,
a streamer's checkpoint)."""


def history(storage: Storage, limit: int | None = None) -> list[HistoryEntry]:
    """Every completed instant (writes, cleans, rollbacks, ...), newest first.

    ``version`` is the instant timestamp; ``operation`` the write operation recorded in the
    commit metadata (``insert``, ``upsert``, ``delete``, ``insert_overwrite``, ...) or the
    action for instants without one (``clean``, ``rollback``); ``info`` holds the action,
    the completion time and, for writes, the rows written per partition. Instants of the
    archived timeline (LSM history or the v6 archive) follow, marked ``info["archived"]``, with
    the same operation and counts (their completion time is the LSM timeline's, None for the
    v6 archive); time travel reaches them while a clean has not deleted their files.
    ``app_metadata`` is the commit metadata's ``extraMetadata`` but its ``schema``.
    """
    config = read_table_config(storage)
    timeline = load_timeline(storage, config)
    completed = list(reversed(timeline.completed()))
    out: list[HistoryEntry] = []
    if limit is not None:
        completed = completed[: max(0, limit)]
    for instant in completed:
        meta = None
        if instant.action in _WITH_COMMIT_METADATA:
            try:
                meta = parse_commit_metadata(
                    timeline.read_details(storage, instant), timeline.path_of(instant)
                )
            except (CorruptTableError, FileNotFoundError):
                meta = None
        info: dict[str, object] = {
            "action": instant.action,
            "completion_time": timeline.completion_time(instant),
        }
        out.append(_entry(instant.timestamp, instant.action, info, meta))
    # Archived instants are older than the first write on the active timeline (only cleans and
    # rollbacks of a v6 table can be older and still active): read the archive when the
    # entries so far reach back past that.
    start = timeline_start(timeline)
    if limit is None or len(out) < limit or (out and str(out[-1].version) < start):
        out.extend(_archived(storage, config, timeline, limit, 0))
        out.sort(key=lambda e: str(e.version), reverse=True)
        if limit is not None:
            out = out[: max(0, limit)]
    return out


def _entry(
    timestamp: str, action: str, info: dict[str, object], meta: CommitMetadata | None
) -> HistoryEntry:
    """The history entry of one completed instant (``meta``: its commit metadata, if any)."""
    operation: str | None = action
    app_metadata: dict[str, str] = {}
    if meta is not None:
        operation = (meta.operation_type or action).lower()
        stats = list(meta.write_stats())
        info["num_writes"] = sum(s.num_writes for s in stats)
        info["num_deletes"] = sum(s.num_deletes for s in stats)
        info["files_written"] = len(stats)
        app_metadata = {
            k: v for k, v in meta.extra_metadata.items() if k not in RESERVED_EXTRA_METADATA
        }
    return HistoryEntry(
        version=timestamp,
        timestamp=instant_epoch_ms(timestamp),
        operation=operation,
        info=info,
        app_metadata=app_metadata,
    )


def _archived(
    storage: Storage, config: TableConfig, timeline: Timeline, limit: int | None, have: int
) -> list[HistoryEntry]:
    """Archived instants not on the active timeline, newest first, read with their commit
    metadata as active ones are. An instant archived twice (an archiving that died before
    deleting it) is listed once."""
    from lakecore_hudi.timeline.archived import load_archived_timeline

    # An instant still on the active timeline (archiving died before deleting it) is listed
    # from there; v6 keeps old cleans active while newer commits are archived, so the archive
    # is not cut at the first active instant.
    active = {i.timestamp for i in timeline.instants}
    archived = load_archived_timeline(storage, config, with_details=True)
    unique = {(a.timestamp, a.action): a for a in archived if a.timestamp not in active}
    older = sorted(unique.values(), key=lambda a: a.timestamp, reverse=True)
    if limit is not None:
        older = older[: max(0, limit - have)]
    out = []
    for a in older:
        meta = None
        if a.action in _WITH_COMMIT_METADATA and a.metadata:
            try:
                meta = parse_commit_metadata(a.metadata, f"{a.source_file} ({a.timestamp})")
            except CorruptTableError:
                meta = None
        info: dict[str, object] = {
            "action": a.action,
            "completion_time": a.completion_time,
            "archived": True,
        }
        out.append(_entry(a.timestamp, a.action, info, meta))
    return out
