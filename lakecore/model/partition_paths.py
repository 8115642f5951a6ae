"""Hive-style partition paths: ``col=value/...`` rendered and parsed as Hive and Spark do.

The one place lakecore turns typed partition values into directory names and back (Delta data
files and log partition values, Hudi's hive-style partitioning, files written by Spark):

- values' texts (``hive_texts``, a whole Arrow column at once): booleans ``true``/``false``,
  integers and strings as they are, dates ``YYYY-MM-DD``, timestamps
  ``YYYY-MM-DD HH:MM:SS.ffffff`` (instants in UTC, wall-clock times as they are), floats as
  Python prints them (``1.0``, ``-0.0``, ``1e+20``), decimals in plain notation, binary as
  its UTF-8 text; null stays null and ``""`` stays ``""``;
- a segment (``partition_segment``): ``name=value`` with the characters Hive escapes written
  ``%XX`` (``escape_path_name``), a null or empty value as ``__HIVE_DEFAULT_PARTITION__``;
- parsing (``parse_partition_path``, ``parse_value``): the reverse, typed by the table schema.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import InvalidArgumentError, SchemaError, UnsupportedFeatureError
from lakecore.model.civil_days import DAY_US, YEAR_0_DAY, YEAR_10000_DAY

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
"""The directory value Hive, Spark, Delta and Hudi write for a null (or empty) value."""

# Characters Hive/Spark escape in partition directory names (FileUtils.escapePathName).
_ESCAPE = frozenset("\"#%'*/:=?\\\x7f{[]^") | {chr(c) for c in range(0x20)}
_ESCAPED = re.compile(r"%([0-9A-Fa-f]{2})")
_TIMESTAMP = re.compile(r"^(-?\d{4,})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?$")

_STRING_TYPES = (pa.types.is_string, pa.types.is_large_string, pa.types.is_string_view)
_BINARY_TYPES = (
    pa.types.is_binary,
    pa.types.is_large_binary,
    pa.types.is_binary_view,
    pa.types.is_fixed_size_binary,
)


def hive_texts(values: pa.Array | pa.ChunkedArray, name: str) -> pa.Array:
    """The Hive text of each value of partition column ``name`` (a string array; null stays
    null, ``""`` stays ``""``); see the module docstring for the texts.

    Dates, timestamps, integers, strings and booleans are rendered by Arrow casts, never
    through Python's ``datetime``, which cannot hold every date Arrow can (a date of year 0
    is ``0000-01-01``); floats, decimals and binary through their exact Python values
    (Arrow's float text differs from Python's: ``1`` for ``1.0``, ``-0`` for ``-0.0``).

    Raises:
        InvalidArgumentError: a date or timestamp outside years 0000..9999 (its text,
            ``-0001-12-31`` or ``10000-01-01``, is not ``YYYY-MM-DD`` and does not parse back
            as a partition value), a timestamp finer than microseconds, or a binary value that
            is not UTF-8 text; the message names the column.
        SchemaError: a type that has no partition text (nested, time of day, ...).
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks else pa.nulls(0, values.type)
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    t = values.type
    if pa.types.is_date(t):
        return _date_texts(values.cast(pa.date32()), name)
    if pa.types.is_timestamp(t):
        return _timestamp_texts(values, name)
    if _is_any(t, pa.types.is_integer, pa.types.is_boolean, *_STRING_TYPES):
        return values.cast(pa.string())  # Arrow's texts are Hive's here: 12, true, false
    if pa.types.is_floating(t):
        return _python_texts(values, str)  # repr: the shortest text that reads back
    if pa.types.is_decimal(t):
        return _python_texts(values, lambda v: format(v, "f"))
    if _is_any(t, *_BINARY_TYPES):
        return _utf8_texts(values, name)
    raise SchemaError(f"partition column {name!r} has type {t}, which has no partition text")


def _is_any(t: pa.DataType, *tests: Callable[[pa.DataType], bool]) -> bool:
    return any(test(t) for test in tests)


def _python_texts(values: pa.Array, text: Callable[[Any], str]) -> pa.Array:
    return pa.array([None if v is None else text(v) for v in values.to_pylist()], pa.string())


def _utf8_texts(values: pa.Array, name: str) -> pa.Array:
    texts = []
    for v in values.to_pylist():
        try:
            texts.append(None if v is None else v.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise InvalidArgumentError(
                f"partition column {name!r}: binary value {v[:32]!r} is not UTF-8 text, which "
                "a partition value's text must be"
            ) from exc
    return pa.array(texts, pa.string())


def _date_texts(days: pa.Array, name: str) -> pa.Array:
    _check_years(days.view(pa.int32()), YEAR_0_DAY, YEAR_10000_DAY, days, name)
    return days.cast(pa.string())


_UNITS_PER_DAY = {"s": 86_400, "ms": 86_400_000, "us": DAY_US}


def _timestamp_texts(values: pa.Array, name: str) -> pa.Array:
    t = values.type
    # Years are checked in the stored unit: a value of seconds far outside them would
    # overflow microseconds. Nanoseconds (int64) hold years 1677..2262 only.
    per_day = _UNITS_PER_DAY.get(t.unit)
    if per_day is not None:
        first, end = YEAR_0_DAY * per_day, YEAR_10000_DAY * per_day
        _check_years(values.view(pa.int64()), first, end, values, name)
    # The stored values are UTC instants (or wall-clock times): dropping the zone keeps them.
    try:
        micros = values.cast(pa.timestamp("us", t.tz)).cast(pa.timestamp("us"))
    except pa.ArrowInvalid as exc:  # a nanosecond part a microsecond text cannot hold
        raise InvalidArgumentError(
            f"partition column {name!r}: a timestamp value is finer than microseconds, which "
            f"partition text (YYYY-MM-DD HH:MM:SS.ffffff) cannot hold: {exc}"
        ) from exc
    return micros.cast(pa.string())


def _check_years(raw: pa.Array, first: int, end: int, values: pa.Array, name: str) -> None:
    outside = pc.fill_null(pc.or_(pc.less(raw, first), pc.greater_equal(raw, end)), False)
    if pc.any(outside).as_py():
        example = values.filter(outside).slice(0, 1)
        if pa.types.is_timestamp(example.type):  # as the text would be: UTC, no zone
            example = example.cast(pa.timestamp(example.type.unit))
        raise InvalidArgumentError(
            f"partition column {name!r}: value {example.cast(pa.string())[0]} is outside "
            "years 0000..9999; a partition value of its type is {year}-{month}-{day} with a "
            "four-digit year, which cannot spell it"
        )


def escape_path_name(text: str) -> str:
    """Escape text for a directory name the way Hive/Spark do (``%XX``)."""
    return "".join(f"%{ord(c):02X}" if c in _ESCAPE else c for c in text)


def unescape_path_name(text: str) -> str:
    """Undo Hive/Spark path escaping (``%XX`` -> the character)."""
    return _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), text)


def partition_segment(name: str, text: str | None, escape: bool = True) -> str:
    """``name=value`` for one partition column; a null or empty value is ``HIVE_NULL``.

    ``escape=False`` writes the name and value as they are (Hudi without URL encoding).
    """
    quote = escape_path_name if escape else str
    value = HIVE_NULL if text is None or text == "" else quote(text)
    return f"{quote(name)}={value}"


def split_segment(segment: str, escaped: bool = True) -> tuple[str, str | None]:
    """``(name, value text)`` of a ``name=value`` segment; ``HIVE_NULL`` gives None.

    Raises ``ValueError`` when the segment has no ``=``.
    """
    name, sep, raw = segment.partition("=")
    if not sep:
        raise ValueError(f"{segment!r} is not a name=value partition directory")
    if escaped:
        name, raw = unescape_path_name(name), unescape_path_name(raw)
    return name, None if raw == HIVE_NULL else raw


def parse_value(text: str | None, t: pa.DataType, zone: dt.tzinfo = dt.timezone.utc) -> Any:
    """The typed value of a partition value's text (already unescaped) of type ``t``.

    Timestamps with a time zone are read as wall-clock times in ``zone`` (Spark formats them
    in its session time zone; lakecore and Delta in UTC); a wall-clock time that zone shows
    twice (a DST fall-back) raises ``UnsupportedFeatureError``. Text that does not parse as
    ``t`` raises ``ValueError``; a type that cannot be a partition column ``SchemaError``.
    """
    if text is None or text == HIVE_NULL:
        return None
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return text
    if pa.types.is_boolean(t):
        if text not in ("true", "false"):
            raise ValueError(f"not a boolean: {text!r}")
        return text == "true"
    if pa.types.is_integer(t):
        return int(text)
    if pa.types.is_floating(t):
        return float(text)
    if pa.types.is_decimal(t):
        return Decimal(text)
    if pa.types.is_date(t):
        return dt.date.fromisoformat(text)
    if pa.types.is_timestamp(t):
        return _timestamp(text, zone if t.tz is not None else None)
    raise SchemaError(f"cannot partition by a column of type {t}")


def _timestamp(text: str, zone: dt.tzinfo | None) -> dt.datetime:
    match = _TIMESTAMP.match(text)
    if not match:
        raise ValueError(f"not a timestamp: {text!r}")
    fraction = (match.group(7) or "").ljust(6, "0")
    if fraction[6:].strip("0"):
        raise ValueError(f"timestamp {text!r} is finer than microseconds")
    y, mo, d, h, mi, s = (int(g) for g in match.group(1, 2, 3, 4, 5, 6))
    local = dt.datetime(y, mo, d, h, mi, s, int(fraction[:6]))
    if zone is None:
        return local
    early, late = local.replace(tzinfo=zone, fold=0), local.replace(tzinfo=zone, fold=1)
    if early.utcoffset() != late.utcoffset():
        raise UnsupportedFeatureError(
            "ambiguous timestamp partition value",
            f"partition value {text!r} names two instants in time zone {zone}; write with a "
            "UTC session time zone (spark.sql.session.timeZone=UTC)",
        )
    return early.astimezone(dt.timezone.utc)


def parse_partition_path(
    relative_dir: str, fields: Sequence[pa.Field], zone: dt.tzinfo = dt.timezone.utc
) -> dict[str, Any]:
    """The typed partition values of a file in ``relative_dir`` (``a=1/b=x``, any order).

    Every field of ``fields`` must appear exactly once, and nothing else (``ValueError``).
    """
    parts = [p for p in relative_dir.split("/") if p]
    by_name = {f.name: f for f in fields}
    values: dict[str, Any] = {}
    for part in parts:
        name, text = split_segment(part)
        if name not in by_name or name in values:
            raise ValueError(f"unexpected partition directory {part!r} in {relative_dir!r}")
        values[name] = parse_value(text, by_name[name].type, zone)
    if len(values) != len(fields):
        raise ValueError(f"{relative_dir!r} does not name every partition column")
    return {f.name: values[f.name] for f in fields}
