"""Time travel by version and by timestamp (file mtimes, and in-commit timestamps)."""

from __future__ import annotations

import datetime as dt

import pytest

import lakecore
from lakecore.errors import VersionNotFoundError

from .builders import (
    BASE_TIME_MS,
    DeltaTableBuilder,
    commit_info,
    metadata,
    protocol,
    set_mtime,
)
from .conftest import ID_FIELDS, id_rows

MINUTE = 60_000
ICT_CONFIG = {"delta.enableInCommitTimestamps": "true"}
ICT_PROTOCOL = protocol(1, 7, writer_features=["inCommitTimestamp"])


def mtime_table(builder: DeltaTableBuilder, times: list[int]) -> None:
    """Versions 0..len(times)-1; version v adds v rows; commit v's mtime is times[v]."""
    builder.init(ID_FIELDS, mtime_ms=times[0])
    for v in range(1, len(times)):
        a = builder.data_file(f"f{v}.parquet", id_rows(*range(100 * v, 100 * v + v)))
        builder.commit(v, commit_info(), a, mtime_ms=times[v])


def ict_table(builder: DeltaTableBuilder, icts: list[int], mtimes: list[int]) -> None:
    """Like ``mtime_table`` but with in-commit timestamps (commitInfo first in each commit)."""
    builder.commit(
        0,
        commit_info("CREATE TABLE", in_commit_timestamp=icts[0]),
        ICT_PROTOCOL,
        metadata(ID_FIELDS, configuration=ICT_CONFIG),
        mtime_ms=mtimes[0],
    )
    for v in range(1, len(icts)):
        a = builder.data_file(f"f{v}.parquet", id_rows(*range(100 * v, 100 * v + v)))
        builder.commit(v, commit_info(in_commit_timestamp=icts[v]), a, mtime_ms=mtimes[v])


def rows_total(v: int) -> int:
    return sum(range(v + 1))


def test_by_version_each_version_row_count(builder: DeltaTableBuilder) -> None:
    mtime_table(builder, [BASE_TIME_MS + i * MINUTE for i in range(5)])
    table = lakecore.open(builder.uri)
    for v in range(5):
        assert table.to_arrow(version=v).num_rows == rows_total(v), v
        assert table.snapshot(v).version == v
    assert table.to_arrow().num_rows == rows_total(4)


def test_by_timestamp_uses_commit_mtimes(builder: DeltaTableBuilder) -> None:
    times = [BASE_TIME_MS + i * MINUTE for i in range(4)]
    mtime_table(builder, times)
    table = lakecore.open(builder.uri)
    for v, t in enumerate(times):
        assert table.snapshot(timestamp=t).version == v
        assert table.snapshot(timestamp=t + 1).version == v
        assert table.snapshot(timestamp=t).timestamp == t
        if v:
            assert table.snapshot(timestamp=t - 1).version == v - 1
    assert table.snapshot(timestamp=times[2] + 30_000).to_arrow().num_rows == rows_total(2)


def test_timestamp_forms(builder: DeltaTableBuilder) -> None:
    times = [BASE_TIME_MS + i * MINUTE for i in range(3)]
    mtime_table(builder, times)
    table = lakecore.open(builder.uri)
    at1 = dt.datetime.fromtimestamp(times[1] / 1000, tz=dt.timezone.utc)
    assert table.snapshot(timestamp=at1).version == 1
    assert table.snapshot(timestamp=at1.isoformat()).version == 1
    assert table.snapshot(timestamp=at1.strftime("%Y-%m-%dT%H:%M:%SZ")).version == 1
    assert table.snapshot(timestamp=at1.replace(tzinfo=None)).version == 1  # naive = UTC
    assert table.snapshot(timestamp=float(times[1])).version == 1
    later_day = (at1 + dt.timedelta(days=2)).date()
    assert table.snapshot(timestamp=later_day).version == 2


def test_timestamp_before_the_first_commit(builder: DeltaTableBuilder) -> None:
    mtime_table(builder, [BASE_TIME_MS + i * MINUTE for i in range(3)])
    table = lakecore.open(builder.uri)
    with pytest.raises(VersionNotFoundError):
        table.snapshot(timestamp=BASE_TIME_MS - 1)
    with pytest.raises(VersionNotFoundError):
        table.snapshot(timestamp="1990-01-01T00:00:00Z")


def test_timestamp_after_the_last_commit_is_latest(builder: DeltaTableBuilder) -> None:
    mtime_table(builder, [BASE_TIME_MS + i * MINUTE for i in range(3)])
    table = lakecore.open(builder.uri)
    assert table.snapshot(timestamp=BASE_TIME_MS + 10**12).version == 2
    assert table.snapshot(timestamp="2999-01-01").version == 2


def test_version_and_timestamp_together_is_an_error(builder: DeltaTableBuilder) -> None:
    mtime_table(builder, [BASE_TIME_MS, BASE_TIME_MS + MINUTE])
    with pytest.raises(ValueError, match="not both"):
        lakecore.open(builder.uri).snapshot(version=0, timestamp=BASE_TIME_MS)


def test_mtimes_going_backwards_keep_versions_monotonic(builder: DeltaTableBuilder) -> None:
    # A copied table: commit 2 got an older mtime than commit 1.
    times = [
        BASE_TIME_MS,
        BASE_TIME_MS + 2 * MINUTE,
        BASE_TIME_MS + MINUTE,
        BASE_TIME_MS + 3 * MINUTE,
    ]
    mtime_table(builder, times)
    table = lakecore.open(builder.uri)
    assert table.snapshot(timestamp=BASE_TIME_MS + MINUTE).version == 0
    assert table.snapshot(timestamp=BASE_TIME_MS + 2 * MINUTE).version == 2
    assert table.snapshot(timestamp=BASE_TIME_MS + 3 * MINUTE).version == 3


def test_by_timestamp_with_in_commit_timestamps(builder: DeltaTableBuilder) -> None:
    icts = [BASE_TIME_MS + i * MINUTE for i in range(4)]
    # mtimes disagree completely with the ICTs (e.g. a copied table): they must be ignored.
    mtimes = [BASE_TIME_MS + 10**9 - i * MINUTE for i in range(4)]
    ict_table(builder, icts, mtimes)
    table = lakecore.open(builder.uri)
    for v, t in enumerate(icts):
        snap = table.snapshot(timestamp=t)
        assert snap.version == v
        assert snap.timestamp == t
        assert table.snapshot(timestamp=t + MINUTE - 1).version == v
        assert table.snapshot(v).timestamp == t
    with pytest.raises(VersionNotFoundError):
        table.snapshot(timestamp=icts[0] - 1)
    assert table.snapshot(timestamp=mtimes[0]).version == 3
    assert [h.timestamp for h in table.history()] == icts[::-1]


def test_snapshot_timestamp_at_a_checkpointed_version_is_the_commit_time(
    builder: DeltaTableBuilder,
) -> None:
    """A checkpoint's mtime is not the commit time of its version (state.py bug)."""
    times = [BASE_TIME_MS + i * MINUTE for i in range(3)]
    mtime_table(builder, times)
    adds = [
        builder.data_file(f"f{v}.parquet", id_rows(*range(100 * v, 100 * v + v))) for v in (1, 2)
    ]
    (cp,) = builder.checkpoint(2, [protocol(), metadata(ID_FIELDS), *adds])
    set_mtime(cp, times[2] + 10 * MINUTE)  # checkpoints are written after the commit
    table = lakecore.open(builder.uri)
    assert table.snapshot(2).timestamp == times[2]


def test_snapshot_timestamp_at_a_checkpointed_version_with_ict(builder: DeltaTableBuilder) -> None:
    """With in-commit timestamps the version's time is in its commit, not in any mtime."""
    icts = [BASE_TIME_MS + i * MINUTE for i in range(3)]
    mtimes = [BASE_TIME_MS + 10**9 + i for i in range(3)]
    ict_table(builder, icts, mtimes)
    builder.checkpoint(
        2,
        [ICT_PROTOCOL, metadata(ID_FIELDS, configuration=ICT_CONFIG)],
    )
    table = lakecore.open(builder.uri)
    assert table.snapshot(2).timestamp == icts[2]
