"""Partition values: the log's strings to typed Arrow columns, per the protocol's encodings."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import CorruptTableError
from lakecore.model.schema import physical_name


def typed_partition_values(
    raw: pa.Array | pa.ChunkedArray, fields: Sequence[pa.Field]
) -> pa.StructArray:
    """Convert partition values (struct of strings by physical name) to a typed struct.

    The result has one child per field of ``fields``, named by the logical name. Null and
    the empty string both mean null. Raises ``CorruptTableError`` on a value that does not
    parse as its column's type.
    """
    if isinstance(raw, pa.ChunkedArray):
        raw = raw.combine_chunks() if raw.num_chunks else pa.nulls(0, raw.type)
    children = []
    for f in fields:
        # By index: pyarrow reads a name starting with "." or "[" as a field path.
        index = raw.type.get_field_index(physical_name(f))
        strings = pc.struct_field(raw, [index]) if index >= 0 else pa.nulls(len(raw), pa.string())
        strings = pc.if_else(pc.equal(strings, ""), pa.scalar(None, pa.string()), strings)
        children.append(parse_partition_strings(strings, f))
    return (
        pa.StructArray.from_arrays(children, fields=[_plain(f) for f in fields])
        if fields
        else (pa.array([{}] * len(raw), pa.struct([])))
    )


def _plain(f: pa.Field) -> pa.Field:
    return pa.field(f.name, f.type, nullable=True)


def parse_partition_strings(strings: pa.Array, field: pa.Field) -> pa.Array:
    """Parse one partition column's strings into ``field.type``."""
    t = field.type
    try:
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            return strings.cast(t)
        if pa.types.is_binary(t):
            return strings.cast(t)
        if pa.types.is_timestamp(t):
            return _parse_timestamp(strings, t)
        if pa.types.is_boolean(t):
            return _parse_boolean(strings, field)
        return strings.cast(t)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise CorruptTableError(
            f"partition column {field.name!r}: value does not parse as {t}: {exc}"
        ) from exc


def _parse_boolean(strings: pa.Array, field: pa.Field) -> pa.Array:
    lowered = pc.utf8_lower(strings)
    valid = pc.is_in(lowered, pa.array(["true", "false"]))
    bad = pc.and_(pc.is_valid(lowered), pc.invert(valid))
    if pc.any(bad).as_py():
        example = strings.filter(bad)[0].as_py()
        raise CorruptTableError(
            f"partition column {field.name!r}: value {example!r} is not a boolean (true/false)"
        )
    return pc.equal(lowered, "true")


def _parse_timestamp(strings: pa.Array, t: pa.TimestampType) -> pa.Array:
    # The protocol writes "YYYY-MM-DD HH:MM:SS[.ffffff]" (UTC for timestamp, wall clock for
    # timestamp_ntz) or ISO-8601 adjusted to UTC ("...T...Z").
    text = pc.replace_substring_regex(strings, r"Z$", "")
    text = pc.replace_substring(text, "T", " ")
    naive = text.cast(pa.timestamp("us"))
    return naive.cast(t) if t.tz is None else pc.assume_timezone(naive, "UTC").cast(t)
