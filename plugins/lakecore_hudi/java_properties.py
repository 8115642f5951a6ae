"""Java ``.properties`` text: parsing it into a dict, and escaping keys and values to write it.

The text is taken already decoded (Hudi's files are ISO-8859-1, lakecore writes ASCII). Parsing
follows ``java.util.Properties.load``: ``#``/``!`` comment lines, ``=``, ``:`` or whitespace
between key and value, backslash line continuations, ``\\t``/``\\n``/``\\uXXXX`` escapes (a
UTF-16 surrogate pair joins into one character); later keys win. ``escape`` escapes a key or
a value the way ``Properties.store`` does, in ASCII.
"""

from __future__ import annotations


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text (already decoded) into a dict; later keys win.

    Raises:
        ValueError: a malformed ``\\u`` escape.
    """
    props: dict[str, str] = {}
    for logical in _logical_lines(text):
        key, value = _split_key_value(logical)
        props[_unescape(key)] = _unescape(value)
    return props


def _logical_lines(text: str) -> list[str]:
    lines: list[str] = []
    pending: str | None = None
    for physical in text.splitlines():
        stripped = physical.lstrip(" \t\f")
        if pending is None and (not stripped or stripped[0] in "#!"):
            continue
        joined = stripped if pending is None else pending + stripped
        # An odd number of trailing backslashes continues the line onto the next one.
        trailing = len(joined) - len(joined.rstrip("\\"))
        if trailing % 2 == 1:
            pending = joined[:-1]
            continue
        lines.append(joined)
        pending = None
    if pending is not None:
        lines.append(pending)
    return lines


def _split_key_value(line: str) -> tuple[str, str]:
    i, n = 0, len(line)
    while i < n:
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=: \t\f":
            break
        i += 1
    key = line[:i]
    j = i
    while j < n and line[j] in " \t\f":
        j += 1
    if j < n and line[j] in "=:":
        j += 1
        while j < n and line[j] in " \t\f":
            j += 1
    return key, line[j:]


_UNESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch != "\\" or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2 : i + 6]
            if len(digits) != 4:
                raise ValueError(f"malformed \\uXXXX escape {text[i : i + 6]!r}")
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_UNESCAPES.get(nxt, nxt))
        i += 2
    joined = "".join(out)
    if any("\ud800" <= ch <= "\udfff" for ch in joined):
        # Java escapes a non-BMP character as a UTF-16 surrogate pair: join the halves.
        joined = joined.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return joined


def escape(text: str, is_key: bool) -> str:
    """``text`` escaped as ``Properties.store`` writes a key (``is_key``) or a value; ASCII."""
    out: list[str] = []
    for index, ch in enumerate(text):
        if ch == " ":
            # Java escapes every space in a key but only a leading one in a value.
            out.append("\\ " if is_key or index == 0 else " ")
        elif ch == "\\":
            out.append("\\\\")
        elif ch in "\t\n\r\f":
            out.append("\\" + {"\t": "t", "\n": "n", "\r": "r", "\f": "f"}[ch])
        elif ch in "=:#!":
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) > 0x7E:
            for unit in _utf16_units(ch):
                out.append(f"\\u{unit:04X}")
        else:
            out.append(ch)
    return "".join(out)


def _utf16_units(ch: str) -> list[int]:
    data = ch.encode("utf-16-be")
    return [int.from_bytes(data[k : k + 2], "big") for k in range(0, len(data), 2)]
