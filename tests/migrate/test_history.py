"""``lakecore.migrate(history=True)``: every source version becomes a target version whose rows,
read by the TARGET format's own engine (deltalake, hudi-rs, pylance), are the source's rows at
that version as lakecore reads them; time travel by timestamp agrees where the target keeps
the source's commit times.

Sources are built here with lakecore: Delta with deletion vectors, Hudi copy-on-write and
merge-on-read (log files), Lance (deletion files); each has appends, a delete, an update, an
overwrite-where and an added column. The helpers are shared with
test_incremental.py and tests/reliability/test_migrate_faults.py.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lakecore
from lakecore.migrate import MigrationReport
from lakecore.table import Table

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("ts", pa.int64()),
        pa.field("city", pa.string()),
    ]
)
SOURCES = ("delta", "hudi-cow", "hudi-mor", "lance")
TARGETS = ("delta", "hudi", "lance")
PAIRS = [(s, t) for s in SOURCES for t in TARGETS if s.split("-")[0] != t]
Row = dict[str, Any]


def rows(*items: tuple[int, str, int, str], extra: bool = False) -> pa.Table:
    """Rows of ``SCHEMA`` (plus an ``extra`` string column) from (id, name, ts, city)."""
    data = [{"id": i, "name": n, "ts": t, "city": c} for i, n, t, c in items]
    schema = SCHEMA
    if extra:
        schema = SCHEMA.append(pa.field("extra", pa.string()))
        data = [{**r, "extra": f"e{r['id']}"} for r in data]
    return pa.Table.from_pylist(data, schema=schema)


def format_of(kind: str) -> str:
    return kind.split("-")[0]


def create_source(kind: str, root: Path) -> Table:
    """An empty source table of ``kind`` (Delta with deletion vectors and in-commit timestamps;
    Hudi keyed on ``id``, partitioned by ``city``)."""
    if kind == "delta":
        props = {"delta.enableDeletionVectors": "true", "delta.enableInCommitTimestamps": "true"}
        return lakecore.create(str(root), SCHEMA, "delta", properties=props)
    if kind == "lance":
        return lakecore.create(str(root), SCHEMA, "lance")
    table_type = "MERGE_ON_READ" if kind == "hudi-mor" else "COPY_ON_WRITE"
    props = {"record_key": "id", "precombine_field": "ts", "table_type": table_type}
    return lakecore.create(str(root), SCHEMA, "hudi", ["city"], props)


def build_source(kind: str, root: Path, add_column: bool = True) -> Table:
    """A multi-version source: appends, a row-level delete, an update, an overwrite-where and,
    for formats with schema evolution and when ``add_column``, an added column and rows
    with it."""
    t = create_source(kind, root)
    t.append(rows((1, "a", 1, "x"), (2, "b", 1, "x"), (3, "c", 1, "y"), (4, "d", 1, "y")))
    t.append(rows((5, "e", 1, "x"), (6, "f", 1, "z")))
    t.delete("id = 2")  # a deletion vector / log delete block or rewrite / deletion file
    t.update({"name": "'u'"}, "id = 3")
    if format_of(kind) == "hudi":
        t.upsert(rows((4, "up", 2, "y"), (7, "g", 2, "z")))
    t.overwrite(rows((6, "o", 3, "z"), (8, "h", 3, "z")), where="city = 'z'")
    if add_column and lakecore.Capability.SCHEMA_EVOLUTION in t.capabilities:
        with t.update_schema() as s:
            s.add_column("extra", pa.string())
        t.append(rows((9, "i", 4, "x"), extra=True))
        t.delete("id = 1")
    return lakecore.open(str(root))


def sorted_rows(table: pa.Table) -> list[Row]:
    keep = [c for c in table.column_names if not c.startswith("_hoodie_")]
    data = table.select(keep).to_pylist()
    return sorted(data, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def source_rows(root: Path, version: int | str) -> list[Row]:
    """The source's rows at ``version`` as lakecore reads them (system columns dropped)."""
    return sorted_rows(lakecore.open(str(root)).to_arrow(version=version))


def hudi_rs_read(root: Path, instant: str | None = None) -> pa.Table:
    import hudi

    table = hudi.HudiTableBuilder.from_base_uri(str(root)).build()
    options = hudi.HudiReadOptions()
    if instant is not None:
        options = options.with_as_of_timestamp(instant)
    batches = table.read(options)
    return pa.Table.from_batches(batches) if batches else pa.table({})


def engine_rows(fmt: str, root: Path, version: int | str | None = None) -> list[Row]:
    """The rows the format's own engine reads at ``version`` (latest when None)."""
    if fmt == "delta":
        import deltalake

        return sorted_rows(deltalake.DeltaTable(str(root), version=version).to_pyarrow_table())
    if fmt == "lance":
        import lance

        return sorted_rows(lance.dataset(str(root), version=version).to_table())
    return sorted_rows(hudi_rs_read(root, None if version is None else str(version)))


def engine_rows_at_time(fmt: str, root: Path, ms: int) -> list[Row]:
    """The rows pylance or hudi-rs reads as of epoch milliseconds ``ms``."""
    when = dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc)
    if fmt == "lance":
        import lance

        # pylance takes naive local times (as its versions() gives them).
        naive = dt.datetime.fromtimestamp(ms // 1000).replace(microsecond=(ms % 1000) * 1000)
        return sorted_rows(lance.dataset(str(root), asof=naive).to_table())
    instant = when.strftime("%Y%m%d%H%M%S") + f"{ms % 1000:03d}"
    return sorted_rows(hudi_rs_read(root, instant))


def assert_versions_match(report: MigrationReport, source: Path, target: Path, fmt: str) -> int:
    """Every (source, target) version pair of ``report``: the target engine's rows equal the
    source's; so do lakecore's reads of the target. Returns how many pairs were compared."""
    target_table = lakecore.open(str(target), format=fmt)
    for sv, tv in report.versions:
        want = source_rows(source, sv)
        assert engine_rows(fmt, target, tv) == want, (sv, tv)
        assert sorted_rows(target_table.to_arrow(version=tv)) == want, (sv, tv)
    return len(report.versions)


@pytest.mark.parametrize(("kind", "to"), PAIRS, ids=[f"{s}-to-{t}" for s, t in PAIRS])
def test_history_every_version_read_by_the_target_engine(
    kind: str, to: str, tmp_path: Path
) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    source = build_source(kind, src, add_column=to != "hudi")
    report = lakecore.migrate(str(src), str(dst), to=to, history=True)
    source_versions = [e.version for e in reversed(source.history())]
    assert [sv for sv, _ in report.versions] == source_versions
    target_versions = [tv for _, tv in report.versions]
    assert target_versions == sorted(target_versions, key=lambda v: (len(str(v)), str(v)))
    assert assert_versions_match(report, src, dst, to) == len(source_versions) >= 6
    assert engine_rows(to, dst) == source_rows(src, source.version)
    # Deletion vectors and deletion files are counted; Hudi deletes (log blocks, rewrites)
    # are not descriptors and count 0.
    assert (report.deletes_carried >= 1) is (kind in ("delta", "lance"))
    # Every target keeps the source's commit times: Delta and Lance create the target dated
    # just before the first source version (Hudi creates it without an instant).
    assert report.timestamps_kept
    assert report.notes == () or all("commit times" not in n for n in report.notes)
    target = lakecore.open(str(dst), format=to)
    for sv, tv in report.versions:
        assert target.snapshot(version=tv).timestamp == source.snapshot(version=sv).timestamp


def test_hudi_target_follows_an_added_column(tmp_path: Path) -> None:
    """A source version that adds a column becomes an ALTER_SCHEMA instant on a Hudi target
    (then its data commit): every source version's rows equal the target's matching
    version's, read by hudi-rs, the added column included."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    source = build_source("delta", src)
    assert "extra" in source.schema.names
    report = lakecore.migrate(str(src), str(dst), to="hudi", history=True)
    target = lakecore.open(str(dst), format="hudi")
    assert "extra" in target.schema.names
    assert [e.operation for e in target.history()].count("alter_schema") == 1
    checked = 0
    for sv, tv in report.versions:
        want = source_rows(src, sv)
        got = hudi_rs_read(dst, str(tv))
        if "extra" in got.column_names and "extra" not in source.snapshot(sv).schema.names:
            # hudi-rs reads every instant with the latest schema: the column is there, null.
            assert got.column("extra").null_count == got.num_rows
            got = got.drop_columns(["extra"])
        assert sorted_rows(got) == want
        checked += 1
    assert checked == len(source.history())


@pytest.mark.parametrize("to", ["delta", "hudi", "lance"])
def test_time_travel_by_timestamp_where_kept(to: str, tmp_path: Path) -> None:
    """Source commits one second apart (dated ahead of the clock, so that the check does not
    depend on how fast the source was written): time travel on the target at each source
    commit's time (and just before the next) returns the source's rows then, by the target's
    engine (pylance, hudi-rs) and by lakecore. delta-rs 1.6.6 travels by commit-file times,
    not by in-commit timestamps (pinned in tests/delta/test_commit_metadata.py), so a Delta
    target is checked by lakecore and by version with delta-rs."""
    kind = "lance" if to != "lance" else "delta"
    src, dst = tmp_path / "src", tmp_path / "dst"
    t = create_source(kind, src)
    start = int(time.time() * 1000) + 3_600_000
    steps = [
        lambda tx: tx.append(rows((1, "a", 1, "x"), (2, "b", 1, "y"))),
        lambda tx: tx.delete("id = 1"),
        lambda tx: tx.update({"name": "'u'"}, "id = 2"),
        lambda tx: tx.append(rows((3, "c", 1, "x"))),
    ]
    for i, step in enumerate(steps):
        with t.transaction(timestamp_ms=start + i * 1000) as tx:
            step(tx)
    source = lakecore.open(str(src))
    report = lakecore.migrate(str(src), str(dst), to=to, history=True)
    assert report.timestamps_kept
    assert assert_versions_match(report, src, dst, to) == len(steps) + 1
    target = lakecore.open(str(dst), format=to)
    checked = 0
    for sv, tv in report.versions:
        ms = source.snapshot(version=sv).timestamp
        assert ms is not None
        assert target.snapshot(version=tv).timestamp == ms
        if ms < start:
            continue  # the source's creation, at the clock's time
        want = source_rows(src, sv)
        # Lance converts times through floats: 1 ms after the commit is the first safe time.
        for at in (ms + 1, ms + 999):
            if to != "delta":
                assert engine_rows_at_time(to, dst, at) == want, (sv, tv, at)
            assert (
                sorted_rows(target.to_arrow(version=target.snapshot(timestamp=at).version)) == want
            )
        checked += 1
    assert checked == len(steps)
