"""Partition values out: the log's string form and Hive-style directory names.

Delta's ``partitionValues`` strings are the Hive text of each value (the rules of
``lakecore.model.partition_paths.partition_text``) and data files go under Hive-escaped
``col=value`` directories (``partition_segment``). Texts are rendered for whole columns:
dates, timestamps, integers, strings and booleans by Arrow casts, never through Python's
``datetime``, which cannot hold every date Arrow and Delta do (a date of year 0: the
protocol's ``{year}-{month}-{day}`` is ``0000-01-01``, as delta-rs writes it too); floats,
decimals and binary through ``partition_text``, whose Python values hold them exactly.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import InvalidArgumentError
from lakecore.model.partition_paths import HIVE_NULL, partition_segment, partition_text

__all__ = ["HIVE_NULL", "partition_dirs", "partition_text_struct", "partition_texts"]

_FIRST_DAY, _END_DAY = -719_528, 2_932_897
"""0000-01-01 and 10000-01-01 as days since the epoch: the dates with a four-digit year."""
_DAY_US = 86_400_000_000


def partition_texts(values: pa.Array | pa.ChunkedArray, name: str) -> pa.Array:
    """The log text of each value of partition column ``name`` (strings; null stays null).

    Dates are ``YYYY-MM-DD``; timestamps ``YYYY-MM-DD HH:MM:SS.ffffff`` (instants in UTC,
    wall-clock times as they are). Raises ``InvalidArgumentError`` for a date or timestamp
    outside years 0000..9999: its text (``-0001-12-31``, ``+10000-01-01``) is not the
    protocol's ``{year}-{month}-{day}`` and does not parse back as a partition value, and
    for a binary value that is not UTF-8. An empty string or binary value is null.
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks else pa.nulls(0, values.type)
    texts = _texts(values, name)
    # The protocol reads an empty partition value as null, and Delta Spark writes null for
    # an empty string (delta-rs would read a logged "" back as "").
    empty = pc.fill_null(pc.equal(texts, ""), False)
    if pc.any(empty).as_py():
        texts = pc.if_else(empty, pa.scalar(None, pa.string()), texts)
    return texts


def _texts(values: pa.Array, name: str) -> pa.Array:
    t = values.type
    if pa.types.is_date(t):
        return _date_texts(values.cast(pa.date32()), name)
    if pa.types.is_timestamp(t):
        return _timestamp_texts(values, name)
    if pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_large_string(t):
        return values.cast(pa.string())
    if pa.types.is_boolean(t):  # Arrow's text is Hive's: true / false
        return values.cast(pa.string())
    try:
        return pa.array([partition_text(v) for v in values.to_pylist()], pa.string())
    except UnicodeEncodeError as exc:  # bytes that are no UTF-8 text (surrogate-escaped)
        raise InvalidArgumentError(
            f"partition column {name!r}: a binary value is not UTF-8 text, which a Delta "
            "partition value (a string in the log) must be"
        ) from exc


def _date_texts(days: pa.Array, name: str) -> pa.Array:
    raw = days.view(pa.int32())
    _check_years(raw, _FIRST_DAY, _END_DAY, days, name)
    return days.cast(pa.string())


def _timestamp_texts(values: pa.Array, name: str) -> pa.Array:
    t = values.type
    # The stored values are UTC instants (or wall-clock times): dropping the zone keeps them.
    try:
        micros = values.cast(pa.timestamp("us", t.tz)).cast(pa.timestamp("us"))
    except pa.ArrowInvalid as exc:  # a nanosecond part a microsecond text cannot hold
        raise InvalidArgumentError(
            f"partition column {name!r}: a timestamp value is finer than microseconds, which "
            f"Delta partition values cannot hold: {exc}"
        ) from exc
    raw = micros.view(pa.int64())
    _check_years(raw, _FIRST_DAY * _DAY_US, _END_DAY * _DAY_US, micros, name)
    return micros.cast(pa.string())


def _check_years(raw: pa.Array, first: int, end: int, values: pa.Array, name: str) -> None:
    outside = pc.or_(pc.less(raw, first), pc.greater_equal(raw, end))
    outside = pc.fill_null(outside, False)
    if pc.any(outside).as_py():
        example = values.filter(outside).slice(0, 1).cast(pa.string())[0]
        raise InvalidArgumentError(
            f"partition column {name!r}: value {example} is outside years 0000..9999; a "
            "Delta partition value of its type is {year}-{month}-{day} with a four-digit "
            "year, which cannot spell it"
        )


def partition_text_struct(partition: pa.Array | pa.ChunkedArray) -> pa.StructArray:
    """A file index's typed ``partition`` struct as a struct of the log's texts, children
    named as they are (``partition_texts`` for each; raises as it does)."""
    if isinstance(partition, pa.ChunkedArray):
        chunks = partition.chunks
        partition = pa.concat_arrays(chunks) if chunks else pa.nulls(0, partition.type)
    assert isinstance(partition, pa.StructArray)
    t = partition.type
    fields = [pa.field(t.field(i).name, pa.string()) for i in range(t.num_fields)]
    if not fields:
        return partition
    children = partition.flatten()  # parent nulls folded into the children
    texts = [partition_texts(c, f.name) for c, f in zip(children, fields, strict=True)]
    mask = partition.is_null() if partition.null_count else None
    return pa.StructArray.from_arrays(texts, fields=fields, mask=mask)


def partition_dirs(keys: pa.Table, physical: Sequence[str]) -> list[str]:
    """``col=value/...`` of each row of ``keys`` (one typed column per partition column, named
    logically; ``physical`` are their directory names, in order), Hive-escaped. Raises as
    ``partition_texts`` does."""
    texts = [
        partition_texts(keys.column(i), n).to_pylist() for i, n in enumerate(keys.column_names)
    ]
    return [
        "/".join(
            partition_segment(c, column[row]) for c, column in zip(physical, texts, strict=True)
        )
        for row in range(keys.num_rows)
    ]
