"""A Hudi DML whose predicate keeps some partitions loads only their statistics (issue 15).

DML candidate selection (``lakecore_hudi.write.candidates``) prunes on the scan planner's
partition-scoped index (``HudiSnapshotSource.files_for_predicate``) when its predicate names
a partition column:

- without a metadata table, a one-partition delete or update opens only that partition's base files
  (footers and data); a delete without a partition restriction still reads every footer;
- with a metadata table whose ``column_stats`` were compacted into many-block base HFiles, a
  one-partition delete reads a fraction of their bytes, a delete without a partition
  restriction all of them;
- the slices chosen equal those the full index chooses (delete, update and overwrite
  predicates), and the table after the DML reads as a Python model, in lakecore and hudi-rs.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from lakecore_hudi.write import candidates

import lakecore
from lakecore.storage import open_storage
from tests.hudi.test_scoped_column_stats import _latest_base_files, _partitions_table
from tests.hudi.write.helpers import SCHEMA, assert_reads, create, hudi_rs_table, model_of
from tests.hudi.write.test_upsert_pruning import RangeStorage

PARTITIONS = 50
PER_PARTITION = 4  # ids k*10 .. k*10+3 live in city c{k:02d}
STATS_PARTITIONS = 200  # column_stats base HFiles of ~105 KB: most blocks can stay unread


def _rows() -> pa.Table:
    ids = [k * 10 + j for k in range(PARTITIONS) for j in range(PER_PARTITION)]
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": [f"n{i}" for i in ids],
            "ts": pa.array([1] * len(ids), pa.int64()),
            "city": [f"c{i // 10:02d}" for i in ids],
        },
        schema=SCHEMA,
    )


@pytest.fixture(scope="module", params=["COPY_ON_WRITE", "MERGE_ON_READ"])
def footer_template(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    root = tmp_path_factory.mktemp("scoped") / "t"
    create(root, request.param).append(_rows())
    return root


@pytest.fixture
def footer_table(footer_template: Path, tmp_path: Path) -> Path:
    root = tmp_path / "t"
    shutil.copytree(footer_template, root)
    return root


def _parquet_touched(root: Path, where: str, update: bool = False) -> set[str]:
    """Partitions of the Parquet files a ``delete(where)`` (or an update) opened or read."""
    storage = RangeStorage(open_storage(str(root)))
    table = lakecore.open(str(root), storage=storage)
    storage.reset()
    if update:
        table.update({"name": "'u'"}, where)
    else:
        table.delete(where)
    return {p.rsplit("/", 2)[-2] for p in storage.ranges if p.endswith(".parquet")}


def test_a_one_partition_delete_opens_that_partitions_files_only(footer_table: Path) -> None:
    model = model_of(_rows())
    touched = _parquet_touched(footer_table, "city = 'c07' AND id = 71")
    assert touched == {"city=c07"}
    del model[71]
    assert_reads(footer_table, model)


def test_a_one_partition_update_opens_that_partitions_files_only(footer_table: Path) -> None:
    model = model_of(_rows())
    touched = _parquet_touched(footer_table, "city = 'c07' AND id = 71", update=True)
    assert touched == {"city=c07"}
    model[71] = {**model[71], "name": "u"}
    assert_reads(footer_table, model)


def test_a_one_partition_overwrite_opens_that_partitions_files_only(footer_table: Path) -> None:
    """Overwrite-where's metrics (live records of the replaced slices) come from the index of
    the replaced slices' partitions, not the whole table's."""
    storage = RangeStorage(open_storage(str(footer_table)))
    table = lakecore.open(str(footer_table), storage=storage)
    storage.reset()
    new = _rows().filter(pa.compute.equal(_rows().column("city"), "c07")).slice(0, 1)
    result = table.overwrite(new, where="city = 'c07'")
    touched = {p.rsplit("/", 2)[-2] for p in storage.ranges if p.endswith(".parquet")}
    assert touched == {"city=c07"}
    assert result.metrics.rows_deleted == PER_PARTITION, result.metrics
    model = {k: v for k, v in model_of(_rows()).items() if v["city"] != "c07"}
    model.update(model_of(new))
    assert_reads(footer_table, model)


def test_a_delete_without_a_partition_restriction_reads_every_footer(
    footer_table: Path,
) -> None:
    model = model_of(_rows())
    touched = _parquet_touched(footer_table, "id = 71 OR city = 'c03'")
    assert touched == {f"city=c{k:02d}" for k in range(PARTITIONS)}
    for k in [71, 30, 31, 32, 33]:
        del model[k]
    assert_reads(footer_table, model)


WHERES = [
    "city = 'c07' AND id = 71",
    "city IN ('c07', 'c12') AND id > 72",
    "city >= 'c45' AND name <> 'n451'",
    "city = 'nowhere'",
    "city = 'c07' OR id = 3",  # the partition stage keeps every slice
    "id = 121",  # no partition column: the full index
]


def test_the_scoped_index_chooses_the_full_index_slices(
    footer_template: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cases = 0
    for where in WHERES:
        scoped = candidates.candidate_slices(lakecore.open(str(footer_template)).snapshot(), where)
        with monkeypatch.context() as m:
            m.setattr(candidates, "_index_for", lambda source, *_: source.files())
            full = candidates.candidate_slices(
                lakecore.open(str(footer_template)).snapshot(), where
            )
        assert scoped == full, where
        cases += 1
    assert cases == len(WHERES)
    # The pruning is real: one partition's slice of 50 (CoW: one slice per partition).
    one = candidates.candidate_slices(lakecore.open(str(footer_template)).snapshot(), WHERES[0])
    assert len(one) == 1


@pytest.mark.parametrize(
    ("op", "where", "gone", "renamed"),
    [
        ("delete", "city IN ('c07', 'c12') AND id > 72", [73, 120, 121, 122, 123], []),
        ("update", "city = 'c45' AND id <> 451", [], [450, 452, 453]),
    ],
)
def test_scoped_dml_reads_as_the_model(
    footer_table: Path, op: str, where: str, gone: list[int], renamed: list[int]
) -> None:
    table = lakecore.open(str(footer_table))
    model = model_of(_rows())
    if op == "delete":
        table.delete(where)
    else:
        table.update({"name": "'u'"}, where)
    for k in gone:
        del model[k]
    for k in renamed:
        model[k] = {**model[k], "name": "u"}
    assert_reads(footer_table, model)


# ---------------------------------------------------------------- with column_stats


def _column_stats_read(root: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> int:
    """Bytes of ``column_stats`` base HFiles a ``delete(where)`` read."""
    table = lakecore.open(str(root))
    storage_type = type(table.storage)
    real_read = storage_type.read
    read = [0]

    def counting(self: Any, path: str, start: int | None = None, end: int | None = None) -> Any:
        data = real_read(self, path, start, end)
        if ".hoodie/metadata/column_stats/" in path and path.endswith(".hfile"):
            read[0] += len(data)
        return data

    with monkeypatch.context() as m:
        m.setattr(storage_type, "read", counting)
        table.delete(where)
    return read[0]


def test_a_one_partition_delete_reads_a_fraction_of_the_column_stats(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _partitions_table(tmp_path, monkeypatch, STATS_PARTITIONS)
    base = sum(p.stat().st_size for p in _latest_base_files(root))
    before = lakecore.open(str(root)).to_arrow()
    keys = before.column("_hoodie_record_key").to_pylist()
    assert "N00007" in keys and "N00008" in keys
    one = _column_stats_read(root, monkeypatch, "city = 'c007' AND uuid = 'N00007'")
    whole = _column_stats_read(root, monkeypatch, "uuid = 'N00008'")
    assert whole >= base  # the full index loads the base HFiles whole
    assert one < base / 2, (one, base)
    assert one < whole / 3, (one, whole)
    print(f"column_stats base HFile bytes: one partition {one}, whole {whole}, files {base}")
    after = lakecore.open(str(root)).to_arrow()
    assert sorted(after.column("_hoodie_record_key").to_pylist()) == sorted(
        k for k in keys if k not in ("N00007", "N00008")
    )
    # hudi-rs reads the same records after both deletes.
    theirs = hudi_rs_table(root).column("_hoodie_record_key").to_pylist()
    assert sorted(theirs) == sorted(after.column("_hoodie_record_key").to_pylist())
