"""Decoding and encoding the contents of Hudi log blocks.

* Avro data block content (big-endian): int32 block version (Hudi writes 3), int32 record
  count, then per record an int32 byte length and the record in Avro binary encoding under the
  writer schema held in the block's SCHEMA header.
* Parquet data block content: a complete Parquet file.
* Delete block content: int32 version, int32 byte length, then the payload. Version 3 (every
  Hudi since 0.13) is an Avro ``HoodieDeleteRecordList``; versions 1 and 2 are Java/Kryo
  serialized objects, which lakecore does not read.
* Command block: no content; the COMMAND_BLOCK_TYPE header says what to do (0 = rollback the
  blocks of TARGET_INSTANT_TIME).
* HFile data blocks (metadata table) are read by ``lakecore_hudi.mdt``; this module only hands
  out their raw content.
"""

from __future__ import annotations

import datetime
import decimal
import functools
import io
import json
import struct
from collections.abc import Mapping, Sequence
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lakecore.errors import CorruptTableError, SchemaError, UnsupportedFeatureError
from lakecore.model.parquet_read import open_parquet
from lakecore_hudi.avro_schema import (
    arrow_to_records,
    avro_to_arrow,
    physical_avro_schema,
    raw_records_to_arrow,
)
from lakecore_hudi.log.avro_columns import (
    PAD,
    AvroDecodeError,
    Node,
    compile_schema,
    decode_records,
)
from lakecore_hudi.log.format import BlockType, CommandType, HeaderKey, LogBlock, encode_log_block

__all__ = [
    "AVRO_BLOCK_VERSION",
    "DELETE_BLOCK_VERSION",
    "DELETE_SCHEMA",
    "conform_table",
    "avro_record_count",
    "decode_avro_block",
    "decode_avro_blocks",
    "decode_data_block",
    "decode_delete_block",
    "decode_parquet_block",
    "encode_avro_data_block",
    "encode_delete_block",
    "encode_parquet_data_block",
    "encode_rollback_command_block",
    "hfile_content",
]

AVRO_BLOCK_VERSION = 3
DELETE_BLOCK_VERSION = 3

_I32 = struct.Struct(">i")
# Below this many records fastavro's C reader (~1-8 us a record) beats the column-wise
# decoder's fixed cost (~0.3-0.5 ms a call, a few numpy calls per field); measured.
_COLUMNAR_MIN_RECORDS = 64
_HEAD = struct.Struct(">ii")

_WRAPPER_NS = "org.apache.hudi.avro.model"
# The orderingVal union of HoodieDeleteRecord: branch i+1 is _WRAPPERS[i]; Hudi serializes the
# branch index, so the order is part of the format. Each wrapper is {"value": <type>}.
_WRAPPERS: list[tuple[str, Any, pa.DataType]] = [
    ("BooleanWrapper", "boolean", pa.bool_()),
    ("IntWrapper", "int", pa.int32()),
    ("LongWrapper", "long", pa.int64()),
    ("FloatWrapper", "float", pa.float32()),
    ("DoubleWrapper", "double", pa.float64()),
    ("BytesWrapper", "bytes", pa.binary()),
    ("StringWrapper", "string", pa.string()),
    ("DateWrapper", "int", pa.date32()),
    (
        "DecimalWrapper",
        {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15},
        pa.decimal128(30, 15),
    ),
    ("TimeMicrosWrapper", {"type": "long", "logicalType": "time-micros"}, pa.time64("us")),
    ("TimestampMicrosWrapper", "long", pa.timestamp("us", tz="UTC")),
]

DELETE_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "HoodieDeleteRecordList",
    "namespace": _WRAPPER_NS,
    "fields": [
        {
            "name": "deleteRecordList",
            "type": {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "HoodieDeleteRecord",
                    "fields": [
                        {"name": "recordKey", "type": ["null", "string"], "default": None},
                        {"name": "partitionPath", "type": ["null", "string"], "default": None},
                        {
                            "name": "orderingVal",
                            "type": [
                                "null",
                                *(
                                    {
                                        "type": "record",
                                        "name": name,
                                        "fields": [{"name": "value", "type": avro}],
                                    }
                                    for name, avro, _ in _WRAPPERS
                                ),
                            ],
                            "default": None,
                        },
                    ],
                },
            },
        }
    ],
}
"""HoodieDeleteRecordList as Hudi 0.13-1.x writes it (delete block version 3)."""

_DELETE_PARSED = fastavro.parse_schema(physical_avro_schema(DELETE_SCHEMA))
_WRAPPER_TYPES = {f"{_WRAPPER_NS}.{name}": arrow for name, _, arrow in _WRAPPERS}


def _fail(block: LogBlock, what: str) -> CorruptTableError:
    return CorruptTableError(
        f"{block.path}: {block.block_type.name} block at byte {block.offset}: {what}"
    )


# ------------------------------------------------------------------------------- data blocks


@functools.lru_cache(maxsize=64)
def _framed_reader(schema_json: str) -> tuple[Any, pa.Schema]:
    """Parsed fastavro schema that decodes a whole Avro data block in one call, and its Arrow.

    The records after the block's 8-byte head are ``<int32 length><record>`` repeated. Read as
    Avro, a 4-byte ``fixed`` followed by the record is exactly a record ``{len: fixed(4),
    r: <writer schema>}``; prefixing the record count (as an Avro long) and suffixing a 0
    turns the whole payload into an Avro array of those, which fastavro's C reader decodes in
    one call instead of one Python call per record.
    """
    try:
        writer = json.loads(schema_json)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise SchemaError(f"invalid Avro schema JSON: {exc}") from None
    arrow = avro_to_arrow(writer)
    framed = {
        "type": "array",
        "items": {
            "type": "record",
            "name": "LakecoreFramedRecord",
            "namespace": "lakecore.internal",
            "fields": [
                {"name": "len", "type": {"type": "fixed", "name": "Len", "size": 4}},
                {"name": "r", "type": physical_avro_schema(writer)},
            ],
        },
    }
    try:
        return fastavro.parse_schema(framed), arrow
    except Exception as exc:  # fastavro raises SchemaParseException, UnknownType, KeyError ...
        raise SchemaError(f"Avro schema fastavro cannot parse: {exc}") from None


def _avro_long(value: int) -> bytes:
    """Avro zig-zag varint encoding of a non-negative long."""
    n = value << 1
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def decode_avro_block(block: LogBlock, reader_schema: pa.Schema | None = None) -> pa.Table:
    """Decode an Avro data block into Arrow.

    Returns the records in block order, in the block's writer schema (SCHEMA header, converted
    by ``avro_to_arrow``), or conformed to ``reader_schema`` when given (see
    ``conform_table``).

    Raises:
        CorruptTableError: the block has no SCHEMA header, or its content does not decode.
        UnsupportedFeatureError: the block version predates record counts (version 0).
        SchemaError: the writer schema cannot be converted or conformed.
    """
    return decode_avro_blocks([block], reader_schema)


def decode_avro_blocks(
    blocks: Sequence[LogBlock], reader_schema: pa.Schema | None = None
) -> pa.Table:
    """Decode Avro data blocks that share one SCHEMA header into one table, in block order.

    Decoding several blocks at once is what makes the column-wise decoder pay off: its cost
    is per field and per call, not per record. Errors are as ``decode_avro_block``'s and name
    the block at fault.

    Raises:
        ValueError: ``blocks`` is empty, holds another block type or several SCHEMA headers.
        CorruptTableError, UnsupportedFeatureError, SchemaError: as ``decode_avro_block``.
    """
    if not blocks:
        raise ValueError("no blocks to decode")
    for block in blocks:
        if block.block_type != BlockType.AVRO_DATA:
            raise ValueError(f"not an Avro data block: {block.block_type.name}")
        if block.schema is None:
            raise _fail(block, "data block has no SCHEMA header")
    schema_json = blocks[0].schema
    assert schema_json is not None
    if any(b.schema != schema_json for b in blocks):
        raise ValueError("the blocks have different SCHEMA headers")
    try:
        compiled = _columnar_plan(schema_json)
    except SchemaError as exc:
        block = blocks[0]
        # Rare path: classify again, naming the block (cached plans are shared by blocks).
        avro_to_arrow(schema_json, f"{block.path}: SCHEMA header of the block at {block.offset}")
        raise _fail(block, f"unusable writer schema in the SCHEMA header: {exc}") from None
    few = sum(avro_record_count(b) for b in blocks) < _COLUMNAR_MIN_RECORDS
    if compiled is None or few:  # arrays or maps, or too few records: fastavro, per block
        tables = [_decode_with_fastavro(b) for b in blocks]
        table = tables[0] if len(tables) == 1 else pa.concat_tables(tables)
    else:
        table = _decode_columnar(blocks, *compiled)
    return table if reader_schema is None else conform_table(table, reader_schema)


@functools.lru_cache(maxsize=64)
def _columnar_plan(schema_json: str) -> tuple[Node, pa.Schema] | None:
    return compile_schema(schema_json)


def _decode_columnar(blocks: Sequence[LogBlock], plan: Node, arrow: pa.Schema) -> pa.Table:
    """All records of ``blocks`` decoded column-wise in one pass over one joined buffer."""
    payloads: list[bytes | memoryview] = []
    starts: list[np.ndarray] = []
    ends: list[np.ndarray] = []
    base = 0
    for block in blocks:
        payload, first, last = _record_bounds(block)
        payloads.append(payload)
        starts.append(first + base)
        ends.append(last + base)
        base += len(payload)
    payloads.append(bytes(PAD))
    data = np.frombuffer(b"".join(payloads), dtype=np.uint8)
    try:
        return decode_records(plan, data, np.concatenate(starts), np.concatenate(ends))
    except AvroDecodeError as exc:
        if len(blocks) > 1:  # find and name the block at fault
            for block in blocks:
                _decode_columnar([block], plan, arrow)
        raise _fail(blocks[0], f"records do not decode under the SCHEMA header: {exc}") from None


def _record_bounds(block: LogBlock) -> tuple[memoryview, np.ndarray, np.ndarray]:
    """The records' payload (content after the 8-byte head) and each record's start and end
    in it, from the int32 length prefixes."""
    content = memoryview(block.content)
    count = avro_record_count(block)
    payload = content[8:]
    size = len(payload)
    starts: list[int] = []
    append = starts.append
    unpack = _I32.unpack_from
    pos = 0
    # The one per-record Python loop left (each prefix says where the next one is), kept
    # minimal: the lengths are checked afterwards, in bulk.
    try:
        for _ in range(count):
            (length,) = unpack(payload, pos)
            pos += 4
            append(pos)
            pos += length
    except (struct.error, ValueError):  # a prefix past the end (or before the start)
        raise _fail(block, "record length prefixes run past the content") from None
    first = np.array(starts, dtype=np.int64)
    last = np.empty(count, dtype=np.int64)
    last[:-1] = first[1:] - 4
    if count:
        last[-1] = pos
    if np.any(last < first) or pos > size:
        raise _fail(block, "record length prefixes run past the content (or are negative)")
    if pos != size:
        raise _fail(block, f"{size - pos} bytes left after {count} records")
    return payload, first, last


def avro_record_count(block: LogBlock) -> int:
    """The record count in an Avro data block's head.

    Raises:
        CorruptTableError: the head is cut short or the count is negative.
        UnsupportedFeatureError: the block version predates record counts (version 0).
    """
    content = block.content
    if len(content) < 8:
        raise _fail(block, f"content of {len(content)} bytes is shorter than its 8-byte head")
    version, count = _HEAD.unpack_from(content)
    if version < 1:
        raise UnsupportedFeatureError(
            f"hudi avro data block version {version}",
            f"{block.path}: Avro data block at byte {block.offset} has version {version}; "
            "lakecore reads versions 1 and later",
        )
    if count < 0:
        raise _fail(block, f"negative record count {count}")
    return int(count)


def _decode_with_fastavro(block: LogBlock) -> pa.Table:
    """One block decoded by fastavro's C reader, then converted to Arrow in one call."""
    assert block.schema is not None
    parsed, writer_arrow = _framed_reader(block.schema)
    content = block.content
    count = avro_record_count(block)
    if count == 0:
        # An Avro array of zero items is a lone 0; the framing trick below needs items.
        if len(content) != 8:
            raise _fail(block, f"{len(content) - 8} bytes follow a record count of 0")
        return writer_arrow.empty_table()
    payload = b"".join([_avro_long(count), content[8:], b"\x00"])
    stream = io.BytesIO(payload)
    try:
        framed: Any = fastavro.schemaless_reader(stream, parsed, None)
    except (EOFError, ValueError, IndexError, UnicodeDecodeError, struct.error) as exc:
        raise _fail(block, f"records do not decode under the SCHEMA header: {exc!r}") from None
    if stream.tell() != len(payload):
        raise _fail(block, f"{len(payload) - stream.tell()} bytes left after {count} records")
    _check_lengths(block, framed, len(content) - 8)
    return _framed_to_arrow(block, framed, writer_arrow)


def _check_lengths(block: LogBlock, framed: list[dict[str, Any]], payload_size: int) -> None:
    """The per-record length prefixes must add up to the payload (catches misframing)."""
    if not framed:
        return
    lengths = np.frombuffer(b"".join(r["len"] for r in framed), dtype=">i4")
    if int(lengths.sum(dtype=np.int64)) + 4 * len(framed) != payload_size:
        raise _fail(block, "record length prefixes disagree with the decoded records")


def _framed_to_arrow(
    block: LogBlock, framed: list[dict[str, Any]], writer_arrow: pa.Schema
) -> pa.Table:
    try:
        return raw_records_to_arrow([r["r"] for r in framed], writer_arrow)
    except SchemaError as exc:
        raise _fail(block, str(exc)) from None


def decode_parquet_block(block: LogBlock, reader_schema: pa.Schema | None = None) -> pa.Table:
    """Decode a Parquet data block (its content is a whole Parquet file) into Arrow.

    Raises:
        CorruptTableError: the content is not a readable Parquet file.
        SchemaError: the rows cannot be conformed to ``reader_schema``.
    """
    if block.block_type != BlockType.PARQUET_DATA:
        raise ValueError(f"not a Parquet data block: {block.block_type.name}")
    try:
        table = open_parquet(pa.BufferReader(pa.py_buffer(block.content))).read()
    except (pa.ArrowInvalid, OSError) as exc:
        raise _fail(block, f"content is not a readable Parquet file: {exc}") from None
    table = table.replace_schema_metadata(None)
    return table if reader_schema is None else conform_table(table, reader_schema)


def decode_data_block(block: LogBlock, reader_schema: pa.Schema | None = None) -> pa.Table:
    """Decode an Avro or Parquet data block.

    Raises:
        UnsupportedFeatureError: an HFile or CDC block (metadata-table / CDC readers only).
        CorruptTableError, SchemaError: as ``decode_avro_block`` / ``decode_parquet_block``.
    """
    if block.block_type == BlockType.AVRO_DATA:
        return decode_avro_block(block, reader_schema)
    if block.block_type == BlockType.PARQUET_DATA:
        return decode_parquet_block(block, reader_schema)
    raise UnsupportedFeatureError(
        f"hudi {block.block_type.name.lower()} log block",
        f"{block.path}: {block.block_type.name} block at byte {block.offset} holds no table "
        "rows lakecore can read here",
    )


def hfile_content(block: LogBlock) -> memoryview:
    """The raw HFile bytes of an HFile data block (metadata table); no copy."""
    if block.block_type != BlockType.HFILE_DATA:
        raise ValueError(f"not an HFile data block: {block.block_type.name}")
    return memoryview(block.content)


def conform_table(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Project and cast ``table`` to ``schema`` by column name (schema evolution).

    Columns of ``schema`` missing from ``table`` become all-null; extra columns are dropped;
    struct columns are conformed field by field the same way; other types are cast with
    Arrow's safe cast (int -> long, float -> double, ... as Avro schema resolution allows).

    Raises:
        SchemaError: a column cannot be cast, or a missing column is declared non-nullable.
    """
    arrays = [
        _conform_column(
            table.column(f.name) if f.name in table.column_names else None, f, len(table)
        )
        for f in schema
    ]
    return pa.Table.from_arrays(arrays, schema=schema)


def _conform_column(
    column: pa.ChunkedArray | None, field: pa.Field, length: int
) -> pa.ChunkedArray:
    if column is None:
        if not field.nullable and length:
            raise SchemaError(f"column {field.name!r} is missing and not nullable")
        return pa.chunked_array([pa.nulls(length, field.type)], type=field.type)
    if column.type == field.type:
        return column
    try:
        return pa.chunked_array(
            [_conform_array(chunk, field.type, field.name) for chunk in column.chunks],
            type=field.type,
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise SchemaError(
            f"column {field.name!r}: cannot read {column.type} as {field.type}: {exc}"
        ) from None


def _conform_array(array: pa.Array, target: pa.DataType, name: str) -> pa.Array:
    if array.type == target:
        return array
    if pa.types.is_struct(target) and pa.types.is_struct(array.type):
        present = {array.type.field(i).name: i for i in range(array.type.num_fields)}
        flat = array.flatten() if array.offset == 0 else pa.concat_arrays([array]).flatten()
        children = [
            _conform_array(flat[present[f.name]], f.type, f"{name}.{f.name}")
            if f.name in present
            else pa.nulls(len(array), f.type)
            for f in target
        ]
        mask = array.is_null() if array.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    return array.cast(target)


# ----------------------------------------------------------------------------- delete blocks


def decode_delete_block(block: LogBlock) -> pa.Table:
    """Decode a delete block into ``record_key``, ``partition_path``, ``ordering_value``.

    ``ordering_value`` is the unwrapped HoodieDeleteRecord ordering value, typed by its
    wrapper (IntWrapper -> int32, LongWrapper -> int64, StringWrapper -> string, DateWrapper
    -> date32, DecimalWrapper -> decimal128(30, 15), TimestampMicrosWrapper ->
    timestamp[us, UTC], ...). Null means "no ordering value": Hudi writes ``IntWrapper(0)``
    for that and its merger treats an integer 0 as "the delete wins regardless of ordering",
    so integer 0 is returned as null too. A block whose non-null values use several wrapper
    types gets them promoted to a common type where Arrow can (int32 + int64 -> int64).

    Raises:
        UnsupportedFeatureError: a version 1/2 (Java/Kryo serialized) delete block.
        CorruptTableError: the content does not decode.
    """
    if block.block_type != BlockType.DELETE:
        raise ValueError(f"not a delete block: {block.block_type.name}")
    content = block.content
    if len(content) < 8:
        raise _fail(block, f"content of {len(content)} bytes is shorter than its 8-byte head")
    version, size = _HEAD.unpack_from(content)
    if version < DELETE_BLOCK_VERSION:
        raise UnsupportedFeatureError(
            f"hudi delete block version {version}",
            f"{block.path}: delete block at byte {block.offset} has version {version}: its keys "
            "are Java/Kryo serialized (Hudi before 0.13); lakecore reads version 3 (Avro). "
            "Compact the table with a newer Hudi to rewrite it.",
        )
    if size < 0 or 8 + size > len(content):
        raise _fail(block, f"delete payload of {size} bytes runs past the block content")
    stream = io.BytesIO(content[8 : 8 + size])
    try:
        decoded: Any = fastavro.schemaless_reader(
            stream, _DELETE_PARSED, None, return_record_name=True
        )
    except (EOFError, ValueError, IndexError, UnicodeDecodeError, struct.error) as exc:
        raise _fail(block, f"delete records do not decode: {exc!r}") from None
    return _deletes_to_arrow(block, decoded["deleteRecordList"])


def _deletes_to_arrow(block: LogBlock, records: list[dict[str, Any]]) -> pa.Table:
    keys = [r["recordKey"] for r in records]
    partitions = [r["partitionPath"] for r in records]
    by_type: dict[pa.DataType, list[tuple[int, Any]]] = {}
    for i, r in enumerate(records):
        wrapped = r["orderingVal"]
        if wrapped is None:
            continue
        name, inner = wrapped
        value = inner["value"]
        if name == f"{_WRAPPER_NS}.IntWrapper" and value == 0:
            continue  # Hudi's "natural order" marker
        by_type.setdefault(_WRAPPER_TYPES[name], []).append((i, value))
    return pa.table(
        {
            "record_key": pa.array(keys, pa.string()),
            "partition_path": pa.array(partitions, pa.string()),
            "ordering_value": _ordering_column(block, len(records), by_type),
        }
    )


def _ordering_column(
    block: LogBlock, n: int, by_type: Mapping[pa.DataType, list[tuple[int, Any]]]
) -> pa.Array:
    if not by_type:
        return pa.nulls(n, pa.null())
    if len(by_type) == 1:
        ((arrow_type, pairs),) = by_type.items()
        values: list[Any] = [None] * n
        for i, v in pairs:
            values[i] = _physical_value(arrow_type, v)
        return pa.array(values, arrow_type)
    try:
        common = (
            pa.unify_schemas([pa.schema([("v", t)]) for t in by_type], promote_options="permissive")
            .field("v")
            .type
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        raise _fail(block, f"ordering values mix incompatible types {list(by_type)}") from None
    merged: list[Any] = [None] * n
    for arrow_type, pairs in by_type.items():
        typed = pa.array([_physical_value(arrow_type, v) for _, v in pairs], arrow_type)
        for (i, _), value in zip(pairs, typed.cast(common).to_pylist(), strict=True):
            merged[i] = value
    return pa.array(merged, common)


def _physical_value(arrow_type: pa.DataType, value: Any) -> Any:
    if pa.types.is_decimal(arrow_type) and isinstance(value, bytes | bytearray):
        return _decimal_from_bytes(value, arrow_type.scale)
    return value


def _decimal_from_bytes(raw: bytes | bytearray, scale: int) -> decimal.Decimal:
    return decimal.Decimal(int.from_bytes(raw, "big", signed=True)).scaleb(-scale)


def encode_delete_block(keys: pa.Table, instant: str, *, writer_schema: str | None = None) -> bytes:
    """Return a framed version-3 delete block for ``keys``.

    ``keys`` has ``record_key`` and ``partition_path`` (strings) and optionally
    ``ordering_value``; a null or absent ordering value is written as ``IntWrapper(0)``, the
    "no ordering" marker Hudi writes. ``writer_schema`` (the table's Avro schema JSON) goes in
    the SCHEMA header as Hudi's writers do; readers do not need it.

    Raises:
        SchemaError: a column is missing, or the ordering value type has no Hudi wrapper.
    """
    for name in ("record_key", "partition_path"):
        if name not in keys.column_names:
            raise SchemaError(f"delete keys need a {name!r} column, got {keys.column_names}")
    ordering = keys.column("ordering_value") if "ordering_value" in keys.column_names else None
    wrapper = _wrapper_for(ordering.type) if ordering is not None else None
    records = []
    ordering_values = ordering.to_pylist() if ordering is not None else [None] * len(keys)
    for key, part, value in zip(
        keys.column("record_key").to_pylist(),
        keys.column("partition_path").to_pylist(),
        ordering_values,
        strict=True,
    ):
        wrapped = (
            (f"{_WRAPPER_NS}.IntWrapper", {"value": 0})
            if value is None or wrapper is None
            else (f"{_WRAPPER_NS}.{wrapper}", {"value": _wrapper_value(wrapper, value)})
        )
        records.append({"recordKey": key, "partitionPath": part, "orderingVal": wrapped})
    out = io.BytesIO()
    fastavro.schemaless_writer(out, _DELETE_PARSED, {"deleteRecordList": records})
    payload = out.getvalue()
    content = _HEAD.pack(DELETE_BLOCK_VERSION, len(payload)) + payload
    header = {HeaderKey.INSTANT_TIME: instant}
    if writer_schema is not None:
        header[HeaderKey.SCHEMA] = writer_schema
    return encode_log_block(BlockType.DELETE, header, content)


def _wrapper_for(t: pa.DataType) -> str | None:
    if pa.types.is_null(t):
        return None
    for name, _, arrow in _WRAPPERS:
        if arrow == t:
            return name
    if pa.types.is_integer(t):
        return "LongWrapper"
    if pa.types.is_timestamp(t):
        return "TimestampMicrosWrapper"
    if pa.types.is_decimal(t):
        return "DecimalWrapper"
    if pa.types.is_large_string(t):
        return "StringWrapper"
    raise SchemaError(f"ordering value type {t} has no Hudi delete-record wrapper")


def _wrapper_value(wrapper: str, value: Any) -> Any:
    """Physical Avro value for ``value`` in ``wrapper`` (the parsed schema has no logical types)."""
    if wrapper == "DateWrapper":
        return (value - datetime.date(1970, 1, 1)).days
    if wrapper == "TimestampMicrosWrapper" and isinstance(value, datetime.datetime):
        epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
        aware = value if value.tzinfo else value.replace(tzinfo=datetime.timezone.utc)
        return (aware - epoch) // datetime.timedelta(microseconds=1)
    if wrapper == "TimeMicrosWrapper":
        return (
            (value.hour * 60 + value.minute) * 60 + value.second
        ) * 1_000_000 + value.microsecond
    if wrapper == "DecimalWrapper":
        unscaled = int(decimal.Decimal(value).scaleb(15).to_integral_exact())
        return unscaled.to_bytes((unscaled.bit_length() + 8) // 8 or 1, "big", signed=True)
    return value


# ------------------------------------------------------------------------------ encoders


def encode_avro_data_block(table: pa.Table, avro_schema: Mapping[str, Any], instant: str) -> bytes:
    """Return a framed Avro data block (block version 3) holding the rows of ``table``.

    ``avro_schema`` is the writer schema (normally ``arrow_to_avro(table.schema, ...)``); it
    goes in the SCHEMA header and every row is encoded under it.

    Raises:
        SchemaError: a row does not fit ``avro_schema``.
    """
    schema_json = json.dumps(avro_schema, separators=(",", ":"))
    parsed = fastavro.parse_schema(json.loads(schema_json))
    buffer = io.BytesIO()
    ends = []
    try:
        for record in arrow_to_records(table):
            fastavro.schemaless_writer(buffer, parsed, record)
            ends.append(buffer.tell())
    except (ValueError, TypeError, AttributeError, OverflowError) as exc:
        raise SchemaError(f"row {len(ends)} does not fit the Avro writer schema: {exc}") from None
    body = buffer.getbuffer()
    parts: list[bytes | memoryview] = [_HEAD.pack(AVRO_BLOCK_VERSION, len(ends))]
    start = 0
    for end in ends:
        parts += [_I32.pack(end - start), body[start:end]]
        start = end
    content = b"".join(parts)
    header = {HeaderKey.INSTANT_TIME: instant, HeaderKey.SCHEMA: schema_json}
    return encode_log_block(BlockType.AVRO_DATA, header, content)


def encode_parquet_data_block(
    table: pa.Table, avro_schema: Mapping[str, Any], instant: str, *, compression: str = "gzip"
) -> bytes:
    """Return a framed Parquet data block holding ``table`` (Hudi's default codec is gzip)."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression=compression)
    header = {
        HeaderKey.INSTANT_TIME: instant,
        HeaderKey.SCHEMA: json.dumps(avro_schema, separators=(",", ":")),
    }
    return encode_log_block(BlockType.PARQUET_DATA, header, sink.getvalue().to_pybytes())


def encode_rollback_command_block(instant: str, target_instant: str) -> bytes:
    """Return a framed command block rolling back the blocks of ``target_instant``.

    ``instant`` is the rollback action's own instant.
    """
    header = {
        HeaderKey.INSTANT_TIME: instant,
        HeaderKey.TARGET_INSTANT_TIME: target_instant,
        HeaderKey.COMMAND_BLOCK_TYPE: str(int(CommandType.ROLLBACK)),
    }
    return encode_log_block(BlockType.COMMAND, header, b"")
