"""A storage fault at every call of a checkpoint of a table whose stats exist only as structs.

The corpus table ``deltars__delta-1.2.1-only-struct-stats`` (Databricks,
``delta.checkpoint.writeStatsAsJson=false``) holds its files' stats in a checkpoint's
``stats_parsed`` and nowhere as text. Lakecore's checkpoint of it must render the text from the
structs (session 11). Here that checkpoint is written with an ``OSError`` at each storage call
in turn (``before``: never reaching the store; ``after``: landing with its reply lost). Each
time:

- the error, if any, is ``StorageError`` (as ``Table.checkpoint`` documents; never a raw
  ``OSError``);
- the table re-opens with the same version, the same rows and the same file index (every
  file's record count and bounds: a half-written or rejected checkpoint must not lose stats);
- a checkpoint written afterwards without faults keeps the stats too, and delta-rs reads them.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

import lakecore
from lakecore.errors import StorageError
from lakecore.model import files as fi
from lakecore.testing.faults import MUTATING
from tests.reliability.faulty_ops import open_faulty

CORPUS = Path(os.environ.get("LAKECORE_CORPUS", Path(__file__).parents[3] / "shared" / "corpus"))
STRUCT_ONLY = CORPUS / "delta" / "deltars__delta-1.2.1-only-struct-stats"
STATS = [fi.PATH, fi.RECORD_COUNT, fi.MIN, fi.MAX, fi.NULL_COUNT]
RAN: list[str] = []
"""Cases run, checked by the last test (a matrix that runs nothing must fail)."""


def _copy(tmp_path: Path, name: str) -> Path:
    if not (STRUCT_ONLY / "_delta_log").is_dir():
        pytest.fail(f"corpus table {STRUCT_ONLY} is missing; set LAKECORE_CORPUS")
    root = tmp_path / name
    shutil.copytree(STRUCT_ONLY, root)
    return root


def _observed(root: Path) -> tuple[int | str, pa.Table, pa.Table]:
    snapshot = lakecore.open(str(root)).snapshot()
    index = snapshot.files().select(STATS).sort_by(fi.PATH)
    rows = snapshot.scan().to_arrow()
    return snapshot.version, rows.sort_by(rows.column_names[0]), index


def _calls(tmp_path: Path) -> list[tuple[int, str]]:
    """(index, mode) of every fault to inject: each call before, each mutating call after."""
    table, faulty = open_faulty(_copy(tmp_path, "count"))
    table.checkpoint()
    cases = [(i, "before") for i in range(len(faulty.calls))]
    cases += [(i, "after") for i, c in enumerate(faulty.calls) if c.method in MUTATING]
    return cases


def test_every_faulted_checkpoint_call_keeps_the_struct_only_stats(tmp_path: Path) -> None:
    expected = _observed(_copy(tmp_path, "expected"))
    assert expected[2].column(fi.RECORD_COUNT).null_count == 0
    cases = _calls(tmp_path)
    assert any(mode == "after" for _, mode in cases), "the checkpoint put nothing"
    problems: list[str] = []
    for index, mode in cases:
        root = _copy(tmp_path, f"{index}-{mode}")
        table, faulty = open_faulty(root)
        faulty.arm(index, mode)  # type: ignore[arg-type]
        try:
            table.checkpoint()
        except StorageError:
            pass  # the documented outcome of a fault (checked below: the table is intact)
        except Exception as exc:  # anything else is the failure this test looks for
            problems.append(f"{index}/{mode}: raw {type(exc).__name__}: {exc}")
            continue
        RAN.append(f"{index}/{mode}")
        if not faulty.faults:
            problems.append(f"{index}/{mode}: the fault never struck")
        if _observed(root) != expected:
            problems.append(f"{index}/{mode}: the table reads differently after the fault")
            continue
        lakecore.open(str(root)).checkpoint()  # the retry, unfaulted
        if _observed(root) != expected:
            problems.append(f"{index}/{mode}: the retried checkpoint lost stats")
    assert not problems, "\n".join(problems)
    deltalake = pytest.importorskip("deltalake")
    theirs = pa.table(deltalake.DeltaTable(str(root)).get_add_actions(flatten=True))
    assert theirs.column("num_records").null_count == 0


def test_the_fault_matrix_ran() -> None:
    assert len(RAN) >= 10, RAN
