"""add_constraint checks the rows and records the constraint in one transaction."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lakecore
from lakecore.snapshot import Snapshot

SCHEMA = pa.schema([("id", pa.int64())])


def test_an_append_landing_while_the_rows_are_checked_conflicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = str(tmp_path / "t")
    table = lakecore.create(uri, SCHEMA)
    table.append(pa.table({"id": [1, 2]}, schema=SCHEMA))
    real = Snapshot.to_batches
    raced: list[int | str] = []

    def racing(self: Snapshot, *args: Any, **kwargs: Any) -> Iterator[pa.RecordBatch]:
        if not raced:  # another writer appends a violating row while the check reads
            raced.append(lakecore.open(uri).append(pa.table({"id": [-5]}, schema=SCHEMA)).version)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Snapshot, "to_batches", racing)
    with pytest.raises(lakecore.CommitConflictError) as info:
        table.add_constraint("positive", "id > 0")
    assert info.value.winning_version == raced[0] == 2
    monkeypatch.undo()
    assert "delta.constraints.positive" not in lakecore.open(uri).snapshot().properties
    # Without a race the same check passes or refuses on the rows it read.
    with pytest.raises(lakecore.ConstraintViolationError, match="1 existing row"):
        table.add_constraint("positive", "id > 0")
    assert table.add_constraint("small", "id < 10").version == 3


def test_a_predicate_that_is_not_boolean_is_refused(tmp_path: Path) -> None:
    table = lakecore.create(str(tmp_path / "t"), SCHEMA)
    table.append(pa.table({"id": [1]}, schema=SCHEMA))
    with pytest.raises(lakecore.PredicateError):
        table.add_constraint("c", "id + 1")
    assert table.version == 1
