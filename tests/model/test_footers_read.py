"""``lakecore.model.footers``: footers read without their large key-value values equal
pyarrow's own reading in everything else, read only what they need, and are memoised."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakecore.errors import CorruptTableError
from lakecore.model.footers import KEEP_VALUE_BYTES, Footers, footer_bytes, read_footer
from lakecore.storage import open_storage
from lakecore.testing.faults import CountingStorage
from tests.corpus import CORPUS

BIG = 500_000


def _write(path: Path, metadata: dict[str, str] | None, **kwargs: Any) -> None:
    """A 10-row file with ``metadata`` in its footer's key-value metadata only (as Hudi keeps
    its bloom filter: not in ``ARROW:schema``, which pyarrow fills from schema metadata)."""
    table = pa.table({"id": pa.array(range(10), pa.int64()), "s": [f"v{i}" for i in range(10)]})
    rows = kwargs.pop("row_group_size", None)
    with pq.ParquetWriter(path, table.schema, **kwargs) as writer:
        writer.write_table(table, row_group_size=rows)
        if metadata:
            writer.add_key_value_metadata(metadata)


def _same_apart_from_key_values(trimmed: pq.FileMetaData, full: pq.FileMetaData) -> None:
    assert trimmed.schema.equals(full.schema)
    assert trimmed.schema.to_arrow_schema().equals(full.schema.to_arrow_schema())
    assert trimmed.num_rows == full.num_rows
    assert trimmed.created_by == full.created_by
    assert trimmed.format_version == full.format_version
    assert [trimmed.row_group(g).to_dict() for g in range(trimmed.num_row_groups)] == [
        full.row_group(g).to_dict() for g in range(full.num_row_groups)
    ]


class _Reads(io.RawIOBase):
    """A file that counts the bytes read from it."""

    def __init__(self, f: BinaryIO) -> None:
        self._f, self.read_bytes = f, 0

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._f.seek(offset, whence)

    def read(self, n: int | None = -1) -> bytes:
        data = self._f.read(n)
        self.read_bytes += len(data)
        return data


def test_large_values_are_left_out_and_not_read(tmp_path: Path) -> None:
    # More than 15 entries kept: the trimmed list needs Thrift's long list header.
    kept = {f"k{i:02d}": "x" * (KEEP_VALUE_BYTES - i) for i in range(20)}
    _write(tmp_path / "f.parquet", {"bloom": "b" * BIG, **kept, "huge": "h" * 2 * BIG})
    full = pq.read_metadata(tmp_path / "f.parquet")
    with open(tmp_path / "f.parquet", "rb") as raw:
        f = _Reads(raw)  # type: ignore[arg-type]
        trimmed = read_footer(f)  # type: ignore[arg-type]
    _same_apart_from_key_values(trimmed, full)
    assert trimmed.metadata is not None and full.metadata is not None
    assert {k: v for k, v in full.metadata.items() if k not in (b"bloom", b"huge")} == (
        trimmed.metadata
    )
    assert f.read_bytes < BIG  # the two large values (1.5 MB) were skipped
    assert full.serialized_size > 3 * BIG > trimmed.serialized_size


@pytest.mark.parametrize(
    ("metadata", "kwargs"),
    [
        (None, {"store_schema": False}),  # no key-value metadata at all
        (None, {}),  # ARROW:schema only
        ({"small": "y"}, {"row_group_size": 3}),  # several row groups, footer in one read
        ({"ARROW:extra": "a" * BIG}, {"write_statistics": False}),
    ],
)
def test_footers_without_large_values_read_as_pyarrow_reads_them(
    tmp_path: Path, metadata: dict[str, str] | None, kwargs: dict[str, Any]
) -> None:
    _write(tmp_path / "f.parquet", metadata, **kwargs)
    full = pq.read_metadata(tmp_path / "f.parquet")
    with open(tmp_path / "f.parquet", "rb") as f:
        trimmed = read_footer(f)
    _same_apart_from_key_values(trimmed, full)
    large = {k for k, v in (full.metadata or {}).items() if len(v) > KEEP_VALUE_BYTES}
    assert {k: v for k, v in (full.metadata or {}).items() if k not in large} == (
        trimmed.metadata or {}
    )


def test_the_arrow_schema_is_kept_however_large(tmp_path: Path) -> None:
    wide = pa.table({f"column_{i:04d}": pa.array([i], pa.int32()) for i in range(400)})
    pq.write_table(wide, tmp_path / "f.parquet")
    full = pq.read_metadata(tmp_path / "f.parquet")
    assert full.metadata is not None and len(full.metadata[b"ARROW:schema"]) > KEEP_VALUE_BYTES
    with open(tmp_path / "f.parquet", "rb") as f:
        trimmed = read_footer(f)
    assert trimmed.metadata == full.metadata
    _same_apart_from_key_values(trimmed, full)


def test_corpus_hudi_base_files_read_alike() -> None:
    """Every base file of the Hudi corpus (bloom filters in most footers)."""
    hudi = CORPUS / "hudi"
    if not hudi.is_dir():
        pytest.fail(f"corpus not found at {hudi}; set LAKECORE_CORPUS")
    paths = sorted(
        p
        for root in hudi.iterdir()
        for p in root.rglob("*.parquet")
        if ".hoodie" not in p.relative_to(root).parts
    )
    trimmed_some = 0
    for path in paths:
        full = pq.read_metadata(path)
        with open(path, "rb") as f:
            trimmed = read_footer(f)
        _same_apart_from_key_values(trimmed, full)
        trimmed_some += trimmed.serialized_size < full.serialized_size
    assert (len(paths), trimmed_some) == (80, 74)


def test_not_a_footer(tmp_path: Path) -> None:
    (tmp_path / "short.parquet").write_bytes(b"PAR1")
    (tmp_path / "bad.parquet").write_bytes(
        b"PAR1" + b"\xff" * 40 + (40).to_bytes(4, "little") + b"PAR1"
    )
    storage = open_storage(str(tmp_path))
    for name in ("short.parquet", "bad.parquet"):
        with open(tmp_path / name, "rb") as f, pytest.raises(pa.ArrowInvalid):
            read_footer(f)
        with pytest.raises(CorruptTableError, match=f"{name}: not a readable Parquet file"):
            Footers(storage).get(name)
    with pytest.raises(FileNotFoundError):
        Footers(storage).get("missing.parquet")
    # Prefetching leaves the errors for ``get``.
    _write(tmp_path / "good.parquet", None)
    footers = Footers(storage)
    footers.prefetch(["short.parquet", "bad.parquet", "missing.parquet", "good.parquet"])
    assert footers.known("good.parquet") and footers.get("good.parquet").num_rows == 10
    with pytest.raises(CorruptTableError, match=r"short\.parquet: not a readable Parquet file"):
        footers.get("short.parquet")
    with pytest.raises(CorruptTableError, match=r"bad\.parquet: not a readable Parquet file"):
        footers.get("bad.parquet")
    with pytest.raises(FileNotFoundError):
        footers.get("missing.parquet")


def test_footers_are_read_once(tmp_path: Path) -> None:
    for i in range(5):
        _write(tmp_path / f"f{i}.parquet", {"bloom": "b" * BIG})
    storage = CountingStorage(open_storage(str(tmp_path)))
    footers = Footers(storage)
    names = [f"f{i}.parquet" for i in (3, 1, 4, 0, 2)]
    got = footers.read_many(names)
    assert [m.num_rows for m in got] == [10] * 5
    assert footers.read_many(names) == got and footers.get("f4.parquet").equals(got[2])
    assert footers.reads == 5 and all(footers.known(n) for n in names)
    assert sorted(c.path for c in storage.calls if c.method == "open_input") == sorted(names)
    assert all(storage.bytes[n] < BIG // 2 for n in names)  # not the bloom value


def test_a_footer_the_walk_does_not_understand_is_kept_whole(tmp_path: Path) -> None:
    """A field the walk cannot skip makes it hand the whole footer to pyarrow, which judges
    it (here: refuses it, so the error stays pyarrow's, as a ``CorruptTableError``)."""
    _write(tmp_path / "f.parquet", {"bloom": "b" * BIG})
    raw = (tmp_path / "f.parquet").read_bytes()
    length = int.from_bytes(raw[-8:-4], "little")
    body = raw[-8 - length : -8]
    # A field header of an unknown Thrift type (13) first: the walk cannot skip it.
    odd = raw[: -8 - length] + b"\x1d" + body[1:] + length.to_bytes(4, "little") + b"PAR1"
    (tmp_path / "odd.parquet").write_bytes(odd)
    with open(tmp_path / "odd.parquet", "rb") as f, pytest.raises(pa.ArrowInvalid):
        read_footer(f)  # pyarrow refuses it too
    with pytest.raises(CorruptTableError, match="odd"):
        Footers(open_storage(str(tmp_path))).get("odd.parquet")


def test_the_memo_keeps_at_most_its_budget(tmp_path: Path) -> None:
    for i in range(6):
        _write(tmp_path / f"f{i}.parquet", {"bloom": "b" * BIG})
    names = [f"f{i}.parquet" for i in range(6)]
    with open(tmp_path / "f0.parquet", "rb") as f:
        one = len(footer_bytes(f))
    footers = Footers(open_storage(str(tmp_path)), keep_bytes=2 * one)
    assert [m.num_rows for m in footers.read_many(names)] == [10] * 6
    assert footers.reads == 6 and sum(footers.known(n) for n in names) == 2
    footers.read_many(names)
    assert footers.reads == 6 + 4  # the ones not kept are read again
    footers = Footers(open_storage(str(tmp_path)), keep_bytes=2 * one)
    footers.prefetch(names)
    assert sum(footers.known(n) for n in names) == 2 and footers.reads <= 2 + 8
