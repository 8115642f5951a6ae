"""Deletion vectors: descriptors, the RoaringBitmapArray format, DV files, and real Spark DVs."""

from __future__ import annotations

import json
import os
import struct
import uuid
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lakecore_delta.deletion_vectors import (
    DeletionVectorDescriptor,
    encode_dv_file,
    inline_descriptor,
    keep_mask,
    load_deletion_vector,
    uuid_descriptor,
)
from lakecore_delta.dv_bitmap import (
    DV_MAGIC_NUMBER,
    deserialize_deletion_vector,
    serialize_deletion_vector,
)
from lakecore_delta.z85 import z85_encode
from pyroaring import BitMap, BitMap64

from lakecore.errors import CorruptTableError
from lakecore.storage import open_storage

PROTOCOL_UUID = uuid.UUID("d2c639aa-8816-431a-aaf6-d3fe2512ff61")
FILE_UUID = uuid.UUID("61d16c75-6994-46b7-a15b-8b538852e50e")

row_index = st.one_of(
    st.integers(0, 70_000),  # several 16-bit containers of the first bucket
    st.integers(2**32 - 3, 2**32 + 3),  # across the first bucket boundary
    st.integers(0, 2**63 - 1),  # anywhere a Delta row index may be
)
row_sets = st.sets(row_index, max_size=300)


class MemoryReader:
    """A ``read(path, start, end)`` callable over a dict of files that records its calls."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files
        self.calls: list[tuple[str, int, int]] = []

    def __call__(self, path: str, start: int, end: int) -> bytes:
        self.calls.append((path, start, end))
        if path not in self.files:
            raise FileNotFoundError(path)
        return self.files[path][start:end]


def dv_chunk(bitmap_data: bytes) -> bytes:
    """One DV as stored in a file after the version byte: size, data, CRC-32 (big-endian)."""
    return (
        struct.pack(">I", len(bitmap_data))
        + bitmap_data
        + struct.pack(">I", zlib.crc32(bitmap_data))
    )


def file_dv(rows: list[int]) -> tuple[DeletionVectorDescriptor, MemoryReader]:
    """A ``'u'`` DV in a one-DV file, and a reader holding that file."""
    payload, offset, size = encode_dv_file(serialize_deletion_vector(rows))
    descriptor = uuid_descriptor(
        FILE_UUID, offset=offset, size_in_bytes=size, cardinality=len(set(rows))
    )
    assert descriptor.relative_path is not None
    return descriptor, MemoryReader({descriptor.relative_path: payload})


def as_list(rows: np.ndarray[Any, Any]) -> list[int]:
    assert rows.dtype == np.uint64
    return [int(r) for r in rows]


# --- descriptors ---------------------------------------------------------------------------


def test_unique_id_appends_offset_only_when_set() -> None:
    assert DeletionVectorDescriptor("u", "abc", 4, 40, 6).unique_id == "uabc@4"
    assert DeletionVectorDescriptor("i", "abc", None, 40, 6).unique_id == "iabc"
    assert DeletionVectorDescriptor("p", "s3://b/x.bin", 0, 40, 6).unique_id == "ps3://b/x.bin@0"


def test_relative_path_with_random_prefix_protocol_example() -> None:
    descriptor = DeletionVectorDescriptor("u", "ab^-aqEH.-t@S}K{vb[*k^", 4, 40, 6)
    name = f"deletion_vector_{PROTOCOL_UUID}.bin"
    assert descriptor.relative_path == f"ab/{name}"
    assert descriptor.absolute_path("s3://mytable/") == f"s3://mytable/ab/{name}"
    assert descriptor.absolute_path("s3://mytable") == f"s3://mytable/ab/{name}"


def test_relative_path_without_prefix() -> None:
    descriptor = uuid_descriptor(FILE_UUID, offset=1, size_in_bytes=36, cardinality=2)
    assert descriptor.path_or_inline_dv == "vBn[lx{q8@P<9BNH/isA"
    assert descriptor.relative_path == f"deletion_vector_{FILE_UUID}.bin"
    assert descriptor.absolute_path("/data/t") == f"/data/t/deletion_vector_{FILE_UUID}.bin"


def test_uuid_descriptor_with_prefix_round_trips() -> None:
    descriptor = uuid_descriptor(
        PROTOCOL_UUID, offset=4, size_in_bytes=40, cardinality=6, prefix="ab"
    )
    assert descriptor == DeletionVectorDescriptor("u", "ab^-aqEH.-t@S}K{vb[*k^", 4, 40, 6)


def test_absolute_path_descriptor_is_returned_as_written() -> None:
    for path in ("s3://mytable/deletion_vector_x.bin", "file:/tmp/t/dv.bin", "/tmp/t/dv.bin"):
        descriptor = DeletionVectorDescriptor("p", path, 4, 40, 6)
        assert descriptor.absolute_path("/elsewhere") == path
        assert descriptor.relative_path is None


def test_inline_descriptor_has_no_path() -> None:
    descriptor = inline_descriptor([1, 2])
    assert descriptor.absolute_path("/t") is None and descriptor.relative_path is None


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (("x", "abc", None, 1, 1), "unknown storageType"),
        (("u", "abc", -1, 1, 1), "offset=-1"),
        (("u", "abc", 1, -1, 1), "size_in_bytes=-1"),
        (("u", "abc", 1, 1, -1), "cardinality=-1"),
    ],
)
def test_invalid_descriptor_is_corrupt(fields: tuple[Any, ...], message: str) -> None:
    with pytest.raises(CorruptTableError, match=message):
        DeletionVectorDescriptor(*fields)


@pytest.mark.parametrize("encoded", ["short", "ab" + "~" * 20])
def test_bad_uuid_path_is_corrupt(encoded: str) -> None:
    descriptor = DeletionVectorDescriptor("u", encoded, 1, 34, 1)
    with pytest.raises(CorruptTableError, match="UUID"):
        descriptor.absolute_path("/t")
    with pytest.raises(CorruptTableError, match="UUID"):
        load_deletion_vector(descriptor, MemoryReader({}))


def test_uuid_groups_above_32_bits_wrap_like_delta_spark() -> None:
    # '#####' is 85**5 - 1; Delta's Base85Codec keeps the low 32 bits (0x08780EC4) per group.
    descriptor = DeletionVectorDescriptor("u", "#####" * 4, 1, 34, 1)
    word = ((85**5 - 1) % 2**32).to_bytes(4, "big")
    assert descriptor.relative_path == f"deletion_vector_{uuid.UUID(bytes=word * 4)}.bin"


# --- RoaringBitmapArray bytes --------------------------------------------------------------


@given(row_sets)
def test_serialize_round_trip(rows: set[int]) -> None:
    data = serialize_deletion_vector(rows)
    assert struct.unpack_from("<I", data)[0] == DV_MAGIC_NUMBER
    assert as_list(deserialize_deletion_vector(data)) == sorted(rows)


@given(row_sets)
def test_reads_what_an_independent_portable_writer_wrote(rows: set[int]) -> None:
    # pyroaring's 64-bit bitmap writes the RoaringFormatSpec portable 64-bit layout itself.
    data = struct.pack("<I", DV_MAGIC_NUMBER) + BitMap64(rows).serialize()
    assert as_list(deserialize_deletion_vector(data)) == sorted(rows)


@pytest.mark.parametrize("run_optimize", [True, False])
def test_all_container_kinds_round_trip(run_optimize: bool) -> None:
    # array (<= 4096 values), bitset (> 4096 scattered), run (clustered); >= 4 containers with
    # runs makes the 32-bit serialization carry its offset header.
    rows = set(range(0, 3000, 7)) | set(range(65536, 65536 + 60000, 3))
    rows |= set(range(3 * 65536, 3 * 65536 + 50000)) | {5 * 65536 + 1}
    rows |= {2**32 + r for r in (0, 1, 2, 40000, 300000)} | {2**40 + r for r in range(5000)}
    buckets = {}
    for key in (0, 1, 2**8):
        low = BitMap(r & 0xFFFFFFFF for r in rows if r >> 32 == key)
        if run_optimize:
            low.run_optimize()
        buckets[key] = low.serialize()
    data = struct.pack("<IQ", DV_MAGIC_NUMBER, len(buckets))
    data += b"".join(struct.pack("<I", key) + blob for key, blob in buckets.items())
    assert as_list(deserialize_deletion_vector(data)) == sorted(rows)
    assert as_list(deserialize_deletion_vector(serialize_deletion_vector(rows))) == sorted(rows)


def test_reads_empty_buckets() -> None:
    # The reference writer keeps one (possibly empty) bucket per key below the highest.
    data = struct.pack("<IQ", DV_MAGIC_NUMBER, 3)
    data += struct.pack("<I", 0) + BitMap([5]).serialize()
    data += struct.pack("<I", 1) + BitMap().serialize()
    data += struct.pack("<I", 2) + BitMap([7]).serialize()
    assert as_list(deserialize_deletion_vector(data)) == [5, 2 * 2**32 + 7]


def test_serialize_empty_set() -> None:
    data = serialize_deletion_vector([])
    assert data == struct.pack("<IQ", DV_MAGIC_NUMBER, 0)
    assert deserialize_deletion_vector(data).size == 0


def test_serialize_accepts_numpy_and_drops_duplicates() -> None:
    for array in (np.array([9, 3, 3, 2**35], dtype=np.int64), np.array([9, 3, 2**35], np.uint64)):
        assert as_list(deserialize_deletion_vector(serialize_deletion_vector(array))) == [
            3,
            9,
            2**35,
        ]


@pytest.mark.parametrize(
    "rows", [[-1], [2**63], [2**64], np.array([-5], dtype=np.int32), np.array([2**63], np.uint64)]
)
def test_serialize_rejects_out_of_range_rows(rows: Any) -> None:
    with pytest.raises(ValueError, match="row index"):
        serialize_deletion_vector(rows)


def test_serialize_rejects_non_integer_arrays() -> None:
    with pytest.raises(ValueError, match="integers"):
        serialize_deletion_vector(np.array([1.5]))


def _bitmap_bytes_with(*, magic: int = DV_MAGIC_NUMBER, keys: tuple[int, ...] = (0,)) -> bytes:
    data = struct.pack("<IQ", magic, len(keys))
    return data + b"".join(struct.pack("<I", k) + BitMap([1]).serialize() for k in keys)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "too short"),
        (_bitmap_bytes_with(magic=DV_MAGIC_NUMBER + 5), "bad magic number"),
        (_bitmap_bytes_with()[:-1], "cut off"),
        (_bitmap_bytes_with() + b"\x00", "unexpected bytes"),
        (_bitmap_bytes_with(keys=(2, 1)), "out of order"),
        (_bitmap_bytes_with(keys=(1, 1)), "out of order"),
        (_bitmap_bytes_with(keys=(2**31,)), "top bit"),
        (struct.pack("<IQ", DV_MAGIC_NUMBER, 2**40), "cannot fit"),
        (struct.pack("<IQI", DV_MAGIC_NUMBER, 1, 0) + b"\x00" * 8, "cookie"),
    ],
)
def test_malformed_bitmaps_are_corrupt(data: bytes, message: str) -> None:
    with pytest.raises(CorruptTableError, match=message):
        deserialize_deletion_vector(data, source="dv under test")


# --- inline DVs ----------------------------------------------------------------------------


def test_protocol_inline_example() -> None:
    # PROTOCOL.md "JSON Example 3"; its bytes use the reference implementation's native layout.
    descriptor = DeletionVectorDescriptor(
        "i", "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", None, 40, 6
    )
    rows = load_deletion_vector(descriptor, MemoryReader({}))
    assert as_list(rows) == [3, 4, 7, 11, 18, 29]


@given(row_sets)
@settings(max_examples=50)
def test_inline_round_trip(rows: set[int]) -> None:
    reader = MemoryReader({})
    descriptor = inline_descriptor(rows)
    assert descriptor.storage_type == "i" and descriptor.offset is None
    assert descriptor.cardinality == len(rows)
    assert as_list(load_deletion_vector(descriptor, reader)) == sorted(rows)
    assert reader.calls == []  # inline DVs never touch storage


def test_inline_wrong_cardinality_is_corrupt() -> None:
    good = inline_descriptor([1, 2, 3])
    bad = DeletionVectorDescriptor("i", good.path_or_inline_dv, None, good.size_in_bytes, 4)
    with pytest.raises(CorruptTableError, match=r"inline deletion vector.*cardinality=4"):
        load_deletion_vector(bad, MemoryReader({}))


def test_inline_bad_magic_is_corrupt() -> None:
    data = _bitmap_bytes_with(magic=1234)
    padded = data + bytes(-len(data) % 4)
    descriptor = DeletionVectorDescriptor("i", z85_encode(padded), None, len(data), 1)
    with pytest.raises(CorruptTableError, match="bad magic number 1234"):
        load_deletion_vector(descriptor, MemoryReader({}))


@pytest.mark.parametrize(
    ("encoded", "size", "message"),
    [("HelloWorl~", 8, "bad Z85"), ("HelloWorld", 9, "sizeInBytes=9")],
)
def test_inline_bad_encoding_is_corrupt(encoded: str, size: int, message: str) -> None:
    descriptor = DeletionVectorDescriptor("i", encoded, None, size, 1)
    with pytest.raises(CorruptTableError, match=message):
        load_deletion_vector(descriptor, MemoryReader({}))


# --- DV files ------------------------------------------------------------------------------


def test_encode_dv_file_layout() -> None:
    data = serialize_deletion_vector([1, 2**33])
    payload, offset, size = encode_dv_file(data)
    assert (offset, size) == (1, len(data))
    assert payload == b"\x01" + dv_chunk(data)


@given(row_sets)
@settings(max_examples=50)
def test_file_round_trip(rows: set[int]) -> None:
    descriptor, reader = file_dv(sorted(rows))
    assert as_list(load_deletion_vector(descriptor, reader)) == sorted(rows)
    assert len(reader.calls) == 1


@pytest.mark.parametrize("gap", [0, 100, 70_000])
def test_file_with_several_dvs_reads_the_one_at_offset(gap: int) -> None:
    first, second = serialize_deletion_vector([1, 2, 3]), serialize_deletion_vector([7, 2**34])
    head = b"\x01" + dv_chunk(first) + b"\x00" * gap
    payload = head + dv_chunk(second)
    descriptor = uuid_descriptor(
        FILE_UUID, offset=len(head), size_in_bytes=len(second), cardinality=2, prefix="xy"
    )
    reader = MemoryReader({f"xy/deletion_vector_{FILE_UUID}.bin": payload})
    assert as_list(load_deletion_vector(descriptor, reader)) == [7, 2**34]
    # One ranged read when the DV is near the start, else a separate read of the version byte.
    assert len(reader.calls) == (1 if len(head) <= 64 * 1024 else 2)
    assert all(end <= len(payload) for _, _, end in reader.calls)


def test_absent_offset_reads_the_first_dv() -> None:
    descriptor, reader = file_dv([4, 5])
    no_offset = DeletionVectorDescriptor(
        "u", descriptor.path_or_inline_dv, None, descriptor.size_in_bytes, 2
    )
    assert as_list(load_deletion_vector(no_offset, reader)) == [4, 5]


def test_reads_through_a_storage_rooted_at_the_table(tmp_path: Path) -> None:
    data = serialize_deletion_vector([0, 9, 2**32])
    payload, offset, size = encode_dv_file(data)
    descriptor = uuid_descriptor(
        PROTOCOL_UUID, offset=offset, size_in_bytes=size, cardinality=3, prefix="ab"
    )
    (tmp_path / "ab").mkdir()
    (tmp_path / "ab" / f"deletion_vector_{PROTOCOL_UUID}.bin").write_bytes(payload)
    storage = open_storage(str(tmp_path))
    assert as_list(load_deletion_vector(descriptor, storage)) == [0, 9, 2**32]
    # With an explicit table root the absolute path is read (here by an unrooted reader).
    elsewhere = open_storage(str(tmp_path / "ab"))
    rows = load_deletion_vector(descriptor, elsewhere.read, table_root=str(tmp_path))
    assert as_list(rows) == [0, 9, 2**32]


def test_reads_absolute_path_dvs(tmp_path: Path) -> None:
    payload, offset, size = encode_dv_file(serialize_deletion_vector([3]))
    target = tmp_path / "dvs" / "my dv.bin"
    target.parent.mkdir()
    target.write_bytes(payload)
    storage = open_storage(str(tmp_path / "table"))
    for path in (str(target), target.as_uri()):
        descriptor = DeletionVectorDescriptor("p", path, offset, size, 1)
        assert as_list(load_deletion_vector(descriptor, storage)) == [3]


def test_missing_file_is_corrupt() -> None:
    descriptor, _ = file_dv([1])
    with pytest.raises(CorruptTableError, match=f"deletion_vector_{FILE_UUID}.bin.*missing"):
        load_deletion_vector(descriptor, MemoryReader({}))


def _corrupt_file(transform: Any) -> tuple[DeletionVectorDescriptor, MemoryReader]:
    descriptor, reader = file_dv([1, 2, 3])
    path = next(iter(reader.files))
    reader.files[path] = transform(reader.files[path])
    return descriptor, reader


def _flip_byte(at: int) -> Any:
    return lambda payload: payload[:at] + bytes([payload[at] ^ 0x40]) + payload[at + 1 :]


@pytest.mark.parametrize(
    ("transform", "message"),
    [
        (_flip_byte(-6), "checksum mismatch"),  # a bitmap byte
        (_flip_byte(-1), "checksum mismatch"),  # the stored CRC
        (_flip_byte(0), "format version is 65, expected 1"),
        (_flip_byte(4), "the log says sizeInBytes"),
        (lambda payload: payload[:-1], "truncated"),
        (lambda payload: b"", "empty file"),
    ],
)
def test_damaged_file_is_corrupt(transform: Any, message: str) -> None:
    descriptor, reader = _corrupt_file(transform)
    with pytest.raises(CorruptTableError, match=message) as info:
        load_deletion_vector(descriptor, reader)
    assert f"deletion_vector_{FILE_UUID}.bin" in str(info.value)


def test_file_bad_magic_is_corrupt() -> None:
    data = _bitmap_bytes_with(magic=DV_MAGIC_NUMBER - 2)  # checksum is valid, format is not
    payload, offset, size = encode_dv_file(data)
    descriptor = uuid_descriptor(FILE_UUID, offset=offset, size_in_bytes=size, cardinality=1)
    reader = MemoryReader({f"deletion_vector_{FILE_UUID}.bin": payload})
    with pytest.raises(CorruptTableError, match=r"deletion_vector_.*bad magic number"):
        load_deletion_vector(descriptor, reader)


def test_file_wrong_cardinality_is_corrupt() -> None:
    descriptor, reader = file_dv([1, 2, 3])
    wrong = DeletionVectorDescriptor(
        "u", descriptor.path_or_inline_dv, descriptor.offset, descriptor.size_in_bytes, 2
    )
    with pytest.raises(CorruptTableError, match="holds 3 rows but the log says cardinality=2"):
        load_deletion_vector(wrong, reader)


def test_offset_zero_is_corrupt() -> None:
    descriptor, reader = file_dv([1])
    at_zero = DeletionVectorDescriptor("u", descriptor.path_or_inline_dv, 0, 34, 1)
    with pytest.raises(CorruptTableError, match="version byte"):
        load_deletion_vector(at_zero, reader)


def test_rejects_a_reader_that_is_neither_storage_nor_callable() -> None:
    descriptor, _ = file_dv([1])
    with pytest.raises(TypeError, match="Storage"):
        load_deletion_vector(descriptor, "not a reader")  # type: ignore[arg-type]


# --- keep mask -----------------------------------------------------------------------------


def test_keep_mask() -> None:
    mask = keep_mask(np.array([4, 0, 2], dtype=np.uint64), 6)
    assert mask.dtype == np.bool_
    assert mask.tolist() == [False, True, False, True, False, True]
    table = pa.table({"x": list(range(6))}).filter(pa.array(mask))
    assert table.column("x").to_pylist() == [1, 3, 5]


def test_keep_mask_without_deletes() -> None:
    assert keep_mask(np.empty(0, dtype=np.uint64), 3).tolist() == [True] * 3
    assert keep_mask(np.empty(0, dtype=np.uint64), 0).size == 0


def test_keep_mask_rejects_rows_past_the_file() -> None:
    with pytest.raises(CorruptTableError, match="my dv deletes row 5 but the data file has only 5"):
        keep_mask(np.array([5], dtype=np.uint64), 5, source="my dv")


# --- real DVs written by Spark/Delta, from the shared corpus -------------------------------

CORPUS = Path(os.environ.get("LAKECORE_CORPUS", Path(__file__).parents[3] / "shared" / "corpus"))

# table -> (distinct DV descriptors in add actions, live files with a DV at the latest version)
CORPUS_DV_TABLES = {
    "golden__log-replay-dv-key-cases": (3, 1),
    "deltars__table-with-dv-small": (1, 1),
    "golden__dv-partitioned-with-checkpoint": (10, 2),
    "deltars__cdf-table-with-cdc-and-dvs": (10, 1),
}


def _corpus_table(name: str) -> Path:
    root = CORPUS / "delta" / name
    if not (root / "_delta_log").is_dir():
        pytest.fail(f"corpus table {root} is missing; set LAKECORE_CORPUS to the shared corpus")
    return root


def _descriptor(dv: dict[str, Any]) -> DeletionVectorDescriptor:
    return DeletionVectorDescriptor(
        dv["storageType"],
        dv["pathOrInlineDv"],
        dv.get("offset"),
        dv["sizeInBytes"],
        dv["cardinality"],
    )


def _file_actions(root: Path) -> list[tuple[str, dict[str, Any]]]:
    actions = []
    for commit in sorted((root / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line) if line.strip() else {}
            actions += [(kind, action[kind]) for kind in ("add", "remove") if kind in action]
    return actions


def _live_files(root: Path) -> list[dict[str, Any]]:
    """Replay the JSON log: logical files keyed by (path, deletionVector.uniqueId)."""
    live: dict[str, dict[str, Any]] = {}
    for kind, action in _file_actions(root):
        dv = action.get("deletionVector")
        uid = _descriptor(dv).unique_id if dv else None
        if kind == "add":
            live[action["path"]] = action | {"_uid": uid}
        elif action["path"] in live and live[action["path"]]["_uid"] == uid:
            del live[action["path"]]
    return list(live.values())


@pytest.mark.parametrize("table", sorted(CORPUS_DV_TABLES))
def test_every_corpus_dv_loads_with_its_cardinality(table: str) -> None:
    root = _corpus_table(table)
    storage = open_storage(str(root))
    descriptors = {
        _descriptor(action["deletionVector"])
        for kind, action in _file_actions(root)
        if kind == "add" and action.get("deletionVector")
    }
    for descriptor in descriptors:
        rows = load_deletion_vector(descriptor, storage)
        assert rows.size == descriptor.cardinality > 0
        assert np.all(np.diff(rows.astype(np.int64)) > 0)
        assert as_list(load_deletion_vector(descriptor, storage, table_root=str(root))) == (
            as_list(rows)
        )
    assert len(descriptors) == CORPUS_DV_TABLES[table][0]


@pytest.mark.parametrize("table", sorted(CORPUS_DV_TABLES))
def test_corpus_latest_rows_match_the_reference_reader(table: str) -> None:
    root = _corpus_table(table)
    storage = open_storage(str(root))
    expected_meta = json.loads((CORPUS / "expected" / "delta" / f"{table}.json").read_text())
    version = expected_meta["versions"][str(expected_meta["latest_version"])]
    expected = pq.read_table(CORPUS / "expected" / "delta" / version["rows_file"])
    pieces, with_dv = [], 0
    for add in _live_files(root):
        data = pq.read_table(root / add["path"])
        assert json.loads(add["stats"])["numRecords"] == data.num_rows
        if add.get("deletionVector"):
            descriptor = _descriptor(add["deletionVector"])
            deleted = load_deletion_vector(descriptor, storage)
            data = data.filter(pa.array(keep_mask(deleted, data.num_rows, source=add["path"])))
            with_dv += 1
        for column, value in add["partitionValues"].items():
            data = data.append_column(column, pa.array([value] * data.num_rows))
        pieces.append(data.select(expected.column_names).cast(expected.schema))
    actual = pa.concat_tables(pieces)
    assert actual.num_rows == version["num_rows"] == expected.num_rows
    assert sorted(actual.to_pylist(), key=repr) == sorted(expected.to_pylist(), key=repr)
    assert with_dv == CORPUS_DV_TABLES[table][1]


def test_deletion_column_of_files_without_vectors_is_all_null_and_keeps_the_others() -> None:
    """``deletion_column`` skips building descriptor text when no file has a vector; a chunk
    that has one still builds it for exactly its rows."""
    from lakecore_delta.file_index import DELETION_TYPE, deletion_column
    from lakecore_delta.log.schemas import DV_TYPE

    none = deletion_column(pa.nulls(4, DV_TYPE))
    assert none.type == DELETION_TYPE and none.null_count == 4
    one = {
        "storageType": "u",
        "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^",
        "offset": 4,
        "sizeInBytes": 40,
        "cardinality": 6,
    }
    mixed = deletion_column(pa.array([None, one, None], DV_TYPE))
    assert mixed.to_pylist() == [
        None,
        {"cardinality": 6, "descriptor": b"u|4|40|ab^-aqEH.-t@S}K{vb[*k^"},
        None,
    ]
