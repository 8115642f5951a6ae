"""Timeline instants and the file names that hold them, for both timeline layouts.

Layout 1 (table versions 5-6, files in ``.hoodie/``)::

    <ts>.<action>.requested   <ts>.<action>.inflight   <ts>.<action>       (completed)
    <ts>.inflight             the inflight state of a plain ``commit``

Layout 2 (table version 8+, files in ``.hoodie/timeline/``) is the same except that a completed
file also carries its completion time: ``<ts>_<completion>.<action>``.

Some actions complete under another name: ``compaction`` completes as ``commit``,
``logcompaction`` as ``deltacommit`` and (layout 2) ``clustering`` as ``replacecommit``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

State = Literal["REQUESTED", "INFLIGHT", "COMPLETED"]
REQUESTED: State = "REQUESTED"
INFLIGHT: State = "INFLIGHT"
COMPLETED: State = "COMPLETED"
_STATE_RANK = {REQUESTED: 0, INFLIGHT: 1, COMPLETED: 2}

COMMIT = "commit"
DELTA_COMMIT = "deltacommit"
REPLACE_COMMIT = "replacecommit"
CLUSTERING = "clustering"
COMPACTION = "compaction"
LOG_COMPACTION = "logcompaction"
CLEAN = "clean"
ROLLBACK = "rollback"
SAVEPOINT = "savepoint"
RESTORE = "restore"
INDEXING = "indexing"
SCHEMA_COMMIT = "schemacommit"

KNOWN_ACTIONS = frozenset(
    {
        COMMIT,
        DELTA_COMMIT,
        REPLACE_COMMIT,
        CLUSTERING,
        COMPACTION,
        LOG_COMPACTION,
        CLEAN,
        ROLLBACK,
        SAVEPOINT,
        RESTORE,
        INDEXING,
        SCHEMA_COMMIT,
    }
)
#: Completed actions whose instants change table data (what a snapshot reads).
WRITE_ACTIONS = frozenset({COMMIT, DELTA_COMMIT, REPLACE_COMMIT})

# Pending actions that complete under a different action name.
_COMPLETES_AS = {COMPACTION: COMMIT, LOG_COMPACTION: DELTA_COMMIT, CLUSTERING: REPLACE_COMMIT}

_NAME = re.compile(
    r"^(?P<ts>\d+)(?:_(?P<ct>\d+))?\.(?P<action>[a-z]+)(?:\.(?P<state>requested|inflight))?$"
)


@dataclass(frozen=True, slots=True)
class Instant:
    """One instant file of the timeline.

    ``action`` is the action the file name carries: a completed compaction is a ``commit``
    while its requested/inflight files say ``compaction``. ``completion_time`` is known only for
    completed instants of timeline layout 2. Instants sort by (timestamp, state), with
    REQUESTED < INFLIGHT < COMPLETED.
    """

    timestamp: str
    action: str
    state: State
    completion_time: str | None
    file_name: str

    @property
    def is_completed(self) -> bool:
        """Whether this is the completed file of its instant."""
        return self.state == COMPLETED

    @property
    def sort_key(self) -> tuple[str, int, str]:
        """(timestamp, state rank, action): the timeline order."""
        return (self.timestamp, _STATE_RANK[self.state], self.action)

    def __lt__(self, other: Instant) -> bool:
        return self.sort_key < other.sort_key

    def __le__(self, other: Instant) -> bool:
        return self.sort_key <= other.sort_key

    def __gt__(self, other: Instant) -> bool:
        return self.sort_key > other.sort_key

    def __ge__(self, other: Instant) -> bool:
        return self.sort_key >= other.sort_key


def completed_action(action: str, layout: int = 2) -> str:
    """The action name an instant of pending ``action`` completes under.

    ``clustering`` only exists in layout 2; in layout 1 clustering is a ``replacecommit``
    throughout, so either way it completes as ``replacecommit``.
    """
    del layout  # the mapping is the same in both layouts; kept for call-site clarity
    return _COMPLETES_AS.get(action, action)


def parse_instant_file(name: str, layout: int) -> Instant | None:
    """Parse one file name of the timeline directory; None for anything that is not an instant.

    ``name`` may be a path; only its last part is looked at. Files such as ``hoodie.properties``,
    ``.aux``, ``.temp``, ``.schema``, ``metadata/`` or ``history/`` entries, files of unknown
    actions and, in layout 1, names with a completion time are ignored (None).
    """
    base = name.rsplit("/", 1)[-1]
    match = _NAME.match(base)
    if match is None:
        return None
    ts, ct, action, state_suffix = match.group("ts", "ct", "action", "state")
    if action == "inflight" and ct is None and state_suffix is None:
        # "<ts>.inflight": the inflight file of a commit (both layouts).
        return Instant(ts, COMMIT, INFLIGHT, None, base)
    if action not in KNOWN_ACTIONS:
        return None
    if state_suffix is not None:
        if ct is not None:
            return None  # a completion time only ever appears on completed files
        state: State = REQUESTED if state_suffix == "requested" else INFLIGHT
        return Instant(ts, action, state, None, base)
    if ct is not None and layout < 2:
        return None
    return Instant(ts, action, COMPLETED, ct, base)


def instant_file_name(instant: Instant, layout: int) -> str:
    """The file name ``instant`` is stored under in timeline ``layout``.

    Raises:
        ValueError: a layout 2 completed instant without a completion time.
    """
    ts, action = instant.timestamp, instant.action
    if instant.state == REQUESTED:
        return f"{ts}.{action}.requested"
    if instant.state == INFLIGHT:
        return f"{ts}.inflight" if action == COMMIT else f"{ts}.{action}.inflight"
    done = completed_action(action, layout)
    if layout >= 2:
        if instant.completion_time is None:
            raise ValueError(f"completed instant {ts} needs a completion time in layout 2")
        return f"{ts}_{instant.completion_time}.{done}"
    return f"{ts}.{done}"


def make_instant(
    timestamp: str, action: str, state: State, layout: int, completion_time: str | None = None
) -> Instant:
    """Build an Instant with its file name; completed instants take their completed action.

    Raises:
        ValueError: see ``instant_file_name``.
    """
    if state == COMPLETED:
        action = completed_action(action, layout)
        if layout < 2:
            completion_time = None
    else:
        completion_time = None
    probe = Instant(timestamp, action, state, completion_time, "")
    return Instant(timestamp, action, state, completion_time, instant_file_name(probe, layout))
