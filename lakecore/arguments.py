"""Checking and converting the arguments users pass to ``Table`` verbs, before any IO."""

from __future__ import annotations

import datetime as dt
import math
import numbers
import operator
import os
from collections.abc import Mapping
from typing import Any, cast

import pyarrow as pa

from lakecore.errors import (
    ArgumentTypeError,
    InvalidArgumentError,
    SchemaError,
    VersionNotFoundError,
)
from lakecore.model.distinct_values import repeated

TimestampLike = int | float | str | dt.datetime | dt.date


def to_epoch_ms(value: TimestampLike) -> int:
    """Convert a timestamp (epoch ms, ISO-8601 text, datetime, date) to epoch milliseconds.

    Naive datetimes and texts without an offset are taken as UTC. Raises
    ``VersionNotFoundError`` (a ``ValueError``) for text that is not ISO-8601, a number that is
    not finite, a value of another type (no version can be found for it), and - as deltalake
    does - a float that looks like epoch seconds (``time.time()``: a fraction, or a value in the
    range of seconds since 1973), which read as milliseconds would name a day in 1970, and
    a time outside the years 1..9999 (UTC): no format has a version then, and all must say so
    alike.
    """
    if isinstance(value, bool) or not isinstance(value, int | float | str | dt.date):
        raise VersionNotFoundError(
            f"a timestamp must be epoch ms, ISO-8601 text, a datetime or a date, not {value!r}"
        )
    if isinstance(value, float) and math.isfinite(value) and _seconds_like(value):
        raise VersionNotFoundError(
            f"timestamp {value!r} looks like epoch seconds (time.time()); timestamps given as "
            f"numbers are epoch milliseconds: pass {int(value * 1000)} or a datetime"
        )
    try:
        if isinstance(value, int | float):
            ms = int(value)
        else:
            if isinstance(value, str):
                value = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            if not isinstance(value, dt.datetime):
                value = dt.datetime(value.year, value.month, value.day)
            if value.tzinfo is None:
                value = value.replace(tzinfo=dt.timezone.utc)
            ms = (value - _EPOCH) // dt.timedelta(milliseconds=1)  # exact, no float
    except (ValueError, OverflowError) as exc:
        raise VersionNotFoundError(f"not a usable timestamp {value!r}: {exc}") from None
    # Every format must answer the same: beyond these, Hudi's instant text cannot be spelt
    # (epoch ms of the year 3 billion read as latest on Delta and Lance, a StorageError there).
    if not EPOCH_MS_RANGE[0] <= ms <= EPOCH_MS_RANGE[1]:
        raise VersionNotFoundError(
            f"timestamp {value!r} is outside the years 1..9999 (epoch ms "
            f"{EPOCH_MS_RANGE[0]}..{EPOCH_MS_RANGE[1]}): no table has a version then"
        )
    return ms


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
EPOCH_MS_RANGE = (-62_135_596_800_000, 253_402_300_799_999)
"""Epoch milliseconds of 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z (UTC)."""


SECONDS_LIKE = (1e8, 1e11)
"""Magnitudes of epoch seconds from 1973 to 5138: as milliseconds, days of 1970."""


def _seconds_like(value: float) -> bool:
    # A fraction of a millisecond is as odd as whole seconds: both suggest time.time().
    return abs(value) < SECONDS_LIKE[1] and (
        not value.is_integer() or abs(value) >= SECONDS_LIKE[0]
    )


def check_number(name: str, value: object, minimum: float, integral: bool = False) -> None:
    """Raise ``InvalidArgumentError`` unless ``value`` is a finite number >= ``minimum``."""
    kinds = (int,) if integral else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        kind = "an integer" if integral else "a number"
        raise InvalidArgumentError(f"{name} must be {kind}, not {value!r}")
    if not math.isfinite(value) or value < minimum:
        raise InvalidArgumentError(f"{name} must be at least {minimum:g}, not {value!r}")


def check_mapping(name: str, value: object) -> dict[Any, Any]:
    """Return ``value`` (None, or a mapping such as ``storage_options``) as a new dict.

    Raises ``ArgumentTypeError`` for anything else (a list of pairs, a string).
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ArgumentTypeError(f"{name} must be a dict (a mapping), not {value!r}")
    return dict(value)


def check_location(uri: object) -> str | os.PathLike[str]:
    """Return ``uri`` once it is a path or URI (``str`` or ``os.PathLike``).

    Raises ``ArgumentTypeError`` for anything else (None, bytes, a number) and
    ``InvalidArgumentError`` for empty or blank text.
    """
    if isinstance(uri, str | os.PathLike) and not isinstance(os.fspath(uri), bytes):
        if not os.fspath(uri).strip():
            # An empty text would resolve to the working directory: ``create("")`` must not
            # write a table there.
            raise InvalidArgumentError(f"a table location must not be empty, not {uri!r}")
        return cast("str | os.PathLike[str]", uri)
    raise ArgumentTypeError(f"a table location must be a path or URI string, not {uri!r}")


def check_version(name: str, value: object) -> int | str:
    """Return ``value`` as a version: an integer (Delta, Lance; numpy's integers become
    ``int``) or text (a Hudi instant, a Lance tag).

    Raises ``ArgumentTypeError`` for anything else: ``bool`` and ``float`` are no version
    (``True`` or ``1.0`` must not read version 1 on one format and a tag on another).
    """
    if isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return operator.index(value)
    raise ArgumentTypeError(f"{name} must be a version (an integer or text), not {value!r}")


def check_properties(value: object, unset: bool) -> dict[str, str | None]:
    """Return table properties ``value`` (a mapping of names to values) as text.

    A ``bool`` becomes ``"true"``/``"false"``, the spelling of Delta's and Spark's boolean
    properties (``str(True)`` is ``"True"``, which delta-rs does not read as true); other
    values ``str(value)``; None (unset the key) only where ``unset``.

    Raises ``ArgumentTypeError`` for a ``value`` that is no mapping and for names that are
    not text, ``InvalidArgumentError`` for a blank name and for None where ``unset`` is False.
    """
    if not isinstance(value, Mapping):
        raise ArgumentTypeError(f"properties must be a dict (a mapping), not {value!r}")
    out: dict[str, str | None] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise ArgumentTypeError(f"property names must be text, not {key!r}")
        if not key.strip():
            raise InvalidArgumentError(f"a property name must not be blank, not {key!r}")
        if item is None and not unset:
            raise InvalidArgumentError(
                f"property {key!r} is None: a new table has no property to unset; leave it out"
            )
        if isinstance(item, bool):
            out[key] = "true" if item else "false"
        else:
            out[key] = None if item is None else str(item)
    return out


def check_flag(name: str, value: object) -> bool:
    """Return ``value`` once it is a ``bool``; ``ArgumentTypeError`` otherwise.

    For flags that decide what is deleted (``vacuum``'s ``dry_run``): ``None``, ``0`` or
    ``"no"`` must not be read by truthiness (``dry_run=None`` deleted files).
    """
    if not isinstance(value, bool):
        raise ArgumentTypeError(f"{name} must be True or False, not {value!r}")
    return value


def check_schema_names(schema: object) -> None:
    """Raise unless ``schema`` is a ``pyarrow.Schema`` of at least one column whose names are
    non-blank and distinct: ``ArgumentTypeError`` for another type, ``SchemaError`` else.

    A table with two columns ``id`` or one called ``""`` cannot be read back by name (Delta and
    Lance created both; Hudi failed with a raw ``KeyError``).
    """
    if not isinstance(schema, pa.Schema):
        raise ArgumentTypeError(f"a table schema must be a pyarrow.Schema, not {schema!r}")
    if not len(schema):
        raise SchemaError("a table needs at least one column; the schema has none")
    blank = [n for n in schema.names if not n.strip()]
    if blank:
        raise SchemaError(f"column names must not be blank, not {blank!r}")
    twice = repeated(schema.names)
    if twice:
        raise SchemaError(f"column names must be distinct; repeated: {twice}")


def check_merge_aliases(source_alias: object, target_alias: object) -> None:
    """Raise unless the MERGE aliases are two distinct names SQL can spell (``a.x``)."""
    source = _alias("source_alias", source_alias)
    if source.lower() == _alias("target_alias", target_alias).lower():
        raise InvalidArgumentError(
            f"source_alias {source_alias!r} and target_alias {target_alias!r} are the same "
            "name to SQL (case is ignored): conditions could not say which side they mean"
        )


def _alias(name: str, alias: object) -> str:
    if not isinstance(alias, str):
        raise ArgumentTypeError(f"{name} must be text, not {alias!r}")
    if not alias.strip() or "." in alias:
        raise InvalidArgumentError(f"{name} must be a name without dots, not {alias!r}")
    return alias
