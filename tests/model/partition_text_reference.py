"""A reference rendering of Hive partition texts, per Python value: the tests' oracle.

This is the rendering lakecore's writers used before session 10 (``partition_text`` and
``partition_path`` of ``lakecore.model.partition_paths``, through Python objects). The
product now renders whole Arrow columns (``partition_paths.hive_texts``, mostly by Arrow
casts); tests compare it with this independent spelling of the same rules wherever Python
holds the value (years 1..9999).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from lakecore.model.partition_paths import partition_segment


def partition_text(value: Any) -> str | None:
    """A typed partition value as Hive text (None stays None): booleans ``true``/``false``,
    dates ``YYYY-MM-DD``, timestamps ``YYYY-MM-DD HH:MM:SS.ffffff`` (instants in UTC),
    decimals in plain notation, bytes as their UTF-8 text, numbers as Python prints them."""
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
        return value.decode("utf-8")
    return str(value)


def partition_path(names: Sequence[str], values: Sequence[Any]) -> str:
    """``col=value/...`` of one partition (directory names, typed values), Hive-escaped."""
    return "/".join(
        partition_segment(name, partition_text(value))
        for name, value in zip(names, values, strict=True)
    )
