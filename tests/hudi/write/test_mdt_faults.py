"""A storage fault at every call that changes the store, on a table with a metadata table.

For each operation (append, upsert, compaction, clean of a merge-on-read table whose ``files``
partition lakecore maintains), the operation is first run through a counting ``FaultyStorage``;
then, on a fresh copy, once per mutating call with an ``OSError`` there (``before``: the call
never reaches the store) and once with the call landing and its reply lost (``after``). Each
time the error, if any, is a ``LakecoreError``; lakecore reads the state before or after; and
once a new writer appended, the ``files`` partition lists exactly the data files on storage and
hudi-rs (which lists through it) reads lakecore's rows. The default run faults the calls on
the metadata table only, ``-m slow`` every mutating call; both are slow (the default run
has ``test_mdt_maintain``'s crash tests).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import lakecore
from lakecore.errors import CommitStorageError, LakecoreError
from lakecore.table import Table
from lakecore.testing.faults import MUTATING
from tests.hudi.write.helpers import create, files_on_disk
from tests.hudi.write.test_mdt_maintain import mdt_listing
from tests.reliability.faulty_ops import (
    follow_up,
    hudi_data,
    open_faulty,
    peer_rows,
    state,
    with_rows,
)

OPERATIONS: dict[str, Callable[[Table], Any]] = {
    "append": lambda t: t.append(hudi_data(5, 6)),
    "upsert": lambda t: t.upsert(hudi_data(2, 7, name="v", ts=5)),
    "compact": lambda t: t.compact(),
    "clean": lambda t: t.clean(retain_commits=1),
}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("template") / "t"
    table = create(root, "MERGE_ON_READ", metadata_enable="true")
    table.append(hudi_data(1, 2, 3))
    table.upsert(hudi_data(1, name="u", ts=2))
    table.compact()  # slices for the clean to delete ...
    table.upsert(hudi_data(3, name="w", ts=3))  # ... and log files to compact again
    return root


def _cases(name: str, template: Path, tmp_path: Path, everything: bool) -> int:
    op = OPERATIONS[name]
    before = state("hudi-mor", template)
    counting = tmp_path / "counting"
    shutil.copytree(template, counting)
    table, faulty = open_faulty(counting)
    op(table)
    calls = list(faulty.calls)
    after = state("hudi-mor", counting)
    chosen = [
        i
        for i, c in enumerate(calls)
        if c.method in MUTATING and (everything or c.path.startswith(".hoodie/metadata/"))
    ]
    assert chosen, f"{name} made no metadata-table writes"
    failures = []
    cases = 0
    for index in chosen:
        for mode in ("before", "after"):
            root = tmp_path / f"case{cases}"
            cases += 1
            shutil.copytree(template, root)
            table, faulty = open_faulty(root)
            faulty.arm(index, mode)
            try:
                op(table)
                error: BaseException | None = None
            except BaseException as exc:  # classified below: raw errors are failures
                error = exc
            where = f"call {index} {calls[index]} ({mode})"
            if error is not None and not isinstance(error, LakecoreError):
                failures.append(f"{where}: raw {type(error).__name__}: {error}")
                continue
            now = state("hudi-mor", root)
            if error is None and now != after:
                failures.append(f"{where}: succeeded but the table is not in the after state")
            elif isinstance(error, CommitStorageError) and now != before:
                failures.append(f"{where}: nothing committed, yet the table changed")
            elif now not in (before, after):
                failures.append(f"{where}: partial state")
            write, data = follow_up("hudi-mor")
            write(lakecore.open(str(root)))
            final = state("hudi-mor", root)
            if final.rows != with_rows("hudi-mor", now, data):
                failures.append(f"{where}: the next writer's append did not land")
            if mdt_listing(root) != files_on_disk(root):
                failures.append(f"{where}: the files partition does not list storage's files")
            if peer_rows("hudi-mor", root) != final.rows:
                failures.append(f"{where}: hudi-rs reads other rows than lakecore")
    assert not failures, "\n".join(failures)
    return cases


@pytest.mark.slow
@pytest.mark.parametrize("name", ["clean"])
def test_faults_on_metadata_table_writes(name: str, template: Path, tmp_path: Path) -> None:
    assert _cases(name, template, tmp_path, everything=False) >= 8


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_faults_on_every_write(name: str, template: Path, tmp_path: Path) -> None:
    assert _cases(name, template, tmp_path, everything=True) >= 8
