"""Writers that die before committing leave the table readable and unchanged.

Data files written before the crash stay on disk as orphans (for vacuum), never in the table;
a transaction whose block raises is aborted and deletes its own files.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest

import lakecore

from .helpers import LOG, canonical, commit_versions, data_files, delta_rs_rows, lakecore_rows

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": list(ids), "p": [f"p{i % 3}" for i in ids]}, schema=SCHEMA)


@pytest.fixture
def table(tmp_path: Path) -> lakecore.Table:
    t = lakecore.create(str(tmp_path / "t"), SCHEMA, partition_by=["p"])
    t.append(rows(1, 2, 3))
    return t


def live_files(table: lakecore.Table) -> set[str]:
    return set(lakecore.open(table.uri).snapshot().files().column("path").to_pylist())


def assert_unchanged_with_orphans(
    table: lakecore.Table, version: int, before: set[str], orphans_left: bool = True
) -> None:
    path = Path(table.uri)
    assert lakecore.open(table.uri).version == version
    assert commit_versions(path) == list(range(version + 1))
    expected = canonical(rows(1, 2, 3))
    assert lakecore_rows(path) == delta_rs_rows(path) == expected
    orphans = data_files(path) - before
    if not orphans_left:
        assert orphans == set(), "the aborted transaction should have deleted its files"
        return
    assert orphans, "the dead writer should have left its data files behind"
    assert not orphans & live_files(table)


def test_planned_but_never_committed(table: lakecore.Table) -> None:
    before = data_files(table.uri)
    actions, _info = table._format_writer(table.snapshot()).append(rows(10, 11, 12))
    assert actions
    assert_unchanged_with_orphans(table, 1, before)
    assert table.append(rows(4)).version == 2  # the next writer is not disturbed
    assert lakecore_rows(table.uri) == canonical(rows(1, 2, 3, 4))


def test_transaction_block_that_raises_commits_nothing(table: lakecore.Table) -> None:
    before = data_files(table.uri)
    with pytest.raises(RuntimeError, match="boom"), table.transaction() as tx:
        tx.append(rows(10, 11))
        tx.set_app_transaction("job", 1)
        raise RuntimeError("boom")
    assert_unchanged_with_orphans(table, 1, before, orphans_left=False)


CHILD = textwrap.dedent(
    """
    import os, sys, time
    import pyarrow as pa
    import lakecore
    from lakecore.storage import fsspec_storage

    where = sys.argv[2]
    real_link = os.link

    def stall(*args, **kwargs):
        print("stalled", flush=True)
        time.sleep(120)

    if where == "before-put":
        fsspec_storage.FsspecStorage.put_if_absent = stall
    else:  # temp commit file written, not yet linked into place
        def link(src, dst, *args, **kwargs):
            if "_delta_log" in str(dst):
                stall()
            return real_link(src, dst, *args, **kwargs)
        os.link = link

    table = lakecore.open(sys.argv[1])
    table.append(pa.table({"id": [10, 11, 12], "p": ["p1", "p2", "p0"]}))
    print("committed?!", flush=True)
    """
)


@pytest.mark.parametrize("where", ["before-put", "mid-put"])
def test_process_killed_before_its_commit_lands(table: lakecore.Table, where: str) -> None:
    before = data_files(table.uri)
    log_before = {p.name for p in (Path(table.uri) / LOG).iterdir()}
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, table.uri, where],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == "stalled", line + proc.stderr.read() if proc.stderr else line
    finally:
        proc.kill()
        proc.communicate(timeout=30)
    assert_unchanged_with_orphans(table, 1, before)
    leftovers = {p.name for p in (Path(table.uri) / LOG).iterdir()} - log_before
    if where == "mid-put":
        assert leftovers and all(n.endswith(".tmp") for n in leftovers), leftovers
    else:
        assert not leftovers
    # A later writer takes version 2 as if nothing happened.
    assert table.append(rows(4)).version == 2
    assert lakecore_rows(table.uri) == delta_rs_rows(table.uri) == canonical(rows(1, 2, 3, 4))
