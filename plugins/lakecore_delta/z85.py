"""ZeroMQ Z85, the Base85 variant Delta uses for deletion-vector UUIDs and inline bitmaps.

Z85 (https://rfc.zeromq.org/spec/32/) maps every 4 bytes, read as a big-endian unsigned 32-bit
number, to 5 characters of an 85-character alphabet, most significant digit first. It is strict:
binary input must be a multiple of 4 bytes long, text a multiple of 5 characters. Callers that
need other lengths pad themselves (Delta pads inline deletion vectors and records the true size).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["Z85_ALPHABET", "z85_decode", "z85_encode"]

Z85_ALPHABET = (
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
)

_ALPHABET_BYTES = np.frombuffer(Z85_ALPHABET.encode("ascii"), dtype=np.uint8)
_INVALID = 0xFF
# Byte value of an ASCII character -> its Z85 digit, or _INVALID.
_DIGIT_OF = np.full(256, _INVALID, dtype=np.uint8)
_DIGIT_OF[_ALPHABET_BYTES] = np.arange(85, dtype=np.uint8)
_POWERS = np.array([85**4, 85**3, 85**2, 85, 1], dtype=np.uint64)


def z85_encode(data: bytes) -> str:
    """Encode ``data`` as Z85 text of ``len(data) // 4 * 5`` characters.

    Raises:
        ValueError: if ``len(data)`` is not a multiple of 4 (Z85 has no padding).

    >>> z85_encode(bytes([0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B]))
    'HelloWorld'
    """
    if len(data) % 4:
        raise ValueError(f"Z85 encodes whole 4-byte groups; got {len(data)} bytes")
    words = np.frombuffer(data, dtype=">u4").astype(np.uint64)
    digits: npt.NDArray[np.uint64] = (words[:, None] // _POWERS) % np.uint64(85)
    return _ALPHABET_BYTES[digits.ravel()].tobytes().decode("ascii")


def z85_decode(text: str) -> bytes:
    """Decode Z85 ``text`` into ``len(text) // 5 * 4`` bytes.

    A 5-character group can spell values up to ``85**5 - 1``, above ``2**32 - 1``; such a
    group decodes to its value modulo ``2**32``, as the protocol's reference implementations
    (Delta Spark's ``Codec.Base85Codec`` and Delta Kernel's copy of it, which keep the low 32
    bits of the sum) decode it, so lakecore reads the inline deletion vectors and DV file
    names they read. (delta-rs refuses such text: "Failed to decode DV".)

    Raises:
        ValueError: if ``len(text)`` is not a multiple of 5 or a character is outside the Z85
            alphabet.

    >>> z85_decode("HelloWorld").hex()
    '864fd26fb559f75b'
    """
    if len(text) % 5:
        raise ValueError(f"Z85 text must be a multiple of 5 characters long; got {len(text)}")
    try:
        raw = text.encode("ascii")
    except UnicodeEncodeError as exc:
        raise ValueError(f"non-ASCII character in Z85 text at position {exc.start}") from None
    digits = _DIGIT_OF[np.frombuffer(raw, dtype=np.uint8)]
    bad = np.flatnonzero(digits == _INVALID)
    if bad.size:
        pos = int(bad[0])
        raise ValueError(f"character {text[pos]!r} at position {pos} is not in the Z85 alphabet")
    words = digits.reshape(-1, 5).astype(np.uint64) @ _POWERS
    # Keep the low 32 bits (wrapping), like the reference decoders' 32-bit arithmetic.
    return (words & np.uint64(0xFFFFFFFF)).astype(">u4").tobytes()
