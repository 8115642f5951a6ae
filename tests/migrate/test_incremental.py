"""Incremental sync: a re-run of ``lakecore.migrate`` translates only the source versions
committed since the last run (exactly one target version for one source commit), changes nothing
when there is none, and refuses a target someone else changed or that holds another source's
migration, leaving it as it was."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lakecore
from lakecore.errors import MigrationError
from tests.migrate.test_history import (
    SCHEMA,
    Row,
    build_source,
    engine_rows,
    rows,
    sorted_rows,
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
    return lakecore.open(str(root)).delete("id = 4").version


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


@pytest.mark.parametrize("to", ["delta", "hudi", "lance"])
def test_a_rerun_after_schema_only_source_versions_changes_nothing(to: str, tmp_path: Path) -> None:
    """The last source versions only add columns (no row changes): the schema commits that
    hold them record them, so a re-run has nothing to do. Fixed in session 12; was: they
    recorded the previous source version, and the re-run translated them again from the
    older schema and failed with MigrationError ("drops or renames column")."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    source = lakecore.create(str(src), SCHEMA, "lance" if to != "lance" else "delta")
    source.append(rows((1, "a", 1, "x")))
    for name in ("extra0", "extra1"):
        with source.update_schema() as s:
            s.add_column(name, pa.int64())
    first = lakecore.migrate(str(src), str(dst), to=to, history=True)
    assert [v for v, _ in first.versions][-2:] == [source.version - 1, source.version]
    version = lakecore.open(str(dst), format=to).version
    again = lakecore.migrate(str(src), str(dst), to=to, history=True)
    assert again.commits == 0 and again.versions == ()
    assert lakecore.open(str(dst), format=to).version == version
    source.append(pa.table({**rows((2, "b", 2, "y")).to_pydict(), "extra0": [7], "extra1": [8]}))
    later = lakecore.migrate(str(src), str(dst), to=to, history=True)
    assert later.versions == ((source.version, lakecore.open(str(dst), format=to).version),)


def _change_with_engine(fmt: str, root: Path) -> None:
    """Someone else's commit on the target, made with the format's own engine (pylance)."""
    import lance

    assert fmt == "lance"
    lance.write_dataset(rows((99, "theirs", 1, "x")), str(root), mode="append")


CHANGERS = [("delta", "lakecore"), ("hudi", "lakecore"), ("lance", "lakecore"), ("lance", "engine")]
"""Who changes the target: lakecore, or the format's engine where it can write the target
(deltalake 1.6.6 cannot write a table with in-commit timestamps, which a Delta target of a
history migration has; hudi-rs does not write)."""


@pytest.mark.parametrize(("to", "by"), CHANGERS, ids=[f"{t}-by-{b}" for t, b in CHANGERS])
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
        [lambda t: t.delete("id = 99")],  # matches nothing: no source version, nothing to do
    ]
    for steps in runs:
        before = table.version
        for step in steps:
            step(table)
        report = lakecore.migrate(str(src), str(dst), to="delta", history=True)
        assert len(report.versions) == int(table.version) - int(before)
        changed = len({tv for _, tv in report.versions} - {tv for _, tv in pairs})
        assert report.commits == changed == (len(steps) if len(steps) > 1 else 0)
        pairs += report.versions
    assert [s for s, _ in pairs] == [e.version for e in reversed(table.history())]
    for sv, tv in pairs:
        assert engine_rows("delta", dst, tv) == source_rows(src, sv), (sv, tv)


def test_a_delta_target_created_without_history_takes_later_commits_at_the_clocks_time(
    tmp_path: Path,
) -> None:
    """A Delta target created by a run without history has no in-commit timestamps, so it
    cannot take the source's commit times: a later ``history=True`` run commits at the
    clock's time, with a note, instead of failing (UnsupportedFeatureError before)."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    build_source("lance", src, add_column=False)
    lakecore.migrate(str(src), str(dst), to="delta")
    added = one_more_commit("lance", src)
    report = lakecore.migrate(str(src), str(dst), to="delta", history=True)
    assert report.commits == 1 and report.versions[0][0] == added
    assert not report.timestamps_kept
    assert any("commit times" in n for n in report.notes)
    assert engine_rows("delta", dst) == source_rows(src, added)


def _engine_options(fmt: str, options: dict[str, Any]) -> dict[str, str]:
    """The moto server's options as deltalake / pylance take them."""
    if fmt == "delta":
        return {
            "AWS_ENDPOINT_URL": options["endpoint_url"],
            "AWS_ACCESS_KEY_ID": options["key"],
            "AWS_SECRET_ACCESS_KEY": options["secret"],
            "AWS_REGION": options["client_kwargs"]["region_name"],
            "AWS_ALLOW_HTTP": "true",
        }
    return {
        "aws_endpoint": options["endpoint_url"],
        "aws_access_key_id": options["key"],
        "aws_secret_access_key": options["secret"],
        "aws_region": options["client_kwargs"]["region_name"],
        "allow_http": "true",
    }


def _s3_engine_rows(fmt: str, uri: str, options: dict[str, Any], version: int) -> list[Row]:
    engine_options = _engine_options(fmt, options)
    if fmt == "delta":
        import deltalake

        table = deltalake.DeltaTable(uri, version=version, storage_options=engine_options)
        return sorted_rows(table.to_pyarrow_table())
    import lance

    return sorted_rows(
        lance.dataset(uri, version=version, storage_options=engine_options).to_table()
    )


@pytest.mark.s3
@pytest.mark.parametrize(("kind", "to"), [("delta", "lance"), ("lance", "delta")])
def test_history_and_incremental_migration_on_s3(
    kind: str, to: str, s3_uri: str, s3_storage_options: dict[str, Any]
) -> None:
    """Source and target on the moto server: every version read by the target's engine from
    S3 equals the source's; an incremental re-run adds one version."""
    src, dst = f"{s3_uri}/src", f"{s3_uri}/dst"
    props = {"delta.enableDeletionVectors": "true"} if kind == "delta" else {}
    t = lakecore.create(src, SCHEMA, kind, properties=props, storage_options=s3_storage_options)
    t.append(rows((1, "a", 1, "x"), (2, "b", 1, "y"), (3, "c", 1, "y")))
    t.delete("id = 2")
    t.update({"name": "'u'"}, "id = 3")
    report = lakecore.migrate(src, dst, to=to, history=True, storage_options=s3_storage_options)
    t.delete("id = 1")
    again = lakecore.migrate(src, dst, to=to, history=True, storage_options=s3_storage_options)
    assert again.commits == len(again.versions) == 1
    source = lakecore.open(src, storage_options=s3_storage_options)
    pairs = report.versions + again.versions
    assert [sv for sv, _ in pairs] == [e.version for e in reversed(source.history())]
    for sv, tv in pairs:
        want = sorted_rows(source.to_arrow(version=sv))
        assert _s3_engine_rows(to, dst, s3_storage_options, int(tv)) == want, (sv, tv)
    assert sorted_rows(source.to_arrow()) == [
        {"id": 3, "name": "u", "ts": 1, "city": "y"},
    ]
