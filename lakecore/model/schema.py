"""Schema conventions: lakecore schemas are pyarrow.Schema with format facts in field metadata."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pyarrow as pa

from lakecore.errors import ArgumentTypeError, SchemaError

FIELD_ID = b"lakecore.field_id"
"""Field metadata key: the stable field id (Delta column-mapping id, Iceberg-style ids)."""
PHYSICAL_NAME = b"lakecore.physical_name"
"""Field metadata key: the column's name inside data files when it differs from the logical."""


def field_id(field: pa.Field) -> int | None:
    """Return the field id stored in ``field``'s metadata, if any."""
    meta = field.metadata or {}
    raw = meta.get(FIELD_ID)
    return int(raw) if raw is not None else None


def physical_name(field: pa.Field) -> str:
    """Return the name of ``field`` inside data files (its own name unless mapped)."""
    meta = field.metadata or {}
    raw = meta.get(PHYSICAL_NAME)
    return str(raw.decode()) if raw is not None else str(field.name)


def strip_metadata(schema: pa.Schema) -> pa.Schema:
    """Return ``schema`` without any field or schema metadata, recursively."""
    return pa.schema([_strip_field(f) for f in schema])


def _strip_field(field: pa.Field) -> pa.Field:
    return pa.field(field.name, _strip_type(field.type), field.nullable)


def _strip_type(t: pa.DataType) -> pa.DataType:
    if pa.types.is_struct(t):
        return pa.struct([_strip_field(t.field(i)) for i in range(t.num_fields)])
    if pa.types.is_large_list(t):
        return pa.large_list(_strip_field(t.value_field))
    if pa.types.is_list(t):
        return pa.list_(_strip_field(t.value_field))
    if pa.types.is_map(t):
        return pa.map_(_strip_field(t.key_field), _strip_field(t.item_field))
    return t


def has_not_null_inside(t: pa.DataType) -> bool:
    """Whether a nested type has a NOT NULL field, element or map value somewhere inside."""
    if pa.types.is_struct(t):
        fields = [t.field(i) for i in range(t.num_fields)]
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        fields = [t.value_field]
    elif pa.types.is_map(t):
        fields = [t.item_field]
    else:
        return False
    return any(not f.nullable or has_not_null_inside(f.type) for f in fields)


def is_ordered_scalar(t: pa.DataType) -> bool:
    """Whether ``t`` is a scalar whose values have the min/max order stats and pruning use:
    integers, floats, decimals, strings, dates and timestamps (not binary, not boolean)."""
    return bool(
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_decimal(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_date(t)
        or pa.types.is_timestamp(t)
    )


def checked_columns(columns: Sequence[str], schema: pa.Schema) -> list[str]:
    """``columns`` as a list, once every name is a column of ``schema``; a name given twice
    is kept once, where it first comes (every reader returns each column once).

    Raises ``ArgumentTypeError`` (a ``TypeError``) for one string (a common slip for
    ``[name]``), for something that is not a list of names (a version passed where columns
    go) and for names that are not strings, and ``SchemaError`` naming the unknown columns.
    The one check behind ``Snapshot.scan``/``to_arrow`` and the shared reader.
    """
    if isinstance(columns, str | bytes):
        raise ArgumentTypeError(
            f"columns must be a sequence of names, not one string ({columns!r}); pass [name]"
        )
    if not isinstance(columns, Iterable):
        version = f"; a version goes in version={columns!r}" if isinstance(columns, int) else ""
        raise ArgumentTypeError(
            f"columns must be a sequence of column names, not {columns!r}{version}"
        )
    names = list(columns)
    wrong = [c for c in names if not isinstance(c, str)]
    if wrong:
        raise ArgumentTypeError(f"column names must be strings, not {wrong!r}")
    missing = [c for c in names if schema.get_field_index(c) < 0]
    if missing:
        raise SchemaError(f"unknown column(s) {missing}; the table has {schema.names}")
    return list(dict.fromkeys(names))
