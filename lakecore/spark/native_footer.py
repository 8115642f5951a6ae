"""Footer checks of ``lakecore.spark.native``: whether Spark's own Parquet reader gives
exactly lakecore's rows of one data file, judged from its footer alone.

Both readers must see the same columns with the same types: no conversion on either side
(``same_type``), timestamps Spark derives as pyarrow does, no INT96, codecs Spark ships, no
names that differ only in case, and no Spark 2 calendar marks (Spark would rebase such dates,
lakecore reads them as stored).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["fits", "same_type"]

_SPARK_CODECS = frozenset({"UNCOMPRESSED", "SNAPPY", "GZIP", "ZSTD"})
"""Compression codecs Spark reads everywhere (Brotli is not shipped; LZ4 is ambiguous between
Hadoop's framing and LZ4_RAW)."""
_LEGACY_CALENDAR = (b"org.apache.spark.legacyDateTime", b"org.apache.spark.legacyINT96")
_SPARK_VERSION = b"org.apache.spark.version"


def fits(meta: pq.FileMetaData, fields: Sequence[pa.Field]) -> bool:
    """Whether Spark's reader gives exactly lakecore's rows of a file with footer ``meta``
    for the table fields ``fields`` (unmapped data columns of the table's own types)."""
    kv = meta.metadata or {}
    if any(key in kv for key in _LEGACY_CALENDAR):
        return False
    # Spark rebases a file whose writer version compares below "3.0.0" as text ("3.0" does).
    version = kv.get(_SPARK_VERSION)
    if version is not None and version.decode("utf-8", "replace") < "3.0.0":
        return False
    if not _codecs_spark_reads(meta):
        return False
    schema = meta.schema
    if any(schema.column(i).physical_type == "INT96" for i in range(len(schema))):
        return False
    try:
        arrow = schema.to_arrow_schema()
    except pa.ArrowException:
        return False  # the task list will raise the typed error
    if not _timestamps_agree(schema, arrow):
        return False
    lowered = [n.lower() for n in arrow.names]
    if len(set(lowered)) != len(lowered):
        return False
    for f in fields:
        index = arrow.get_field_index(f.name)
        if index >= 0:
            if not same_type(arrow.field(index).type, f.type):
                return False
        elif f.name.lower() in lowered:
            return False  # lakecore matches the name in any case; Spark may not
    return True


def same_type(file_type: pa.DataType, table_type: pa.DataType) -> bool:
    """Whether a file column of ``file_type`` reads as ``table_type`` with no conversion,
    by lakecore and by Spark alike (nullability and child field names of lists and maps
    aside; struct children by name, in order)."""
    if pa.types.is_struct(file_type) or pa.types.is_struct(table_type):
        if not (pa.types.is_struct(file_type) and pa.types.is_struct(table_type)):
            return False
        a = [file_type.field(i) for i in range(file_type.num_fields)]
        b = [table_type.field(i) for i in range(table_type.num_fields)]
        return [f.name for f in a] == [f.name for f in b] and all(
            same_type(x.type, y.type) for x, y in zip(a, b, strict=True)
        )
    if pa.types.is_list(file_type) or pa.types.is_list(table_type):
        return (
            pa.types.is_list(file_type)
            and pa.types.is_list(table_type)
            and same_type(file_type.value_type, table_type.value_type)
        )
    if pa.types.is_map(file_type) or pa.types.is_map(table_type):
        return (
            pa.types.is_map(file_type)
            and pa.types.is_map(table_type)
            and same_type(file_type.key_type, table_type.key_type)
            and same_type(file_type.item_type, table_type.item_type)
        )
    return bool(file_type == table_type)


def _codecs_spark_reads(meta: pq.FileMetaData) -> bool:
    """Whether every column chunk is compressed with a codec Spark ships (``_SPARK_CODECS``)."""
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        if any(group.column(c).compression not in _SPARK_CODECS for c in range(group.num_columns)):
            return False
    return True


def _timestamps_agree(schema: pq.ParquetSchema, arrow: pa.Schema) -> bool:
    """Whether every timestamp column pyarrow derives (``ARROW:schema`` may override the
    Parquet types) is one Spark derives alike: a Parquet microsecond TIMESTAMP whose
    ``isAdjustedToUTC`` says whether it has a time zone."""
    leaves = [leaf for f in arrow for leaf in _leaves(f.type)]
    if len(leaves) != len(schema):
        return False
    for i, leaf in enumerate(leaves):
        logical = json.loads(schema.column(i).logical_type.to_json())
        if logical.get("Type") == "Timestamp" or pa.types.is_timestamp(leaf):
            if not pa.types.is_timestamp(leaf) or logical.get("Type") != "Timestamp":
                return False
            if leaf.unit != "us" or logical.get("timeUnit") != "microseconds":
                return False
            if bool(logical.get("isAdjustedToUTC")) != (leaf.tz is not None):
                return False
    return True


def _leaves(t: pa.DataType) -> list[pa.DataType]:
    """The primitive types of ``t`` in Parquet's column order."""
    if pa.types.is_struct(t):
        return [leaf for i in range(t.num_fields) for leaf in _leaves(t.field(i).type)]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _leaves(t.value_type)
    if pa.types.is_map(t):
        return _leaves(t.key_type) + _leaves(t.item_type)
    return [t]
