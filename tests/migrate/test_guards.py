"""Guards found by trying to break the migration: concurrent runs, nested locations, history
entries that are no versions, vacuumed sources, types a target stores in another form."""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lakecore
from lakecore.errors import CommitConflictError, MigrationError, StorageError
from lakecore.migrate import run

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("v", pa.string())])
PAIRS = [("delta", "hudi"), ("delta", "lance"), ("lance", "delta"), ("hudi", "delta")]


def _rows(*ids: int) -> pa.Table:
    return pa.table({"id": list(ids), "v": [str(i) for i in ids]}, schema=SCHEMA)


def _ids(uri: str, fmt: str) -> list[int]:
    return sorted(lakecore.open(uri, format=fmt).to_arrow(columns=["id"]).column("id").to_pylist())


@pytest.mark.parametrize("history", [False, True], ids=["latest", "history"])
@pytest.mark.parametrize(("fmt", "to"), PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_a_concurrent_run_that_lands_first_makes_the_other_conflict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str, to: str, history: bool
) -> None:
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    props = {"record_key": "id"} if fmt == "hudi" else {}
    source = lakecore.create(src, SCHEMA, fmt, properties=props)
    source.append(_rows(1, 2, 3))
    lakecore.migrate(src, dst, to=to, history=history)
    source.append(_rows(4))
    translate = run._Run.translate
    fired: list[bool] = []

    def racing(self: run._Run, properties: dict[str, str]) -> None:
        if not fired:  # another run lands after this one opened the target
            fired.append(True)
            lakecore.migrate(src, dst, to=to, history=history)
        translate(self, properties)

    monkeypatch.setattr(run._Run, "translate", racing)
    with pytest.raises(CommitConflictError):
        lakecore.migrate(src, dst, to=to, history=history)
    monkeypatch.setattr(run._Run, "translate", translate)
    assert _ids(dst, to) == [1, 2, 3, 4]
    assert lakecore.migrate(src, dst, to=to, history=history).commits == 0


@pytest.mark.parametrize("inner", ["target", "source"])
def test_nested_locations_are_refused(tmp_path: Path, inner: str) -> None:
    outer = tmp_path / "outer"
    src, dst = (outer, outer / "copy") if inner == "target" else (outer / "src", outer)
    lakecore.create(str(src), SCHEMA).append(_rows(1))
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    with pytest.raises(MigrationError, match="inside"):
        lakecore.migrate(str(src), str(dst), to="lance")
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_hudi_history_entries_that_are_no_version_are_skipped(tmp_path: Path) -> None:
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    source = lakecore.create(src, SCHEMA, "hudi", properties={"record_key": "id"})
    source.append(_rows(1, 2))
    with pytest.raises(RuntimeError), source.transaction() as tx:
        tx.append(_rows(9))
        raise RuntimeError("rolled back: the timeline gains a rollback instant")
    source.append(_rows(3))
    assert any(e.operation == "rollback" for e in source.history())
    report = lakecore.migrate(src, dst, to="delta", history=True)
    assert _ids(dst, "delta") == [1, 2, 3]
    assert len(report.versions) == 2
    assert any("skipped" in n for n in report.notes)


def test_a_vacuumed_source_starts_at_its_first_readable_version(tmp_path: Path) -> None:
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    source = lakecore.create(src, SCHEMA)
    source.append(_rows(1, 2))
    source.overwrite(_rows(3))  # version 2 no longer needs version 1's file
    deleted = source.vacuum(retention_hours=0, dry_run=False, enforce_retention=False)
    assert deleted
    report = lakecore.migrate(src, dst, to="lance", history=True)
    assert [sv for sv, _ in report.versions][-1] == 2
    assert 1 not in [sv for sv, _ in report.versions]
    assert sorted(lance.dataset(dst).to_table().column("id").to_pylist()) == [3]


def test_a_storage_fault_on_an_early_version_is_not_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    source = lakecore.create(src, SCHEMA)
    source.append(_rows(1))
    snapshot = lakecore.Table.snapshot
    calls: list[int] = []

    def flaky(self: lakecore.Table, *args: object, **kwargs: object) -> object:
        if self.uri == src and kwargs.get("version") == 0 and not calls:
            calls.append(1)
            raise StorageError("connection reset (injected)")
        return snapshot(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(lakecore.Table, "snapshot", flaky)
    with pytest.raises(StorageError):
        lakecore.migrate(src, dst, to="lance", history=True)
    monkeypatch.setattr(lakecore.Table, "snapshot", snapshot)
    report = lakecore.migrate(src, dst, to="lance", history=True)
    assert next(sv for sv, _ in report.versions) == 0


@pytest.mark.parametrize("to", ["delta", "hudi"])
def test_nanosecond_timestamps_of_a_lance_source_migrate(tmp_path: Path, to: str) -> None:
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    ts = pa.array([1_700_000_000_000_000_000, 1_700_000_000_123_456_000], pa.timestamp("ns"))
    lance.write_dataset(pa.table({"id": [1, 2], "t": ts}), src)
    lakecore.migrate(src, dst, to=to)
    got = lakecore.open(dst, format=to).to_arrow(columns=["id", "t"]).sort_by("id")
    assert got.column("t").cast(pa.timestamp("ns")).to_pylist() == ts.to_pylist()
    assert lakecore.migrate(src, dst, to=to).commits == 0


def test_sub_microsecond_values_are_refused_naming_the_column(tmp_path: Path) -> None:
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    ts = pa.array([1_700_000_000_000_000_001], pa.timestamp("ns"))
    lance.write_dataset(pa.table({"id": [1], "t": ts}), src)
    with pytest.raises(MigrationError, match="'t'"):
        lakecore.migrate(src, dst, to="delta")
    assert not any((Path(dst) / "_delta_log").glob("*.json")) or _ids(dst, "delta") == []


def test_a_later_column_the_target_cannot_hold_is_a_migration_error(tmp_path: Path) -> None:
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    source = lakecore.create(src, SCHEMA)
    source.append(_rows(1))
    with source.update_schema() as update:
        update.add_column("m", pa.map_(pa.string(), pa.int64()))
    with pytest.raises(MigrationError, match="m"):
        lakecore.migrate(src, dst, to="lance", history=True)
    assert _ids(dst, "lance") == [1]  # the versions before it are committed
