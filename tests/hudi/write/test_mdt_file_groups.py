"""Metadata-table file group naming and key routing (mdt/file_groups.py)."""

from __future__ import annotations

import pytest
from lakecore_hudi.mdt.file_groups import (
    file_group_id,
    file_group_index,
    file_group_ordinal,
    java_string_hash,
)

from lakecore.errors import CorruptTableError

# Values of java.lang.String#hashCode (well-known: "polygenelubricants" hashes to MIN_VALUE).
JAVA_HASHES = [
    ("", 0),
    ("a", 97),
    ("hello", 99162322),
    ("polygenelubricants", -(2**31)),
    ("\U0001f600", 1772899),  # two UTF-16 surrogates, not one code point
    ("é", 233),
]


@pytest.mark.parametrize(("text", "expected"), JAVA_HASHES)
def test_java_string_hash(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


def test_java_hash_overflows_like_java() -> None:
    # 31 * h + c in 32-bit two's complement, checked against a direct modular model
    text = "0123456789abcdefghij" * 5
    h = 0
    for ch in text:
        h = (h * 31 + ord(ch)) % 2**32
    assert java_string_hash(text) == (h - 2**32 if h >= 2**31 else h)


def test_file_group_index_min_value_and_range() -> None:
    # Math.abs(Math.abs(MIN_VALUE) % n): Java's inner abs stays negative, the outer fixes it.
    assert file_group_index("polygenelubricants", 10) == 2**31 % 10
    assert file_group_index("polygenelubricants", 7) == 2**31 % 7
    assert file_group_index("hello", 1) == 0
    assert all(0 <= file_group_index(f"key{i}", 10) < 10 for i in range(200))
    with pytest.raises(ValueError):
        file_group_index("x", 0)


def test_file_group_ids() -> None:
    assert file_group_id("files", 0) == "files-0000-0"
    assert file_group_id("column_stats", 1) == "col-stats-0001-0"
    assert file_group_id("partition_stats", 0) == "partition-stats-0000-0"
    assert file_group_id("record_index", 9) == "record-index-0009-0"
    assert file_group_id("secondary_index_rider_idx", 3) == "secondary-index-rider-idx-0003-0"
    assert file_group_ordinal("secondary-index-rider-idx-0003-0") == 3
    with pytest.raises(CorruptTableError):
        file_group_ordinal("files")
    with pytest.raises(KeyError):
        file_group_id("nonsense", 0)
