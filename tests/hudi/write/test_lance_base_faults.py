"""A storage fault at every storage call of a write that makes Lance base files (table
version 9, ``write/lance_base.py``) on the corpus table ``mor_avro_v9_lance_nonhivestyle``:
an insert (new Lance base files) and a compaction (merged slices rewritten as Lance files).

``before``: the call never lands; ``after`` (calls that change the store): it lands and its
reply is lost. For each: the error, if any, is a ``LakecoreError``; the table reads (lakecore)
as before or after the write, and as after it when the write returned (every acknowledged row
is there); a next writer's insert lands on top; then lakecore and hudi-rs (reading the Lance
base files through the metadata table) read the same rows, and the metadata table's ``files``
partition lists exactly the data files on storage.

Reads of Lance files go through pylance, not lakecore's ``Storage``: those are not faulted.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import pyarrow as pa
import pytest
from lakecore_hudi.write import lock as lock_module

import lakecore
from lakecore.errors import LakecoreError
from lakecore.testing.faults import MUTATING
from tests.hudi.write.helpers import copy_corpus_table, files_on_disk, hudi_rs_table
from tests.hudi.write.test_mdt_maintain import mdt_listing
from tests.reliability.faulty_ops import open_faulty
from tests.reliability.test_kill_at_any_step import _age_dead_writer

NAME = "mor_avro_v9_lance_nonhivestyle"
KEY = "event_id"
STRIDE = 30
"""In the default run, one case in this many is run (all of them under ``-m slow``)."""
Row = dict[str, Any]


def _rows(table: pa.Table) -> list[Row]:
    data = table.drop_columns([c for c in table.column_names if c.startswith("_hoodie_")])
    return sorted(data.to_pylist(), key=lambda r: json.dumps(r, sort_keys=True, default=str))


def _state(root: Path) -> list[Row]:
    return _rows(lakecore.open(str(root)).to_arrow())


def _new_rows(table: lakecore.Table, *keys: str) -> pa.Table:
    """Rows with new keys: one into a partition that has files, one into a new partition."""
    data = table.to_arrow()
    data = data.drop_columns([c for c in data.column_names if c.startswith("_hoodie_")])
    rows = data.slice(0, len(keys)).to_pylist()
    for i, (row, key) in enumerate(zip(rows, keys, strict=True)):
        row[KEY] = key
        if i == 1:
            row["event_date"] = "2031-01-01"
    return pa.Table.from_pylist(rows, schema=data.schema)


def _operation(name: str) -> Callable[[lakecore.Table], Any]:
    if name == "insert":
        return lambda t: t.append(_new_rows(t, "evt-901", "evt-902"))
    return lambda t: t.compact()


def _cases(template: Path, tmp_path: Path, name: str) -> tuple[list[tuple[int, str]], Any]:
    """Every (call index, mode) of the operation, and the state after it."""
    counting = tmp_path / "counting"
    shutil.copytree(template, counting)
    table, faulty = open_faulty(counting)
    _operation(name)(table)
    calls = list(faulty.calls)
    lance_puts = [c for c in calls if c.method in MUTATING and c.path.endswith(".lance")]
    assert lance_puts, f"{name} wrote no Lance base file"
    cases = [(i, "before") for i in range(len(calls))]
    cases += [(i, "after") for i, c in enumerate(calls) if c.method in MUTATING]
    return sorted(cases), _state(counting)


def _run_case(template: Path, root: Path, name: str, index: int, mode: str, after: Any) -> str:
    """One faulted write and the checks after it; returns what went wrong ("" when nothing)."""
    shutil.copytree(template, root)
    before = _state(root)
    table, faulty = open_faulty(root)
    faulty.arm(index, mode)  # type: ignore[arg-type]
    try:
        _operation(name)(table)
        acknowledged = True
    except LakecoreError:
        acknowledged = False
    except Exception as exc:  # a raw error is a failure
        return f"raw {type(exc).__name__}: {exc}"
    now = _state(root)
    if acknowledged and now != after:
        return "the write returned but its rows are not all there"
    if now not in (before, after):
        return "partial state"
    nxt = lakecore.open(str(root))
    added = _new_rows(nxt, "evt-951", "evt-952")
    nxt.append(added)
    final = _state(root)
    if final != sorted([*now, *_rows(added)], key=lambda r: json.dumps(r, sort_keys=True)):
        return "the next writer's insert did not land as expected"
    if _rows(hudi_rs_table(root)) != final:
        return "hudi-rs disagrees with lakecore"
    if mdt_listing(root) != files_on_disk(root):
        return "the files partition does not list the data files on storage"
    return ""


def _fault_matrix(tmp_path: Path, name: str, stride: int) -> int:
    template = copy_corpus_table(NAME, tmp_path / "template")
    cases, after = _cases(template, tmp_path, name)
    chosen = cases[::stride]
    failures = []
    for n, (index, mode) in enumerate(chosen):
        problem = _run_case(template, tmp_path / f"case{n}", name, index, mode, after)
        if problem:
            failures.append(f"call {index} ({mode}): {problem}")
        shutil.rmtree(tmp_path / f"case{n}")
    assert not failures, "\n".join(failures)
    assert len(cases) > 100, len(cases)  # every storage call of the write
    return len(chosen)


@pytest.mark.parametrize("name", ["insert", "compact"])
def test_faults_at_sampled_calls_of_a_lance_base_file_write(name: str, tmp_path: Path) -> None:
    assert _fault_matrix(tmp_path, name, STRIDE) >= 4


@pytest.mark.slow
@pytest.mark.parametrize("name", ["insert", "compact"])
def test_faults_at_every_call_of_a_lance_base_file_write(name: str, tmp_path: Path) -> None:
    assert _fault_matrix(tmp_path, name, 1) > 100


# ------------------------------------------------------------------------------- kills

KILL_STRIDE = 4
"""One step in this many is killed at (each step is a process of its own)."""


def _killed_child(root: str, name: str, index: int, mode: str) -> None:
    """The writer: run the operation and die by SIGKILL at storage call ``index``."""

    def kill(_index: int, _call: Any) -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    table, faulty = open_faulty(Path(root))
    faulty.arm(index, mode, on_fault=kill)  # type: ignore[arg-type]
    _operation(name)(table)
    os._exit(3)  # never reached the step: the parent reports it


def _after_kill(root: Path, before: Any, after: Any) -> str:
    """The checks after a killed write; returns what went wrong ("" when nothing)."""
    now = _state(root)
    if now not in (before, after):
        return "partial state"
    _age_dead_writer(root)
    # A dead writer's lock is broken once a waiter has watched it for the expiry (a minute)
    # on its own monotonic clock: run that clock 200 times faster here.
    with mock.patch.object(lock_module, "observed_clock", lambda: time.monotonic() * 200):
        nxt = lakecore.open(str(root))
        added = _new_rows(nxt, "evt-951", "evt-952")
        nxt.append(added)
    final = _state(root)
    if final != sorted([*now, *_rows(added)], key=lambda r: json.dumps(r, sort_keys=True)):
        return "the next writer's insert did not land as expected"
    if _rows(hudi_rs_table(root)) != final:
        return "hudi-rs disagrees with lakecore"
    if mdt_listing(root) != files_on_disk(root):
        return "the files partition does not list the data files on storage"
    return ""


@pytest.mark.slow
@pytest.mark.parametrize("name", ["insert", "compact"])
def test_a_lance_base_file_writer_killed_at_sampled_calls(name: str, tmp_path: Path) -> None:
    """The writer process SIGKILLed before every ``KILL_STRIDE``-th call (or just after it
    landed): the table reads as before or after, and the next writer (breaking the dead
    writer's lock, rolling its instant back) lands its insert with hudi-rs agreeing."""
    template = copy_corpus_table(NAME, tmp_path / "template")
    before = _state(template)
    cases, after = _cases(template, tmp_path, name)
    chosen = cases[::KILL_STRIDE]
    # Spawned, not forked: pylance (loaded here by the counting run) is not fork-safe.
    context = multiprocessing.get_context("spawn")
    failures = []
    for n, (index, mode) in enumerate(chosen):
        root = tmp_path / f"kill{n}"
        shutil.copytree(template, root)
        child = context.Process(target=_killed_child, args=(str(root), name, index, mode))
        child.start()
        child.join(60)
        if child.exitcode is None:
            child.kill()
            child.join()
        where = f"call {index} ({mode})"
        if child.exitcode != -signal.SIGKILL:
            failures.append(f"{where}: the writer exited with {child.exitcode}, not killed")
            continue
        problem = _after_kill(root, before, after)
        if problem:
            failures.append(f"{where}: {problem}")
        shutil.rmtree(root)
    assert not failures, "\n".join(failures)
    assert len(chosen) > 25, len(chosen)
