"""lakecore: one Python interface over Delta Lake, Apache Hudi and Lance tables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import pyarrow as pa

from lakecore.arguments import (
    check_location,
    check_mapping,
    check_number,
    check_properties,
    check_schema_names,
)
from lakecore.boundary import public_function
from lakecore.detect import check_format, detect_format, reachable
from lakecore.errors import (
    AmbiguousFormatError,
    ArgumentTypeError,
    CommitConflictError,
    CommitError,
    CommitStateUnknownError,
    CommitStorageError,
    ConstraintViolationError,
    CorruptTableError,
    FormatDetectionError,
    InvalidArgumentError,
    LakecoreError,
    MergeConflictError,
    MigrationError,
    PluginNotInstalledError,
    PredicateError,
    SchemaError,
    StorageError,
    TableExistsError,
    TableNotFoundError,
    UnknownFormatError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from lakecore.format import Capability, WritableFormat, require
from lakecore.model.history import HistoryEntry
from lakecore.model.metrics import WriteMetrics, WriteResult
from lakecore.plugins import load_registry
from lakecore.snapshot import Snapshot
from lakecore.storage import Storage, open_storage
from lakecore.table import Table

__version__ = "0.1.0"


@public_function("lakecore.open")
def open(
    uri: str,
    format: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
    options: Mapping[str, str] | None = None,
    storage: Storage | None = None,
) -> Table:
    """Open the table at ``uri``, detecting its format unless ``format`` is given.

    Args:
        uri: a local path, ``file://``, ``memory://`` or ``s3://`` location of the table root.
        format: ``"delta"``, ``"hudi"`` or ``"lance"`` to skip detection.
        storage_options: passed to the filesystem (e.g. S3 ``endpoint_url``, ``key``).
        options: the format's reading options (Hudi: ``read_optimized``, ``drop_meta_fields``;
            see docs/formats), checked here: one the format does not know or cannot take
            raises ``InvalidArgumentError`` before any read.
        storage: a ready ``Storage`` rooted at the table to read and write through, instead of
            one opened from ``uri`` and ``storage_options`` (which must then be None), e.g. a
            wrapper that caches, meters or injects faults (``lakecore.testing.faults``).

    Raises:
        TableNotFoundError: nothing is at ``uri``.
        UnknownFormatError: no installed format recognises it.
        AmbiguousFormatError: several formats recognise it (the error lists them).
        PluginNotInstalledError: ``format`` names a plugin that is missing or disabled.
        UnsupportedFeatureError: the URI's scheme is unknown, or its filesystem package is
            not installed.
        StorageError: the storage cannot be reached or read (names the location).
        InvalidArgumentError: ``options`` names an option the format does not know, or a
            value it cannot take.

    Example:
        >>> import lakecore
        >>> table = lakecore.open("/data/events")  # doctest: +SKIP
        >>> table.format, table.version  # doctest: +SKIP
        ('delta', 12)
        >>> table.to_arrow(columns=["id"]).num_rows  # doctest: +SKIP
        1000
    """
    registry = load_registry()
    storage = _storage_for(uri, storage_options, storage)
    options = check_mapping("options", options)
    if format is not None:
        fmt = registry.get(format)
        check_format(storage, fmt)
    else:
        fmt = detect_format(storage, registry)
    if options:
        fmt.check_options(options)  # a misspelt option fails here, not at the first read
    return Table(uri, storage, fmt, options)


@public_function("lakecore.is_table")
def is_table(
    uri: str,
    format: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
    storage: Storage | None = None,
) -> bool:
    """Whether ``uri`` holds a table an installed format recognises (of ``format`` if given).

    True also when several formats recognise it (a migration in place: ``open`` then needs
    ``format=``). False for an empty or missing location, a file, a folder of tables, and a
    table whose plugin is missing or disabled (``open`` says which). Like deltalake's
    ``DeltaTable.is_deltatable``, it only looks: no metadata is validated.

    Raises:
        StorageError: the storage cannot be read (an unreachable endpoint, access denied),
            so whether a table is there cannot be told.
        PluginNotInstalledError: ``format`` names a format that is not installed.

    Example:
        >>> import tempfile, lakecore, pyarrow as pa
        >>> root = tempfile.mkdtemp()
        >>> lakecore.is_table(root)
        False
        >>> _ = lakecore.create(root, pa.schema([("id", pa.int64())]))
        >>> lakecore.is_table(root), lakecore.is_table(root, format="hudi")
        (True, False)
    """
    registry = load_registry()
    formats = registry.formats() if format is None else [registry.get(format)]
    storage = _storage_for(uri, storage_options, storage)
    with reachable(storage):
        return any(fmt.detect(storage) for fmt in formats)


@public_function("lakecore.create")
def create(
    uri: str,
    schema: pa.Schema,
    format: str = "delta",
    partition_by: Sequence[str] = (),
    properties: Mapping[str, str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    storage: Storage | None = None,
    timestamp_ms: int | None = None,
) -> Table:
    """Create an empty table of ``format`` at ``uri`` and return it.

    ``storage`` is a ready ``Storage`` to create and write the table through (see ``open``).
    ``timestamp_ms`` dates the creation (epoch ms; formats with ``commit_timestamps``), so
    that commits with earlier-than-now timestamps may follow (``Table.transaction``).

    ``properties`` values are text; ``True``/``False`` are written ``"true"``/``"false"``.

    Raises:
        TableExistsError: a table (of any format lakecore knows) is already there.
        InvalidArgumentError: a property name is blank or a value is None.
        SchemaError: the schema has no column, a blank or repeated column name, types the
            format cannot hold, or ``partition_by`` names columns that are not in it.
        UnsupportedFeatureError: the format's plugin cannot write.

    Example:
        >>> import lakecore, pyarrow as pa
        >>> t = lakecore.create("/tmp/events", pa.schema([("id", pa.int64())]))  # doctest: +SKIP
        >>> t.append(pa.table({"id": [1, 2]}))  # doctest: +SKIP
        1
    """
    return _create(
        uri, schema, format, partition_by, properties, storage_options, storage, timestamp_ms
    )


def _create(
    uri: str,
    schema: pa.Schema,
    format: str,
    partition_by: Sequence[str],
    properties: Mapping[str, str] | None,
    storage_options: Mapping[str, Any] | None = None,
    storage: Storage | None = None,
    timestamp_ms: int | None = None,
    beside: Sequence[str] = (),
) -> Table:
    """``create``; ``beside`` names formats whose table may already be at ``uri`` (a migration
    in place writes the target's metadata next to the source's). Internal: users get
    ``TableExistsError`` for any table there."""
    registry = load_registry()
    declared = registry.get(format)
    require(declared.name, declared.capabilities, Capability.WRITE, "creating tables")
    if partition_by:
        require(declared.name, declared.capabilities, Capability.PARTITIONING)
    fmt = cast(WritableFormat, declared)  # declaring ``write`` means implementing it
    checked = cast(dict[str, str], check_properties(properties or {}, unset=False))
    check_schema_names(schema)
    storage = _storage_for(uri, storage_options, storage)
    existing = [
        f.name
        for f in registry.formats()
        if (f.name == declared.name or f.name not in beside) and f.detect(storage)
    ]
    if existing:
        raise TableExistsError(f"{storage.root} already holds a {existing[0]} table")
    missing = [c for c in partition_by if schema.get_field_index(c) < 0]
    if missing:
        raise SchemaError(f"partition column(s) {missing} are not in the schema")
    if timestamp_ms is not None:
        require(declared.name, declared.capabilities, Capability.COMMIT_TIMESTAMPS)
        check_number("timestamp_ms", timestamp_ms, minimum=0, integral=True)
        fmt.create(storage, schema, list(partition_by), checked, timestamp_ms)
    else:
        fmt.create(storage, schema, list(partition_by), checked)
    return Table(uri, storage, fmt)


def _storage_for(
    uri: str, storage_options: Mapping[str, Any] | None, storage: Storage | None
) -> Storage:
    """The Storage a table at ``uri`` is accessed through: ``storage`` when given, else opened.

    Raises ``ArgumentTypeError`` for a ``uri`` that is no path or URI and ``storage_options``
    that are no mapping.
    """
    check_location(uri)
    if storage is None:
        return open_storage(uri, check_mapping("storage_options", storage_options))
    if storage_options is not None:
        raise InvalidArgumentError("pass storage_options or storage, not both")
    if not isinstance(storage, Storage):
        raise InvalidArgumentError(f"storage must implement lakecore.Storage, not {storage!r}")
    return storage


# Imported last: the engine uses ``open``/``create`` above. The function shadows the package
# name on purpose (``lakecore.migrate(...)``; the package stays importable by its full name).
from lakecore.migrate import MigrationReport  # noqa: E402
from lakecore.migrate import migrate as _migrate  # noqa: E402

migrate = public_function("lakecore.migrate")(_migrate)

__all__ = [
    "AmbiguousFormatError",
    "ArgumentTypeError",
    "CommitConflictError",
    "CommitError",
    "CommitStateUnknownError",
    "CommitStorageError",
    "ConstraintViolationError",
    "MergeConflictError",
    "CorruptTableError",
    "FormatDetectionError",
    "HistoryEntry",
    "InvalidArgumentError",
    "LakecoreError",
    "MigrationError",
    "MigrationReport",
    "PluginNotInstalledError",
    "PredicateError",
    "SchemaError",
    "Snapshot",
    "Storage",
    "StorageError",
    "Table",
    "TableExistsError",
    "TableNotFoundError",
    "UnknownFormatError",
    "UnsupportedFeatureError",
    "VersionNotFoundError",
    "WriteMetrics",
    "WriteResult",
    "create",
    "is_table",
    "migrate",
    "open",
]
