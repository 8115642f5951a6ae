"""Delta commit metadata for the migration contract: ``CommitInfo.app_metadata`` in
``commitInfo.appMetadata`` (capability ``commit_metadata``) and ``CommitInfo.timestamp_ms``
as the in-commit timestamp (capability ``commit_timestamps``), and what delta-rs makes of
them."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pyarrow as pa
import pytest
from lakecore_delta.commit_metadata import app_metadata_of

import lakecore
from lakecore import Table
from lakecore.errors import (
    CommitConflictError,
    CommitError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from lakecore.format import Capability

from .write.helpers import LOG, canonical

SCHEMA = pa.schema([("id", pa.int64())])
ICT = {"delta.enableInCommitTimestamps": "true"}
FUTURE = 4_000_000_000_000
"""A commit time later than any wall clock the tests run at (2096-10-02)."""


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())})


def new_table(tmp_path: Path, properties: dict[str, str] | None = None) -> Table:
    return lakecore.create(str(tmp_path / "t"), SCHEMA, format="delta", properties=properties)


def commit_info(table: Table, version: int) -> dict[str, object]:
    path = Path(table.uri) / LOG / f"{version:020d}.json"
    first = json.loads(path.read_text().splitlines()[0])
    info = first["commitInfo"]
    assert isinstance(info, dict)
    return info


def data_files(table: Table) -> list[Path]:
    return [p for p in Path(table.uri).rglob("*") if p.is_file() and LOG not in p.parts]


def delta_rs_version_at(table: Table, ms: int) -> int:
    import deltalake

    d = deltalake.DeltaTable(table.uri)
    d.load_as_version(dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc))
    return int(d.version())


def test_delta_declares_both_capabilities(tmp_path: Path) -> None:
    caps = new_table(tmp_path).capabilities
    assert {Capability.COMMIT_METADATA, Capability.COMMIT_TIMESTAMPS} <= caps


# --------------------------------------------------------------------------- app metadata


def test_app_metadata_is_kept_in_commit_info_and_history(tmp_path: Path) -> None:
    t = new_table(tmp_path)
    t.append(rows(1))
    with t.transaction(app_metadata={"lakecore.migrate.source_version": "7", "n": "1"}) as tx:
        tx.append(rows(2))
        tx.delete("id = 1")
    assert commit_info(t, 2)["appMetadata"] == {"lakecore.migrate.source_version": "7", "n": "1"}
    history = lakecore.open(t.uri).history()
    assert [h.app_metadata for h in history] == [
        {"lakecore.migrate.source_version": "7", "n": "1"},
        {},
        {},
    ]
    assert "appMetadata" not in commit_info(t, 1)
    import deltalake

    newest = deltalake.DeltaTable(t.uri).history(1)[0]
    assert newest["appMetadata"] == {"lakecore.migrate.source_version": "7", "n": "1"}


def test_app_metadata_survives_a_rebase(tmp_path: Path) -> None:
    t = new_table(tmp_path)
    tx = t.transaction(app_metadata={"k": "v"})
    tx.append(rows(1))
    lakecore.open(t.uri).append(rows(2))  # wins version 1; the appends do not conflict
    assert tx.commit().version == 2
    assert lakecore.open(t.uri).history(1)[0].app_metadata == {"k": "v"}


def test_another_writers_app_metadata_field_is_not_taken_for_ours() -> None:
    assert app_metadata_of({"appMetadata": "a string"}) == {}
    assert app_metadata_of({"appMetadata": {"a": "1", "b": 2, "c": None}}) == {"a": "1"}
    assert app_metadata_of({"userMetadata": "x"}) == {}


# ------------------------------------------------------------------------ commit timestamps


def test_create_with_the_property_enables_in_commit_timestamps(tmp_path: Path) -> None:
    t = new_table(tmp_path, ICT)
    protocol = json.loads((Path(t.uri) / LOG / f"{0:020d}.json").read_text().splitlines()[1])
    assert "inCommitTimestamp" in protocol["protocol"]["writerFeatures"]
    first = commit_info(t, 0)
    assert next(iter(first)) == "inCommitTimestamp"
    assert t.snapshot().timestamp == first["inCommitTimestamp"]


def test_given_timestamps_are_the_versions_timestamps(tmp_path: Path) -> None:
    t = new_table(tmp_path, ICT)
    for i in range(3):
        with t.transaction(timestamp_ms=FUTURE + 1000 * i, app_metadata={"i": str(i)}) as tx:
            tx.append(rows(i))
    info = commit_info(t, 2)
    assert list(info)[:2] == ["inCommitTimestamp", "timestamp"]
    assert info["inCommitTimestamp"] == info["timestamp"] == FUTURE + 1000
    reopened = lakecore.open(t.uri)
    assert [(h.version, h.timestamp) for h in reopened.history()][:3] == [
        (3, FUTURE + 2000),
        (2, FUTURE + 1000),
        (1, FUTURE),
    ]
    assert reopened.snapshot().timestamp == FUTURE + 2000
    assert reopened.snapshot(version=2).timestamp == FUTURE + 1000
    for at, version in [
        (FUTURE - 1, 0),
        (FUTURE, 1),
        (FUTURE + 999, 1),
        (FUTURE + 1000, 2),
        (FUTURE + 5000, 3),
    ]:
        assert reopened.snapshot(timestamp=at).version == version, at
    assert sorted(reopened.to_arrow(version=2).column("id").to_pylist()) == [0, 1]
    # A plain commit after them still increases: later than the last given one.
    t.append(rows(9))
    assert commit_info(t, 4)["inCommitTimestamp"] == FUTURE + 2001


def test_a_table_without_in_commit_timestamps_refuses_before_writing(tmp_path: Path) -> None:
    t = new_table(tmp_path)
    t.append(rows(1))
    before = data_files(t)
    refused = pytest.raises(UnsupportedFeatureError, match=r"delta\.enableInCommitTimestamps")
    with refused as caught, t.transaction(timestamp_ms=FUTURE) as tx:
        tx.append(rows(2))
    assert caught.value.feature == "inCommitTimestamp"
    assert data_files(t) == before
    assert lakecore.open(t.uri).version == 1
    # A transaction that writes no data file is refused when it prepares its commit.
    tx = t.transaction(timestamp_ms=FUTURE)
    tx.set_app_transaction("job", 1)
    with pytest.raises(UnsupportedFeatureError, match=r"delta\.enableInCommitTimestamps"):
        tx.commit()
    assert lakecore.open(t.uri).version == 1


def test_a_timestamp_not_later_than_the_last_is_refused_before_writing(tmp_path: Path) -> None:
    t = new_table(tmp_path, ICT)
    with t.transaction(timestamp_ms=FUTURE) as tx:
        tx.append(rows(1))
    before = data_files(t)
    for ms in (FUTURE, FUTURE - 1, 0):
        with pytest.raises(CommitError) as caught, t.transaction(timestamp_ms=ms) as tx:
            tx.append(rows(2))
        assert type(caught.value) is CommitError
        assert data_files(t) == before
    # Without a data file to write, the commit itself refuses it.
    tx = t.transaction(timestamp_ms=FUTURE)
    tx.set_app_transaction("job", 1)
    with pytest.raises(CommitError) as caught:
        tx.commit()
    assert type(caught.value) is CommitError
    assert lakecore.open(t.uri).version == 1


def test_a_concurrent_commit_at_or_after_the_given_time_conflicts(tmp_path: Path) -> None:
    t = new_table(tmp_path, ICT)
    created = t.snapshot().timestamp
    assert created is not None
    tx = t.transaction(timestamp_ms=created + 1)  # later than version 0, earlier than now
    tx.append(rows(1))
    ours = set(data_files(t))
    assert len(ours) == 1
    lakecore.open(t.uri).append(rows(2))  # version 1 at wall-clock now > created + 1
    with pytest.raises(CommitConflictError) as caught:
        tx.commit()
    assert caught.value.winning_version == 1
    assert lakecore.open(t.uri).to_arrow().column("id").to_pylist() == [2]
    assert not ours & set(data_files(t)), "the loser's file was removed"


def test_a_concurrent_commit_before_the_given_time_rebases(tmp_path: Path) -> None:
    t = new_table(tmp_path, ICT)
    tx = t.transaction(timestamp_ms=FUTURE)
    tx.append(rows(1))
    lakecore.open(t.uri).append(rows(2))
    assert tx.commit().version == 2
    assert commit_info(t, 2)["inCommitTimestamp"] == FUTURE
    assert lakecore.open(t.uri).snapshot(timestamp=FUTURE - 1).version == 1


def test_delta_rs_history_reports_the_given_timestamps(tmp_path: Path) -> None:
    import deltalake

    t = new_table(tmp_path, ICT)
    for i in range(2):
        with t.transaction(timestamp_ms=FUTURE + 1000 * i) as tx:
            tx.append(rows(i))
    history = deltalake.DeltaTable(t.uri).history()
    got = [(h["version"], h["timestamp"], h["inCommitTimestamp"]) for h in history[:2]]
    assert got == [(2, FUTURE + 1000, FUTURE + 1000), (1, FUTURE, FUTURE)]
    assert canonical(deltalake.DeltaTable(t.uri, version=1).to_pyarrow_table()) == canonical(
        rows(0)
    )


def test_delta_rs_time_travel_by_timestamp_ignores_in_commit_timestamps(tmp_path: Path) -> None:
    """delta-rs 1.6 ``load_as_version(datetime)`` picks the version by the commit files'
    modification times, not by ``inCommitTimestamp`` (docs/formats/delta.md): when the two
    differ, lakecore and delta-rs answer differently. If delta-rs starts honouring in-commit
    timestamps this test fails; then assert that they agree instead."""
    t = new_table(tmp_path, ICT)
    for i in range(3):
        with t.transaction(timestamp_ms=FUTURE + 1000 * i) as tx:
            tx.append(rows(i))
    # Every commit file was written now, long before FUTURE: by mtime all are in the past.
    assert delta_rs_version_at(t, FUTURE + 500) == 3
    assert lakecore.open(t.uri).snapshot(timestamp=FUTURE + 500).version == 1
    # Commit files with distinct modification times: delta-rs follows them, lakecore does not.
    for version, seconds in [(0, 1_000), (1, 2_000), (2, 3_000), (3, 4_000)]:
        os.utime(Path(t.uri) / LOG / f"{version:020d}.json", (seconds, seconds))
    assert [delta_rs_version_at(t, ms) for ms in (1_500_000, 2_500_000, 3_500_000)] == [0, 1, 2]
    reopened = lakecore.open(t.uri)
    with pytest.raises(VersionNotFoundError):
        reopened.snapshot(timestamp=3_500_000)  # before version 0's in-commit timestamp
    assert reopened.snapshot(timestamp=FUTURE + 1500).version == 2


def test_create_with_a_timestamp_starts_the_history_there(tmp_path: Path) -> None:
    """``DeltaFormat.create(..., timestamp_ms=)``: what a migration replaying a source's
    history from its first commit needs (a table created now has commit 0 at now, and every
    given timestamp must be later)."""
    from lakecore_delta.format import DeltaFormat

    from lakecore.storage import open_storage

    past = 1_600_000_000_000
    uri = str(tmp_path / "t")
    DeltaFormat().create(open_storage(uri), SCHEMA, [], {}, timestamp_ms=past)
    t = lakecore.open(uri)
    assert t.snapshot().properties["delta.enableInCommitTimestamps"] == "true"
    assert t.snapshot().timestamp == commit_info(t, 0)["inCommitTimestamp"] == past
    with t.transaction(timestamp_ms=past + 1) as tx:
        tx.append(rows(1))
    assert [h.timestamp for h in t.history()] == [past + 1, past]
    assert t.snapshot(timestamp=past).version == 0
    with pytest.raises(VersionNotFoundError):
        t.snapshot(timestamp=past - 1)


def test_create_with_a_timestamp_refuses_in_commit_timestamps_turned_off(tmp_path: Path) -> None:
    from lakecore_delta.format import DeltaFormat

    from lakecore.errors import InvalidArgumentError
    from lakecore.storage import open_storage

    storage = open_storage(str(tmp_path / "t"))
    off = {"delta.enableInCommitTimestamps": "false"}
    with pytest.raises(InvalidArgumentError, match=r"delta\.enableInCommitTimestamps"):
        DeltaFormat().create(storage, SCHEMA, [], off, timestamp_ms=1)
    assert not (tmp_path / "t" / LOG).exists() or not any((tmp_path / "t" / LOG).iterdir())
