"""Checkpoint, vacuum, restore and optimize on Delta tables lakecore writes."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow as pa
import pytest

import lakecore
from lakecore.errors import CorruptTableError, LakecoreError, UnsupportedFeatureError

deltalake = pytest.importorskip("deltalake")
SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


def _table(tmp_path: Path, **props: str) -> lakecore.Table:
    t = lakecore.create(str(tmp_path / "t"), SCHEMA, partition_by=["p"], properties=props)
    for i in range(5):
        t.append(pa.table({"id": [i * 10 + j for j in range(10)], "p": ["a", "b"] * 5}))
    return t


def _ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


def _age_everything(root: str, days: float = 10) -> None:
    old = time.time() - days * 86400
    for directory, _, names in os.walk(root):
        for name in names:
            os.utime(os.path.join(directory, name), (old, old))


@pytest.mark.parametrize("props", [{}, {"delta.enableDeletionVectors": "true"}])
def test_optimize_compacts_and_keeps_rows(tmp_path: Path, props: dict[str, str]) -> None:
    t = _table(tmp_path, **props)
    t.delete("id % 7 = 0")
    before = _ids(t.to_arrow())
    assert t.snapshot().files().num_rows > 2
    t.optimize()
    snap = t.snapshot()
    assert snap.files().num_rows == 2  # one file per partition
    assert snap.files().column("deletion").null_count == 2
    assert _ids(snap.to_arrow()) == before
    assert t.history(1)[0].operation == "OPTIMIZE"
    assert _ids(pa.table(deltalake.DeltaTable(t.uri).scan().read_all())) == before
    # Compaction changes no data: the change feed of that version is empty of rows.
    added = [a for a in t.history(1)[0].info.get("operationParameters", {})]
    assert "targetFileSize" in added


def test_optimize_with_nothing_to_do_commits_nothing(tmp_path: Path) -> None:
    t = lakecore.create(str(tmp_path / "t"), SCHEMA)
    t.append(pa.table({"id": [1], "p": ["a"]}))
    version = t.version
    assert t.optimize().version == version


def test_restore(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.delete("id < 25")
    t.append(pa.table({"id": [999], "p": ["c"]}))
    restored = t.restore(3).version
    assert _ids(t.to_arrow()) == _ids(t.to_arrow(version=3))
    assert t.history(1)[0].operation == "RESTORE" and restored == t.version
    assert _ids(pa.table(deltalake.DeltaTable(t.uri).to_pyarrow_table())) == _ids(t.to_arrow())


def test_restore_brings_the_schema_and_properties_back(tmp_path: Path) -> None:
    """As Delta Spark's RESTORE and delta-rs' restore (delta-rs issue 3352: constraints):
    the restored version's metadata comes back with its files. Before session 12 lakecore
    kept the latest schema and properties (the added column read as nulls, the constraint
    still refused rows the restored version takes)."""
    t = _table(tmp_path)
    with t.update_schema() as s:
        s.add_column("note", pa.string())
    t.add_constraint("small", "id < 1000")
    t.set_properties({"team": "core"})
    t.append(pa.table({"id": [7], "p": ["a"], "note": ["n"]}))
    t.restore(4)
    reopened = lakecore.open(t.uri)
    assert reopened.schema.names == ["id", "p"]
    assert _ids(reopened.to_arrow()) == _ids(reopened.to_arrow(version=4))
    props = reopened.snapshot().properties
    assert "team" not in props and not any(k.startswith("delta.constraints") for k in props)
    reopened.append(pa.table({"id": [5000], "p": ["a"]}))  # the constraint went too
    theirs = deltalake.DeltaTable(t.uri)
    assert theirs.schema().to_arrow().names == ["id", "p"]
    assert _ids(pa.table(theirs.to_pyarrow_table())) == _ids(lakecore.open(t.uri).to_arrow())


def test_restore_never_hands_a_column_id_out_twice(tmp_path: Path) -> None:
    """Column mapping: the restored metadata keeps the highest column id assigned so far, so
    a column added after the restore gets a new id, not the one a column dropped by the
    restore had (files of that column still hold it for time travel)."""
    t = _table(tmp_path, **{"delta.columnMapping.mode": "name"})
    with t.update_schema() as s:
        s.add_column("gone", pa.int64())
    gone = t.schema.field("gone").metadata[b"lakecore.field_id"]
    t.restore(5)
    with t.update_schema() as s:
        s.add_column("new", pa.int64())
    fresh = lakecore.open(t.uri)
    assert fresh.schema.names == ["id", "p", "new"]
    assert int(fresh.schema.field("new").metadata[b"lakecore.field_id"]) > int(gone)
    assert int(fresh.snapshot().properties["delta.columnMapping.maxColumnId"]) > int(gone)


def test_restore_across_a_repartitioning_is_refused(tmp_path: Path) -> None:
    """Another engine changed the partition columns; lakecore's restore cannot bring the old
    ones back (its metadata changes are schema and properties) and refuses before writing."""
    t = _table(tmp_path)
    data = pa.table({"id": [1, 2], "p": ["a", "b"]})
    deltalake.write_deltalake(
        t.uri, data, mode="overwrite", schema_mode="overwrite", partition_by=["id"]
    )
    version = lakecore.open(t.uri).version
    with pytest.raises(UnsupportedFeatureError, match="partition columns"):
        lakecore.open(t.uri).restore(2)
    assert lakecore.open(t.uri).version == version


def test_restore_after_vacuum_fails_cleanly(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.overwrite(pa.table({"id": [1], "p": ["a"]}))
    _age_everything(t.uri)
    t.vacuum(retention_hours=0, enforce_retention=False, dry_run=False)
    version = t.version
    with pytest.raises(CorruptTableError, match="vacuumed"):
        t.restore(2)
    assert t.version == version


def test_vacuum_respects_retention_and_references(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.overwrite(pa.table({"id": [1], "p": ["a"]}))
    assert t.vacuum() == []  # files are new: nothing is old enough
    with pytest.raises(LakecoreError, match="retention"):
        t.vacuum(retention_hours=1)
    _age_everything(t.uri)
    candidates = t.vacuum(retention_hours=0, enforce_retention=False)
    live = set(t.snapshot().files().column("path").to_pylist())
    assert len(candidates) == 10 and not set(candidates) & live
    assert all(not c.startswith("_delta_log") for c in candidates)
    assert all(os.path.exists(os.path.join(t.uri, c)) for c in candidates)  # dry run
    deleted = t.vacuum(retention_hours=0, enforce_retention=False, dry_run=False)
    assert deleted == candidates
    assert not any(os.path.exists(os.path.join(t.uri, c)) for c in candidates)
    assert _ids(t.to_arrow()) == [1]


def test_vacuum_keeps_deletion_vector_files(tmp_path: Path) -> None:
    t = _table(tmp_path, **{"delta.enableDeletionVectors": "true"})
    t.delete(" OR ".join(f"id = {i}" for i in range(0, 50, 2)))  # big enough for DV files?
    _age_everything(t.uri)
    t.vacuum(retention_hours=0, enforce_retention=False, dry_run=False)
    assert len(t.to_arrow()) == 25


def test_checkpoint_on_demand(tmp_path: Path) -> None:
    t = _table(tmp_path)
    version = t.checkpoint()
    assert os.path.exists(os.path.join(t.uri, "_delta_log", f"{version:020d}.checkpoint.parquet"))
    assert _ids(lakecore.open(t.uri).to_arrow()) == list(range(50))
    assert deltalake.DeltaTable(t.uri).version() == version
