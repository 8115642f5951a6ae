"""Spark's own Parquet reader for planned files lakecore adds nothing to (``read(native=...)``).

A planned file whose rows are exactly its Parquet rows needs nothing from lakecore's reader:
no deletion vector, no log files to merge, no column mapping, no residual filter, and file
column types that are the table's own types. Spark's vectorised reader then produces the
same rows as the task list (``mapInArrow``) without handing Arrow batches from Python workers
to the JVM, which on a few large files costs about as much as the read itself
(``docs/spark.md``).

Exactness is decided per file, from facts lakecore has or reads on the driver, never
assumed:

- the snapshot says its files are plain (``TableFeatures.plain_data_files``), its data files
  are Parquet, no field of the table is mapped to another physical name or a field id, and
  every output field is nullable (Spark's file reader makes every field nullable);
- the scan has no predicate left to apply to rows (Spark's predicate semantics differ from
  lakecore's: NaN ordering, collations, ANSI casts);
- the file-index row has no ``deletion`` and no ``data_files``, and its path has no glob
  character and no name Spark's listing hides (``_x``, ``.x``);
- the file's footer (read on the driver, at most ``NATIVE_MAX_FILES`` of them) has, for every
  column read, either no column of that name in any case (both readers give nulls) or one of
  exactly the table's type, compared as lakecore reads it; no INT96 column; no two columns
  whose names differ only in case; and no mark of a legacy (Spark 2) calendar, which Spark
  would rebase and lakecore does not.

Partition values come from the file index, as the task list takes them: each group of files
with the same partition values is read by Spark and joined with a one-row Arrow relation of
those values (at most ``NATIVE_MAX_GROUPS`` groups; files of other groups stay with the task
list). Every other file is read by the task list, and the two DataFrames are unioned.
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakecore.errors import CorruptTableError
from lakecore.model import files as fi
from lakecore.model.footers import Footers
from lakecore.model.schema import FIELD_ID, PHYSICAL_NAME
from lakecore.spark.native_footer import fits
from lakecore.spark.types import to_spark_schema

if TYPE_CHECKING:
    from lakecore.planning.scan import Scan

NATIVE_MIN_BYTES = 4 * 1024 * 1024
"""With ``native=None`` (the default), only files of at least this many bytes go to Spark's
reader: below it the task list reads as fast or faster, and Spark's listing of each path
costs more than it saves (``docs/performance.md``, Spark hand-off)."""
NATIVE_MAX_FILES = 1000
"""At most this many files are checked for Spark's reader (one footer read each, on the
driver); with more candidates every file stays with the task list."""
NATIVE_MAX_GROUPS = 16
"""At most this many partition-value groups are read by Spark (one scan each, unioned); the
files of smaller groups beyond it stay with the task list."""
READ_OPTIONS = {
    # No rebasing: files without Spark 2's legacy marks are proleptic Gregorian, as lakecore
    # reads them (the default, EXCEPTION, fails on dates before 1582 in such files).
    "datetimeRebaseMode": "CORRECTED",
    "int96RebaseMode": "CORRECTED",
    # A file in the log must be read or fail the job, whatever the session's defaults.
    "ignoreMissingFiles": "false",
    "ignoreCorruptFiles": "false",
    # Filters a user applies later are pushed into the scan; Parquet statistics leave NaN out
    # (max 0.5 over [0.5, NaN]), so skipping row groups or pages by them would drop rows
    # Spark's own NaN ordering keeps. Spark still applies every filter to the rows.
    "parquet.filter.stats.enabled": "false",
    "parquet.filter.dictionary.enabled": "false",
    "parquet.filter.columnindex.enabled": "false",
    "parquet.filter.bloom.enabled": "false",
    # The row-by-row filter of the non-vectorised reader compares doubles with Java's
    # compareTo (-0.0 < 0.0), so 'x = 0.0' would drop -0.0 rows Spark's filter keeps.
    "parquet.filter.record-level.enabled": "false",
}
"""Options of every native read."""
_UNSAFE_PATH = r"[\[\]{}*?\\:]|(^|/)[._][^/]*$|\._COPYING_$"
"""Paths Spark would glob (``[``, ``{``, ``*``, ``?``, ``\\``), whose file name its listing
hides (a leading ``_`` or ``.``, a trailing ``._COPYING_``), or with a ``:`` (Hadoop's
checksum file system takes the name after it for a URI scheme)."""
_PLAIN_TYPES = (
    pa.bool_(),
    pa.int8(),
    pa.int16(),
    pa.int32(),
    pa.int64(),
    pa.float32(),
    pa.float64(),
    pa.string(),
    pa.binary(),
    pa.date32(),
)
"""Table types (besides microsecond timestamps and decimals) whose Parquet form Spark and
lakecore read into the same values; anything else (durations, unsigned, large or fixed-size
types, float16) stays with the task list, which converts it as ``to_spark_schema`` says."""


@dataclass(frozen=True)
class NativeSplit:
    """Which planned files Spark reads itself (``groups``) and which the task list reads."""

    groups: list[tuple[dict[str, Any], list[str]]]
    """Per group of equal partition values: the values and the files' full URIs."""
    rest: pa.Table
    """File-index rows left to the task list (in planned order)."""


def split_native(scan: Scan, files: pa.Table, native: bool | None) -> NativeSplit:
    """Split ``files`` (the scan's planned rows) into Spark-read groups and the rest.

    ``native``: False reads nothing natively; None (the default) takes local tables' files
    of at least ``NATIVE_MIN_BYTES``; True takes every file that qualifies, on any storage
    (Spark must then be able to read the table's URIs itself).

    Raises:
        CorruptTableError: a candidate file is missing or has no readable footer (as the
            task list would raise when reading it).
        StorageError: the store fails while a footer is read.
    """
    none = NativeSplit([], files)
    if native is False or not _scan_qualifies(scan, native):
        return none
    storage = scan.context.open_storage()
    mask = _plain_rows(files, 0 if native else NATIVE_MIN_BYTES)
    candidates = pc.indices_nonzero(mask).to_pylist()
    if not candidates or len(candidates) > NATIVE_MAX_FILES:
        return none
    fields = _data_fields(scan)
    if not fields:
        return none  # only partition values: nothing for a Parquet reader to do
    paths = files.column(fi.PATH).take(candidates).to_pylist()
    try:
        footers = Footers(storage).read_many(paths)
    except FileNotFoundError as exc:
        raise CorruptTableError(
            f"data file {exc.filename or ''} is in the table's log but missing from storage"
        ) from exc
    # A path listed twice (a damaged log) is read twice by lakecore; Spark may read it once.
    once = {p for p, n in collections.Counter(paths).items() if n == 1}
    kept = [
        i
        for i, path, meta in zip(candidates, paths, footers, strict=True)
        if path in once and fits(meta, fields)
    ]
    groups = _grouped(files, kept, scan.context.partition_columns)[:NATIVE_MAX_GROUPS]
    taken = sorted(i for _, rows in groups for i in rows)
    if not taken:
        return none
    out = [
        (values, [_uri(storage.resolve(files.column(fi.PATH)[i].as_py())) for i in rows])
        for values, rows in groups
    ]
    keep = np.ones(files.num_rows, dtype=bool)
    keep[taken] = False
    return NativeSplit(out, files.filter(pa.array(keep)))


def session_allows(spark: SparkSession) -> bool:
    """Whether ``spark``'s configuration keeps Spark's reader exact on plain files: not with
    Parquet aggregate push-down (DataSource V2 answers min/max/count from footer
    statistics, which leave NaN out and fail on columns a file lacks)."""
    try:
        pushdown = spark.conf.get("spark.sql.parquet.aggregatePushdown", "false")
    except Exception:  # a session that cannot say: assume the worst
        return False
    return str(pushdown).strip().lower() != "true"


def native_frame(spark: SparkSession, scan: Scan, groups: NativeSplit) -> DataFrame:
    """One DataFrame of every native group's rows in the scan's output schema.

    ``groups`` must come from ``split_native`` of the same scan with some group.
    """
    output = scan.snapshot.output_schema(scan.columns)
    partition = [f for f in output if f.name in scan.context.partition_columns]
    data = pa.schema(_data_fields(scan))
    reader = spark.read.schema(to_spark_schema(data)).options(**READ_OPTIONS)
    frames = []
    for values, uris in groups.groups:
        frame = reader.parquet(*uris)
        if partition:
            row = pa.table({f.name: pa.array([values.get(f.name)], f.type) for f in partition})
            part = spark.createDataFrame(row, to_spark_schema(pa.schema(partition)))
            frame = frame.crossJoin(F.broadcast(part))
        frames.append(frame.select(*[F.col(_quoted(name)) for name in output.names]))
    return functools.reduce(DataFrame.union, frames)


def _scan_qualifies(scan: Scan, native: bool | None) -> bool:
    """Whether any file of ``scan`` could go to Spark's reader (before looking at files)."""
    snapshot = scan.snapshot
    context = scan.context
    if not snapshot.features.plain_data_files or context.file_format != "parquet":
        return False
    if scan.predicate is not None:
        return False
    if native is None and "://" in context.table_uri and not context.table_uri.startswith("file:"):
        return False
    output = snapshot.output_schema(scan.columns)
    if not _apart_in_any_case(list(output)):
        return False  # Spark, case-insensitive by default, cannot select such columns apart
    return all(_plain_field(f) for f in context.schema) and all(_spark_nullable(f) for f in output)


def _apart_in_any_case(fields: list[pa.Field]) -> bool:
    """Whether no two fields (nor two children of any struct inside them) have names that
    differ only in case."""
    lowered = [f.name.lower() for f in fields]
    if len(set(lowered)) != len(lowered):
        return False
    return all(_children_apart(f.type) for f in fields)


def _children_apart(t: pa.DataType) -> bool:
    if pa.types.is_struct(t):
        return _apart_in_any_case(_children(t))
    return all(_children_apart(child.type) for child in _children(t, keys=True))


def _plain_field(f: pa.Field) -> bool:
    """No physical name or field id of its own (recursively), and of a type both readers
    take from Parquet alike (``_PLAIN_TYPES``, or a struct, list or map of them)."""
    meta = f.metadata or {}
    if PHYSICAL_NAME in meta or FIELD_ID in meta:
        return False
    t = f.type
    nested = pa.types.is_struct(t) or pa.types.is_list(t) or pa.types.is_map(t)
    if not nested and not _plain_type(t):
        return False
    return all(_plain_field(child) for child in _children(t, keys=True))


def _plain_type(t: pa.DataType) -> bool:
    if pa.types.is_timestamp(t):
        return bool(t.unit == "us" and t.tz in (None, "UTC"))
    if pa.types.is_decimal128(t):
        return True
    return any(t == plain for plain in _PLAIN_TYPES)


def _spark_nullable(f: pa.Field) -> bool:
    """Nullable all the way down, as Spark's file reader makes every field."""
    return f.nullable and all(_spark_nullable(child) for child in _children(f.type))


def _children(t: pa.DataType, keys: bool = False) -> list[pa.Field]:
    """Child fields of a nested type (a map's key field only with ``keys``: never null)."""
    if pa.types.is_struct(t):
        return [t.field(i) for i in range(t.num_fields)]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [t.value_field]
    if pa.types.is_map(t):
        return [t.key_field, t.item_field] if keys else [t.item_field]
    return []


def _data_fields(scan: Scan) -> list[pa.Field]:
    """The output fields read from data files (partition columns come from the index)."""
    output = scan.snapshot.output_schema(scan.columns)
    return [f for f in output if f.name not in scan.context.partition_columns]


def _plain_rows(files: pa.Table, min_bytes: int) -> pa.ChunkedArray:
    """Rows with no deletion and no other data file, of at least ``min_bytes``, whose path
    Spark takes literally."""
    names = files.column_names
    mask = pc.fill_null(pc.greater_equal(files.column(fi.SIZE), min_bytes), False)
    if fi.DELETION in names:
        mask = pc.and_(mask, pc.is_null(files.column(fi.DELETION)))
    if fi.DATA_FILES in names:
        others = pc.fill_null(pc.list_value_length(files.column(fi.DATA_FILES)), 0)
        mask = pc.and_(mask, pc.equal(others, 0))
    unsafe = pc.match_substring_regex(files.column(fi.PATH), _UNSAFE_PATH)
    return pc.and_(mask, pc.invert(unsafe))


def _grouped(
    files: pa.Table, rows: list[int], partition_columns: Sequence[str]
) -> list[tuple[dict[str, Any], list[int]]]:
    """``rows`` grouped by partition values, largest groups (by bytes) first."""
    if not rows:
        return []
    if not partition_columns:
        return [({}, rows)]
    try:
        values = files.column(fi.PARTITION).take(rows).to_pylist()
    except (OverflowError, ValueError, pa.ArrowException):
        return []  # a value Python cannot hold (a date of year 0): the task list reads it
    sizes = files.column(fi.SIZE).take(rows).to_pylist()
    groups: dict[tuple[Any, ...], tuple[dict[str, Any], list[int], list[int]]] = {}
    for row, value, size in zip(rows, values, sizes, strict=True):
        value = value or {}
        key = tuple(repr(value.get(c)) for c in partition_columns)
        entry = groups.setdefault(key, (value, [], [0]))
        entry[1].append(row)
        entry[2][0] += size or 0
    ordered = sorted(groups.values(), key=lambda g: -g[2][0])
    return [(value, members) for value, members, _ in ordered]


def _quoted(name: str) -> str:
    """``name`` as a Spark column reference (a dot or backtick in it is not a path)."""
    return "`" + name.replace("`", "``") + "`"


def _uri(location: str) -> str:
    """The URI Spark reads for a resolved storage location (a local path becomes ``file:``)."""
    if "://" in location:
        return location
    if not location.startswith("/"):
        raise CorruptTableError(f"data file {location} does not resolve to an absolute path")
    return "file://" + location
