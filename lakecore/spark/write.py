"""``lakecore.spark.write``: Spark writes the Parquet files, lakecore commits them.

1. Gate before work: the mode, the schema (a new table takes the DataFrame's, nullable; an
   existing one must match it by name and type), the partition columns, writer features.
2. Spark writes the DataFrame under a new directory ``spark-<uuid>/`` of the table root, with
   Hive partition directories below it and microsecond timestamps (confs set for the write
   and restored).
3. lakecore lists that directory, reads each file's footer (row count, null counts,
   min/max -> Delta stats) and its partition values from the directory names.
4. Checks that need the rows (NOT NULL and CHECK constraints of an existing table, or that
   every new row matches ``where``) read the new files back through lakecore.
5. One commit through the normal transaction path: the new files, plus for ``overwrite`` the
   removal of every file (or, with ``where``, the deletion of the matching rows).

Files of a write that does not commit are deleted again, except when the commit's fate is
unknown (``CommitStateUnknownError``): then they are left for vacuum.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import shutil
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import types as st

import lakecore
from lakecore.errors import (
    CommitConflictError,
    ConstraintViolationError,
    SchemaError,
    TableExistsError,
    TableNotFoundError,
    UnsupportedFeatureError,
)
from lakecore.expr.evaluate import evaluate_predicate
from lakecore.format import WritableFormat
from lakecore.model import files as fi
from lakecore.model.actions import Action, AddFiles, CommitInfo, RemoveFiles
from lakecore.model.schema import has_not_null_inside, is_ordered_scalar
from lakecore.planning import read_files
from lakecore.plugins import load_registry
from lakecore.snapshot import Snapshot
from lakecore.spark.session import temporary_conf
from lakecore.spark.types import same_type, to_arrow_schema, to_spark_type
from lakecore.spark.written import index_rows, list_output, session_zone
from lakecore.storage import Storage, open_storage
from lakecore.table import Table

log = logging.getLogger(__name__)

WRITE_CONFS: dict[str, str] = {
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.parquet.datetimeRebaseModeInWrite": "CORRECTED",
    "spark.sql.parquet.int96RebaseModeInWrite": "CORRECTED",
    "spark.sql.parquet.writeLegacyFormat": "false",
}
"""Session confs set while Spark writes (then restored): files pyarrow and delta-rs read as
they are (microsecond timestamps, proleptic Gregorian dates, standard decimals and lists)."""
WRITE_OPTIONS: dict[str, str] = {
    "compression": "snappy",
    "mapreduce.fileoutputcommitter.marksuccessfuljobs": "false",
}
APPEND_ONLY = "delta.appendOnly"
CHANGE_DATA_FEED = "delta.enableChangeDataFeed"
COLUMN_MAPPING = "delta.columnMapping.mode"


@dataclass(frozen=True, slots=True)
class Target:
    """The table a write goes to, as far as the write must know it before writing."""

    schema: pa.Schema
    partition_columns: tuple[str, ...]
    table: Table | None
    """The existing table (None: created after Spark wrote the files)."""
    snapshot: Snapshot | None
    """The existing table's snapshot the DataFrame was checked against."""


def write(
    df: DataFrame,
    uri: str,
    mode: Literal["append", "overwrite"] = "append",
    partition_by: Sequence[str] | None = None,
    where: str | None = None,
    storage_options: dict[str, Any] | None = None,
) -> int:
    """Write ``df`` to the Delta table at ``uri`` and return the committed version.

    Spark writes the data files (in parallel, under ``<uri>/spark-<uuid>/``); lakecore
    collects their statistics from the Parquet footers and commits them as one version, with
    the usual conflict checks and retries. A missing table is created (version 0) from the
    DataFrame's schema, every column nullable and partitioned by ``partition_by``, once Spark
    has written the files; a first write returns version 1. Appending no rows commits nothing
    and returns the current version.

    Args:
        df: the rows to write; its columns must be the table's, by name (any order) and type.
        uri: the table root; Spark and lakecore must both reach it (``s3://`` is handed to
            Spark as ``s3a://``).
        mode: ``"append"`` adds the rows; ``"overwrite"`` replaces every row, or with
            ``where`` only the rows matching it (every new row must then match ``where``).
        partition_by: partition columns of a new table; for an existing table, if given,
            they must be the table's.
        where: SQL predicate of the rows to replace (``mode="overwrite"`` only).
        storage_options: passed to lakecore's filesystem (Spark's comes from its own conf).

    Raises:
        ValueError: an unknown ``mode``, or ``where`` without ``mode="overwrite"``.
        SchemaError: the columns or types differ from the table's, or a partition column is
            missing or of a type that cannot be a partition value.
        ConstraintViolationError: new rows break NOT NULL or CHECK constraints or do not
            match ``where``, or an overwrite on an append-only table; nothing is committed.
        UnsupportedFeatureError: a feature this path cannot write (column mapping, change
            data feed with ``where``, generated or identity columns, non-Delta tables).

    Example:
        >>> import lakecore, lakecore.spark
        >>> spark = lakecore.spark.session("local[2]")  # doctest: +SKIP
        >>> rows = [(1, "eu"), (2, "us")]
        >>> df = spark.createDataFrame(rows, "id long, region string")  # doctest: +SKIP
        >>> lakecore.spark.write(df, "/tmp/events", partition_by=["region"])  # doctest: +SKIP
        1
        >>> lakecore.open("/tmp/events").to_arrow().num_rows  # doctest: +SKIP
        2
    """
    if mode not in ("append", "overwrite"):
        raise ValueError(f"mode must be 'append' or 'overwrite', not {mode!r}")
    if where is not None and mode != "overwrite":
        raise ValueError("where= replaces matching rows: it needs mode='overwrite'")
    storage = open_storage(uri, storage_options)
    if storage.root.startswith("memory://"):
        raise UnsupportedFeatureError(
            "memory storage", f"Spark cannot write to {storage.root} (process memory)"
        )
    target = _target(df.schema, uri, storage_options, partition_by)
    if target.table is not None and target.snapshot is not None:
        _gate_existing(target.table, target.snapshot, mode, where)
    elif where is not None:
        evaluate_predicate(where, target.schema.empty_table())  # parse and bind first
    directory = f"spark-{uuid.uuid4().hex}"
    committing = False
    try:
        files = _spark_write(df, storage, directory, target)
        table = target.table or _create(uri, storage_options, target)
        tx = table.transaction()
        # Check again against the snapshot the commit builds on (another writer may have
        # changed the table while Spark wrote).
        _check_target(df.schema, tx.snapshot, target.partition_columns)
        _gate_existing(table, tx.snapshot, mode, where)
        _check_rows(tx.snapshot, files, where)
        actions, info = _actions(table, tx.snapshot, files, mode, where)
        if not actions:
            return int(tx.snapshot.version)
        tx.stage(actions, info)
        committing = True
        return int(tx.commit())
    except CommitConflictError:
        _remove_dir(storage, directory)  # the commit did not land
        raise
    except BaseException:
        if not committing:  # else it may have landed: the files stay (vacuum removes them)
            _remove_dir(storage, directory)
        raise


def _target(
    schema: st.StructType,
    uri: str,
    storage_options: dict[str, Any] | None,
    partition_by: Sequence[str] | None,
) -> Target:
    """The existing table checked against the DataFrame, or the schema of a new one."""
    if isinstance(partition_by, str):
        raise TypeError("partition_by must be a sequence of column names, not one string")
    names = [f.name for f in schema.fields]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise SchemaError(f"the DataFrame has duplicate column(s) {duplicates}")
    try:
        table = lakecore.open(uri, storage_options=storage_options)
    except TableNotFoundError:
        arrow = _as_nullable(to_arrow_schema(schema))
        partitions = tuple(partition_by or ())
        _check_partition_columns(arrow, partitions)
        return Target(arrow, partitions, None, None)
    if table.format != "delta":
        raise UnsupportedFeatureError(
            "spark write", f"lakecore.spark.write writes Delta tables, not {table.format}"
        )
    snapshot = table.snapshot()
    expected = snapshot.partition_columns if partition_by is None else tuple(partition_by)
    _check_target(schema, snapshot, expected)
    _check_partition_columns(snapshot.schema, snapshot.partition_columns)
    return Target(snapshot.schema, snapshot.partition_columns, table, snapshot)


def _check_target(schema: st.StructType, snapshot: Snapshot, partition_by: Sequence[str]) -> None:
    """The table must be partitioned by ``partition_by`` and have the DataFrame's columns."""
    if tuple(partition_by) != snapshot.partition_columns:
        raise SchemaError(
            f"the table is partitioned by {list(snapshot.partition_columns)}, "
            f"not {list(partition_by)}"
        )
    check_schema(schema, snapshot.schema)


def check_schema(spark_schema: st.StructType, table_schema: pa.Schema) -> None:
    """Raise ``SchemaError`` unless the DataFrame has exactly the table's columns and types.

    Columns match by name (order may differ); types must be equal ignoring nullability.
    """
    given = {f.name: f.dataType for f in spark_schema.fields}
    missing = [n for n in table_schema.names if n not in given]
    extra = [n for n in given if table_schema.get_field_index(n) < 0]
    problems = []
    if missing:
        problems.append(f"missing column(s) {missing}")
    if extra:
        problems.append(f"column(s) {extra} not in the table")
    for f in table_schema:
        if f.name in given:
            expected = to_spark_type(f.type, f.name)
            if not same_type(given[f.name], expected):
                problems.append(
                    f"column {f.name!r} is {given[f.name].simpleString()}, "
                    f"the table has {expected.simpleString()}"
                )
    if problems:
        raise SchemaError("the DataFrame does not fit the table: " + "; ".join(problems))


def _partition_type_ok(t: pa.DataType) -> bool:
    return is_ordered_scalar(t) or pa.types.is_boolean(t)


def _check_partition_columns(schema: pa.Schema, columns: Sequence[str]) -> None:
    missing = [c for c in columns if schema.get_field_index(c) < 0]
    if missing:
        raise SchemaError(f"partition column(s) {missing} are not in the DataFrame")
    if len(set(columns)) != len(columns):
        raise SchemaError(f"partition columns {list(columns)} repeat a column")
    bad = [c for c in columns if not _partition_type_ok(schema.field(c).type)]
    if bad:
        raise SchemaError(
            f"column(s) {bad} cannot be written as Hive partition directories by Spark "
            "(binary and nested types are not supported)"
        )
    if len(columns) == len(schema):
        raise SchemaError("at least one column must not be a partition column")


def _gate_existing(table: Table, snapshot: Snapshot, mode: str, where: str | None) -> None:
    """Raise, before anything is written, for what this path cannot or must not write."""
    _writable(snapshot).writer(table.storage, snapshot)  # gates writer features and columns
    props = snapshot.properties
    if props.get(COLUMN_MAPPING, "none") != "none":
        raise UnsupportedFeatureError(
            "columnMapping",
            "lakecore.spark.write cannot write column-mapped tables yet (Spark would write "
            "logical names); use Table.append",
        )
    if mode == "overwrite" and props.get(APPEND_ONLY, "false").lower() == "true":
        raise ConstraintViolationError(
            f"the table is append-only ({APPEND_ONLY}=true): rows cannot be overwritten"
        )
    if where is not None:
        if props.get(CHANGE_DATA_FEED, "false").lower() == "true":
            raise UnsupportedFeatureError(
                "changeDataFeed",
                "overwrite with where= on a table with the change data feed needs change files "
                "for the new rows, which this path does not write; use Table.overwrite",
            )
        evaluate_predicate(where, snapshot.schema.empty_table())


def _writable(snapshot: Snapshot) -> WritableFormat:
    fmt = load_registry().get(snapshot.format)
    if not isinstance(fmt, WritableFormat):
        raise UnsupportedFeatureError("write", f"lakecore cannot write {snapshot.format} tables")
    return fmt


def _as_nullable(schema: pa.Schema) -> pa.Schema:
    """Every field nullable, at every depth (map keys stay non-null), like Delta Spark."""

    def relax(t: pa.DataType) -> pa.DataType:
        if pa.types.is_struct(t):
            return pa.struct([relax_field(t.field(i)) for i in range(t.num_fields)])
        if pa.types.is_list(t):
            return pa.list_(relax_field(t.value_field))
        if pa.types.is_map(t):
            return pa.map_(t.key_field.with_type(relax(t.key_type)), relax_field(t.item_field))
        return t

    def relax_field(f: pa.Field) -> pa.Field:
        return f.with_type(relax(f.type)).with_nullable(True)

    return pa.schema([relax_field(f) for f in schema])


def spark_path(root: str, directory: str) -> str:
    """Where Spark writes ``directory`` of the table at ``root`` (a Hadoop path)."""
    if "://" not in root:
        return "file://" + os.path.join(root, directory)
    if root.startswith("s3://"):
        root = "s3a://" + root[len("s3://") :]
    return f"{root}/{directory}"


def _spark_write(df: DataFrame, storage: Storage, directory: str, target: Target) -> pa.Table:
    """Let Spark write ``df`` below ``directory``; return the data files' index rows."""
    spark = df.sparkSession
    ordered = df.select(*[df[name] for name in target.schema.names])
    writer = ordered.write.mode("errorifexists").options(**WRITE_OPTIONS)
    if target.partition_columns:
        writer = writer.partitionBy(*target.partition_columns)
    with temporary_conf(spark, WRITE_CONFS):
        zone_name = spark.conf.get("spark.sql.session.timeZone") or "UTC"
        writer.parquet(spark_path(storage.root, directory))
    listing = list_output(storage, directory)
    for info in listing.other:
        storage.delete(info.path)
    has_timestamps = any(
        pa.types.is_timestamp(target.schema.field(c).type) for c in target.partition_columns
    )
    zone = session_zone(zone_name) if has_timestamps else dt.timezone.utc
    files = index_rows(
        storage, directory, listing.data, target.schema, target.partition_columns, zone
    )
    empty = pc.equal(files.column("record_count"), 0)
    for path in files.filter(empty).column("path").to_pylist():
        storage.delete(path)  # Spark writes a schema-only file for an empty DataFrame
    return files.filter(pc.invert(empty))


def _create(uri: str, storage_options: dict[str, Any] | None, target: Target) -> Table:
    """Create the new table (or open the one another writer just created: checked later)."""
    try:
        return lakecore.create(
            uri,
            target.schema,
            partition_by=target.partition_columns,
            storage_options=storage_options,
        )
    except TableExistsError:
        return lakecore.open(uri, storage_options=storage_options)


def _check_rows(snapshot: Snapshot, files: pa.Table, where: str | None) -> None:
    """Read the new files back and check NOT NULL, CHECK constraints and ``where``.

    Does nothing (reads nothing) when the table has none of them: the usual case.
    """
    from lakecore_delta.write.constraints import check_rows, table_constraints
    from lakecore_delta.write.data_in import conform_to_schema

    schema = snapshot.schema
    constraints = table_constraints(snapshot.properties, schema)
    not_null = any(not f.nullable or has_not_null_inside(f.type) for f in schema)
    if not constraints and not not_null and where is None:
        return
    context = snapshot.scan().context
    for i in range(files.num_rows):
        path = files.column(fi.PATH)[i].as_py()
        rows = pa.Table.from_batches(list(read_files(context, files.slice(i, 1))), schema=schema)
        if not_null:
            conform_to_schema(rows, schema)
        check_rows(rows, constraints)
        if where is not None:
            outside = pc.invert(pc.fill_null(evaluate_predicate(where, rows), False))
            count = pc.sum(outside).as_py() or 0
            if count:
                raise ConstraintViolationError(
                    f"{count} new row(s) do not match where={where!r} (file {path})"
                )


def _actions(
    table: Table, snapshot: Snapshot, files: pa.Table, mode: str, where: str | None
) -> tuple[list[Action], CommitInfo]:
    """The new files, and for an overwrite the removal of the rows it replaces."""
    partition_by = list(snapshot.partition_columns)
    actions: list[Action] = []
    if mode == "append":
        info = CommitInfo("WRITE", {"mode": "Append", "partitionBy": partition_by})
    elif where is None:
        actions.append(RemoveFiles(snapshot.files()))
        params = {"mode": "Overwrite", "partitionBy": partition_by}
        info = CommitInfo("WRITE", params, read_whole_table=True)
    else:
        deletes, _ = _writable(snapshot).writer(table.storage, snapshot).delete(where)
        actions.extend(deletes)
        params = {"mode": "Overwrite", "partitionBy": partition_by, "predicate": where}
        info = CommitInfo("WRITE", params, read_predicate=where)
    if files.num_rows:
        actions.append(AddFiles(files))
    return actions, info


def _remove_dir(storage: Storage, directory: str) -> None:
    """Delete what a failed write left below ``directory`` (best effort)."""
    try:
        if "://" not in storage.root:
            shutil.rmtree(os.path.join(storage.root, directory), ignore_errors=True)
            return
        for info in storage.list_all(directory):
            storage.delete(info.path)
    except OSError:
        log.warning("could not remove the files of a failed write in %s", directory)
