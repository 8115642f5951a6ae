"""Per-file statistics as the ``stats`` JSON of add actions, rendered from typed stats.

``lakecore.model.stats`` computes every file's ``min``/``max``/``null_count`` (from data or
Parquet footers, under ``DELTA_STATS_RULES``); this module only writes them the way Delta
readers expect them (delta-rs and Delta Spark prune with them).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.model import files as fi
from lakecore.model.schema import is_ordered_scalar, physical_name
from lakecore.model.stats import StatsRules, data_stats
from lakecore_delta.scan import DEFAULT_STRING_PREFIX_LENGTH
from lakecore_delta.scan import STRING_PREFIX_LENGTH as STRING_PREFIX_PROPERTY

STRING_PREFIX_LENGTH = 32
"""Delta's default: string min/max are kept to this many characters."""
DELTA_STATS_RULES = StatsRules(nan_free_float_bounds=True)
"""Delta readers order NaN above every value: float bounds only for files without NaN."""
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


def _render(
    fields: Sequence[pa.Field],
    mins: Mapping[str, Any] | None,
    maxs: Mapping[str, Any] | None,
    nulls: Mapping[str, Any] | None,
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The ``minValues``/``maxValues``/``nullCount`` objects of typed stats (logical names in,
    physical names out; unknown values left out)."""
    out_min: dict[str, Any] = {}
    out_max: dict[str, Any] = {}
    out_nulls: dict[str, Any] = {}
    for f in fields:
        name, t = physical_name(f), f.type
        lo = (mins or {}).get(f.name)
        hi = (maxs or {}).get(f.name)
        count = (nulls or {}).get(f.name)
        if pa.types.is_struct(t):
            sub = _render(list(t), lo, hi, count)
            for target, values in zip((out_min, out_max, out_nulls), sub, strict=True):
                if values:
                    target[name] = values
            continue
        if count is not None:
            out_nulls[name] = int(count)
        if not is_ordered_scalar(t):
            continue
        lo = _stat_value(lo, t, False)
        hi = _stat_value(hi, t, True)
        if lo is not None:
            out_min[name] = lo
        if hi is not None:
            out_max[name] = hi
    return out_min, out_max, out_nulls


def render_stats_json(
    record_count: int | None,
    mins: Mapping[str, Any] | None,
    maxs: Mapping[str, Any] | None,
    nulls: Mapping[str, Any] | None,
    fields: Sequence[pa.Field],
    tight_bounds: bool | None = None,
) -> str | None:
    """The ``stats`` JSON of one file from its typed stats (a row of the write layout's
    ``min``/``max``/``null_count`` as Python values, by logical name; None = unknown).

    ``fields`` are the table's logical data fields; keys are physical names. Strings are cut
    to ``STRING_PREFIX_LENGTH`` characters (a longer max is left out), timestamps floored to
    milliseconds, decimals written exactly; NaN/infinite floats and non-orderable columns get
    no bounds. ``tight_bounds`` (None: left out) is written as ``tightBounds``: a file with a
    deletion vector must say False, since its bounds and null counts may describe deleted
    rows (the protocol's "wide bounds"). Returns None when nothing is known (not even the
    record count).
    """
    out_min, out_max, out_nulls = _render(fields, mins, maxs, nulls)
    if record_count is None and not (out_min or out_max or out_nulls):
        return None
    stats: dict[str, Any] = {}
    if record_count is not None:
        stats["numRecords"] = int(record_count)
    if tight_bounds is not None:
        stats["tightBounds"] = tight_bounds
    stats.update({"minValues": out_min, "maxValues": out_max, "nullCount": out_nulls})
    return _RAW.sub(r"\1", json.dumps(stats, separators=(",", ":")))


def stats_json(table: pa.Table, fields: Sequence[pa.Field]) -> str:
    """The stats JSON of one data file holding ``table`` (logical data ``fields``), computed
    by ``lakecore.model.stats`` under Delta's rules and rendered by ``render_stats_json``."""
    stats = data_stats(table, fields, DELTA_STATS_RULES)
    text = render_stats_json(
        table.num_rows,
        stats.min.to_pylist()[0],
        stats.max.to_pylist()[0],
        stats.null_count.to_pylist()[0],
        fields,
    )
    assert text is not None
    return text


def string_prefix_length(configuration: Mapping[str, str]) -> int:
    """The table's ``delta.dataSkippingStringPrefixLength`` (default 32), as the planner
    reads it (``lakecore_delta.scan``): a string max at least this long may be a prefix."""
    try:
        return max(1, int(configuration[STRING_PREFIX_PROPERTY]))
    except (KeyError, ValueError):
        return DEFAULT_STRING_PREFIX_LENGTH


def index_bounds(files: pa.Table, prefix_length: int) -> pa.Table:
    """``files`` (rows of a Delta snapshot's file index) with ``max`` values that are true
    upper bounds of the data, so that re-rendering them (``render_stats_json``) never claims
    less than the file holds.

    The index keeps what the log said, with the log's precision (``lakecore_delta.scan``):
    a string max at least ``prefix_length`` characters long may be a prefix of larger values,
    so it becomes null (unknown); a timestamp max is rounded up to the next millisecond when
    it has a sub-millisecond part (the renderer floors to milliseconds, which for such a value
    would go below it). A millisecond-aligned timestamp max is kept: rendered back, it is the
    same text the log held, which Delta readers widen by the millisecond. Mins need nothing:
    a prefix of a min and a floored timestamp stay lower bounds.
    """
    if fi.MAX not in files.column_names:
        return files
    column = files.column(fi.MAX).combine_chunks()
    if not pa.types.is_struct(column.type):
        return files
    safe = _safe_max(column, prefix_length)
    return files.set_column(files.schema.get_field_index(fi.MAX), fi.MAX, safe)


def _safe_max(values: pa.Array, prefix_length: int) -> pa.Array:
    t = values.type
    if pa.types.is_struct(t):
        assert isinstance(values, pa.StructArray)
        children = [_safe_max(values.field(i), prefix_length) for i in range(t.num_fields)]
        return pa.StructArray.from_arrays(
            children, fields=list(t), mask=values.is_null() if values.null_count else None
        )
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        maybe_prefix = pc.fill_null(pc.greater_equal(pc.utf8_length(values), prefix_length), False)
        return pc.if_else(maybe_prefix, pa.scalar(None, t), values)
    if pa.types.is_timestamp(t) and t.unit in ("us", "ns"):
        try:
            return pc.ceil_temporal(values, unit="millisecond").cast(t)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # near the end of time
            return pa.nulls(len(values), t)
    return values
