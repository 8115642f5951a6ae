"""MERGE on key columns whose names need quoting: the read predicate the conflict check parses
is Spark SQL with backticks (a bare ``order id IS NOT NULL`` did not parse)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import lakecore
from lakecore.errors import CommitConflictError
from lakecore.expr.sql import parse_sql
from lakecore.model.merge import MergeClauses
from lakecore.plugins import load_registry

SCHEMA = pa.schema([("order id", pa.int64()), ("v", pa.string())])


# Delta only: a Hudi column name must be an Avro name ([A-Za-z_][A-Za-z0-9_]*), which never
# needs quoting; Hudi refuses "order id" at create (tests/hudi/test_avro_schema.py).
@pytest.mark.parametrize("fmt", ["delta"])
def test_merge_read_predicate_parses(tmp_path: Path, fmt: str) -> None:
    table = lakecore.create(str(tmp_path / "t"), SCHEMA, fmt)
    table.append(pa.table({"order id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    snapshot = lakecore.open(table.uri).snapshot()
    writer = load_registry().get(fmt).writer(table.storage, snapshot)
    source = pa.table({"order id": [1], "v": ["z"]}, schema=SCHEMA)
    _, info = writer.merge(source, ["order id"], MergeClauses(matched_update_all=True))
    # The source's key range is recorded too: the conflict check prunes with it (B1).
    assert info.read_predicate == ("`order id` IS NOT NULL AND `order id` >= 1 AND `order id` <= 1")
    parse_sql(info.read_predicate)


def test_delta_merge_with_a_quoted_key_checks_conflicts(tmp_path: Path) -> None:
    table = lakecore.create(str(tmp_path / "t"), SCHEMA, "delta")
    table.append(pa.table({"order id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    opened = lakecore.open(table.uri)
    tx = opened.transaction()
    writer = load_registry().get("delta").writer(opened.storage, tx.snapshot)
    source = pa.table({"order id": [1], "v": ["z"]}, schema=SCHEMA)
    tx.stage(*writer.merge(source, ["order id"], MergeClauses(matched_update_all=True)))
    lakecore.open(table.uri).append(pa.table({"order id": [1], "v": ["c"]}, schema=SCHEMA))
    with pytest.raises(CommitConflictError):
        tx.commit()
