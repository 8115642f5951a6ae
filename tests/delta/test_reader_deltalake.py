"""Interop: tables written by delta-rs (``deltalake``) read the same through lakecore."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lakecore

deltalake = pytest.importorskip("deltalake", reason="interop tests need deltalake")

UTC = dt.timezone.utc
SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("name", pa.string()),
        ("p", pa.string()),
        ("d", pa.date32()),
        ("ts", pa.timestamp("us", "UTC")),
        ("amount", pa.decimal128(10, 2)),
        ("s", pa.struct([("a", pa.int32()), ("b", pa.string())])),
    ]
)


def batch(start: int, n: int, part: str) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.Table.from_pylist(
        [
            {
                "id": i,
                "name": None if i % 4 == 0 else f"n{i}",
                "p": part,
                "d": dt.date(2021, 1, 1) + dt.timedelta(days=i),
                "ts": dt.datetime(2021, 1, 1, tzinfo=UTC) + dt.timedelta(hours=i),
                "amount": Decimal(i) / 4,
                "s": {"a": i, "b": f"b{i}"},
            }
            for i in ids
        ],
        schema=SCHEMA,
    )


def rows(table: pa.Table) -> list[dict[str, Any]]:
    return table.select(SCHEMA.names).sort_by("id").to_pylist()


@pytest.fixture(scope="module")
def delta_rs_table(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, int]:
    """v0 create, v1-v2 appends, v3 delete, v4 append + checkpoint, v5 partition overwrite."""
    uri = str(tmp_path_factory.mktemp("interop") / "t")
    deltalake.write_deltalake(uri, batch(0, 5, "a"), partition_by=["p"])
    deltalake.write_deltalake(uri, batch(5, 5, "b"), mode="append")
    deltalake.write_deltalake(uri, batch(10, 3, "a b/c=d"), mode="append")
    deltalake.DeltaTable(uri).delete("id % 3 = 0")
    deltalake.write_deltalake(uri, batch(20, 4, "a"), mode="append")
    deltalake.DeltaTable(uri).create_checkpoint()
    deltalake.write_deltalake(uri, batch(30, 2, "b"), mode="overwrite", predicate="p = 'b'")
    return uri, deltalake.DeltaTable(uri).version()


def test_every_version_matches_delta_rs(delta_rs_table: tuple[str, int]) -> None:
    uri, latest = delta_rs_table
    table = lakecore.open(uri)
    assert table.version == latest == 5
    checked = 0
    for v in range(latest + 1):
        ours = table.to_arrow(version=v)
        theirs = deltalake.DeltaTable(uri, version=v).to_pyarrow_table()
        assert ours.num_rows == theirs.num_rows, v
        assert rows(ours) == rows(theirs), v
        checked += 1
    assert checked == 6


def test_file_index_matches_delta_rs_add_actions(delta_rs_table: tuple[str, int]) -> None:
    uri, _ = delta_rs_table
    ours = lakecore.open(uri).snapshot().files().sort_by("path")
    theirs = deltalake.DeltaTable(uri).get_add_actions(flatten=True)
    theirs = pa.table(theirs).sort_by("path")
    assert len(ours) == len(theirs)
    assert sorted(Path(p).name for p in ours.column("path").to_pylist()) == sorted(
        Path(p).name for p in theirs.column("path").to_pylist()
    )
    # the log holds "p=a%2520b..." (the Hive-escaped directory, URL-encoded): decoded once
    assert any(p.startswith("p=a%20b%2Fc%3Dd/") for p in ours.column("path").to_pylist())
    assert sorted(ours.column("size").to_pylist()) == sorted(
        theirs.column("size_bytes").to_pylist()
    )
    assert sorted(ours.column("record_count").to_pylist()) == sorted(
        theirs.column("num_records").to_pylist()
    )
    by_path = {
        r["path"]: r
        for r in ours.select(["path", "partition", "min", "max", "null_count"]).to_pylist()
    }
    for r in theirs.to_pylist():
        mine = next(m for p, m in by_path.items() if Path(p).name == Path(r["path"]).name)
        assert mine["partition"]["p"] == r["partition.p"]
        assert mine["min"]["id"] == r["min.id"]
        assert mine["max"]["id"] == r["max.id"]
        assert mine["min"]["d"] == r["min.d"]
        assert mine["min"]["amount"] == r["min.amount"]
        assert mine["max"]["s"]["a"] == r["max.s.a"]
        assert mine["null_count"]["name"] == r["null_count.name"]


def test_history_matches_delta_rs(delta_rs_table: tuple[str, int]) -> None:
    uri, _ = delta_rs_table
    ours = lakecore.open(uri).history()
    theirs = deltalake.DeltaTable(uri).history()
    assert [e.version for e in ours] == [h["version"] for h in theirs]
    assert [e.operation for e in ours] == [h["operation"] for h in theirs]
    # delta-rs reports commitInfo.timestamp; lakecore the commit time (file mtime): close.
    for e, h in zip(ours, theirs, strict=True):
        assert e.timestamp is not None
        assert abs(e.timestamp - h["timestamp"]) < 5_000
    assert len(lakecore.open(uri).history(limit=2)) == 2


def test_timestamp_travel_matches_delta_rs(delta_rs_table: tuple[str, int]) -> None:
    uri, _ = delta_rs_table
    table = lakecore.open(uri)
    for entry in table.history():
        assert table.snapshot(timestamp=entry.timestamp).version >= entry.version
    first = table.history()[-1]
    assert table.snapshot(timestamp=first.timestamp).version >= 0
    last = table.history()[0]
    assert table.snapshot(timestamp=last.timestamp + 1).version == last.version
