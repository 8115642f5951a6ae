"""Table history: one entry per commit, newest first, from each commit's commitInfo."""

from __future__ import annotations

import lakecore

from .builders import BASE_TIME_MS, STEP_MS, DeltaTableBuilder, add, commit_info
from .conftest import ID_FIELDS


def history_table(builder: DeltaTableBuilder) -> None:
    builder.init(ID_FIELDS)
    builder.commit(
        1,
        commit_info("WRITE", {"mode": "Append", "partitionBy": "[]"}, engineInfo="test/1.0"),
        add("a.parquet"),
    )
    builder.commit(
        2,
        add("b.parquet"),
        commit_info("DELETE", {"predicate": '["(id > 3)"]'}, isBlindAppend=False),
    )
    builder.commit(3, add("c.parquet"))  # no commitInfo at all
    builder.commit(
        4,
        commit_info("OPTIMIZE", {"predicate": "[]", "zOrderBy": '["id"]', "auto": False}),
    )


def test_entries_newest_first_with_operation_and_parameters(builder: DeltaTableBuilder) -> None:
    history_table(builder)
    entries = lakecore.open(builder.uri).history()
    assert [e.version for e in entries] == [4, 3, 2, 1, 0]
    assert [e.operation for e in entries] == ["OPTIMIZE", None, "DELETE", "WRITE", "CREATE TABLE"]
    assert entries[0].parameters == {"predicate": "[]", "zOrderBy": '["id"]', "auto": False}
    assert entries[1].parameters == {}
    assert entries[1].info == {}
    assert entries[2].parameters == {"predicate": '["(id > 3)"]'}  # commitInfo after the add
    assert entries[2].info["isBlindAppend"] is False
    assert entries[3].parameters == {"mode": "Append", "partitionBy": "[]"}
    assert entries[3].info["engineInfo"] == "test/1.0"
    assert [e.timestamp for e in entries] == [BASE_TIME_MS + v * STEP_MS for v in (4, 3, 2, 1, 0)]


def test_limit(builder: DeltaTableBuilder) -> None:
    history_table(builder)
    table = lakecore.open(builder.uri)
    assert [e.version for e in table.history(limit=2)] == [4, 3]
    assert [e.version for e in table.history(limit=1)] == [4]
    assert [e.version for e in table.history(limit=100)] == [4, 3, 2, 1, 0]
    assert table.history(limit=0) == []


def test_history_after_log_cleanup(builder: DeltaTableBuilder) -> None:
    history_table(builder)
    for v in (0, 1):
        builder.commit_path(v).unlink()
    assert [e.version for e in lakecore.open(builder.uri).history()] == [4, 3, 2]


def test_history_sees_new_commits(builder: DeltaTableBuilder) -> None:
    history_table(builder)
    table = lakecore.open(builder.uri)
    assert table.history(limit=1)[0].version == 4
    builder.commit(5, commit_info("MERGE", {"predicate": "t.id = s.id"}))
    top = table.history(limit=1)[0]
    assert (top.version, top.operation) == (5, "MERGE")
