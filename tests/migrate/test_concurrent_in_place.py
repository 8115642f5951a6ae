"""Two in-place migrations of one Delta table into Hudi at once (``mode="metadata"``): the
loser gets ``CommitConflictError`` (never a ``CorruptTableError`` from the winner's files
vanishing under it), and the Hudi table holds every Delta version once; a re-run commits
nothing."""

from __future__ import annotations

import multiprocessing
import shutil
from pathlib import Path
from typing import Any

import pytest

import lakecore
from lakecore.errors import CommitConflictError, LakecoreError
from lakecore.migrate.target import TargetSide
from tests.migrate.test_zero_copy_hudi import delta_rows, delta_table, hudi_rows


def _migrate(root: Path) -> lakecore.MigrationReport:
    return lakecore.migrate(str(root), str(root), to="hudi", mode="metadata", history=True)


def _intact(root: Path) -> None:
    """The Hudi table reads as Delta at every write instant, and a re-run commits nothing."""
    hudi = lakecore.open(str(root), format="hudi")
    assert hudi_rows(root) == delta_rows(root)
    writes = [e for e in reversed(hudi.history()) if e.operation != "rollback"]
    assert [hudi_rows(root, str(e.version)) for e in writes] == [
        delta_rows(root, v) for v in range(3)
    ]
    assert _migrate(root).commits == 0


def test_a_run_whose_target_another_run_created_meanwhile_conflicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deterministic interleaving: the other run creates the target and migrates everything
    after this run found no target and before this run creates it."""
    root = tmp_path / "t"
    delta_table(root)
    created = TargetSide._created
    raced: list[int] = []

    def other_run_first(self: TargetSide, *args: Any) -> None:
        if not raced:
            raced.append(0)
            raced[0] = _migrate(root).commits  # the other run, start to end (it creates too)
        created(self, *args)

    monkeypatch.setattr(TargetSide, "_created", other_run_first)
    with pytest.raises(CommitConflictError, match="another"):
        _migrate(root)
    monkeypatch.undo()
    assert raced == [3]
    _intact(root)


def _migrate_in_child(root: str, queue: Any, start: Any) -> None:
    start.wait()
    try:
        _migrate(Path(root))
        queue.put("ok")
    except LakecoreError as exc:
        queue.put(f"{type(exc).__name__}: {exc}")
    except Exception as exc:  # an untyped error is a finding
        queue.put(f"untyped {type(exc).__name__}: {exc}")


@pytest.mark.slow
def test_two_processes_racing_an_in_place_migration(tmp_path: Path) -> None:
    """Ten races of two processes: one wins, the other conflicts (if both conflict, a re-run
    finishes), and the table is intact."""
    seed = tmp_path / "seed"
    delta_table(seed)
    context = multiprocessing.get_context("fork")
    outcomes: list[str] = []
    for attempt in range(10):
        root = tmp_path / f"r{attempt}"
        shutil.copytree(seed, root)
        queue, start = context.Queue(), context.Event()
        runs = [
            context.Process(target=_migrate_in_child, args=(str(root), queue, start))
            for _ in range(2)
        ]
        for run in runs:
            run.start()
        start.set()
        for run in runs:
            run.join(120)
        got = sorted(queue.get(timeout=5) for _ in runs)
        outcomes += got
        assert all(o == "ok" or o.startswith("CommitConflictError") for o in got), got
        if "ok" not in got:
            _migrate(root)
        _intact(root)
    assert len(outcomes) == 20 and outcomes.count("ok") >= 10
