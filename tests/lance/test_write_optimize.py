"""Compaction of Lance datasets (``Table.optimize``, a Lance ``Rewrite``) and commits racing
compactions: rows never change, pylance reads every version identically."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import lakecore
from lakecore import Table
from lakecore.errors import CommitConflictError
from tests.lance.helpers import assert_same_as_pylance, lance, sort_rows

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def rows(ids: list[int] | range) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "v": [f"v{i}" for i in ids]}, schema=SCHEMA)


def small_fragments(path: Path) -> Table:
    table = lakecore.create(str(path), SCHEMA, format="lance")
    for start in range(0, 40, 10):
        table.append(rows(range(start, start + 10)))
    table.delete("id % 10 = 0")
    return table


def ids(path: Path) -> list[int]:
    return sorted(lance.dataset(str(path)).to_table().column("id").to_pylist())


def test_optimize_rewrites_small_fragments_like_compact_files(tmp_path: Path) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    table = small_fragments(ours)
    small_fragments(theirs)
    before = ids(ours)
    version = table.optimize().version
    lance.dataset(str(theirs)).optimize.compact_files()
    assert ids(ours) == before == ids(theirs)
    assert len(lance.dataset(str(ours)).get_fragments()) == 1
    assert len(lance.dataset(str(theirs)).get_fragments()) == 1
    assert table.history()[0].operation == "rewrite"
    assert table.changes(version).num_rows == 0  # a rewrite changes no rows
    assert table.optimize().version == version  # nothing left to compact: no new version
    assert assert_same_as_pylance(ours) == 7


def test_optimize_with_a_target_size_keeps_rows(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = small_fragments(path)
    table.optimize(target_file_size=1)  # no fragment is smaller than one row: nothing to do
    assert len(lance.dataset(str(path)).get_fragments()) == 4
    table.optimize(target_file_size=_bytes_for_rows(path, 20))  # ~20 rows a fragment
    fragments = lance.dataset(str(path)).get_fragments()
    assert len(fragments) == 2 and sum(f.count_rows() for f in fragments) == 36
    assert sort_rows(table.to_arrow()).equals(sort_rows(rows([i for i in range(40) if i % 10])))
    assert assert_same_as_pylance(path) == 7


def test_commits_racing_a_compaction(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = small_fragments(path)
    table.append(pa.table({"id": list(range(100, 2100)), "v": ["big"] * 2000}, schema=SCHEMA))
    # (the 2,000-row fragment is not small against a 1,000-row target: it is not rewritten)
    deleting, appending, conflicting = table.transaction(), table.transaction(), table.transaction()
    deleting.delete("id = 150")  # only the big fragment
    appending.append(rows([500]))
    conflicting.delete("id = 1")  # a fragment the compaction rewrites
    table.optimize(target_file_size=_bytes_for_rows(path, 1000))
    deleting.commit()
    appending.commit()
    with pytest.raises(CommitConflictError):
        conflicting.commit()
    got = ids(path)
    assert 150 not in got and 500 in got and 1 in got and len(got) == 36 + 2000 - 1 + 1
    assert assert_same_as_pylance(path) == 10


def _bytes_for_rows(path: Path, count: int) -> int:
    ds = lance.dataset(str(path))
    size = sum(f.data_files()[0].file_size_bytes for f in ds.get_fragments())
    return max(1, size * count // ds.count_rows())
