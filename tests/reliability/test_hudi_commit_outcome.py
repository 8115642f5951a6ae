"""Hudi commits whose storage calls fail around the completion (issue 9, item 10).

A completion whose write failed may have landed: it is read back (and tried once more when it
is absent), and only if that cannot decide, ``CommitStateUnknownError`` is raised - never a
raw ``OSError``. Cleanup after a completed commit (dropping the heartbeat, releasing the table
lock) never turns the success into a failure. Also the table lock itself: a stale lock is
broken, a live one holds writers off, and Hudi's "never expires" setting is kept.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from lakecore_hudi.timeline import lifecycle
from lakecore_hudi.timeline.active import load_timeline
from lakecore_hudi.write import lock as lock_module
from lakecore_hudi.write.heartbeat import HEARTBEAT_DIR
from lakecore_hudi.write.lock import LOCK_PATH
from lakecore_hudi.write.writer import state_of

import lakecore
from lakecore.errors import CommitConflictError, CommitStateUnknownError, CommitStorageError
from lakecore.storage import FsspecStorage
from tests.hudi.write.helpers import assert_reads, create, model_of, rows

COMPLETED = re.compile(r"^\.hoodie/(timeline/)?\d+(_\d+)?\.(commit|deltacommit)$")


@dataclass
class Fault:
    """Make ``method`` on paths matching ``pattern`` fail ``times`` times.

    ``mode``: ``before`` (the call never reaches the store), ``after`` (it lands, then its
    reply is lost), ``exists`` (it lands, then a client retry reports the file as existing).
    The first ``skip`` matching calls pass; with ``unreadable``, the path it struck cannot be
    read afterwards either.
    """

    method: str
    pattern: re.Pattern[str]
    mode: str = "before"
    times: int = 1
    skip: int = 0
    unreadable: bool = False
    struck: int = 0
    seen: int = 0


class FlakyStorage(FsspecStorage):
    """Local storage whose calls fail as its ``faults`` say."""

    def __init__(self, uri: str, *faults: Fault) -> None:
        super().__init__(uri)
        self.faults = list(faults)
        self.unreadable: set[str] = set()

    def _call(self, method: str, path: str, run: Callable[[], Any]) -> Any:
        if method == "read" and path in self.unreadable:
            raise TimeoutError(f"injected: read {path} timed out")
        for f in self.faults:
            if f.method == method and f.struck < f.times and f.pattern.search(path):
                f.seen += 1
                if f.seen <= f.skip:
                    continue
                f.struck += 1
                if f.unreadable:
                    self.unreadable.add(path)
                if f.mode == "before":
                    raise TimeoutError(f"injected: {method} {path} timed out")
                run()
                if f.mode == "exists":
                    raise FileExistsError(f"injected: {path} exists (a retried request)")
                raise ConnectionResetError(f"injected: {method} {path}: reply lost")
        return run()

    def put_if_absent(self, path: str, data: bytes) -> None:
        self._call(
            "put_if_absent", path, lambda: super(FlakyStorage, self).put_if_absent(path, data)
        )

    def delete(self, path: str) -> None:
        self._call("delete", path, lambda: super(FlakyStorage, self).delete(path))

    def read(self, path: str, start: int | None = None, end: int | None = None) -> bytes:
        return self._call("read", path, lambda: super(FlakyStorage, self).read(path, start, end))  # type: ignore[no-any-return]


class FakeClock:
    """A monotonic clock the test moves by hand (``lock.observed_clock``)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def fast_clock(monkeypatch: pytest.MonkeyPatch, factor: float = 200) -> None:
    """Run the lock's staleness clock ``factor`` times faster than real time (a one-minute
    expiry passes in 0.3 s); holds of ordinary length stay far from the expiry."""
    monkeypatch.setattr(lock_module, "observed_clock", lambda: time.monotonic() * factor)


def _table(tmp_path: Path, version: str = "8") -> tuple[Path, dict[int, Any]]:
    root = tmp_path / "t"
    table = create(root, "COPY_ON_WRITE", version)
    first = rows((1, "a", 1, "x"))
    table.append(first)
    return root, model_of(first)


def _pending(root: Path) -> tuple[Any, ...]:
    table = lakecore.open(str(root))
    return load_timeline(table.storage, state_of(table.snapshot()).config).pending()


@pytest.mark.parametrize("version", ["8", "6"])
@pytest.mark.parametrize("mode", ["after", "exists", "before"])
def test_a_completion_that_landed_or_can_be_retried_is_a_success(
    tmp_path: Path, version: str, mode: str
) -> None:
    root, model = _table(tmp_path, version)
    flaky = FlakyStorage(str(root), Fault("put_if_absent", COMPLETED, mode))
    table = lakecore.open(str(root), storage=flaky)
    version_out = table.upsert(rows((1, "b", 2, "x"))).version
    assert flaky.faults[0].struck == 1
    assert str(version_out) == str(lakecore.open(str(root)).version)
    assert_reads(root, model_of(rows((1, "b", 2, "x"))))
    assert _pending(root) == ()
    del model


def test_a_completion_that_cannot_be_decided_is_commit_state_unknown(tmp_path: Path) -> None:
    root, model = _table(tmp_path)
    flaky = FlakyStorage(str(root), Fault("put_if_absent", COMPLETED, unreadable=True))
    table = lakecore.open(str(root), storage=flaky)
    with pytest.raises(CommitStateUnknownError) as caught:
        table.upsert(rows((1, "b", 2, "x")))
    assert isinstance(caught.value.__cause__, OSError)
    assert_reads(root, model)  # it did not land here
    (pending,) = _pending(root)
    # Its heartbeat was dropped, so the next writer rolls the undecided instant back.
    assert not (root / HEARTBEAT_DIR / pending.timestamp).exists()
    lakecore.open(str(root)).append(rows((2, "c", 1, "y")))
    assert _pending(root) == ()
    assert_reads(root, {**model, **model_of(rows((2, "c", 1, "y")))})


def test_a_failed_heartbeat_cleanup_does_not_fail_the_commit(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root, _ = _table(tmp_path)
    flaky = FlakyStorage(str(root), Fault("delete", re.compile(r"\.heartbeat/"), times=99))
    table = lakecore.open(str(root), storage=flaky)
    with caplog.at_level(logging.WARNING):
        table.upsert(rows((1, "b", 2, "x")))
    assert flaky.faults[0].struck >= 1
    assert "could not delete the heartbeat" in caplog.text
    assert_reads(root, model_of(rows((1, "b", 2, "x"))))


def test_a_failed_lock_release_does_not_fail_the_commit(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = _table(tmp_path)
    # An upsert takes the lock twice: to claim its instant, then to complete it.
    lock_file = re.compile(r"\.aux/lock$")
    once = FlakyStorage(str(root), Fault("delete", lock_file, skip=1))
    lakecore.open(str(root), storage=once).upsert(rows((1, "b", 2, "x")))
    assert once.faults[0].struck == 1
    assert not (root / LOCK_PATH).exists()  # released on the second try
    always = FlakyStorage(str(root), Fault("delete", lock_file, skip=1, times=99))
    with caplog.at_level(logging.WARNING):
        lakecore.open(str(root), storage=always).upsert(rows((1, "c", 3, "x")))
    assert "could not release the table lock" in caplog.text
    assert (root / LOCK_PATH).exists()  # left behind: it expires
    assert_reads(root, model_of(rows((1, "c", 3, "x"))))
    then = time.time() - 120
    os.utime(root / LOCK_PATH, (then, then))  # a minute later
    fast_clock(monkeypatch)  # and the next writer watches it for a minute
    lakecore.open(str(root)).upsert(rows((1, "d", 4, "x")))
    assert not (root / LOCK_PATH).exists()
    assert_reads(root, model_of(rows((1, "d", 4, "x"))))


# ------------------------------------------------------------------ the table lock


def _hudi_lock(root: Path, age_s: float) -> None:
    """A lock file as Hudi's FileSystemBasedLockProvider leaves it, ``age_s`` old."""
    path = root / LOCK_PATH
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"lockCreateTime":"2025-01-01 00:00:00.000","lockThreadName":"main"}')
    then = time.time() - age_s
    os.utime(path, (then, then))


def test_a_stale_lock_is_broken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, model = _table(tmp_path)
    _hudi_lock(root, age_s=120)  # older than the default expiry, 1 minute
    fast_clock(monkeypatch)  # and seen unchanged for longer than that
    started = time.monotonic()
    lakecore.open(str(root)).append(rows((2, "b", 1, "y")))
    assert time.monotonic() - started < 20
    assert not (root / LOCK_PATH).exists()
    assert list((root / LOCK_PATH).parent.iterdir()) == []  # no breaking marker left
    assert_reads(root, {**model, **model_of(rows((2, "b", 1, "y")))})


def test_a_live_lock_holds_writers_off_until_released(tmp_path: Path) -> None:
    root, model = _table(tmp_path)
    _hudi_lock(root, age_s=0)
    releaser = threading.Timer(0.8, (root / LOCK_PATH).unlink)
    releaser.start()
    started = time.monotonic()
    lakecore.open(str(root)).append(rows((2, "b", 1, "y")))
    releaser.join()
    assert time.monotonic() - started >= 0.7
    assert_reads(root, {**model, **model_of(rows((2, "b", 1, "y")))})


def test_a_lock_that_never_expires_is_never_broken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, model = _table(tmp_path)
    with (root / ".hoodie" / "hoodie.properties").open("a") as f:
        f.write(f"{lock_module.EXPIRE_KEY}=0\n")  # Hudi's default: no expiry
    _hudi_lock(root, age_s=3600)
    monkeypatch.setattr(lock_module, "WAIT_MARGIN_MS", 500)
    with pytest.raises(CommitConflictError, match="table lock"):
        lakecore.open(str(root)).append(rows((2, "b", 1, "y")))
    assert (root / LOCK_PATH).exists()  # not ours to delete
    assert_reads(root, model)
    assert _pending(root) == ()


def test_a_fault_before_the_completion_is_written_rolls_back_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Layout 2 lists the timeline before writing the completion; if that fails nothing
    landed: ``CommitStorageError``, the instant rolled back without waiting on the lock."""
    root, model = _table(tmp_path)
    real = lifecycle.load_timeline
    calls: list[int] = []

    def load(*args: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise TimeoutError("injected: listing the timeline timed out")
        return real(*args)

    monkeypatch.setattr(lifecycle, "load_timeline", load)
    started = time.monotonic()
    with pytest.raises(CommitStorageError):
        lakecore.open(str(root)).upsert(rows((1, "b", 2, "x")))
    assert time.monotonic() - started < 20
    assert calls
    assert not (root / LOCK_PATH).exists()
    assert _pending(root) == ()
    assert_reads(root, model)


def test_breaking_a_stale_lock_never_deletes_a_fresh_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Waiter X saw the stale lock; before X breaks it, waiter Y breaks it and takes a fresh
    lock. X must leave Y's lock alone (a plain "exists, expired, delete" would delete it)."""
    root, _ = _table(tmp_path)
    _hudi_lock(root, age_s=120)
    fresh = b'{"lockThreadName": "Y"}'

    class Racing(FsspecStorage):
        def put_if_absent(self, path: str, data: bytes) -> None:
            if path.endswith(".breaking"):  # Y broke the stale lock and holds a fresh one
                (root / LOCK_PATH).unlink()
                (root / LOCK_PATH).write_bytes(fresh)
            super().put_if_absent(path, data)

    clock = FakeClock()
    monkeypatch.setattr(lock_module, "observed_clock", clock)
    seen: dict[str, float] = {}
    racing = Racing(str(root))
    lock_module._break_if_stale(racing, 60_000, seen)  # first seen now
    clock.now += 61
    lock_module._break_if_stale(racing, 60_000, seen)
    assert (root / LOCK_PATH).read_bytes() == fresh
    assert [p.name for p in (root / LOCK_PATH).parent.iterdir()] == ["lock"]


def test_a_stale_lock_another_waiter_is_breaking_is_left_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = _table(tmp_path)
    _hudi_lock(root, age_s=120)
    clock = FakeClock()
    monkeypatch.setattr(lock_module, "observed_clock", clock)
    seen: dict[str, float] = {}
    storage = FsspecStorage(str(root))
    digest = lock_module._digest(storage.read(LOCK_PATH))
    marker = root / f"{LOCK_PATH}.{digest}.breaking"
    marker.write_bytes(b"")  # a live breaker's claim
    lock_module._break_if_stale(storage, 60_000, seen)  # the lock: first seen
    clock.now += 61
    lock_module._break_if_stale(storage, 60_000, seen)  # the marker: first seen
    assert (root / LOCK_PATH).exists()
    old = time.time() - 120  # the breaker died: its claim ages out, then the lock is broken
    os.utime(marker, (old, old))
    lock_module._break_if_stale(storage, 60_000, seen)
    assert marker.exists()  # its mtime is old, but this waiter saw it for a moment only
    clock.now += 61
    lock_module._break_if_stale(storage, 60_000, seen)
    assert not marker.exists()
    lock_module._break_if_stale(storage, 60_000, seen)
    assert not (root / LOCK_PATH).exists()
