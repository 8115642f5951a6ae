"""Column-wise decoding of length-prefixed Avro records straight into Arrow arrays.

Avro binary is row-oriented, but the records of a Hudi data block are length-prefixed, so the
start and end of every record are known before any is decoded. This decoder keeps one cursor
per record (a numpy array) and walks the writer schema once, decoding each field for all
records at a time with numpy gathers: a varint for every record in a few array operations, the
bytes of every string with one gather, a union's branch for every record and then its value
only for the records that take that branch. No Python object is made per record or per value,
so the cost grows with the number of fields rather than with the number of records.

It reads records, enums, fixed, the primitives and unions of ``null`` and one type, with the
logical types ``avro_schema.avro_to_arrow`` maps; ``compile_schema`` returns None for a writer
schema with arrays or maps, which the caller decodes with fastavro instead. The result must be
(and is tested to be) identical to fastavro's decoding converted by ``raw_records_to_arrow``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from lakecore.errors import SchemaError
from lakecore_hudi.avro_schema import _binary_to_decimal, avro_to_arrow

__all__ = ["AvroDecodeError", "Node", "compile_schema", "decode_records"]

# Bytes of zeros after the data, so a varint gather near the end never reads out of bounds.
PAD = 16
_VARINT_WIDTH = {"int": 5, "long": 10}
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


class AvroDecodeError(ValueError):
    """The bytes do not decode under the schema (the caller names the block)."""


@dataclass(frozen=True, slots=True)
class Node:
    """One type of a compiled writer schema, with the Arrow type it decodes to.

    ``kind`` is the Avro physical kind ("null", "boolean", "int", "long", "float", "double",
    "bytes", "string", "fixed", "enum", "record", "union"); ``children`` are a record's fields
    or a union's branches; ``size`` a fixed's size; ``symbols`` an enum's symbols.
    """

    kind: str
    arrow: pa.DataType
    children: tuple[Node, ...] = ()
    size: int = 0
    symbols: tuple[str, ...] = ()


def compile_schema(schema_json: str) -> tuple[Node, pa.Schema] | None:
    """The decoding plan of a record writer schema and its Arrow schema (``avro_to_arrow``).

    Returns None when the schema holds a type this decoder does not read (arrays, maps).

    Raises:
        SchemaError: the schema is not valid JSON or ``avro_to_arrow`` refuses it.
    """
    try:
        writer = json.loads(schema_json)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise SchemaError(f"invalid Avro schema JSON: {exc}") from None
    arrow = avro_to_arrow(writer)
    try:
        node = _compile(writer, pa.struct(list(arrow)), {}, "")
    except _Unsupported:
        return None
    return node, arrow


class _Unsupported(Exception):
    """A type the column-wise decoder leaves to fastavro."""


def _compile(avro: Any, arrow: pa.DataType, names: dict[str, Any], namespace: str) -> Node:
    if isinstance(avro, list):
        branches = []
        for member in avro:
            # The Arrow type of a nullable union is its one non-null member's type.
            member_arrow = pa.null() if member == "null" else arrow
            branches.append(_compile(member, member_arrow, names, namespace))
        return Node("union", arrow, tuple(branches))
    if isinstance(avro, str):
        if avro in ("null", "boolean", "int", "long", "float", "double", "bytes", "string"):
            return Node(avro, arrow)
        for candidate in (avro, f"{namespace}.{avro}"):
            if candidate in names:
                return _compile(names[candidate], arrow, names, namespace)
        raise _Unsupported(avro)  # avro_to_arrow accepted it, so this is not reached
    kind = avro["type"]
    if kind in ("record", "enum", "fixed"):
        full, child_ns = _full_name(avro, namespace)
        names[full] = avro
        if kind == "record":
            fields = [
                _compile(f["type"], arrow.field(i).type, names, child_ns)
                for i, f in enumerate(avro.get("fields", []))
            ]
            return Node("record", arrow, tuple(fields))
        if kind == "enum":
            return Node("enum", arrow, symbols=tuple(str(s) for s in avro["symbols"]))
        return Node("fixed", arrow, size=int(avro["size"]))
    if kind in ("array", "map"):
        raise _Unsupported(kind)
    return _compile(kind, arrow, names, namespace)


def _full_name(node: Mapping[str, Any], namespace: str) -> tuple[str, str]:
    name = str(node["name"])
    if "." in name:
        return name, name.rsplit(".", 1)[0]
    ns = node.get("namespace", namespace) or ""
    return (f"{ns}.{name}" if ns else name), ns


def decode_records(node: Node, data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> pa.Table:
    """Decode the records at ``data[starts[i]:ends[i]]`` (top-level record ``node``).

    ``data`` is uint8 with at least ``PAD`` bytes after the last record. Every record must
    decode to exactly its bytes.

    Raises:
        AvroDecodeError: a record does not decode, runs past its end or leaves bytes over.
    """
    pos = starts.astype(np.int64, copy=True)
    columns = []
    for child in node.children:
        array, pos = _decode(child, data, pos, ends)
        columns.append(array)
    if not np.array_equal(pos, ends):
        bad = int(np.flatnonzero(pos != ends)[0])
        raise AvroDecodeError(
            f"record {bad} decodes to {int(pos[bad] - starts[bad])} bytes, "
            f"its length prefix says {int(ends[bad] - starts[bad])}"
        )
    schema = pa.schema(list(node.arrow))
    return pa.Table.from_arrays(columns, schema=schema)


def _decode(
    node: Node, data: np.ndarray, pos: np.ndarray, ends: np.ndarray
) -> tuple[pa.Array, np.ndarray]:
    kind = node.kind
    n = len(pos)
    if kind == "null":
        return pa.nulls(n, node.arrow), pos
    if kind == "union":
        return _decode_union(node, data, pos, ends)
    if kind == "record":
        children = []
        for child in node.children:
            array, pos = _decode(child, data, pos, ends)
            children.append(array)
        if not children:  # a record without fields takes no bytes; n empty structs
            return pa.array([{}] * n, node.arrow), pos
        return pa.StructArray.from_arrays(children, fields=list(node.arrow)), pos
    if kind in ("int", "long"):
        values, pos = _varints(data, pos, ends, _VARINT_WIDTH[kind])
        if kind == "int":
            if n and (values.min() < _INT32_MIN or values.max() > _INT32_MAX):
                raise AvroDecodeError("an int value does not fit 32 bits")
            values = values.astype(np.int32)
        return _typed(values, node.arrow), pos
    if kind == "enum":
        index, pos = _varints(data, pos, ends, 5)
        if n and (index.min() < 0 or index.max() >= len(node.symbols)):
            raise AvroDecodeError("an enum index is out of range")
        return pa.array(node.symbols, pa.string()).take(pa.array(index)), pos
    if kind in ("boolean", "float", "double"):
        width = {"boolean": 1, "float": 4, "double": 8}[kind]
        raw = _fixed_bytes(data, pos, ends, width)
        if kind == "boolean":
            if n and raw.max(initial=0) > 1:
                raise AvroDecodeError("a boolean byte is neither 0 nor 1")
            return pa.array(raw[:, 0].astype(bool)), pos + 1
        values = raw.view("<f4" if kind == "float" else "<f8")[:, 0]
        return pa.array(values), pos + width
    if kind == "fixed":
        raw = _fixed_bytes(data, pos, ends, node.size)
        offsets = np.arange(0, (n + 1) * node.size, node.size, dtype=np.int32)
        return _binary(raw.reshape(-1), offsets, node.arrow), pos + node.size
    # bytes, string
    lengths, pos = _varints(data, pos, ends, 10)
    if n and (lengths.min() < 0 or np.any(pos + lengths > ends)):
        raise AvroDecodeError("a string or bytes length runs past its record")
    # int32 indices where they reach: the gather is memory-bound, half the bytes is ~2x.
    itype: type[np.signedinteger[Any]] = np.int32 if len(data) <= _INT32_MAX else np.int64
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    gather = np.repeat((pos - offsets[:-1]).astype(itype), lengths)
    gather += np.arange(total, dtype=itype)
    array = _binary(data[gather], offsets, node.arrow, string=kind == "string")
    return array, pos + lengths


def _decode_union(
    node: Node, data: np.ndarray, pos: np.ndarray, ends: np.ndarray
) -> tuple[pa.Array, np.ndarray]:
    branch, pos = _varints(data, pos, ends, 10)
    n = len(pos)
    if n and (branch.min() < 0 or branch.max() >= len(node.children)):
        raise AvroDecodeError("a union branch index is out of range")
    value_branch = next((i for i, b in enumerate(node.children) if b.kind != "null"), None)
    if value_branch is None:
        return pa.nulls(n, node.arrow), pos
    taken = branch == value_branch
    count = int(taken.sum())
    if count == n:
        return _decode(node.children[value_branch], data, pos, ends)
    if count == 0:
        return pa.nulls(n, node.arrow), pos
    values, sub = _decode(node.children[value_branch], data, pos[taken], ends[taken])
    pos = pos.copy()
    pos[taken] = sub
    index = pa.array(np.cumsum(taken) - 1, mask=~taken)
    return values.take(index), pos


def _varints(
    data: np.ndarray, pos: np.ndarray, ends: np.ndarray, width: int
) -> tuple[np.ndarray, np.ndarray]:
    """Zig-zag varints at ``pos`` -> (int64 values, positions after them)."""
    n = len(pos)
    if n == 0:
        return np.zeros(0, dtype=np.int64), pos
    first = data[pos]
    multi = np.flatnonzero(first >= 0x80)
    unsigned = first.astype(np.uint64)
    after = pos + 1
    if len(multi):  # only the varints of two bytes or more take the wide path
        at = pos[multi]
        raw = data[at[:, None] + np.arange(width)]
        more = raw >= 0x80
        length = np.argmin(more, axis=1) + 1  # the first byte without the continuation bit
        if more[np.arange(len(multi)), length - 1].any():
            raise AvroDecodeError(f"a varint is longer than {width} bytes")
        digits = (raw & 0x7F).astype(np.uint64)
        digits[np.arange(width) >= length[:, None]] = 0
        shifts = np.arange(width, dtype=np.uint64) * np.uint64(7)
        unsigned[multi] = np.bitwise_or.reduce(digits << shifts, axis=1)
        after[multi] = at + length
    if np.any(after > ends):
        raise AvroDecodeError("a varint runs past its record")
    values = (unsigned >> np.uint64(1)).astype(np.int64) ^ -(unsigned & np.uint64(1)).astype(
        np.int64
    )
    return values, after


def _fixed_bytes(data: np.ndarray, pos: np.ndarray, ends: np.ndarray, width: int) -> np.ndarray:
    """The ``width`` bytes at each position, as an (n, width) uint8 array."""
    if len(pos) and np.any(pos + width > ends):
        raise AvroDecodeError(f"a {width}-byte value runs past its record")
    return np.ascontiguousarray(data[pos[:, None] + np.arange(width)])


def _binary(
    values: np.ndarray, offsets: np.ndarray, target: pa.DataType, *, string: bool = False
) -> pa.Array:
    """A binary/string array from concatenated bytes and offsets, as ``target``."""
    n = len(offsets) - 1
    large = int(offsets[-1]) > _INT32_MAX
    physical = (pa.large_string() if large else pa.string()) if string else pa.binary()
    if large and not string:
        physical = pa.large_binary()
    offsets_buf = pa.py_buffer(offsets.astype(np.int64 if large else np.int32))
    array = pa.Array.from_buffers(physical, n, [None, offsets_buf, pa.py_buffer(values)])
    if string:
        try:
            array.validate(full=True)  # UTF-8
        except pa.ArrowInvalid as exc:
            raise AvroDecodeError(f"a string is not valid UTF-8: {exc}") from None
    if pa.types.is_decimal(target):
        try:
            return _binary_to_decimal(array, target)
        except SchemaError as exc:
            raise AvroDecodeError(str(exc)) from None
    return array if array.type == target else array.cast(target)


def _typed(values: np.ndarray, target: pa.DataType) -> pa.Array:
    """int32/int64 values as ``target`` (an integer, date, time or timestamp type)."""
    if target.bit_width != 8 * values.itemsize:  # avro_to_arrow maps int to 32-bit types only
        return pa.array(values).cast(target)
    return pa.Array.from_buffers(target, len(values), [None, pa.py_buffer(values)])
