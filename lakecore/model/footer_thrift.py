"""A Parquet footer's Thrift bytes without its large key-value values.

``trimmed_footer`` walks the Thrift compact encoding of a ``FileMetaData`` struct (the Parquet
format's footer) just far enough to find its ``key_value_metadata`` list and drops the entries
whose value is longer than ``KEEP_VALUE_BYTES`` (``ARROW:schema`` always kept), skipping those
values by their length without asking for their bytes. Everything else is copied byte for
byte. Used by ``lakecore.model.footers``.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["KEEP_VALUE_BYTES", "trimmed_footer"]

KEEP_VALUE_BYTES = 4096
"""Key-value metadata values longer than this are left out of a footer read for statistics."""
WINDOW = 64 * 1024
"""Bytes of the footer's start walked at once (grown for footers of very many row groups)."""
_KEPT_KEYS = (b"ARROW:schema",)

# Thrift compact protocol type ids.
_BOOL_TRUE, _BOOL_FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE = 1, 2, 3, 4, 5, 6, 7
_BINARY, _LIST, _SET, _MAP, _STRUCT = 8, 9, 10, 11, 12
_KEY_VALUE_FIELD = 5  # FileMetaData.key_value_metadata: list<KeyValue>
MAX_DEPTH = 64
"""Nesting of structs and containers past which a footer is refused (a Parquet footer nests a
few levels; Thrift's own readers stop at 64 too): the walk recurses once per level."""


def trimmed_footer(bytes_at: Callable[[int, int], bytes], length: int) -> bytes:
    """The Thrift ``FileMetaData`` of ``length`` bytes (``bytes_at(start, end)`` gives its
    bytes) without the key-value entries whose value is longer than ``KEEP_VALUE_BYTES``
    (``ARROW:schema`` always kept); the footer itself when there are none.

    Raises ``ValueError`` or ``IndexError`` when the bytes are no Thrift struct (among them
    containers claiming more entries than bytes left and nesting past ``MAX_DEPTH``); asks
    ``bytes_at`` for no byte twice but where a kept key-value entry straddles a read.
    """
    if length <= KEEP_VALUE_BYTES:
        return bytes_at(0, length)  # no value in it can be too long
    # The fields before the key-value list (schema, row groups) are walked in one buffer
    # from the footer's start, extended (never read again) until they fit: a window is
    # enough but for footers of very many row groups.
    head = bytes_at(0, min(length, WINDOW))
    while True:
        try:
            list_start = _key_values_at(head)
            break
        except IndexError:
            if len(head) >= length:
                raise
            more = bytes_at(len(head), min(length, len(head) * 4))
            if not more:
                raise
            head += more
    if list_start is None:
        return head if len(head) == length else head + bytes_at(len(head), length)
    walked, read = head, bytes_at

    def at(a: int, b: int) -> bytes:  # the bytes walked already are never asked again
        if b <= len(walked):
            return walked[a:b]
        if a < len(walked):
            return walked[a:] + read(len(walked), b)
        return read(a, b)

    bytes_at = at
    r = _Reader(bytes_at, length)
    r.pos = list_start
    count, element = r.list_header()
    if element != _STRUCT:
        raise ValueError("key_value_metadata is not a list of structs")
    kept: list[bytes] = []
    for _ in range(count):
        start = r.pos
        if _keep_key_value(r):
            kept.append(bytes_at(start, r.pos))
    if len(kept) == count:
        return bytes_at(0, length)
    head = bytes([len(kept) << 4 | _STRUCT]) if len(kept) < 15 else _long_list(len(kept))
    return b"".join([bytes_at(0, list_start), head, *kept, bytes_at(r.pos, length)])


def _key_values_at(buf: bytes) -> int | None:
    """Where the ``key_value_metadata`` list header of the FileMetaData struct in ``buf``
    starts (None when the struct has none); ``IndexError`` when ``buf`` ends before it."""
    i = 0
    field_id = 0
    while True:
        header = buf[i]
        i += 1
        kind = header & 0x0F
        if kind == 0:
            return None
        if header >> 4:
            field_id += header >> 4
        else:
            value, i = _varint(buf, i)
            field_id = _zigzag(value)
        if field_id == _KEY_VALUE_FIELD and kind == _LIST:
            if i >= len(buf):
                raise IndexError("the buffer ends before the key-value list")
            return i
        i = _skip_in(buf, i, kind, 0)
        if i > len(buf):
            raise IndexError("the buffer ends inside a value")


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    out = shift = 0
    while True:
        b = buf[i]
        i += 1
        out |= (b & 0x7F) << shift
        if b < 0x80:
            return out, i
        shift += 7
        if shift > 70:
            raise ValueError("varint too long")


def _skip_in(buf: bytes, i: int, kind: int, depth: int) -> int:
    """The position after the value of Thrift ``kind`` at ``i`` of ``buf``, nested ``depth``
    levels deep (past its end when ``buf`` is too short for a binary or fixed-size value);
    ``IndexError`` when ``buf`` ends inside a header or varint or has fewer bytes left than a
    container's entries (each takes one byte at least), ``ValueError`` past ``MAX_DEPTH``.
    Written for speed: a footer has hundreds of values."""
    if depth > MAX_DEPTH:
        raise ValueError(f"Thrift values nested more than {MAX_DEPTH} deep")
    if kind == _STRUCT:
        while True:
            header = buf[i]
            i += 1
            if header == 0:
                return i
            if not header & 0xF0:
                while buf[i] & 0x80:
                    i += 1
                i += 1
            kind_in = header & 0x0F
            if kind_in in (_I32, _I64, _I16):
                while buf[i] & 0x80:
                    i += 1
                i += 1
            elif kind_in == _BINARY:
                n, i = _varint(buf, i)
                i += n
            elif kind_in > _BOOL_FALSE:
                i = _skip_in(buf, i, kind_in, depth + 1)
    if kind in (_I32, _I64, _I16):
        while buf[i] & 0x80:
            i += 1
        return i + 1
    if kind == _BINARY:
        n, i = _varint(buf, i)
        return i + n
    if kind in (_LIST, _SET):
        header = buf[i]
        i += 1
        count, element = header >> 4, header & 0x0F
        if count == 15:
            count, i = _varint(buf, i)
        if count > len(buf) - i:
            raise IndexError("the buffer ends before a list's entries")
        if element in (_BOOL_TRUE, _BOOL_FALSE, _BYTE):
            return i + count  # one byte each in a container
        if element == _DOUBLE:
            return i + 8 * count
        for _ in range(count):
            i = _skip_in(buf, i, element, depth + 1)
            if i > len(buf):
                raise IndexError("the buffer ends inside a list")
        return i
    if kind == _MAP:
        count, i = _varint(buf, i)
        if 2 * count > len(buf) - i:
            raise IndexError("the buffer ends before a map's entries")
        if count:
            types = buf[i]
            i += 1
            for _ in range(count):
                for element in (types >> 4, types & 0x0F):
                    if element in (_BOOL_TRUE, _BOOL_FALSE, _BYTE):
                        i += 1
                    else:
                        i = _skip_in(buf, i, element, depth + 1)
                if i > len(buf):
                    raise IndexError("the buffer ends inside a map")
        return i
    if kind in (_BOOL_TRUE, _BOOL_FALSE):
        return i
    if kind == _BYTE:
        return i + 1
    if kind == _DOUBLE:
        return i + 8
    raise ValueError(f"unknown Thrift type {kind}")


def _keep_key_value(r: _Reader) -> bool:
    """Read one KeyValue struct; whether it is to be kept."""
    key = b""
    keep = True
    field_id = 0
    while True:
        header = r.byte()
        kind = header & 0x0F
        if kind == 0:
            return keep or key in _KEPT_KEYS
        delta = header >> 4
        field_id = field_id + delta if delta else _zigzag(r.varint())
        if kind == _BINARY and field_id == 1:
            n = r.varint()
            key = r.take(n)
        elif kind == _BINARY and field_id == 2:
            n = r.varint()
            keep = n <= KEEP_VALUE_BYTES
            r.pos += n
        else:
            r.skip(kind)


def _long_list(count: int) -> bytes:
    out = bytearray([0xF0 | _STRUCT])
    while True:
        if count < 0x80:
            out.append(count)
            return bytes(out)
        out.append(count & 0x7F | 0x80)
        count >>= 7


def _zigzag(n: int) -> int:
    return (n >> 1) ^ -(n & 1)


class _Reader:
    """A cursor over ``length`` bytes of Thrift compact that skips binary values without
    reading them; raises ``IndexError`` when a value would end past ``length`` (a container
    claiming more entries than bytes left: each takes one byte at least) and ``ValueError``
    past ``MAX_DEPTH``."""

    __slots__ = ("_at", "_length", "pos")

    def __init__(self, bytes_at: Callable[[int, int], bytes], length: int) -> None:
        self._at = bytes_at
        self._length = length
        self.pos = 0

    def byte(self) -> int:
        b = self._at(self.pos, self.pos + 1)
        if not b:
            raise IndexError("the footer ends inside a Thrift value")
        self.pos += 1
        return b[0]

    def take(self, n: int) -> bytes:
        out = self._at(self.pos, self.pos + n)
        if len(out) != n:
            raise IndexError("the footer ends inside a Thrift value")
        self.pos += n
        return out

    def varint(self) -> int:
        out = shift = 0
        while True:
            b = self.byte()
            out |= (b & 0x7F) << shift
            if not b & 0x80:
                return out
            shift += 7
            if shift > 70:
                raise ValueError("varint too long")

    def list_header(self) -> tuple[int, int]:
        b = self.byte()
        count = b >> 4
        if count == 15:
            count = self.varint()
        self._fits(count)
        return count, b & 0x0F

    def _fits(self, entries: int) -> None:
        if entries > self._length - self.pos:
            raise IndexError("the footer ends before a container's entries")

    def skip(self, kind: int, depth: int = 0) -> None:
        if depth > MAX_DEPTH:
            raise ValueError(f"Thrift values nested more than {MAX_DEPTH} deep")
        if kind in (_BOOL_TRUE, _BOOL_FALSE):
            return
        if kind == _BYTE:
            self.pos += 1
        elif kind in (_I16, _I32, _I64):
            self.varint()
        elif kind == _DOUBLE:
            self.pos += 8
        elif kind == _BINARY:
            n = self.varint()  # (not ``pos += varint()``: that adds to the pos before it)
            self.pos += n
        elif kind in (_LIST, _SET):
            count, element = self.list_header()
            for _ in range(count):
                self._skip_element(element, depth + 1)
                self._fits(0)
        elif kind == _MAP:
            count = self.varint()
            self._fits(2 * count)
            if count:
                types = self.byte()
                for _ in range(count):
                    self._skip_element(types >> 4, depth + 1)
                    self._skip_element(types & 0x0F, depth + 1)
                    self._fits(0)
        elif kind == _STRUCT:
            while True:
                header = self.byte()
                if header & 0x0F == 0:
                    return
                if not header >> 4:
                    self.varint()
                self.skip(header & 0x0F, depth + 1)
        else:
            raise ValueError(f"unknown Thrift type {kind}")

    def _skip_element(self, kind: int, depth: int) -> None:
        if kind in (_BOOL_TRUE, _BOOL_FALSE):
            self.pos += 1  # a bool in a container is one byte (compact protocol)
        else:
            self.skip(kind, depth)
