"""Hudi heartbeats and instant times (issue 9, items 4 and 5).

Item 4: a writer slower than the heartbeat expiry keeps its instant alive (background beats),
and a rollback decided against an instant re-checks it right before deleting anything, under
the table lock, so acknowledged data is never deleted. Item 5: instant times are unique across
every action of the timeline, even with a frozen clock and racing writers.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lakecore_hudi.timeline import lifecycle
from lakecore_hudi.timeline.active import Timeline, load_timeline
from lakecore_hudi.timeline.instants import COMMIT, ROLLBACK
from lakecore_hudi.write import apply, heartbeat, planned, rollback
from lakecore_hudi.write import commit as commit_module
from lakecore_hudi.write.commit import commit_planned
from lakecore_hudi.write.heartbeat import heartbeat_path
from lakecore_hudi.write.planned import PlannedInstant
from lakecore_hudi.write.writer import state_of

import lakecore
from lakecore.errors import CommitConflictError
from lakecore.model.actions import FormatPayload
from lakecore.table import Table
from tests.hudi.write.helpers import Row, assert_reads, create, model_of, rows


def set_properties(root: Path, properties: dict[str, str]) -> None:
    """Add ``properties`` to the table's hoodie.properties (as a user would edit it)."""
    path = root / ".hoodie" / "hoodie.properties"
    with path.open("a", encoding="ascii") as f:
        f.writelines(f"{k}={v}\n" for k, v in properties.items())


def plan_without_commit(table: Table, operation: str, data: Any) -> PlannedInstant:
    """Run a writer up to inflight (files written) and stop: a writer about to commit."""
    writer = table._format_writer(table.snapshot())
    actions, _ = getattr(writer, operation)(data)
    payload = actions[0]
    assert isinstance(payload, FormatPayload) and isinstance(payload.payload, PlannedInstant)
    return payload.payload


def age_heartbeat(root: Path, instant: str) -> None:
    """Make the instant's heartbeat an hour old, as if its writer died."""
    old = time.time() - 3600
    os.utime(root / heartbeat_path(instant), (old, old))


def with_row(model: dict[int, Row], row: tuple[int, str, int, str]) -> dict[int, Row]:
    return {**model, **model_of(rows(row))}


# ------------------------------------------------------------------ item 4: heartbeats


def test_a_writer_slower_than_the_heartbeat_expiry_is_not_rolled_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "t"
    table = create(root)
    # Expiry 1.6 s: the slow writer below writes for several expiries.
    set_properties(
        root,
        {
            "hoodie.client.heartbeat.interval_in_ms": "800",
            "hoodie.client.heartbeat.tolerable.misses": "2",
        },
    )
    model = model_of(rows((1, "a", 1, "x")))
    table.append(rows((1, "a", 1, "x")))
    writing, finish = threading.Event(), threading.Event()
    real_run_job = apply.run_job

    def run_job(*args: Any, **kwargs: Any) -> Any:
        if threading.current_thread().name == "slow-writer":
            writing.set()
            finish.wait(30)
        return real_run_job(*args, **kwargs)

    monkeypatch.setattr("lakecore_hudi.write.writer.run_job", run_job)
    outcome: dict[str, Any] = {}

    def slow_upsert() -> None:
        try:
            outcome["version"] = lakecore.open(str(root)).upsert(rows((1, "slow", 5, "x")))
        except BaseException as exc:  # reported by the assertions below
            outcome["error"] = exc

    slow = threading.Thread(target=slow_upsert, name="slow-writer")
    slow.start()
    try:
        assert writing.wait(30)
        other = lakecore.open(str(root))
        for i in range(2):  # each write first rolls back the writes it takes for failed
            time.sleep(1.9)
            other.append(rows((10 + i, "o", 1, "y")))
            model = with_row(model, (10 + i, "o", 1, "y"))
    finally:
        finish.set()
        slow.join(60)
    assert "error" not in outcome, outcome.get("error")
    model = with_row(model, (1, "slow", 5, "x"))
    assert_reads(root, model)
    timeline = load_timeline(table.storage, state_of(table.snapshot()).config)
    assert [i.action for i in timeline.completed()] == [COMMIT] * 4  # no rollback
    assert not [t for t in threading.enumerate() if t.name.startswith("hudi-heartbeat-")]


def test_heartbeats_beat_in_the_background_and_stop_with_the_block(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = create(root)
    set_properties(
        root,
        {
            "hoodie.client.heartbeat.interval_in_ms": "100",
            "hoodie.client.heartbeat.tolerable.misses": "5",
        },
    )
    config = state_of(table.snapshot()).config
    assert heartbeat.refresh_period_s(config) == pytest.approx(0.1)
    storage = table.storage
    heartbeat.beat(storage, "20250101000000000")
    age_heartbeat(root, "20250101000000000")
    assert heartbeat.is_expired(storage, config, "20250101000000000", time.time() * 1000)
    with heartbeat.kept_alive(storage, config, "20250101000000000"):
        time.sleep(0.6)
        assert not heartbeat.is_expired(storage, config, "20250101000000000", time.time() * 1000)
    assert not [t for t in threading.enumerate() if t.name.startswith("hudi-heartbeat-")]
    heartbeat.stop(storage, "20250101000000000")
    time.sleep(0.2)  # a beat after the block would bring the file back
    assert not (root / heartbeat_path("20250101000000000")).exists()


def test_a_rollback_racing_the_commit_of_its_target_never_deletes_acknowledged_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writer B finds instant A's heartbeat expired and decides to roll A back; A's writer
    wakes up, checks its commit and completes it while B is about to delete A's files.
    Either A's commit fails (and its files are gone) or it succeeds and its rows stay."""
    root = tmp_path / "t"
    table = create(root)
    first = rows((1, "a", 1, "x"), (2, "b", 1, "x"))
    table.append(first)
    model = model_of(first)
    base = state_of(table.snapshot())
    a = plan_without_commit(table, "upsert", rows((1, "A", 2, "x")))
    age_heartbeat(root, a.timestamp)
    a_checked, b_deleting = threading.Event(), threading.Event()
    outcome: dict[str, Any] = {}
    real_complete = commit_module.complete

    def complete(*args: Any, **kwargs: Any) -> Any:
        a_checked.set()  # A passed its conflict check
        b_deleting.wait(1.5)  # (with the lock B is not deleting now: A holds the lock)
        return real_complete(*args, **kwargs)

    monkeypatch.setattr(commit_module, "complete", complete)

    def commit_a() -> None:
        try:
            outcome["version"] = commit_planned(lakecore.open(str(root)).storage, base, [a])
        except BaseException as exc:  # judged below
            outcome["error"] = exc

    writer_a = threading.Thread(target=commit_a)
    real_failed_files = rollback.failed_files
    real_execute = rollback._execute

    def failed_files(*args: Any, **kwargs: Any) -> Any:
        # B has decided A is dead; now A's writer wakes up and commits.
        writer_a.start()
        a_checked.wait(1.5)  # (with the lock A cannot check now: B holds the lock)
        beat = root / heartbeat_path(a.timestamp)
        deadline = time.monotonic() + 10
        while time.time() - beat.stat().st_mtime > 60 and time.monotonic() < deadline:
            time.sleep(0.01)  # A's writer beats first thing when it commits
        return real_failed_files(*args, **kwargs)

    def execute(*args: Any, **kwargs: Any) -> Any:
        b_deleting.set()
        writer_a.join(1.5)  # A completes now, unless the lock keeps it out
        return real_execute(*args, **kwargs)

    monkeypatch.setattr(rollback, "failed_files", failed_files)
    monkeypatch.setattr(rollback, "_execute", execute)
    rollback.rollback_failed_writes(table.storage, base.config)
    writer_a.join(30)
    if "error" in outcome:
        assert isinstance(outcome["error"], CommitConflictError), outcome["error"]
        assert not any((root / f).exists() for f in a.files)
    else:
        assert outcome["version"] == a.timestamp
        assert all((root / f).exists() for f in a.files), "acknowledged data was deleted"
        model = with_row(model, (1, "A", 2, "x"))
    assert_reads(root, model)
    # Under the lock, B re-checked right before deleting, saw A's fresh heartbeat (A beats
    # before it waits for the lock) and withdrew; then A committed.
    assert "error" not in outcome
    timeline = load_timeline(table.storage, base.config)
    assert [i for i in timeline.instants if i.action == ROLLBACK] == []
    assert timeline.pending() == ()


def test_a_dead_writer_is_still_rolled_back(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = create(root, "MERGE_ON_READ")
    set_properties(
        root,
        {
            "hoodie.client.heartbeat.interval_in_ms": "100",
            "hoodie.client.heartbeat.tolerable.misses": "1",
        },
    )
    first = rows((1, "a", 1, "x"))
    table.append(first)
    dead = plan_without_commit(table, "upsert", rows((1, "dead", 9, "x")))
    time.sleep(0.3)  # no writer beats for it any more
    table.append(rows((2, "b", 1, "y")))
    assert not any((root / f).exists() for f in dead.files)
    assert_reads(root, model_of(rows((1, "a", 1, "x"), (2, "b", 1, "y"))))
    timeline = load_timeline(table.storage, state_of(table.snapshot()).config)
    assert [i.action for i in timeline.completed()][-2:] == [ROLLBACK, "deltacommit"]


# ------------------------------------------------------------------ item 5: instant times


FROZEN = dt.datetime(2031, 1, 2, 3, 4, 5, 678000, tzinfo=dt.timezone.utc)


def freeze_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every new instant time is taken as if it were FROZEN now."""
    real = lifecycle.new_instant_time

    def frozen(after: str | None = None, now: dt.datetime | None = None) -> str:
        return real(after, FROZEN)

    monkeypatch.setattr(planned, "new_instant_time", frozen)
    monkeypatch.setattr(lifecycle, "new_instant_time", frozen)


def _stamps(timeline: Timeline) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for i in timeline.instants:
        out.setdefault(i.timestamp, set()).add(i.action)
    return out


def test_a_commit_and_a_rollback_started_together_get_different_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "t"
    table = create(root)
    table.append(rows((1, "a", 1, "x")))
    config = state_of(table.snapshot()).config
    freeze_clock(monkeypatch)
    together = threading.Barrier(2, timeout=1.0)
    real_load = planned.load_timeline

    def load(*args: Any) -> Timeline:
        timeline = real_load(*args)
        if threading.current_thread().name.startswith("starter"):
            # Both starters list the timeline before either claims (unless a lock keeps
            # the second out until the first has claimed: then the wait times out).
            with contextlib.suppress(threading.BrokenBarrierError):
                together.wait()
        return timeline

    monkeypatch.setattr(planned, "load_timeline", load)
    got: dict[str, str] = {}

    def start(action: str) -> Callable[[], None]:
        def run() -> None:
            storage = lakecore.open(str(root)).storage
            got[action] = planned.start_instant(storage, config, action, heartbeat=False)

        return run

    threads = [threading.Thread(target=start(a), name=f"starter-{a}") for a in (COMMIT, ROLLBACK)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert set(got) == {COMMIT, ROLLBACK}
    assert got[COMMIT] != got[ROLLBACK]
    stamps = _stamps(load_timeline(table.storage, config))
    assert all(len(actions) == 1 for actions in stamps.values()), stamps


def test_an_instant_time_taken_by_another_action_is_given_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer that skips the lock (or a stale listing) took the time under another action:
    the claim is withdrawn and a later time taken."""
    root = tmp_path / "t"
    table = create(root)
    table.append(rows((1, "a", 1, "x")))
    config = state_of(table.snapshot()).config
    freeze_clock(monkeypatch)
    stale = load_timeline(table.storage, config)
    taken = lifecycle.new_instant_time(max(i.timestamp for i in stale.instants), FROZEN)
    (root / ".hoodie" / "timeline" / f"{taken}.rollback.requested").write_bytes(b"")
    listings: list[int] = []
    real_load = planned.load_timeline

    def load(*args: Any) -> Timeline:
        listings.append(1)
        return stale if len(listings) == 1 else real_load(*args)

    monkeypatch.setattr(planned, "load_timeline", load)
    ts = planned.start_instant(table.storage, config, COMMIT, heartbeat=False)
    assert ts > taken
    assert not (root / ".hoodie" / "timeline" / f"{taken}.commit.requested").exists()
    assert _stamps(load_timeline(table.storage, config))[taken] == {ROLLBACK}


def test_new_instants_follow_every_instant_of_any_action_and_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "t"
    table = create(root)
    table.append(rows((1, "a", 1, "x")))
    freeze_clock(monkeypatch)  # FROZEN is in 2031: later than every instant so far
    future = "20400101000000000"
    (root / ".hoodie" / "timeline" / f"{future}.clean.requested").write_bytes(b"")
    version = table.append(rows((2, "b", 1, "y"))).version
    assert str(version) > future
    again = table.append(rows((3, "c", 1, "z"))).version
    assert str(again) > str(version)


def test_completion_times_follow_every_instant_on_the_timeline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Layout 2: a writer that completes after another one started completes after its start
    (Hudi's TrueTime rule), even when the clock lags behind that start."""
    root = tmp_path / "t"
    table = create(root)
    table.append(rows((1, "a", 1, "x")))
    config = state_of(table.snapshot()).config
    first = plan_without_commit(table, "append", rows((2, "b", 1, "y")))
    later = "20400101000000000"  # another writer's start, ahead of this clock
    (root / ".hoodie" / "timeline" / f"{later}.commit.requested").write_bytes(b"")
    freeze_clock(monkeypatch)
    commit_planned(table.storage, state_of(table.snapshot()), [first])
    done = [
        i
        for i in load_timeline(table.storage, config).completed()
        if i.timestamp == first.timestamp
    ]
    assert len(done) == 1
    assert done[0].completion_time is not None and done[0].completion_time > later
