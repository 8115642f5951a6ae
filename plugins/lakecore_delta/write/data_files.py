"""Writing data files: partition split, Parquet with physical names, stats, index rows."""

from __future__ import annotations

import io
import itertools
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakecore.model.schema import field_id, physical_name
from lakecore.storage import Storage
from lakecore_delta.conform import PARQUET_FIELD_ID
from lakecore_delta.write.partition_out import partition_dir
from lakecore_delta.write.stats_out import stats_json

DEFAULT_TARGET_FILE_SIZE = 128 << 20


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


def partition_slices(data: pa.Table, columns: Sequence[str]) -> list[tuple[list[object], pa.Table]]:
    """Split ``data`` by the values of ``columns``: (values, rows) per partition."""
    if not columns:
        return [([], data)]
    if data.num_rows == 0:
        return []
    ordered = data.sort_by([(c, "ascending") for c in columns])
    keys = ordered.select(list(columns))
    change = np.zeros(ordered.num_rows, dtype=bool)
    change[0] = True
    for c in columns:
        col = keys.column(c).combine_chunks()
        same = pc.fill_null(pc.equal(col[1:], col[:-1]), False)
        both_null = pc.and_(pc.is_null(col[1:]), pc.is_null(col[:-1]))
        differs = pc.invert(pc.or_(same, both_null)).to_numpy(zero_copy_only=False)
        change[1:] |= differs
    starts = [*np.flatnonzero(change).tolist(), ordered.num_rows]
    out = []
    for a, b in itertools.pairwise(starts):
        values = [keys.column(c)[a].as_py() for c in columns]
        out.append((values, ordered.slice(a, b - a)))
    return out


def write_data_files(storage: Storage, layout: FileLayout, data: pa.Table) -> pa.Table:
    """Write ``data`` (already conformed to the schema) as Parquet files; return index rows.

    Rows: ``path`` (relative, decoded), ``size``, ``record_count``, ``modification_time``,
    ``partition`` (typed struct), ``stats`` (Delta stats JSON). Nothing is committed.
    """
    part_fields = [layout.schema.field(c) for c in layout.partition_columns]
    physical_parts = [
        physical_name(f) if layout.column_mapping_mode != "none" else f.name for f in part_fields
    ]
    data_fields = layout.data_fields()
    rows: dict[str, list[object]] = {
        "path": [],
        "size": [],
        "record_count": [],
        "modification_time": [],
        "partition": [],
        "stats": [],
    }
    for values, part in partition_slices(data, layout.partition_columns):
        directory = partition_dir(physical_parts, values) if physical_parts else ""
        for chunk in _file_chunks(part, layout.target_file_size):
            name = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
            rel = "/".join(p for p in (layout.prefix, directory, name) if p)
            physical = _to_physical(chunk, data_fields, layout.column_mapping_mode)
            buf = io.BytesIO()
            pq.write_table(physical, buf, compression="snappy")
            payload = buf.getvalue()
            storage.put(rel, payload)
            rows["path"].append(rel)
            rows["size"].append(len(payload))
            rows["record_count"].append(chunk.num_rows)
            rows["modification_time"].append(int(time.time() * 1000))
            rows["partition"].append(dict(zip(layout.partition_columns, values, strict=True)))
            rows["stats"].append(stats_json(chunk, data_fields))
    part_type = pa.struct([pa.field(f.name, f.type) for f in part_fields])
    return pa.table(
        {
            "path": pa.array(rows["path"], pa.string()),
            "size": pa.array(rows["size"], pa.int64()),
            "record_count": pa.array(rows["record_count"], pa.int64()),
            "modification_time": pa.array(rows["modification_time"], pa.int64()),
            "partition": pa.array(rows["partition"], part_type),
            "stats": pa.array(rows["stats"], pa.string()),
        }
    )


def _file_chunks(part: pa.Table, target_size: int) -> list[pa.Table]:
    if part.num_rows == 0:
        return []
    per_row = max(1, part.nbytes // max(1, part.num_rows))
    rows_per_file = max(1, target_size // per_row)
    return [part.slice(i, rows_per_file) for i in range(0, part.num_rows, rows_per_file)]
