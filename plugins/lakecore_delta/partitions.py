"""Partition values: the log's strings to typed Arrow columns, per the protocol's encodings."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import CorruptTableError
from lakecore.model.civil_days import DAY_US, days_from_civil, month_days
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
        if pa.types.is_timestamp(t) or pa.types.is_date(t):
            return _parse_signed_years(strings, field)
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


_SIGNED = re.compile(r"([+-])([0-9]{4,})-([0-9]{2})-([0-9]{2})(.*)", re.DOTALL)


def _parse_signed_years(strings: pa.Array, field: pa.Field) -> pa.Array:
    """Dates or timestamps; a year outside 0000..9999 is written with a sign (delta-rs writes
    ``+10000-01-01`` and ``-0001-12-31``, as ISO 8601 extends years), which Arrow's parsers
    and Python's ``datetime`` do not read: those few values are computed here."""
    t = field.type
    signed = pc.fill_null(pc.or_(pc.starts_with(strings, "+"), pc.starts_with(strings, "-")), False)
    if not pc.any(signed).as_py():
        return _parse_timestamp(strings, t) if pa.types.is_timestamp(t) else strings.cast(t)
    plain = pc.if_else(signed, pa.scalar(None, pa.string()), strings)
    typed = _parse_timestamp(plain, t) if pa.types.is_timestamp(t) else plain.cast(t)
    values = [_signed_value(text, field) for text in strings.filter(signed).to_pylist()]
    if pa.types.is_date(t):
        return pc.replace_with_mask(
            typed, signed, pa.array(values, pa.int32()).cast(pa.date32()).cast(t)
        )
    micros = pa.array(values, pa.int64()).cast(pa.timestamp("us", t.tz))
    return pc.replace_with_mask(typed, signed, micros.cast(t))


def _signed_value(text: str, field: pa.Field) -> int:
    """Days since the epoch (a date) or microseconds (a timestamp) of a signed-year text."""
    match = _SIGNED.fullmatch(text)
    bad = CorruptTableError(
        f"partition column {field.name!r}: value {text!r} does not parse as {field.type}"
    )
    if match is None:
        raise bad
    sign, year, month, day, rest = match.groups()
    y, m, d = int(year) * (-1 if sign == "-" else 1), int(month), int(day)
    if not (1 <= m <= 12 and 1 <= d <= month_days(y, m)):
        raise bad
    days = days_from_civil(y, m, d)
    if pa.types.is_date(field.type):
        if rest or not -(2**31) <= days < 2**31:
            raise bad
        return days
    # The time of day as the unsigned form has it (" HH:MM:SS[.ffffff]", "T...Z").
    try:
        clock = _parse_timestamp(pa.array([f"1970-01-01{rest}"]), pa.timestamp("us"))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise bad from exc
    micros = days * DAY_US + int(clock.cast(pa.int64())[0].as_py())
    if not -(2**63) <= micros < 2**63:
        raise bad
    return micros


def _parse_timestamp(strings: pa.Array, t: pa.TimestampType) -> pa.Array:
    # The protocol writes "YYYY-MM-DD HH:MM:SS[.ffffff]" (UTC for timestamp, wall clock for
    # timestamp_ntz) or ISO-8601 adjusted to UTC ("...T...Z").
    text = pc.replace_substring_regex(strings, r"Z$", "")
    text = pc.replace_substring(text, "T", " ")
    naive = text.cast(pa.timestamp("us"))
    return naive.cast(t) if t.tz is None else pc.assume_timezone(naive, "UTC").cast(t)
