"""The executor side of ``lakecore.spark.write``: run a format's ``DataFileWriter`` in Spark tasks.

``write_files(df, file_writer)`` runs one ``mapInArrow`` job over the DataFrame. Each Spark
task unpickles the format's ``DataFileWriter`` (it travels in the function's closure), collects
its partition's rows in groups of at most ``GROUP_BYTES`` of Arrow data, and hands each group
to ``file_writer.write(rows, task)``, which checks the rows and writes the format's data files.
The task returns one row per call: the pickled file-index rows (write layout) or, when the
format refused the rows, the pickled ``LakecoreError``, which the driver raises again as
itself (Spark would otherwise wrap it in its own error type).
"""

from __future__ import annotations

import functools
import pickle
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql import DataFrame
from pyspark.sql import types as st

from lakecore.errors import LakecoreError
from lakecore.format.writing import DataFileWriter

GROUP_BYTES = 128 << 20
"""A task hands its rows to the writer in groups of at most this many bytes of Arrow data (a
group is at least one batch), so a task never holds more than about this much at once."""
RESULT_SCHEMA = st.StructType([st.StructField("result", st.BinaryType(), nullable=False)])
_FILES = "files"
_ERROR = "error"


def write_files(df: DataFrame, file_writer: DataFileWriter) -> pa.Table:
    """Write the rows of ``df`` (columns in ``file_writer.schema``'s order) with
    ``file_writer`` in Spark tasks; return the written files' index rows.

    Raises the first ``LakecoreError`` a task reported (files other tasks wrote stay: the
    caller discards the write).
    """
    function = functools.partial(write_batches, pickle.dumps(file_writer))
    results = [
        pickle.loads(row["result"]) for row in df.mapInArrow(function, RESULT_SCHEMA).collect()
    ]
    errors = [value for kind, value in results if kind == _ERROR]
    if errors:
        raise errors[0]
    tables = [value for kind, value in results if kind == _FILES and value.num_rows]
    if not tables:
        return empty_files(results)
    return pa.concat_tables(tables)


def empty_files(results: list[tuple[str, Any]]) -> pa.Table:
    """No file was written: an empty table (typed like the writer's rows when there are any)."""
    tables = [value for kind, value in results if kind == _FILES]
    return tables[0].slice(0, 0) if tables else pa.table({"path": pa.array([], pa.string())})


def write_batches(
    pickled_writer: bytes, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` function (executor side): write this task's rows, yield results."""
    file_writer: DataFileWriter = pickle.loads(pickled_writer)
    context = TaskContext.get()
    task = context.partitionId() if context is not None else 0
    group: list[pa.RecordBatch] = []
    size = 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        group.append(batch)
        size += batch.nbytes
        if size >= GROUP_BYTES:
            yield _result(file_writer, group, task)
            group, size = [], 0
    if group:
        yield _result(file_writer, group, task)


def _result(file_writer: DataFileWriter, group: list[pa.RecordBatch], task: int) -> pa.RecordBatch:
    payload: tuple[str, Any]
    try:
        payload = (_FILES, file_writer.write(pa.Table.from_batches(group), task))
    except LakecoreError as exc:
        payload = (_ERROR, _picklable(exc))
    return pa.RecordBatch.from_pydict(
        {"result": [pickle.dumps(payload)]}, pa.schema([pa.field("result", pa.binary(), False)])
    )


def _picklable(exc: LakecoreError) -> LakecoreError:
    """``exc`` if it survives pickling, else a ``LakecoreError`` with its message."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # an error class whose arguments do not round-trip
        return LakecoreError(f"{type(exc).__name__}: {exc}")
    return exc
