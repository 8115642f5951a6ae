"""Capabilities ``commit_metadata`` and ``commit_timestamps`` on Lance.

``CommitInfo.app_metadata`` is the transaction's ``transaction_properties`` (where pylance's
``transaction_properties=`` go; pylance reads them back), and ``HistoryEntry.app_metadata``
returns them, also for datasets pylance wrote. ``CommitInfo.timestamp_ms`` is the manifest's
``timestamp``: lakecore's history and ``snapshot(timestamp=)`` and pylance's ``versions()``
and ``asof=`` time travel see it. pylance's ``asof`` picks the newest version strictly before
the instant (lakecore: at or before), so at a commit's exact instant pylance returns the
version before it.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest

import lakecore
from lakecore.errors import CommitConflictError, CommitError, InvalidArgumentError
from lakecore.format import Capability
from tests.lance.helpers import assert_same_as_pylance, lance

SCHEMA = pa.schema([("id", pa.int64())])


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": list(ids)}, schema=SCHEMA)


def ids(table: lakecore.Table, version: int | None = None, timestamp: int | None = None) -> list:
    return sorted(table.snapshot(version, timestamp=timestamp).to_arrow().column("id").to_pylist())


def local(ms: int) -> datetime:
    """The naive local datetime pylance's ``versions()`` gives for epoch ``ms``."""
    return datetime.fromtimestamp(ms // 1000).replace(microsecond=(ms % 1000) * 1000)


def transaction_files(path: Path) -> set[str]:
    return {p.name for p in (path / "_transactions").iterdir()}


def test_lance_declares_both(tmp_path: Path) -> None:
    table = lakecore.create(str(tmp_path / "t"), SCHEMA, format="lance")
    assert {Capability.COMMIT_METADATA, Capability.COMMIT_TIMESTAMPS} <= table.capabilities


# ------------------------------------------------------------------ app metadata


def test_app_metadata_is_the_transactions_properties(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = lakecore.create(str(path), SCHEMA, format="lance")
    meta = {"lakecore.migrate.source_version": "41", "note": "é, ünïcode"}
    with table.transaction(app_metadata=meta) as tx:
        tx.append(rows(1, 2))
        tx.delete("id = 1")
    version = table.append(rows(3)).version  # none
    dataset = lance.dataset(str(path))
    assert dataset.read_transaction(version - 1).transaction_properties == meta
    assert not dataset.read_transaction(version).transaction_properties
    history = table.history()
    assert [h.app_metadata for h in history] == [{}, meta, {}]
    assert history[1].info["transaction_properties"] == meta
    # The same transaction is in the _transactions file and inlined in the manifest.
    from lakecore_lance.history import read_transaction
    from lakecore_lance.manifest import find_manifest, read_manifest

    storage = table.storage
    loaded = read_manifest(storage, find_manifest(storage, version - 1))
    inline = read_transaction(storage, loaded)
    assert inline is not None and dict(inline.transaction_properties) == meta
    raw = (path / "_transactions" / loaded.manifest.transaction_file).read_bytes()
    assert raw == inline.SerializeToString(deterministic=True)
    assert assert_same_as_pylance(path) == 3


def test_history_returns_pylances_transaction_properties(tmp_path: Path) -> None:
    path = tmp_path / "t"
    lance.write_dataset(rows(1), str(path), transaction_properties={"job": "a"})
    lance.write_dataset(
        rows(2),
        str(path),
        mode="append",
        transaction_properties={"job": "b", "run": "7"},
        commit_message="second",
    )
    lance.write_dataset(rows(3), str(path), mode="append")
    history = lakecore.open(str(path)).history()
    assert [h.app_metadata for h in history] == [{}, {"job": "b", "run": "7"}, {"job": "a"}]
    # pylance keeps its commit message there too, under a key Lance reserves: it stays in info.
    assert history[1].info["transaction_properties"] == {
        "job": "b",
        "run": "7",
        "__lance_commit_message": "second",
    }


def test_a_key_lance_reserves_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = lakecore.create(str(path), SCHEMA, format="lance")
    before = transaction_files(path)
    tx = table.transaction(app_metadata={"__lance_commit_message": "x"})
    tx.append(rows(1))
    with pytest.raises(InvalidArgumentError) as raised:
        tx.commit()
    assert type(raised.value) is InvalidArgumentError
    assert table.version == 1 and transaction_files(path) == before
    assert not (path / "data").exists() or not any((path / "data").iterdir())


def test_app_metadata_survives_a_rebase(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = lakecore.create(str(path), SCHEMA, format="lance")
    tx = table.transaction(app_metadata={"k": "v"})
    tx.append(rows(1))
    lance.write_dataset(rows(2), str(path), mode="append")  # wins the race
    version = int(tx.commit().version)
    assert version == 3
    assert table.history(1)[0].app_metadata == {"k": "v"}
    assert lance.dataset(str(path)).read_transaction(3).transaction_properties == {"k": "v"}
    assert ids(table) == [1, 2]


# ------------------------------------------------------------------ timestamps


def test_commit_timestamps_are_the_versions_timestamps(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = lakecore.create(str(path), SCHEMA, format="lance")
    start = int(time.time() * 1000) + 60_000  # after version 1's (creation) timestamp
    stamps = [start, start + 1_000, start + 2_500]
    for i, ms in enumerate(stamps):
        with table.transaction(timestamp_ms=ms, app_metadata={"i": str(i)}) as tx:
            tx.append(rows(i))
    assert [table.snapshot(v).timestamp for v in (2, 3, 4)] == stamps
    history = table.history()
    assert [h.timestamp for h in history[:3]] == stamps[::-1]
    assert [h.app_metadata for h in history[:3]] == [{"i": "2"}, {"i": "1"}, {"i": "0"}]
    # lakecore: the newest version at or before the instant.
    assert table.snapshot(timestamp=start).version == 2
    assert table.snapshot(timestamp=start + 999).version == 2
    assert table.snapshot(timestamp=start + 1_000).version == 3
    assert ids(table, timestamp=start + 2_499) == [0, 1]
    # pylance sees the same timestamps (its versions() converts the nanoseconds through a
    # float, which can land 1 microsecond early) ...
    versions = {v["version"]: v["timestamp"] for v in lance.dataset(str(path)).versions()}
    for version, ms in zip((2, 3, 4), stamps, strict=True):
        assert timedelta(0) <= local(ms) - versions[version] <= timedelta(microseconds=1)
    # ... and its asof= (the newest version strictly before the instant, by those
    # timestamps) agrees with lakecore at every instant but a commit's exact millisecond,
    # where pylance's answer depends on that rounding.
    cases = [(start - 1, 1), (start + 1, 2), (start + 999, 2), (start + 1_001, 3)]
    cases += [(start + 2_499, 3), (start + 2_501, 4), (start + 9_999, 4)]
    for ms, version in cases:
        assert lance.dataset(str(path), asof=local(ms)).version == version
        assert table.snapshot(timestamp=ms).version == version
    assert lance.dataset(str(path), asof=local(start + 1_000)).version in (2, 3)
    assert lance.dataset(str(path), version=3).to_table().equals(table.snapshot(3).to_arrow())


@pytest.mark.parametrize("offset", [0, -1, -3_600_000], ids=["equal", "1ms-earlier", "earlier"])
def test_a_timestamp_not_later_than_the_base_is_refused(tmp_path: Path, offset: int) -> None:
    path = tmp_path / "t"
    table = lakecore.create(str(path), SCHEMA, format="lance")
    base = table.snapshot().timestamp
    assert base is not None
    before = transaction_files(path)
    tx = table.transaction(timestamp_ms=base + offset)
    tx.append(rows(1))
    with pytest.raises(CommitError) as raised:
        tx.commit()
    assert type(raised.value) is CommitError
    assert table.version == 1 and transaction_files(path) == before
    assert not (path / "data").exists() or not any((path / "data").iterdir())
    with table.transaction(timestamp_ms=base + 1) as tx:
        tx.append(rows(1))
    assert table.snapshot().timestamp == base + 1


def test_a_timestamp_is_checked_again_against_a_concurrent_winner(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = lakecore.create(str(path), SCHEMA, format="lance")
    base = table.snapshot().timestamp
    assert base is not None
    late = table.transaction(timestamp_ms=base + 1)  # later than version 1, not than 2
    late.append(rows(1))
    ahead = table.transaction(timestamp_ms=base + 3_600_000)
    ahead.append(rows(3))
    time.sleep(0.01)
    lance.write_dataset(rows(2), str(path), mode="append")  # version 2, stamped now
    with pytest.raises(CommitConflictError) as raised:
        late.commit()
    assert type(raised.value) is CommitConflictError
    assert raised.value.winning_version == 2
    assert ahead.commit().version == 3  # rebased: still later than the winner
    assert table.snapshot(3).timestamp == base + 3_600_000
    assert ids(table) == [2, 3]
