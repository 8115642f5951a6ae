"""Partition values of file slices, parsed from partition paths for the planner's index.

Hudi keeps partition columns inside the data files, so reading never needs these values;
they only let the planner prune whole partitions. A path maps to values when every partition
field has its own path segment (``city=chennai`` with hive-style partitioning, or the plain
value ``chennai``). Key generators that format values into the path (timestamp-based ones,
``2023/11/14`` for one field) do not map back to column values, so those tables get no
partition values and the planner prunes on column statistics instead.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.model.partition_paths import HIVE_NULL, split_segment
from lakecore.model.schema import is_ordered_scalar
from lakecore_hudi.table_config import TableConfig

DEFAULT_PARTITION = HIVE_NULL
"""A null or empty partition value's path segment (``lakecore.model.partition_paths``)."""


def _castable(t: pa.DataType) -> bool:
    """Types a partition path's text casts to exactly (timestamps are left out: path text
    carries no time zone)."""
    return (is_ordered_scalar(t) and not pa.types.is_timestamp(t)) or pa.types.is_boolean(t)


def _keygen(config: TableConfig) -> str:
    return f"{config.keygen_type or ''} {config.keygen_class or ''}".lower()


def formats_timestamps(config: TableConfig) -> bool:
    """Whether a timestamp-based key generator writes the partition paths (their text is a
    formatted date, not the column's value)."""
    return "timestamp" in _keygen(config)


def prunable_partition_columns(config: TableConfig, schema: pa.Schema) -> tuple[str, ...]:
    """The partition fields whose values can be read back from partition paths."""
    if formats_timestamps(config) or "custom" in _keygen(config):
        return ()
    fields = config.partition_fields
    for name in fields:
        i = schema.get_field_index(name)
        if i < 0 or not _castable(schema.field(i).type):
            return ()
    return fields


def partition_struct(
    partition_paths: Sequence[str], columns: Sequence[str], schema: pa.Schema, config: TableConfig
) -> pa.StructArray | None:
    """Typed partition values, one row per path; None when a path does not fit the columns."""
    if not columns:
        return None
    texts: list[list[str | None]] = [[] for _ in columns]
    for path in partition_paths:
        parts = path.split("/") if path else []
        if len(parts) != len(columns):
            return None
        for i, (name, part) in enumerate(zip(columns, parts, strict=True)):
            value: str | None = part
            if config.hive_style_partitioning:
                # Hudi writes names and values as they are (URL-encoded only by option).
                try:
                    key, value = split_segment(part, escaped=False)
                except ValueError:
                    return None
                if key != name:
                    return None
            if value is not None and config.url_encode_partitions:
                value = urllib.parse.unquote(value)
            texts[i].append(None if value == DEFAULT_PARTITION else value)
    arrays = []
    for name, values in zip(columns, texts, strict=True):
        target = schema.field(name).type
        try:
            arrays.append(pc.cast(pa.array(values, pa.string()), target))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
    return pa.StructArray.from_arrays(arrays, names=list(columns))
