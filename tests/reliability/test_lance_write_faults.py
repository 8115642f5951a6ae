"""Crash safety of Lance writes: a storage fault at every call of an append, a delete, an
update and a merge (before the call, or after it reached the store) leaves a dataset that
pylance and lakecore both open, showing the old version or the complete new one."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

import lakecore
from lakecore import Table
from lakecore.errors import LakecoreError
from lakecore.storage import open_storage
from lakecore.testing.faults import FaultyStorage

lance = pytest.importorskip("lance", reason="needs pylance (the lance extra)")

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
Operation = Callable[[Table], object]
OPERATIONS: dict[str, Operation] = {
    "append": lambda t: t.append(pa.table({"id": [9], "v": ["n"]}, schema=SCHEMA)),
    "delete": lambda t: t.delete("id = 2"),
    "update": lambda t: t.update({"v": "'u'"}, "id = 4"),
    "merge": lambda t: (
        t.merge(pa.table({"id": [1, 8], "v": ["m", "m"]}, schema=SCHEMA), on="id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    ),
}


def files(path: Path) -> set[str]:
    """The dataset's files, the latest-version hint aside (a hint, rewritten by writers)."""
    every = {str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()}
    return every - {"_versions/latest_version_hint.json"}


def ids_and_values(path: Path, version: int | None = None) -> list[tuple[int, str]]:
    table = lance.dataset(str(path), version=version).to_table()
    return sorted(zip(table.column("id").to_pylist(), table.column("v").to_pylist(), strict=True))


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_a_fault_at_any_call_leaves_a_readable_dataset(tmp_path: Path, name: str) -> None:
    base = tmp_path / "base"
    table = lakecore.create(str(base), SCHEMA, format="lance")
    table.append(pa.table({"id": [1, 2, 3], "v": ["a"] * 3}, schema=SCHEMA))
    table.append(pa.table({"id": [4, 5], "v": ["b"] * 2}, schema=SCHEMA))
    old = ids_and_values(base)
    clean = tmp_path / "clean"
    shutil.copytree(base, clean)
    OPERATIONS[name](lakecore.open(str(clean)))
    new = ids_and_values(clean)
    copy = tmp_path / "count"
    shutil.copytree(base, copy)
    counter = FaultyStorage(open_storage(str(copy)))
    OPERATIONS[name](lakecore.open(str(copy), storage=counter))
    calls = len(counter.calls)
    cases = 0
    for mode in ("before", "after"):
        for index in range(calls):
            path = tmp_path / f"{mode}-{index}"
            shutil.copytree(base, path)
            faulty = FaultyStorage(open_storage(str(path)))
            faulty.arm(index, mode)
            # Every fault surfaces as a typed error (a raw OSError fails the test).
            with contextlib.suppress(LakecoreError):
                OPERATIONS[name](lakecore.open(str(path), storage=faulty))
            versions = [v["version"] for v in lance.dataset(str(path)).versions()]
            assert versions in ([1, 2, 3], [1, 2, 3, 4]), (mode, index, faulty.faults)
            got = ids_and_values(path)
            assert got == (new if versions[-1] == 4 else old), (mode, index, faulty.faults)
            if versions[-1] == 3:  # nothing landed: nothing of the write is left either
                assert files(path) == files(base), (mode, index, faulty.faults)
            assert sorted(lakecore.open(str(path)).to_arrow().to_pylist(), key=str) == sorted(
                ({"id": i, "v": v} for i, v in got), key=str
            )
            lakecore.open(str(path)).append(pa.table({"id": [100], "v": ["z"]}, schema=SCHEMA))
            assert (100, "z") in ids_and_values(path)
            cases += 1
    assert cases == 2 * calls and calls >= 9  # 11 (append, delete) or 12 (update, merge) now


def test_a_failed_transaction_file_write_leaves_no_file(tmp_path: Path) -> None:
    path = tmp_path / "t"
    lakecore.create(str(path), SCHEMA, format="lance")
    before = {p for p in path.rglob("*") if p.is_file()}
    faulty = FaultyStorage(open_storage(str(path)))
    faulty.arm(0, "after", match=lambda call: call.path.startswith("_transactions/"))
    with pytest.raises(LakecoreError):
        lakecore.open(str(path), storage=faulty).append(
            pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA)
        )
    assert faulty.faults and faulty.faults[0].method == "put"
    assert {p for p in path.rglob("*") if p.is_file()} == before


def _killed_writer(path: str, name: str, index: int, mode: str) -> None:
    """A writer process killed (``os._exit``) at storage call ``index``: no cleanup runs."""
    import os

    faulty = FaultyStorage(open_storage(path))
    faulty.arm(index, mode, on_fault=lambda *_: os._exit(17))  # type: ignore[arg-type]
    OPERATIONS[name](lakecore.open(path, storage=faulty))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["append", "delete"])
def test_a_writer_killed_at_any_call_leaves_only_committed_versions(
    tmp_path: Path, name: str
) -> None:
    import multiprocessing

    base = tmp_path / "base"
    table = lakecore.create(str(base), SCHEMA, format="lance")
    table.append(pa.table({"id": [1, 2, 3], "v": ["a"] * 3}, schema=SCHEMA))
    table.append(pa.table({"id": [4, 5], "v": ["b"] * 2}, schema=SCHEMA))
    old = ids_and_values(base)
    clean = tmp_path / "clean"
    shutil.copytree(base, clean)
    OPERATIONS[name](lakecore.open(str(clean)))
    new = ids_and_values(clean)
    context = multiprocessing.get_context("spawn")
    killed = 0
    for mode in ("before", "after"):
        for index in range(11):  # every call of the operation (test above: 11)
            path = tmp_path / f"{mode}-{index}"
            shutil.copytree(base, path)
            proc = context.Process(target=_killed_writer, args=(str(path), name, index, mode))
            proc.start()
            proc.join(timeout=120)
            killed += proc.exitcode == 17
            versions = [v["version"] for v in lance.dataset(str(path)).versions()]
            assert versions in ([1, 2, 3], [1, 2, 3, 4]), (mode, index)
            assert ids_and_values(path) == (new if versions[-1] == 4 else old), (mode, index)
            lakecore.open(str(path)).append(pa.table({"id": [100], "v": ["z"]}, schema=SCHEMA))
            assert (100, "z") in ids_and_values(path)
    assert killed == 22
