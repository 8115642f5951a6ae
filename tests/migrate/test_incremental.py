"""Incremental sync: a re-run of ``lakecore.migrate`` translates only the source versions
committed since the last run (exactly one target version for one source commit), changes nothing
when there is none, and refuses a target someone else changed or that holds another source's
migration, leaving it as it was."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import lakecore
from lakecore.errors import MigrationError
from tests.migrate.test_history import (
    SCHEMA,
    build_source,
    engine_rows,
    rows,
    source_rows,
)

PAIRS = [
    ("delta", "lance"),
    ("delta", "hudi"),
    ("lance", "delta"),
    ("lance", "hudi"),
    ("hudi-mor", "delta"),
    ("hudi-cow", "lance"),
]
IDS = [f"{s}-to-{t}" for s, t in PAIRS]


def listing(root: Path) -> dict[str, int]:
    """Every file under ``root`` with its size (what a refused run must leave alone)."""
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*") if p.is_file()}


def one_more_commit(kind: str, root: Path) -> int | str:
    """One more source commit, a row-level delete (a deletion vector, a Hudi delete, a Lance
    deletion file); returns its version. (One operation: a Hudi transaction of a delete and an
    append commits two instants.)"""
    return lakecore.open(str(root)).delete("id = 4")


@pytest.mark.parametrize("history", [True, False], ids=["history", "latest"])
@pytest.mark.parametrize(("kind", "to"), PAIRS, ids=IDS)
def test_one_more_source_commit_adds_one_target_version(
    kind: str, to: str, history: bool, tmp_path: Path
) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    build_source(kind, src, add_column=to != "hudi")
    first = lakecore.migrate(str(src), str(dst), to=to, history=history)
    target = lakecore.open(str(dst), format=to)
    before = target.version
    entries = len(target.history())
    added = one_more_commit(kind, src)
    report = lakecore.migrate(str(src), str(dst), to=to, history=history)
    target = lakecore.open(str(dst), format=to)
    assert report.commits == 1
    assert report.versions == ((added, target.version),)
    assert len(target.history()) == entries + 1
    assert str(target.version) > str(before) or int(target.version) > int(before)
    want = source_rows(src, added)
    assert engine_rows(to, dst) == want
    assert engine_rows(to, dst, before) == source_rows(src, first.versions[-1][0])
    # Only the changed unit was written again (or removed, when the delete emptied it).
    assert report.units_rewritten + report.files_removed >= 1
    assert report.units_rewritten <= 1


@pytest.mark.parametrize("history", [True, False], ids=["history", "latest"])
@pytest.mark.parametrize(("kind", "to"), PAIRS[:3], ids=IDS[:3])
def test_a_rerun_without_new_commits_changes_nothing(
    kind: str, to: str, history: bool, tmp_path: Path
) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    build_source(kind, src, add_column=to != "hudi")
    lakecore.migrate(str(src), str(dst), to=to, history=history)
    version = lakecore.open(str(dst), format=to).version
    files = listing(dst)
    report = lakecore.migrate(str(src), str(dst), to=to, history=history)
    assert report.commits == 0 and report.versions == () and report.rows == 0
    assert lakecore.open(str(dst), format=to).version == version
    assert listing(dst) == files


def _change_with_engine(fmt: str, root: Path) -> None:
    """Someone else's commit on the target, made with the format's own engine."""
    data = rows((99, "theirs", 1, "x"))
    if fmt == "delta":
        import deltalake

        deltalake.write_deltalake(str(root), data, mode="append")
    elif fmt == "lance":
        import lance

        lance.write_dataset(data, str(root), mode="append")
    else:  # no Hudi writer in Python: lakecore's own
        lakecore.open(str(root), format="hudi").append(data)


@pytest.mark.parametrize("by", ["lakecore", "engine"])
@pytest.mark.parametrize("to", ["delta", "hudi", "lance"])
def test_a_target_changed_by_someone_else_is_refused_and_left_intact(
    to: str, by: str, tmp_path: Path
) -> None:
    kind = "lance" if to != "lance" else "delta"
    src, dst = tmp_path / "src", tmp_path / "dst"
    build_source(kind, src, add_column=False)
    lakecore.migrate(str(src), str(dst), to=to, history=True)
    if by == "engine":
        _change_with_engine(to, dst)
    else:
        lakecore.open(str(dst), format=to).append(rows((99, "theirs", 1, "x")))
    one_more_commit(kind, src)
    files = listing(dst)
    theirs = engine_rows(to, dst)
    assert any(r["id"] == 99 for r in theirs)
    with pytest.raises(MigrationError, match="changed after its last migration"):
        lakecore.migrate(str(src), str(dst), to=to, history=True)
    assert listing(dst) == files
    assert engine_rows(to, dst) == theirs


@pytest.mark.parametrize("to", ["delta", "hudi", "lance"])
def test_a_target_holding_another_sources_migration_is_refused(to: str, tmp_path: Path) -> None:
    kind = "lance" if to != "lance" else "delta"
    one, other, dst = tmp_path / "one", tmp_path / "other", tmp_path / "dst"
    build_source(kind, one, add_column=False)
    build_source(kind, other, add_column=False)
    lakecore.migrate(str(one), str(dst), to=to)
    files = listing(dst)
    with pytest.raises(MigrationError, match="holds a migration of"):
        lakecore.migrate(str(other), str(dst), to=to)
    with pytest.raises(MigrationError, match="holds a migration of"):
        lakecore.migrate(str(other), str(dst), to=to, history=True)
    assert listing(dst) == files
    assert engine_rows(to, dst) == source_rows(one, lakecore.open(str(one)).version)


def test_incremental_sync_of_many_commits_keeps_every_version(tmp_path: Path) -> None:
    """Three runs, each after a few source commits (a delete of a whole file, an update, an
    append): every source version maps to one target version holding its rows."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    table = build_source("lance", src, add_column=False)
    pairs = list(lakecore.migrate(str(src), str(dst), to="delta", history=True).versions)
    new = pa.table({"id": [30], "name": ["n"], "ts": [1], "city": ["q"]}, schema=SCHEMA)
    runs = [
        [lambda t: t.delete("id = 4"), lambda t: t.update({"ts": "ts + 1"}, "id > 5")],
        [lambda t: t.append(new), lambda t: t.delete("city = 'q'")],
        [lambda t: t.delete("id = 99")],  # matches nothing: no change to carry
    ]
    for steps in runs:
        for step in steps:
            step(table)
        report = lakecore.migrate(str(src), str(dst), to="delta", history=True)
        assert len(report.versions) == len(steps)
        changed = len({tv for _, tv in report.versions} - {tv for _, tv in pairs})
        assert report.commits == changed == (len(steps) if len(steps) > 1 else 0)
        pairs += report.versions
    assert [s for s, _ in pairs] == [e.version for e in reversed(table.history())]
    for sv, tv in pairs:
        assert engine_rows("delta", dst, tv) == source_rows(src, sv), (sv, tv)
