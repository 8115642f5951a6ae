"""Failed writes: bad input leaves the table untouched; crashed writers are rolled back."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow as pa
import pytest
from lakecore_hudi.timeline.active import load_timeline
from lakecore_hudi.timeline.rollback_metadata import parse_rollback_metadata
from lakecore_hudi.write import apply
from lakecore_hudi.write.heartbeat import heartbeat_path
from lakecore_hudi.write.planned import PlannedInstant
from lakecore_hudi.write.writer import state_of

import lakecore
from lakecore.errors import ConstraintViolationError, SchemaError
from lakecore.model.actions import FormatPayload
from lakecore.table import Table
from tests.hudi.write.helpers import assert_reads, create, model_of, rows


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def _plan_without_commit(table: Table, operation: str, data: pa.Table) -> PlannedInstant:
    """Run a writer up to inflight (files written) and never commit: a crashed writer."""
    writer = table._format_writer(table.snapshot())
    actions, _ = getattr(writer, operation)(data)
    payload = actions[0]
    assert isinstance(payload, FormatPayload) and isinstance(payload.payload, PlannedInstant)
    return payload.payload


def _stop_heartbeat(root: Path, instant: str) -> None:
    """Age the instant's heartbeat past the expiry, as if its writer died long ago."""
    path = root / heartbeat_path(instant)
    old = time.time() - 3600
    os.utime(path, (old, old))


@pytest.mark.parametrize(
    ("table_type", "version", "operation"),
    [
        ("COPY_ON_WRITE", "8", "append"),
        ("COPY_ON_WRITE", "6", "upsert"),
        ("MERGE_ON_READ", "8", "upsert"),
        ("MERGE_ON_READ", "6", "upsert"),
    ],
)
def test_crashed_writer_is_rolled_back(
    tmp_path: Path, table_type: str, version: str, operation: str
) -> None:
    root = tmp_path / "t"
    table = create(root, table_type, version)
    first = rows((1, "a", 1, "x"), (2, "b", 1, "y"))
    table.append(first)
    model = model_of(first)
    crashed = _plan_without_commit(table, operation, rows((1, "lost", 9, "x"), (3, "lost", 9, "z")))
    assert all((root / f).exists() for f in crashed.files)
    assert_reads(root, model)  # files of a pending instant are invisible

    # A live writer's pending instant is left alone ...
    table.append(rows((4, "d", 1, "y")))
    model[4] = {"id": 4, "name": "d", "ts": 1, "city": "y"}
    assert all((root / f).exists() for f in crashed.files)
    assert_reads(root, model)

    # ... a dead one is rolled back by the next writer.
    _stop_heartbeat(root, crashed.timestamp)
    table.append(rows((5, "e", 1, "x")))
    model[5] = {"id": 5, "name": "e", "ts": 1, "city": "x"}
    assert not any((root / f).exists() for f in crashed.files)
    assert not (root / heartbeat_path(crashed.timestamp)).exists()
    storage = table.storage
    config = state_of(table.snapshot()).config
    timeline = load_timeline(storage, config)
    assert [i for i in timeline.instants if i.timestamp == crashed.timestamp] == []
    rollbacks = [i for i in timeline.completed() if i.action == "rollback"]
    assert len(rollbacks) == 1
    meta = parse_rollback_metadata(timeline.read_details(storage, rollbacks[0]), "rb")
    assert meta.commits_rollback == (crashed.timestamp,)
    assert meta.total_files_deleted == len(crashed.files)
    assert_reads(root, model)


def test_failure_while_writing_files_rolls_back_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "t"
    table = create(root, "MERGE_ON_READ")
    table.append(rows((1, "a", 1, "x")))
    calls = []

    def failing(*args: object, **kwargs: object) -> object:
        if calls:
            raise OSError("disk full")
        calls.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    real = apply.run_job
    monkeypatch.setattr("lakecore_hudi.write.writer.run_job", failing)
    with pytest.raises(OSError, match="disk full"):
        table.append(rows((2, "b", 1, "y"), (3, "c", 1, "z")))
    config = state_of(table.snapshot()).config
    timeline = load_timeline(table.storage, config)
    assert timeline.pending() == ()
    assert [i.action for i in timeline.completed()] == ["deltacommit", "rollback"]
    assert_reads(root, {1: {"id": 1, "name": "a", "ts": 1, "city": "x"}})
    assert not [p for p in _files(root) if p.startswith(("city=y", "city=z")) and "parquet" in p]


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (pa.table({"id": ["one"], "name": ["a"], "ts": [1], "city": ["x"]}), SchemaError),
        (pa.table({"name": ["a"], "ts": [1], "city": ["x"]}), SchemaError),
        (pa.table({"id": [1], "colour": ["red"]}), SchemaError),
        (
            pa.table({"id": pa.array([None], pa.int64()), "name": ["a"], "ts": [1], "city": ["x"]}),
            ConstraintViolationError,
        ),
        ({"id": [1], "name": ["a"], "ts": [1], "city": ["a/b"]}, ConstraintViolationError),
    ],
    ids=["wrong-type", "no-record-key", "unknown-column", "null-key", "slash-in-partition"],
)
@pytest.mark.parametrize("operation", ["append", "upsert", "overwrite"])
def test_bad_input_leaves_the_table_intact(
    tmp_path: Path, data: object, error: type[Exception], operation: str
) -> None:
    root = tmp_path / "t"
    table = create(root, "MERGE_ON_READ")
    table.append(rows((1, "a", 1, "x")))
    before = _files(root)
    with table.transaction() as tx:
        writer = table._format_writer(tx.snapshot)
        with pytest.raises(error):
            if operation == "overwrite":
                writer.overwrite(data, None)
            else:
                getattr(writer, operation)(data)
    assert _files(root) == before
    assert_reads(root, {1: {"id": 1, "name": "a", "ts": 1, "city": "x"}})


def test_bad_sql_leaves_the_table_intact(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = create(root)
    table.append(rows((1, "a", 1, "x")))
    before = _files(root)
    with pytest.raises(SchemaError):
        table.delete("nope = 1")
    with pytest.raises(SchemaError):
        table.update({"nope": "1"})
    with pytest.raises(lakecore.PredicateError):
        table.update({"name": "'b'"}, "id ===")
    with pytest.raises(ConstraintViolationError):
        table.overwrite(rows((2, "b", 1, "y")), where="city = 'x'")
    with pytest.raises(lakecore.UnsupportedFeatureError):
        table.update({"id": "id + 1"})
    with pytest.raises(lakecore.UnsupportedFeatureError):
        table.merge(rows((1, "a", 1, "x")), on="name").when_matched_delete().execute()
    assert _files(root) == before


def test_actions_hudi_cannot_commit_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = create(root)
    table.append(rows((1, "a", 1, "x")))
    with pytest.raises(lakecore.UnsupportedFeatureError):
        table.set_properties({"colour": "blue"})
    with pytest.raises(lakecore.UnsupportedFeatureError), table.transaction() as tx:
        tx.append(rows((2, "b", 1, "x")))
        tx.set_app_transaction("job", 1)
    with pytest.raises(lakecore.UnsupportedFeatureError), table.update_schema() as update:
        update.rename_column("name", "label")
    config = state_of(table.snapshot()).config
    assert load_timeline(table.storage, config).pending() == ()
    assert_reads(root, {1: {"id": 1, "name": "a", "ts": 1, "city": "x"}})


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_an_upsert_missing_a_column_is_refused_before_any_file(
    tmp_path: Path, table_type: str
) -> None:
    """A missing column would overwrite the stored values with nulls: refused, naming it (as
    appends are by default, and as Hudi's writers refuse such records)."""
    root = tmp_path / "t"
    table = create(root, table_type)
    table.append(rows((1, "a", 1, "x")))
    before = _files(root)
    with pytest.raises(SchemaError, match="'name'"):
        table.upsert(pa.table({"id": [1], "ts": [2], "city": ["x"]}))
    assert _files(root) == before
    assert_reads(root, {1: {"id": 1, "name": "a", "ts": 1, "city": "x"}})
