"""Checking and converting the arguments users pass to ``Table`` verbs, before any IO."""

from __future__ import annotations

import datetime as dt
import math

from lakecore.errors import InvalidArgumentError, VersionNotFoundError

TimestampLike = int | float | str | dt.datetime | dt.date


def to_epoch_ms(value: TimestampLike) -> int:
    """Convert a timestamp (epoch ms, ISO-8601 text, datetime, date) to epoch milliseconds.

    Naive datetimes and texts without an offset are taken as UTC. Raises
    ``VersionNotFoundError`` (a ``ValueError``) for text that is not ISO-8601, a number that is
    not finite, or a value of another type: no version can be found for it.
    """
    if isinstance(value, bool) or not isinstance(value, int | float | str | dt.date):
        raise VersionNotFoundError(
            f"a timestamp must be epoch ms, ISO-8601 text, a datetime or a date, not {value!r}"
        )
    try:
        if isinstance(value, int | float):
            return int(value)
        if isinstance(value, str):
            value = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        if not isinstance(value, dt.datetime):
            value = dt.datetime(value.year, value.month, value.day)
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        return int(value.timestamp() * 1000)
    except (ValueError, OverflowError) as exc:
        raise VersionNotFoundError(f"not a usable timestamp {value!r}: {exc}") from None


def check_number(name: str, value: object, minimum: float, integral: bool = False) -> None:
    """Raise ``InvalidArgumentError`` unless ``value`` is a finite number >= ``minimum``."""
    kinds = (int,) if integral else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        kind = "an integer" if integral else "a number"
        raise InvalidArgumentError(f"{name} must be {kind}, not {value!r}")
    if not math.isfinite(value) or value < minimum:
        raise InvalidArgumentError(f"{name} must be at least {minimum:g}, not {value!r}")
