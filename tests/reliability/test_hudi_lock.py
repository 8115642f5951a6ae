"""The Hudi table lock, rollbacks under it and commit outcomes (issue 9, items 2/4/10 review).

Staleness is judged on the waiter's own monotonic clock (plus the lock file's mtime, as Hudi
does), heartbeats against the store's clock, so clock skew never breaks a live lock or rolls
back a live writer. Rollbacks list before taking the lock, re-check the lock before deleting
and never delete under ``.hoodie/``. Commit outcomes: a retried completion that cannot be
read back is "unknown", never a conflict; an interrupted commit releases its lock.
"""

from __future__ import annotations

import os
import re
import time
import types
from pathlib import Path
from typing import Any

import pytest
from lakecore_hudi.timeline.instants import COMMIT
from lakecore_hudi.timeline.rollback_metadata import (
    RollbackPlan,
    RollbackRequest,
    encode_rollback_plan,
)
from lakecore_hudi.write import commit as commit_module
from lakecore_hudi.write import heartbeat, planned, rollback
from lakecore_hudi.write import lock as lock_module
from lakecore_hudi.write.heartbeat import heartbeat_path
from lakecore_hudi.write.lock import LOCK_PATH, acquire
from lakecore_hudi.write.writer import state_of

import lakecore
from lakecore.errors import (
    CommitConflictError,
    CommitStateUnknownError,
    CommitStorageError,
    CorruptTableError,
)
from lakecore.storage import FileInfo, FsspecStorage
from tests.hudi.write.helpers import assert_reads, create, rows
from tests.reliability.test_hudi_commit_outcome import (
    COMPLETED,
    FakeClock,
    Fault,
    FlakyStorage,
    _hudi_lock,
    _pending,
    _table,
)
from tests.reliability.test_hudi_heartbeat import plan_without_commit, set_properties

FOREIGN = b'{"lockThreadName": "a live Hudi writer"}'


def _config(root: Path) -> Any:
    return state_of(lakecore.open(str(root)).snapshot()).config


def _skewed_time(monkeypatch: pytest.MonkeyPatch, module: Any, ahead_s: float) -> None:
    """``module``'s wall clock runs ``ahead_s`` ahead (its monotonic clock is right)."""
    real = time.time
    fake = types.SimpleNamespace(
        time=lambda: real() + ahead_s, monotonic=time.monotonic, sleep=time.sleep
    )
    monkeypatch.setattr(module, "time", fake)


# ------------------------------------------------------------------ item 1: clock skew


def test_a_client_clock_far_ahead_never_breaks_a_live_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = _table(tmp_path)
    (root / LOCK_PATH).write_bytes(FOREIGN)  # fresh: a live holder
    _skewed_time(monkeypatch, lock_module, ahead_s=7200)
    with pytest.raises(CommitConflictError, match="table lock"):
        acquire(FsspecStorage(str(root)), _config(root), wait_ms=300)
    assert (root / LOCK_PATH).read_bytes() == FOREIGN


def test_a_lock_is_broken_only_once_the_same_content_stayed_for_the_expiry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = _table(tmp_path)
    _hudi_lock(root, age_s=120)  # old by its mtime
    clock = FakeClock()
    monkeypatch.setattr(lock_module, "observed_clock", clock)
    storage = FsspecStorage(str(root))
    seen: dict[str, float] = {}
    lock_module._break_if_stale(storage, 60_000, seen)
    assert (root / LOCK_PATH).exists()  # seen just now
    clock.now += 61
    _hudi_lock(root, age_s=120)  # a new holder took it meanwhile (same old mtime here)
    (root / LOCK_PATH).write_text('{"lockThreadName": "next holder"}')
    lock_module._break_if_stale(storage, 60_000, seen)
    assert (root / LOCK_PATH).exists()  # new content: its watch starts now
    clock.now += 61
    old = time.time() - 120
    os.utime(root / LOCK_PATH, (old, old))
    lock_module._break_if_stale(storage, 60_000, seen)
    assert not (root / LOCK_PATH).exists()


def test_a_client_clock_far_ahead_never_rolls_back_a_live_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = _table(tmp_path)
    storage = FsspecStorage(str(root))
    config = _config(root)
    ts = planned.start_instant(storage, config, COMMIT)  # a live writer: fresh heartbeat
    monkeypatch.setattr(time, "time", lambda real=time.time: real() + 7200)
    assert rollback.rollback_failed_writes(storage, config) == []
    assert [i.timestamp for i in _pending(root)] == [ts]


# ------------------------------------------------------------------ item 2: holds, deletes


def test_release_never_deletes_a_lock_held_up_to_its_expiry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = _table(tmp_path)
    clock = FakeClock()
    monkeypatch.setattr(lock_module, "observed_clock", clock)
    lock = acquire(FsspecStorage(str(root)), _config(root))
    clock.now += 58  # within RELEASE_MARGIN_MS of the one-minute expiry
    lock.release()
    assert (root / LOCK_PATH).exists()  # left to expire: a breaker may be at work
    (root / LOCK_PATH).unlink()
    fresh = acquire(FsspecStorage(str(root)), _config(root))
    (root / LOCK_PATH).write_bytes(FOREIGN)  # broken and re-taken by another writer
    fresh.release()
    assert (root / LOCK_PATH).read_bytes() == FOREIGN


def _dead_writer(tmp_path: Path) -> tuple[Path, Any]:
    root = tmp_path / "t"
    table = create(root, "COPY_ON_WRITE")
    set_properties(
        root,
        {
            "hoodie.client.heartbeat.interval_in_ms": "100",
            "hoodie.client.heartbeat.tolerable.misses": "1",
        },
    )
    table.append(rows((1, "a", 1, "x")))
    dead = plan_without_commit(table, "upsert", rows((1, "dead", 9, "x")))
    time.sleep(0.3)  # its heartbeat expires
    return root, dead


def test_a_rollback_lists_before_the_lock_and_rechecks_it_before_deleting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, dead = _dead_writer(tmp_path)
    locked_listings: list[bool] = []

    class Watching(FsspecStorage):
        def list_all(self, path: str = "") -> list[FileInfo]:
            if path == "":
                locked_listings.append((root / LOCK_PATH).exists())
            return super().list_all(path)

    real = rollback._still_rollbackable

    def then_broken(*args: Any) -> bool:
        ok = real(*args)
        (root / LOCK_PATH).write_bytes(FOREIGN)  # a stall: another writer broke the lock
        return ok

    monkeypatch.setattr(rollback, "_still_rollbackable", then_broken)
    storage = Watching(str(root))
    with pytest.raises(CommitConflictError, match="table lock"):
        rollback.rollback_failed_writes(storage, _config(root))
    assert locked_listings == [False]
    assert all((root / f).exists() for f in dead.files)  # nothing deleted


# ------------------------------------------------------------------ item 3 and 4: outcomes


def test_a_retried_completion_that_cannot_be_read_back_is_unknown(tmp_path: Path) -> None:
    root, _ = _table(tmp_path)
    flaky = FlakyStorage(
        str(root), Fault("put_if_absent", COMPLETED, mode="exists", unreadable=True)
    )
    with pytest.raises(CommitStateUnknownError):
        lakecore.open(str(root), storage=flaky).upsert(rows((1, "b", 2, "x")))
    assert flaky.faults[0].struck == 1


def test_a_fault_after_the_completed_file_landed_is_unknown_not_nothing_committed(
    tmp_path: Path,
) -> None:
    root, _ = _table(tmp_path)  # table version 8: layout 2

    class Rival(FlakyStorage):
        def put_if_absent(self, path: str, data: bytes) -> None:
            super().put_if_absent(path, data)
            m = re.search(r"timeline/(\d+)_(\d+)\.commit$", path)
            if m:  # another writer completed the same instant a moment earlier
                earlier = str(int(m.group(2)) - 1)
                (root / ".hoodie" / "timeline" / f"{m.group(1)}_{earlier}.commit").write_bytes(data)

    flaky = Rival(str(root), Fault("delete", COMPLETED))
    with pytest.raises(CommitStateUnknownError):
        lakecore.open(str(root), storage=flaky).upsert(rows((1, "b", 2, "x")))
    assert flaky.faults[0].struck == 1


# ------------------------------------------------------------------ item 5: commit and lock


def test_an_interrupted_commit_releases_the_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = _table(tmp_path)

    def interrupted(*args: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(commit_module, "_check_all", interrupted)
    with pytest.raises(KeyboardInterrupt):
        lakecore.open(str(root)).upsert(rows((1, "b", 2, "x")))
    assert not (root / LOCK_PATH).exists()


def test_the_heartbeat_beats_while_waiting_for_the_lock_and_a_timeout_rolls_nothing_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, model = _table(tmp_path)
    set_properties(
        root,
        {
            "hoodie.client.heartbeat.interval_in_ms": "100",
            "hoodie.client.heartbeat.tolerable.misses": "5",
        },
    )
    beats: list[str] = []
    real_beat = heartbeat.beat

    def counted(storage: Any, instant: str) -> None:
        beats.append(instant)
        real_beat(storage, instant)

    def slow_then_timeout(*args: Any) -> Any:
        before = len(beats)
        time.sleep(0.6)
        assert len(beats) - before >= 3  # kept alive during the wait
        raise CommitConflictError("could not take the table lock (injected timeout)")

    aborted: list[str] = []
    monkeypatch.setattr(heartbeat, "beat", counted)
    monkeypatch.setattr(commit_module, "acquire", slow_then_timeout)
    monkeypatch.setattr(commit_module, "abort", lambda s, c, p: aborted.append(p.timestamp))
    with pytest.raises(CommitConflictError, match="injected timeout"):
        lakecore.open(str(root)).upsert(rows((1, "b", 2, "x")))
    assert aborted == []  # left to its heartbeat's expiry: no second wait for the lock
    (pending,) = _pending(root)
    assert not (root / heartbeat_path(pending.timestamp)).exists()
    assert_reads(root, model)


# ------------------------------------------------------------------ item 6: lost lock reply


def test_a_lock_put_whose_outcome_cannot_be_read_is_a_typed_error_and_cleaned_up(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root, _ = _table(tmp_path)
    lock_file = re.compile(r"\.aux/lock$")
    flaky = FlakyStorage(
        str(root),
        Fault("put_if_absent", lock_file, mode="after"),
        Fault("read", lock_file, times=lock_module.READ_BACK_ATTEMPTS),
    )
    with pytest.raises(CommitStorageError, match="lakecoreToken"):
        acquire(flaky, _config(root))
    assert not (root / LOCK_PATH).exists()  # ours: deleted once it could be read


# ------------------------------------------------------------------ item 7: withdrawn claims


def test_a_withdrawn_instant_claim_leaves_no_heartbeat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = _table(tmp_path)
    taken: list[str] = []

    class Sneaky(FsspecStorage):
        def put_if_absent(self, path: str, data: bytes) -> None:
            super().put_if_absent(path, data)
            m = re.search(r"timeline/(\d+)\.commit\.requested$", path)
            if m and not taken:  # a writer without the lock took the same time
                taken.append(m.group(1))
                (root / ".hoodie" / "timeline" / f"{m.group(1)}.rollback.requested").write_bytes(
                    b""
                )

    ts = planned.claim_instant(Sneaky(str(root)), _config(root), COMMIT)
    assert taken and ts > taken[0]
    assert not (root / heartbeat_path(taken[0])).exists()
    assert (root / heartbeat_path(ts)).exists()


# ------------------------------------------------------------------ item 8: .hoodie refused


def test_a_rollback_plan_naming_the_table_properties_deletes_nothing(tmp_path: Path) -> None:
    root, model = _table(tmp_path)
    storage = FsspecStorage(str(root))
    config = _config(root)
    target = planned.start_instant(storage, config, COMMIT, heartbeat=False)
    props = root / ".hoodie" / "hoodie.properties"
    before = props.read_bytes()
    plan = RollbackPlan(
        (target, COMMIT),
        (RollbackRequest("", "x", "", (storage.resolve(".hoodie/hoodie.properties"),), {}),),
    )
    planned.start_instant(storage, config, "rollback", encode_rollback_plan(plan), False)
    with pytest.raises(CorruptTableError, match=r"\.hoodie"):
        lakecore.open(str(root)).append(rows((2, "c", 1, "y")))
    assert props.read_bytes() == before
    assert_reads(root, model)


@pytest.mark.parametrize(
    "path", [".hoodie/hoodie.properties", ".hoodie/timeline/1.commit", ".hoodie", "p/../.hoodie/x"]
)
def test_metadata_paths_are_never_deletable(path: str) -> None:
    with pytest.raises(CorruptTableError):
        rollback.deletable_path(path, "/t", source="test")
    assert rollback.deletable_path("p/f.parquet", "/t", source="test") == "p/f.parquet"
