"""Archiving under storage faults: a fault at every storage call of the archiver leaves a table
that reads the same (rows, every commit in ``history()`` once, time travel to the oldest
commit), and the next commit archives it successfully.

Each step is struck four ways: the call fails before reaching the store or after it landed
(its reply lost), once (a transient fault: the archiver stops there and releases the lock) or
from then on (the store goes away mid-archiving, as if the process died: nothing after the
step happens, the lock file stays and is broken as its expiry would). The default run takes
every ``STRIDE``-th step, the four ways rotating; ``-m slow`` runs every step every way.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from lakecore_hudi.write.archive import archive_table
from lakecore_hudi.write.lock import LOCK_PATH

import lakecore
from lakecore.errors import LakecoreError
from lakecore.storage import open_storage
from lakecore.testing.faults import MUTATING, FaultyStorage
from tests.hudi.write.archive_tables import (
    Run,
    active_commits,
    archived_commit_times,
    archiving_table,
    commit_many,
    set_properties,
)
from tests.hudi.write.helpers import hudi_rs_rows, lakecore_rows, rows

STRIDE = 11
WAYS = [("before", False), ("after", False), ("before", True), ("after", True)]
VERSIONS = ["8", "6"]


def _template(root: Path, version: str) -> Run:
    """Archived once already (an LSM file to compact with), then 4 more commits with automatic
    archiving off: an explicit archiving has 4 instants to move (and, v8, compacts)."""
    archiving_table(root, version)
    first = commit_many(root, 4, keys=3)
    set_properties(root, {"hoodie.archive.automatic": "false"})
    rest = commit_many(root, 4, keys=3)
    set_properties(root, {"hoodie.archive.automatic": "true"})
    return Run(
        root,
        first.versions + rest.versions,
        {**first.rows_at, **rest.rows_at},
        {**first.entry_at, **rest.entry_at},
    )


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Run, list[Any]]]:
    """Per table version: the template run and the archiver's storage calls on it."""
    out = {}
    for version in VERSIONS:
        root = tmp_path_factory.mktemp(f"template{version}") / "t"
        run = _template(root, version)
        probe = tmp_path_factory.mktemp(f"probe{version}") / "t"
        shutil.copytree(root, probe)
        faulty = FaultyStorage(open_storage(str(probe)))
        table = lakecore.open(str(probe), storage=faulty)
        faulty.reset()
        assert len(archive_table(table).archived) >= 4
        out[version] = (run, list(faulty.calls))
    return out


def _run_case(
    run: Run, calls: list[Any], root: Path, version: str, step: int, mode: str, persistent: bool
) -> bool:
    """Strike call ``step``; False when the case is the same as another (``after`` on a call
    that changes nothing)."""
    if mode == "after" and calls[step].method not in MUTATING:
        return False
    shutil.copytree(run.root, root)
    before = lakecore_rows(root)
    faulty = FaultyStorage(open_storage(str(root)))
    table = lakecore.open(str(root), storage=faulty)
    faulty.arm(step, mode, persistent)  # type: ignore[arg-type]
    # A typed error (StorageError, CommitConflictError), never a raw OSError; or none when
    # the fault struck the lock's release (which never fails an operation).
    with contextlib.suppress(LakecoreError):
        archive_table(table)
    assert faulty.faults, "the fault was not reached"
    (root / LOCK_PATH).unlink(missing_ok=True)  # a dead archiver's lock, broken at expiry
    _reads_the_same(root, run, before)
    # The next commit archives what is left.
    new = rows((100, "new", 1, "x"))
    lakecore.open(str(root)).upsert(new)
    assert len(active_commits(root)) <= 3
    _reads_the_same(root, run, before + new.to_pylist(), extra=1)
    archived = archived_commit_times(root, version)
    assert len(archived) == len(set(archived)), "an instant was archived twice"
    assert set(archived) | set(active_commits(root)) >= set(run.versions)
    return True


def _strike(
    templates: dict[str, tuple[Run, list[Any]]],
    tmp_path: Path,
    version: str,
    cases: list[tuple[int, int]],
) -> int:
    """Run the (step, way) cases; returns how many ran (not skipped as duplicates)."""
    run, calls = templates[version]
    done = 0
    for step, way in cases:
        mode, persistent = WAYS[way]
        root = tmp_path / f"{step}-{way}"
        try:
            done += _run_case(run, calls, root, version, step, mode, persistent)
        except AssertionError as exc:
            raise AssertionError(
                f"{mode} fault (persistent={persistent}) at call {step} ({calls[step]}): {exc}"
            ) from exc
    return done


def sampled(n: int) -> list[tuple[int, int]]:
    """Every ``STRIDE``-th of ``n`` steps, the ways rotating (the mutating ``after`` ways land
    on puts and deletes as the stride walks the calls)."""
    return [(step, (step // STRIDE) % len(WAYS)) for step in range(0, n, STRIDE)]


@pytest.mark.parametrize("version", VERSIONS)
def test_fault_at_sampled_steps(
    templates: dict[str, tuple[Run, list[Any]]], tmp_path: Path, version: str
) -> None:
    calls = templates[version][1]
    cases = sampled(len(calls))
    ran = _strike(templates, tmp_path, version, cases)
    expected = [c for c in cases if WAYS[c[1]][0] == "before" or calls[c[0]].method in MUTATING]
    assert ran == len(expected) >= 2


@pytest.mark.slow
@pytest.mark.parametrize("way", range(len(WAYS)))
@pytest.mark.parametrize("version", VERSIONS)
def test_fault_at_every_step(
    templates: dict[str, tuple[Run, list[Any]]], tmp_path: Path, version: str, way: int
) -> None:
    calls = templates[version][1]
    ran = _strike(templates, tmp_path, version, [(s, way) for s in range(len(calls))])
    mutating = sum(1 for c in calls if c.method in MUTATING)
    assert ran == (mutating if WAYS[way][0] == "after" else len(calls))


def test_the_archiver_calls_cover_every_kind_of_step(
    templates: dict[str, tuple[Run, list[Any]]],
) -> None:
    """Archiving, deleting and (v8) compacting all happen in the struck operation."""
    for version, (_, calls) in templates.items():
        puts = [c.path for c in calls if c.method in ("put", "put_if_absent")]
        deletes = [c.path for c in calls if c.method == "delete"]
        if version == "8":
            assert any(p.endswith("_0.parquet") for p in puts)
            assert any(p.endswith("_1.parquet") for p in puts)  # the compaction
            assert any(p.endswith("_version_") for p in puts)
        else:
            assert any(".commits_.archive." in p for p in puts)
        assert len([d for d in deletes if "/.aux/" not in d]) >= 12  # 4 instants x 3 files


def _reads_the_same(root: Path, run: Run, expected: list[Any], extra: int = 0) -> None:
    """Rows as ``expected`` (lakecore and hudi-rs), every upsert in ``history()`` once, and
    time travel to the oldest (archived) commit as before archiving."""
    table = lakecore.open(str(root))
    assert lakecore_rows(root) == sorted(expected, key=_key) == hudi_rs_rows(root)
    versions = [str(e.version) for e in table.history() if e.operation == "upsert"]
    assert len(versions) == len(set(versions)) == len(run.versions) + extra
    assert set(run.versions) <= set(versions)
    oldest = run.versions[0]
    data = table.snapshot(version=oldest).to_arrow().select(["id", "name", "ts", "city"])
    assert sorted(data.to_pylist(), key=_key) == sorted(run.rows_at[oldest], key=_key)


def _key(row: dict[str, Any]) -> str:
    return json.dumps(row, sort_keys=True, default=str)
