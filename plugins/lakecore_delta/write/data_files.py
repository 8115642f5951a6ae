"""Writing data files: partition split, Parquet with physical names, stats, index rows."""

from __future__ import annotations

import io
import itertools
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakecore.model import files as fi
from lakecore.model.schema import field_id, physical_name
from lakecore.model.stats import FileStats, data_stats, stats_columns
from lakecore.storage import Storage
from lakecore_delta.conform import PARQUET_FIELD_ID
from lakecore_delta.schema import check_storable
from lakecore_delta.write.partition_out import partition_dirs
from lakecore_delta.write.stats_out import DELTA_STATS_RULES

DEFAULT_TARGET_FILE_SIZE = 128 << 20
_WRITERS = 4


@dataclass(frozen=True, slots=True)
class FileLayout:
    """How a table lays out data files."""

    schema: pa.Schema
    partition_columns: tuple[str, ...]
    column_mapping_mode: str = "none"
    target_file_size: int = DEFAULT_TARGET_FILE_SIZE
    prefix: str = ""
    """Directory under the table root for data files (e.g. ``_change_data`` for CDC files)."""

    def data_fields(self) -> list[pa.Field]:
        return [f for f in self.schema if f.name not in self.partition_columns]


def _physical_field(f: pa.Field, mode: str) -> pa.Field:
    t = f.type
    if pa.types.is_struct(t):
        t = pa.struct([_physical_field(t.field(i), mode) for i in range(t.num_fields)])
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        t = pa.list_(_physical_field(t.value_field, mode))
    elif pa.types.is_map(t):
        key = _physical_field(t.key_field, mode).with_nullable(False)  # Arrow keys are never null
        t = pa.map_(key, _physical_field(t.item_field, mode))
    meta = None
    fid = field_id(f)
    if mode != "none" and fid is not None:
        meta = {PARQUET_FIELD_ID: str(fid).encode()}
    name = physical_name(f) if mode != "none" else f.name
    # Every Parquet field is optional, like Delta Spark's ``schema.asNullable``: NOT NULL is
    # enforced on the way in (data_in), and a required child under a null parent is refused
    # by the Parquet writer.
    return pa.field(name, t, True, metadata=meta)


def _to_physical(table: pa.Table, fields: Sequence[pa.Field], mode: str) -> pa.Table:
    if mode == "none":
        return pa.Table.from_arrays(
            [table.column(f.name) for f in fields], names=[f.name for f in fields]
        )
    schema = pa.schema([_physical_field(f, mode).with_nullable(True) for f in fields])
    # Nested fields are renamed by a zero-copy view: the layout is the same. (Handing the
    # logical arrays to ``from_arrays(schema=...)`` would match struct children by name and
    # silently write nulls.)
    arrays = [
        pa.chunked_array([c.view(pf.type) for c in table.column(f.name).chunks], pf.type)
        for f, pf in zip(fields, schema, strict=True)
    ]
    return pa.Table.from_arrays(arrays, schema=schema)


def partition_slices(data: pa.Table, columns: Sequence[str]) -> tuple[pa.Table, list[pa.Table]]:
    """Split ``data`` by the values of ``columns``: the partitions' values (a table of the
    typed ``columns``, one row per partition) and each partition's rows, in the same order.

    Rows are grouped by integer codes (dictionary encoding per column, nulls their own code)
    and a stable argsort of the codes, which is much cheaper than sorting the values. The
    values stay Arrow: Python cannot hold every one (a date of year 0).
    """
    keys = data.select(list(columns))
    if not columns:
        return _no_columns(1), [data]
    if data.num_rows == 0:
        return keys, []
    codes = np.zeros(data.num_rows, dtype=np.int64)
    for c in columns:
        encoded = pc.dictionary_encode(data.column(c).combine_chunks(), null_encoding="encode")
        codes = codes * (len(encoded.dictionary) + 1) + encoded.indices.to_numpy(
            zero_copy_only=False
        ).astype(np.int64)
    order = np.argsort(codes, kind="stable")
    ordered = data.take(pa.array(order))
    sorted_codes = codes[order]
    starts = [*np.flatnonzero(np.diff(sorted_codes, prepend=-1)).tolist(), data.num_rows]
    slices = [ordered.slice(a, b - a) for a, b in itertools.pairwise(starts)]
    return ordered.select(list(columns)).take(pa.array(starts[:-1])), slices


def _no_columns(n: int) -> pa.Table:
    """A table of ``n`` rows and no columns."""
    return pa.table({"_": pa.nulls(n)}).select([])


def write_data_files(storage: Storage, layout: FileLayout, data: pa.Table) -> pa.Table:
    """Write ``data`` (already conformed to the schema) as Parquet files; return index rows.

    Rows in the write layout of ``lakecore.model.files``: ``path`` (relative, decoded),
    ``size``, ``record_count``, ``modification_time``, ``partition`` (typed struct), typed
    ``min``/``max``/``null_count`` of the data columns (``lakecore.model.stats`` under
    ``DELTA_STATS_RULES``; the log's ``stats`` JSON is rendered from them at commit).
    Nothing is committed.
    """
    for f in data.schema:
        check_storable(f.type, f.name)  # a SchemaError before any file, not the writer's OSError
    part_fields = [layout.schema.field(c) for c in layout.partition_columns]
    physical_parts = [
        physical_name(f) if layout.column_mapping_mode != "none" else f.name for f in part_fields
    ]
    data_fields = layout.data_fields()
    keys, slices = partition_slices(data, layout.partition_columns)
    # Rendered before any file is written: a value the log cannot spell raises first.
    directories = partition_dirs(keys, physical_parts) if physical_parts else [""] * len(slices)
    jobs = [
        (i, chunk)
        for i, part in enumerate(slices)
        for chunk in _file_chunks(part, layout.target_file_size)
    ]

    def write_one(job: tuple[int, pa.Table]) -> tuple[str, int, FileStats]:
        i, chunk = job
        directory = directories[i]
        name = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
        rel = "/".join(p for p in (layout.prefix, directory, name) if p)
        physical = _to_physical(chunk, data_fields, layout.column_mapping_mode)
        buf = io.BytesIO()
        pq.write_table(physical, buf, compression="snappy")
        payload = buf.getvalue()
        storage.put(rel, payload)
        return rel, len(payload), data_stats(chunk, data_fields, DELTA_STATS_RULES)

    # Parquet encoding releases the GIL: files are written in parallel.
    with ThreadPoolExecutor(_WRITERS) as pool:
        written = list(pool.map(write_one, jobs))
    now = int(time.time() * 1000)
    part_type = pa.struct([pa.field(f.name, f.type) for f in part_fields])
    columns: dict[str, pa.Array] = {
        fi.PATH: pa.array([w[0] for w in written], pa.string()),
        fi.SIZE: pa.array([w[1] for w in written], pa.int64()),
        fi.RECORD_COUNT: pa.array([chunk.num_rows for _, chunk in jobs], pa.int64()),
        fi.MODIFICATION_TIME: pa.array([now] * len(jobs), pa.int64()),
        fi.PARTITION: _partition_column(keys, [i for i, _ in jobs], part_type),
    }
    columns.update(stats_columns([w[2] for w in written], data_fields))
    return pa.table(columns)


def _partition_column(keys: pa.Table, rows: list[int], part_type: pa.StructType) -> pa.Array:
    """The typed ``partition`` struct of each file: row ``rows[j]`` of ``keys`` for file j."""
    if part_type.num_fields == 0:
        return pa.array([{}] * len(rows), part_type)
    taken = keys.take(pa.array(rows, pa.int64()))
    children = [
        taken.column(i).combine_chunks().cast(part_type.field(i).type)
        for i in range(part_type.num_fields)
    ]
    return pa.StructArray.from_arrays(children, fields=list(part_type))


def _file_chunks(part: pa.Table, target_size: int) -> list[pa.Table]:
    if part.num_rows == 0:
        return []
    per_row = max(1, part.nbytes // max(1, part.num_rows))
    rows_per_file = max(1, target_size // per_row)
    return [part.slice(i, rows_per_file) for i in range(0, part.num_rows, rows_per_file)]
