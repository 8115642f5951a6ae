"""The file index of a Hudi snapshot: one row per file slice (layout in lakecore.model.files).

``path`` is the slice's base file (its first log file for a log-only slice), ``log_files`` its
log files in merge order. Column statistics come from the metadata table's ``column_stats``
when the table has one, else from the base files' Parquet footers; a slice with log files gets
no statistics (its log records are not covered by the base file's), so the planner keeps it.
"""

from __future__ import annotations

import pyarrow as pa

from lakecore.model import files as fi
from lakecore.storage import Storage
from lakecore_hudi.partitions import partition_struct, prunable_partition_columns
from lakecore_hudi.state import HudiState


def build_file_index(storage: Storage, state: HudiState) -> pa.Table:
    """Return the file index of ``state``'s latest file slices."""
    slices = state.slices
    read_optimized = state.options.read_optimized
    if read_optimized:
        slices = tuple(s for s in slices if s.base_file is not None)
    paths = [s.path for s in slices]
    sizes = [s.base_file.size if s.base_file is not None else None for s in slices]
    mtimes = [
        (s.base_file or s.log_files[0]).modification_time if (s.base_file or s.log_files) else None
        for s in slices
    ]
    logs = [[] if read_optimized else [f.path for f in s.log_files] for s in slices]
    columns: dict[str, pa.Array] = {
        fi.PATH: pa.array(paths, pa.string()),
        fi.SIZE: pa.array(sizes, pa.int64()),
        fi.RECORD_COUNT: pa.nulls(len(slices), pa.int64()),
        fi.MODIFICATION_TIME: pa.array(mtimes, pa.int64()),
    }
    part_columns = prunable_partition_columns(state.config, state.table_schema)
    parts = partition_struct(
        [s.partition_path for s in slices], part_columns, state.table_schema, state.config
    )
    if parts is not None:
        columns[fi.PARTITION] = parts
    columns[fi.LOG_FILES] = pa.array(logs, pa.list_(pa.string()))
    return pa.table(columns)
