"""Inserts spread over new file groups by size (Hudi's insert split sizing), read back
identically by lakecore and hudi-rs."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from lakecore_hudi.write.sizing import split

import lakecore
from lakecore.errors import CorruptTableError
from tests.hudi.write.helpers import SCHEMA, assert_reads, create, model_of


def _set_properties(root: Path, **values: str) -> None:
    """Write sizing settings into hoodie.properties (as a Hudi writer config would hold)."""
    path = root / ".hoodie" / "hoodie.properties"
    text = path.read_text()
    path.write_text(text + "".join(f"{k}={v}\n" for k, v in values.items()))


def _rows(n: int, city: str = "x", start: int = 0) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {"id": ids, "name": [f"n{i}" for i in ids], "ts": [1] * n, "city": [city] * n},
        schema=SCHEMA,
    )


def _groups(t: lakecore.Table) -> dict[str, int]:
    files = t.snapshot().files()
    out: dict[str, int] = {}
    for path in files.column("path").to_pylist():
        partition = path.rpartition("/")[0]
        out[partition] = out.get(partition, 0) + 1
    return out


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_inserts_spread_over_file_groups_of_the_max_file_size(
    tmp_path: Path, table_type: str
) -> None:
    t = create(tmp_path, table_type)
    # No commit wrote enough to measure: the 1024-byte estimate gives 10 records per group.
    _set_properties(tmp_path, **{"hoodie.parquet.max.file.size": "10240"})
    data = pa.concat_tables([_rows(35, "x"), _rows(7, "y", start=100)])
    t.append(data)
    t = lakecore.open(str(tmp_path))
    assert _groups(t) == {"city=x": 4, "city=y": 1}
    sizes = sorted(t.snapshot().files().column("record_count").to_pylist())
    assert sizes == [7, 8, 9, 9, 9]
    assert_reads(tmp_path, model_of(data))


def test_the_average_record_size_comes_from_a_large_enough_commit(tmp_path: Path) -> None:
    t = create(tmp_path)
    t.append(_rows(50))
    written = t.snapshot().files().column("size").to_pylist()[0]
    per_record = -(-written // 50)
    # The first commit now counts as large enough: groups take max size / its record size.
    _set_properties(
        tmp_path,
        **{
            "hoodie.parquet.small.file.limit": "1",
            "hoodie.parquet.max.file.size": str(per_record * 20),
        },
    )
    t = lakecore.open(str(tmp_path))
    t.append(_rows(45, "y", start=1000))
    assert lakecore.open(str(tmp_path)).snapshot().files().num_rows == 1 + 3
    assert_reads(tmp_path, model_of(pa.concat_tables([_rows(50), _rows(45, "y", start=1000)])))


def test_a_bad_setting_is_a_corrupt_table_error_before_any_file(tmp_path: Path) -> None:
    create(tmp_path)
    _set_properties(tmp_path, **{"hoodie.parquet.max.file.size": "big"})
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    with pytest.raises(CorruptTableError, match=r"hoodie\.parquet\.max\.file\.size"):
        lakecore.open(str(tmp_path)).append(_rows(3))
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before


@pytest.mark.parametrize(("n", "per_file", "sizes"), [(0, 5, [0]), (5, 5, [5]), (11, 5, [4, 4, 3])])
def test_split_is_even(n: int, per_file: int, sizes: list[int]) -> None:
    assert [b.num_rows for b in split(_rows(n), per_file)] == sizes
