"""Per-column value bounds of every file of a file index, as Arrow arrays (no per-file loop).

For each column and file, ``ColumnBounds`` says what the index proves about the file's values:

- ``lower`` <= every non-null, non-NaN value <= ``upper`` (null = unknown; NaN stats = unknown,
  except for a partition value, where ``lower = upper = NaN`` is exact);
- ``prefix``: for string columns whose max may be truncated, values may also exceed ``upper``
  when they start with ``prefix``, ``upper``'s first ``prefix_length`` characters (null where
  ``upper`` is a true bound);
- ``has_value`` / ``has_null``: the file may hold a non-null value / a null (true if unknown);
- ``nan``: the file may hold NaN (floating columns: always, since writers leave NaN out of
  min/max; partition values: exactly).

Partition columns are exact: ``lower = upper =`` the file's value. Data columns come from the
``min``/``max``/``null_count`` stats, widened per the format's ``StatsPrecision``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.model import files as fi
from lakecore.planning.tasks import StatsPrecision

Mask: TypeAlias = "pa.Array | pa.ChunkedArray | bool"
"""A boolean per file without nulls, or one bool for every file."""


@dataclass(frozen=True, slots=True)
class ColumnBounds:
    """What the index proves about one column's values in each file (see module docstring)."""

    type: pa.DataType
    lower: pa.ChunkedArray | None
    upper: pa.ChunkedArray | None
    prefix: pa.ChunkedArray | None
    prefix_length: int
    has_value: Mask
    has_null: Mask
    nan: Mask


class FileBounds:
    """Lazily computed ``ColumnBounds`` of each column over one file index.

    With ``use_stats=False`` only partition columns are known (the partition-pruning stage).
    """

    def __init__(
        self,
        files: pa.Table,
        schema: pa.Schema,
        partition_columns: tuple[str, ...],
        precision: StatsPrecision,
        use_stats: bool = True,
    ) -> None:
        self.num_files = files.num_rows
        self._files = files
        self._schema = schema
        self._partitions = set(partition_columns)
        self._precision = precision
        self._use_stats = use_stats
        self._cache: dict[str, ColumnBounds | None] = {}

    def column(self, name: str) -> ColumnBounds | None:
        """The bounds of column ``name``, None when the index says nothing about it."""
        if name not in self._cache:
            t = self._schema.field(name).type
            if name in self._partitions:
                self._cache[name] = self._partition_bounds(name, t)
            elif self._use_stats:
                self._cache[name] = self._stats_bounds(name, t)
            else:
                self._cache[name] = None
        return self._cache[name]

    def _child(self, struct_column: str, name: str) -> pa.ChunkedArray | None:
        if struct_column not in self._files.column_names:
            return None
        column = self._files.column(struct_column)
        index = column.type.get_field_index(name)
        if index < 0:
            return None
        # By index: pyarrow reads a name starting with "." or "[" as a field path.
        return pc.struct_field(column, [index])

    def _partition_bounds(self, name: str, t: pa.DataType) -> ColumnBounds | None:
        values = self._child(fi.PARTITION, name)
        if values is None:
            return None
        if values.type != t:
            values = values.cast(t)
        valid = pc.is_valid(values)
        # A NaN partition value stays: the file's rows all compare exactly as NaN does.
        nan: Mask = pc.fill_null(pc.is_nan(values), False) if pa.types.is_floating(t) else False
        return ColumnBounds(t, values, values, None, 0, valid, pc.invert(valid), nan)

    def _stats_bounds(self, name: str, t: pa.DataType) -> ColumnBounds:
        lower = _typed(self._child(fi.MIN, name), t)
        upper = _typed(self._child(fi.MAX, name), t)
        nulls = self._child(fi.NULL_COUNT, name)
        records = (
            self._files.column(fi.RECORD_COUNT)
            if fi.RECORD_COUNT in self._files.column_names
            else None
        )
        has_value: Mask = True
        has_null: Mask = True
        if nulls is not None:
            has_null = pc.fill_null(pc.greater(nulls, 0), True)
            if records is not None:
                has_value = pc.fill_null(pc.less(nulls, records), True)
        nan: Mask = pa.types.is_floating(t)
        if nan:
            lower, upper = _without_nan(lower), _without_nan(upper)
        upper = self._widen_timestamp(upper, t)
        prefix = self._string_prefix(upper, t)
        length = self._precision.string_prefix_length or 0
        return ColumnBounds(t, lower, upper, prefix, length, has_value, has_null, nan)

    def _widen_timestamp(
        self, upper: pa.ChunkedArray | None, t: pa.DataType
    ) -> pa.ChunkedArray | None:
        slack = self._precision.timestamp_truncation
        if upper is None or slack is None or not pa.types.is_timestamp(t):
            return upper
        try:
            return pc.add_checked(upper, pa.scalar(slack, pa.duration(t.unit)))
        except pa.ArrowInvalid:  # overflow near the end of time: give up the bound
            return None

    def _string_prefix(
        self, upper: pa.ChunkedArray | None, t: pa.DataType
    ) -> pa.ChunkedArray | None:
        length = self._precision.string_prefix_length
        if (
            upper is None
            or length is None
            or not (pa.types.is_string(t) or pa.types.is_large_string(t))
        ):
            return None
        truncated = pc.greater_equal(pc.utf8_length(upper), length)
        if not pc.any(truncated).as_py():
            return None
        prefix = pc.utf8_slice_codeunits(upper, 0, length)
        return pc.if_else(truncated, prefix, pa.scalar(None, prefix.type))


def _typed(values: pa.ChunkedArray | None, t: pa.DataType) -> pa.ChunkedArray | None:
    if values is None or values.type == t:
        return values
    try:
        return values.cast(t)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _without_nan(values: pa.ChunkedArray | None) -> pa.ChunkedArray | None:
    """``values`` with NaN replaced by null (unknown)."""
    if values is None:
        return None
    return pc.if_else(pc.is_nan(values), pa.scalar(None, values.type), values)
