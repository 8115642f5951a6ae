"""The legacy (v0.1) Lance data file reader: corpus files and pylance-written files.

The corpus tables with legacy data files are decoded with ``read_legacy_file`` and the rows of
every recorded version (deletions applied here, as the table layer does) must hash to the
expected digest. Files that pylance writes with ``data_storage_version="legacy"`` cover every
encoding (plain, booleans, var-binary, dictionary, lists, large lists, fixed-size lists,
structs, null) over several batches, and must equal pylance's own reading, which is the
reference for the format's null rules (no nulls for numbers, lists, structs; empty = null for
nullable strings).
"""

from __future__ import annotations

import decimal
import importlib.util
import json
import struct
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lakecore_lance.legacy import (
    LegacyField,
    fields_from_proto,
    read_legacy_file,
    read_legacy_statistics,
)
from lakecore_lance.proto import table_pb2

from lakecore.errors import CorruptTableError, InvalidArgumentError, UnsupportedFeatureError
from lakecore.storage import open_storage
from lakecore.storage.base import Storage
from tests.corpus import CORPUS

lance = pytest.importorskip("lance")


def _digest_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("corpus_digest", CORPUS / "digest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _manifest(raw: bytes) -> Any:
    """A manifest file's ``Manifest`` message (footer: u64 position, 8 bytes, magic)."""
    (pos,) = struct.unpack("<Q", raw[-16:-8])
    (length,) = struct.unpack("<I", raw[pos : pos + 4])
    manifest = table_pb2.Manifest()
    manifest.ParseFromString(raw[pos + 4 : pos + 4 + length])
    return manifest


def _manifest_path(storage: Storage, version: int | None = None) -> str:
    """The manifest of ``version`` (the latest by default), V1 or V2 naming."""
    by_version = {}
    for info in storage.list_dir("_versions"):
        stem = Path(info.path).stem
        if info.path.endswith(".manifest") and stem.isdigit():
            number = int(stem)
            by_version[number if len(stem) < 20 else 2**64 - 1 - number] = info.path
    return by_version[max(by_version) if version is None else version]


def _read_version(
    storage: Storage, version: int | None = None, *, embedded: bool = False
) -> pa.Table:
    """Every row of a legacy dataset version, deletions applied (what the table layer does).

    A fragment's columns come from the first of its files that stores each field (pylance's
    rule; v0.10.5__corrupt_schema has field ids in two files of one fragment).
    """
    mpath = _manifest_path(storage, version)
    manifest = _manifest(storage.read(mpath))
    roots = fields_from_proto(list(manifest.fields))
    names = [f.name for f in roots]
    parts = []
    for frag in manifest.fragments:
        columns: dict[str, pa.ChunkedArray] = {}
        for data_file in frag.files:
            table = read_legacy_file(
                storage,
                f"data/{data_file.path}",
                list(manifest.fields),
                file_field_ids=list(data_file.fields),
                dictionary_file=None if embedded else mpath,
            )
            for name in table.column_names:
                columns.setdefault(name, table[name])
        part = pa.table(
            [columns[n] for n in names], schema=pa.schema([f.arrow_field() for f in roots])
        )
        if frag.HasField("deletion_file"):
            part = part.filter(pa.array(_kept_rows(storage, frag)))
        parts.append(part)
    if not parts:
        return pa.schema([f.arrow_field() for f in roots]).empty_table()
    return pa.concat_tables(parts)


def _kept_rows(storage: Storage, frag: Any) -> Any:
    deletion = frag.deletion_file
    assert deletion.file_type == 0, "the corpus legacy tables only have Arrow deletion files"
    raw = storage.read(f"_deletions/{frag.id}-{deletion.read_version}-{deletion.id}.arrow")
    deleted = ipc.open_file(pa.py_buffer(raw)).read_all().column(0).to_numpy()
    rows = frag.physical_rows or _file_rows(storage, frag)
    keep = np.ones(rows, dtype=bool)
    keep[deleted] = False
    return keep


def _file_rows(storage: Storage, frag: Any) -> int:
    # lance 0.7.5 did not record physical_rows: count the first file's rows.
    first = frag.files[0]
    table = read_legacy_file(storage, f"data/{first.path}", [], file_field_ids=list(first.fields))
    return int(table.num_rows)


# --- the corpus ------------------------------------------------------------------------------

LEGACY_CORPUS = (
    "v0.7.5__with_deletions",
    "v0.10.5__corrupt_schema",
    "v0.15.0__v1_with_files",
    "v0.15.0__v1_no_files",
    "v0.5.9__no_fragments",
)


def _corpus_cases() -> list[tuple[str, int]]:
    cases = []
    for table in LEGACY_CORPUS:
        expected = json.loads((CORPUS / "expected" / "lance" / f"{table}.json").read_text())
        cases += [(table, int(v)) for v in expected["versions"]]
    return cases


CORPUS_CASES = _corpus_cases()


def test_corpus_case_count() -> None:
    # 2 + 6 + 1 + 1 + 1 versions; 9 legacy data files across them.
    assert len(CORPUS_CASES) == 11


@pytest.mark.parametrize(("table", "version"), CORPUS_CASES)
def test_corpus_versions_match_expected_digest(table: str, version: int) -> None:
    expected = json.loads((CORPUS / "expected" / "lance" / f"{table}.json").read_text())
    want = expected["versions"][str(version)]
    storage = open_storage(str(CORPUS / "lance" / table))
    got = _read_version(storage, version)
    assert got.num_rows == want["num_rows"]
    assert [(f.name, str(f.type)) for f in got.schema] == [
        (c["name"], c["type"]) for c in want["schema"]
    ]
    assert _digest_module().table_digest(got) == want["digest"]


def test_corpus_legacy_files_are_all_read() -> None:
    """Every legacy data file some manifest of the corpus references is read in full."""
    referenced: dict[Path, tuple[Any, list[int]]] = {}
    for table in LEGACY_CORPUS:
        root = CORPUS / "lance" / table
        for mpath in sorted((root / "_versions").glob("*.manifest")):
            manifest = _manifest(mpath.read_bytes())
            for frag in manifest.fragments:
                for data_file in frag.files:
                    referenced[root / "data" / data_file.path] = (manifest, list(data_file.fields))
    on_disk = [p for p in (CORPUS / "lance").glob("*/data/*.lance") if _is_legacy(p)]
    present = {p: v for p, v in referenced.items() if p.exists()}
    assert (len(on_disk), len(present)) == (9, 8)  # v0.15.0__v1_with_files has an orphan
    for path, (manifest, field_ids) in present.items():
        storage = open_storage(str(path.parents[1]))
        table = read_legacy_file(
            storage, f"data/{path.name}", list(manifest.fields), file_field_ids=field_ids
        )
        assert table.num_rows > 0 and table.num_columns == len(field_ids)


def _is_legacy(path: Path) -> bool:
    return path.read_bytes()[-8:-4] in (b"\0\0\1\0", b"\0\0\2\0")


def test_current_format_file_is_refused_naming_it() -> None:
    # v0.16.0__wrong_data_version_can_fix: the manifest says 0.1, the files are 2.0 (0.3).
    root = CORPUS / "lance" / "v0.16.0__wrong_data_version_can_fix"
    name = sorted(p.name for p in (root / "data").iterdir())[0]
    storage = open_storage(str(root))
    manifest = _manifest(storage.read("_versions/1.manifest"))
    with pytest.raises(CorruptTableError, match=f"{name}.*0.3 is not the legacy format"):
        read_legacy_file(storage, f"data/{name}", list(manifest.fields))


# --- files pylance writes in the legacy format ---------------------------------------------------


def _col(n: int, typ: pa.DataType, value: Callable[[int], Any]) -> pa.Array:
    """A column with a null every fourth row (the legacy writer stores its slot anyway)."""
    return pa.array([None if i % 4 == 3 else value(i) for i in range(n)], typ)


def _every_encoding(n: int) -> pa.Table:
    inner = pa.struct([("z", pa.float64())])
    struct_type = pa.struct(
        [("a", pa.int32()), ("s", pa.string()), ("l", pa.list_(pa.int8())), ("in", inner)]
    )
    kv = pa.struct([("k", pa.string()), ("v", pa.int64())])
    return pa.table(
        {
            "i16": _col(n, pa.int16(), lambda i: i - 5),
            "u8": _col(n, pa.uint8(), lambda i: i % 256),
            "u64": _col(n, pa.uint64(), lambda i: 2**63 + i),
            "i64": _col(n, pa.int64(), lambda i: -i),
            "f16": _col(n, pa.float16(), lambda i: None),
            "f32": _col(n, pa.float32(), lambda i: i / 4),
            "f64": _col(n, pa.float64(), lambda i: i / 3),
            "bool": _col(n, pa.bool_(), lambda i: i % 3 == 0),
            "str": _col(n, pa.string(), lambda i: "é" * (i % 3)),
            "bin": _col(n, pa.binary(), lambda i: bytes([i % 256]) * (i % 2)),
            "lstr": _col(n, pa.large_string(), str),
            "lbin": _col(n, pa.large_binary(), lambda i: bytes([i % 256]) * (i % 3)),
            "dict_s": pa.array([["a", "bb", None][i % 3] for i in range(n)]).dictionary_encode(),
            "dict_i": pa.DictionaryArray.from_arrays(
                pa.array([i % 2 for i in range(n)], pa.int8()), pa.array([10, 20], pa.int64())
            ),
            "lst": _col(n, pa.list_(pa.int64()), lambda i: list(range(i % 4))),
            "lst_str": _col(
                n, pa.list_(pa.string()), lambda i: [str(j) for j in range(i % 3)] + [""]
            ),
            "lst_lst": _col(n, pa.list_(pa.list_(pa.int32())), lambda i: [[i], [], [i, i]]),
            "llst": _col(n, pa.large_list(pa.float32()), lambda i: [float(i)] * (i % 3)),
            "fsl": _col(n, pa.list_(pa.float32(), 3), lambda i: [i, i + 1, i + 2]),
            "fsl_bool": _col(n, pa.list_(pa.bool_(), 3), lambda i: [True, i % 2 == 0, False]),
            "fsl_fsl": _col(n, pa.list_(pa.list_(pa.int16(), 2), 2), lambda i: [[i, i], [1, 2]]),
            "fsb": _col(n, pa.binary(3), lambda i: bytes([i % 256, 1, 2])),
            "st": _col(
                n,
                struct_type,
                lambda i: {
                    "a": i,
                    "s": str(i) if i % 2 else None,
                    "l": [1] * (i % 3),
                    "in": {"z": i / 2},
                },
            ),
            "lst_st": _col(n, pa.list_(kv), lambda i: [{"k": f"k{i}", "v": i}] * (i % 3)),
            "ts_us": _col(n, pa.timestamp("us", "UTC"), lambda i: i * 1000003),
            "ts_ns": _col(n, pa.timestamp("ns"), lambda i: i),
            "ts_s": _col(n, pa.timestamp("s", "America/New_York"), lambda i: i),
            "d32": _col(n, pa.date32(), lambda i: i),
            "d64": _col(n, pa.date64(), lambda i: i * 86_400_000),
            "t32": _col(n, pa.time32("ms"), lambda i: i),
            "t64": _col(n, pa.time64("ns"), lambda i: i),
            "dur": _col(n, pa.duration("us"), lambda i: i),
            "dec": _col(n, pa.decimal128(12, 3), lambda i: decimal.Decimal(i * 1001) / 1000),
            "dec256": _col(n, pa.decimal256(40, 2), lambda i: decimal.Decimal(i)),
            "nul": pa.nulls(n),
            "lst_bool": _col(n, pa.list_(pa.bool_()), lambda i: [j % 2 == 0 for j in range(i % 5)]),
            "lst_fsl": _col(n, pa.list_(pa.list_(pa.int32(), 2)), lambda i: [[i, 1]] * (i % 3)),
            "lst_dict": pa.array(
                [["x"] * (i % 3) for i in range(n)],
                pa.list_(pa.dictionary(pa.int16(), pa.string())),
            ),
            "st_dict": pa.StructArray.from_arrays(
                [pa.array([["a", "b"][i % 2] for i in range(n)]).dictionary_encode()], ["d"]
            ),
            "llst_lstr": _col(
                n, pa.large_list(pa.large_string()), lambda i: ["a" * j for j in range(i % 4)]
            ),
        }
    )


ENCODING_COLUMNS = _every_encoding(1).column_names


def _write_legacy(path: Path, table: pa.Table, **kwargs: Any) -> Any:
    return lance.write_dataset(
        table, str(path), data_storage_version="legacy", max_rows_per_group=3, **kwargs
    )


@pytest.fixture(scope="module")
def wide_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("legacy") / "wide"
    _write_legacy(root, _every_encoding(10))
    return root


def test_encoding_case_count() -> None:
    assert len(ENCODING_COLUMNS) == 40


@pytest.mark.parametrize("column", ENCODING_COLUMNS)
def test_each_encoding_equals_pylance(wide_dataset: Path, column: str) -> None:
    storage = open_storage(str(wide_dataset))
    manifest = _manifest(storage.read(_manifest_path(storage)))
    [frag] = manifest.fragments
    [data_file] = frag.files
    top = {f.name: f.id for f in manifest.fields if f.parent_id == -1}
    got = read_legacy_file(
        storage,
        f"data/{data_file.path}",
        list(manifest.fields),
        [top[column]],
        file_field_ids=list(data_file.fields),
        dictionary_file=_manifest_path(storage),
    )
    want = lance.dataset(str(wide_dataset)).to_table(columns=[column])
    assert got.num_rows == 10
    assert len(got[column].chunks) == 4  # batches of 3 rows: 3 + 3 + 3 + 1
    assert got.schema == want.schema
    assert got.combine_chunks().equals(want.combine_chunks())


def test_whole_file_with_embedded_dictionaries_equals_pylance(wide_dataset: Path) -> None:
    storage = open_storage(str(wide_dataset))
    got = _read_version(storage, embedded=True)
    want = lance.dataset(str(wide_dataset)).to_table()
    assert got.combine_chunks().equals(want.combine_chunks())
    # The legacy null rules, as pylance reads them back.
    row = got.slice(3, 1).to_pylist()[0]
    assert (row["i64"], row["bool"], row["lst"], row["str"]) == (0, False, [], None)
    assert row["st"] == {"a": 0, "s": None, "l": [], "in": {"z": 0.0}}


def test_non_nullable_string_keeps_empty_values(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("s", pa.string(), nullable=False)])
    _write_legacy(tmp_path / "d", pa.table({"s": ["", "a", ""]}, schema=schema))
    got = _read_version(open_storage(str(tmp_path / "d")))
    assert got["s"].to_pylist() == ["", "a", ""]
    assert got.equals(lance.dataset(str(tmp_path / "d")).to_table())


def test_appends_added_and_dropped_columns_equal_pylance(tmp_path: Path) -> None:
    root = tmp_path / "evolving"
    base = pa.table({"id": pa.array(range(7), pa.int64()), "name": [f"n{i}" for i in range(7)]})
    _write_legacy(root, base, max_rows_per_file=4)
    _write_legacy(root, base.slice(2, 3), mode="append")
    ds = lance.dataset(str(root))
    ds.add_columns({"double_id": "id * 2", "tag": "concat(name, '!')"})
    ds = lance.dataset(str(root))
    ds.drop_columns(["name"])
    storage = open_storage(str(root))
    manifest = _manifest(storage.read(_manifest_path(storage)))
    # added columns live in their own data files, whose page tables start at their first id
    assert sorted(len(f.files) for f in manifest.fragments) == [2, 2, 2]
    assert all(list(f.files[1].fields) == [2, 3] for f in manifest.fragments)
    for version in range(1, 5):
        got = _read_version(storage, version)
        want = lance.dataset(str(root), version=version).to_table()
        assert got.equals(want), version


def test_projection_returns_requested_fields_in_order(wide_dataset: Path) -> None:
    storage = open_storage(str(wide_dataset))
    manifest = _manifest(storage.read(_manifest_path(storage)))
    top = {f.name: f.id for f in manifest.fields if f.parent_id == -1}
    path = f"data/{manifest.fragments[0].files[0].path}"
    got = read_legacy_file(storage, path, list(manifest.fields), [top["st"], top["i16"]])
    assert got.column_names == ["st", "i16"]
    none = read_legacy_file(storage, path, list(manifest.fields), [])
    assert (none.num_columns, none.num_rows) == (0, 10)
    with pytest.raises(InvalidArgumentError, match="not top-level"):
        read_legacy_file(storage, path, list(manifest.fields), [top["st"] + 1])


class _CountingStorage:
    """Delegates to a storage and records every ranged read."""

    def __init__(self, inner: Storage) -> None:
        self.inner = inner
        self.reads: list[tuple[int | None, int | None]] = []

    def head(self, path: str) -> Any:
        return self.inner.head(path)

    def read(self, path: str, start: int | None = None, end: int | None = None) -> bytes:
        self.reads.append((start, end))
        return self.inner.read(path, start, end)


def test_reads_ranges_not_the_whole_file(tmp_path: Path) -> None:
    n = 40_000
    table = pa.table({"a": pa.array(range(n), pa.int64()), "b": pa.array(range(n), pa.float64())})
    lance.write_dataset(table, str(tmp_path / "big"), data_storage_version="legacy")
    storage = open_storage(str(tmp_path / "big"))
    manifest = _manifest(storage.read(_manifest_path(storage)))
    path = f"data/{manifest.fragments[0].files[0].path}"
    size = storage.head(path).size
    counting = _CountingStorage(storage)
    got = read_legacy_file(counting, path, list(manifest.fields), [0])  # type: ignore[arg-type]
    assert got["a"].to_pylist() == list(range(n))
    assert all(start is not None and end is not None for start, end in counting.reads)
    read_bytes = sum(end - start for start, end in counting.reads)  # type: ignore[operator]
    assert size > 600_000 and read_bytes < size * 0.6  # column b's pages are never read


# --- errors ------------------------------------------------------------------------------------


def test_unknown_logical_type_is_unsupported_naming_it(wide_dataset: Path) -> None:
    storage = open_storage(str(wide_dataset))
    manifest = _manifest(storage.read(_manifest_path(storage)))
    path = f"data/{manifest.fragments[0].files[0].path}"
    fields = [LegacyField(id=0, name="i16", logical_type="int128", nullable=True)]
    with pytest.raises(UnsupportedFeatureError, match="int128"):
        read_legacy_file(
            storage, path, fields, file_field_ids=list(manifest.fragments[0].files[0].fields)
        )


@pytest.mark.parametrize(("encoding", "name"), [(4, "RLE"), (9, "9")])
def test_rle_and_unknown_encodings_are_unsupported_naming_them(
    wide_dataset: Path, encoding: int, name: str
) -> None:
    storage = open_storage(str(wide_dataset))
    manifest = _manifest(storage.read(_manifest_path(storage)))
    data_file = manifest.fragments[0].files[0]
    fields = [LegacyField(id=0, name="i16", logical_type="int16", nullable=True, encoding=encoding)]
    with pytest.raises(UnsupportedFeatureError, match=f"encoding {name}") as info:
        read_legacy_file(
            storage, f"data/{data_file.path}", fields, file_field_ids=list(data_file.fields)
        )
    assert info.value.feature == f"lance legacy encoding {name}"


def test_dictionary_of_floats_is_unsupported(wide_dataset: Path) -> None:
    storage = open_storage(str(wide_dataset))
    manifest = _manifest(storage.read(_manifest_path(storage)))
    data_file = manifest.fragments[0].files[0]
    top = {f.name: f for f in manifest.fields if f.parent_id == -1}
    fld = top["dict_i"]
    fields = [
        LegacyField(
            id=fld.id,
            name="d",
            logical_type="dict:double:int8:false",
            nullable=True,
            dictionary=(fld.dictionary.offset, fld.dictionary.length),
        )
    ]
    with pytest.raises(UnsupportedFeatureError, match="dictionary values of type double"):
        read_legacy_file(
            storage,
            f"data/{data_file.path}",
            fields,
            file_field_ids=list(data_file.fields),
            dictionary_file=_manifest_path(storage),
        )


@pytest.fixture(scope="module")
def wide_file(wide_dataset: Path) -> tuple[bytes, list[Any], list[int], bytes]:
    storage = open_storage(str(wide_dataset))
    mpath = _manifest_path(storage)
    manifest = _manifest(storage.read(mpath))
    data_file = manifest.fragments[0].files[0]
    raw = storage.read(f"data/{data_file.path}")
    return raw, list(manifest.fields), list(data_file.fields), storage.read(mpath)


def _read_bytes(
    tmp_path: Path, raw: bytes, wide: tuple[bytes, list[Any], list[int], bytes]
) -> pa.Table:
    (tmp_path / "f.lance").write_bytes(raw)
    (tmp_path / "m.manifest").write_bytes(wide[3])
    storage = open_storage(str(tmp_path))
    return read_legacy_file(
        storage, "f.lance", wide[1], file_field_ids=wide[2], dictionary_file="m.manifest"
    )


TRUNCATIONS = (0, 1, 15, 16, 17, 100, 1000, -1, -4, -8, -15, -16, -17, -40, -200)


@pytest.mark.parametrize("cut", TRUNCATIONS)
def test_truncated_file_is_corrupt_naming_it(
    tmp_path: Path, wide_file: tuple[bytes, list[Any], list[int], bytes], cut: int
) -> None:
    raw = wide_file[0]
    with pytest.raises(CorruptTableError, match=r"f\.lance"):
        _read_bytes(tmp_path, raw[:cut], wide_file)


def test_byte_flips_raise_only_lakecore_errors(
    tmp_path: Path, wide_file: tuple[bytes, list[Any], list[int], bytes]
) -> None:
    """300 random byte changes (half of them in the metadata and page tables at the end), each
    file read for its rows and its statistics."""
    raw = wide_file[0]
    rng = np.random.default_rng(7)
    outcomes = {"read": 0, "corrupt": 0, "unsupported": 0}
    for i in range(300):
        buf = bytearray(raw)
        lo = 0 if i % 2 else max(0, len(raw) - 1200)
        for _ in range(1 + i % 3):
            at = int(rng.integers(lo, len(raw)))
            buf[at] = int(rng.integers(0, 256))
        try:
            _read_bytes(tmp_path, bytes(buf), wide_file)
            read_legacy_statistics(open_storage(str(tmp_path)), "f.lance")
            outcomes["read"] += 1
        except CorruptTableError as exc:
            assert "f.lance" in str(exc)
            outcomes["corrupt"] += 1
        except UnsupportedFeatureError:
            outcomes["unsupported"] += 1
    assert sum(outcomes.values()) == 300
    assert outcomes["corrupt"] >= 30, outcomes


def test_tombstoned_ids_take_the_extent_from_the_embedded_schema(wide_dataset: Path) -> None:
    """DataFile.fields with -2 (a field rewritten into a newer file): Lance's rule "the page
    table starts at the first id" cannot hold; the schema the file embeds gives the extent."""
    storage = open_storage(str(wide_dataset))
    manifest = _manifest(storage.read(_manifest_path(storage)))
    data_file = manifest.fragments[0].files[0]
    ids = list(data_file.fields)
    tombstoned = [-2, *ids[1:]]
    path = f"data/{data_file.path}"
    got = read_legacy_file(storage, path, list(manifest.fields), file_field_ids=tombstoned)
    want = lance.dataset(str(wide_dataset)).to_table()
    assert got.column_names == want.column_names[1:]  # field 0 lives elsewhere now
    assert got.combine_chunks().equals(want.drop_columns([want.column_names[0]]).combine_chunks())
    # Lance's own rule with the first id gone would misplace every page.
    with pytest.raises(CorruptTableError):
        read_legacy_file(storage, path, list(manifest.fields), file_field_ids=ids[1:])


def test_statistics_bound_each_batch(tmp_path: Path) -> None:
    """The writer's per-batch null counts and min/max, checked against the written rows."""
    source = pa.table(
        {
            "n": pa.array([5, None, -2, 7, None, None, 1], pa.int64()),
            "s": pa.array(["b", "a", None, "c", "dd", "cc", None]),
        }
    )
    _write_legacy(tmp_path / "d", source)
    storage = open_storage(str(tmp_path / "d"))
    manifest = _manifest(storage.read(_manifest_path(storage)))
    stats = read_legacy_statistics(storage, f"data/{manifest.fragments[0].files[0].path}")
    assert stats is not None
    assert stats.to_pydict() == {
        "num_rows": [3, 3, 1],
        "0": [
            {"null_count": 1, "min_value": -2, "max_value": 5},
            {"null_count": 2, "min_value": 7, "max_value": 7},
            {"null_count": 0, "min_value": 1, "max_value": 1},
        ],
        "1": [
            {"null_count": 1, "min_value": "a", "max_value": "b"},
            {"null_count": 0, "min_value": "c", "max_value": "dd"},
            # an all-null batch has unknown string bounds: null
            {"null_count": 1, "min_value": None, "max_value": None},
        ],
    }


def test_statistics_absent_in_lance_0_7_files() -> None:
    root = CORPUS / "lance" / "v0.7.5__with_deletions"
    name = next((root / "data").iterdir()).name
    assert read_legacy_statistics(open_storage(str(root)), f"data/{name}") is None


def test_statistics_of_a_truncated_file_are_corrupt(
    tmp_path: Path, wide_file: tuple[bytes, list[Any], list[int], bytes]
) -> None:
    (tmp_path / "f.lance").write_bytes(wide_file[0][:-3])
    with pytest.raises(CorruptTableError, match=r"f\.lance"):
        read_legacy_statistics(open_storage(str(tmp_path)), "f.lance")


@pytest.mark.s3
def test_reads_a_legacy_file_from_s3(
    wide_dataset: Path, s3_uri: str, s3_storage_options: dict[str, Any]
) -> None:
    """The reader only uses ``Storage.head``/``read``: an object store works as a disk does."""
    local = open_storage(str(wide_dataset))
    remote = open_storage(s3_uri, s3_storage_options)
    for info in local.list_all():
        remote.put(info.path, local.read(info.path))
    assert _read_version(remote).equals(_read_version(local))
    manifest = _manifest(remote.read(_manifest_path(remote)))
    stats = read_legacy_statistics(remote, f"data/{manifest.fragments[0].files[0].path}")
    assert stats is not None and stats.num_rows == 4


_ROWS = st.lists(
    st.tuples(
        st.none() | st.integers(-(2**31), 2**31 - 1),
        st.none() | st.text(max_size=4),
        st.none() | st.lists(st.none() | st.integers(-(2**15), 2**15 - 1), max_size=4),
        st.none() | st.booleans(),
    ),
    max_size=30,
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=_ROWS, group=st.integers(1, 8))
def test_random_tables_equal_pylance(tmp_path: Path, rows: list[Any], group: int) -> None:
    """Random values (nulls, empty strings and lists, odd batch sizes) read as pylance does."""
    schema = pa.schema(
        [("i", pa.int32()), ("s", pa.string()), ("l", pa.list_(pa.int16())), ("b", pa.bool_())]
    )
    table = pa.Table.from_pylist(
        [dict(zip(schema.names, row, strict=True)) for row in rows], schema=schema
    )
    root = tmp_path / f"r{len(list(tmp_path.iterdir()))}"
    lance.write_dataset(table, str(root), data_storage_version="legacy", max_rows_per_group=group)
    got = _read_version(open_storage(str(root)))
    want = lance.dataset(str(root)).to_table()
    assert got.combine_chunks().equals(want.combine_chunks())


def test_dictionaries_of_later_versions_are_read_from_their_manifest(tmp_path: Path) -> None:
    """Every manifest a commit writes carries the dictionary values again, at its own offsets."""
    root = tmp_path / "dict"
    table = pa.table(
        {"d": pa.array(["x", "yy", "x", None]).dictionary_encode(), "i": pa.array([1, 2, 3, 4])}
    )
    _write_legacy(root, table)
    _write_legacy(root, table.slice(1, 2), mode="append")
    lance.dataset(str(root)).delete("i = 3")
    storage = open_storage(str(root))
    for version in (1, 2, 3):
        for embedded in (False, True):
            got = _read_version(storage, version, embedded=embedded)
            want = lance.dataset(str(root), version=version).to_table()
            assert got.equals(want), (version, embedded)
