"""History of a Hudi table: its completed instants, newest first, with action and operation."""

from __future__ import annotations

from lakecore.errors import CorruptTableError
from lakecore.model.history import HistoryEntry
from lakecore.storage import Storage
from lakecore_hudi.state import REPLACE_ACTIONS, instant_epoch_ms
from lakecore_hudi.table_config import TableConfig, read_table_config
from lakecore_hudi.timeline.active import Timeline, load_timeline
from lakecore_hudi.timeline.metadata import parse_commit_metadata

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
    archived timeline (LSM history or the v6 archive) follow, marked ``info["archived"]``;
    time travel to them is not offered (their files are usually cleaned).
    ``app_metadata`` is the commit metadata's ``extraMetadata`` but its ``schema``.
    """
    config = read_table_config(storage)
    timeline = load_timeline(storage, config)
    completed = list(reversed(timeline.completed()))
    out: list[HistoryEntry] = []
    if limit is not None:
        completed = completed[: max(0, limit)]
    for instant in completed:
        operation: str | None = instant.action
        app_metadata: dict[str, str] = {}
        info: dict[str, object] = {
            "action": instant.action,
            "completion_time": timeline.completion_time(instant),
        }
        if instant.action in _WITH_COMMIT_METADATA:
            try:
                meta = parse_commit_metadata(
                    timeline.read_details(storage, instant), timeline.path_of(instant)
                )
            except (CorruptTableError, FileNotFoundError):
                meta = None
            if meta is not None:
                operation = (meta.operation_type or instant.action).lower()
                stats = list(meta.write_stats())
                info["num_writes"] = sum(s.num_writes for s in stats)
                info["num_deletes"] = sum(s.num_deletes for s in stats)
                info["files_written"] = len(stats)
                app_metadata = {
                    k: v for k, v in meta.extra_metadata.items() if k not in RESERVED_EXTRA_METADATA
                }
        out.append(
            HistoryEntry(
                version=instant.timestamp,
                timestamp=instant_epoch_ms(instant.timestamp),
                operation=operation,
                info=info,
                app_metadata=app_metadata,
            )
        )
    if limit is None or len(out) < limit:
        out.extend(_archived(storage, config, timeline, limit, len(out)))
    return out


def _archived(
    storage: Storage, config: TableConfig, timeline: Timeline, limit: int | None, have: int
) -> list[HistoryEntry]:
    """Archived instants older than the active timeline, newest first (no commit metadata:
    the archive is only read for names and times)."""
    from lakecore_hudi.timeline.archived import load_archived_timeline

    first = timeline.instants[0].timestamp if timeline.instants else None
    archived = load_archived_timeline(storage, config)
    older = sorted(
        (a for a in archived if first is None or a.timestamp < first),
        key=lambda a: a.timestamp,
        reverse=True,
    )
    if limit is not None:
        older = older[: max(0, limit - have)]
    return [
        HistoryEntry(
            version=a.timestamp,
            timestamp=instant_epoch_ms(a.timestamp),
            operation=a.action,
            info={"action": a.action, "completion_time": a.completion_time, "archived": True},
        )
        for a in older
    ]
