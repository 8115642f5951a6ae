"""Turning what users pass to writes into one Arrow table (shared by every format's writer)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from lakecore.errors import SchemaError


def to_arrow_table(data: Any) -> pa.Table:
    """Accept a pyarrow Table/RecordBatch/RecordBatchReader, a pandas DataFrame, anything with
    ``__arrow_c_stream__``, or a dict of columns; raises ``SchemaError`` for anything else."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    if type(data).__module__.startswith("pandas"):
        return pa.Table.from_pandas(data, preserve_index=False)
    if hasattr(data, "__arrow_c_stream__") or isinstance(data, dict):
        return pa.table(data)
    raise SchemaError(f"cannot write {type(data).__name__}: pass Arrow data or a DataFrame")
