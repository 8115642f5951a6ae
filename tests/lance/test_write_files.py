"""Distributed Lance writes without Spark: the picklable ``DataFileWriter`` writes data files
in "tasks", ``add_files`` publishes them (append, overwrite, overwrite ``where``), ``discard``
removes what an uncommitted write wrote."""

from __future__ import annotations

import pickle
from pathlib import Path

import pyarrow as pa
import pytest

import lakecore
from lakecore.errors import ConstraintViolationError, SchemaError
from tests.lance.helpers import assert_same_as_pylance, lance

SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string())])


def rows(ids: list[int], part: str) -> pa.Table:
    return pa.table({"id": ids, "part": [part] * len(ids)}, schema=SCHEMA)


def distributed(table: lakecore.Table, mode: str, where: str | None, *parts: pa.Table) -> int:
    with table.transaction() as tx:
        writer = table._format_writer(tx.snapshot)
        file_writer = pickle.loads(pickle.dumps(writer.file_writer(mode, where)))
        files = pa.concat_tables(file_writer.write(p, task) for task, p in enumerate(parts))
        tx.stage(*writer.add_files(file_writer, files, mode, where))
    assert tx.version is not None
    return int(tx.version)


def ids(path: Path) -> list[int]:
    return sorted(lance.dataset(str(path)).to_table().column("id").to_pylist())


def test_append_overwrite_and_overwrite_where(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = lakecore.create(str(path), SCHEMA, format="lance")
    distributed(table, "append", None, rows([1, 2], "a"), rows([3], "b"))
    assert ids(path) == [1, 2, 3] and len(lance.dataset(str(path)).get_fragments()) == 2
    distributed(table, "overwrite", "part = 'b'", rows([4, 5], "b"))
    assert ids(path) == [1, 2, 4, 5]
    distributed(table, "overwrite", None, rows([9], "c"))
    assert ids(path) == [9]
    assert assert_same_as_pylance(path) == 4


def test_bad_rows_and_discard(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = lakecore.create(str(path), SCHEMA, format="lance")
    writer = table._format_writer(table.snapshot())
    file_writer = writer.file_writer("overwrite", "part = 'b'")
    with pytest.raises(ConstraintViolationError):
        file_writer.write(rows([1], "a"), 0)
    with pytest.raises(SchemaError):
        file_writer.write(pa.table({"id": ["x"], "part": ["b"]}), 0)
    assert not (path / "data").exists() or not any((path / "data").iterdir())
    file_writer.write(rows([1], "b"), 0)
    file_writer.write(rows([2], "b"), 1)
    other = writer.file_writer("append", None)
    other.write(rows([3], "a"), 0)
    assert len(list((path / "data").iterdir())) == 3
    writer.discard(file_writer)
    writer.discard(file_writer)  # idempotent
    assert len(list((path / "data").iterdir())) == 1  # the other write's file stays
    with pytest.raises(ValueError):
        writer.file_writer("merge", None)
