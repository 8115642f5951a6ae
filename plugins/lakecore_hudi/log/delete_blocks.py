"""Decoding and encoding the content of Hudi delete log blocks.

Delete block content (big-endian): int32 version, int32 byte length, then the payload.
Version 3 (every Hudi since 0.13) is an Avro ``HoodieDeleteRecordList`` (``DELETE_SCHEMA``):
per deleted record its key, partition path and ordering value, the latter wrapped in a
record whose type says the value's type. Versions 1 and 2 are Java/Kryo serialized objects,
which lakecore does not read (``UnsupportedFeatureError``). Content that does not decode
raises ``CorruptTableError`` naming the log file and the block's offset.
"""

from __future__ import annotations

import datetime
import decimal
import io
import struct
from collections.abc import Mapping
from typing import Any

import fastavro
import pyarrow as pa

from lakecore.errors import CorruptTableError, SchemaError, UnsupportedFeatureError
from lakecore_hudi.avro_schema import physical_avro_schema
from lakecore_hudi.log.format import BlockType, HeaderKey, LogBlock, encode_log_block

__all__ = [
    "DELETE_BLOCK_VERSION",
    "DELETE_SCHEMA",
    "decode_delete_block",
    "encode_delete_block",
]

DELETE_BLOCK_VERSION = 3

# int32 version, int32 payload byte length.
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
