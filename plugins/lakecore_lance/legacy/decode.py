"""The legacy (v0.1) page encodings, decoded into Arrow arrays.

Every page is addressed by (field id, batch) in the page table and has a ``position`` and a
``length`` that counts items. The encodings, as the legacy writer lays them out:

- **plain** (fixed-width types: integers, floats, decimals, dates, times, timestamps,
  durations, fixed-size binary, fixed-size lists of those): ``length`` values back to back,
  little-endian; booleans are bits (LSB first). A fixed-size list of ``n`` stores its
  ``length * n`` child values the same way. There is no validity buffer: a null was written as
  whatever its slot held (pylance reads those back as values, and so does this reader).
- **var-binary** (string, binary and their large forms): the bytes of all values, then at
  ``position`` an int64 array of ``length + 1`` absolute file offsets; value ``i`` is bytes
  ``[off[i], off[i+1])``. In a nullable field an empty value means null.
- **dictionary**: the keys, plain-encoded with the index type; the values are stored once for
  the dataset, at the field's ``dictionary`` (offset, length) in the manifest file (plain for
  integers, var-binary with empty = null for strings).
- **list / large list**: the field's own page holds ``rows + 1`` int32 / int64 offsets into
  the child field's values of the same batch; lists have no nulls (a null was written empty).
- **struct**: no page; its children are read by their own field ids; no struct-level nulls.
- **null**: a page whose ``length`` is the row count and no bytes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from lakecore.errors import UnsupportedFeatureError
from lakecore_lance.legacy.fields import (
    ENCODING_DICTIONARY,
    ENCODING_NONE,
    ENCODING_PLAIN,
    ENCODING_RLE,
    ENCODING_VAR_BINARY,
    LegacyField,
)
from lakecore_lance.legacy.layout import FileBytes, FileLayout

_INDEX_TYPES = (pa.int8(), pa.int16(), pa.int32(), pa.int64(),
                pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64())  # fmt: skip

_DECODED_ENCODINGS = frozenset(
    {ENCODING_NONE, ENCODING_PLAIN, ENCODING_VAR_BINARY, ENCODING_DICTIONARY}
)


@dataclass
class DecodeContext:
    """What decoding one file needs: its bytes, its layout, and where dictionaries live."""

    data: FileBytes
    layout: FileLayout
    # Loads a dictionary field's values (called at most once per field id).
    load_dictionary: Callable[[LegacyField], pa.Array]
    _dictionaries: dict[int, pa.Array] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def page(self, fld: LegacyField, batch: int, needed: int) -> tuple[int, int]:
        """The (position, item count) of ``fld``'s page in ``batch``; at least ``needed`` items.

        A missing page is read as empty, which is only valid when nothing is needed.
        """
        pos, length = self.layout.pages.get((fld.id, batch), (0, 0))
        if length < needed:
            raise self.data.corrupt(
                f"field {fld.name!r} (id {fld.id}) batch {batch}: page has {length} items, "
                f"{needed} needed"
            )
        return pos, length

    def dictionary(self, fld: LegacyField) -> pa.Array:
        """The dictionary values of ``fld``, loaded once (batches may decode in threads)."""
        with self._lock:
            if fld.id not in self._dictionaries:
                self._dictionaries[fld.id] = self.load_dictionary(fld)
            return self._dictionaries[fld.id]


def read_range(ctx: DecodeContext, fld: LegacyField, batch: int, start: int, end: int) -> pa.Array:
    """Decode rows ``[start, end)`` of ``fld`` in ``batch`` as an array of ``fld``'s type.

    Raises:
        CorruptTableError: a page is missing, too short, outside the file, or its bytes are
            not valid for the type (offsets going backwards, invalid UTF-8, bad keys).
        UnsupportedFeatureError: the field's type has no legacy encoding lakecore reads.
    """
    if fld.encoding not in _DECODED_ENCODINGS:
        # The page layout follows the type (as in Lance's reader); RLE was declared in the
        # proto but never written, and an unknown value may mean a layout we would misread.
        name = {ENCODING_RLE: "RLE"}.get(fld.encoding, str(fld.encoding))
        raise UnsupportedFeatureError(
            f"lance legacy encoding {name}",
            f"legacy lance data file {ctx.data.path}: field {fld.name!r} (id {fld.id}) uses "
            f"encoding {name}, which the legacy (v0.1) reader does not decode",
        )
    typ = fld.arrow_type()
    n = end - start
    if pa.types.is_struct(typ):
        children = [read_range(ctx, c, batch, start, end) for c in fld.children]
        return pa.Array.from_buffers(typ, n, [None], children=children)
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        return _read_list(ctx, fld, typ, batch, start, end)
    if pa.types.is_null(typ):
        ctx.page(fld, batch, end)
        return pa.nulls(n)
    if pa.types.is_dictionary(typ):
        return _read_dictionary(ctx, fld, typ, batch, start, end)
    if _is_var_binary(typ):
        pos, _ = ctx.page(fld, batch, end)
        return read_var_binary(ctx.data, typ, fld.nullable, pos, start, end, _what(fld, batch))
    if _is_fixed_stride(typ):
        pos, length = ctx.page(fld, batch, end)
        return read_plain(ctx.data, typ, pos, length, start, end, _what(fld, batch))
    raise UnsupportedFeatureError(
        f"lance legacy encoding of {typ}",
        f"legacy lance data file {ctx.data.path}: field {fld.name!r} has type {typ}, "
        "which the legacy (v0.1) reader does not decode",
    )


def _what(fld: LegacyField, batch: int) -> str:
    return f"field {fld.name!r} (id {fld.id}) batch {batch}"


def _is_var_binary(typ: pa.DataType) -> bool:
    return bool(
        pa.types.is_string(typ)
        or pa.types.is_binary(typ)
        or pa.types.is_large_string(typ)
        or pa.types.is_large_binary(typ)
    )


def _is_fixed_stride(typ: pa.DataType) -> bool:
    if pa.types.is_fixed_size_list(typ):
        return _is_fixed_stride(typ.value_type)
    return bool(
        pa.types.is_boolean(typ)
        or pa.types.is_integer(typ)
        or pa.types.is_floating(typ)
        or pa.types.is_decimal(typ)
        or pa.types.is_temporal(typ)
        or pa.types.is_fixed_size_binary(typ)
    )


def read_plain(
    data: FileBytes, typ: pa.DataType, pos: int, length: int, start: int, end: int, what: str
) -> pa.Array:
    """Decode items ``[start, end)`` of a plain page of ``length`` items at ``pos``."""
    n = end - start
    if end > length:
        raise data.corrupt(f"{what}: items [{start}, {end}) past the page's {length}")
    if pa.types.is_fixed_size_list(typ):
        size = typ.list_size
        values = read_plain(
            data, typ.value_type, pos, length * size, start * size, end * size, what
        )
        return pa.FixedSizeListArray.from_arrays(values, type=typ)
    if pa.types.is_boolean(typ):
        raw = data.read(pos + start // 8, pos + (end + 7) // 8, what)
        return pa.Array.from_buffers(typ, n, [None, pa.py_buffer(raw)], offset=start % 8)
    width = typ.byte_width
    raw = data.read(pos + start * width, pos + end * width, what)
    return pa.Array.from_buffers(typ, n, [None, pa.py_buffer(raw)])


def read_var_binary(
    data: FileBytes,
    typ: pa.DataType,
    nullable: bool,
    pos: int,
    start: int,
    end: int,
    what: str,
) -> pa.Array:
    """Decode values ``[start, end)`` of a var-binary page whose offsets start at ``pos``."""
    n = end - start
    raw_offsets = data.read(pos + 8 * start, pos + 8 * (end + 1), f"{what} offsets")
    offsets = np.frombuffer(raw_offsets, dtype="<i8")
    first, last = int(offsets[0]), int(offsets[-1])
    if n and bool(np.any(offsets[1:] < offsets[:-1])):
        raise data.corrupt(f"{what}: value offsets go backwards")
    values = data.read(first, last, f"{what} values")
    rel = offsets - first
    large = pa.types.is_large_string(typ) or pa.types.is_large_binary(typ)
    if not large and last - first > np.iinfo(np.int32).max:
        raise data.corrupt(f"{what}: {last - first} value bytes overflow 32-bit offsets")
    offsets_buf = pa.py_buffer(rel.astype("<i8" if large else "<i4").tobytes())
    validity = None
    if nullable and n:
        present = rel[1:] != rel[:-1]
        if not bool(present.all()):
            validity = pa.array(present, pa.bool_()).buffers()[1]
    arr = pa.Array.from_buffers(typ, n, [validity, offsets_buf, pa.py_buffer(values)])
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        try:
            arr.validate(full=True)
        except pa.ArrowInvalid as exc:
            raise data.corrupt(f"{what}: {exc}") from exc
    return arr


def _read_list(
    ctx: DecodeContext, fld: LegacyField, typ: pa.DataType, batch: int, start: int, end: int
) -> pa.Array:
    large = pa.types.is_large_list(typ)
    offset_type = pa.int64() if large else pa.int32()
    pos, length = ctx.page(fld, batch, end + 1)
    what = _what(fld, batch)
    offsets = read_plain(ctx.data, offset_type, pos, length, start, end + 1, what)
    positions = offsets.to_numpy(zero_copy_only=False)
    if bool(np.any(positions[1:] < positions[:-1])) or int(positions[0]) < 0:
        raise ctx.data.corrupt(f"{what}: list offsets are negative or go backwards")
    child = fld.children[0]
    values = read_range(ctx, child, batch, int(positions[0]), int(positions[-1]))
    rel = pa.array(positions - positions[0], offset_type)
    cls = pa.LargeListArray if large else pa.ListArray
    return cls.from_arrays(rel, values, type=typ)


def _read_dictionary(
    ctx: DecodeContext, fld: LegacyField, typ: pa.DataType, batch: int, start: int, end: int
) -> pa.Array:
    if typ.index_type not in _INDEX_TYPES:
        raise UnsupportedFeatureError(
            f"lance legacy dictionary index {typ.index_type}",
            f"legacy lance data file {ctx.data.path}: field {fld.name!r} has dictionary "
            f"index type {typ.index_type}",
        )
    pos, length = ctx.page(fld, batch, end)
    what = _what(fld, batch)
    keys = read_plain(ctx.data, typ.index_type, pos, length, start, end, what)
    values = ctx.dictionary(fld)
    np_keys = keys.to_numpy(zero_copy_only=False)
    if len(np_keys) and (int(np_keys.min()) < 0 or int(np_keys.max()) >= len(values)):
        raise ctx.data.corrupt(f"{what}: dictionary keys outside the {len(values)} values")
    return pa.DictionaryArray.from_arrays(keys, values)


def read_dictionary_values(
    data: FileBytes, fld: LegacyField, value_type: pa.DataType, offset: int, length: int
) -> pa.Array:
    """Decode a dictionary's ``length`` values stored at ``offset`` of ``data``.

    String-like values are var-binary with empty meaning null; integers are plain.
    """
    what = f"dictionary of field {fld.name!r} (id {fld.id})"
    if _is_var_binary(value_type):
        return read_var_binary(data, value_type, True, offset, 0, length, what)
    if pa.types.is_integer(value_type):
        return read_plain(data, value_type, offset, length, 0, length, what)
    raise UnsupportedFeatureError(
        f"lance legacy dictionary of {value_type}",
        f"legacy lance data file {data.path}: field {fld.name!r} has dictionary values of "
        f"type {value_type}; only strings, binary and integers are defined",
    )
