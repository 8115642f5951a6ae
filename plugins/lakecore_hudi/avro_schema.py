"""Avro schema JSON <-> Arrow schema, and Avro record values <-> Arrow tables.

Hudi keeps the table schema (``hoodie.table.create.schema``, commit metadata) and every log
block's writer schema as Avro JSON. This module maps them to Arrow the way the Parquet base
files look when pyarrow reads them, so log records and base-file rows line up:

* ``["null", T]`` and ``[T, "null"]`` are both a nullable ``T`` (Spark's own converter writes
  ``[T, "null"]`` into ``hoodie.table.create.schema``; Hudi's writer schemas use
  ``["null", T]`` with ``"default": null``). Other unions raise ``SchemaError``.
* ``timestamp-millis|micros|nanos`` -> ``timestamp(unit, tz="UTC")``; ``local-timestamp-*``
  -> ``timestamp(unit)``; ``date`` -> ``date32``; ``time-millis`` -> ``time32("ms")``;
  ``time-micros`` -> ``time64("us")``; ``decimal`` (bytes or fixed) -> ``decimal128``
  (``decimal256`` above 38 digits); ``uuid`` -> ``string``; ``enum`` -> ``string``;
  ``fixed`` -> ``binary``; arrays -> ``list<element>``; maps -> ``map<string, V>``.
* Unknown logical types fall back to their underlying type, as the Avro spec requires.

Writing (``arrow_to_avro``) follows Hudi's Spark converter: nullable fields are
``["null", T]`` with ``"default": null``; a nested record is named after its field in the
namespace ``<parent namespace>.<parent name>``; decimals are ``fixed`` types named ``fixed``
in the namespace of their field, sized for their precision.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from lakecore.errors import CorruptTableError, LakecoreError, SchemaError

__all__ = [
    "arrow_to_avro",
    "arrow_to_records",
    "avro_to_arrow",
    "physical_avro_schema",
    "raw_records_to_arrow",
    "records_to_arrow",
]

_PRIMITIVES: dict[str, pa.DataType] = {
    "null": pa.null(),
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
}

_TIMESTAMPS: dict[str, tuple[str, str | None]] = {
    "timestamp-millis": ("ms", "UTC"),
    "timestamp-micros": ("us", "UTC"),
    "timestamp-nanos": ("ns", "UTC"),
    "local-timestamp-millis": ("ms", None),
    "local-timestamp-micros": ("us", None),
    "local-timestamp-nanos": ("ns", None),
}

LIST_ITEM = "element"  # the list item name pyarrow gives Parquet lists (base files)


# --------------------------------------------------------------------------- Avro -> Arrow


def avro_to_arrow(schema: str | Mapping[str, Any], source: str | None = None) -> pa.Schema:
    """Convert an Avro record schema (JSON text or parsed) to an Arrow schema.

    ``source`` names where the schema was read (a timeline or log file); with it, a malformed
    schema is reported as a damaged table.

    Raises:
        SchemaError: the JSON is invalid, the top level is not a record, a type is malformed
            (a missing or ill-typed ``type``/``name``/``fields``/``items`` ...), a named type
            is referenced before it is defined, or a union is not ``null`` plus one type.
        CorruptTableError: with ``source``, instead of ``SchemaError`` for invalid JSON, a
            top level that is not a record, and malformed types; names ``source``.
    """
    parsed = _parse_json(schema, source)
    if not isinstance(parsed, Mapping) or parsed.get("type") != "record":
        raise _malformed(f"Avro schema must be a record, got {str(parsed)[:200]}", source)
    names: dict[str, pa.DataType] = {}
    try:
        struct, _ = _to_arrow(parsed, names, "", "<root>")
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as exc:
        # Malformed nodes: {"type": "array"} without items, a field without a name, a
        # non-numeric decimal precision, "fields" that is not a list ...
        raise _malformed(f"malformed Avro schema: {type(exc).__name__}: {exc}", source) from None
    except pa.ArrowException as exc:  # e.g. a decimal precision Arrow cannot hold
        raise _malformed(f"malformed Avro schema: {exc}", source) from None
    return pa.schema(list(struct))


def _malformed(message: str, source: str | None) -> LakecoreError:
    if source is None:
        return SchemaError(message)
    return CorruptTableError(f"{source}: {message}")


def _parse_json(schema: str | Mapping[str, Any], source: str | None = None) -> Any:
    if not isinstance(schema, str):
        return schema
    try:
        return json.loads(schema)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise _malformed(f"invalid Avro schema JSON: {exc}", source) from None


def _full_name(node: Mapping[str, Any], namespace: str) -> tuple[str, str]:
    """Return (full name, namespace for children) of a named type per the Avro spec."""
    name = str(node["name"])
    if "." in name:
        return name, name.rsplit(".", 1)[0]
    ns = node.get("namespace", namespace) or ""
    return (f"{ns}.{name}" if ns else name), ns


def _to_arrow(
    node: Any, names: dict[str, pa.DataType], namespace: str, path: str
) -> tuple[pa.DataType, bool]:
    """Return (Arrow type, nullable) for one Avro type node."""
    if isinstance(node, list):
        return _union_to_arrow(node, names, namespace, path)
    if isinstance(node, str):
        if node in _PRIMITIVES:
            return _PRIMITIVES[node], node == "null"
        for candidate in (node, f"{namespace}.{node}"):
            if candidate in names:
                return names[candidate], False
        raise SchemaError(f"Avro type {node!r} at {path} is not defined")
    if not isinstance(node, Mapping) or "type" not in node:
        raise SchemaError(f"invalid Avro type at {path}: {str(node)[:200]}")
    logical = _logical_to_arrow(node, path)
    if logical is not None:
        _register_named(node, names, namespace, logical)
        return logical, False
    kind = node["type"]
    if kind == "record":
        full, child_ns = _full_name(node, namespace)
        fields = []
        for f in node.get("fields", []):
            ftype, nullable = _to_arrow(f["type"], names, child_ns, f"{path}.{f['name']}")
            fields.append(pa.field(f["name"], ftype, nullable=nullable))
        struct = pa.struct(fields)
        names[full] = struct
        return struct, False
    if kind == "array":
        item, nullable = _to_arrow(node["items"], names, namespace, f"{path}[]")
        return pa.list_(pa.field(LIST_ITEM, item, nullable=nullable)), False
    if kind == "map":
        value, nullable = _to_arrow(node["values"], names, namespace, f"{path}{{}}")
        return pa.map_(pa.string(), pa.field("value", value, nullable=nullable)), False
    if kind in ("enum", "fixed"):
        arrow = pa.string() if kind == "enum" else pa.binary()
        _register_named(node, names, namespace, arrow)
        return arrow, False
    # {"type": "string"} and friends, or {"type": <nested type>}
    return _to_arrow(kind, names, namespace, path)


def _register_named(
    node: Mapping[str, Any], names: dict[str, pa.DataType], namespace: str, arrow: pa.DataType
) -> None:
    if node.get("type") in ("fixed", "enum", "record") and "name" in node:
        names[_full_name(node, namespace)[0]] = arrow


def _union_to_arrow(
    members: list[Any], names: dict[str, pa.DataType], namespace: str, path: str
) -> tuple[pa.DataType, bool]:
    non_null = [m for m in members if m != "null"]
    if len(non_null) == 1:
        arrow, _ = _to_arrow(non_null[0], names, namespace, path)
        return arrow, len(non_null) < len(members)
    if not non_null:
        return pa.null(), True
    raise SchemaError(
        f"Avro union {json.dumps(members)[:200]} at {path} has several non-null branches; "
        "lakecore reads unions of null and one type only"
    )


def _logical_to_arrow(node: Mapping[str, Any], path: str) -> pa.DataType | None:
    """The Arrow type of a logical type annotation, or None to use the underlying type."""
    logical = node.get("logicalType")
    kind = node.get("type")
    if logical in _TIMESTAMPS and kind == "long":
        unit, tz = _TIMESTAMPS[logical]
        return pa.timestamp(unit, tz=tz)
    if logical == "date" and kind == "int":
        return pa.date32()
    if logical == "time-millis" and kind == "int":
        return pa.time32("ms")
    if logical == "time-micros" and kind == "long":
        return pa.time64("us")
    if logical == "uuid" and kind == "string":
        return pa.string()
    if logical == "decimal" and kind in ("bytes", "fixed"):
        precision = int(node.get("precision", 0))
        scale = int(node.get("scale", 0))
        if precision < 1 or not 0 <= scale <= precision:
            return None  # invalid decimal annotation: the spec says read the raw type
        if kind == "fixed" and precision > _max_precision(int(node["size"])):
            return None
        return (
            pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)
        )
    return None


def _max_precision(size: int) -> int:
    return int(np.floor(np.log10(2.0 ** (8 * size - 1) - 1)))


def _min_bytes(precision: int) -> int:
    """Smallest fixed size holding ``precision`` decimal digits (Spark's minBytesForPrecision)."""
    size = 1
    while 10**precision > 2 ** (8 * size - 1):
        size += 1
    return size


# --------------------------------------------------------------------------- Arrow -> Avro


def arrow_to_avro(schema: pa.Schema, record_name: str, namespace: str) -> dict[str, Any]:
    """Return the Avro record schema Hudi's Spark writer would produce for ``schema``.

    Nullable fields become ``["null", T]`` with ``"default": null``. Arrow types without an
    Avro twin are widened: int8/int16/uint8/uint16 -> int, uint32 -> long, timestamps in
    seconds or nanoseconds -> micros (``arrow_to_records`` converts the values), large and
    view strings/binaries -> string/bytes, dictionaries -> their value type.

    Raises:
        SchemaError: a type cannot be written to Avro (uint64, unions, durations, ...), or a
            field name (at any depth) is not an Avro name (``[A-Za-z_][A-Za-z0-9_]*``); the
            message names the field's path.
    """
    fields = [_field_to_avro(f, namespace, record_name, f"{record_name}.{f.name}") for f in schema]
    out: dict[str, Any] = {"type": "record", "name": record_name}
    if namespace:
        out["namespace"] = namespace
    out["fields"] = fields
    return out


# Avro's name rule (the spec's "Names"); Hudi's readers (Avro's Schema.Parser, hudi-rs)
# reject any other field name, so a table written with one could not be read back.
_AVRO_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _field_to_avro(field: pa.Field, namespace: str, record_name: str, path: str) -> dict[str, Any]:
    if _AVRO_NAME.fullmatch(field.name) is None:
        raise SchemaError(
            f"{path}: column name {field.name!r} is not a valid Avro name "
            "([A-Za-z_][A-Za-z0-9_]*), which Hudi's schema requires"
        )
    # Children of record ``record_name`` live in namespace "<namespace>.<record_name>".
    child_ns = f"{namespace}.{record_name}" if namespace else record_name
    avro = _type_to_avro(field.type, field.name, child_ns, path)
    if field.nullable:
        return {"name": field.name, "type": ["null", avro], "default": None}
    return {"name": field.name, "type": avro}


def _type_to_avro(t: pa.DataType, name: str, namespace: str, path: str) -> Any:
    """Avro type for Arrow type ``t`` of a field called ``name`` in ``namespace``."""
    simple = _simple_to_avro(t)
    if simple is not None:
        return simple
    if pa.types.is_dictionary(t):
        return _type_to_avro(t.value_type, name, namespace, path)
    if pa.types.is_decimal(t):
        return {
            "type": "fixed",
            "name": "fixed",
            "namespace": f"{namespace}.{name}",
            "size": _min_bytes(t.precision),
            "logicalType": "decimal",
            "precision": t.precision,
            "scale": t.scale,
        }
    if pa.types.is_fixed_size_binary(t):
        return {
            "type": "fixed",
            "name": "fixed",
            "namespace": f"{namespace}.{name}",
            "size": t.byte_width,
        }
    if pa.types.is_struct(t):
        return arrow_to_avro(pa.schema(list(t)), name, namespace)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return {"type": "array", "items": _nullable(t.value_field, name, namespace, path)}
    if pa.types.is_map(t):
        if not (pa.types.is_string(t.key_type) or pa.types.is_large_string(t.key_type)):
            raise SchemaError(f"{path}: Avro map keys must be strings, got {t.key_type}")
        return {"type": "map", "values": _nullable(t.item_field, name, namespace, path)}
    raise SchemaError(f"{path}: Arrow type {t} has no Avro equivalent Hudi can read")


def _nullable(field: pa.Field, name: str, namespace: str, path: str) -> Any:
    avro = _type_to_avro(field.type, name, namespace, path)
    return ["null", avro] if field.nullable else avro


def _simple_to_avro(t: pa.DataType) -> Any:
    if pa.types.is_null(t):
        return "null"
    if pa.types.is_boolean(t):
        return "boolean"
    if t in (pa.int8(), pa.int16(), pa.int32(), pa.uint8(), pa.uint16()):
        return "int"
    if t in (pa.int64(), pa.uint32()):
        return "long"
    if pa.types.is_float16(t) or pa.types.is_float32(t):
        return "float"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return "bytes"
    if pa.types.is_date(t):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_time32(t):
        return {"type": "int", "logicalType": "time-millis"}
    if pa.types.is_time64(t):
        return {"type": "long", "logicalType": "time-micros"}
    if pa.types.is_timestamp(t):
        unit = "millis" if t.unit == "ms" else "micros"
        prefix = "timestamp" if t.tz is not None else "local-timestamp"
        return {"type": "long", "logicalType": f"{prefix}-{unit}"}
    return None


# ------------------------------------------------------------------ values <-> Arrow tables


def records_to_arrow(records: Sequence[Mapping[str, Any]], schema: pa.Schema) -> pa.Table:
    """Build a table of ``schema`` from records as fastavro decodes them by default.

    Values may be Python logical values (``decimal.Decimal``, ``datetime``, ``date``,
    ``time``, ``uuid.UUID``) or their raw Avro encodings for timestamps, dates and times
    (ints). Missing keys are null; extra keys are ignored. The conversion runs in Arrow's C++
    converter, not a per-value Python loop (only ``uuid.UUID`` values need a Python pass).

    Raises:
        SchemaError: a value does not fit its column's type.
    """
    struct = pa.struct(list(schema))
    try:
        try:
            array = pa.array(records, type=struct)
        except pa.ArrowTypeError:
            # fastavro decodes the "uuid" logical type to uuid.UUID, which Arrow rejects.
            array = pa.array([_stringify_uuids(r) for r in records], type=struct)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        raise SchemaError(f"records do not fit schema: {exc}") from None
    return pa.Table.from_batches([pa.RecordBatch.from_struct_array(array)], schema=schema)


def _stringify_uuids(value: Any) -> Any:
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, Mapping):
        return {k: _stringify_uuids(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_stringify_uuids(v) for v in value]
    return value


def physical_avro_schema(schema: Any) -> Any:
    """Return ``schema`` with every ``logicalType`` annotation removed.

    Decoding with the result makes fastavro return raw ints and bytes instead of building a
    ``datetime``/``Decimal`` per value; ``raw_records_to_arrow`` turns those into Arrow
    logical types in bulk.
    """
    if isinstance(schema, list):
        return [physical_avro_schema(s) for s in schema]
    if isinstance(schema, Mapping):
        return {k: physical_avro_schema(v) for k, v in schema.items() if k != "logicalType"}
    return schema


def raw_records_to_arrow(records: Sequence[Mapping[str, Any]], schema: pa.Schema) -> pa.Table:
    """Build a table of ``schema`` from records decoded with ``physical_avro_schema``.

    Timestamps, dates and times arrive as ints (Arrow takes them as is); decimals arrive as
    big-endian two's-complement bytes and are converted with vectorized numpy, not per value.

    Raises:
        SchemaError: a value does not fit its column's type.
    """
    target = pa.struct(list(schema))
    physical = _physical_arrow(target)
    try:
        array = pa.array(records, type=physical)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        raise SchemaError(f"records do not fit schema: {exc}") from None
    if physical != target:
        array = _restore_decimals(array, target)
    return pa.Table.from_batches([pa.RecordBatch.from_struct_array(array)], schema=schema)


def _physical_arrow(t: pa.DataType) -> pa.DataType:
    """``t`` with every decimal replaced by binary (how Avro stores decimals)."""
    if pa.types.is_decimal(t):
        return pa.binary()
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_physical_arrow(f.type)) for f in t])
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_physical_arrow(t.value_type)))
    if pa.types.is_map(t):
        item = t.item_field.with_type(_physical_arrow(t.item_type))
        return pa.map_(t.key_field, item)
    return t


def _restore_decimals(array: pa.Array, target: pa.DataType) -> pa.Array:
    """Rebuild ``array`` (of ``_physical_arrow(target)``) as ``target``."""
    if array.type == target:
        return array
    if array.offset:
        array = pa.concat_arrays([array])  # the buffer surgery below assumes offset 0
    if pa.types.is_decimal(target):
        return _binary_to_decimal(array, target)
    mask = array.is_null() if array.null_count else None
    if pa.types.is_struct(target):
        children = [_restore_decimals(array.field(i), f.type) for i, f in enumerate(target)]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if pa.types.is_list(target):
        values = _restore_decimals(array.values, target.value_type)
        return pa.ListArray.from_arrays(array.offsets, values, type=target, mask=mask)
    if pa.types.is_map(target):
        items = _restore_decimals(array.items, target.item_type)
        return pa.MapArray.from_arrays(array.offsets, array.keys, items, type=target, mask=mask)
    raise SchemaError(f"cannot rebuild {array.type} as {target}")  # unreachable by construction


def _binary_to_decimal(array: pa.Array, target: pa.DataType) -> pa.Array:
    """Big-endian two's-complement byte strings -> decimal128/256, vectorized."""
    width = 16 if pa.types.is_decimal128(target) else 32
    n = len(array)
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int32, count=n + 1)
    data_buf = array.buffers()[2]
    data = (
        np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(1, np.uint8)
    )
    lengths = np.diff(offsets)
    if n and int(lengths.max()) > width:
        raise SchemaError(f"decimal value of {int(lengths.max())} bytes does not fit {target}")
    out = np.zeros((n, width), dtype=np.uint8)
    present = lengths > 0
    if present.any():
        first = data[offsets[:-1][present]]
        negative = np.zeros(n, dtype=bool)
        negative[present] = first >= 0x80
        out[negative] = 0xFF  # sign extension
        ends = offsets[1:]
        for j in range(width):  # little-endian byte j is the j-th byte from the end
            has = lengths > j
            if not has.any():
                break
            out[has, j] = data[ends[has] - 1 - j]
    validity = array.buffers()[0]
    return pa.Array.from_buffers(
        target, n, [validity, pa.py_buffer(out.tobytes())], array.null_count
    )


def arrow_to_records(table: pa.Table) -> list[dict[str, Any]]:
    """Return the rows of ``table`` as Python values fastavro can write.

    Values match the schema ``arrow_to_avro(table.schema, ...)`` returns: timestamps in
    seconds or nanoseconds are converted to microseconds first (a nanosecond value that is
    not a whole microsecond raises), dictionaries are decoded.

    Raises:
        SchemaError: a timestamp loses precision when converted to microseconds.
    """
    columns = []
    for col, field in zip(table.columns, table.schema, strict=True):
        target = _writable_type(field.type)
        if target != field.type:
            try:
                col = col.cast(target)
            except pa.ArrowInvalid as exc:
                raise SchemaError(
                    f"column {field.name!r} cannot be written to Avro: {exc}"
                ) from None
        columns.append(col)
    names = table.schema.names
    # fastavro writes maps from dicts; Arrow's default is a list of (key, value) pairs.
    rows: list[dict[str, Any]] = pa.table(columns, names=names).to_pylist(maps_as_pydicts="strict")
    return rows


def _writable_type(t: pa.DataType) -> pa.DataType:
    """The Arrow type whose Python values fastavro accepts for ``_type_to_avro(t)``."""
    if pa.types.is_dictionary(t):
        return _writable_type(t.value_type)
    if pa.types.is_timestamp(t) and t.unit in ("s", "ns"):
        return pa.timestamp("us", tz=t.tz)
    if pa.types.is_time64(t) and t.unit == "ns":
        return pa.time64("us")
    if pa.types.is_float16(t):
        return pa.float32()
    if pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_writable_type(f.type)) for f in t])
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return pa.list_(t.value_field.with_type(_writable_type(t.value_type)))
    if pa.types.is_map(t):
        return pa.map_(t.key_field, t.item_field.with_type(_writable_type(t.item_type)))
    return t
