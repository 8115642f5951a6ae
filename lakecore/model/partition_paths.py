"""Hive-style partition paths: ``col=value/...`` rendered and parsed as Hive and Spark do.

The one place lakecore turns typed partition values into directory names and back (Delta data
files, Hudi's hive-style partitioning, files written by Spark):

- a value's text (``partition_text``): booleans ``true``/``false``, dates ``YYYY-MM-DD``,
  timestamps ``YYYY-MM-DD HH:MM:SS.ffffff`` (instants in UTC, wall-clock times as they are),
  decimals in plain notation, numbers as Python prints them; null stays None;
- a segment (``partition_segment``): ``name=value`` with the characters Hive escapes written
  ``%XX`` (``escape_path_name``), a null or empty value as ``__HIVE_DEFAULT_PARTITION__``;
- parsing (``parse_partition_path``, ``parse_value``): the reverse, typed by the table schema.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa

from lakecore.errors import SchemaError, UnsupportedFeatureError

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
"""The directory value Hive, Spark, Delta and Hudi write for a null (or empty) value."""

# Characters Hive/Spark escape in partition directory names (FileUtils.escapePathName).
_ESCAPE = frozenset("\"#%'*/:=?\\\x7f{[]^") | {chr(c) for c in range(0x20)}
_ESCAPED = re.compile(r"%([0-9A-Fa-f]{2})")
_TIMESTAMP = re.compile(r"^(-?\d{4,})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?$")


def partition_text(value: Any) -> str | None:
    """A typed partition value as text (None stays None); see the module docstring."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return str(value.isoformat(sep=" ", timespec="microseconds"))
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, bytes):
        return str(value.decode("utf-8", errors="surrogateescape"))
    return str(value)


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


def partition_path(names: Sequence[str], values: Sequence[Any]) -> str:
    """``col=value/...`` of one partition (directory names, typed values), Hive-escaped."""
    return "/".join(
        partition_segment(name, partition_text(value))
        for name, value in zip(names, values, strict=True)
    )


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
