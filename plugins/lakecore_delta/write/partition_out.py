"""Partition values out: the log's string form and Hive-style directory names."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
# Characters Spark/Hive escape in partition directory names.
_ESCAPE = set("\"#%'*/:=?\\\x7f{[]^") | {chr(c) for c in range(0x20)}


def log_value(value: Any) -> str | None:
    """A typed partition value as the Delta log writes it (None stays None)."""
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
    """Escape a partition value for a directory name the way Hive/Spark do."""
    return "".join(f"%{ord(c):02X}" if c in _ESCAPE else c for c in text)


def partition_dir(columns: list[str], values: list[Any]) -> str:
    """``col=value/...`` for one partition (physical column names, typed values)."""
    parts = []
    for name, value in zip(columns, values, strict=True):
        text = log_value(value)
        parts.append(
            f"{escape_path_name(name)}="
            f"{HIVE_NULL if text is None or text == '' else escape_path_name(text)}"
        )
    return "/".join(parts)
