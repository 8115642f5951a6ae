"""The Lance writer: what lakecore writes, pylance reads at every version with identical rows
(pylance is the reference engine), and lakecore reads it back."""

from __future__ import annotations

import datetime
import shutil
import struct
from pathlib import Path

import pyarrow as pa
import pytest
from google.protobuf.unknown_fields import UnknownFieldSet
from lakecore_lance.proto import table_pb2, transaction_pb2

import lakecore
from lakecore import Table
from lakecore.errors import (
    ConstraintViolationError,
    CorruptTableError,
    InvalidArgumentError,
    SchemaError,
    TableExistsError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from tests.corpus import CORPUS
from tests.lance.helpers import assert_same_as_pylance, lance, sort_rows

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("name", pa.string()),
        ("vec", pa.list_(pa.float32(), 2)),
        ("tags", pa.list_(pa.string())),
        ("st", pa.struct([("a", pa.int32()), ("b", pa.list_(pa.int64()))])),
        ("ts", pa.timestamp("us", "UTC")),
        ("amount", pa.decimal128(10, 2)),
    ]
)


def rows(ids: list[int], name: str = "a") -> pa.Table:
    n = len(ids)
    return pa.table(
        {
            "id": ids,
            "name": [name] * n,
            "vec": pa.array([[float(i), 0.5] for i in ids], pa.list_(pa.float32(), 2)),
            "tags": [[name, str(i)] if i % 3 else None for i in ids],
            "st": [{"a": i, "b": [i, i]} if i % 2 else None for i in ids],
            "ts": pa.array([i * 1000 for i in ids], pa.timestamp("us", "UTC")),
            "amount": pa.array([None] * n, pa.decimal128(10, 2)),
        },
        schema=SCHEMA,
    )


def manifest(path: Path, version: int) -> table_pb2.Manifest:
    name = f"{2**64 - 1 - version:020d}.manifest"
    data = (path / "_versions" / name).read_bytes()
    position = struct.unpack("<q", data[-16:-8])[0]
    (length,) = struct.unpack("<I", data[position : position + 4])
    m = table_pb2.Manifest()
    m.ParseFromString(data[position + 4 : position + 4 + length])
    return m


def lakecore_rows(path: Path, version: int | None = None) -> pa.Table:
    return sort_rows(lakecore.open(str(path)).to_arrow(version=version))


def test_create_writes_what_pylance_writes_for_a_new_dataset(tmp_path: Path) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    lakecore.create(str(ours), SCHEMA, format="lance")
    lance.write_dataset(SCHEMA.empty_table(), str(theirs))
    mine, ref = manifest(ours, 1), manifest(theirs, 1)
    assert list(mine.fields) == list(ref.fields)
    assert mine.data_format == ref.data_format  # the data storage version pylance defaults to
    assert not mine.HasField("max_fragment_id") and mine.version == 1
    assert sorted(p.name for p in (ours / "_versions").iterdir()) == sorted(
        p.name for p in (theirs / "_versions").iterdir()
    )
    assert lance.dataset(str(ours)).to_table().schema == SCHEMA
    for path in (ours, theirs):  # both lay the file out alike: inline transaction first
        m = manifest(path, 1)
        # table.proto declares every field pylance 14 writes; field 23 names the position.
        assert len(UnknownFieldSet(m)) == 0
        assert m.HasField("transaction_section") and m.transaction_section == 0
        assert not m.HasField("transaction_section_deprecated")
        data = next((path / "_versions").glob("*.manifest")).read_bytes()
        (size,) = struct.unpack("<I", data[:4])
        txn = transaction_pb2.Transaction()
        txn.ParseFromString(data[4 : 4 + size])
        assert txn.WhichOneof("operation") == "overwrite" and txn.read_version == 0
    with pytest.raises(TableExistsError):
        lakecore.create(str(ours), SCHEMA, format="lance")


def test_create_refuses_what_lance_cannot_hold(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedFeatureError):
        lakecore.create(str(tmp_path / "p"), SCHEMA, format="lance", partition_by=["name"])
    bad = pa.schema([("m", pa.map_(pa.string(), pa.int64()))])
    with pytest.raises(SchemaError):
        lakecore.create(str(tmp_path / "m"), bad, format="lance")
    assert not (tmp_path / "p").exists() or not any((tmp_path / "p").rglob("*.manifest"))


def test_refusing_a_nested_map_names_its_column(tmp_path: Path) -> None:
    """A map below a list or struct: the SchemaError names the top-level column and the
    field's path, not only the list's item field ('item' or 'element')."""
    in_list = pa.list_(pa.map_(pa.string(), pa.list_(pa.int32())))
    cases = {
        "array_of_map_of_arrays": ("'array_of_map_of_arrays.item'", in_list),
        "s": (
            "'s.inner'",
            pa.struct([("ok", pa.int32()), ("inner", pa.map_(pa.string(), pa.int32()))]),
        ),
    }
    for column, (path, t) in cases.items():
        bad = pa.schema([("id", pa.int64()), (column, t)])
        with pytest.raises(SchemaError) as caught:
            lakecore.create(str(tmp_path / column), bad, format="lance")
        message = str(caught.value)
        assert f"column {column!r}" in message and path in message, message
        assert "cannot hold map" in message, message
        assert not (tmp_path / column).exists() or not any((tmp_path / column).rglob("*"))


def test_every_operation_reads_the_same_in_pylance(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = lakecore.create(str(path), SCHEMA, format="lance")
    table.append(rows([1, 2, 3, 4]))
    table.append(rows([5, 6]))
    assert lakecore_rows(path).equals(sort_rows(rows([1, 2, 3, 4, 5, 6])))
    table.delete("id = 2 OR id = 6")
    table.update({"name": "'u'", "id": "id * 10"}, "id >= 4")
    table.overwrite(rows([7, 8], "u"), where="name = 'u'")
    table.delete("id = 7 OR id = 8")  # fragment 2 (the overwrite's rows) is dropped whole
    last = manifest(path, table.version)
    assert [int(f.id) for f in last.fragments] == [0]
    assert last.reader_feature_flags & 1 and last.writer_feature_flags & 1
    ids = lakecore_rows(path).column("id").to_pylist()
    assert ids == [1, 3]
    assert assert_same_as_pylance(path) == 7
    table.overwrite(rows([9]))
    assert lakecore_rows(path).column("id").to_pylist() == [9]
    table.delete()
    assert lakecore_rows(path).num_rows == 0
    assert assert_same_as_pylance(path) == 9
    # pylance appends and deletes on top of what lakecore wrote; lakecore reads them
    lance.write_dataset(rows([11, 12]), str(path), mode="append")
    lance.dataset(str(path)).delete("id = 12")
    table.append(rows([13]))
    assert lakecore_rows(path).column("id").to_pylist() == [11, 13]
    assert assert_same_as_pylance(path) == 12


def test_large_deletes_write_a_bitmap_and_small_ones_arrow(tmp_path: Path) -> None:
    path = tmp_path / "big"
    table = lakecore.create(str(path), pa.schema([("id", pa.int64())]), format="lance")
    table.append(pa.table({"id": list(range(12_000))}))
    table.delete("id < 10")
    assert [p.suffix for p in (path / "_deletions").iterdir()] == [".arrow"]
    table.delete("id % 2 = 0")
    suffixes = sorted(p.suffix for p in (path / "_deletions").iterdir())
    assert suffixes == [".arrow", ".bin"]
    assert manifest(path, table.version).fragments[0].deletion_file.num_deleted_rows == 6005
    assert lance.dataset(str(path)).count_rows() == 5995
    assert assert_same_as_pylance(path) == 4


def test_bad_input_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "bad"
    table = lakecore.create(str(path), SCHEMA, format="lance")
    version = table.append(rows([1])).version
    with pytest.raises(SchemaError):
        table.append(pa.table({"id": ["x"]}))
    with pytest.raises(SchemaError):
        table.append(pa.table({"id": [1], "nope": [2]}))
    with pytest.raises(ConstraintViolationError):
        table.overwrite(rows([5]), where="id = 1")
    with pytest.raises(SchemaError):
        table.update({"nope": "1"}, "id = 1")
    assert table.version == version
    assert len(list((path / "data").iterdir())) == 1
    assert assert_same_as_pylance(path) == 2


def test_writing_a_dataset_with_indices_keeps_them(tmp_path: Path) -> None:
    """Appends keep the index (tests/lance/test_index_writes.py has the rest); a whole-table
    overwrite, which would need it rebuilt, is refused."""
    path = tmp_path / "idx"
    ds = lance.write_dataset(pa.table({"id": list(range(100))}), str(path))
    ds.create_scalar_index("id", "BTREE")
    table = lakecore.open(str(path))
    table.append(pa.table({"id": [1]}))
    with pytest.raises(UnsupportedFeatureError, match="indices"):
        table.overwrite(pa.table({"id": [1]}))
    assert lance.dataset(str(path)).count_rows() == 101


def test_restore_commits_an_older_versions_content(tmp_path: Path) -> None:
    path = tmp_path / "r"
    table = lakecore.create(str(path), SCHEMA, format="lance")
    table.append(rows([1, 2, 3]))
    with_deletion = table.delete("id = 2").version
    lance.dataset(str(path)).tags.create("before-overwrite", with_deletion)
    table.overwrite(rows([9]))
    restored = table.restore(with_deletion).version
    assert lakecore_rows(path).column("id").to_pylist() == [1, 3]
    table.append(rows([4]))  # new fragment ids stay unique past the restore
    assert sorted(int(f.id) for f in manifest(path, table.version).fragments) == [0, 2]
    table.restore("before-overwrite")  # by tag
    assert lakecore_rows(path).column("id").to_pylist() == [1, 3]
    history = table.history()
    assert history[0].operation == "restore" and history[2].operation == "restore"
    assert restored == with_deletion + 2
    assert assert_same_as_pylance(path) == 7
    with pytest.raises(VersionNotFoundError):
        table.restore(99)


def _build_history(path: Path) -> Table:
    table = lakecore.create(str(path), SCHEMA, format="lance")
    table.append(rows([1, 2, 3]))
    table.delete("id = 1")
    table.update({"name": "'u'"}, "id = 2")
    lance.dataset(str(path)).tags.create("kept", 3)
    table.overwrite(rows([7]))
    table.append(rows([8]))
    return table


def _files(path: Path) -> set[str]:
    hint = "_versions/latest_version_hint.json"
    return {str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()} - {hint}


def test_vacuum_removes_what_pylance_cleanup_removes(tmp_path: Path) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    table = _build_history(ours)
    shutil.copytree(ours, theirs)
    with pytest.raises(InvalidArgumentError):
        table.vacuum(retention_hours=1, dry_run=True)
    listed = table.vacuum(retention_hours=0, dry_run=True, enforce_retention=False)
    assert _files(ours) >= set(listed)
    removed = table.vacuum(retention_hours=0, dry_run=False, enforce_retention=False)
    assert removed == listed and not set(removed) & _files(ours)
    lance.dataset(str(theirs)).cleanup_old_versions(
        older_than=datetime.timedelta(0), delete_unverified=True, error_if_tagged_old_versions=False
    )
    assert _files(ours) == _files(theirs)
    assert [v["version"] for v in lance.dataset(str(ours)).versions()] == [3, 6]
    assert lakecore_rows(ours, 3).equals(sort_rows(lance.dataset(str(ours), version=3).to_table()))
    assert lakecore_rows(ours).column("id").to_pylist() == [7, 8]
    with pytest.raises(VersionNotFoundError):
        table.snapshot(version=2)
    assert table.vacuum(retention_hours=0, dry_run=True, enforce_retention=False) == []
    table.append(rows([9]))
    assert assert_same_as_pylance(ours) == 3


@pytest.mark.parametrize("storage_version", ["2.0", "2.1"])
def test_datasets_keep_their_data_storage_version(tmp_path: Path, storage_version: str) -> None:
    path = tmp_path / storage_version
    nested = pa.schema(
        [
            ("id", pa.int64()),
            ("st", pa.struct([("a", pa.int32()), ("b", pa.list_(pa.string()))])),
            ("ls", pa.list_(pa.struct([("x", pa.int8())]))),
        ]
    )

    def data(ids: list[int]) -> pa.Table:
        return pa.table(
            {
                "id": ids,
                "st": [{"a": i, "b": [str(i)]} for i in ids],
                "ls": [[{"x": i % 100}] for i in ids],
            },
            schema=nested,
        )

    lance.write_dataset(data([1, 2]), str(path), data_storage_version=storage_version)
    table = lakecore.open(str(path))
    table.append(data([3, 4]))
    table.delete("id = 1")
    table.update({"id": "id + 10"}, "id = 4")
    last = manifest(path, table.version)
    assert last.data_format.version == storage_version
    theirs, ours = (f.files[0] for f in last.fragments[:2])
    assert (list(ours.fields), ours.file_minor_version) == (
        list(theirs.fields),
        theirs.file_minor_version,
    )
    assert lakecore_rows(path).column("id").to_pylist() == [2, 3, 14]
    assert assert_same_as_pylance(path) == 4
    if storage_version == "2.0":  # 2.0 files cannot hold a null struct: refused, typed
        with pytest.raises(ConstraintViolationError):
            table.append(pa.table({"id": [5], "st": [None], "ls": [[]]}, schema=nested))
        assert table.version == 4


def test_appending_to_every_corpus_dataset(tmp_path: Path) -> None:
    """Each corpus Lance dataset (copied) takes a lakecore append that pylance reads back, or
    refuses it before writing anything (legacy data files, old writer flags)."""
    if not (CORPUS / "lance").is_dir():
        pytest.skip(f"no corpus at {CORPUS}")
    outcomes: dict[str, list[str]] = {"appended": [], "refused": [], "unreadable": []}
    for source in sorted(p for p in (CORPUS / "lance").iterdir() if p.is_dir()):
        path = tmp_path / source.name
        shutil.copytree(source, path)
        before = _files(path)
        try:
            table = lakecore.open(str(path))
            rows_before = table.to_arrow()
        except CorruptTableError:  # fixtures whose data files are missing (see corpus.md)
            outcomes["unreadable"].append(source.name)
            continue
        extra = rows_before.slice(0, 1) if rows_before.num_rows else None
        try:
            if extra is None:
                raise UnsupportedFeatureError("empty", "no row to append")
            table.append(extra)
        except UnsupportedFeatureError:
            assert _files(path) == before, source.name  # refused before writing anything
            outcomes["refused"].append(source.name)
            continue
        assert lance.dataset(str(path)).count_rows() == rows_before.num_rows + 1, source.name
        assert sort_rows(lance.dataset(str(path)).to_table()).equals(lakecore_rows(path))
        outcomes["appended"].append(source.name)
    # Datasets with indices (scalar, full-text, vector) take appends since lakecore keeps
    # their indices unchanged (lakecore_lance.write.indices).
    assert outcomes["appended"] == [
        "0.27.0__legacy_fts_index",
        "gen__deletions_v2_manifest",
        "gen__many_fragments",
        "gen__nested_types",
        "gen__versions_v1_manifest",
        "v0.18.2__index_no_details",
        "v0.20.0__old_btree_bitmap_indices",
        "v0.21.0__bad_index_fragment_bitmap",
        "v0.27.1__pq_in_schema",
    ]
    assert (len(outcomes["refused"]), len(outcomes["unreadable"])) == (8, 2)
