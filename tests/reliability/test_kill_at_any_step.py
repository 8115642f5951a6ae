"""A writer process killed (SIGKILL) at every storage call of an operation.

The operation is first run in this process through a counting ``FaultyStorage`` to learn its
storage calls. Then, per step, a forked child runs it on a fresh copy of the base table through
a ``FaultyStorage`` that SIGKILLs the child at that call: before the call reaches the store, and
for calls that change the store also just after the call landed. After each kill:

- lakecore reads exactly the state before or exactly the state after the operation, and the
  reference reader (deltalake / hudi-rs) reads the same rows;
- Hudi: the dead writer's heartbeat and table lock (if it held it) are aged past their
  expiry, as time would, so the next writer breaks the lock and rolls the pending instant back;
- a new writer appends successfully, and both readers see the state plus its rows.

The default run takes every ``STRIDE``-th step (starting at an offset that differs between
operations, so the sampled runs together reach every kind of step); ``-m slow`` runs every step.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from lakecore_hudi.write import lock as lock_module

import lakecore
from lakecore.table import Table
from lakecore.testing.faults import MUTATING, Call
from tests.reliability.faulty_ops import (
    State,
    build_base,
    copy_table,
    follow_up,
    open_faulty,
    operations,
    peer_rows,
    state,
    with_rows,
)

OPERATIONS = [
    ("delta", "append"),
    ("delta", "delete"),
    ("delta", "merge"),
    ("hudi-cow", "append"),
    ("hudi-cow", "upsert"),
    ("hudi-cow", "delete"),
    ("hudi-mor", "append"),
    ("hudi-mor", "upsert"),
    ("hudi-mor", "delete"),
]
STRIDE = 5
"""In the default run, one in this many steps is killed at."""
CHILD_TIMEOUT = 60.0


def _child(kind: str, name: str, root: str, index: int, mode: str) -> None:
    """The writer: run the operation and die by SIGKILL at storage call ``index``."""

    def kill(_index: int, _call: Call) -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    table, faulty = open_faulty(Path(root))
    faulty.arm(index, "after" if mode == "after" else "before", on_fault=kill)
    operations(kind)[name](table)
    os._exit(3)  # never reached the step: the parent reports it


def _age_dead_writer(root: Path) -> None:
    """Make the Hudi heartbeats and table lock look an hour old: their writer is dead."""
    old = time.time() - 3600
    for path in (*(root / ".hoodie" / ".heartbeat").glob("*"), root / ".hoodie/.aux/lock"):
        if path.exists():
            os.utime(path, (old, old))


def _steps(calls: list[Call], offset: int | None) -> list[tuple[int, str]]:
    """Every step (kill before each call, and after each write), or every ``STRIDE``-th
    from ``offset``."""
    steps = [(i, "before") for i in range(len(calls))]
    steps += [(i, "after") for i, c in enumerate(calls) if c.method in MUTATING]
    return steps if offset is None else steps[offset % STRIDE :: STRIDE]


def _check_after_kill(
    kind: str, root: Path, before: State, after: State, write: Callable[[Table], Any]
) -> list[str]:
    problems = []
    now = state(kind, root)
    if now not in (before, after):
        problems.append(f"partial state {now}")
    if peer_rows(kind, root) != now.rows:
        problems.append("the reference reader disagrees with lakecore")
    if kind != "delta":
        _age_dead_writer(root)
    # A dead writer's lock is broken once a waiter has watched it unchanged for the expiry
    # (one minute) on its own monotonic clock: run that clock 200 times faster here.
    with mock.patch.object(lock_module, "observed_clock", lambda: time.monotonic() * 200):
        write(lakecore.open(str(root)))
    final = state(kind, root)
    _, data = follow_up(kind)
    if final.rows != with_rows(kind, now, data):
        problems.append(f"the next writer's append did not land as expected: {final}")
    if peer_rows(kind, root) != final.rows:
        problems.append("the reference reader disagrees after the next write")
    return problems


def _kill_at_every_step(
    kind: str, name: str, tmp_path: Path, offset: int | None
) -> tuple[list[Call], int]:
    """Kill a writer of ``kind``/``name`` at each step; return the calls and the kills."""
    template = tmp_path / "template"
    build_base(kind, template)
    before = state(kind, template)
    counting = tmp_path / "counting"
    copy_table(template, counting)
    table, faulty = open_faulty(counting)
    operations(kind)[name](table)
    calls = list(faulty.calls)
    after = state(kind, counting)
    steps = _steps(calls, offset)
    context = multiprocessing.get_context("fork")
    write, _ = follow_up(kind)
    failures: list[str] = []
    for n, (index, mode) in enumerate(steps):
        root = tmp_path / f"step{n}"
        copy_table(template, root)
        child = context.Process(target=_child, args=(kind, name, str(root), index, mode))
        child.start()
        child.join(CHILD_TIMEOUT)
        if child.exitcode is None:
            child.kill()
            child.join()
        where = f"step {index} {calls[index]} ({mode})"
        if child.exitcode != -signal.SIGKILL:
            failures.append(f"{where}: the writer exited with {child.exitcode}, not killed")
            continue
        failures += [f"{where}: {p}" for p in _check_after_kill(kind, root, before, after, write)]
    assert not failures, "\n".join(failures)
    print(f"{kind} {name}: {len(calls)} calls, killed at {len(steps)} steps")
    return calls, len(steps)


@pytest.mark.parametrize(("kind", "name"), OPERATIONS, ids=[f"{k}-{n}" for k, n in OPERATIONS])
def test_writer_killed_at_sampled_steps(kind: str, name: str, tmp_path: Path) -> None:
    offset = OPERATIONS.index((kind, name))
    calls, killed = _kill_at_every_step(kind, name, tmp_path, offset)
    every = len(calls) + sum(c.method in MUTATING for c in calls)
    assert killed == len(range(offset % STRIDE, every, STRIDE)) > 0


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "name"), OPERATIONS, ids=[f"{k}-{n}" for k, n in OPERATIONS])
def test_writer_killed_at_every_step(kind: str, name: str, tmp_path: Path) -> None:
    calls, killed = _kill_at_every_step(kind, name, tmp_path, None)
    assert killed == len(calls) + sum(c.method in MUTATING for c in calls)
