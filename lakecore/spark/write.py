"""``lakecore.spark.write``: the format writes the files inside Spark tasks, lakecore commits.

1. Gate before work: the mode and ``where``; a new table takes the DataFrame's schema (every
   field nullable) and ``format`` (default Delta); an existing one keeps its own format, and
   the DataFrame must have its columns by name and type.
2. The format plans the write on the driver (``FormatWriter.file_writer``): it gates what the
   operation cannot do (append-only tables, ``where`` that does not bind ...) and returns a
   picklable ``DataFileWriter`` (Hudi claims its instant now).
3. Spark tasks run that writer over the DataFrame's partitions (``mapInArrow``, see
   ``lakecore.spark.written``): each checks its rows as ``Table.append`` does (types, NOT
   NULL, CHECK constraints, ``where``) and writes the format's data files with their typed
   stats (``lakecore.model.stats``) and partition layout.
4. One commit through the normal transaction path: the format turns the written files into
   actions (``FormatWriter.add_files``: the new files, plus for ``overwrite`` the removal of
   every row, or of the rows matching ``where``).

A write that does not commit is discarded (``FormatWriter.discard``: Delta deletes the write's
directory, Hudi rolls its instant back), except when the commit's fate is unknown
(``CommitStateUnknownError``): then the files stay for vacuum/rollback.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import types as st

import lakecore
from lakecore.errors import (
    CommitStateUnknownError,
    InvalidArgumentError,
    SchemaError,
    TableExistsError,
    TableNotFoundError,
    UnsupportedFeatureError,
)
from lakecore.expr.evaluate import evaluate_predicate
from lakecore.format import Capability, FormatWriter, WritableFormat, require
from lakecore.format.writing import DataFileWriter
from lakecore.model.metrics import WriteMetrics, WriteResult
from lakecore.model.schema import is_ordered_scalar
from lakecore.plugins import load_registry
from lakecore.snapshot import Snapshot
from lakecore.spark.types import same_type, to_arrow_schema, to_spark_type
from lakecore.spark.written import write_files
from lakecore.storage import open_storage
from lakecore.table import Table

log = logging.getLogger(__name__)
DEFAULT_FORMAT = "delta"


@dataclass(frozen=True, slots=True)
class Target:
    """The table a write goes to, as far as the write must know it before writing."""

    schema: pa.Schema
    partition_columns: tuple[str, ...]
    table: Table | None
    """The existing table (None: to be created from ``schema``)."""


def write(
    df: DataFrame,
    uri: str,
    mode: Literal["append", "overwrite"] = "append",
    partition_by: Sequence[str] | None = None,
    where: str | None = None,
    storage_options: dict[str, Any] | None = None,
    *,
    format: str | None = None,
    properties: Mapping[str, str] | None = None,
) -> WriteResult:
    """Write ``df`` to the table at ``uri``; return the ``WriteResult`` (``.version``
    committed, files and rows written, as ``Table.append`` returns).

    The table's format writes the data files inside Spark tasks (each task writes its
    partition's rows, checked as ``Table.append`` checks them); lakecore commits them as one
    version, with the usual conflict checks and retries. A missing table is first created
    (version 0) as ``format`` (Delta by default) from the DataFrame's schema, every column
    nullable, partitioned by ``partition_by``, with ``properties`` (Hudi needs its
    ``record_key`` there); a first write then commits version 1 (Hudi: its instant time).
    Appending no rows commits nothing (``committed=False``, the current version).

    Args:
        df: the rows to write; its columns must be the table's, by name (any order) and type
            (Hudi's ``_hoodie_*`` meta columns are filled by the writer).
        uri: the table root; lakecore in the driver and in every executor must reach it.
        mode: ``"append"`` adds the rows; ``"overwrite"`` replaces every row, or with
            ``where`` only the rows matching it (every new row must then match ``where``).
        partition_by: partition columns of a new table; for an existing table, if given,
            they must be the table's.
        where: SQL predicate of the rows to replace (``mode="overwrite"`` only).
        storage_options: lakecore's filesystem options (they travel to the executors).
        format: the format of a new table (``"delta"``, ``"hudi"``); for an existing table,
            if given, it must be the table's.
        properties: table properties of a new table (ignored for an existing one).

    Raises:
        InvalidArgumentError: (a ``ValueError``) an unknown ``mode``, ``where`` without
            ``mode="overwrite"``, or a ``format`` that is not the existing table's.
        SchemaError: the columns or types differ from the table's, or a partition column is
            missing or of a type that cannot be a partition value.
        ConstraintViolationError: new rows break NOT NULL or CHECK constraints or do not
            match ``where``, or an overwrite on an append-only table; nothing is committed.
        UnsupportedFeatureError: a feature the format's writer cannot write, or a format
            lakecore cannot write.

    Example:
        >>> import lakecore, lakecore.spark
        >>> spark = lakecore.spark.session("local[2]")  # doctest: +SKIP
        >>> rows = [(1, "eu"), (2, "us")]
        >>> df = spark.createDataFrame(rows, "id long, region string")  # doctest: +SKIP
        >>> result = lakecore.spark.write(df, "/tmp/events")  # doctest: +SKIP
        >>> result.version, result.rows_inserted  # doctest: +SKIP
        (1, 2)
        >>> lakecore.open("/tmp/events").to_arrow().num_rows  # doctest: +SKIP
        2
    """
    if mode not in ("append", "overwrite"):
        raise InvalidArgumentError(f"mode must be 'append' or 'overwrite', not {mode!r}")
    if where is not None and mode != "overwrite":
        raise InvalidArgumentError("where= replaces matching rows: it needs mode='overwrite'")
    storage = open_storage(uri, storage_options)
    if storage.root.startswith("memory://"):
        raise UnsupportedFeatureError(
            "memory storage", f"Spark cannot write to {storage.root} (process memory)"
        )
    target = _target(df.schema, uri, storage_options, partition_by, format, mode)
    if target.table is None and where is not None:
        evaluate_predicate(where, target.schema.empty_table())  # parse and bind first
    table = target.table or _create(uri, storage_options, target, format, properties)
    tx = table.transaction()
    snapshot = tx.snapshot
    # Check again against the snapshot the commit builds on (another writer may have
    # changed the table since it was opened).
    _check_partitioning(snapshot, target.partition_columns)
    writer = _writable(table).writer(table.storage, snapshot)
    file_writer = writer.file_writer(mode, where)
    try:
        check_schema(df.schema, file_writer.schema)
        ordered = df.select(*[df[name] for name in file_writer.schema.names])
        files = write_files(ordered, file_writer)
        if mode == "append" and files.num_rows == 0:
            writer.discard(file_writer)
            return WriteResult.of(
                snapshot.version, "WRITE", WriteMetrics(), tx.elapsed(), committed=False
            )
        actions, info = writer.add_files(file_writer, files, mode, where)
        tx.stage(actions, info)
        return tx.commit()
    except CommitStateUnknownError:
        raise  # it may have landed: the files stay (vacuum or a rollback removes them)
    except BaseException:
        _discard(writer, file_writer)
        raise


def _discard(writer: FormatWriter, file_writer: DataFileWriter) -> None:
    try:
        writer.discard(file_writer)
    except Exception as exc:  # keep the write's own error
        log.warning("could not discard the files of a failed write: %s", exc)


def _target(
    schema: st.StructType,
    uri: str,
    storage_options: dict[str, Any] | None,
    partition_by: Sequence[str] | None,
    format: str | None,
    mode: str,
) -> Target:
    """The existing table (its format and partitioning checked), or the schema of a new one.

    The format's capabilities for ``mode`` are checked first (``_require_writable``): right
    after the table is found, before its snapshot is loaded; for a new table, those of the
    format it would be created as, before anything is created.
    """
    if isinstance(partition_by, str):
        raise TypeError("partition_by must be a sequence of column names, not one string")
    names = [f.name for f in schema.fields]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise SchemaError(f"the DataFrame has duplicate column(s) {duplicates}")
    try:
        table = lakecore.open(uri, storage_options=storage_options)
    except TableNotFoundError:
        new_format = load_registry().get(format or DEFAULT_FORMAT)
        _require_writable(new_format.name, new_format.capabilities, mode)
        arrow = _as_nullable(to_arrow_schema(schema))
        partitions = tuple(partition_by or ())
        _check_partition_columns(arrow, partitions)
        return Target(arrow, partitions, None)
    if format is not None and format != table.format:
        raise InvalidArgumentError(f"{uri} is a {table.format} table, not {format}")
    _require_writable(table.format, table.capabilities, mode)
    snapshot = table.snapshot()
    expected = snapshot.partition_columns if partition_by is None else tuple(partition_by)
    _check_partitioning(snapshot, expected)
    return Target(snapshot.schema, snapshot.partition_columns, table)


def _check_partitioning(snapshot: Snapshot, partition_by: Sequence[str]) -> None:
    """The table must be partitioned by ``partition_by``."""
    if tuple(partition_by) != snapshot.partition_columns:
        raise SchemaError(
            f"the table is partitioned by {list(snapshot.partition_columns)}, "
            f"not {list(partition_by)}"
        )


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
            f"column(s) {bad} cannot be partition columns "
            "(binary and nested types have no partition directory form)"
        )
    if len(columns) == len(schema):
        raise SchemaError("at least one column must not be a partition column")


def _require_writable(name: str, capabilities: frozenset[Capability], mode: str) -> None:
    """Raise ``UnsupportedFeatureError`` naming the capability unless the format declares
    what ``mode`` needs (``write``, and ``overwrite`` for an overwrite)."""
    require(name, capabilities, Capability.WRITE, "lakecore.spark.write")
    if mode == "overwrite":
        require(name, capabilities, Capability.OVERWRITE)


def _writable(table: Table) -> WritableFormat:
    """The table's own format object (``_require_writable`` has passed for it)."""
    return cast(WritableFormat, table._format)  # declaring ``write`` means implementing it


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


def _create(
    uri: str,
    storage_options: dict[str, Any] | None,
    target: Target,
    format: str | None,
    properties: Mapping[str, str] | None,
) -> Table:
    """Create the new table (or open the one another writer just created: checked later)."""
    try:
        return lakecore.create(
            uri,
            target.schema,
            format=format or DEFAULT_FORMAT,
            partition_by=target.partition_columns,
            properties=properties,
            storage_options=storage_options,
        )
    except TableExistsError:
        return lakecore.open(uri, storage_options=storage_options)
