"""Time travel to an instant that writes no data (``clean``, ``rollback``, ``indexing``, ...).

``Table.history()`` lists every completed instant, so every version it names must read. Hudi's
``as.of.instant`` reads the table as its latest completed write at or before the instant it is
given, whatever that instant's action; lakecore does the same for a completed non-write instant
and keeps refusing a version that names no completed instant at all.
"""

from __future__ import annotations

from collections.abc import Sequence

from lakecore.storage import Storage
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.timeline.active import Timeline
from lakecore_hudi.timeline.instants import WRITE_ACTIONS, Instant


def non_write_instant(
    storage: Storage,
    config: TableConfig,
    timeline: Timeline,
    writes: Sequence[Instant],
    version: str | None,
) -> bool:
    """Whether ``version`` names a completed instant of a non-write action, on the active
    timeline or (older than every active instant) the archived one.

    Reads the archived timeline only for a version older than the active timeline that is not
    an active write. Raises ``CorruptTableError`` from an unreadable archive.
    """
    if not version or any(w.timestamp == version for w in writes):
        return False
    active = [i for i in timeline.completed() if i.timestamp == version]
    if active:
        return all(i.action not in WRITE_ACTIONS for i in active)
    first = timeline.instants[0].timestamp if timeline.instants else None
    if first is not None and version >= first:
        return False
    from lakecore_hudi.timeline.archived import load_archived_timeline

    archived = load_archived_timeline(storage, config, start=version, end=version)
    found = [a for a in archived if a.timestamp == version]
    return bool(found) and all(a.action not in WRITE_ACTIONS for a in found)
