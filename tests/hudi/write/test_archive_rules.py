"""Which instants the archiver picks (``write.archive_plan``): Hudi's archiving rules, one test
per rule, over synthetic timelines (no storage)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.timeline.active import Timeline
from lakecore_hudi.timeline.instants import Instant, make_instant
from lakecore_hudi.write.archive import may_need_archiving
from lakecore_hudi.write.archive_plan import ArchiveSettings, TableFacts, select

from lakecore.errors import CorruptTableError

SETTINGS = ArchiveSettings(min_commits=2, max_commits=4, cleaner_commits_retained=None)


def config_of(props: dict[str, str]) -> TableConfig:
    base = {"hoodie.table.name": "t", "hoodie.table.type": "COPY_ON_WRITE"}
    return TableConfig.from_properties({**base, "hoodie.table.version": "8", **props})


def ts(n: int) -> str:
    return f"20260101000000{n:03d}"


def states(n: int, action: str, done: str | None = None, layout: int = 2) -> list[Instant]:
    """Requested, inflight and (``done`` action, or none: pending) completed files of ``n``."""
    out = [
        make_instant(ts(n), action, "REQUESTED", layout),
        make_instant(ts(n), action, "INFLIGHT", layout),
    ]
    if done is not None:
        out.append(make_instant(ts(n), done, "COMPLETED", layout, ts(n) + "1"))
    return out


def timeline(*groups: list[Instant], layout: int = 2) -> Timeline:
    return Timeline(tuple(sorted(i for g in groups for i in g)), layout, ".hoodie/timeline")


def commits(*ns: int, layout: int = 2) -> list[list[Instant]]:
    return [states(n, "commit", "commit", layout) for n in ns]


def picked(tl: Timeline, facts: TableFacts | None = None, version: int = 8, **kw: Any) -> list[str]:
    settings = dataclasses.replace(SETTINGS, **kw)
    return [a.timestamp for a in select(tl, settings, facts or TableFacts(), version)]


def test_nothing_up_to_max_then_down_to_min() -> None:
    assert picked(timeline(*commits(1, 2, 3, 4))) == []
    assert picked(timeline(*commits(1, 2, 3, 4, 5))) == [ts(1), ts(2), ts(3)]


def test_every_state_file_goes_with_its_instant() -> None:
    tl = timeline(*commits(1, 2, 3, 4, 5))
    settings = SETTINGS
    actions = select(tl, settings, TableFacts(), 8)
    assert [len(a.instants) for a in actions] == [3, 3, 3]
    assert {i.state for i in actions[0].instants} == {"REQUESTED", "INFLIGHT", "COMPLETED"}


def test_pending_write_keeps_the_commit_before_it() -> None:
    tl = timeline(*commits(1, 2, 4, 5, 6), states(3, "commit"))
    assert picked(tl) == [ts(1)]  # 2 is the last completed commit before pending 3


def test_pending_compaction_counts_as_a_pending_write() -> None:
    tl = timeline(*commits(1, 3, 4, 5, 6), [make_instant(ts(2), "compaction", "REQUESTED", 2)])
    assert picked(tl) == []  # 1 is kept: the last completed commit before pending 2


def test_latest_clean_bounds_archiving() -> None:
    tl = timeline(*commits(1, 2, 3, 4, 5, 6))
    assert picked(tl) == [ts(1), ts(2), ts(3), ts(4)]
    assert picked(tl, TableFacts(clean_retains_from=ts(3))) == [ts(1), ts(2)]


def test_replacecommit_stays_until_cleaned_past() -> None:
    groups = [*commits(1, 3, 4, 5, 6), states(2, "replacecommit", "replacecommit")]
    tl = timeline(*groups)
    assert picked(tl) == [ts(1)]  # never cleaned: the first replacecommit stays
    # A clean that retains from 4 deleted what 2 replaced: 2 may go (4 bounds now).
    assert picked(tl, TableFacts(clean_retains_from=ts(4))) == [ts(1), ts(2), ts(3)]


def test_metadata_table_without_compaction_blocks_archiving() -> None:
    tl = timeline(*commits(1, 2, 3, 4, 5, 6))
    assert picked(tl, TableFacts(has_metadata_table=True)) == []
    # v8 keeps the first commit that completed after the MDT compaction (by completion time).
    facts = TableFacts(has_metadata_table=True, mdt_compaction=ts(2) + "5")
    assert picked(tl, facts) == [ts(1), ts(2)]
    assert picked(timeline(*commits(1, 2, 3, 4, 5, 6, layout=1), layout=1), facts, 6) == [
        ts(1),
        ts(2),
    ]


def test_merge_on_read_keeps_delta_commits_for_the_compaction_trigger() -> None:
    deltas = [states(n, "deltacommit", "deltacommit") for n in (1, 2, 3, 4, 5, 6)]
    tl = timeline(*deltas)
    facts = TableFacts(merge_on_read=True)
    assert picked(tl, facts, max_delta_commits=5) == [ts(1)]
    assert picked(tl, facts, max_delta_commits=None) == [ts(1), ts(2), ts(3), ts(4)]
    compacted = [states(3, "compaction", "commit")] + [
        states(n, "deltacommit", "deltacommit") for n in (1, 2, 4, 5, 6)
    ]
    # Fewer than 5 delta commits since compaction 3: the compaction bounds.
    assert picked(timeline(*compacted), facts, max_delta_commits=5) == [ts(1), ts(2)]


def test_savepoint_stops_archiving_unless_beyond() -> None:
    save = [make_instant(ts(3), "savepoint", "COMPLETED", 2, ts(3) + "2")]
    tl = timeline(*commits(1, 2, 3, 4, 5, 6), save)
    assert picked(tl) == [ts(1), ts(2)]
    assert picked(tl, beyond_savepoint=True) == [ts(1), ts(2), ts(4), ts(5)]


def test_cleaner_retention_raises_the_bounds() -> None:
    tl = timeline(*commits(*range(1, 11)))
    # 5 retained: Hudi keeps 4 + 2 = 6 (min) and raises max by the same amount (8).
    assert picked(tl, cleaner_commits_retained=5) == [ts(1), ts(2), ts(3), ts(4)]


def test_v8_archives_cleans_and_rollbacks_older_than_the_last_archived_commit() -> None:
    cleans = [states(n, "clean", "clean") for n in (10, 30)]
    tl = timeline(
        *[states(n, "commit", "commit") for n in (1, 20, 40, 50, 60, 70)],
        *cleans,
    )
    assert picked(tl) == [ts(1), ts(10), ts(20), ts(30), ts(40), ts(50)]


def test_v6_archives_cleans_by_their_own_count() -> None:
    cleans = [states(n, "clean", "clean", layout=1) for n in (10, 11, 12, 13, 14)]
    tl = timeline(*commits(1, 2, layout=1), *cleans, layout=1)
    assert picked(tl, version=6) == [ts(10), ts(11), ts(12)]


def test_may_need_archiving_is_the_cheap_bound() -> None:
    tl = timeline(*commits(1, 2, 3, 4))
    assert not may_need_archiving(tl, SETTINGS, 0, 0)
    assert may_need_archiving(tl, SETTINGS, 1, 0)
    six = timeline(
        *commits(1, 2, layout=1), *[states(n, "clean", "clean", 1) for n in range(10, 14)], layout=1
    )
    assert not may_need_archiving(six, SETTINGS, 0, 0)
    assert may_need_archiving(six, SETTINGS, 0, 1)


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({"hoodie.keep.min.commits": "5", "hoodie.keep.max.commits": "5"}, "hoodie.keep.max"),
        ({"hoodie.keep.min.commits": "x"}, "hoodie.keep.min.commits"),
        ({"hoodie.keep.max.commits": "0"}, "hoodie.keep.max.commits"),
        ({"hoodie.timeline.compaction.batch.size": "1"}, "hoodie.timeline.compaction"),
    ],
)
def test_malformed_settings_name_the_property(props: dict[str, str], key: str) -> None:
    config = config_of(props)
    with pytest.raises(CorruptTableError, match=key):
        ArchiveSettings.from_config(config)


def test_settings_defaults_and_overrides() -> None:
    assert ArchiveSettings.from_config(config_of({})) == ArchiveSettings()
    config = config_of(
        {
            "hoodie.keep.min.commits": "3",
            "hoodie.keep.max.commits": "7",
            "hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
            "hoodie.compact.inline.trigger.strategy": "TIME_ELAPSED",
            "hoodie.archive.automatic": "false",
        }
    )
    s = ArchiveSettings.from_config(config)
    assert (s.min_commits, s.max_commits, s.automatic) == (3, 7, False)
    assert s.cleaner_commits_retained is None and s.max_delta_commits is None
