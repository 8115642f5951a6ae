"""A file action whose ``size`` is negative is corrupt (the protocol: "the size of this data
file in bytes"): reading the log refuses it with ``CorruptTableError`` naming the log file and
the data file, whether a commit or a checkpoint holds it. A size of 0 is not refused."""

from __future__ import annotations

import re
from typing import Any

import pytest

import lakecore
from lakecore.errors import CorruptTableError

from .builders import DeltaTableBuilder, add, commit_info, metadata, protocol
from .conftest import ID_FIELDS


def _cdc(path: str, size: int) -> dict[str, Any]:
    return {"cdc": {"path": path, "partitionValues": {}, "size": size, "dataChange": False}}


def _files(builder: DeltaTableBuilder) -> int:
    return int(lakecore.open(builder.uri).snapshot().files().num_rows)


@pytest.mark.parametrize("kind", ["add", "cdc"])
@pytest.mark.parametrize("later_commits", [0, 2])
def test_a_commit_with_a_negative_size_is_corrupt(
    builder: DeltaTableBuilder, kind: str, later_commits: int
) -> None:
    """``later_commits`` > 0: the commits are parsed together and the bad one found after."""
    builder.init(ID_FIELDS)
    bad = add("bad.parquet", size=-5) if kind == "add" else _cdc("_change_data/bad.parquet", -5)
    builder.commit(1, commit_info(), add("good.parquet", size=10), bad)
    for version in range(2, 2 + later_commits):
        builder.commit(version, commit_info(), add(f"f{version}.parquet", size=10))
    with pytest.raises(CorruptTableError) as caught:
        _files(builder)
    message = str(caught.value)
    assert f"{1:020d}.json" in message
    assert "negative size" in message and "bad.parquet" in message


def test_a_checkpoint_with_a_negative_size_is_corrupt(builder: DeltaTableBuilder) -> None:
    builder.init(ID_FIELDS)
    builder.commit(1, commit_info(), add("a.parquet", size=10), add("b.parquet", size=-1))
    actions = [
        protocol(),
        metadata(ID_FIELDS),
        add("a.parquet", size=10),
        add("b.parquet", size=-1),
    ]
    builder.checkpoint(1, actions)
    for version in (0, 1):  # only the checkpoint holds the table
        builder.commit_path(version).unlink()
    with pytest.raises(CorruptTableError) as caught:
        _files(builder)
    message = str(caught.value)
    assert re.search(rf"{1:020d}\.checkpoint\.parquet", message), message
    assert "negative size" in message and "b.parquet" in message


def test_a_size_of_zero_is_read(builder: DeltaTableBuilder) -> None:
    builder.init(ID_FIELDS)
    builder.commit(1, commit_info(), add("empty.parquet", size=0), _cdc("c.parquet", 0))
    assert _files(builder) == 1
    builder.checkpoint(1, [protocol(), metadata(ID_FIELDS), add("empty.parquet", size=0)])
    builder.commit_path(1).unlink()
    builder.commit_path(0).unlink()
    assert _files(builder) == 1
