"""Reading a checkpoint decodes only what replay needs: the add fields it uses, and the rows
of ``metaData`` up to the first batch that holds the action."""

from __future__ import annotations

import pytest
from lakecore_delta.log import checkpoint as cp

import lakecore
from lakecore.storage import open_storage

from .builders import DeltaTableBuilder, add, field, metadata, protocol

FIELDS = [field("id", "long"), field("p", "string")]


def _adds(n: int) -> list[dict[str, object]]:
    return [
        add(f"p=x/f{i}.parquet", partition_values={"p": "x"}, stats={"numRecords": i})
        for i in range(n)
    ]


def test_add_fields_replay_does_not_use_are_not_read(builder: DeltaTableBuilder) -> None:
    builder.init(FIELDS, partition_columns=["p"])
    (path,) = builder.checkpoint(0, [protocol(), metadata(FIELDS, ["p"]), *_adds(3)])
    storage = open_storage(builder.uri)
    relative = f"_delta_log/{path.name}"
    table = cp._read_parquet(storage, relative, cp._ADD_READ)
    names = table.column("add").type.names
    assert "tags" not in names and "dataChange" not in names
    assert set(names) <= {c.split(".", 1)[1] for c in cp._ADD_READ}
    # The add struct keeps its own validity: the protocol and metaData rows are no adds.
    assert table.column("add").null_count == 2
    snap = lakecore.open(builder.uri).snapshot()
    assert snap.files().column("record_count").to_pylist() == [0, 1, 2]


@pytest.mark.parametrize("position", ["first", "middle", "last"])
def test_metadata_found_in_any_batch(
    builder: DeltaTableBuilder, monkeypatch: pytest.MonkeyPatch, position: str
) -> None:
    monkeypatch.setattr(cp, "_FIRST_BATCH_ROWS", 2)
    builder.init(FIELDS, partition_columns=["p"])
    adds = _adds(7)
    at = {"first": 0, "middle": 4, "last": len(adds)}[position]
    actions = [protocol(), *adds[:at], metadata(FIELDS, ["p"]), *adds[at:]]
    builder.checkpoint(0, actions)
    builder.commit_path(0).unlink()
    snap = lakecore.open(builder.uri).snapshot()
    assert snap.partition_columns == ("p",)
    assert snap.files().num_rows == 7


def test_checkpoint_without_metadata_is_corrupt(builder: DeltaTableBuilder) -> None:
    builder.init(FIELDS)
    builder.checkpoint(0, [protocol(), *_adds(2)])
    builder.commit_path(0).unlink()
    with pytest.raises(lakecore.errors.CorruptTableError, match="metaData"):
        lakecore.open(builder.uri).snapshot()
