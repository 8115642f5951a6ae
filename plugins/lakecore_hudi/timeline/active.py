"""The active timeline: every instant file in the timeline directory, from one listing.

Completion times: layout 2 (table version 8+) names them in the completed file. Layout 1 files
carry none; there, as Hudi 1.x does when it reads a version 6 table, ``completion_time`` falls
back to the completed file's modification time (UTC, ``yyyyMMddHHmmssSSS``). File mtimes are
not preserved by copies, so layout 1 completion times are only a best effort.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field

from lakecore.storage import Storage
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.timeline.instants import (
    COMPLETED,
    RESTORE,
    ROLLBACK,
    WRITE_ACTIONS,
    Instant,
    parse_instant_file,
)
from lakecore_hudi.timeline.rollback_metadata import (
    parse_restore_rolled_back,
    parse_rollback_metadata,
)


def format_instant_time(moment: dt.datetime) -> str:
    """``yyyyMMddHHmmssSSS`` of ``moment`` (converted to UTC when it is zone-aware)."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.timezone.utc)
    return moment.strftime("%Y%m%d%H%M%S") + f"{moment.microsecond // 1000:03d}"


@dataclass(frozen=True, slots=True)
class Timeline:
    """All instant files of the active timeline, sorted by (timestamp, state).

    ``instants`` has one entry per file: an instant usually appears three times (requested,
    inflight, completed). ``modification_times`` maps file names to epoch milliseconds.
    """

    instants: tuple[Instant, ...]
    layout: int
    timeline_dir: str
    modification_times: Mapping[str, int] = field(default_factory=dict, repr=False)

    def path_of(self, instant: Instant) -> str:
        """Path of ``instant``'s file, relative to the table root."""
        return f"{self.timeline_dir}/{instant.file_name}"

    def read_details(self, storage: Storage, instant: Instant) -> bytes:
        """The bytes of ``instant``'s file (may be empty).

        Raises:
            FileNotFoundError: the file is gone (e.g. archived or rolled back since listing).
        """
        return storage.read(self.path_of(instant))

    def completed(self) -> tuple[Instant, ...]:
        """Completed instants of every action, in timestamp order."""
        return tuple(i for i in self.instants if i.state == COMPLETED)

    def completed_write_instants(self) -> tuple[Instant, ...]:
        """Completed commit / deltacommit / replacecommit instants: what snapshots are made of.

        Compaction completes as ``commit`` and clustering as ``replacecommit``, so both are in.
        """
        return tuple(i for i in self.completed() if i.action in WRITE_ACTIONS)

    def latest_states(self) -> tuple[Instant, ...]:
        """One instant per timestamp: its most advanced state."""
        latest: dict[str, Instant] = {}
        for instant in self.instants:  # sorted, so later states overwrite earlier ones
            latest[instant.timestamp] = instant
        return tuple(latest.values())

    def pending(self) -> tuple[Instant, ...]:
        """Instants with no completed file, each in its most advanced state."""
        return tuple(i for i in self.latest_states() if i.state != COMPLETED)

    def find(self, timestamp: str) -> Instant | None:
        """The most advanced state of the instant at ``timestamp``, or None."""
        found = None
        for instant in self.instants:
            if instant.timestamp == timestamp:
                found = instant
        return found

    def latest_completed_write(self) -> Instant | None:
        """The last completed write instant, or None for a table with no data commits."""
        writes = self.completed_write_instants()
        return writes[-1] if writes else None

    def instant_at_or_before(self, timestamp: str) -> Instant | None:
        """The last completed write instant whose timestamp is <= ``timestamp``, or None.

        Timestamps compare as strings, which orders equal-length instant times correctly;
        a shorter ``timestamp`` (e.g. ``yyyyMMddHHmmss``) is padded with ``9`` so that it
        includes its whole second.
        """
        key = timestamp.ljust(17, "9") if len(timestamp) < 17 else timestamp
        found = None
        for instant in self.completed_write_instants():
            if instant.timestamp <= key:
                found = instant
        return found

    def completion_time(self, instant: Instant) -> str | None:
        """``instant``'s completion time; layout 1 falls back to the file's mtime (see module)."""
        if instant.completion_time is not None or instant.state != COMPLETED:
            return instant.completion_time
        mtime = self.modification_times.get(instant.file_name)
        if mtime is None:
            return None
        return format_instant_time(dt.datetime.fromtimestamp(mtime / 1000, dt.timezone.utc))

    def rolled_back_instants(self, storage: Storage) -> frozenset[str]:
        """Timestamps undone by completed rollbacks and restores on the active timeline.

        Reads each completed rollback / restore file (usually few).

        Raises:
            CorruptTableError: a rollback or restore file is undecodable.
        """
        stamps: set[str] = set()
        for instant in self.completed():
            if instant.action == ROLLBACK:
                data = self.read_details(storage, instant)
                meta = parse_rollback_metadata(data, self.path_of(instant))
                stamps |= meta.rolled_back_timestamps()
            elif instant.action == RESTORE:
                data = self.read_details(storage, instant)
                stamps |= parse_restore_rolled_back(data, self.path_of(instant))
        return frozenset(stamps)

    def max_completion_time(self) -> str | None:
        """The greatest completion time named on the timeline (layout 2), or None."""
        times = [i.completion_time for i in self.instants if i.completion_time is not None]
        return max(times) if times else None


def load_timeline(storage: Storage, config: TableConfig) -> Timeline:
    """List the active timeline of the table (one directory listing, no file reads).

    A missing timeline directory (a table with no commits yet) gives an empty Timeline.
    """
    layout = config.timeline_layout_version
    timeline_dir = config.timeline_dir
    instants: list[Instant] = []
    mtimes: dict[str, int] = {}
    for info in storage.list_dir(timeline_dir):
        instant = parse_instant_file(info.path, layout)
        if instant is None:
            continue
        instants.append(instant)
        mtimes[instant.file_name] = info.modification_time
    instants.sort()
    return Timeline(tuple(instants), layout, timeline_dir, mtimes)
