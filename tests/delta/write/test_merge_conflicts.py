"""A MERGE's conflict check asks the question its pruning asked: the source's key range."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import lakecore
from lakecore.model.merge import MergeClauses

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
UPSERT = MergeClauses(matched_update_all=True, insert_all=True)


def rows(*ids: int, v: str = "old") -> pa.Table:
    return pa.table({"id": list(ids), "v": [v] * len(ids)}, schema=SCHEMA)


@pytest.fixture
def table(tmp_path: Path) -> lakecore.Table:
    t = lakecore.create(str(tmp_path / "t"), SCHEMA)
    t.append(rows(1, 2))
    return t


def staged_merge(table: lakecore.Table, source: pa.Table) -> lakecore.Transaction:
    """A transaction holding a merge of ``source`` on ``id``, staged but not committed."""
    tx = table.transaction()
    tx.stage(*table._format_writer(tx.snapshot).merge(source, ["id"], UPSERT))
    return tx


def test_a_merge_rebases_past_an_append_outside_its_key_range(table: lakecore.Table) -> None:
    merge = staged_merge(table, rows(1, v="new"))
    assert table.append(rows(1000)).version == 2
    assert merge.commit().version == 3  # the append's file [1000, 1000] cannot hold key 1
    got = sorted(table.to_arrow().to_pylist(), key=lambda r: r["id"])
    assert got == [
        {"id": 1, "v": "new"},
        {"id": 2, "v": "old"},
        {"id": 1000, "v": "old"},
    ]


def test_a_merge_conflicts_with_an_append_inside_its_key_range(table: lakecore.Table) -> None:
    merge = staged_merge(table, rows(1, 5, v="new"))
    assert table.append(rows(3)).version == 2  # 3 is no source key, but inside [1, 5]: may match
    with pytest.raises(lakecore.CommitConflictError) as info:
        merge.commit()
    assert info.value.winning_version == 2
    assert sorted(table.to_arrow().column("id").to_pylist()) == [1, 2, 3]


def test_the_recorded_predicate_quotes_names_and_parses_back() -> None:
    from lakecore.expr.sql import parse_sql
    from lakecore.planning.candidates import merge_read_predicate

    schema = pa.schema([("order id", pa.int64()), ("k", pa.string())])
    source = pa.table({"order id": [7, None, 3], "k": ["b", "z", "a"]}, schema=schema)
    text = merge_read_predicate(source, ["order id", "k"], schema)
    # The row with a NULL key matches nothing, so "z" is outside the range.
    assert text == (
        "`order id` IS NOT NULL AND k IS NOT NULL AND "
        "`order id` >= 3 AND `order id` <= 7 AND k >= 'a' AND k <= 'b'"
    )
    parse_sql(text)


def test_two_matched_actions_are_an_invalid_argument(table: lakecore.Table) -> None:
    # Several WHEN MATCHED clauses are allowed (issue 14), but an unconditional one must be
    # the last of its kind: the delete after it could never apply (as Spark/Delta refuse).
    builder = table.merge(rows(1), on="id").when_matched_update_all().when_matched_delete()
    with pytest.raises(lakecore.InvalidArgumentError, match="only the last WHEN MATCHED"):
        builder.execute()
    assert table.version == 1
