"""Paths in the log: URL-decoding and making absolute paths relative to the table root."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lakecore_delta.paths import _GATE_BLOCK, _MARKERS, _may_need_decoding, decode_paths

import lakecore

from .builders import DeltaTableBuilder, field, remove

# (table root, path as the log stores it, path lakecore keeps)
CASES: list[tuple[str, str | None, str | None]] = [
    ("/data/t", "plain.parquet", "plain.parquet"),
    ("/data/t", "a%20b%3Ac.parquet", "a b:c.parquet"),
    ("/data/t", "p=a%253Db/part.parquet", "p=a%3Db/part.parquet"),  # decoded exactly once
    ("/data/t", "p=x/y+z.parquet", "p=x/y+z.parquet"),  # '+' is not a space in a URI path
    ("/data/t", "%C3%BCn%C3%AF.parquet", "ünï.parquet"),
    ("/data/t", "d%.parquet", "d%.parquet"),  # a stray '%' that escapes nothing
    ("/data/t", "file:/data/t/x.parquet", "x.parquet"),
    ("/data/t", "file:///data/t/sub/x.parquet", "sub/x.parquet"),
    ("/data/t", "file://localhost/data/t/x.parquet", "x.parquet"),
    ("/data/t", "file:/data/t/a%20b.parquet", "a b.parquet"),
    ("/data/t", "/data/t/x.parquet", "x.parquet"),
    ("/data/t", "file:/data/t2/x.parquet", "/data/t2/x.parquet"),  # a sibling, not inside
    ("/data/t", "file:/other/x%20y.parquet", "/other/x y.parquet"),
    ("/data/my table", "file:/data/my%20table/x.parquet", "x.parquet"),
    ("s3://b/t", "s3://b/t/x%20y.parquet", "x y.parquet"),
    ("s3://b/t", "s3a://b/t/x.parquet", "x.parquet"),
    ("s3://b/t", "s3n://b/t/d/x.parquet", "d/x.parquet"),
    ("s3a://b/t", "s3://b/t/x.parquet", "x.parquet"),
    ("s3://b/t", "s3a://b/t2/x.parquet", "s3a://b/t2/x.parquet"),
    ("s3://b/t", "s3://other/t/x.parquet", "s3://other/t/x.parquet"),
    ("/data/t", "./a.parquet", "a.parquet"),  # one file, however the log spells it
    ("/data/t", "sub//a.parquet", "sub/a.parquet"),
    ("/data/t", "sub/./a.parquet", "sub/a.parquet"),
    ("/data/t", "p=1./a.parquet", "p=1./a.parquet"),
    ("/data/t", None, None),
]


@pytest.mark.parametrize(("root", "raw", "expected"), CASES, ids=[f"{c[0]}|{c[1]}" for c in CASES])
def test_decode_path(root: str, raw: str | None, expected: str | None) -> None:
    assert decode_paths(pa.array([raw], pa.string()), root).to_pylist() == [expected]


def test_decode_many_keeps_order_and_vectorised_rows() -> None:
    raw = pa.chunked_array([["a.parquet", "b%20c.parquet"], [None, "file:/r/d.parquet", "e"]])
    out = decode_paths(raw, "/r")
    assert out.to_pylist() == ["a.parquet", "b c.parquet", None, "d.parquet", "e"]
    assert out.type == pa.string()


def test_path_cases_ran() -> None:
    assert len(CASES) == 25


def test_a_remove_reconciles_with_an_add_spelt_otherwise(builder: DeltaTableBuilder) -> None:
    builder.init([field("i", "long")])
    a = builder.data_file("a.parquet", pa.table({"i": pa.array([1], pa.int64())}))
    b = builder.data_file("b.parquet", pa.table({"i": pa.array([2], pa.int64())}))
    a["add"]["path"] = "./a.parquet"
    builder.commit(1, a, b)
    b["add"]["path"] = ".//b.parquet"  # the same file again, spelt otherwise
    builder.commit(2, remove("a.parquet"), b)
    table = lakecore.open(builder.uri)
    assert table.snapshot().files().column("path").to_pylist() == ["b.parquet"]
    assert table.to_arrow().column("i").to_pylist() == [2]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.text(alphabet="ab./%:=_", max_size=8), min_size=1, max_size=6),
    st.integers(0, 3),
)
def test_the_byte_gate_flags_every_path_a_marker_or_odd_end_sends_through_python(
    paths: list[str], start: int
) -> None:
    """``_may_need_decoding`` tests bytes of the whole buffer instead of searching each
    marker: it must never say False where a path (of a sliced array too) needs the decode."""
    array = pa.array(["x", *paths], pa.string()).slice(min(start, len(paths)))
    needed = any(
        any(m in p for m in _MARKERS) or p.startswith("/") or p.endswith("/") or p in (".", "")
        for p in array.to_pylist()
    )
    if needed:
        assert _may_need_decoding(array)
    else:
        assert decode_paths(array, "/data/t").to_pylist() == array.to_pylist()


def test_the_byte_gate_passes_plain_paths_without_python() -> None:
    plain = pa.array([f"region=us/part-{i:05d}-x.c000.snappy.parquet" for i in range(1000)])
    assert not _may_need_decoding(plain)
    for marker in _MARKERS:
        assert _may_need_decoding(pa.array(["a.parquet", f"p{marker}q.parquet"]))


@pytest.mark.parametrize("marker", _MARKERS)
@pytest.mark.parametrize("shift", [-2, -1, 0, 1])
def test_the_byte_gate_finds_a_marker_across_its_block_boundary(marker: str, shift: int) -> None:
    at = _GATE_BLOCK + shift
    path = "a" * at + marker + "b.parquet"
    assert _may_need_decoding(pa.array(["c.parquet", path]).slice(1))
    assert not _may_need_decoding(pa.array(["a" * at + "b.parquet"]))
