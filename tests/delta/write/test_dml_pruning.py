"""Delta DML reads only the files the planner keeps (issue 10, item 2).

Two kinds of test: DELETE / UPDATE / MERGE / OVERWRITE ... WHERE give the rows the SQL
evaluator gives over the whole table (the reference: what DML did when it read every file),
on partitioned and unpartitioned tables, with and without deletion vectors, with NULLs, files
without stats and predicates the planner cannot read; and counting tests that wrap the storage
and assert which data files a one-row change opens.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lakecore
from lakecore.errors import CommitConflictError
from lakecore.expr.evaluate import evaluate_predicate
from lakecore.storage import open_storage
from lakecore.testing.faults import FaultyStorage

FILES = 40
PER_FILE = 10
REGIONS = ["eu", "us", "apac", None]
SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("region", pa.string()),
        ("name", pa.string()),
        ("value", pa.float64()),
    ]
)
DVS = {"delta.enableDeletionVectors": "true"}


def batch(i: int) -> pa.Table:
    """File ``i``: ids [10i, 10i + 10), one region, a NULL name in every third row."""
    ids = np.arange(i * PER_FILE, (i + 1) * PER_FILE, dtype=np.int64)
    return pa.table(
        {
            "id": ids,
            "region": [REGIONS[i % len(REGIONS)]] * PER_FILE,
            "name": [None if v % 3 == 0 else f"n{v % 7}" for v in ids.tolist()],
            "value": (ids % 13).astype(np.float64) / 13,
        },
        schema=SCHEMA,
    )


def build(root: Path, partitioned: bool, dvs: bool, files: int = FILES) -> pa.Table:
    """A table of ``files`` one-file appends; returns all its rows."""
    table = lakecore.create(
        str(root),
        SCHEMA,
        partition_by=["region"] if partitioned else [],
        properties=DVS if dvs else None,
    )
    for i in range(files):
        table.append(batch(i))
    return pa.concat_tables(batch(i) for i in range(files))


def drop_stats(root: Path, versions: list[int]) -> None:
    """Remove the stats of the add actions of commits ``versions`` (files without stats)."""
    for v in versions:
        path = root / "_delta_log" / f"{v:020d}.json"
        lines = []
        for line in path.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                action["add"].pop("stats", None)
            lines.append(json.dumps(action))
        path.write_text("\n".join(lines) + "\n")


def rows(table: pa.Table) -> list[tuple[Any, ...]]:
    cols = [table.column(n).to_pylist() for n in SCHEMA.names]
    return sorted(zip(*cols, strict=True), key=repr)


def current(root: Path) -> list[tuple[Any, ...]]:
    return rows(lakecore.open(str(root)).to_arrow().select(SCHEMA.names))


def matches(data: pa.Table, where: str) -> pa.Array:
    return pc.fill_null(evaluate_predicate(where, data), False).combine_chunks()


PREDICATES = [
    "id = 123",  # stats: one file
    "id >= 100 AND id < 135",  # stats: a range over four files
    "id IN (5, 305)",
    "NOT (id < 390)",
    "region = 'eu'",  # a partition (or, unpartitioned, stats on region)
    "region IS NULL",  # the NULL partition
    "region = 'eu' AND id < 50",
    "region != 'eu'",  # NULL regions do not match
    "name IS NULL",  # NULLs in a data column
    "name = 'n3' OR id = 7",
    "value > 0.9",
    "upper(region) = 'US'",  # pruning cannot reason about it (may match): every file is read
    "id = 100000",  # no file
]
CASES = [(p, d, w) for p in (False, True) for d in (False, True) for w in PREDICATES]
TABLE_FILES = 12


def test_case_count() -> None:
    assert len(CASES) == 52


@pytest.fixture(scope="module")
def twelve(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[bool, bool], Path]:
    """``TABLE_FILES``-file tables: (partitioned, dvs) -> a path to copy from (built once,
    not once per case)."""
    out = {}
    for partitioned in (False, True):
        for dvs in (False, True):
            root = tmp_path_factory.mktemp(f"twelve-{partitioned}-{dvs}")
            build(root, partitioned, dvs, TABLE_FILES)
            out[partitioned, dvs] = root
    return out


def fresh_twelve(
    twelve: dict[tuple[bool, bool], Path], partitioned: bool, dvs: bool, tmp_path: Path
) -> tuple[Path, pa.Table]:
    """A copy of the ``TABLE_FILES``-file table in ``tmp_path``, and all its rows."""
    root = copy(twelve[partitioned, dvs], tmp_path)
    return root, pa.concat_tables(batch(i) for i in range(TABLE_FILES))


@pytest.mark.parametrize(("partitioned", "dvs", "where"), CASES)
def test_delete_same_rows(
    twelve: dict[tuple[bool, bool], Path], tmp_path: Path, partitioned: bool, dvs: bool, where: str
) -> None:
    root, data = fresh_twelve(twelve, partitioned, dvs, tmp_path)
    drop_stats(root, [3, 6])  # two files without stats: they must be read
    lakecore.open(str(root)).delete("id % 5 = 1")  # deletion vectors (or rewrites) first
    data = data.filter(pc.invert(matches(data, "id % 5 = 1")))
    lakecore.open(str(root)).delete(where)
    assert current(root) == rows(data.filter(pc.invert(matches(data, where))))


@pytest.mark.parametrize(("partitioned", "dvs", "where"), CASES)
def test_update_same_rows(
    twelve: dict[tuple[bool, bool], Path], tmp_path: Path, partitioned: bool, dvs: bool, where: str
) -> None:
    root, data = fresh_twelve(twelve, partitioned, dvs, tmp_path)
    drop_stats(root, [2, 9])
    lakecore.open(str(root)).update({"name": "'changed'", "value": "value + 1"}, where)
    hit = matches(data, where)
    expected = data.set_column(2, "name", pc.if_else(hit, "changed", data.column("name")))
    expected = expected.set_column(
        3, "value", pc.if_else(hit, pc.add(data.column("value"), 1.0), data.column("value"))
    )
    assert current(root) == rows(expected)


@pytest.mark.parametrize(("partitioned", "dvs"), [(False, False), (True, True), (True, False)])
def test_overwrite_where_same_rows(tmp_path: Path, partitioned: bool, dvs: bool) -> None:
    data = build(tmp_path, partitioned, dvs, TABLE_FILES)
    drop_stats(tmp_path, [1, 5])  # file 4 (region eu) has no stats
    new = batch(1000).set_column(1, "region", pa.array(["eu"] * PER_FILE))
    lakecore.open(str(tmp_path)).overwrite(new, where="region = 'eu'")
    kept = data.filter(pc.invert(matches(data, "region = 'eu'")))
    assert current(tmp_path) == rows(pa.concat_tables([kept, new]))


@pytest.mark.parametrize(("partitioned", "dvs"), [(False, False), (True, True), (False, True)])
def test_merge_same_rows(tmp_path: Path, partitioned: bool, dvs: bool) -> None:
    data = build(tmp_path, partitioned, dvs, TABLE_FILES)
    drop_stats(tmp_path, [4])  # a file without stats is always a candidate
    source = pa.table(
        {
            "id": pa.array([15, 16, 33, None, 5000], pa.int64()),
            "region": REGIONS[1:2] * 5,
            "name": ["s"] * 5,
            "value": [9.0] * 5,
        }
    )
    table = lakecore.open(str(tmp_path))
    table.merge(source, on="id").when_matched_update_all().when_not_matched_insert_all().execute()
    hit = pc.is_in(data.column("id"), pa.array([15, 16, 33]))
    expected = pa.concat_tables([data.filter(pc.invert(hit)), source])
    assert current(tmp_path) == rows(expected)


def test_merge_delete_null_and_nan_keys(tmp_path: Path) -> None:
    schema = pa.schema([("k", pa.float64()), ("v", pa.int64())])
    table = lakecore.create(str(tmp_path), schema)
    for i in range(4):
        table.append(pa.table({"k": [float(i), float("nan") if i == 3 else None], "v": [i, i]}))
    # NaN keys match NaN (an Arrow equi-join); the key range must not prune the NaN file.
    source = pa.table({"k": [float("nan"), 1.0], "v": [0, 0]})
    lakecore.open(str(tmp_path)).merge(source, on="k").when_matched_delete().execute()
    left = lakecore.open(str(tmp_path)).to_arrow()
    assert sorted(left.column("v").to_pylist()) == [0, 0, 1, 2, 2, 3]  # (1, 1), (NaN, 3) gone


# ------------------------------------------------------------------------------ counting


def counted(root: Path) -> tuple[lakecore.Table, FaultyStorage]:
    store = FaultyStorage(open_storage(str(root)))
    return lakecore.open(str(root), storage=store), store


def data_files_opened(store: FaultyStorage) -> set[str]:
    return {
        c.path
        for c in store.calls
        if c.method in ("open_input", "read")
        and c.path.endswith(".parquet")
        and "_delta_log" not in c.path
    }


@pytest.fixture(scope="module")
def forty(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[bool, bool], Path]:
    """40-file tables: (partitioned, dvs) -> a path to copy from."""
    out = {}
    for partitioned, dvs in [(False, False), (True, True)]:
        root = tmp_path_factory.mktemp(f"forty-{partitioned}-{dvs}")
        build(root, partitioned, dvs)
        out[partitioned, dvs] = root
    return out


def copy(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst / "t")
    return dst / "t"


KINDS = [(False, False), (True, True)]


@pytest.mark.parametrize(("partitioned", "dvs"), KINDS)
def test_one_row_delete_opens_one_file(
    tmp_path: Path, forty: dict[tuple[bool, bool], Path], partitioned: bool, dvs: bool
) -> None:
    root = copy(forty[partitioned, dvs], tmp_path)
    table, store = counted(root)
    table.delete("id = 123")
    assert len(data_files_opened(store)) == 1
    assert 123 not in lakecore.open(str(root)).to_arrow().column("id").to_pylist()


@pytest.mark.parametrize(("partitioned", "dvs"), KINDS)
def test_one_row_update_opens_one_file(
    tmp_path: Path, forty: dict[tuple[bool, bool], Path], partitioned: bool, dvs: bool
) -> None:
    root = copy(forty[partitioned, dvs], tmp_path)
    table, store = counted(root)
    table.update({"name": "'x'"}, "id = 251")
    assert len(data_files_opened(store)) == 1
    got = lakecore.open(str(root)).scan("id = 251").to_arrow()
    assert got.column("name").to_pylist() == ["x"]


@pytest.mark.parametrize(("partitioned", "dvs"), KINDS)
def test_one_row_merge_opens_one_file(
    tmp_path: Path, forty: dict[tuple[bool, bool], Path], partitioned: bool, dvs: bool
) -> None:
    root = copy(forty[partitioned, dvs], tmp_path)
    table, store = counted(root)
    source = pa.table({"id": pa.array([77], pa.int64()), "value": [5.0]})
    table.merge(source, on="id").when_matched_update({"value": "source.value"}).execute()
    assert len(data_files_opened(store)) == 1
    got = lakecore.open(str(root)).scan("id = 77").to_arrow()
    assert got.column("value").to_pylist() == [5.0]


def test_merge_with_only_null_keys_opens_nothing(
    tmp_path: Path, forty: dict[tuple[bool, bool], Path]
) -> None:
    root = copy(forty[False, False], tmp_path)
    table, store = counted(root)
    source = pa.table({"id": pa.array([None], pa.int64()), "value": [5.0]})
    table.merge(source, on="id").when_matched_delete().when_not_matched_insert_all().execute()
    assert data_files_opened(store) == set()
    assert lakecore.open(str(root)).to_arrow().num_rows == FILES * PER_FILE + 1


@pytest.mark.parametrize("dvs", [False, True])
def test_partition_delete_and_overwrite_open_no_data_file(
    tmp_path: Path, forty: dict[tuple[bool, bool], Path], dvs: bool
) -> None:
    src = forty[True, True]
    if not dvs:
        src = tmp_path / "plain"
        build(src, partitioned=True, dvs=False, files=8)
    root = copy(src, tmp_path)
    before = lakecore.open(str(root)).to_arrow()
    table, store = counted(root)
    new = batch(1000).set_column(1, "region", pa.array(["us"] * PER_FILE))
    table.overwrite(new, where="region = 'us'")
    assert data_files_opened(store) == set()
    store.reset()
    lakecore.open(str(root), storage=store).delete("region = 'eu' OR region IS NULL")
    assert data_files_opened(store) == set()
    after = lakecore.open(str(root)).to_arrow()
    kept = before.filter(pc.equal(before.column("region"), "apac"))
    assert rows(after.select(SCHEMA.names)) == rows(
        pa.concat_tables([kept.select(SCHEMA.names), new])
    )


def test_partition_delete_after_deletion_vector(tmp_path: Path) -> None:
    """A file whose rows were partly deleted (a DV) goes whole; one fully deleted is kept."""
    build(tmp_path, partitioned=True, dvs=True, files=8)
    table = lakecore.open(str(tmp_path))
    table.delete("id < 5")  # file 0 (eu): a DV
    table.delete("id >= 40 AND id < 50")  # file 4 (eu): every row gone, still live with a DV
    lakecore.open(str(tmp_path)).delete("region = 'eu'")
    left = lakecore.open(str(tmp_path)).to_arrow()
    assert "eu" not in left.column("region").to_pylist()
    assert left.num_rows == 6 * PER_FILE


# ------------------------------------------------------------------------------ conflicts


def test_conflict_check_prunes_winner_files_by_stats(tmp_path: Path) -> None:
    """A concurrent append whose stats exclude the read predicate does not conflict; one that
    may hold matching rows does (the planner's question, asked of the winner's files)."""
    build(tmp_path, partitioned=False, dvs=False, files=4)
    table = lakecore.open(str(tmp_path))
    tx = table.transaction()
    tx.delete("id = 5")
    lakecore.open(str(tmp_path)).append(batch(50))  # ids 500..509: cannot match
    tx.commit()
    assert 5 not in lakecore.open(str(tmp_path)).to_arrow().column("id").to_pylist()

    tx = lakecore.open(str(tmp_path)).transaction()
    tx.delete("id = 6")
    lakecore.open(str(tmp_path)).append(batch(0))  # ids 0..9: may match
    with pytest.raises(CommitConflictError):
        tx.commit()


# ------------------------------------------------------------------------------ front ends

TEXT = pa.schema([("x", pa.float32()), ("s", pa.string())])
ONCE_DISAGREED = [
    # Compared in double precision, as Spark compares a FLOAT with a decimal literal: the
    # stored float32(0.7) is below 0.7, so both files go (the planner used to round the
    # literal to float32 and keep that row).
    ("x < 0.7", []),
    # Spark SQL reads "s" as a string: TRUE for every row (the planner read a column)
    ("\"s\" = 's'", []),
    # Spark SQL reads '\n' as a line break (the planner read a backslash and an n)
    ("s = 'a\\nb'", [0.5]),
]


def test_once_disagreed_count() -> None:
    assert len(ONCE_DISAGREED) == 3


@pytest.mark.parametrize(("where", "left"), ONCE_DISAGREED)
def test_text_the_front_ends_read_differently_now_prunes_and_deletes_as_the_scan_reads(
    tmp_path: Path, where: str, left: list[float]
) -> None:
    """The text the two front ends used to read differently (the DML then read every file)
    is one tree now: the delete removes exactly the rows the scan returns for it."""
    table = lakecore.create(str(tmp_path), TEXT)
    table.append(pa.table({"x": pa.array([0.7], pa.float32()), "s": ["a\nb"]}, schema=TEXT))
    table.append(pa.table({"x": pa.array([0.5], pa.float32()), "s": ["s"]}, schema=TEXT))
    scanned = lakecore.open(str(tmp_path)).scan(where=where).to_arrow().column("x").to_pylist()
    lakecore.open(str(tmp_path)).delete(where)
    got = lakecore.open(str(tmp_path)).to_arrow().column("x").to_pylist()
    assert sorted(got) == pytest.approx(left)
    assert sorted(got + scanned) == pytest.approx([0.5, 0.7])


@pytest.mark.parametrize("dvs", [False, True])
def test_delete_everything_opens_no_data_file(tmp_path: Path, dvs: bool) -> None:
    build(tmp_path, partitioned=False, dvs=dvs, files=6)
    lakecore.open(str(tmp_path)).delete("id < 3")
    table, store = counted(tmp_path)
    table.delete()
    assert data_files_opened(store) == set()
    assert lakecore.open(str(tmp_path)).to_arrow().num_rows == 0
