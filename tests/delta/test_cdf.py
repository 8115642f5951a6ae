"""Change data feed: lakecore's Table.changes equals delta-rs load_cdf on real CDF tables."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import lakecore
from lakecore.errors import VersionNotFoundError

CORPUS = Path(os.environ.get("LAKECORE_CORPUS", Path(__file__).parents[3] / "shared" / "corpus"))
CDF_TABLES = [
    "deltars__cdf-table",
    "deltars__cdc_ict_table",
    "deltars__cdf-table-with-cdc-and-dvs",
    "deltars__checkpoint-cdf-table",
    "deltars__simple_table_with_cdc",
]


def _digest(table: pa.Table) -> str:
    if str(CORPUS) not in sys.path:
        sys.path.insert(0, str(CORPUS))
    from digest import table_digest  # type: ignore[import-not-found]

    return str(table_digest(table))


@pytest.fixture(scope="module")
def corpus() -> Path:
    if not (CORPUS / "delta").is_dir():
        pytest.fail(f"corpus not found at {CORPUS}; set LAKECORE_CORPUS")
    return CORPUS


@pytest.mark.parametrize("name", CDF_TABLES)
def test_changes_match_delta_rs(corpus: Path, name: str) -> None:
    deltalake = pytest.importorskip("deltalake")
    path = str(corpus / "delta" / name)
    table = lakecore.open(path)
    start = min(int(h.version) for h in table.history())
    ours = table.changes(start)
    theirs = pa.table(deltalake.DeltaTable(path).load_cdf(starting_version=start).read_all())
    assert ours.num_rows == theirs.num_rows > 0
    assert set(ours.column("_change_type").to_pylist()) == set(
        theirs.column("_change_type").to_pylist()
    )
    # Commit timestamps differ in type only (delta-rs: naive ms); compare the rest exactly.
    assert _digest(ours.drop(["_commit_timestamp"])) == _digest(
        theirs.drop(["_commit_timestamp"]).select(ours.drop(["_commit_timestamp"]).column_names)
    )
    # Per the protocol a commit's time is its in-commit timestamp, else its file's mtime
    # (delta-rs reports commitInfo.timestamp instead), so they equal the history's times.
    times = {h.version: h.timestamp for h in table.history()}
    for version, ts in zip(
        ours.column("_commit_version").to_pylist(),
        ours.column("_commit_timestamp").cast(pa.int64()).to_pylist(),
        strict=True,
    ):
        assert ts == times[version] * 1000


def test_dv_deletes_become_delete_rows(corpus: Path) -> None:
    table = lakecore.open(str(corpus / "delta" / "deltars__table-with-dv-small"))
    changes = table.changes(1, 1)
    assert changes.num_rows > 0
    assert set(changes.column("_change_type").to_pylist()) == {"delete"}
    before = table.to_arrow(version=0).num_rows
    after = table.to_arrow(version=1).num_rows
    assert changes.num_rows == before - after


def test_range_checks(corpus: Path) -> None:
    table = lakecore.open(str(corpus / "delta" / "deltars__cdf-table"))
    with pytest.raises(VersionNotFoundError):
        table.changes(3, 1)
    with pytest.raises(VersionNotFoundError):
        table.changes(0, 99)


@pytest.mark.parametrize("dvs", [False, True])
def test_a_restore_before_a_delete_inserts_the_rows_it_brings_back(
    tmp_path: Path, dvs: bool
) -> None:
    """Restoring to the version before a delete: the rows it brings back are inserts (with
    deletion vectors: the re-added file's smaller vector). Fixed in session 12; was: with
    deletion vectors only newly deleted rows were derived, so the feed of the restore was
    empty and its readers (incremental migration) never saw the rows again."""
    props = {"delta.enableChangeDataFeed": "true"}
    if dvs:
        props["delta.enableDeletionVectors"] = "true"
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    table = lakecore.create(str(tmp_path / "t"), schema, properties=props)
    table.append(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=schema))
    before = table.version
    table.delete("id = 2")
    table.delete("id = 3")
    restored = table.restore(before).version
    changes = table.changes(restored, restored)
    net: dict[int, int] = {}
    for i, kind in zip(changes["id"].to_pylist(), changes["_change_type"].to_pylist(), strict=True):
        net[i] = net.get(i, 0) + (1 if kind == "insert" else -1)
    assert {i: n for i, n in net.items() if n} == {2: 1, 3: 1}
    if dvs:  # the file comes back with its older vector: exactly the two rows
        assert changes.num_rows == 2
    assert sorted(table.to_arrow().column("id").to_pylist()) == [1, 2, 3]
