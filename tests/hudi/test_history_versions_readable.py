"""Every version ``Table.history()`` lists can be read, including the instants that write no
data (``indexing``, ``rollback``, ``clean``): as Hudi's ``as.of.instant`` does, they read the
table as its latest completed write at or before them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest

import lakecore
from lakecore.errors import VersionNotFoundError
from tests.corpus import CORPUS
from tests.hudi.write.helpers import create, hudi_rs, rows

WRITES = ("commit", "deltacommit", "replacecommit")
KEY = "_hoodie_record_key"


def _sorted(rows: pa.Table) -> pa.Table:
    return rows.sort_by([(KEY, "ascending"), ("_hoodie_commit_time", "ascending")])


def _check_non_write_instants(table: lakecore.Table) -> list[str]:
    """Read at each non-write instant of the history; return the actions checked."""
    history = table.history()
    writes = sorted(str(e.version) for e in history if e.info["action"] in WRITES)
    checked = []
    for entry in history:
        if entry.info["action"] in WRITES:
            continue
        version = str(entry.version)
        before = [w for w in writes if w <= version]
        assert before, f"{version}: the fixtures have a write before every other instant"
        snapshot = table.snapshot(version=version)
        assert snapshot.version == before[-1]
        want = table.snapshot(version=before[-1]).to_arrow()
        assert _sorted(snapshot.to_arrow()).equals(_sorted(want)), version
        checked.append(str(entry.info["action"]))
    return checked


@pytest.mark.parametrize(
    ("name", "actions"),
    [
        ("mor_avro_v8_trips_8i3u1d", ["indexing"]),
        ("mor_avro_v9_txns_nonpart_meta", ["indexing", "indexing"]),
        ("mor_avro_v9_nonpartitioned_rollback", ["rollback"]),
    ],
)
def test_non_write_instants_of_the_corpus_read_as_the_write_before(
    name: str, actions: list[str]
) -> None:
    root = CORPUS / "hudi" / name
    table = lakecore.open(str(root))
    assert _check_non_write_instants(table) == actions
    # hudi-rs, as of the same instants, reads the same records.
    module = hudi_rs()
    compared = 0
    for entry in table.history():
        if entry.info["action"] in WRITES:
            continue
        options = module.HudiReadOptions().with_as_of_timestamp(str(entry.version))
        theirs = pa.Table.from_batches(
            module.HudiTableBuilder.from_base_uri(str(root)).build().read(options)
        )
        ours = table.snapshot(version=str(entry.version)).to_arrow()
        for column in (KEY, "_hoodie_commit_time"):
            assert sorted(theirs.column(column).to_pylist()) == sorted(
                ours.column(column).to_pylist()
            )
        compared += 1
    assert compared == len(actions)


def test_a_clean_instant_reads_as_the_write_before(tmp_path: Path) -> None:
    table = create(tmp_path / "t", version="8")
    table.append(rows((1, "a", 1, "x"), (2, "b", 1, "y")))
    table.upsert(rows((1, "c", 2, "x")))
    table.upsert(rows((1, "d", 3, "x")))
    assert table.clean(retain_commits=1)
    assert _check_non_write_instants(lakecore.open(str(tmp_path / "t"))) == ["clean"]


def test_a_version_that_is_no_instant_is_still_refused() -> None:
    root = CORPUS / "hudi" / "mor_avro_v8_trips_8i3u1d"
    table = lakecore.open(str(root))
    indexing = next(e for e in table.history() if e.info["action"] == "indexing")
    with pytest.raises(VersionNotFoundError):
        table.snapshot(version=str(int(str(indexing.version)) + 1))


def test_a_pending_instant_is_not_readable(tmp_path: Path) -> None:
    root = tmp_path / "t"
    shutil.copytree(CORPUS / "hudi" / "mor_avro_v8_trips_8i3u1d", root)
    table = lakecore.open(str(root))
    indexing = next(e for e in table.history() if e.info["action"] == "indexing")
    timeline = root / ".hoodie" / "timeline"
    completed = [p for p in timeline.iterdir() if p.name.endswith(".indexing")]
    assert len(completed) == 1
    completed[0].unlink()
    with pytest.raises(VersionNotFoundError):
        lakecore.open(str(root)).snapshot(version=str(indexing.version))


def test_an_archived_non_write_instant_is_found_in_the_archive(tmp_path: Path) -> None:
    """Older than the active timeline, an instant's action comes from the archived one."""
    from lakecore_hudi.as_of_instant import non_write_instant
    from lakecore_hudi.timeline.active import load_timeline

    from tests.hudi.test_timeline import archived_commit_and_clean

    storage, config = archived_commit_and_clean(tmp_path)
    timeline = load_timeline(storage, config)
    writes = timeline.completed_write_instants()
    found = {v: non_write_instant(storage, config, timeline, writes, v) for v in ("001", "002")}
    assert found == {"001": False, "002": True}
    assert not non_write_instant(storage, config, timeline, writes, "003")
