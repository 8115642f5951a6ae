"""lakecore keeps the metadata table's ``files`` partition of the tables it writes.

After every instant (insert, upsert, delete, compaction, clean), the ``files`` partition
read by lakecore equals the data files on storage, and hudi-rs, told to list files through
the metadata table (``hoodie.metadata.enable=true``), reads the same rows as lakecore at
every instant (time travel). hudi-rs 0.5.0 does list through the metadata table: a decoy
data file the metadata table does not list stays invisible to it (test below).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from lakecore_hudi.mdt import maintain
from lakecore_hudi.mdt.files_partition import read_files_partition
from lakecore_hudi.table_config import read_table_config

import lakecore
from lakecore.storage import open_storage
from lakecore.table import Table
from tests.hudi.write.helpers import create, files_on_disk, hudi_rs, rows, upsert

MDT = ".hoodie/metadata"


def mdt_listing(root: Path) -> dict[str, dict[str, int]] | None:
    storage = open_storage(str(root))
    return read_files_partition(storage, read_table_config(storage))


def _sorted(data: pa.Table) -> list[dict[str, Any]]:
    data = data.select(["id", "name", "ts", "city"])
    return sorted(data.to_pylist(), key=lambda r: json.dumps(r, sort_keys=True))


def hudi_rs_rows(root: Path, instant: str | None = None) -> list[dict[str, Any]]:
    module = hudi_rs()
    builder = module.HudiTableBuilder.from_base_uri(str(root))
    table = builder.with_hudi_option("hoodie.metadata.enable", "true").build()
    options = module.HudiReadOptions()
    if instant is not None:
        options = options.with_as_of_timestamp(instant)
    batches = table.read(options)
    return _sorted(pa.Table.from_batches(batches)) if batches else []


def lakecore_rows(table: Table, version: str) -> list[dict[str, Any]]:
    return _sorted(table.scan(version=version).to_arrow())


def check(root: Path, table: Table, versions: list[str]) -> None:
    """The files partition lists storage's data files; hudi-rs agrees with lakecore at
    every instant so far."""
    assert mdt_listing(root) == files_on_disk(root)
    for v in versions:
        assert hudi_rs_rows(root, v) == lakecore_rows(table, v), v


def history(table: Table) -> list[str]:
    return [str(h.version) for h in reversed(table.history())]


@pytest.mark.parametrize(
    ("table_type", "partitioned", "version"),
    [
        ("MERGE_ON_READ", True, "8"),
        pytest.param("COPY_ON_WRITE", False, "8", marks=pytest.mark.slow),
        pytest.param("MERGE_ON_READ", False, "9", marks=pytest.mark.slow),
        pytest.param("COPY_ON_WRITE", True, "9", marks=pytest.mark.slow),
    ],
)
def test_every_instant_keeps_the_files_partition(
    tmp_path: Path, table_type: str, partitioned: bool, version: str
) -> None:
    root = tmp_path / "t"
    table = create(root, table_type, version, partitioned=partitioned, metadata_enable="true")
    assert read_table_config(open_storage(str(root))).metadata_partitions == ("files",)
    assert mdt_listing(root) == {}
    steps = [
        lambda: table.append(rows((1, "a", 1, "x"), (2, "b", 1, "y"))),
        lambda: upsert(table, rows((1, "a2", 2, "x"), (3, "c", 1, "z"))),
        lambda: table.delete("id = 2"),
        lambda: table.compact(),
        lambda: table.append(rows((4, "d", 1, "x"))),
    ]
    for step in steps:
        step()
        check(root, table, history(table))
    doomed = table.clean(retain_commits=1)
    assert doomed  # the clean deleted files, and the files partition forgot them
    assert mdt_listing(root) == files_on_disk(root)
    latest = str(lakecore.open(str(root)).version)
    assert hudi_rs_rows(root) == lakecore_rows(table, latest)
    mdt_timeline = os.listdir(root / MDT / ".hoodie" / "timeline")
    data_instants = {v for v in history(table)}
    # every data instant (the clean too) has its metadata delta commit of the same time
    assert data_instants <= {n.split("_")[0].split(".")[0] for n in mdt_timeline}


def test_hudi_rs_lists_through_the_metadata_table(tmp_path: Path) -> None:
    """A data file the metadata table does not list is invisible to hudi-rs, and visible
    once the metadata table is gone: hudi-rs 0.5.0 reads file listings from the ``files``
    partition (whenever the table declares it; ``hoodie.metadata.enable=false`` does not
    turn that off)."""
    root = tmp_path / "t"
    table = create(root, partitioned=False, metadata_enable="true")
    table.append(rows((1, "a", 1, "x")))
    version = history(table)[-1]
    name = next(iter(files_on_disk(root)[""]))
    shutil.copy(root / name, root / name.replace(name.split("-")[0], "decoy000"))
    assert [r["id"] for r in hudi_rs_rows(root)] == [1]
    assert hudi_rs_rows(root, version) == hudi_rs_rows(root)
    shutil.rmtree(root / MDT)
    plain = hudi_rs().HudiTableBuilder.from_base_uri(str(root)).build()
    assert pa.Table.from_batches(plain.read()).num_rows == 2


def test_compaction_and_clean_of_the_metadata_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(maintain, "MAX_DELTA_COMMITS", 3)
    root = tmp_path / "t"
    table = create(root, "MERGE_ON_READ", metadata_enable="true")
    for i in range(8):
        upsert(table, rows((i % 3, f"n{i}", i, "x" if i % 2 else "y")))
        assert mdt_listing(root) == files_on_disk(root)
    files = os.listdir(root / MDT / "files")
    bases = sorted(f for f in files if f.endswith(".hfile"))
    timeline = os.listdir(root / MDT / ".hoodie" / "timeline")
    assert any(n.endswith(".commit") for n in timeline)  # compactions completed
    assert any(n.endswith(".clean") for n in timeline)  # and a clean
    assert "files-0000-0_0-0-0_00000000000000000.hfile" not in bases  # cleaned away
    assert 1 <= len(bases) <= 2
    versions = history(table)
    check(root, table, versions)


def test_unmaintained_partitions_are_refused_by_name(tmp_path: Path) -> None:
    root = tmp_path / "t"
    create(root, partitioned=False, metadata_enable="true")
    props = root / ".hoodie" / "hoodie.properties"
    text = props.read_text().replace(
        "hoodie.table.metadata.partitions=files",
        "hoodie.table.metadata.partitions=files,bloom_filters",
    )
    from lakecore_hudi.java_properties import parse_properties
    from lakecore_hudi.table_config_out import render_table_config

    parsed = parse_properties(text)
    parsed.pop("hoodie.table.checksum", None)
    props.write_bytes(render_table_config(parsed))
    before = sorted(p.name for p in root.rglob("*"))
    with pytest.raises(lakecore.errors.UnsupportedFeatureError, match="bloom_filters") as info:
        lakecore.open(str(root)).append(rows((1, "a", 1, "x")))
    assert info.value.feature == "hudi-metadata-bloom_filters"
    assert sorted(p.name for p in root.rglob("*")) == before  # nothing written


class Crash(BaseException):
    """A writer dying mid-commit (not an error any code path handles)."""


def test_crash_between_metadata_and_data_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The metadata delta commit of an instant that never completed lists nothing, for
    lakecore's reader and for hudi-rs; the next writer's rollback of the instant rolls the
    metadata delta commit back too."""
    from lakecore_hudi.write import commit

    root = tmp_path / "t"
    table = create(root, "MERGE_ON_READ", metadata_enable="true")
    table.append(rows((1, "a", 1, "x")))
    before = str(lakecore.open(str(root)).version)

    def crash(*args: Any, **kwargs: Any) -> None:
        raise Crash

    with monkeypatch.context() as patched:
        patched.setattr(commit, "complete", crash)
        with pytest.raises(Crash):
            table.append(rows((2, "b", 1, "y")))
    timeline = os.listdir(root / ".hoodie" / "timeline")
    pending = {n.split(".")[0] for n in timeline if n.endswith(".inflight")}
    completed = {n.split("_")[0] for n in timeline if "_" in n}
    (failed,) = pending - completed
    mdt_timeline = os.listdir(root / MDT / ".hoodie" / "timeline")
    assert any(n.startswith(f"{failed}_") for n in mdt_timeline)  # metadata side completed
    on_disk = files_on_disk(root)
    assert "city=y" in on_disk  # the failed write's file is there ...
    assert mdt_listing(root) == {"city=x": on_disk["city=x"]}  # ... and listed nowhere
    reopened = lakecore.open(str(root))
    assert str(reopened.version) == before
    assert hudi_rs_rows(root) == lakecore_rows(reopened, before)
    assert [r["id"] for r in hudi_rs_rows(root)] == [1]
    # The next write rolls the failed instant back (its heartbeat stopped with the crash),
    # in the metadata table too.
    reopened.append(rows((3, "c", 1, "z")))
    mdt_timeline = os.listdir(root / MDT / ".hoodie" / "timeline")
    assert not any(n.startswith(failed) for n in mdt_timeline)
    assert not any(failed in n for n in os.listdir(root / MDT / "files"))
    assert mdt_listing(root) == files_on_disk(root)
    assert [r["id"] for r in hudi_rs_rows(root)] == [1, 3]


def test_version_6_tables_get_no_metadata_table(tmp_path: Path) -> None:
    with pytest.raises(lakecore.errors.InvalidArgumentError, match="versions 8 and 9"):
        create(tmp_path / "t", version="6", metadata_enable="true")
    assert not (tmp_path / "t" / ".hoodie").exists()


def test_a_clean_that_died_after_deleting_is_repaired(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A clean whose writer died after deleting files (and after its metadata delta commit,
    which does not count while the clean is pending) stays pending: the next metadata delta
    commit records its deletions, so the files partition stops listing the gone files."""
    from lakecore_hudi.write import clean

    root = tmp_path / "t"
    table = create(root, "MERGE_ON_READ", partitioned=False, metadata_enable="true")
    table.append(rows((1, "a", 1, "x")))
    upsert(table, rows((1, "b", 2, "x")))
    table.compact()

    def crash(*args: Any, **kwargs: Any) -> None:
        raise Crash

    with monkeypatch.context() as patched:
        patched.setattr(clean, "complete", crash)
        with pytest.raises(Crash):
            table.clean(retain_commits=1)
    listed = mdt_listing(root)
    assert listed is not None and listed != files_on_disk(root)  # lists the deleted files
    lakecore.open(str(root)).append(rows((2, "c", 1, "x")))
    assert mdt_listing(root) == files_on_disk(root)
    assert [r["id"] for r in hudi_rs_rows(root)] == [1, 2]


def test_concurrent_writers_out_of_instant_order(tmp_path: Path) -> None:
    """Writers planned on one snapshot complete in another order than their instant times,
    and a conflicting one is rolled back: every completed instant is listed, the loser's
    files never are."""
    from lakecore.errors import CommitConflictError

    root = tmp_path / "t"
    table = create(root, "MERGE_ON_READ", metadata_enable="true")
    table.append(rows((1, "a", 1, "x"), (2, "b", 1, "y")))
    one, two, three = table.transaction(), table.transaction(), table.transaction()
    one.append(rows((3, "c", 1, "x")))
    two.append(rows((4, "d", 1, "x")))
    three.stage(*table._format_writer(three.snapshot).upsert(rows((2, "B", 2, "y"))))
    loser = table.transaction()
    loser.stage(*table._format_writer(loser.snapshot).upsert(rows((2, "L", 3, "y"))))
    for tx in (three, one, two):
        tx.commit()
    with pytest.raises(CommitConflictError):
        loser.commit()
    assert mdt_listing(root) == files_on_disk(root)
    assert sorted((r["id"], r["name"]) for r in hudi_rs_rows(root)) == [
        (1, "a"),
        (2, "B"),
        (3, "c"),
        (4, "d"),
    ]
    for v in history(table):
        if v in {str(tx.version) for tx in (one, two, three)}:
            assert hudi_rs_rows(root, v) == lakecore_rows(table, v)


@pytest.mark.slow
def test_metadata_timeline_is_archived(tmp_path: Path) -> None:
    """Past Hudi's bounds the metadata timeline is archived (LSM history), never at or after
    the data table's earliest active instant; the files partition and hudi-rs stay right."""
    root = tmp_path / "t"
    table = create(root, "MERGE_ON_READ", partitioned=False, metadata_enable="true")
    for i in range(46):
        upsert(table, rows((i % 4, f"n{i}", i, "x")))
    history_dir = root / MDT / ".hoodie" / "timeline" / "history"
    assert any(history_dir.iterdir())
    active = [n for n in os.listdir(root / MDT / ".hoodie" / "timeline") if n.endswith("commit")]
    data_active = [n.split("_")[0] for n in os.listdir(root / ".hoodie" / "timeline") if "_" in n]
    mdt_deltas = sorted(n.split("_")[0] for n in active if n.endswith(".deltacommit"))
    assert len(active) < 46
    assert mdt_deltas[0] <= min(data_active)  # nothing archived past the data timeline
    assert mdt_listing(root) == files_on_disk(root)
    latest = str(lakecore.open(str(root)).version)
    assert hudi_rs_rows(root) == lakecore_rows(table, latest)
    assert sorted(r["id"] for r in hudi_rs_rows(root)) == [0, 1, 2, 3]


def test_create_replaces_a_failed_creates_metadata_table(tmp_path: Path) -> None:
    """A create that died after initialising the metadata table (no hoodie.properties of the
    data table yet) leaves a leftover the next create replaces."""
    root = tmp_path / "t"
    create(root, partitioned=False, metadata_enable="true")
    (root / ".hoodie" / "hoodie.properties").unlink()
    table = create(root, partitioned=False, metadata_enable="true")
    table.append(rows((1, "a", 1, "x")))
    assert mdt_listing(root) == files_on_disk(root)
    assert [r["id"] for r in hudi_rs_rows(root)] == [1]
