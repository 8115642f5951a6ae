"""Commits parsed in pieces on threads give the actions one parse of the whole log gives."""

from __future__ import annotations

import pytest
from lakecore_delta.log import commits

import lakecore
from lakecore.errors import CorruptTableError

from .builders import DeltaTableBuilder, add, commit_info, field, remove

FIELDS = [field("id", "long")]


def _log(builder: DeltaTableBuilder) -> None:
    builder.init(FIELDS)
    for version in range(1, 6):
        adds = [add(f"v{version}-{i}.parquet", stats={"numRecords": i}) for i in range(30)]
        builder.commit(version, commit_info(), *adds, remove(f"v{version - 1}-0.parquet"))


@pytest.mark.parametrize("block", [200, 2_000, 50_000])
def test_pieces_give_the_same_snapshot(
    builder: DeltaTableBuilder, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    _log(builder)
    whole = lakecore.open(builder.uri).snapshot().files().sort_by("path")
    monkeypatch.setattr(commits, "_BLOCK_SIZE", block)
    chunks = [builder.commit_path(v).read_bytes() for v in range(6)]
    assert len(list(commits._json_pieces(chunks))) > (1 if block < 50_000 else 0)
    pieces = lakecore.open(builder.uri).snapshot().files().sort_by("path")
    assert pieces.equals(whole)
    assert pieces.num_rows == 5 * 30 - 4


def test_a_bad_line_in_a_later_piece_names_its_commit(
    builder: DeltaTableBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    _log(builder)
    path = builder.commit_path(4)
    path.write_bytes(path.read_bytes() + b'{"add": {"path": "x.parquet", "size": \n')
    monkeypatch.setattr(commits, "_BLOCK_SIZE", 500)
    with pytest.raises(CorruptTableError, match=path.name):
        lakecore.open(builder.uri).snapshot()
