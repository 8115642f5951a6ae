"""Column ranges of data files, computed as Hudi computes them for the metadata table.

- A Parquet base file: from its footer (Hudi's ``ParquetUtils.readColumnStatsFromMetadata``),
  per leaf column over all row groups: min of the mins and max of the maxes, null counts and
  value counts (``num_values``, nulls included) summed, ``totalSize`` the compressed and
  ``totalUncompressedSize`` the uncompressed column chunk sizes summed. Float bounds are read
  as parquet-mr reads them: a zero min is -0.0, a zero max +0.0, bounds with a NaN unknown.
  A date or timestamp bound Python cannot hold (after year 9999) makes the file's bound
  unknown; a column chunk whose physical type is not its schema column's, or string bounds
  that are not UTF-8, are ``CorruptTableError`` (``lakecore.model.parquet_footer``).
- A Lance base file: none. Hudi 1.1 writes no column stats for Lance base files (the corpus
  table ``mor_avro_v9_lance_nonhivestyle`` has none), so neither does lakecore.
- A log file: from the records of its data blocks (Hudi's append handle collects them as it
  writes): min/max over the non-null values in Java order, nulls counted, ``valueCount`` the
  number of records, both sizes 0. Delete blocks add nothing, so a log holding only deletes
  gets ranges with no values and zero counts (value type NULL).

Which blocks of a log file count is the caller's choice (``is_valid_instant``): the blocks of
one instant for that instant's records, the blocks of every completed instant for a file's
whole range.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakecore.errors import CorruptTableError, UnsupportedFeatureError
from lakecore.model.parquet_footer import LOGICAL, check_chunk_type, chunk_bounds
from lakecore.storage import Storage
from lakecore_hudi.log.blocks import decode_data_block
from lakecore_hudi.log.format import BlockType, read_log_blocks
from lakecore_hudi.log.scanner import order_log_blocks
from lakecore_hudi.mdt.footer_stats import _read_footer
from lakecore_hudi.mdt.stats_values import (
    NULL_KIND,
    ColumnRange,
    ValueKind,
    java_order_key,
    kind_of,
)
from lakecore_hudi.names import parse_log_file_name

__all__ = ["base_file_ranges", "field_kind", "file_ranges", "log_file_ranges"]

_DATA_BLOCKS = (BlockType.AVRO_DATA, BlockType.PARQUET_DATA)


def file_ranges(
    storage: Storage,
    path: str,
    columns: Sequence[str],
    is_valid_instant: Callable[[str], bool],
) -> list[ColumnRange]:
    """The ranges of ``columns`` of data file ``path`` (base or log, by its name).

    Raises as ``base_file_ranges`` / ``log_file_ranges``.
    """
    name = path.rsplit("/", 1)[-1]
    if parse_log_file_name(name) is not None:
        return log_file_ranges(storage, path, columns, is_valid_instant)
    return base_file_ranges(storage, path, columns)


def base_file_ranges(storage: Storage, path: str, columns: Sequence[str]) -> list[ColumnRange]:
    """The ranges of ``columns`` of base file ``path`` from its footer, in ``columns`` order.

    Columns the file does not hold, or of types Hudi does not index, get no range; a Lance
    base file gets none at all.

    Raises:
        CorruptTableError: the Parquet footer is unreadable, a column chunk's physical type is
            not its schema column's, or string bounds are not UTF-8 (names the file).
        FileNotFoundError: the file does not exist.
        UnsupportedFeatureError: a base file format other than Parquet or Lance.
    """
    lowered = path.lower()
    if lowered.endswith(".lance"):
        return []
    if not lowered.endswith(".parquet"):
        raise UnsupportedFeatureError(
            "hudi column stats of non-parquet base files",
            f"{path}: lakecore computes column stats only for Parquet (and Lance) base files",
        )
    footer = _read_footer(storage, path)
    assert footer is not None  # a .parquet path always yields a footer or raises
    name = path.rsplit("/", 1)[-1]
    arrow = footer.schema.to_arrow_schema()
    leaves = {footer.schema.column(i).path: i for i in range(footer.num_columns)}
    out = []
    for column in columns:
        index = leaves.get(column)
        kind = field_kind(arrow, column)
        if index is None or kind is None:
            continue
        out.append(_footer_range(footer, index, name, column, kind))
    return out


def _footer_range(
    footer: pq.FileMetaData, index: int, name: str, column: str, kind: ValueKind
) -> ColumnRange:
    physical = footer.schema.column(index).physical_type
    low: Any = None
    high: Any = None
    low_known = high_known = True
    nulls = values = size = raw = 0
    for g in range(footer.num_row_groups):
        chunk = footer.row_group(g).column(index)
        values += chunk.num_values
        size += chunk.total_compressed_size
        raw += chunk.total_uncompressed_size
        try:
            check_chunk_type(chunk, physical)  # before ``statistics``: see there
            stats = chunk.statistics
            if stats is None:
                continue
            if stats.has_null_count:
                nulls += stats.null_count
            if not stats.has_min_max:
                continue
            bounds = _read_bounds(*chunk_bounds(stats, LOGICAL))
        except CorruptTableError as exc:
            raise CorruptTableError(f"{name}: {exc}") from exc
        if bounds is not None:
            # A bound Python cannot hold (after year 9999) leaves the file's bound unknown.
            low_known = low_known and bounds[0] is not None
            high_known = high_known and bounds[1] is not None
            low = _lower(low, bounds[0], True) if low_known else None
            high = _lower(high, bounds[1], False) if high_known else None
    return ColumnRange(name, column, low, high, nulls, values, size, raw, kind)


def _read_bounds(low: Any, high: Any) -> tuple[Any, Any] | None:
    """A row group's footer min/max as parquet-mr reads them (Hudi reads footers with it):
    float bounds with a NaN are dropped, a +0.0 min reads as -0.0 and a -0.0 max as +0.0
    (``ParquetMetadataConverter``, PARQUET-1222)."""
    if not isinstance(low, float) or not isinstance(high, float):
        return low, high
    if math.isnan(low) or math.isnan(high):
        return None
    if low == 0.0:
        low = -0.0
    if high == 0.0:
        high = 0.0
    return low, high


def _lower(current: Any, value: Any, lowest: bool) -> Any:
    if current is None:
        return value
    smaller = java_order_key(value) < java_order_key(current)
    return value if smaller == lowest else current


def field_kind(schema: pa.Schema, column: str) -> ValueKind | None:
    """The kind of column ``column`` (``"a.b"`` for a struct field) of ``schema``; None when
    the schema lacks it or Hudi does not index its type."""
    t: pa.DataType | None = None
    for part in column.split("."):
        if t is None:
            index = schema.get_field_index(part)
            t = schema.field(index).type if index >= 0 else None
        elif pa.types.is_struct(t) and t.get_field_index(part) >= 0:
            t = t.field(t.get_field_index(part)).type
        else:
            return None
        if t is None:
            return None
    return kind_of(t) if t is not None else None


def log_file_ranges(
    storage: Storage,
    path: str,
    columns: Sequence[str],
    is_valid_instant: Callable[[str], bool],
) -> list[ColumnRange]:
    """The ranges of ``columns`` over the records of log file ``path``'s data blocks whose
    instant ``is_valid_instant`` accepts (after rollback command blocks), in ``columns`` order.

    Every column gets a range: with no records (deletes only) min/max are None, counts 0.

    Raises:
        CorruptTableError: a block does not decode (names the file).
        FileNotFoundError: the file does not exist.
    """
    data = storage.read(path)
    blocks = order_log_blocks(read_log_blocks(data, path, skip_corrupt=True), is_valid_instant)
    tables = [decode_data_block(b) for b in blocks if b.block_type in _DATA_BLOCKS]
    name = path.rsplit("/", 1)[-1]
    return [_log_range(tables, name, column) for column in columns]


def _log_range(tables: Sequence[pa.Table], name: str, column: str) -> ColumnRange:
    low: Any = None
    high: Any = None
    nulls = values = 0
    kind: ValueKind | None = None
    for table in tables:
        leaf = _leaf(table, column)
        values += table.num_rows
        if leaf is None:
            nulls += table.num_rows
            continue
        kind = kind or kind_of(leaf.type)
        nulls += leaf.null_count
        for value in leaf.drop_null().to_pylist():
            low = _lower(low, value, True)
            high = _lower(high, value, False)
    if kind is None:
        kind = NULL_KIND
    return ColumnRange(name, column, low, high, nulls, values, 0, 0, kind)


def _leaf(table: pa.Table, column: str) -> pa.ChunkedArray | None:
    head, *rest = column.split(".")
    if head not in table.column_names:
        return None
    array: Any = table.column(head)
    for part in rest:
        if not pa.types.is_struct(array.type) or array.type.get_field_index(part) < 0:
            return None
        array = pc.struct_field(array, part)
    return array if isinstance(array, pa.ChunkedArray) else pa.chunked_array([array])
