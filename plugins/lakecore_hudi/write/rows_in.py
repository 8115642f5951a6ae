"""User data going into a Hudi table: Arrow conversion, schema fit, keys and partition paths.

Record keys render as Hudi's key generators do: one key field (SIMPLE, NON_PARTITION) -> its
value as text; several fields or the COMPLEX generator -> ``field1:value1,field2:value2``.
A null or empty key value is refused (Hudi's generators refuse them too). Keyless tables get
their keys when the records are written (``files_out.new_records``). Partition paths join
one segment per partition column with ``/``: ``value`` or, with hive-style partitioning,
``column=value``; a null or empty value becomes ``__HIVE_DEFAULT_PARTITION__``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import ConstraintViolationError, SchemaError
from lakecore.model.data_input import cast_lossless
from lakecore.model.distinct_values import map_distinct, repeated
from lakecore.model.partition_paths import HIVE_NULL as DEFAULT_PARTITION
from lakecore.model.partition_paths import escape_path_name
from lakecore_hudi.keys import META_FIELDS, key_texts
from lakecore_hudi.write import timestamp_keys
from lakecore_hudi.write.layout import WriteLayout

KEY = "__lakecore_key"
PARTITION = "__lakecore_partition"


def conform(data: pa.Table, schema: pa.Schema) -> pa.Table:
    """Return ``data`` with exactly ``schema``'s columns and types.

    ``_hoodie_*`` meta columns in ``data`` (rows read from a Hudi table) are ignored; missing
    nullable columns become null.

    Raises:
        SchemaError: duplicate or unknown columns, or values that do not convert losslessly
            (``is_lossless_cast``: no text to numbers, no booleans to integers, no overflow).
        ConstraintViolationError: a NOT NULL column is missing or holds nulls.
    """
    data = data.drop_columns([c for c in data.column_names if c in META_FIELDS])
    names = data.column_names
    duplicates = repeated(names)
    if duplicates:
        raise SchemaError(f"column(s) {duplicates} appear more than once in the data")
    unknown = [c for c in names if schema.get_field_index(c) < 0]
    if unknown:
        raise SchemaError(f"column(s) {unknown} are not in the table schema {schema.names}")
    columns = []
    for field in schema:
        if field.name not in names:
            if not field.nullable:
                raise ConstraintViolationError(f"NOT NULL column {field.name!r} is missing")
            columns.append(pa.chunked_array([pa.nulls(data.num_rows, field.type)]))
            continue
        column = cast_lossless(data.column(field.name), field.type, field.name)
        if not field.nullable and column.null_count:
            raise ConstraintViolationError(
                f"NOT NULL column {field.name!r} has {column.null_count} null value(s)"
            )
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=schema)


def record_keys(rows: pa.Table, layout: WriteLayout) -> pa.ChunkedArray:
    """The ``_hoodie_record_key`` of each row; nulls for a keyless table (the keys are
    generated when the records are written: ``files_out.new_records``).

    Raises:
        SchemaError: a key column is missing.
        ConstraintViolationError: a key value is null or empty.
    """
    fields = layout.key_fields
    if layout.keyless:
        return pa.chunked_array([pa.nulls(rows.num_rows, pa.string())])
    missing = [f for f in fields if f not in rows.column_names]
    if missing:
        raise SchemaError(f"record key column(s) {missing} are missing from the data")
    if rows.num_rows == 0:
        return pa.chunked_array([], pa.string())
    parts: list[pa.ChunkedArray] = []
    for name in fields:
        text = key_texts(rows.column(name))
        bad = int(pc.sum(pc.fill_null(pc.equal(text, ""), True).cast(pa.int64())).as_py() or 0)
        if bad:
            raise ConstraintViolationError(
                f"record key column {name!r} has {bad} null or empty value(s); Hudi needs a key"
            )
        parts.append(text)
    if not layout.complex_keys:
        return parts[0]
    pieces: list[Any] = []
    for i, (name, text) in enumerate(zip(fields, parts, strict=True)):
        pieces += [f"{',' if i else ''}{name}:", text]
    return _join(pieces, rows.num_rows)


def partition_paths(rows: pa.Table, layout: WriteLayout) -> pa.ChunkedArray:
    """The partition path of each row ("" for a non-partitioned table).

    With the TIMESTAMP key generator the path is the first field's value formatted as a date,
    and so is the segment of each ``field:TIMESTAMP`` field of the CUSTOM key generator
    (``timestamp_keys``).

    Raises:
        UnsupportedFeatureError: timestamp key settings lakecore cannot apply, or a CUSTOM
            key generator without recorded partition field types.
        ConstraintViolationError: a value holds ``/`` (it would add a directory level; with
            ``hoodie.datasource.write.partitionpath.urlencode`` values are escaped as Hudi
            escapes them, ``/`` included), or is ``.`` or ``..`` without hive-style
            partitioning (it would leave its partition).
    """
    fields = layout.partition_fields
    if not fields:
        return pa.chunked_array([pa.array([""] * rows.num_rows, pa.string())])
    if layout.config.keygen_type == "TIMESTAMP":  # one field, formatted as a date
        fields = fields[:1]
    dated = timestamp_keys.timestamp_fields(layout.config)
    if rows.num_rows == 0:
        return pa.chunked_array([], pa.string())
    pieces: list[Any] = []
    for i, name in enumerate(fields):
        if name in dated:  # its segment (hive prefix included) is a formatted date
            path = timestamp_keys.partition_paths(rows.column(name), name, layout.config)
            pieces += ["/", path] if i else [path]
            continue
        hive = layout.config.hive_style_partitioning
        text = path_segments(name, rows.column(name), layout.config.url_encode_partitions, hive)
        prefix = ("/" if i else "") + (f"{name}=" if hive else "")
        pieces += [prefix, text] if prefix else [text]
    return _join(pieces, rows.num_rows)


def path_segments(
    name: str, column: pa.ChunkedArray, url_encode: bool, hive: bool
) -> pa.ChunkedArray:
    """The partition path segment of each value of partition column ``name`` (without the
    hive-style ``name=`` prefix): rendered as Hudi renders it, escaped when ``url_encode``,
    the default partition for null and "".

    Raises:
        SchemaError: a column type that cannot be a partition column.
        ConstraintViolationError: a value holds ``/`` (it would add a directory level), or is
            ``.`` or ``..`` without hive-style partitioning (it would leave its partition).
    """
    text = key_texts(column)
    if url_encode:
        text = escape_path_names(text)
    text = pc.fill_null(pc.if_else(pc.equal(text, ""), DEFAULT_PARTITION, text), DEFAULT_PARTITION)
    if pc.any(pc.match_substring(text, "/")).as_py():
        raise ConstraintViolationError(
            f"partition column {name!r} has a value containing '/', which would add a "
            "directory level to the partition path; URL-encoded partition paths hold it "
            "(url_encode_partitions=true, Hudi's hoodie.datasource.write.partitionpath.urlencode)"
        )
    if not hive and pc.any(pc.is_in(text, value_set=pa.array([".", ".."]))).as_py():
        # As a path segment, '..' leads out of the table (Hudi refuses it too) and '.'
        # names the partition above.
        raise ConstraintViolationError(
            f"partition column {name!r} has the value '.' or '..', which as a partition "
            "path segment names a directory outside its partition"
        )
    return text


def escape_path_names(text: pa.ChunkedArray) -> pa.ChunkedArray:
    """Every value URL-encoded as Hudi's ``PartitionPathEncodeUtils.escapePathName`` does,
    which is Hive's escaping (``lakecore.model.partition_paths.escape_path_name``); nulls stay
    null; computed once per distinct value: partition values repeat."""
    return map_distinct(
        text, lambda d: pa.array([escape_path_name(v) for v in d.to_pylist()], pa.string())
    )


def _join(pieces: list[Any], n: int) -> pa.ChunkedArray:
    arrays = [
        pa.array(np.full(n, p, dtype=object), pa.string())
        if isinstance(p, str)
        else p.combine_chunks()
        for p in pieces
    ]
    if len(arrays) == 1:
        return pa.chunked_array([arrays[0]])
    return pa.chunked_array([pc.binary_join_element_wise(*arrays, "")])


def keyed(rows: pa.Table, layout: WriteLayout) -> pa.Table:
    """``rows`` plus their record key (``KEY``) and partition path (``PARTITION``) columns."""
    return rows.append_column(KEY, record_keys(rows, layout)).append_column(
        PARTITION, partition_paths(rows, layout)
    )


def dedupe(rows: pa.Table, layout: WriteLayout) -> pa.Table:
    """Keep one row per record key (``rows`` must be ``keyed``): the one with the greatest
    precombine value, the later one on ties or without a precombine field (as Hudi's
    ``DefaultHoodieRecordPayload`` combines a batch before writing)."""
    if rows.num_rows <= 1:
        return rows
    position = pa.array(np.arange(rows.num_rows, dtype=np.int64))
    # Nulls first: a null precombine value loses to any value (as the readers merge).
    order = [(KEY, "ascending", "at_start")]
    if layout.precombine_field and layout.config.record_merge_mode == "EVENT_TIME_ORDERING":
        order.append((layout.precombine_field, "ascending", "at_start"))
    table = rows.append_column("__pos", position)
    order.append(("__pos", "ascending", "at_start"))
    sorted_idx = pc.sort_indices(table, sort_keys=order)
    keys = table.column(KEY).take(sorted_idx).combine_chunks()
    n = len(keys)
    last = np.ones(n, dtype=bool)
    if n > 1:
        last[:-1] = pc.not_equal(keys.slice(0, n - 1), keys.slice(1)).to_numpy(zero_copy_only=False)
    chosen = np.sort(sorted_idx.to_numpy()[last])
    return rows.take(pa.array(chosen))
