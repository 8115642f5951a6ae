"""Which instants of the active timeline to archive: the rules of Hudi's timeline archivers.

Pure functions over a listed ``Timeline`` (plus the two facts read from elsewhere: the earliest
commit the latest clean retains, and the latest compaction of the metadata table). The rules,
as Hudi's ``TimelineArchiverV2`` (table version 8+) and ``TimelineArchiverV1`` (version 6) apply
them:

* Completed *commits* (commit, deltacommit, replacecommit) are archived only when there are more
  than ``hoodie.keep.max.commits`` (default 30); then the oldest are archived until
  ``hoodie.keep.min.commits`` (default 20) remain, but never one at or after:

  - the earliest pending write (commit, deltacommit, replacecommit, compaction, logcompaction,
    clustering): the last completed commit before it is kept, so there is no hole before it;
  - the earliest commit to retain recorded by the latest clean (the cleaner still needs it);
  - the first replacecommit / clustering at or after that instant (the first one at all when
    the table was never cleaned): replaced file groups stay visible as replaced until a clean
    deleted them;
  - MERGE_ON_READ: the instant from which ``hoodie.compact.inline.max.delta.commits`` (default
    5) delta commits since the latest compaction remain (Hudi's NUM_COMMITS compaction trigger
    counts them on the active timeline);
  - a table with a metadata table: its latest compaction (none yet: nothing is archived);
  - the first savepoint (unless ``hoodie.archive.beyond.savepoint``, which skips savepoints).

  As Hudi's ``ArchivalUtils``, a ``hoodie.cleaner.commits.retained`` (KEEP_LATEST_COMMITS,
  default 10) larger than ``min - 1`` raises both bounds so the cleaner keeps its commits.
* Completed cleans and rollbacks: v8+ archives those older than the newest commit archived;
  v6 archives, per action, the oldest down to ``min`` once there are more than ``max``.
* Every state file (requested, inflight, completed) of an archived instant goes with it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lakecore.errors import CorruptTableError
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.timeline.active import Timeline
from lakecore_hudi.timeline.instants import (
    CLEAN,
    CLUSTERING,
    COMMIT,
    COMPACTION,
    COMPLETED,
    DELTA_COMMIT,
    LOG_COMPACTION,
    REPLACE_COMMIT,
    ROLLBACK,
    SAVEPOINT,
    Instant,
    completed_action,
)

_PENDING_WRITE_ACTIONS = frozenset(
    {COMMIT, DELTA_COMMIT, REPLACE_COMMIT, COMPACTION, LOG_COMPACTION, CLUSTERING}
)
_COUNT_TRIGGERS = ("NUM_COMMITS", "NUM_AND_TIME")


def _int_setting(config: TableConfig, key: str, default: int, minimum: int) -> int:
    raw = config.get(key)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise CorruptTableError(
            f"{config.source_file}: {key}={raw!r} must be a whole number of at least {minimum}"
        )
    return value


@dataclass(frozen=True, slots=True)
class ArchiveSettings:
    """The archiving settings of a table (Hudi's write configs, read from its properties)."""

    min_commits: int = 20
    max_commits: int = 30
    cleaner_commits_retained: int | None = 10
    """Commits the KEEP_LATEST_COMMITS cleaner retains; None for other cleaner policies."""
    max_delta_commits: int | None = 5
    """Delta commits Hudi's compaction trigger counts; None when it does not count them."""
    beyond_savepoint: bool = False
    automatic: bool = True
    """``hoodie.archive.automatic``: archive after every commit."""
    timeline_compaction_batch: int = 10
    """``hoodie.timeline.compaction.batch.size``: LSM files compacted into the next layer."""
    archival_batch: int = 10
    """``hoodie.commits.archival.batch``: records per Avro block of a v6 archive log."""

    @classmethod
    def from_config(cls, config: TableConfig) -> ArchiveSettings:
        """Read the settings; missing keys take Hudi's defaults.

        Raises:
            CorruptTableError: a value that is not a whole number in range, or
                ``hoodie.keep.min.commits`` not below ``hoodie.keep.max.commits`` (as Hudi's
                write config validation); names the property.
        """
        low = _int_setting(config, "hoodie.keep.min.commits", 20, 1)
        high = _int_setting(config, "hoodie.keep.max.commits", 30, 2)
        if low >= high:
            raise CorruptTableError(
                f"{config.source_file}: hoodie.keep.max.commits={high} must be greater than "
                f"hoodie.keep.min.commits={low}"
            )
        policy = (config.get("hoodie.cleaner.policy") or "KEEP_LATEST_COMMITS").strip().upper()
        retained = _int_setting(config, "hoodie.cleaner.commits.retained", 10, 1)
        trigger = (config.get("hoodie.compact.inline.trigger.strategy") or "NUM_COMMITS").upper()
        deltas = _int_setting(config, "hoodie.compact.inline.max.delta.commits", 5, 1)
        return cls(
            min_commits=low,
            max_commits=high,
            cleaner_commits_retained=retained if policy == "KEEP_LATEST_COMMITS" else None,
            max_delta_commits=deltas if trigger.strip() in _COUNT_TRIGGERS else None,
            beyond_savepoint=(config.get("hoodie.archive.beyond.savepoint") or "").lower()
            == "true",
            automatic=(config.get("hoodie.archive.automatic") or "true").lower() != "false",
            timeline_compaction_batch=_int_setting(
                config, "hoodie.timeline.compaction.batch.size", 10, 2
            ),
            archival_batch=_int_setting(config, "hoodie.commits.archival.batch", 10, 1),
        )

    def bounds(self, commits: Sequence[Instant]) -> tuple[int, int]:
        """(min, max) commits to keep, raised as Hudi's ``ArchivalUtils`` does when the
        cleaner retains more commits than ``min`` leaves."""
        retained = self.cleaner_commits_retained
        if retained is None or len(commits) <= retained:
            return self.min_commits, self.max_commits
        # The cleaner's earliest commit to retain is the retained-th latest; Hudi keeps the
        # commits after it plus two.
        needed = (retained - 1) + 2
        if needed <= self.min_commits:
            return self.min_commits, self.max_commits
        return needed, needed + self.max_commits - self.min_commits


@dataclass(frozen=True, slots=True)
class ArchivedAction:
    """One instant to archive: every state file of (timestamp, action) on the timeline.

    ``action`` is the completed action (a compaction completes as ``commit``).
    """

    timestamp: str
    action: str
    instants: tuple[Instant, ...]

    @property
    def completed(self) -> Instant | None:
        """The completed state file."""
        return next((i for i in self.instants if i.state == COMPLETED), None)

    def pending_state(self, state: str) -> Instant | None:
        """The requested or inflight state file, if it is on the timeline."""
        return next((i for i in self.instants if i.state == state), None)


@dataclass(frozen=True, slots=True)
class TableFacts:
    """What the selection needs beyond the timeline listing."""

    clean_retains_from: str | None = None
    """The earliest commit to retain of the latest completed clean ("" / None: no clean)."""
    has_metadata_table: bool = False
    mdt_compaction: str | None = None
    """The latest completed compaction instant of the metadata table, if any."""
    merge_on_read: bool = False


def select(
    timeline: Timeline, settings: ArchiveSettings, facts: TableFacts, table_version: int
) -> tuple[ArchivedAction, ...]:
    """The instants to archive, oldest first (empty when nothing needs archiving)."""
    commits = list(timeline.completed_write_instants())
    chosen = _commits_to_archive(timeline, commits, settings, facts, table_version)
    completed = timeline.completed()
    if table_version >= 8:
        if not chosen:
            return ()
        last = chosen[-1].timestamp
        chosen += [i for i in completed if i.action in (CLEAN, ROLLBACK) and i.timestamp < last]
    else:
        low, high = settings.bounds(commits)
        for action in (CLEAN, ROLLBACK):
            done = [i for i in completed if i.action == action]
            if len(done) > high:
                chosen += done[: len(done) - low]
        if facts.has_metadata_table:
            # V1 limits every candidate (cleans and rollbacks too) by the MDT's compaction.
            cap = facts.mdt_compaction
            chosen = [i for i in chosen if cap is not None and i.timestamp < cap]
    return _with_states(timeline, sorted(chosen))


def _commits_to_archive(
    timeline: Timeline,
    commits: list[Instant],
    settings: ArchiveSettings,
    facts: TableFacts,
    table_version: int,
) -> list[Instant]:
    low, high = settings.bounds(commits)
    if len(commits) <= high:
        return []
    if facts.has_metadata_table and facts.mdt_compaction is None:
        return []  # as Hudi: no archiving before the metadata table's first compaction
    bound = _earliest_to_retain(timeline, commits, settings, facts, table_version)
    savepoints = sorted(i.timestamp for i in timeline.completed() if i.action == SAVEPOINT)
    out: list[Instant] = []
    for c in commits:
        if savepoints and not settings.beyond_savepoint and c.timestamp >= savepoints[0]:
            break
        if settings.beyond_savepoint and c.timestamp in savepoints:
            continue
        if bound is not None and c.timestamp >= bound:
            break
        out.append(c)
    return out[: max(0, len(commits) - low)]


def _earliest_to_retain(
    timeline: Timeline,
    commits: list[Instant],
    settings: ArchiveSettings,
    facts: TableFacts,
    table_version: int,
) -> str | None:
    """The smallest instant time no archived commit may reach (None: no bound)."""
    bounds: list[str] = []
    pending = [i.timestamp for i in timeline.pending() if i.action in _PENDING_WRITE_ACTIONS]
    if pending:
        first = min(pending)
        before = [c.timestamp for c in commits if c.timestamp < first]
        bounds.append(before[-1] if before else first)
    if facts.clean_retains_from:
        bounds.append(facts.clean_retains_from)
    replaces = [
        i.timestamp
        for i in timeline.latest_states()
        if completed_action(i.action) == REPLACE_COMMIT or i.action == CLUSTERING
    ]
    floor = facts.clean_retains_from or ""
    after = [t for t in replaces if t >= floor]
    if after:
        bounds.append(min(after))
    if facts.merge_on_read and settings.max_delta_commits is not None:
        found = _retain_for_compaction(timeline, settings.max_delta_commits)
        if found is not None:
            bounds.append(found)
    if facts.has_metadata_table and facts.mdt_compaction is not None:
        bounds.append(_retain_for_mdt(commits, facts.mdt_compaction, table_version))
    return min(bounds) if bounds else None


def _retain_for_compaction(timeline: Timeline, max_deltas: int) -> str | None:
    """Keep ``max_deltas`` delta commits since the latest compaction (or that compaction)."""
    latest = timeline.latest_states()
    compactions = [i.timestamp for i in latest if i.state == COMPLETED and i.action == COMMIT]
    since = compactions[-1] if compactions else None
    deltas = [
        i.timestamp
        for i in latest
        if i.action == DELTA_COMMIT and (since is None or i.timestamp > since)
    ]
    if len(deltas) >= max_deltas:
        return deltas[len(deltas) - max_deltas]
    if since is not None:
        return since
    return deltas[0] if deltas else None


def _retain_for_mdt(commits: list[Instant], compaction: str, table_version: int) -> str:
    """V2 keeps the first commit that completed after the MDT compaction; V1 compares
    instant times."""
    if table_version >= 8:
        later = [c.timestamp for c in commits if (c.completion_time or c.timestamp) > compaction]
        return later[0] if later else "9" * 17
    return compaction


def _with_states(timeline: Timeline, chosen: Sequence[Instant]) -> tuple[ArchivedAction, ...]:
    groups: dict[tuple[str, str], list[Instant]] = {}
    for instant in timeline.instants:
        groups.setdefault((instant.timestamp, completed_action(instant.action)), []).append(instant)
    out: list[ArchivedAction] = []
    seen: set[tuple[str, str]] = set()
    for c in chosen:
        key = (c.timestamp, completed_action(c.action))
        if key in seen:
            continue
        seen.add(key)
        out.append(ArchivedAction(c.timestamp, key[1], tuple(sorted(groups.get(key, [c])))))
    return tuple(out)


def describe(actions: Sequence[ArchivedAction]) -> Mapping[str, str]:
    """timestamp -> action of ``actions`` (for messages and results)."""
    return {a.timestamp: a.action for a in actions}
