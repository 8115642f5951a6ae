"""ZeroMQ Z85 (rfc.zeromq.org/spec/32): the spec test vector, Delta's UUID example, round trips."""

from __future__ import annotations

import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from lakecore_delta.deletion_vectors import inline_descriptor
from lakecore_delta.z85 import Z85_ALPHABET, z85_decode, z85_encode

import lakecore

from .builders import DeltaTableBuilder, field, protocol

SPEC_BYTES = bytes([0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B])

whole_words = st.binary(max_size=256).map(lambda b: b[: len(b) // 4 * 4])


def test_alphabet_has_85_distinct_printable_characters() -> None:
    assert len(Z85_ALPHABET) == len(set(Z85_ALPHABET)) == 85
    assert all(c.isprintable() and c not in " \"'\\`,;" for c in Z85_ALPHABET)


def test_spec_test_vector() -> None:
    assert z85_encode(SPEC_BYTES) == "HelloWorld"
    assert z85_decode("HelloWorld") == SPEC_BYTES


def test_extremes() -> None:
    assert z85_encode(b"\x00" * 4) == "00000"
    assert z85_encode(b"\xff" * 4) == "%nSc0"
    assert z85_decode("%nSc0") == b"\xff" * 4
    assert z85_encode(b"") == "" and z85_decode("") == b""


def test_delta_protocol_uuid_example() -> None:
    # PROTOCOL.md, "JSON Example 1": prefix "ab" + the Z85 of d2c639aa-8816-431a-aaf6-d3fe2512ff61.
    encoded = "ab^-aqEH.-t@S}K{vb[*k^"
    assert uuid.UUID(bytes=z85_decode(encoded[-20:])) == uuid.UUID(
        "d2c639aa-8816-431a-aaf6-d3fe2512ff61"
    )
    assert z85_encode(uuid.UUID("d2c639aa-8816-431a-aaf6-d3fe2512ff61").bytes) == encoded[2:]


@given(whole_words)
def test_bytes_round_trip(data: bytes) -> None:
    text = z85_encode(data)
    assert len(text) == len(data) // 4 * 5
    assert set(text) <= set(Z85_ALPHABET)
    assert z85_decode(text) == data


@given(whole_words)
def test_text_round_trip(data: bytes) -> None:
    text = z85_encode(data)
    assert z85_encode(z85_decode(text)) == text


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7])
def test_encode_rejects_partial_words(size: int) -> None:
    with pytest.raises(ValueError, match="4-byte"):
        z85_encode(b"x" * size)


@pytest.mark.parametrize("text", ["H", "Hell", "HelloW", "HelloWorl"])
def test_decode_rejects_bad_lengths(text: str) -> None:
    with pytest.raises(ValueError, match="multiple of 5"):
        z85_decode(text)


@pytest.mark.parametrize("char", ["~", " ", '"', "'", "\\", ",", ";", "_", "|", "\n"])
def test_decode_rejects_characters_outside_the_alphabet(char: str) -> None:
    with pytest.raises(ValueError, match="not in the Z85 alphabet"):
        z85_decode("Hell" + char)


def test_decode_rejects_non_ascii() -> None:
    with pytest.raises(ValueError, match="non-ASCII"):
        z85_decode("Hellé")


def _digits(value: int) -> str:
    """The 5 Z85 characters of ``value`` (any value below ``85**5``, also above 32 bits)."""
    out = ""
    for _ in range(5):
        value, digit = divmod(value, 85)
        out = Z85_ALPHABET[digit] + out
    return out


# Groups above 2**32 - 1: the largest 32-bit group plus one, the largest group, and others.
ABOVE_32_BITS = [2**32, 2**32 + 1, 85**5 - 1, 2**32 + 0x01000000, 2**32 + 123_456_789]


def test_above_32_bit_groups_cover_the_range() -> None:
    assert len(ABOVE_32_BITS) == 5
    assert all(2**32 <= v < 85**5 for v in ABOVE_32_BITS)
    assert _digits(2**32 - 1) == "%nSc0" and _digits(2**32) == "%nSc1"
    assert _digits(85**5 - 1) == "#####"


@pytest.mark.parametrize("value", ABOVE_32_BITS)
def test_decode_wraps_groups_above_32_bits(value: int) -> None:
    # Delta Spark / Delta Kernel decode a group into a Java int: the low 32 bits of the sum.
    decoded = z85_decode("HelloWorld" + _digits(value))
    assert decoded == SPEC_BYTES + (value % 2**32).to_bytes(4, "big")


@given(st.integers(0, 85**5 - 1))
def test_decode_is_the_group_value_modulo_2_to_the_32(value: int) -> None:
    assert z85_decode(_digits(value)) == (value % 2**32).to_bytes(4, "big")


def _group_value(group: str) -> int:
    value = 0
    for c in group:
        value = value * 85 + Z85_ALPHABET.index(c)
    return value


def _widened(text: str) -> tuple[str, int]:
    """``text`` with every group that can be spelled above 32 bits spelled so (same bytes)."""
    groups = [text[i : i + 5] for i in range(0, len(text), 5)]
    widened = [_digits(v + 2**32) if (v := _group_value(g)) + 2**32 < 85**5 else g for g in groups]
    return "".join(widened), sum(a != b for a, b in zip(groups, widened, strict=True))


def test_inline_dv_with_groups_above_32_bits_reads_like_the_canonical_text(
    tmp_path: Path,
) -> None:
    deleted = [1, 3, 70_000]
    canonical = inline_descriptor(deleted)
    text, changed = _widened(canonical.path_or_inline_dv)
    assert changed >= 2  # e.g. the bucket count and the container header groups
    assert z85_decode(text) == z85_decode(canonical.path_or_inline_dv)
    rows: dict[str, list[int]] = {}
    for name, dv_text in (("canonical", canonical.path_or_inline_dv), ("widened", text)):
        builder = DeltaTableBuilder(tmp_path / name)
        builder.init(
            [field("id", "long")],
            proto=protocol(3, 7, ["deletionVectors"], ["deletionVectors"]),
        )
        dv = {
            "storageType": "i",
            "pathOrInlineDv": dv_text,
            "sizeInBytes": canonical.size_in_bytes,
            "cardinality": len(deleted),
        }
        ids = pa.array(range(70_001), pa.int64())
        builder.commit(1, builder.data_file("f.parquet", {"id": ids}, deletion_vector=dv))
        table = lakecore.open(builder.uri)
        rows[name] = sorted(table.to_arrow().column("id").to_pylist())
        assert sorted(table.scan().to_arrow().column("id").to_pylist()) == rows[name]
    assert rows["widened"] == rows["canonical"]
    assert len(rows["canonical"]) == 70_001 - len(deleted)
    assert not set(deleted) & set(rows["canonical"])
