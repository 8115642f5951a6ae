"""Delta history (commitInfo of each commit) and version lookup by timestamp."""

from __future__ import annotations

import bisect
from typing import Any

from lakecore.errors import TableNotFoundError, VersionNotFoundError
from lakecore.model.history import HistoryEntry
from lakecore.storage import Storage
from lakecore_delta.commit_metadata import app_metadata_of
from lakecore_delta.log.commits import find_last_action, first_action, read_all
from lakecore_delta.log.files import LogFile, LogFileKind
from lakecore_delta.log.segment import list_log


def commit_files(storage: Storage) -> list[LogFile]:
    """All commit files of the log, ascending; raises ``TableNotFoundError`` if none."""
    commits = [f for f in list_log(storage, 0) if f.kind is LogFileKind.COMMIT]
    if not commits:
        raise TableNotFoundError(f"{storage.root}: the _delta_log holds no commit file")
    return commits


def _timestamp(f: LogFile, info: dict[str, Any] | None, first: dict[str, Any] | None) -> int:
    if first and isinstance(first.get("commitInfo"), dict):
        ict = first["commitInfo"].get("inCommitTimestamp")
        if ict is not None:
            return int(ict)
    return f.info.modification_time


def history(storage: Storage, limit: int | None = None) -> list[HistoryEntry]:
    """Return one entry per commit still in the log, newest first."""
    commits = commit_files(storage)[::-1]
    if limit is not None:
        commits = commits[:limit]
    out = []
    for f, chunk in zip(commits, read_all(storage, commits), strict=True):
        info = find_last_action([chunk], [f], "commitInfo") or {}
        params = info.get("operationParameters")
        out.append(
            HistoryEntry(
                version=f.version,
                timestamp=_timestamp(f, info, first_action(chunk, f)),
                operation=info.get("operation"),
                parameters=dict(params) if isinstance(params, dict) else {},
                info=info,
                app_metadata=app_metadata_of(info),
            )
        )
    return out


def version_at(storage: Storage, timestamp_ms: int) -> int:
    """Return the newest version committed at or before ``timestamp_ms``.

    Commit time is the in-commit timestamp where the commit has one, else the commit file's
    modification time. Raises ``VersionNotFoundError`` if the time is before the first commit.
    """
    commits = commit_files(storage)
    times = [
        _timestamp(f, None, first_action(chunk, f))
        for f, chunk in zip(commits, read_all(storage, commits), strict=True)
    ]
    # Commit times must not decrease; mtimes can (copied tables), so keep a running maximum.
    for i in range(1, len(times)):
        times[i] = max(times[i], times[i - 1])
    i = bisect.bisect_right(times, timestamp_ms)
    if i == 0:
        raise VersionNotFoundError(
            f"timestamp {timestamp_ms} is before the earliest available commit "
            f"(version {commits[0].version} at {times[0]})"
        )
    return commits[i - 1].version
