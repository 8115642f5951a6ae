"""Joda/Java date patterns as lakecore uses them for Hudi's timestamp key generator.

A pattern is split into tokens (``tokens``); ``format_millis`` writes epoch milliseconds with
one in a zone, vectorised with Arrow's temporal kernels; ``regex`` matches text written with one
(for parsing). Only the letters Hudi tables use for dates and hours are translated: ``yyyy``,
``MM``, ``dd``, ``HH``, ``mm``, ``ss``, ``SSS``, offsets ``Z`` (``+0000``), ``ZZ`` (``+00:00``),
``X``/``XX``/``XXX`` (Java's, ``Z`` for a zero offset); anything else is refused by name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import UnsupportedFeatureError

# Pattern letters lakecore formats and parses: letter -> the run lengths it accepts.
FIELDS = {"y": (4,), "M": (2,), "d": (2,), "H": (2,), "m": (2,), "s": (2,), "S": (3,)}
_OFFSETS = {"Z": (1, 2), "X": (1, 2, 3)}


@dataclass(frozen=True, slots=True)
class Token:
    """One piece of a date pattern: a literal text, a field (``yyyy``) or an offset (``Z``)."""

    kind: str  # "literal", a field letter, or an offset letter
    text: str  # the literal, or the run of letters


def tokens(pattern: str) -> tuple[Token, ...]:
    """Split a Joda/Java date pattern into tokens.

    Raises:
        UnsupportedFeatureError: a letter run lakecore does not translate (only yyyy, MM, dd,
            HH, mm, ss, SSS, Z, ZZ, X, XX, XXX and quoted or non-letter literals are).
    """
    out: list[Token] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "'":
            end = pattern.find("'", i + 1)
            while end >= 0 and pattern[end + 1 : end + 2] == "'":
                end = pattern.find("'", end + 2)
            if end < 0:
                raise UnsupportedFeatureError(
                    "hudi-keygen-timestamp-pattern",
                    f"the date pattern {pattern!r} has an unterminated quote",
                )
            literal = pattern[i + 1 : end].replace("''", "'") if end > i + 1 else "'"
            out.append(Token("literal", literal))
            i = end + 1
            continue
        if not c.isascii() or not c.isalpha():
            out.append(Token("literal", c))
            i += 1
            continue
        j = i
        while j < len(pattern) and pattern[j] == c:
            j += 1
        run = pattern[i:j]
        if len(run) not in (FIELDS.get(c) or _OFFSETS.get(c) or ()):
            raise UnsupportedFeatureError(
                "hudi-keygen-timestamp-pattern",
                f"lakecore does not translate {run!r} in the date pattern {pattern!r} (it "
                "translates yyyy, MM, dd, HH, mm, ss, SSS, Z, ZZ, X, XX, XXX and literals)",
            )
        out.append(Token(c, run))
        i = j
    if not out:
        raise UnsupportedFeatureError("hudi-keygen-timestamp-pattern", "the date pattern is empty")
    return tuple(out)


def format_millis(ms: pa.Array, zone: str, pattern: tuple[Token, ...]) -> pa.Array:
    """Format epoch milliseconds in ``zone`` (an IANA name, ``UTC`` or ``+hh:mm``)."""
    stamps = ms.cast(pa.int64()).cast(pa.timestamp("ms", tz=zone))
    pieces: list[pa.Array | str] = []
    for token in pattern:
        if token.kind == "literal":
            pieces.append(token.text)
        elif token.kind in FIELDS:
            pieces.append(_field(stamps, token.kind))
        else:
            pieces.append(_offset(stamps, token.text))
    n = len(ms)
    arrays = [
        pa.array(np.full(n, p, dtype=object), pa.string()) if isinstance(p, str) else p
        for p in pieces
    ]
    if len(arrays) == 1:
        return arrays[0]
    return pc.binary_join_element_wise(*arrays, "")


def _pad(values: pa.Array, width: int) -> pa.Array:
    return pc.utf8_lpad(values.cast(pa.string()), width=width, padding="0")


def _field(stamps: pa.Array, letter: str) -> pa.Array:
    if letter == "y":
        return _pad(pc.year(stamps), 4)
    if letter == "S":
        return _pad(pc.millisecond(stamps), 3)
    kernel = {"M": pc.month, "d": pc.day, "H": pc.hour, "m": pc.minute, "s": pc.second}[letter]
    return _pad(kernel(stamps), 2)


def _offset(stamps: pa.Array, run: str) -> pa.Array:
    local = pc.local_timestamp(stamps).cast(pa.int64())
    seconds = pc.divide(pc.subtract(local, stamps.cast(pa.int64())), 1000)
    minutes = pc.divide(seconds, 60)
    sign = pc.if_else(pc.less(minutes, 0), "-", "+")
    magnitude = pc.abs(minutes)
    hours = _pad(pc.divide(magnitude, 60), 2)
    mins = _pad(pc.subtract(magnitude, pc.multiply(pc.divide(magnitude, 60), 60)), 2)
    if run == "X":  # Java: +HH, with minutes only when they are not zero
        mins = pc.if_else(pc.equal(mins, "00"), "", mins)
    separator = ":" if run in ("ZZ", "XXX") else ""
    text = pc.binary_join_element_wise(
        pc.binary_join_element_wise(sign, hours, ""), mins, separator
    )
    if run.startswith("X"):  # Java prints a zero offset as 'Z'
        text = pc.if_else(pc.equal(minutes, 0), "Z", text)
    return text


_GROUPS = {
    "y": r"([+-]?\d{4,9})",
    "M": r"(\d{1,2})",
    "d": r"(\d{1,2})",
    "H": r"(\d{1,2})",
    "m": r"(\d{1,2})",
    "s": r"(\d{1,2})",
    "S": r"(\d{1,9})",
}
_OFFSET_GROUP = r"(Z|[+-]\d{2}(?::?\d{2})?)"


def regex(pattern: tuple[Token, ...]) -> re.Pattern[str]:
    """A regular expression matching text written with ``pattern``: one group per field or
    offset token, in order (numbers as Joda parses them: 1-2 digits, 4+ for the year, 1-9 for
    the fraction; offsets ``Z``, ``+hh``, ``+hhmm`` or ``+hh:mm``)."""
    parts = [
        re.escape(t.text) if t.kind == "literal" else _GROUPS.get(t.kind, _OFFSET_GROUP)
        for t in pattern
    ]
    return re.compile("".join(parts))
