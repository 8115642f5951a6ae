"""JSON commits and reconciliation: the newest add/remove of a (path, DV id) key wins."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from lakecore_delta.file_index import deletion_descriptor

import lakecore
from lakecore.errors import CorruptTableError

from .builders import DeltaTableBuilder, add, commit_info, inline_dv, remove, uuid_dv
from .conftest import ID_FIELDS, id_rows


def live_paths(uri: str, version: int | None = None) -> list[str]:
    return sorted(lakecore.open(uri).snapshot(version).files().column("path").to_pylist())


def test_add_remove_readd_same_path_across_versions(builder: DeltaTableBuilder) -> None:
    builder.init(ID_FIELDS)
    a = builder.data_file("a.parquet", id_rows(1, 2))
    b = builder.data_file("b.parquet", id_rows(3))
    builder.commit(1, commit_info(), a, b)
    builder.commit(2, commit_info("DELETE"), remove("a.parquet"))
    builder.commit(3, commit_info(), a)
    builder.commit(4, commit_info("DELETE"), remove("b.parquet"))

    expected = {
        0: [],
        1: ["a.parquet", "b.parquet"],
        2: ["b.parquet"],
        3: ["a.parquet", "b.parquet"],
        4: ["a.parquet"],
    }
    rows = {0: 0, 1: 3, 2: 1, 3: 3, 4: 2}
    table = lakecore.open(builder.uri)
    assert table.version == 4
    for version, paths in expected.items():
        assert live_paths(builder.uri, version) == paths, version
        assert table.to_arrow(version=version).num_rows == rows[version], version
    assert sorted(table.to_arrow().column("id").to_pylist()) == [1, 2]


def test_remove_and_add_in_one_commit_last_action_wins(builder: DeltaTableBuilder) -> None:
    builder.init(ID_FIELDS)
    a = builder.data_file("a.parquet", id_rows(1))
    builder.commit(1, commit_info(), a)
    # Same commit: remove then add again -> live; add then remove -> gone.
    builder.commit(2, commit_info(), remove("a.parquet"), a)
    assert live_paths(builder.uri) == ["a.parquet"]
    builder.commit(3, commit_info(), a, remove("a.parquet"))
    assert live_paths(builder.uri) == []


def test_readd_with_a_different_deletion_vector(builder: DeltaTableBuilder) -> None:
    builder.init(ID_FIELDS)
    builder.commit(1, commit_info(), add("a.parquet", stats={"numRecords": 10}))
    dv1 = inline_dv("dv-one", 2)
    dv2 = inline_dv("dv-two", 5)
    builder.commit(
        2,
        commit_info("DELETE"),
        remove("a.parquet"),
        add("a.parquet", stats={"numRecords": 10}, deletion_vector=dv1),
    )
    # The add of the new DV may come before the remove of the old one in a commit.
    builder.commit(
        3,
        commit_info("DELETE"),
        add("a.parquet", stats={"numRecords": 10}, deletion_vector=dv2),
        remove("a.parquet", deletion_vector=dv1),
    )
    table = lakecore.open(builder.uri)
    by_version = {}
    for v in (1, 2, 3):
        files = table.snapshot(v).files()
        assert files.num_rows == 1, v
        by_version[v] = files.column("deletion").to_pylist()[0]
    assert by_version[1] is None
    assert by_version[2]["cardinality"] == 2 and by_version[3]["cardinality"] == 5
    two, three = deletion_descriptor(by_version[2]), deletion_descriptor(by_version[3])
    assert two is not None and two.path_or_inline_dv == "dv-one" and two.cardinality == 2
    assert three is not None and three.path_or_inline_dv == "dv-two"
    assert lakecore.open(builder.uri).snapshot().files().column("record_count").to_pylist() == [10]


def test_remove_of_another_dv_key_leaves_the_file_live(builder: DeltaTableBuilder) -> None:
    builder.init(ID_FIELDS)
    with_dv = uuid_dv("ab^-aqEH.-t@S}K{vb[*k^", 1, 3)
    builder.commit(1, commit_info(), add("a.parquet", deletion_vector=with_dv))
    # A remove without a DV, and one naming the same DV file at another offset, are other keys.
    other_offset = dict(with_dv, offset=9)
    builder.commit(
        2,
        commit_info(),
        remove("a.parquet"),
        remove("a.parquet", deletion_vector=other_offset),
    )
    files = lakecore.open(builder.uri).snapshot().files()
    assert files.column("path").to_pylist() == ["a.parquet"]
    kept = deletion_descriptor(files.column("deletion").to_pylist()[0])
    assert kept is not None and kept.offset == 1
    builder.commit(3, commit_info(), remove("a.parquet", deletion_vector=with_dv))
    assert live_paths(builder.uri) == []


def test_url_encoded_paths_are_decoded_and_reconcile(builder: DeltaTableBuilder) -> None:
    builder.init(ID_FIELDS)
    a = builder.data_file("a b:c.parquet", id_rows(1, 2))
    assert a["add"]["path"] == "a%20b%3Ac.parquet"
    d = builder.data_file("dir=x y/d%.parquet", id_rows(3))
    assert d["add"]["path"] == "dir=x%20y/d%25.parquet"
    builder.commit(1, commit_info(), a, d)
    table = lakecore.open(builder.uri)
    assert live_paths(builder.uri) == ["a b:c.parquet", "dir=x y/d%.parquet"]
    assert sorted(table.to_arrow().column("id").to_pylist()) == [1, 2, 3]
    # The remove spells the same file differently: the reconciliation key is the decoded path.
    builder.commit(2, commit_info("DELETE"), remove("a%20b:c.parquet"))
    assert live_paths(builder.uri) == ["dir=x y/d%.parquet"]


@pytest.mark.parametrize("style", ["file:", "file://"])
def test_absolute_file_uris_inside_the_root_reconcile_with_relative(
    builder: DeltaTableBuilder, style: str
) -> None:
    builder.init(ID_FIELDS)
    root = builder.root.as_posix()
    absolute = builder.data_file("x 1.parquet", id_rows(1), log_path=f"{style}{root}/x%201.parquet")
    plain = builder.data_file("y.parquet", id_rows(2))
    builder.commit(1, commit_info(), absolute, plain)
    table = lakecore.open(builder.uri)
    assert live_paths(builder.uri) == ["x 1.parquet", "y.parquet"]
    assert sorted(table.to_arrow().column("id").to_pylist()) == [1, 2]
    # relative remove of the absolute add, absolute remove of the relative add
    builder.commit(2, commit_info(), remove("x%201.parquet"))
    builder.commit(3, commit_info(), remove(f"{style}{root}/y.parquet"))
    assert live_paths(builder.uri, 2) == ["y.parquet"]
    assert live_paths(builder.uri, 3) == []


def test_absolute_path_outside_the_root_stays_absolute_and_reads(
    builder: DeltaTableBuilder, tmp_path: Path
) -> None:
    builder.init(ID_FIELDS)
    elsewhere = DeltaTableBuilder(tmp_path / "elsewhere")
    outside = elsewhere.data_file("o.parquet", id_rows(7))
    uri = f"file:{elsewhere.root.as_posix()}/o.parquet"
    outside["add"]["path"] = uri
    builder.commit(1, commit_info(), outside)
    table = lakecore.open(builder.uri)
    assert live_paths(builder.uri) == [f"{elsewhere.root.as_posix()}/o.parquet"]
    assert table.to_arrow().column("id").to_pylist() == [7]


def test_files_index_columns_and_record_counts(builder: DeltaTableBuilder) -> None:
    builder.init(ID_FIELDS)
    a = builder.data_file("a.parquet", id_rows(1, 2, 3))
    b = builder.data_file("b.parquet", id_rows(4), stats=None)  # no stats: count unknown
    builder.commit(1, commit_info(), a, b)
    files = lakecore.open(builder.uri).snapshot().files().sort_by("path")
    assert files.num_rows == 2
    for name in (
        "path",
        "size",
        "record_count",
        "modification_time",
        "partition",
        "min",
        "max",
        "null_count",
        "deletion",
    ):
        assert name in files.column_names
    assert files.column("path").to_pylist() == ["a.parquet", "b.parquet"]
    assert files.column("record_count").to_pylist() == [3, None]
    sizes = files.column("size").to_pylist()
    assert sizes == [a["add"]["size"], b["add"]["size"]]
    assert sizes[0] == (builder.root / "a.parquet").stat().st_size
    assert files.column("modification_time").type == pa.int64()
    assert files.column("deletion").null_count == 2


def test_blank_lines_and_unknown_actions_are_ignored(builder: DeltaTableBuilder) -> None:
    builder.init(ID_FIELDS)
    a = builder.data_file("a.parquet", id_rows(1))
    path = builder.commit(
        1,
        commit_info(),
        {"domainMetadata": {"domain": "x", "configuration": "{}", "removed": False}},
        a,
    )
    path.write_text(path.read_text() + "\n\n")
    assert lakecore.open(builder.uri).to_arrow().num_rows == 1


def test_commit_with_invalid_json_is_a_corrupt_table(builder: DeltaTableBuilder) -> None:
    builder.init(ID_FIELDS)
    builder.write_bytes("_delta_log/00000000000000000001.json", b'{"add": {"path": "a.parq')
    with pytest.raises(CorruptTableError, match=r"00000000000000000001\.json"):
        lakecore.open(builder.uri).snapshot()
    # the versions before it still load
    assert lakecore.open(builder.uri).snapshot(0).version == 0


def test_txn_actions_are_kept_newest_wins(builder: DeltaTableBuilder) -> None:
    from .builders import txn

    builder.init(ID_FIELDS)
    builder.commit(1, commit_info(), txn("app", 3), txn("other", 1))
    builder.commit(2, commit_info(), txn("app", 4))
    source = lakecore.open(builder.uri).snapshot().source
    assert source.state.txns == {"app": 4, "other": 1}  # type: ignore[attr-defined]
