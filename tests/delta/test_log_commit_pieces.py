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


@pytest.mark.parametrize("own", [0, 1_000, 64 << 10])
@pytest.mark.parametrize("block", [200, 2_000, 50_000])
def test_pieces_give_the_same_snapshot(
    builder: DeltaTableBuilder, monkeypatch: pytest.MonkeyPatch, block: int, own: int
) -> None:
    """``own``: commits at least this big are parsed in place (cut, never joined)."""
    _log(builder)
    whole = lakecore.open(builder.uri).snapshot().files().sort_by("path")
    monkeypatch.setattr(commits, "_BLOCK_SIZE", block)
    monkeypatch.setattr(commits, "_OWN_PIECE", own)
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


def test_commit_adds_share_the_parsed_text(builder: DeltaTableBuilder) -> None:
    """The add rows between other actions are handed on as slices: the stats text of a
    large log is not copied while the parsed commits are alive (peak memory)."""
    from lakecore_delta.log.files import commit_path, parse_log_file
    from lakecore_delta.log.replay import commit_adds

    from lakecore.storage.base import FileInfo

    _log(builder)
    chunks = [builder.commit_path(v).read_bytes() for v in range(1, 6)]
    infos = [FileInfo(commit_path(v), len(c), 0) for v, c in zip(range(1, 6), chunks, strict=True)]
    files = [f for f in map(parse_log_file, infos) if f is not None]
    actions = commits.parse_file_actions(chunks, files, [])
    adds, is_add = commit_adds(actions)
    assert adds.num_rows == 5 * 30 == int(is_add.sum())
    parsed = {c.field("stats").buffers()[2].address for c in actions.column("add").chunks}
    handed = {c.buffers()[2].address for c in adds.column("stats").chunks}
    assert handed <= parsed


@pytest.mark.parametrize("own", [0, 2_500])
def test_every_cut_of_commits_parsed_in_place_gives_the_same_snapshot(
    builder: DeltaTableBuilder, monkeypatch: pytest.MonkeyPatch, own: int
) -> None:
    """Big commits are cut into memoryview pieces at line ends and small ones joined: for
    every block size the pieces must parse to the rows of one whole parse, in log order."""
    _log(builder)
    whole = lakecore.open(builder.uri).snapshot().files().sort_by("path")
    chunks = [builder.commit_path(v).read_bytes() for v in range(6)]
    assert min(map(len, chunks)) < 2_500 < max(map(len, chunks))  # both kinds of commit
    monkeypatch.setattr(commits, "_OWN_PIECE", own)
    sizes = [*range(1, 40, 3), *range(40, sum(map(len, chunks)) + 2, 503)]
    for size in sizes:
        monkeypatch.setattr(commits, "_BLOCK_SIZE", size)
        pieces = list(commits._json_pieces(chunks))
        assert b"\n".join(bytes(p) for p in pieces).split(b"\n") == b"\n".join(chunks).split(
            b"\n"
        ), size
        got = lakecore.open(builder.uri).snapshot().files().sort_by("path")
        assert got.equals(whole), size
    assert len(sizes) > 20
