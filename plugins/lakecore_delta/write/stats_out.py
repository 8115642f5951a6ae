"""Per-file statistics as the ``stats`` JSON of add actions."""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.model.schema import is_ordered_scalar, physical_name

STRING_PREFIX_LENGTH = 32
"""Delta's default: string min/max are kept to this many characters."""
_RAW = re.compile(r'"\\u0000raw:([^"]*)"')


def _raw(text: str) -> str:
    # A marker for a JSON number written verbatim (exact decimals), replaced after dumps.
    return f"\x00raw:{text}"


def _stat_value(value: Any, t: pa.DataType, is_max: bool) -> Any:
    if value is None:
        return None
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        if len(value) <= STRING_PREFIX_LENGTH:
            return value
        # A prefix is a valid lower bound; for a max it would not be an upper bound.
        return None if is_max else value[:STRING_PREFIX_LENGTH]
    if pa.types.is_timestamp(t):
        assert isinstance(value, dt.datetime)
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        text = value.isoformat(timespec="milliseconds")
        return text + "Z" if t.tz is not None else text
    if pa.types.is_date(t):
        return value.isoformat()
    if pa.types.is_decimal(t):
        assert isinstance(value, Decimal)
        return _raw(format(value, "f"))
    if pa.types.is_floating(t):
        return None if (math.isnan(value) or math.isinf(value)) else float(value)
    if pa.types.is_integer(t):
        return int(value)
    return None


def _column_stats(
    array: pa.Array,
    field: pa.Field,
    mins: dict[str, Any],
    maxs: dict[str, Any],
    nulls: dict[str, Any],
) -> None:
    name = physical_name(field)
    t = field.type
    if pa.types.is_struct(t):
        sub_min: dict[str, Any] = {}
        sub_max: dict[str, Any] = {}
        sub_nulls: dict[str, Any] = {}
        for i in range(t.num_fields):
            child = pc.struct_field(array, [i])
            _column_stats(child, t.field(i), sub_min, sub_max, sub_nulls)
        if sub_min:
            mins[name] = sub_min
        if sub_max:
            maxs[name] = sub_max
        nulls[name] = sub_nulls
        return
    nulls[name] = array.null_count
    if not is_ordered_scalar(t) or array.null_count == len(array):
        return
    if pa.types.is_floating(t) and pc.any(pc.is_nan(array)).as_py():
        return
    mm = pc.min_max(array)
    lo = _stat_value(mm["min"].as_py(), t, False)
    hi = _stat_value(mm["max"].as_py(), t, True)
    if lo is not None:
        mins[name] = lo
    if hi is not None:
        maxs[name] = hi


def stats_json(table: pa.Table, fields: Sequence[pa.Field]) -> str:
    """The stats JSON of one data file holding ``table`` (columns in the order of ``fields``).

    ``fields`` are the logical fields of the data columns; keys are physical names.
    """
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, Any] = {}
    for f in fields:
        column = table.column(f.name).combine_chunks()
        _column_stats(column, f, mins, maxs, nulls)
    stats = {"numRecords": table.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls}
    return _RAW.sub(r"\1", json.dumps(stats, separators=(",", ":")))
