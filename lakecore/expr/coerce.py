"""Coercing predicate literals to their column's type, exactly or not at all.

Rules (``PredicateError`` whenever the value would change):

- integers: ints, integral floats/Decimals, integer text; must fit the column's width.
- floats: any number or numeric text (``'NaN'``, ``'inf'`` included). Integers and text are
  rounded to the column's precision (Spark casts them to the column's type); a fractional
  number a narrower float column cannot hold (``0.7`` for float32) is refused, so that the
  comparison is made exactly in double precision, as Spark makes it.
- decimals: numbers or text with no more fractional digits than the scale and no more digits
  than the precision.
- strings: text only. binary: bytes, or text (UTF-8). booleans: bools or ``'true'``/``'false'``.
- dates: dates, ISO text, or a datetime at midnight.
- timestamps: datetimes, dates (midnight) or ISO text. For a column with a time zone (an
  instant), a literal without an offset is taken as UTC; a column without one (wall clock,
  ``timestamp_ntz``) refuses literals with an offset. Sub-unit digits are refused.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
from typing import Any

import pyarrow as pa

from lakecore.errors import PredicateError
from lakecore.model.schema import is_ordered_scalar

_UNITS_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def supported_type(t: pa.DataType) -> bool:
    """Whether predicates may reference a column of type ``t``."""
    return bool(
        is_ordered_scalar(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_boolean(t)
    )


def coerce(value: Any, field: pa.Field) -> Any:
    """Return ``value`` as the Python value of ``field``'s type it equals; None stays None."""
    if value is None:
        return None
    t = field.type
    try:
        out = _coerce(value, t)
    except (ValueError, TypeError, ArithmeticError) as exc:
        raise PredicateError(
            f"literal {value!r} cannot be compared with column {field.name!r} ({t}): {exc}"
        ) from exc
    return out


def _coerce(value: Any, t: pa.DataType) -> Any:
    if pa.types.is_boolean(t):
        return _boolean(value)
    if pa.types.is_integer(t):
        return _integer(value, t)
    if pa.types.is_floating(t):
        return _floating(value, t)
    if pa.types.is_decimal(t):
        return _decimal(value, t)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        if not isinstance(value, str):
            raise TypeError("expected text")
        return value
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return _binary(value)
    if pa.types.is_date(t):
        return _date(value)
    if pa.types.is_timestamp(t):
        return _timestamp(value, t)
    raise TypeError(f"columns of type {t} cannot be filtered on")


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise TypeError("expected a boolean")


def _integer(value: Any, t: pa.DataType) -> int:
    if isinstance(value, bool):
        raise TypeError("expected a number, not a boolean")
    if isinstance(value, str):
        value = decimal.Decimal(value.strip())
    if isinstance(value, float | decimal.Decimal):
        if not math.isfinite(value) or value != int(value):
            raise ValueError("not an integer")
        value = int(value)
    if not isinstance(value, int):
        raise TypeError("expected an integer")
    bits = t.bit_width
    low, high = (
        (0, 2**bits - 1)
        if pa.types.is_unsigned_integer(t)
        else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    )
    if not low <= value <= high:
        raise ValueError(f"out of the range of {t}")
    return value


def _floating(value: Any, t: pa.DataType) -> float:
    if isinstance(value, bool):
        raise TypeError("expected a number, not a boolean")
    cast_first = isinstance(value, str | int)
    if isinstance(value, str):
        value = float(value.strip())
    if not isinstance(value, int | float | decimal.Decimal):
        raise TypeError("expected a number")
    out = float(value)
    rounded = float(pa.scalar(out, pa.float64()).cast(t).as_py())
    # Spark compares a FLOAT column with a fractional number (a decimal or double literal) in
    # double precision: such a number that the column's type cannot hold is no value of it
    # (float32(0.7) < 0.7 is true there). Integers and text are cast to the column's type
    # first, as Spark casts them.
    exact = cast_first or math.isnan(out) or rounded == out
    if not exact:
        raise ValueError(f"{value!r} is not a value of {t}")
    return rounded


def _decimal(value: Any, t: pa.Decimal128Type) -> decimal.Decimal:
    if isinstance(value, bool):
        raise TypeError("expected a number, not a boolean")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("not a finite number")
        value = decimal.Decimal(repr(value))
    elif isinstance(value, int | str):
        value = decimal.Decimal(value.strip() if isinstance(value, str) else value)
    if not isinstance(value, decimal.Decimal) or not value.is_finite():
        raise TypeError("expected a finite number")
    quantum = decimal.Decimal(1).scaleb(-t.scale)
    context = decimal.Context(prec=max(t.precision, 1) + 40)
    exact = value.quantize(quantum, context=context)
    if exact != value:
        raise ValueError(f"has more than {t.scale} fractional digits")
    if len(exact.as_tuple().digits) > t.precision and exact != 0:
        raise ValueError(f"has more than {t.precision} digits")
    return exact


def _binary(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    raise TypeError("expected bytes")


def _date(value: Any) -> dt.date:
    if isinstance(value, str):
        value = parse_timestamp(value) if len(value.strip()) > 10 else value
        if isinstance(value, str):
            return dt.date.fromisoformat(value.strip())
    if isinstance(value, dt.datetime):
        if value.time() != dt.time(0) or value.utcoffset():
            raise ValueError("a date literal must not have a time of day")
        return value.date()
    if isinstance(value, dt.date):
        return value
    raise TypeError("expected a date")


def _timestamp(value: Any, t: pa.TimestampType) -> dt.datetime:
    if isinstance(value, str):
        value = parse_timestamp(value)
    elif isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        value = dt.datetime(value.year, value.month, value.day)
    if not isinstance(value, dt.datetime):
        raise TypeError("expected a timestamp")
    if t.tz is None:
        if value.tzinfo is not None:
            raise ValueError(
                "the column holds wall-clock times without a time zone; "
                "compare it with a literal without UTC offset"
            )
    else:
        aware = value if value.tzinfo is not None else value.replace(tzinfo=dt.timezone.utc)
        value = aware.astimezone(dt.timezone.utc)
    per_second = _UNITS_PER_SECOND[t.unit]
    if per_second < 1_000_000 and value.microsecond % (1_000_000 // per_second):
        raise ValueError(f"has digits below the column's unit ({t.unit})")
    out: dt.datetime = value
    return out


def parse_timestamp(raw: str) -> dt.datetime:
    """Parse ISO-8601 text (``T`` or space separator, optional fraction and offset, ``Z``).

    Raises ``ValueError`` for a fraction with non-zero digits below the microsecond, which a
    ``datetime`` cannot hold (Python would drop them: ``'...00.000000001'`` would then equal
    the row at ``...00``, a wrong answer on a nanosecond column).
    """
    text = raw.strip().replace("Z", "+00:00").replace("z", "+00:00")
    fraction = _FRACTION.search(text)
    if fraction is not None and len(fraction.group(1)) > 6:
        digits = fraction.group(1)
        if digits[6:].strip("0"):
            raise ValueError(
                f"{raw!r} has digits below the microsecond ({digits}): timestamps are "
                "compared to the microsecond"
            )
        text = text[: fraction.start(1) + 6] + text[fraction.end(1) :]
    return dt.datetime.fromisoformat(text)


_FRACTION = re.compile(r"\d:\d\d[.,](\d+)")
"""The fraction of the seconds in ISO-8601 text (after ``hh:mm:ss``)."""
