"""``lakecore.spark.read``: plan on the driver, ship file-index rows, read inside Spark tasks.

The driver plans the scan with lakecore (log replay, partition and stats pruning) and splits
the planned file-index rows (Arrow, stats columns left out) into a few chunks, balanced by
bytes. Each chunk becomes one row (the chunk's Arrow IPC stream bytes) of a small DataFrame
with one row per Spark partition; ``mapInArrow`` then runs ``lakecore.planning.read_files``
(the one read path ``Snapshot.to_arrow`` uses too) in the Python workers, which reopen the
storage from the pickled ``ScanContext``, apply the format's reader (column mapping,
partition values, merge-on-read), its deleted positions and the residual filter, and yield
Arrow batches in the schema Spark expects. Spark never lists or stats a data file.

Planned files lakecore adds nothing to (``lakecore.spark.native``: no deletion vector, no log
files, no mapping, no predicate, the table's own types in the footer) may instead be read by
Spark's own Parquet reader (``read(native=...)``, by default large files of local tables),
unioned with the task list's rows.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyspark
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as st

import lakecore
from lakecore.errors import UnsupportedFeatureError
from lakecore.expr import tree as ex
from lakecore.model import files as fi
from lakecore.planning import ScanContext, read_files
from lakecore.spark.native import native_frame, session_allows, split_native
from lakecore.spark.types import spark_arrow_schema, to_spark_schema

if TYPE_CHECKING:
    from lakecore.arguments import TimestampLike
    from lakecore.planning import Where
    from lakecore.planning.scan import Scan

TASKS_SCHEMA = st.StructType(
    [
        st.StructField("chunk", st.IntegerType(), nullable=False),
        st.StructField("files", st.BinaryType(), nullable=False),
    ]
)
"""The task DataFrame: one row per chunk, ``files`` an Arrow IPC stream of file-index rows."""


def read(
    spark: SparkSession,
    uri: str,
    where: Where | None = None,
    columns: Sequence[str] | None = None,
    version: int | str | None = None,
    timestamp: TimestampLike | None = None,
    storage_options: dict[str, Any] | None = None,
    *,
    partitions: int | None = None,
    native: bool | None = None,
) -> DataFrame:
    """Return the rows of the table at ``uri`` matching ``where`` as a Spark DataFrame.

    Planning (log replay, pruning) runs now, on the driver; the data is read lazily by Spark
    tasks through lakecore (see ``docs/spark.md``), so the DataFrame holds exactly the rows
    ``lakecore.open(uri).scan(where, columns, version, timestamp).to_arrow()`` returns:
    deletion vectors applied, column mapping and partition values resolved, the residual
    filter applied. Its schema is the table's logical schema (or ``columns`` of it, in that
    order), converted by ``lakecore.spark.types.to_spark_schema``.

    Args:
        spark: the session to build the DataFrame in (``lakecore.spark.session()`` makes one).
        uri: the table root (a local path or a URI every executor can reach).
        where: SQL text, a lakecore expression tree or a ``pyarrow.compute.Expression``.
        columns: top-level column names to return, in this order (all by default).
        version, timestamp: time travel (one of them at most), latest by default.
        storage_options: passed to the filesystem, here and in every executor.
        partitions: Spark partitions to spread the task list's files over (default: the
            session's default parallelism, at most one per file).
        native: which planned files Spark's own Parquet reader reads instead of the task
            list, when lakecore adds nothing to them (no deletion vector, log files, column
            mapping, predicate or type conversion: ``lakecore.spark.native`` checks each
            file's footer). None (default): files of at least ``NATIVE_MIN_BYTES`` of local
            tables; True: every such file, on any storage Spark itself can read (its URI as
            lakecore resolves it); False: none.

    Raises:
        TableNotFoundError, PredicateError, SchemaError, VersionNotFoundError: as
            ``Table.scan`` does, before any Spark job runs.
        SchemaError: a column's type has no Spark equivalent.
        UnsupportedFeatureError: the table is in process memory (``memory://``), which
            Spark's Python workers cannot see.

    Example:
        >>> import lakecore.spark
        >>> spark = lakecore.spark.session("local[2]")  # doctest: +SKIP
        >>> df = lakecore.spark.read(  # doctest: +SKIP
        ...     spark, "/data/events", where="region = 'eu'", columns=["id", "ts"]
        ... )
        >>> df.count()  # doctest: +SKIP
        1000
    """
    if partitions is not None and partitions < 1:
        raise ValueError("partitions must be at least 1")
    if str(uri).startswith("memory:"):
        raise UnsupportedFeatureError(
            "memory storage", f"{uri} lives in this process only; Spark workers cannot read it"
        )
    table = lakecore.open(uri, storage_options=storage_options)
    scan = table.scan(where, columns, version=version, timestamp=timestamp)
    schema = scan.snapshot.output_schema(scan.columns)
    spark_schema = to_spark_schema(schema)
    files = scan.reading_files()
    if files.num_rows == 0:
        return spark.createDataFrame([], spark_schema)
    split = split_native(scan, files, native if session_allows(spark) else False)
    if not split.groups:
        return task_list(spark, scan, files, spark_schema, partitions)
    frame = native_frame(spark, scan, split)
    if split.rest.num_rows == 0:
        return frame
    return frame.union(task_list(spark, scan, split.rest, spark_schema, partitions))


def task_list(
    spark: SparkSession,
    scan: Scan,
    files: pa.Table,
    spark_schema: st.StructType,
    partitions: int | None,
) -> DataFrame:
    """The rows of ``files`` (planned rows of ``scan``, at least one) read by lakecore inside
    Spark tasks: the task DataFrame ``mapInArrow``'d through ``read_chunks``."""
    context = scan.context
    parallelism = default_parallelism(spark)
    wanted = partitions or parallelism
    chunks = balanced_chunks(files.column(fi.SIZE), min(wanted, files.num_rows))
    task_frame = make_task_frame(spark, files, chunks, parallelism)
    names = None if scan.columns is None else list(scan.columns)
    reader = functools.partial(read_chunks, context, names, scan.predicate)
    return task_frame.mapInArrow(reader, spark_schema)


def default_parallelism(spark: SparkSession) -> int:
    """The session's default parallelism (``spark.default.parallelism`` without a context)."""
    try:
        return max(1, int(spark.sparkContext.defaultParallelism))
    except Exception:  # Spark Connect sessions have no SparkContext
        return max(1, int(spark.conf.get("spark.default.parallelism", "2") or 2))


def balanced_chunks(
    sizes: Sequence[int | None] | pa.Array | pa.ChunkedArray, n: int
) -> list[list[int]]:
    """Split row numbers ``0..len(sizes)-1`` into ``n`` non-empty chunks of about equal bytes.

    ``sizes`` are the rows' bytes (None counts as 0); ``n`` must be in ``1..len(sizes)``.
    Largest rows first, dealt in a snake order (0..n-1, n-1..0, ...); every row lands in
    exactly one chunk, and each chunk keeps the rows' planned (ascending) order. Vectorised:
    no Python work per row.
    """
    if isinstance(sizes, pa.ChunkedArray | pa.Array):
        values = np.asarray(pc.fill_null(sizes, 0).to_numpy(zero_copy_only=False), np.int64)
    else:
        values = np.array([s or 0 for s in sizes], dtype=np.int64)
    if not 1 <= n <= max(1, len(values)):
        raise ValueError(f"cannot split {len(values)} rows into {n} chunks")
    order = np.argsort(-values, kind="stable")
    lap, pos = np.divmod(np.arange(len(values)), n)
    chunk_of = np.empty(len(values), dtype=np.int64)
    chunk_of[order] = np.where(lap % 2 == 0, pos, n - 1 - pos)
    by_chunk = np.argsort(chunk_of, kind="stable")  # rows ascending within each chunk
    ends = np.cumsum(np.bincount(chunk_of, minlength=n))
    return [part.tolist() for part in np.split(by_chunk, ends[:-1])]


ARROW_TASK_FRAME = int(pyspark.__version__.split(".")[0]) >= 4
"""pyspark 4 builds a DataFrame from a ``pyarrow.Table`` (3.5 takes Python rows only)."""


def make_task_frame(
    spark: SparkSession, files: pa.Table, chunks: list[list[int]], parallelism: int
) -> DataFrame:
    """The task DataFrame (``TASKS_SCHEMA``): chunk ``i`` of ``files`` in row ``i``, one
    chunk per Spark partition (``parallelism`` = the session's default parallelism).

    Built from ``task_table`` where pyspark can (no Python worker produces the rows), from
    Python tuples on pyspark 3.5. A range repartition only for more chunks than
    ``parallelism``.
    """
    if ARROW_TASK_FRAME:
        frame = spark.createDataFrame(task_table(files, chunks), TASKS_SCHEMA)
    else:
        rows = [(i, to_ipc(files.take(pa.array(c, pa.int64())))) for i, c in enumerate(chunks)]
        # Python rows are sliced evenly into ``parallelism`` partitions.
        frame = spark.createDataFrame(rows, TASKS_SCHEMA)
        if len(chunks) < parallelism:
            frame = frame.coalesce(len(chunks))
    if len(chunks) > parallelism:
        frame = frame.repartitionByRange(len(chunks), "chunk")
    return frame


def task_table(files: pa.Table, chunks: Sequence[Sequence[int]]) -> pa.Table:
    """The task DataFrame's rows as Arrow: row ``i`` = chunk ``i``'s file-index rows as IPC.

    One record batch per chunk. Built from Arrow, the DataFrame is a local relation (or, past
    ``spark.sql.execution.arrow.localRelationThreshold``, an RDD of these batches, one per
    partition): no Python worker runs to produce the task rows, as it does for a DataFrame
    made from Python tuples. A local relation of ``n`` rows is sliced into
    ``min(n, default parallelism)`` partitions, so up to the default parallelism every chunk
    has a Spark partition (and task) of its own.
    """
    schema = pa.schema(
        [pa.field("chunk", pa.int32(), nullable=False), pa.field("files", pa.binary(), False)]
    )
    batches = [
        pa.record_batch(
            [pa.array([i], pa.int32()), pa.array([to_ipc(files.take(pa.array(c, pa.int64())))])],
            schema=schema,
        )
        for i, c in enumerate(chunks)
    ]
    return pa.Table.from_batches(batches, schema)


def to_ipc(files: pa.Table) -> bytes:
    """``files`` as Arrow IPC stream bytes (what one task row carries)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, files.schema) as writer:
        writer.write_table(files)
    return bytes(sink.getvalue())


def from_ipc(payload: bytes) -> pa.Table:
    """The file-index rows of one task row (inverse of ``to_ipc``)."""
    return pa.ipc.open_stream(payload).read_all()


def read_chunks(
    context: ScanContext,
    columns: list[str] | None,
    residual: ex.Predicate | None,
    batches: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` function: read the file-index chunks of ``batches`` (executor side).

    Yields the live rows matching ``residual`` as batches in the Arrow form Spark expects
    for the output schema, through ``lakecore.planning.read_files``.
    """
    output = (
        context.schema if columns is None else pa.schema([context.schema.field(c) for c in columns])
    )
    target = spark_arrow_schema(output)
    for batch in batches:
        for payload in batch.column("files").to_pylist():
            for rows in read_files(context, from_ipc(payload), columns, residual):
                yield conform_batch(rows, target)


def conform_batch(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """``batch`` with the exact column types of ``target`` (a no-op when they already match).

    Casts are safe (a value that does not fit raises), except that nanosecond timestamps and
    durations are truncated to microseconds.
    """
    if (
        all(f.type == t.type for f, t in zip(batch.schema, target, strict=True))
        and batch.schema.names == target.names
    ):
        return batch
    arrays = [_cast(batch.column(i), target.field(i).type) for i in range(batch.num_columns)]
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def _cast(array: pa.Array, to: pa.DataType) -> pa.Array:
    if isinstance(array, pa.ExtensionArray):
        array = array.storage
    if array.type == to:
        return array
    try:
        return array.cast(to, safe=True)
    except pa.ArrowInvalid:
        if not _has_nanoseconds(array.type):
            raise
        return array.cast(to, safe=False)


def _has_nanoseconds(t: pa.DataType) -> bool:
    if (pa.types.is_timestamp(t) or pa.types.is_duration(t)) and t.unit == "ns":
        return True
    return any(_has_nanoseconds(t.field(i).type) for i in range(getattr(t, "num_fields", 0)))
