"""Classic checkpoints written every ``delta.checkpointInterval`` commits, and their faults."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lakecore_delta.write import checkpoint_out
from lakecore_delta.write.writer import state_of

import lakecore
from lakecore.storage.fsspec_storage import FsspecStorage

from .helpers import LOG, canonical, commit_versions, delta_rs_rows, lakecore_rows

deltalake = pytest.importorskip("deltalake", reason="interop tests need deltalake")

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.string())])
PARTS = ["a", "b c", None, "ü/=%"]


def rows(start: int, n: int = 2) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {"id": ids, "p": [PARTS[i % len(PARTS)] for i in ids], "v": [f"v{i}" for i in ids]},
        schema=SCHEMA,
    )


def checkpoints(path: Path) -> list[int]:
    return sorted(int(p.name[:20]) for p in (path / LOG).glob("*.checkpoint.parquet"))


def last_checkpoint(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((path / LOG / "_last_checkpoint").read_text())
    return loaded


def checkpoint_file(path: Path, version: int) -> Path:
    return path / LOG / f"{version:020d}.checkpoint.parquet"


def drop_commits(path: Path, upto: int) -> None:
    """Delete commit files 0..upto: only a checkpoint can rebuild the table now."""
    for v in range(upto + 1):
        (path / LOG / f"{v:020d}.json").unlink()


@pytest.fixture(scope="module")
def appended_25(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A partitioned table with 25 appends (versions 1..25), built once; copy before damaging."""
    path = tmp_path_factory.mktemp("ckpt") / "t"
    table = lakecore.create(str(path), SCHEMA, partition_by=["p"])
    for i in range(25):
        assert table.append(rows(10 * i)).version == i + 1
    return path, canonical(pa.concat_tables([rows(10 * i) for i in range(25)]))


def copy_table(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def test_checkpoints_at_10_and_20_and_hint_names_20(appended_25: tuple[Path, list[str]]) -> None:
    path, expected = appended_25
    assert commit_versions(path) == list(range(26))
    assert checkpoints(path) == [10, 20]
    hint = last_checkpoint(path)
    assert hint["version"] == 20
    assert hint["numOfAddFiles"] == 20 * 2  # each append's 2 rows go to 2 partitions
    written = pq.read_table(checkpoint_file(path, 20))
    assert hint["size"] == written.num_rows
    adds = [a for a in written.column("add").to_pylist() if a is not None]
    assert len(adds) == hint["numOfAddFiles"]
    assert all(a["dataChange"] is False for a in adds)
    assert sum(1 for p in written.column("protocol").to_pylist() if p) == 1
    assert sum(1 for m in written.column("metaData").to_pylist() if m) == 1
    assert lakecore_rows(path) == delta_rs_rows(path) == expected


def test_readers_rebuild_from_checkpoint_alone(
    appended_25: tuple[Path, list[str]], tmp_path: Path
) -> None:
    """With commits 0..20 and checkpoint 10 gone, only checkpoint 20 gives versions 20..25."""
    path = copy_table(appended_25[0], tmp_path / "t")
    drop_commits(path, 20)
    checkpoint_file(path, 10).unlink()
    expected_20 = canonical(pa.concat_tables([rows(10 * i) for i in range(20)]))
    assert lakecore_rows(path) == delta_rs_rows(path) == appended_25[1]
    assert lakecore_rows(path, 20) == delta_rs_rows(path, 20) == expected_20
    assert lakecore_rows(path, 22) == delta_rs_rows(path, 22)
    with pytest.raises(lakecore.VersionNotFoundError):
        lakecore.open(str(path)).to_arrow(version=19)


def test_checkpoint_keeps_app_transactions_drops_removed_files(tmp_path: Path) -> None:
    """Version 10 follows an overwrite: the checkpoint lists live files and every txn."""
    path = tmp_path / "t"
    table = lakecore.create(str(path), SCHEMA, partition_by=["p"])
    for i in range(1, 6):
        with table.transaction() as tx:
            tx.append(rows(10 * i))
            tx.set_app_transaction("ingest", i)
    assert table.overwrite(rows(100, 4)).version == 6
    for i in range(7, 10):
        table.append(rows(10 * i))
    with table.transaction() as tx:
        tx.append(rows(1000, 1))
        tx.set_app_transaction("other app", 77)
    assert checkpoints(path) == [10]
    expected = canonical(
        pa.concat_tables([rows(100, 4), *(rows(10 * i) for i in range(7, 10)), rows(1000, 1)])
    )
    drop_commits(path, 10)
    assert lakecore_rows(path) == delta_rs_rows(path) == expected
    state = state_of(lakecore.open(str(path)).snapshot())
    assert state.txns == {"ingest": 5, "other app": 77}
    dt_ = deltalake.DeltaTable(str(path))
    assert dt_.transaction_version("ingest") == 5
    assert dt_.transaction_version("other app") == 77
    assert len(dt_.file_uris()) == len(lakecore.open(str(path)).snapshot().files())


def test_checkpoint_of_an_empty_table(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = lakecore.create(str(path), SCHEMA, partition_by=["p"])
    for i in range(9):
        table.append(rows(10 * i))
    assert table.delete().version == 10
    assert checkpoints(path) == [10]
    assert last_checkpoint(path)["numOfAddFiles"] == 0
    drop_commits(path, 10)
    assert lakecore_rows(path) == delta_rs_rows(path) == []
    assert table.append(rows(500)).version == 11
    assert lakecore_rows(path) == delta_rs_rows(path) == canonical(rows(500))


@pytest.mark.parametrize("interval,expected", [("3", [3, 6, 9]), ("7", [7]), ("0", [])])
def test_custom_checkpoint_interval(tmp_path: Path, interval: str, expected: list[int]) -> None:
    path = tmp_path / "t"
    table = lakecore.create(str(path), SCHEMA, properties={"delta.checkpointInterval": interval})
    for i in range(10):
        table.append(rows(10 * i))
    assert checkpoints(path) == expected
    if expected:
        assert last_checkpoint(path)["version"] == expected[-1]
        drop_commits(path, expected[-1])
    else:
        assert not (path / LOG / "_last_checkpoint").exists()
    all_rows = canonical(pa.concat_tables([rows(10 * i) for i in range(10)]))
    assert lakecore_rows(path) == delta_rs_rows(path) == all_rows


def test_column_mapped_partitioned_checkpoint(tmp_path: Path) -> None:
    """Partition values in the checkpoint are keyed by physical names, like the commits."""
    path = tmp_path / "t"
    table = lakecore.create(
        str(path),
        SCHEMA,
        partition_by=["p"],
        properties={"delta.columnMapping.mode": "name", "delta.checkpointInterval": "4"},
    )
    for i in range(4):
        table.append(rows(10 * i))
    assert checkpoints(path) == [4]
    keys = {
        k
        for a in pq.read_table(checkpoint_file(path, 4)).column("add").to_pylist()
        if a is not None
        for k, _ in a["partitionValues"]
    }
    assert len(keys) == 1 and keys.pop().startswith("col-")
    drop_commits(path, 4)
    expected = canonical(pa.concat_tables([rows(10 * i) for i in range(4)]))
    assert lakecore_rows(path) == delta_rs_rows(path) == expected


# ------------------------------------------------------------------ faults


def test_missing_last_checkpoint(appended_25: tuple[Path, list[str]], tmp_path: Path) -> None:
    path = copy_table(appended_25[0], tmp_path / "t")
    (path / LOG / "_last_checkpoint").unlink()
    assert lakecore.open(str(path)).version == 25
    assert lakecore_rows(path) == delta_rs_rows(path) == appended_25[1]


@pytest.mark.parametrize("torn", [b'{"version": 2', b"", b"\x00\x01garbage", b'{"size": 3}'])
def test_torn_last_checkpoint(
    appended_25: tuple[Path, list[str]], tmp_path: Path, torn: bytes
) -> None:
    path = copy_table(appended_25[0], tmp_path / "t")
    (path / LOG / "_last_checkpoint").write_bytes(torn)
    assert lakecore.open(str(path)).version == 25
    assert lakecore_rows(path) == appended_25[1]
    assert delta_rs_rows(path) == appended_25[1]


def test_checkpoint_file_deleted(appended_25: tuple[Path, list[str]], tmp_path: Path) -> None:
    """The hint names 20, whose checkpoint is gone: readers use 10 plus commits 11..25."""
    path = copy_table(appended_25[0], tmp_path / "t")
    checkpoint_file(path, 20).unlink()
    assert lakecore.open(str(path)).version == 25
    assert lakecore_rows(path) == appended_25[1]
    assert lakecore_rows(path, 20) == canonical(pa.concat_tables([rows(10 * i) for i in range(20)]))
    # delta-rs 1.6 refuses a hint whose checkpoint is missing ("Had a _last_checkpoint hint
    # but didn't find any checkpoints"); that is its choice, not checked here.


def test_checkpoint_file_torn(appended_25: tuple[Path, list[str]], tmp_path: Path) -> None:
    """A truncated checkpoint (e.g. copied halfway) is skipped by lakecore: commits remain."""
    path = copy_table(appended_25[0], tmp_path / "t")
    raw = checkpoint_file(path, 20).read_bytes()
    checkpoint_file(path, 20).write_bytes(raw[: len(raw) // 2])
    assert lakecore_rows(path) == appended_25[1]


def _failing_put(monkeypatch: pytest.MonkeyPatch, suffix: str) -> list[str]:
    """Make ``FsspecStorage.put`` raise ``OSError`` for paths ending in ``suffix``."""
    original = FsspecStorage.put
    failed: list[str] = []

    def put(self: FsspecStorage, path: str, data: bytes) -> None:
        if path.endswith(suffix):
            failed.append(path)
            raise OSError(f"injected failure writing {path}")
        original(self, path, data)

    monkeypatch.setattr(FsspecStorage, "put", put)
    return failed


def test_crash_between_checkpoint_and_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Checkpoint 10 written, the hint not: the commit stands, the hint stays absent/older."""
    path = tmp_path / "t"
    table = lakecore.create(str(path), SCHEMA)
    failed = _failing_put(monkeypatch, "_last_checkpoint")
    for i in range(10):
        assert table.append(rows(10 * i)).version == i + 1
    assert failed == [f"{LOG}/_last_checkpoint"]
    assert checkpoints(path) == [10]
    assert not (path / LOG / "_last_checkpoint").exists()
    expected = canonical(pa.concat_tables([rows(10 * i) for i in range(10)]))
    assert lakecore_rows(path) == delta_rs_rows(path) == expected
    monkeypatch.undo()
    for i in range(10, 20):
        table.append(rows(10 * i))
    assert last_checkpoint(path)["version"] == 20


def test_failed_checkpoint_does_not_fail_the_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t"
    table = lakecore.create(str(path), SCHEMA)
    failed = _failing_put(monkeypatch, ".checkpoint.parquet")
    for i in range(10):
        assert table.append(rows(10 * i)).version == i + 1
    assert len(failed) == 1
    assert checkpoints(path) == []
    assert not (path / LOG / "_last_checkpoint").exists()
    assert not [n for n in os.listdir(path / LOG) if n.endswith(".tmp")]
    assert lakecore_rows(path) == canonical(pa.concat_tables([rows(10 * i) for i in range(10)]))


@pytest.mark.parametrize("interval", ["ten", "1.5", ""])
def test_unparsable_interval_does_not_fail_the_commit(tmp_path: Path, interval: str) -> None:
    """The commit has landed by the time the interval is read: it must still be reported.

    lakecore refuses to write such a value; another writer's table may still carry it.
    """
    path = tmp_path / "t"
    table = lakecore.create(str(path), SCHEMA, properties={"delta.checkpointInterval": "99"})
    first = path / LOG / f"{0:020d}.json"
    valid = '"delta.checkpointInterval":"99"'
    assert valid in first.read_text()
    first.write_text(first.read_text().replace(valid, f'"delta.checkpointInterval":"{interval}"'))
    assert table.snapshot().properties["delta.checkpointInterval"] == interval
    for i in range(10):
        assert table.append(rows(10 * i)).version == i + 1
    assert checkpoints(path) == []
    assert lakecore_rows(path) == canonical(pa.concat_tables([rows(10 * i) for i in range(10)]))


def test_known_configuration_skips_the_replay_when_not_due(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t"
    table = lakecore.create(str(path), SCHEMA, properties={"delta.checkpointInterval": "2"})
    table.append(rows(0))
    table.append(rows(10))  # version 2: checkpointed
    configuration = table.snapshot().properties
    replays: list[int | None] = []
    real = checkpoint_out.load_state

    def counting(storage: Any, version: int | None = None) -> Any:
        replays.append(version)
        return real(storage, version)

    monkeypatch.setattr(checkpoint_out, "load_state", counting)
    assert checkpoint_out.maybe_checkpoint(table.storage, 1, configuration) is False
    assert replays == []
    assert checkpoint_out.maybe_checkpoint(table.storage, 2, {}) is False  # default 10
    assert replays == []
    assert checkpoint_out.maybe_checkpoint(table.storage, 2, configuration) is True
    assert checkpoint_out.maybe_checkpoint(table.storage, 1) is False  # unknown: replays
    assert replays == [2, 1]
