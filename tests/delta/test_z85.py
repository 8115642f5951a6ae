"""ZeroMQ Z85 (rfc.zeromq.org/spec/32): the spec test vector, Delta's UUID example, round trips."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lakecore_delta.z85 import Z85_ALPHABET, z85_decode, z85_encode

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


@pytest.mark.parametrize("group", ["%nSc1", "#####", "%nSd0"])
def test_decode_rejects_groups_above_32_bits(group: str) -> None:
    with pytest.raises(ValueError, match="exceeds 32 bits"):
        z85_decode("HelloWorld" + group)
