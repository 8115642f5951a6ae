"""Checkpoints: classic, multi-part, V2 (JSON / Parquet top-level + sidecars), and fallbacks.

Every table here has the same history:

- v0: create (protocol + metaData)
- v1: add a (ids 1, 2), add b (id 3)
- v2: remove a, add c (ids 4, 5)   <- the checkpoint is written at v2
- v3: add d (id 6)

so ``ids(v2) == [3, 4, 5]`` and ``ids(v3) == [3, 4, 5, 6]``. Tests that must prove the
checkpoint was read delete commits 0-2, after which nothing else can produce those rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from lakecore_delta.file_index import deletion_descriptor

import lakecore
from lakecore.errors import CorruptTableError, VersionNotFoundError

from .builders import (
    DeltaTableBuilder,
    commit_info,
    metadata,
    protocol,
    remove,
)
from .conftest import ID_FIELDS, id_rows

V2_PROTOCOL = protocol(3, 7, ["v2Checkpoint"], ["v2Checkpoint"])
V2_CONFIG = {"delta.checkpointPolicy": "v2"}


class History:
    """The four-version table of this module, remembering its add actions."""

    def __init__(self, builder: DeltaTableBuilder, v2: bool = False) -> None:
        self.b = builder
        self.proto = V2_PROTOCOL if v2 else protocol()
        self.meta = metadata(ID_FIELDS, configuration=V2_CONFIG if v2 else None)
        builder.commit(0, commit_info("CREATE TABLE"), self.proto, self.meta)
        self.a = builder.data_file("a.parquet", id_rows(1, 2))
        self.bb = builder.data_file("b.parquet", id_rows(3))
        builder.commit(1, commit_info(), self.a, self.bb)
        self.c = builder.data_file("c.parquet", id_rows(4, 5))
        builder.commit(2, commit_info(), remove("a.parquet"), self.c)
        self.d = builder.data_file("d.parquet", id_rows(6))
        builder.commit(3, commit_info(), self.d)

    def state_at_1(self) -> list[Mapping[str, Any]]:
        return [self.proto, self.meta, self.a, self.bb]

    def state_at_2(self) -> list[Mapping[str, Any]]:
        return [self.proto, self.meta, self.bb, self.c, remove("a.parquet")]

    def drop_commits(self, *versions: int) -> None:
        for v in versions:
            self.b.commit_path(v).unlink()


def ids(uri: str, version: int | None = None) -> list[int]:
    return sorted(lakecore.open(uri).to_arrow(version=version).column("id").to_pylist())


def assert_standard(uri: str, from_version: int = 0) -> None:
    """The table reads right at every version still reachable."""
    expected = {0: [], 1: [1, 2, 3], 2: [3, 4, 5], 3: [3, 4, 5, 6]}
    assert lakecore.open(uri).version == 3
    for v, want in expected.items():
        if v >= from_version:
            assert ids(uri, v) == want, v
    assert ids(uri) == expected[3]


def test_no_checkpoint_full_replay(builder: DeltaTableBuilder) -> None:
    History(builder)
    assert_standard(builder.uri)


def test_classic_checkpoint_is_read(builder: DeltaTableBuilder) -> None:
    h = History(builder)
    builder.checkpoint(2, h.state_at_2())
    builder.last_checkpoint(2, size=5)
    h.drop_commits(0, 1, 2)
    assert_standard(builder.uri, from_version=2)
    with pytest.raises(VersionNotFoundError):
        lakecore.open(builder.uri).snapshot(1)


def test_checkpoint_at_the_latest_version(builder: DeltaTableBuilder) -> None:
    h = History(builder)
    builder.checkpoint(3, [*h.state_at_2(), h.d])
    h.drop_commits(0, 1, 2, 3)
    table = lakecore.open(builder.uri)
    assert table.version == 3
    assert ids(builder.uri) == [3, 4, 5, 6]


@pytest.mark.parametrize("parts", [2, 3])
def test_multipart_checkpoint(builder: DeltaTableBuilder, parts: int) -> None:
    h = History(builder)
    written = builder.checkpoint(2, h.state_at_2(), parts=parts)
    assert [p.name for p in written][-1] == f"{2:020d}.checkpoint.{parts:010d}.{parts:010d}.parquet"
    builder.last_checkpoint(2, parts=parts)
    h.drop_commits(0, 1, 2)
    assert_standard(builder.uri, from_version=2)


def test_incomplete_multipart_falls_back_to_older_checkpoint(builder: DeltaTableBuilder) -> None:
    h = History(builder)
    builder.checkpoint(1, h.state_at_1())
    parts = builder.checkpoint(2, h.state_at_2(), parts=3)
    parts[1].unlink()  # part 2 of 3 missing: the set is not a checkpoint
    builder.last_checkpoint(2, parts=3)
    h.drop_commits(0, 1)
    assert_standard(builder.uri, from_version=1)


def test_incomplete_multipart_falls_back_to_full_replay(builder: DeltaTableBuilder) -> None:
    h = History(builder)
    parts = builder.checkpoint(2, h.state_at_2(), parts=3)
    parts[2].unlink()
    builder.last_checkpoint(2, parts=3)
    assert_standard(builder.uri)


def test_multipart_sets_of_different_part_counts(builder: DeltaTableBuilder) -> None:
    h = History(builder)
    builder.checkpoint(2, h.state_at_2(), parts=3)[0].unlink()  # broken 3-part set
    builder.checkpoint(2, h.state_at_2(), parts=2)  # complete 2-part set of the same version
    h.drop_commits(0, 1, 2)
    assert_standard(builder.uri, from_version=2)


@pytest.mark.parametrize("top", ["json", "parquet"])
def test_v2_checkpoint_with_sidecars(builder: DeltaTableBuilder, top: str) -> None:
    h = History(builder, v2=True)
    path = builder.v2_checkpoint(
        2, [h.proto, h.meta], sidecars=[[h.bb, remove("a.parquet")], [h.c]], top=top
    )
    assert path.suffix == f".{top}"
    assert len(list((builder.log / "_sidecars").iterdir())) == 2
    builder.last_checkpoint(2)
    h.drop_commits(0, 1, 2)
    assert_standard(builder.uri, from_version=2)


def test_v2_json_checkpoint_with_inline_adds(builder: DeltaTableBuilder) -> None:
    h = History(builder, v2=True)
    builder.v2_checkpoint(2, [h.proto, h.meta, h.bb], sidecars=[[h.c]], top="json")
    h.drop_commits(0, 1, 2)
    assert_standard(builder.uri, from_version=2)


def test_v2_checkpoint_under_a_classic_name(builder: DeltaTableBuilder) -> None:
    """A V2 checkpoint may be named ``N.checkpoint.parquet`` and still point to sidecars."""
    h = History(builder, v2=True)
    top = builder.v2_checkpoint(2, [h.proto, h.meta], sidecars=[[h.bb], [h.c]], top="parquet")
    top.rename(builder.log / f"{2:020d}.checkpoint.parquet")
    h.drop_commits(0, 1, 2)
    assert_standard(builder.uri, from_version=2)


def test_v2_checkpoint_missing_sidecar_falls_back_to_replay(builder: DeltaTableBuilder) -> None:
    h = History(builder, v2=True)
    builder.v2_checkpoint(2, [h.proto, h.meta], sidecars=[[h.bb], [h.c]])
    next((builder.log / "_sidecars").iterdir()).unlink()
    builder.last_checkpoint(2)
    assert_standard(builder.uri)


def test_checkpoint_paths_reconcile_with_later_commits(builder: DeltaTableBuilder) -> None:
    builder.init(ID_FIELDS)
    spaced = builder.data_file("p q/a b.parquet", id_rows(1))
    other = builder.data_file("o.parquet", id_rows(2))
    builder.commit(1, commit_info(), spaced, other)
    builder.checkpoint(1, [protocol(), metadata(ID_FIELDS), spaced, other])
    builder.commit_path(0).unlink()
    builder.commit_path(1).unlink()
    table = lakecore.open(builder.uri)
    assert sorted(table.snapshot().files().column("path").to_pylist()) == [
        "o.parquet",
        "p q/a b.parquet",
    ]
    builder.commit(2, commit_info(), remove(f"file:{builder.root.as_posix()}/p%20q/a%20b.parquet"))
    assert ids(builder.uri) == [2]


LAST_CHECKPOINT_CASES: dict[str, bytes | int | None] = {
    "missing": None,
    "stale": 1,  # names the older checkpoint while a newer one exists
    "garbage": b"\x00\xff not json at all",
    "torn": b'{"version": 2, "si',
    "not-an-object": b"[2]",
    "bad-version": b'{"version": "two"}',
    "negative": b'{"version": -5}',
    "checkpoint-missing": 3,  # no checkpoint at version 3
    "beyond-the-log": 99,
}


@pytest.mark.parametrize("case", sorted(LAST_CHECKPOINT_CASES))
def test_last_checkpoint_hint_is_only_a_hint(builder: DeltaTableBuilder, case: str) -> None:
    h = History(builder)
    builder.checkpoint(1, h.state_at_1())
    builder.checkpoint(2, h.state_at_2())
    h.drop_commits(0, 1)
    hint = LAST_CHECKPOINT_CASES[case]
    if isinstance(hint, bytes):
        builder.last_checkpoint(raw=hint)
    elif isinstance(hint, int):
        builder.last_checkpoint(hint)
    assert_standard(builder.uri, from_version=1)


def test_last_checkpoint_cases_ran() -> None:
    assert len(LAST_CHECKPOINT_CASES) == 9


@pytest.mark.parametrize("kind", ["classic", "multipart-part", "v2-json-top"])
def test_corrupt_checkpoint_with_full_log_loads_by_replay(
    builder: DeltaTableBuilder, kind: str
) -> None:
    h = History(builder, v2=kind.startswith("v2"))
    if kind == "classic":
        paths = builder.checkpoint(2, h.state_at_2())
    elif kind == "multipart-part":
        paths = builder.checkpoint(2, h.state_at_2(), parts=2)[1:]
    else:
        paths = [builder.v2_checkpoint(2, [h.proto, h.meta], sidecars=[[h.bb], [h.c]])]
    for p in paths:
        p.write_bytes(b"PAR1 garbage garbage garbage" if p.suffix == ".parquet" else b"{torn")
    builder.last_checkpoint(2)
    assert_standard(builder.uri)


def test_corrupt_checkpoint_falls_back_to_older_checkpoint(builder: DeltaTableBuilder) -> None:
    h = History(builder)
    builder.checkpoint(1, h.state_at_1())
    (cp2,) = builder.checkpoint(2, h.state_at_2())
    cp2.write_bytes(b"\x00" * 64)
    builder.last_checkpoint(2)
    h.drop_commits(0, 1)  # commit 2 is kept: checkpoint 1 + commits 2, 3 rebuild the table
    assert_standard(builder.uri, from_version=1)


def test_corrupt_checkpoint_without_fallback_is_corrupt_table(builder: DeltaTableBuilder) -> None:
    h = History(builder)
    (cp,) = builder.checkpoint(2, h.state_at_2())
    cp.write_bytes(b"not parquet")
    builder.last_checkpoint(2)
    h.drop_commits(0, 1, 2)
    with pytest.raises(CorruptTableError, match="checkpoint"):
        lakecore.open(builder.uri).snapshot()


def test_checkpoint_missing_a_protocol_is_corrupt(builder: DeltaTableBuilder) -> None:
    h = History(builder)
    builder.checkpoint(2, [h.meta, h.bb, h.c])
    h.drop_commits(0, 1, 2)
    with pytest.raises(CorruptTableError, match="protocol"):
        lakecore.open(builder.uri).snapshot()


def _only(actions: Sequence[Mapping[str, Any]], key: str) -> list[Mapping[str, Any]]:
    return [a for a in actions if key in a]


def test_checkpoint_txns_and_metadata_are_read(builder: DeltaTableBuilder) -> None:
    from .builders import txn

    h = History(builder)
    builder.checkpoint(2, [*h.state_at_2(), txn("app", 7)])
    h.drop_commits(0, 1, 2)
    snap = lakecore.open(builder.uri).snapshot()
    assert snap.source.state.txns == {"app": 7}  # type: ignore[attr-defined]
    assert snap.schema.names == ["id", "v"]
    assert len(_only(h.state_at_2(), "add")) == 2


def test_deletion_vector_keys_match_between_checkpoint_and_commits(
    builder: DeltaTableBuilder,
) -> None:
    from .builders import add, inline_dv, uuid_dv

    builder.init(ID_FIELDS)
    dv_inline = inline_dv("inline-dv", 1)
    dv_file = uuid_dv("ab^-aqEH.-t@S}K{vb[*k^", 4, 2)
    cp_adds = [
        add("a.parquet", stats={"numRecords": 5}, deletion_vector=dv_inline),
        add("b.parquet", stats={"numRecords": 5}, deletion_vector=dv_file),
        add("c.parquet", stats={"numRecords": 5}),
    ]
    builder.commit(1, commit_info(), *cp_adds)
    builder.checkpoint(1, [protocol(), metadata(ID_FIELDS), *cp_adds])
    builder.commit_path(0).unlink()
    builder.commit_path(1).unlink()
    # Each remove names the checkpoint's (path, DV) key exactly; new DVs are added for a, b.
    builder.commit(
        2,
        commit_info("DELETE"),
        remove("a.parquet", deletion_vector=dv_inline),
        add("a.parquet", stats={"numRecords": 5}, deletion_vector=inline_dv("inline-2", 3)),
        remove("b.parquet", deletion_vector=dv_file),
        add("b.parquet", stats={"numRecords": 5}, deletion_vector=dict(dv_file, offset=90)),
        remove("c.parquet"),
    )
    files = lakecore.open(builder.uri).snapshot().files().sort_by("path")
    assert files.column("path").to_pylist() == ["a.parquet", "b.parquet"]
    deletions = [deletion_descriptor(d) for d in files.column("deletion").to_pylist()]
    assert deletions[0] is not None and deletions[0].path_or_inline_dv == "inline-2"
    assert deletions[1] is not None and deletions[1].offset == 90
    assert files.column("record_count").to_pylist() == [5, 5]


def test_corrupt_commit_before_the_checkpoint_is_never_read(builder: DeltaTableBuilder) -> None:
    h = History(builder)
    builder.checkpoint(2, h.state_at_2())
    builder.commit_path(1).write_bytes(b"{not json")
    builder.last_checkpoint(2)
    assert ids(builder.uri) == [3, 4, 5, 6]
    assert ids(builder.uri, 2) == [3, 4, 5]


@pytest.mark.parametrize("kind", ["classic", "v2-parquet", "v2-json"])
def test_checkpoint_metadata_configuration_and_protocol(
    builder: DeltaTableBuilder, kind: str
) -> None:
    h = History(builder, v2=True)
    meta = metadata(ID_FIELDS, configuration={**V2_CONFIG, "custom.key": "x y"})
    if kind == "classic":
        builder.checkpoint(2, [h.proto, meta, h.bb, h.c])
    else:
        builder.v2_checkpoint(2, [h.proto, meta], [[h.bb, h.c]], top=kind.split("-")[1])
    h.drop_commits(0, 1, 2)
    snap = lakecore.open(builder.uri).snapshot(2)
    assert snap.properties == {"delta.checkpointPolicy": "v2", "custom.key": "x y"}
    assert snap.features.reader_features == {"v2Checkpoint"}
    assert snap.features.format_version.startswith("3.")


def test_v2_sidecar_path_is_url_encoded(builder: DeltaTableBuilder) -> None:
    """Sidecar ``path`` is a URI-encoded path relative to ``_delta_log/_sidecars``."""
    h = History(builder, v2=True)
    top = builder.v2_checkpoint(2, [h.proto, h.meta], sidecars=[[h.bb, h.c]], top="json")
    (sidecar,) = (builder.log / "_sidecars").iterdir()
    sidecar.rename(sidecar.with_name("side car.parquet"))
    top.write_text(top.read_text().replace(sidecar.name, "side%20car.parquet"))
    h.drop_commits(0, 1, 2)
    assert ids(builder.uri) == [3, 4, 5, 6]
