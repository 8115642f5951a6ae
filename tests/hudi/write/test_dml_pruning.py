"""Hudi DML reads only the file slices the planner keeps (issue 10, item 2).

Two kinds of test: the same operations give the same rows as a Python model (CoW and MoR,
table versions 8 and 6, partitioned or not, with NULLs and slices with log files) read by both
lakecore and hudi-rs; and counting tests that measure which slices a one-row DML reads. The
file index of a table without a metadata table takes its stats from Parquet footers (read
exactly, without their ~430 KB bloom filter value), and an upsert or merge reads each remaining
footer once more for its key range and bloom filter (``lakecore_hudi.bloom_index``); so a slice
counts as *read* when bytes before its base file's footer (its data pages) were read, or
anything out of its log files.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lakecore
from lakecore.storage import open_storage
from lakecore.testing.faults import CountingStorage
from tests.hudi.write.helpers import SCHEMA, Row, assert_reads, create, model_of, rows, upsert
from tests.hudi.write.test_upsert_pruning import RangeStorage

GROUPS = 40
PER_GROUP = 2000  # rows per slice: base files of ~140 KB, more than a footer read


def _file_id(path: str) -> str:
    return os.path.basename(path).lstrip(".").split("_")[0]


def footer_size(storage: CountingStorage, path: str) -> int:
    """Bytes of one exact footer read of Parquet file ``path``: footer, length and magic."""
    size = storage.head(path).size
    return int.from_bytes(storage.read(path, size - 8, size - 4), "little") + 16


def slices_read(storage: RangeStorage) -> set[str]:
    """File ids of the slices whose data pages (bytes before the footer) were read."""
    out = set()
    for path, spans in dict(storage.ranges).items():
        if path.endswith(".parquet"):
            data_end = storage.head(path).size - footer_size(storage, path) + 8
            if any(start < data_end and start + n > 4 for start, n in spans):
                out.add(_file_id(path))
        elif ".log." in os.path.basename(path):
            out.add(_file_id(path))
    return out


def file_id_of(root: Path, key: int) -> str:
    """The file id of the slice holding record ``key``."""
    table = lakecore.open(str(root)).to_arrow(columns=["id", "_hoodie_file_name"])
    names = [n for i, n in zip(*table.to_pydict().values(), strict=True) if i == key]
    assert len(names) == 1
    return _file_id(names[0])


def big_table(root: Path, table_type: str = "COPY_ON_WRITE") -> None:
    """40 slices (one per city c00..c39) of 2,000 rows; slice k holds ids k*2000 .. +1999."""
    n = GROUPS * PER_GROUP
    data = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "name": [os.urandom(24).hex() for _ in range(n)],
            "ts": pa.array([1] * n, pa.int64()),
            "city": [f"c{i // PER_GROUP:02d}" for i in range(n)],
        },
        schema=SCHEMA,
    )
    create(root, table_type).append(data)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("big") / "t"
    big_table(root)
    return root


@pytest.fixture
def counted(template: Path, tmp_path: Path) -> tuple[Path, RangeStorage, lakecore.Table]:
    import shutil

    root = tmp_path / "t"
    shutil.copytree(template, root)
    storage = RangeStorage(open_storage(str(root)))
    return root, storage, lakecore.open(str(root), storage=storage)


KEY = 12345  # in slice c06
ONE_ROW = rows((KEY, "new", 9, "c06"))


def _count(root: Path) -> int:
    return lakecore.open(str(root)).to_arrow(columns=["id"]).num_rows


def _one(root: Path, key: int) -> list[Row]:
    return [r for r in _data(root) if r["id"] == key]


def _data(root: Path) -> list[Row]:
    return list(lakecore.open(str(root)).to_arrow(columns=SCHEMA.names).to_pylist())


def test_delete_one_row_reads_one_slice(counted: Any) -> None:
    root, storage, table = counted
    want = file_id_of(root, KEY)
    storage.reset()
    table.delete(f"id = {KEY}")
    assert slices_read(storage) == {want}
    assert _one(root, KEY) == []
    assert _count(root) == GROUPS * PER_GROUP - 1


def test_untouched_slices_give_only_their_footer(counted: Any) -> None:
    """The file index reads each footer exactly, not pyarrow's 64 KiB tail on top: on a
    400-slice table that tail alone was half the data (benchmarks/hudi_dml.py)."""
    root, storage, table = counted
    want = file_id_of(root, KEY)
    storage.reset()
    table.delete(f"id = {KEY}")
    others = {p: n for p, n in storage.bytes.items() if p.endswith(".parquet")}
    others = {p: n for p, n in others.items() if _file_id(p) != want}
    assert len(others) == GROUPS - 1
    assert all(n <= footer_size(storage, p) for p, n in others.items())


def test_update_one_row_reads_one_slice(counted: Any) -> None:
    root, storage, table = counted
    want = file_id_of(root, KEY)
    storage.reset()
    table.update({"name": "'x'"}, f"id = {KEY}")
    assert slices_read(storage) == {want}
    assert [r["name"] for r in _one(root, KEY)] == ["x"]


def test_upsert_one_row_reads_one_slice(counted: Any) -> None:
    root, storage, table = counted
    want = file_id_of(root, KEY)
    storage.reset()
    upsert(table, ONE_ROW)
    assert slices_read(storage) == {want}
    assert _one(root, KEY) == ONE_ROW.to_pylist()


def test_upsert_moving_partition_reads_only_the_key_slice(counted: Any) -> None:
    # The key lives in c06; the new row goes to c07: c06 must lose it, c07 is not read.
    root, storage, table = counted
    want = file_id_of(root, KEY)
    storage.reset()
    upsert(table, rows((KEY, "moved", 9, "c07")))
    assert slices_read(storage) == {want}
    assert [(r["name"], r["city"]) for r in _one(root, KEY)] == [("moved", "c07")]
    assert _count(root) == GROUPS * PER_GROUP


def test_merge_one_row_reads_one_slice(counted: Any) -> None:
    root, storage, table = counted
    want = file_id_of(root, KEY)
    storage.reset()
    table.merge(ONE_ROW, on="id").when_matched_update_all().when_not_matched_insert_all().execute()
    assert slices_read(storage) == {want}
    assert _one(root, KEY) == ONE_ROW.to_pylist()


def test_overwrite_one_partition_reads_one_slice(counted: Any) -> None:
    root, storage, table = counted
    want = file_id_of(root, 3 * PER_GROUP)
    storage.reset()
    table.overwrite(rows((1, "only", 1, "c03")), where="city = 'c03'")
    assert slices_read(storage) == {want}
    c03 = [r for r in _data(root) if r["city"] == "c03"]
    assert c03 == rows((1, "only", 1, "c03")).to_pylist()


def test_slices_with_log_files_are_read(tmp_path: Path) -> None:
    """MoR without a metadata table: a slice with log files has no stats, so it must be read."""
    root = tmp_path / "t"
    big_table(root, "MERGE_ON_READ")
    lakecore.open(str(root)).update({"name": "'u'"}, f"id = {3 * PER_GROUP}")  # c03 gets a log
    logged = file_id_of(root, 3 * PER_GROUP)
    storage = RangeStorage(open_storage(str(root)))
    table = lakecore.open(str(root), storage=storage)
    want = file_id_of(root, KEY)
    storage.reset()
    table.delete(f"id = {KEY}")
    assert slices_read(storage) == {want, logged}
    assert _one(root, KEY) == []
    assert _count(root) == GROUPS * PER_GROUP - 1


# ---------------------------------------------------------------- same rows as a model

CASES = [
    (kind, version, partitioned)
    for kind in ("COPY_ON_WRITE", "MERGE_ON_READ")
    for version in ("8", "6")
    for partitioned in (True, False)
]
RAN: list[tuple[str, str, bool]] = []


def _batches() -> list[pa.Table]:
    """Four appends (four slices when not partitioned), with NULL names and ts."""
    out = []
    for b in range(4):
        out.append(
            rows(
                *[
                    (
                        b * 10 + j,
                        None if j == 2 else f"n{b}{j}",
                        None if j == 3 else j,
                        ("x", "y", None)[j % 3],
                    )
                    for j in range(6)
                ]
            )
        )
    return out


@pytest.mark.parametrize(("kind", "version", "partitioned"), CASES)
def test_results_match_model(tmp_path: Path, kind: str, version: str, partitioned: bool) -> None:
    root = tmp_path / "t"
    table = create(root, kind, version, partitioned)
    model: dict[int, Row] = {}
    for batch in _batches():
        table.append(batch)
        model.update(model_of(batch))
    # delete by key (stats prune) and by a NULL-aware predicate
    table.delete("id = 11")
    del model[11]
    table.delete("name IS NULL")
    model = {k: r for k, r in model.items() if r["name"] is not None}
    # ts > 3 is unknown for NULL ts: those rows stay
    table.update({"name": "'big'"}, "ts > 3")
    for r in model.values():
        if r["ts"] is not None and r["ts"] > 3:
            r["name"] = "big"
    upsert(table, rows((21, "up", 50, "y"), (99, "new", 1, "x")))
    model[21] = {"id": 21, "name": "up", "ts": 50, "city": "y"}
    model[99] = {"id": 99, "name": "new", "ts": 1, "city": "x"}
    source = rows((31, "m", 60, "x"), (77, "ins", 1, None))
    table.merge(source, on="id").when_matched_update_all().when_not_matched_insert_all().execute()
    model.update(model_of(source))
    # a second write to a slice with log files (MoR) must still find its keys
    table.delete("id = 30")
    model.pop(30, None)
    table.overwrite(rows((5, "ow", 1, "x")), where="id >= 0 AND id < 10")
    model = {k: r for k, r in model.items() if not 0 <= k < 10}
    model[5] = {"id": 5, "name": "ow", "ts": 1, "city": "x"}
    assert_reads(root, model)
    RAN.append((kind, version, partitioned))


def test_all_model_cases_ran() -> None:
    assert len(CASES) == 8
    assert sorted(RAN) == sorted(CASES)


# ---------------------------------------------------------------- fallbacks and key shapes


def test_double_quoted_strings_prune_like_single_quoted_ones(counted: Any) -> None:
    # One Spark SQL front end: "c06" is a string for the planner and the row evaluator alike,
    # so the delete reads only the slice holding it (it read every slice while the planner
    # read "c06" as a column).
    root, storage, table = counted
    storage.reset()
    table.delete('city = "c06"')
    assert len(slices_read(storage)) == 1
    assert [r for r in _data(root) if r["city"] == "c06"] == []


def test_escapes_are_read_as_spark_reads_them(tmp_path: Path) -> None:
    # Spark SQL reads '\\n' as a line break, in pruning and in the row evaluator alike.
    table = create(tmp_path / "t", partitioned=False)
    table.append(rows((1, "x\ny", 1, "a")))
    table.append(rows((2, "zzz", 1, "a")))
    table.delete("name = 'x\\ny'")
    assert [r["id"] for r in table.to_arrow().to_pylist()] == [2]


def test_meta_column_predicate(counted: Any) -> None:
    root, _, table = counted
    table.delete(f"_hoodie_record_key = '{KEY}'")
    assert _one(root, KEY) == []
    assert _count(root) == GROUPS * PER_GROUP - 1


def test_key_range_only_for_keys_rendered_from_columns() -> None:
    from lakecore_hudi.write.candidates import key_range

    data = pa.table({"id": pa.array([3, 1, 2], pa.int64()), "k": ["b", "a", None]})
    schema = data.schema
    assert key_range(data, ["id"], "SIMPLE", schema) is not None
    # The key text is not the column's text:
    assert key_range(data, ["id"], "TIMESTAMP", schema) is None
    assert key_range(data, ["id"], None, schema) is None
    assert key_range(data, ["missing"], "SIMPLE", schema) is None
    assert key_range(data.slice(2), ["k"], "COMPLEX", schema) is None  # only a NULL: no bound
    both = key_range(data, ["id", "k"], "COMPLEX", schema)
    assert str(both) == "id >= 1 AND id <= 3 AND k >= 'a' AND k <= 'b'"


@pytest.mark.parametrize("kind", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_complex_key_upsert_and_merge(tmp_path: Path, kind: str) -> None:
    """Two key columns (COMPLEX keys ``id:1,name:a``): each column's range prunes, keys stay
    unique, hudi-rs reads the same rows."""
    root = tmp_path / "t"
    table = create(root, kind, record_key="id,name")
    model: dict[tuple[int, str], Row] = {}
    for b in range(3):
        batch = rows(*[(b * 10 + j, f"n{j}", j, ("x", "y")[b % 2]) for j in range(4)])
        table.append(batch)
        model.update({(r["id"], r["name"]): r for r in batch.to_pylist()})
    upsert(table, rows((11, "n1", 7, "y")))  # moves from x to y
    model[(11, "n1")] = {"id": 11, "name": "n1", "ts": 7, "city": "y"}
    source = rows((20, "n0", 8, "x"), (20, "zz", 1, "x"))
    table.merge(
        source, on=["id", "name"]
    ).when_matched_update_all().when_not_matched_insert_all().execute()
    model.update({(r["id"], r["name"]): r for r in source.to_pylist()})
    table.delete("id = 1 AND name = 'n1'")
    del model[(1, "n1")]
    got = lakecore.open(str(root)).to_arrow(columns=[*SCHEMA.names, "_hoodie_record_key"])
    keys = got.column("_hoodie_record_key").to_pylist()
    assert len(keys) == len(set(keys)) == len(model)
    want = sorted(model.values(), key=lambda r: (r["id"], r["name"]))
    assert sorted(got.select(SCHEMA.names).to_pylist(), key=lambda r: (r["id"], r["name"])) == want
    from tests.hudi.write.helpers import hudi_rs_rows

    assert sorted(hudi_rs_rows(root), key=lambda r: (r["id"], r["name"])) == want


@pytest.mark.parametrize(
    "content", [b"", b"PAR1", b"PAR1" + b"x" * 100, b"PAR1" + b"\xff\xff\xff\x7fPAR1"]
)
def test_footer_of_a_damaged_file_is_corrupt(tmp_path: Path, content: bytes) -> None:
    from lakecore_hudi.mdt.footer_stats import footer_stats

    from lakecore.errors import CorruptTableError

    (tmp_path / "f.parquet").write_bytes(content)
    with pytest.raises(CorruptTableError, match="not a readable Parquet file"):
        footer_stats(open_storage(str(tmp_path)), ["f.parquet"], SCHEMA)
