"""Partition paths of Hudi's timestamp-based key generator (``TimestampBasedKeyGenerator``).

The partition column's value becomes an instant, formatted with
``hoodie.keygen.timebased.output.dateformat`` (a Joda/Java pattern). How the value becomes an
instant depends on ``hoodie.keygen.timebased.timestamp.type``:

- ``UNIX_TIMESTAMP`` (seconds), ``EPOCHMILLISECONDS``, ``EPOCHMICROSECONDS``, ``SCALAR`` (in
  ``hoodie.keygen.timebased.timestamp.scalar.time.unit``, default SECONDS): a number (integer,
  float or decimal truncated toward zero, a date as its epoch day, a timestamp as its Avro long
  value, or a string holding an integer, as Spark's writer stores them). Microseconds truncate to
  milliseconds toward zero, as Java's ``TimeUnit.convert`` does.
- ``DATE_STRING`` / ``MIXED``: a string parsed with the first matching pattern of
  ``hoodie.keygen.timebased.input.dateformat`` (a list split by
  ``hoodie.keygen.timebased.input.dateformat.list.delimiter.regex``, default ``,``).

Time zones: ``hoodie.keygen.timebased.timezone`` sets both the input and output zones, else
``hoodie.keygen.timebased.input.timezone`` / ``output.timezone``. With no output zone, a parsed
string is formatted in the zone it was parsed in (its own offset if it has one, else the input
zone); where Hudi would use the writer JVM's default zone (numbers with no output zone, strings
with no offset and no zone), lakecore uses UTC. A null value becomes Hudi's default: ``1`` in the
time unit for numbers, the epoch's first millisecond formatted with the first input pattern for
strings. Hive-style partitioning prefixes ``field=``. The CUSTOM key generator formats its
``field:TIMESTAMP`` partition fields the same way (``timestamp_fields``).

Formatting is vectorised (``date_patterns.format_millis``); strings are parsed once per
distinct value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import ConstraintViolationError, UnsupportedFeatureError
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.write.date_patterns import FIELDS, Token, format_millis, regex, tokens

_PREFIX = "hoodie.keygen.timebased."
TYPE_KEY = _PREFIX + "timestamp.type"
INPUT_FORMAT_KEY = _PREFIX + "input.dateformat"
OUTPUT_FORMAT_KEY = _PREFIX + "output.dateformat"
_NUMERIC_TYPES = {"UNIX_TIMESTAMP", "EPOCHMILLISECONDS", "EPOCHMICROSECONDS", "SCALAR"}
_STRING_TYPES = {"DATE_STRING", "MIXED"}
# Java TimeUnit -> (multiplier, divisor) to milliseconds.
_UNITS = {
    "NANOSECONDS": (1, 1_000_000),
    "MICROSECONDS": (1, 1000),
    "MILLISECONDS": (1, 1),
    "SECONDS": (1000, 1),
    "MINUTES": (60_000, 1),
    "HOURS": (3_600_000, 1),
    "DAYS": (86_400_000, 1),
}


# Pattern letters lakecore formats and parses: letter -> the run lengths it accepts.
@dataclass(frozen=True, slots=True)
class TimestampKeys:
    """How one table's timestamp key generator turns values into partition paths."""

    timestamp_type: str
    output: tuple[Token, ...]
    inputs: tuple[tuple[Token, ...], ...]
    input_zone: str | None
    output_zone: str | None
    to_ms: tuple[int, int]


def _zone(config: TableConfig, key: str) -> str | None:
    both = config.get(_PREFIX + "timezone")
    name = (both if both is not None else config.get(_PREFIX + key) or "").strip()
    if not name:
        return None
    if name in ("UTC", "GMT", "Z"):
        return "UTC"
    fixed = re.fullmatch(r"(?:GMT|UTC)?([+-])(\d{1,2}):?(\d{2})?", name)
    if fixed:
        return f"{fixed[1]}{int(fixed[2]):02d}:{fixed[3] or '00'}"
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise UnsupportedFeatureError(
            "hudi-keygen-timestamp-zone", f"unknown time zone {name!r} in {_PREFIX}{key}"
        ) from None
    return name


def keys_for(config: TableConfig, column_type: pa.DataType) -> TimestampKeys:
    """The table's timestamp key settings for a partition column of ``column_type``.

    Raises:
        UnsupportedFeatureError: the timestamp type is not recorded and cannot be inferred
            (inferred as DATE_STRING only for a string column with a recorded input format), a
            needed property is missing, or a pattern, zone, unit or type is not supported.
    """
    is_string = pa.types.is_string(column_type) or pa.types.is_large_string(column_type)
    kind = (config.get(TYPE_KEY) or "").strip().upper()
    if not kind:
        if not (config.get(INPUT_FORMAT_KEY) and is_string):
            raise UnsupportedFeatureError(
                "hudi-keygen-timestamp-type",
                f"cannot write this Hudi table: {TYPE_KEY} is not recorded in hoodie.properties "
                f"(lakecore infers DATE_STRING only for a string column with {INPUT_FORMAT_KEY})",
            )
        kind = "DATE_STRING"
    if kind not in _NUMERIC_TYPES | _STRING_TYPES:
        raise UnsupportedFeatureError(
            "hudi-keygen-timestamp-type", f"unknown timestamp type {kind!r} ({TYPE_KEY})"
        )
    output = config.get(OUTPUT_FORMAT_KEY)
    if not output:
        raise UnsupportedFeatureError(
            "hudi-keygen-timestamp-type",
            f"cannot write this Hudi table: {OUTPUT_FORMAT_KEY} is not recorded",
        )
    inputs: tuple[tuple[Token, ...], ...] = ()
    to_ms = (1, 1)
    if kind in _STRING_TYPES:
        listed = config.get(INPUT_FORMAT_KEY)
        if not listed or not is_string:
            raise UnsupportedFeatureError(
                "hudi-keygen-timestamp-type",
                f"cannot write this Hudi table: timestamp type {kind} needs a string partition "
                f"column and {INPUT_FORMAT_KEY}",
            )
        delimiter = config.get(_PREFIX + "input.dateformat.list.delimiter.regex") or ","
        inputs = tuple(tokens(p.strip()) for p in re.split(delimiter, listed))
    else:
        unit = {"UNIX_TIMESTAMP": "SECONDS", "EPOCHMILLISECONDS": "MILLISECONDS"}.get(kind)
        if kind == "EPOCHMICROSECONDS":
            unit = "MICROSECONDS"
        if kind == "SCALAR":
            unit = (config.get(_PREFIX + "timestamp.scalar.time.unit") or "SECONDS").upper()
        if unit not in _UNITS:
            raise UnsupportedFeatureError(
                "hudi-keygen-timestamp-unit", f"unknown scalar time unit {unit!r}"
            )
        to_ms = _UNITS[unit]
    return TimestampKeys(
        kind,
        tokens(output),
        inputs,
        _zone(config, "input.timezone"),
        _zone(config, "output.timezone"),
        to_ms,
    )


def timestamp_fields(config: TableConfig) -> frozenset[str]:
    """The partition fields whose path segment is a formatted date: the first partition field
    of the TIMESTAMP key generator, the ``field:TIMESTAMP`` ones of the CUSTOM key generator.

    Raises:
        UnsupportedFeatureError: a CUSTOM key generator's partition field has no recorded type
            (``hoodie.table.partition.fields`` as ``field:SIMPLE`` / ``field:TIMESTAMP``), or
            another type.
    """
    keygen = config.keygen_type
    if keygen == "TIMESTAMP":
        return frozenset(config.partition_fields[:1])
    if keygen != "CUSTOM":
        return frozenset()
    out: set[str] = set()
    for entry in config.partition_fields_with_types:
        name, _, kind = entry.partition(":")
        if kind.strip().upper() not in ("SIMPLE", "TIMESTAMP"):
            raise UnsupportedFeatureError(
                "hudi-keygen-custom",
                f"cannot write this Hudi table: the CUSTOM key generator's partition field "
                f"{entry!r} has no SIMPLE or TIMESTAMP type recorded in "
                "hoodie.table.partition.fields",
            )
        if kind.strip().upper() == "TIMESTAMP":
            out.add(name)
    return frozenset(out)


def partition_paths(column: pa.ChunkedArray, field: str, config: TableConfig) -> pa.ChunkedArray:
    """The partition path of each value of the partition column ``field``.

    Raises:
        UnsupportedFeatureError: see ``keys_for``.
        ConstraintViolationError: a string matches none of the input patterns, or a number
            is out of the representable range.
    """
    keys = keys_for(config, column.type)
    if keys.timestamp_type in _STRING_TYPES:
        paths = _from_strings(column.combine_chunks(), keys)
    else:
        ms = _millis(column.combine_chunks(), keys)
        paths = format_millis(ms, keys.output_zone or "UTC", keys.output)
    if config.hive_style_partitioning:
        paths = pc.binary_join_element_wise(f"{field}=", paths, "")
    return pa.chunked_array([paths])


def _millis(values: pa.Array, keys: TimestampKeys) -> pa.Array:
    t = values.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        bad = pc.invert(pc.fill_null(pc.match_substring_regex(values, r"^[+-]?\d+$"), True))
        if pc.any(bad).as_py():
            sample = values.filter(bad)[0].as_py()
            raise ConstraintViolationError(
                f"partition value {sample!r} is not an integer, as timestamp type "
                f"{keys.timestamp_type} needs"
            )
        try:
            values = values.cast(pa.int64())
        except pa.ArrowInvalid as e:
            raise ConstraintViolationError(f"a partition time value overflows: {e}") from None
    elif pa.types.is_timestamp(t):
        unit = "ms" if t.unit == "ms" else "us"
        values = values.cast(pa.timestamp(unit, tz=t.tz)).cast(pa.int64())
    elif pa.types.is_date(t):
        values = values.cast(pa.date32()).cast(pa.int32()).cast(pa.int64())
    elif pa.types.is_floating(t) or pa.types.is_decimal(t):
        values = pc.trunc(values.cast(pa.float64()) if pa.types.is_floating(t) else values)
        values = values.cast(pa.int64())
    elif pa.types.is_integer(t):
        values = values.cast(pa.int64())
    else:
        raise UnsupportedFeatureError(
            "hudi-keygen-timestamp-type",
            f"a partition column of type {t} cannot hold {keys.timestamp_type} timestamps",
        )
    values = pc.fill_null(values, 1)  # Hudi's default for a null value
    multiplier, divisor = keys.to_ms
    try:
        if multiplier != 1:
            values = pc.multiply_checked(values, multiplier)
        if divisor != 1:
            values = pc.divide(values, divisor)  # truncates toward zero, as TimeUnit.convert
    except pa.ArrowInvalid as e:
        raise ConstraintViolationError(f"a partition time value overflows: {e}") from None
    return values


# --- parsing (once per distinct string) ---------------------------------------------------


def _tz(zone: str) -> tzinfo:
    if zone == "UTC":
        return UTC
    if zone[0] in "+-":
        minutes = int(zone[1:3]) * 60 + int(zone[4:6])
        return timezone(timedelta(minutes=-minutes if zone[0] == "-" else minutes))
    return ZoneInfo(zone)


def _zone_text(offset_text: str) -> str:
    if offset_text == "Z":
        return "UTC"
    digits = offset_text[1:].replace(":", "")
    minutes = int(digits[:2]) * 60 + int(digits[2:4] or "0")
    if minutes == 0:
        return "UTC"
    return f"{offset_text[0]}{minutes // 60:02d}:{minutes % 60:02d}"


def parse(text: str, keys: TimestampKeys) -> tuple[int, str]:
    """Epoch milliseconds of ``text`` and the zone it formats in (when no output zone is set).

    Raises:
        ConstraintViolationError: ``text`` matches none of the input patterns.
    """
    for pattern in keys.inputs:
        match = regex(pattern).fullmatch(text)
        if match is None:
            continue
        values = {"y": 1970, "M": 1, "d": 1, "H": 0, "m": 0, "s": 0}
        micro = 0
        offset: str | None = None
        groups = iter(match.groups())
        for token in pattern:
            if token.kind == "literal":
                continue
            value = next(groups)
            if token.kind == "S":
                micro = int((value + "000000")[:6])
            elif token.kind in FIELDS:
                values[token.kind] = int(value)
            else:
                offset = _zone_text(value)
        # The instant uses the parsed offset if any; the result is in the input zone if one
        # is set (Joda's withZone), else in the parsed offset (withOffsetParsed).
        zone = offset or keys.input_zone or "UTC"
        try:
            wall = datetime(
                values["y"], values["M"], values["d"], values["H"], values["m"], values["s"], micro
            )
        except ValueError:
            continue
        instant = wall.replace(tzinfo=_tz(zone))
        ms = (instant - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)
        return ms, keys.input_zone or zone
    raise ConstraintViolationError(
        f"partition value {text!r} matches none of the input date formats ({INPUT_FORMAT_KEY})"
    )


def _from_strings(values: pa.Array, keys: TimestampKeys) -> pa.Array:
    if values.null_count:
        # Hudi's default: the epoch's first millisecond in the first input pattern.
        default_zone = keys.input_zone or keys.output_zone or "UTC"
        default = format_millis(pa.array([1], pa.int64()), default_zone, keys.inputs[0])[0]
        values = pc.fill_null(values, default)
    unique = pc.unique(values)
    parsed = [parse(str(v), keys) for v in unique.to_pylist()]
    ms = pa.array([p[0] for p in parsed], pa.int64())
    if keys.output_zone is not None:
        formatted = format_millis(ms, keys.output_zone, keys.output)
    else:
        zones = np.array([p[1] for p in parsed], dtype=object)
        out = np.empty(len(parsed), dtype=object)
        for zone in dict.fromkeys(zones.tolist()):
            chosen = np.flatnonzero(zones == zone)
            out[chosen] = format_millis(ms.take(pa.array(chosen)), zone, keys.output).to_numpy(
                zero_copy_only=False
            )
        formatted = pa.array(out, pa.string())
    return formatted.take(pc.index_in(values, value_set=unique))
