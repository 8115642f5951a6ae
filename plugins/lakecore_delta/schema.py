"""Delta schema JSON (``schemaString``) to and from Arrow schemas."""

from __future__ import annotations

import json
import re
from typing import Any

import pyarrow as pa

from lakecore.errors import SchemaError, UnsupportedFeatureError
from lakecore.model.schema import FIELD_ID, PHYSICAL_NAME

CM_ID = "delta.columnMapping.id"
CM_PHYSICAL = "delta.columnMapping.physicalName"
DELTA_METADATA = b"delta.metadata"
"""Field metadata key holding the field's Delta metadata as JSON (kept for round trips)."""

_PRIMITIVES: dict[str, pa.DataType] = {
    "string": pa.string(),
    "long": pa.int64(),
    "integer": pa.int32(),
    "short": pa.int16(),
    "byte": pa.int8(),
    "float": pa.float32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
}
_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)")
# Spark stores a variant as a struct of two binaries; readers expose that struct.
VARIANT_TYPE = pa.struct(
    [
        pa.field("metadata", pa.binary(), nullable=False),
        pa.field("value", pa.binary(), nullable=False),
    ]
)


def parse_schema_string(schema_string: str | None) -> pa.Schema:
    """Parse a Delta ``schemaString``.

    Raises:
        SchemaError: it is not JSON, not a struct type, or malformed (a field that is not an
            object or lacks ``name``/``type``, fields that are not a list, a decimal Arrow
            cannot hold, a name that is not a string ...).
        UnsupportedFeatureError: it uses a data type lakecore does not read.
    """
    if schema_string is None:
        raise SchemaError("the table metadata has no schemaString")
    try:
        obj = json.loads(schema_string)
    except (json.JSONDecodeError, TypeError, RecursionError) as exc:
        raise SchemaError(f"schemaString is not JSON: {exc}") from exc
    if not isinstance(obj, dict) or obj.get("type") != "struct":
        raise SchemaError("schemaString must be a JSON struct type")
    try:
        return pa.schema([to_arrow_field(f) for f in _fields(obj)])
    except (KeyError, TypeError, AttributeError, ValueError, RecursionError) as exc:
        raise SchemaError(f"schemaString is malformed: {type(exc).__name__}: {exc}") from exc
    except pa.ArrowException as exc:  # e.g. decimal(0,0) or decimal(99,0)
        raise SchemaError(f"schemaString is malformed: {exc}") from exc


def _fields(struct: dict[str, Any]) -> list[dict[str, Any]]:
    fields = struct.get("fields", [])
    if not isinstance(fields, list) or not all(isinstance(f, dict) for f in fields):
        raise SchemaError(f"struct fields must be a list of objects, got {str(fields)[:200]}")
    return fields


def to_arrow_field(field: dict[str, Any]) -> pa.Field:
    """Convert one Delta StructField (JSON object) to an Arrow field with lakecore metadata."""
    try:
        name = field["name"]
        dtype = to_arrow_type(field["type"])
    except KeyError as exc:
        raise SchemaError(f"Delta schema field {field!r} lacks {exc}") from exc
    meta = field.get("metadata") or {}
    out: dict[bytes, bytes] = {}
    if meta:
        out[DELTA_METADATA] = json.dumps(meta, separators=(",", ":")).encode()
    if CM_ID in meta:
        out[FIELD_ID] = str(meta[CM_ID]).encode()
    if CM_PHYSICAL in meta:
        out[PHYSICAL_NAME] = str(meta[CM_PHYSICAL]).encode()
    return pa.field(name, dtype, nullable=bool(field.get("nullable", True)), metadata=out or None)


def to_arrow_type(dtype: Any) -> pa.DataType:
    """Convert a Delta data type (a name or a JSON object) to an Arrow type."""
    if isinstance(dtype, str):
        if dtype in _PRIMITIVES:
            return _PRIMITIVES[dtype]
        m = _DECIMAL.fullmatch(dtype)
        if m:
            precision, scale = int(m.group(1)), int(m.group(2))
            return (
                pa.decimal128(precision, scale)
                if precision <= 38
                else pa.decimal256(precision, scale)
            )
        if dtype == "variant":
            return VARIANT_TYPE
        if dtype == "void":
            return pa.null()
        raise UnsupportedFeatureError(
            f"type:{dtype}", f"Delta data type {dtype!r} is not supported"
        )
    if not isinstance(dtype, dict):
        raise SchemaError(f"Delta data type {str(dtype)[:200]} is neither a name nor an object")
    kind = dtype.get("type")
    if kind == "struct":
        return pa.struct([to_arrow_field(f) for f in _fields(dtype)])
    if kind == "array":
        return pa.list_(
            pa.field(
                "element", to_arrow_type(dtype["elementType"]), dtype.get("containsNull", True)
            )
        )
    if kind == "map":
        return pa.map_(
            pa.field("key", to_arrow_type(dtype["keyType"]), nullable=False),
            pa.field(
                "value", to_arrow_type(dtype["valueType"]), dtype.get("valueContainsNull", True)
            ),
        )
    raise SchemaError(f"unknown Delta type {dtype!r}")


def delta_metadata(field: pa.Field) -> dict[str, Any]:
    """Return the Delta metadata object kept on ``field`` (empty if none)."""
    raw = (field.metadata or {}).get(DELTA_METADATA)
    return dict(json.loads(raw)) if raw else {}


_TO_DELTA = {
    pa.string(): "string",
    pa.large_string(): "string",
    pa.int64(): "long",
    pa.int32(): "integer",
    pa.int16(): "short",
    pa.int8(): "byte",
    pa.float32(): "float",
    pa.float64(): "double",
    pa.bool_(): "boolean",
    pa.binary(): "binary",
    pa.large_binary(): "binary",
    pa.date32(): "date",
}


def schema_string(schema: pa.Schema) -> str:
    """Return the Delta ``schemaString`` of an Arrow schema; raises ``SchemaError`` on types
    Delta cannot hold (unsigned integers, durations, ...)."""
    obj = {"type": "struct", "fields": [to_delta_field(f) for f in schema]}
    return json.dumps(obj, separators=(",", ":"))


def to_delta_field(field: pa.Field) -> dict[str, Any]:
    """Convert an Arrow field to a Delta StructField.

    Metadata comes from ``delta.metadata`` (what lakecore read) plus any plain field metadata
    keys starting with ``delta.`` (how users declare e.g. ``delta.generationExpression``).
    """
    return {
        "name": field.name,
        "type": to_delta_type(field.type, field.name),
        "nullable": field.nullable,
        "metadata": declared_metadata(field),
    }


def declared_metadata(field: pa.Field) -> dict[str, Any]:
    """The Delta metadata of ``field``: its ``delta.metadata`` object plus any plain field
    metadata keys starting with ``delta.`` that the object does not hold."""
    meta = delta_metadata(field)
    for key, value in (field.metadata or {}).items():
        name = key.decode()
        if name.startswith("delta.") and key != DELTA_METADATA and name not in meta:
            meta[name] = value.decode()
    return meta


GENERATION_EXPRESSION = "delta.generationExpression"


def generation_expressions(schema: pa.Schema) -> dict[str, str]:
    """Column -> SQL of the table's generated columns."""
    out = {}
    for f in schema:
        sql = delta_metadata(f).get(GENERATION_EXPRESSION)
        if sql:
            out[f.name] = str(sql)
    return out


def to_delta_type(t: pa.DataType, name: str = "") -> Any:
    """Convert an Arrow type to a Delta type (a name or a JSON object)."""
    if t in _TO_DELTA:
        return _TO_DELTA[t]
    if pa.types.is_string_view(t):
        return "string"
    if pa.types.is_timestamp(t):
        return "timestamp" if t.tz is not None else "timestamp_ntz"
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_dictionary(t):
        return to_delta_type(t.value_type, name)
    if pa.types.is_struct(t):
        return {
            "type": "struct",
            "fields": [to_delta_field(t.field(i)) for i in range(t.num_fields)],
        }
    if pa.types.is_map(t):
        return {
            "type": "map",
            "keyType": to_delta_type(t.key_type, name),
            "valueType": to_delta_type(t.item_type, name),
            "valueContainsNull": t.item_field.nullable,
        }
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t):
        return {
            "type": "array",
            "elementType": to_delta_type(t.value_type, name),
            "containsNull": t.value_field.nullable,
        }
    raise SchemaError(f"column {name!r}: Arrow type {t} has no Delta equivalent")


def check_storable(t: pa.DataType, name: str) -> None:
    """Raise ``SchemaError`` naming column ``name`` when ``t`` holds a decimal whose scale is
    outside 0..precision (Parquet's DECIMAL logical type cannot store it) or whose precision
    is above 38 (the protocol's limit; delta-rs cannot open such a table).

    For types a write brings in (a new table, column or data file); a table whose log
    already holds such a type stays readable and committable (nothing checks it again until
    a data file of it is written).
    """
    if pa.types.is_decimal(t) and not 0 <= t.scale <= t.precision:
        raise SchemaError(
            f"column {name!r}: {t} has a scale outside 0..precision, which Parquet cannot "
            "store; rescale the values (e.g. to decimal(precision - scale, 0))"
        )
    if pa.types.is_decimal(t) and t.precision > 38:
        raise SchemaError(
            f"column {name!r}: {t} has a precision above 38, the most a Delta decimal holds"
        )
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            check_storable(t.field(i).type, name)
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t):
        check_storable(t.value_type, name)
    elif pa.types.is_map(t):
        check_storable(t.key_type, name)
        check_storable(t.item_type, name)


def normalize_for_delta(schema: pa.Schema) -> pa.Schema:
    """The Arrow schema lakecore reads back for ``schema`` after a Delta round trip."""
    return pa.schema([to_arrow_field(to_delta_field(f)) for f in schema])
