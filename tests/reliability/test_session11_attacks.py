"""Attack review of session 11's changes (review11).

- ``lakecore_delta.stats.add_stats`` (file index, checkpoint writer): checkpoint
  ``stats_parsed`` taken wherever present, the text parsed only for the other adds and spread
  back; ``checkpoint_out`` renders text from struct-only adds.
- ``lakecore.storage.paths.contained_path``: ``//host/...`` is CorruptTableError.
- ``lakecore_hudi.write.java_floats``: Java's ``Double/Float.toString`` for float keys and
  partition values.
- ``lakecore.model.partition_paths.hive_texts``: one renderer of Hive partition text.

A case that shows a bug is ``xfail(strict=True)`` with the reason; the others pin behaviour.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakecore
from lakecore.model import files as fi

STRUCT = {"delta.checkpoint.writeStatsAsStruct": "true"}


def _checkpoint_path(t: lakecore.Table, version: int) -> str:
    return os.path.join(t.uri, "_delta_log", f"{version:020d}.checkpoint.parquet")


def _ids(t: lakecore.Table, where: str | None = None) -> list[Any]:
    table = lakecore.open(t.uri)
    rows = table.scan(where=where).to_arrow() if where else table.scan().to_arrow()
    return sorted(rows.column("id").to_pylist(), key=lambda v: (v is None, v))


# --- Delta stats_parsed: type widening ------------------------------------------------------


def _widened_table(tmp_path: Path) -> lakecore.Table:
    schema = pa.schema([("id", pa.int32()), ("s", pa.string())])
    t = lakecore.create(str(tmp_path / "w"), schema, properties=STRUCT)
    for i in range(3):
        t.append(pa.table({"id": [i * 10, i * 10 + 5], "s": ["a", "b"]}, schema=schema))
    t.checkpoint()  # stats_parsed minValues.id: int32
    with t.update_schema() as s:
        s.widen_type("id", pa.int64())
    return lakecore.open(t.uri)


@pytest.mark.xfail(
    strict=True,
    reason="checkpoint stats_parsed of an int column widened to long (typeWidening) keeps "
    "int32 min/max (stats._convert returns integer values uncast); merged with the int64 "
    "stats of a later JSON add, pc.if_else raises ArrowTypeError: Snapshot.files and every "
    "scan of the table fail after the first append following the widening",
)
def test_int_widened_to_long_struct_stats_then_an_append(tmp_path: Path) -> None:
    t = _widened_table(tmp_path)
    t.append(pa.table({"id": [2**40], "s": ["c"]}, schema=t.schema))
    assert _ids(t, "id >= 10 AND id < 20") == [10, 15]
    assert _ids(t, "id > 1000") == [2**40]


@pytest.mark.xfail(
    strict=True,
    reason="a checkpoint lakecore writes after widening int->long holds stats_parsed "
    "minValues/maxValues of the column as int32 (the old type, not the table's long), and "
    "the file index's min/max child is int32 for a long column",
)
def test_checkpoint_after_widening_types_struct_stats_as_the_schema(tmp_path: Path) -> None:
    t = _widened_table(tmp_path)
    assert t.snapshot().files().schema.field(fi.MIN).type.field("id").type == pa.int64()
    version = t.checkpoint()
    cp = pq.read_table(_checkpoint_path(t, version))
    parsed = cp.schema.field("add").type.field("stats_parsed").type
    assert parsed.field("minValues").type.field("id").type == pa.int64()


def test_widened_table_without_later_adds_still_scans(tmp_path: Path) -> None:
    t = _widened_table(tmp_path)
    assert _ids(t, "id >= 10 AND id < 20") == [10, 15]
    assert _ids(t) == [0, 5, 10, 15, 20, 25]
