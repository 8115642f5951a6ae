"""A Hudi target's rollback (an aborted write) is dated: a replayed commit older than it is
committed at the clock's time instead of failing."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
import pytest

import lakecore

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def _rows(*ids: int) -> pa.Table:
    return pa.table({"id": list(ids), "name": [str(i) for i in ids]}, schema=SCHEMA)


def test_replayed_time_before_a_rollback_commits_undated(tmp_path: Path) -> None:
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    source = lakecore.create(src, SCHEMA, format="lance")
    source.append(_rows(1))
    first = lakecore.migrate(src, dst, to="hudi", history=True)
    assert first.timestamps_kept
    target = lakecore.open(dst, format="hudi")
    before_rollback = int(time.time() * 1000)
    with pytest.raises(RuntimeError), target.transaction() as tx:
        tx.append(_rows(99))
        raise RuntimeError("the write fails: its instant is rolled back")
    assert target.history(limit=1)[0].operation == "rollback"
    time.sleep(0.01)
    # A source commit dated before the rollback (and after the source's previous commit).
    with source.transaction(timestamp_ms=before_rollback) as stx:
        stx.append(_rows(2))
    report = lakecore.migrate(src, dst, to="hudi", history=True)
    assert [sv for sv, _ in report.versions] == [source.version]
    assert not report.timestamps_kept
    got = lakecore.open(dst, format="hudi").to_arrow(columns=["id"]).column("id").to_pylist()
    assert sorted(got) == [1, 2]
