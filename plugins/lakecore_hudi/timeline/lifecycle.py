"""Moving an instant through its states: requested -> inflight -> completed.

Each state is a new file; earlier state files stay (Hudi keeps all three). Every write is a
``put_if_absent``, so two writers can never both create the same state file.

Layout 2 completion: the completed file name carries a completion time that is generated at
completion and must exceed every instant and completion time on the timeline (writers generate
it under the table lock, so completion times grow in completion order). Because two writers
could complete the same instant under *different* completion times, ``complete`` lists the
timeline again after its write; if another completed file for the instant exists, the one with
the smaller completion time wins and the loser deletes its file and raises CommitConflictError.

A completion whose write fails with a storage error may still have landed (the reply was lost):
``complete`` reads the file back and returns normally if it holds this completion's content,
and raises ``CommitStateUnknownError`` if that cannot be decided; never a raw ``OSError``.
"""

from __future__ import annotations

import datetime as dt

from lakecore.errors import CommitConflictError, CommitStateUnknownError
from lakecore.storage import Storage
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.timeline.active import format_instant_time, load_timeline
from lakecore_hudi.timeline.instants import (
    COMPLETED,
    INFLIGHT,
    REQUESTED,
    Instant,
    State,
    completed_action,
    make_instant,
)


def _parse_instant_time(value: str) -> dt.datetime | None:
    digits = value.ljust(17, "0") if len(value) == 14 else value
    try:
        parsed = dt.datetime.strptime(digits[:14], "%Y%m%d%H%M%S")
        return parsed.replace(microsecond=int(digits[14:17]) * 1000, tzinfo=dt.timezone.utc)
    except ValueError:
        return None


def new_instant_time(after: str | None = None, now: dt.datetime | None = None) -> str:
    """A new instant time ``yyyyMMddHHmmssSSS`` (UTC), strictly greater than ``after``.

    The clock is used when it is past ``after``; otherwise ``after`` plus one millisecond
    (so clock skew or a burst of calls within one millisecond still yields increasing times).
    """
    candidate = format_instant_time(now or dt.datetime.now(dt.timezone.utc))
    if after is None or candidate > after:
        return candidate
    parsed = _parse_instant_time(after)
    if parsed is None:  # not a date (e.g. the metadata table's "00000000000000010")
        return str(int(after) + 1).zfill(len(after))
    return format_instant_time(parsed + dt.timedelta(milliseconds=1))


def _create(storage: Storage, config: TableConfig, instant: Instant, content: bytes) -> Instant:
    path = f"{config.timeline_dir}/{instant.file_name}"
    try:
        storage.put_if_absent(path, content)
    except FileExistsError:
        raise CommitConflictError(
            f"instant {instant.timestamp} ({instant.action}) is already {instant.state.lower()}: "
            f"{path} exists; another writer is using this instant time",
            winning_version=instant.timestamp,
        ) from None
    return instant


def _transition(
    storage: Storage, config: TableConfig, action: str, ts: str, state: State, content: bytes
) -> Instant:
    instant = make_instant(ts, action, state, config.timeline_layout_version)
    return _create(storage, config, instant, content)


def write_requested(
    storage: Storage, config: TableConfig, action: str, ts: str, content: bytes = b""
) -> Instant:
    """Create ``<ts>.<action>.requested`` holding ``content`` (a plan, or empty).

    Raises:
        CommitConflictError: the requested file already exists.
    """
    return _transition(storage, config, action, ts, REQUESTED, content)


def write_inflight(
    storage: Storage, config: TableConfig, action: str, ts: str, content: bytes = b""
) -> Instant:
    """Create the inflight file (``<ts>.inflight`` for ``commit``, else
    ``<ts>.<action>.inflight``) holding ``content``.

    Raises:
        CommitConflictError: the inflight file already exists.
    """
    return _transition(storage, config, action, ts, INFLIGHT, content)


def complete(
    storage: Storage, config: TableConfig, action: str, ts: str, content: bytes
) -> Instant:
    """Create the completed file of instant ``ts`` and return its Instant.

    ``action`` may be the pending action (``compaction``, ``clustering``): the file takes the
    completed action name. Layout 1: ``<ts>.<action>``. Layout 2: ``<ts>_<completion>.<action>``
    with a completion time greater than every instant and completion time on the timeline.

    Raises:
        CommitConflictError: the instant is already completed, or another writer completed it
            concurrently (see the module docstring for how the winner is decided).
        CommitStateUnknownError: the write failed (or found the file present) and whether it
            is ours cannot be told; or ours lost to a concurrent completion and could not be
            deleted.
        OSError: listing the timeline failed before anything was written.
    """
    layout = config.timeline_layout_version
    if layout < 2:
        return _create_completed(
            storage, config, make_instant(ts, action, COMPLETED, layout), content
        )
    timeline = load_timeline(storage, config)
    if _completed_files(timeline.instants, ts):
        raise CommitConflictError(
            f"instant {ts} is already completed on {config.timeline_dir}", winning_version=ts
        )
    stamps = [ts, timeline.max_completion_time(), *(i.timestamp for i in timeline.instants)]
    floor = max(s for s in stamps if s)
    instant = make_instant(ts, action, COMPLETED, layout, new_instant_time(floor))
    _create_completed(storage, config, instant, content)
    try:
        rivals = _completed_files(load_timeline(storage, config).instants, ts)
    except OSError:
        # Ours landed; rivals only exist where writers skip the table lock. A failed check
        # must not turn this completion into a failure.
        return instant
    if not rivals:
        return instant
    winner = min(rivals, key=lambda i: i.completion_time or "")
    if winner.file_name != instant.file_name:
        try:
            storage.delete(f"{config.timeline_dir}/{instant.file_name}")
        except OSError as exc:
            # Ours landed and lost, and it is still there: two completed files for one
            # instant. Whatever readers make of it, "nothing was committed" is not known.
            raise CommitStateUnknownError(
                f"instant {ts} was completed concurrently by another writer "
                f"({winner.file_name}) and deleting this writer's completed file "
                f"{instant.file_name} failed ({type(exc).__name__}: {exc}); read the table's "
                "history before running the operation again"
            ) from exc
        raise CommitConflictError(
            f"instant {ts} was completed concurrently by another writer ({winner.file_name})",
            winning_version=ts,
        )
    return instant


def _create_completed(
    storage: Storage, config: TableConfig, instant: Instant, content: bytes
) -> Instant:
    """``_create`` of a completed file, resolving a write whose outcome is unknown.

    A write that failed may have landed before its reply was lost, and a write that found the
    file present may be this very write landing (a client retrying a conditional PUT); either
    way the file is read back and counts as ours when it holds ``content``. A failed write
    whose file is absent is tried once more.

    Raises:
        CommitConflictError: another writer's completed file is there.
        CommitStateUnknownError: the write failed and whether it landed cannot be told.
    """
    path = f"{config.timeline_dir}/{instant.file_name}"
    fault: OSError | None = None
    held: bool | None = None
    for _ in range(2):
        try:
            storage.put_if_absent(path, content)
            return instant
        except FileExistsError:
            # Ours (a client retrying a conditional PUT that landed), another's, or unknown.
            found = _holds(storage, path, content)
            if found is True:
                return instant
            if found is None:
                raise CommitStateUnknownError(
                    f"completing instant {instant.timestamp}: {path} exists (perhaps this "
                    "write, retried by the storage client) and could not be read back; read "
                    "the table's history before running the operation again"
                ) from None
            raise CommitConflictError(
                f"instant {instant.timestamp} ({instant.action}) is already completed: {path} "
                "exists; another writer completed this instant",
                winning_version=instant.timestamp,
            ) from None
        except OSError as exc:
            fault = exc
        held = _holds(storage, path, content)
        if held is True:
            return instant
        if held is None:
            break  # cannot even read: the outcome stays unknown
    raise CommitStateUnknownError(
        f"completing instant {instant.timestamp} failed ({type(fault).__name__}: {fault}) and "
        f"{path} {'is not there' if held is False else 'could not be read back'}; the write "
        "may still land: read the table's history before running the operation again (a "
        "pending instant is rolled back by a later writer once its heartbeat expires)"
    ) from fault


def _holds(storage: Storage, path: str, content: bytes) -> bool | None:
    """Whether ``path`` holds ``content``: False if it is absent or differs, None if unknown."""
    try:
        return storage.read(path) == content
    except FileNotFoundError:
        return False
    except OSError:
        return None


def _completed_files(instants: tuple[Instant, ...], ts: str) -> list[Instant]:
    return [i for i in instants if i.timestamp == ts and i.state == COMPLETED]


__all__ = [
    "complete",
    "completed_action",
    "new_instant_time",
    "write_inflight",
    "write_requested",
]
