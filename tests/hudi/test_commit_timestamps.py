"""Hudi commits made at a given time (capability ``commit_timestamps``) and with application
metadata (capability ``commit_metadata``): the instant time is the timestamp rendered as
Hudi renders instant times (UTC, as lakecore creates tables and time-travels), refused unless
later than every instant; app metadata lives in the commit metadata's ``extraMetadata``."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pytest
from lakecore_hudi.timeline.commit_metadata import parse_commit_metadata

import lakecore
from lakecore.errors import CommitError, InvalidArgumentError
from lakecore.table import Table
from tests.hudi.write.helpers import create, hudi_rs, lakecore_rows, rows

DAY = 86_400_000
BASE = int(dt.datetime(2021, 3, 4, 5, 6, 7, tzinfo=dt.timezone.utc).timestamp() * 1000) + 123


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def _data_files(root: Path) -> list[str]:
    """Base and log files (partition metadata files outlive rolled-back writes, as in Hudi)."""
    return [
        p
        for p in _files(root)
        if not p.startswith(".hoodie/") and not p.split("/")[-1].startswith(".hoodie")
    ]


def _hudi_rs_as_of(root: Path, instant: str) -> list[dict[str, object]]:
    module = hudi_rs()
    table = module.HudiTableBuilder.from_base_uri(str(root)).build()
    assert table.timezone == "utc"
    batches = table.read(module.HudiReadOptions().with_as_of_timestamp(instant))
    if not batches:
        return []
    data = pa.Table.from_batches(batches).select(["id", "name", "ts", "city"])
    return sorted(data.to_pylist(), key=lambda r: json.dumps(r, sort_keys=True))


def _at_version(table: Table, version: str) -> list[dict[str, object]]:
    data = table.scan(version=version).to_arrow().select(["id", "name", "ts", "city"])
    return sorted(data.to_pylist(), key=lambda r: json.dumps(r, sort_keys=True))


@pytest.mark.parametrize("version", ["6", "8"])
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_commits_replayed_at_past_times(tmp_path: Path, table_type: str, version: str) -> None:
    root = tmp_path / "t"
    table = create(root, table_type, version)
    versions = []
    for i in range(3):
        with table.transaction(timestamp_ms=BASE + i * DAY) as tx:
            if i < 2:
                tx.append(rows((i, "a", 1, "x")))
            else:
                tx.update({"name": "'u'"}, "id = 0")
        versions.append(tx.version)
    assert versions == ["20210304050607123", "20210305050607123", "20210306050607123"]
    history = table.history()
    assert [h.timestamp for h in history[:3]] == [BASE + 2 * DAY, BASE + DAY, BASE]
    for i, v in enumerate(versions):
        snapshot = table.snapshot(v)
        assert snapshot.timestamp == BASE + i * DAY
        assert table.snapshot(timestamp=BASE + i * DAY).version == v
        assert table.snapshot(timestamp=BASE + i * DAY + DAY - 1).version == v
        assert _hudi_rs_as_of(root, v) == _at_version(table, v)
        # hudi-rs turns epoch ms into an instant time in the table's timeline zone (UTC):
        # the commit is visible exactly from its timestamp on.
        assert _hudi_rs_as_of(root, str(BASE + i * DAY)) == _at_version(table, v)
        earlier = _hudi_rs_as_of(root, str(BASE + i * DAY - 1)) if i else []
        assert earlier == (_at_version(table, versions[i - 1]) if i else [])
    assert _at_version(table, versions[2]) == [
        {"id": 0, "name": "u", "ts": 1, "city": "x"},
        {"id": 1, "name": "a", "ts": 1, "city": "x"},
    ]
    table.append(rows((5, "n", 1, "y")))  # later writes take the clock's time again
    assert str(table.version) > versions[-1]
    assert table.history()[0].timestamp != BASE + 2 * DAY


@pytest.mark.parametrize("offset", [0, -1, -DAY])
def test_a_timestamp_not_later_than_every_instant_is_refused_before_any_file(
    tmp_path: Path, offset: int
) -> None:
    root = tmp_path / "t"
    table = create(root)
    with table.transaction(timestamp_ms=BASE) as tx:
        tx.append(rows((1, "a", 1, "x")))
    listing = _data_files(root)
    timeline = [p for p in _files(root) if "/timeline/" in p or p.count("/") == 1]
    with pytest.raises(CommitError) as caught, table.transaction(timestamp_ms=BASE + offset) as tx:
        tx.append(rows((2, "b", 1, "x")))
    assert type(caught.value) is CommitError  # not a conflict: running it again cannot help
    assert _data_files(root) == listing
    assert [p for p in _files(root) if "/timeline/" in p or p.count("/") == 1] == timeline
    assert lakecore_rows(root) == [{"id": 1, "name": "a", "ts": 1, "city": "x"}]


def test_a_pending_later_instant_also_refuses_the_timestamp(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = create(root)
    table.append(rows((1, "a", 1, "x")))  # now: later than BASE
    with pytest.raises(CommitError) as caught, table.transaction(timestamp_ms=BASE) as tx:
        tx.append(rows((2, "b", 1, "x")))
    assert type(caught.value) is CommitError
    assert lakecore_rows(root) == [{"id": 1, "name": "a", "ts": 1, "city": "x"}]


def test_the_committer_checks_the_writer_used_the_timestamp(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = create(root)
    table.append(rows((1, "a", 1, "x")))
    before = _data_files(root)
    far = int(dt.datetime(2100, 1, 1, tzinfo=dt.timezone.utc).timestamp() * 1000)
    with pytest.raises(CommitError) as caught, table.transaction(timestamp_ms=far) as tx:
        writer = table._format_writer(tx.snapshot)  # made without the timestamp
        tx.stage(*writer.append(rows((2, "b", 1, "x"))))
    assert type(caught.value) is CommitError
    assert "21000101000000000" in str(caught.value)
    assert _data_files(root) == before  # the instant was rolled back
    assert lakecore_rows(root) == [{"id": 1, "name": "a", "ts": 1, "city": "x"}]


def test_one_transaction_at_a_timestamp_holds_one_write(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = create(root)
    with pytest.raises(CommitError) as caught, table.transaction(timestamp_ms=BASE) as tx:
        tx.append(rows((1, "a", 1, "x")))
        tx.append(rows((2, "b", 1, "y")))
    assert type(caught.value) is CommitError
    assert lakecore_rows(root) == []
    assert _data_files(root) == []


# ------------------------------------------------------------------------- app metadata


def _extra_metadata(root: Path, instant: str) -> dict[str, str]:
    timeline = root / ".hoodie" / "timeline"
    (path,) = [p for p in timeline.glob(f"{instant}_*.*") if not p.name.endswith(".inflight")]
    metadata = parse_commit_metadata(path.read_bytes(), str(path))
    return dict(metadata.extra_metadata)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_app_metadata_is_kept_in_extra_metadata(tmp_path: Path, table_type: str) -> None:
    root = tmp_path / "t"
    table = create(root, table_type)
    table.append(rows((1, "a", 1, "x")))
    meta = {"lakecore.migrate.source": "s3://b/t", "source_version": "7"}
    with table.transaction(app_metadata=meta, timestamp_ms=None) as tx:
        tx.update({"name": "'u'"}, "id = 1")
        tx.append(rows((2, "b", 1, "y")))
    history = lakecore.open(str(root)).history()
    assert [h.app_metadata for h in history] == [meta, meta, {}]
    extra = _extra_metadata(root, str(tx.version))
    assert {k: extra[k] for k in meta} == meta
    assert "schema" in extra  # Hudi's own key is still there
    assert sorted(r["name"] for r in lakecore_rows(root)) == ["b", "u"]
    assert _hudi_rs_as_of(root, str(tx.version)) == lakecore_rows(root)


def test_an_app_metadata_key_hudi_uses_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = create(root)
    table.append(rows((1, "a", 1, "x")))
    before = _data_files(root)
    with (
        pytest.raises(InvalidArgumentError) as caught,
        table.transaction(app_metadata={"schema": "x"}) as tx,
    ):
        tx.append(rows((2, "b", 1, "x")))
    assert type(caught.value) is InvalidArgumentError
    assert _data_files(root) == before
    assert lakecore.open(str(root)).history()[0].app_metadata == {}
