"""lakecore: one Python interface over Delta Lake, Apache Hudi and Lance tables."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lakecore.detect import detect_format
from lakecore.errors import (
    AmbiguousFormatError,
    CommitConflictError,
    CommitError,
    CommitStateUnknownError,
    CorruptTableError,
    FormatDetectionError,
    LakecoreError,
    MigrationError,
    PluginNotInstalledError,
    SchemaError,
    TableExistsError,
    TableNotFoundError,
    UnknownFormatError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from lakecore.model.history import HistoryEntry
from lakecore.plugins import load_registry
from lakecore.snapshot import Snapshot
from lakecore.storage import Storage, open_storage
from lakecore.table import Table

__version__ = "0.1.0"


def open(
    uri: str,
    format: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> Table:
    """Open the table at ``uri``, detecting its format unless ``format`` is given.

    Args:
        uri: a local path, ``file://``, ``memory://`` or ``s3://`` location of the table root.
        format: ``"delta"``, ``"hudi"`` or ``"lance"`` to skip detection.
        storage_options: passed to the filesystem (e.g. S3 ``endpoint_url``, ``key``).

    Raises:
        TableNotFoundError: nothing is at ``uri``.
        UnknownFormatError: no installed format recognises it.
        AmbiguousFormatError: several formats recognise it (the error lists them).
        PluginNotInstalledError: ``format`` names a plugin that is missing or disabled.

    Example:
        >>> import lakecore
        >>> table = lakecore.open("/data/events")  # doctest: +SKIP
        >>> table.format, table.version  # doctest: +SKIP
        ('delta', 12)
        >>> table.to_arrow(columns=["id"]).num_rows  # doctest: +SKIP
        1000
    """
    registry = load_registry()
    storage = open_storage(uri, storage_options)
    if format is not None:
        fmt = registry.get(format)
        if not fmt.detect(storage):
            if not storage.list_dir(""):
                raise TableNotFoundError(f"no table at {storage.root}")
            raise TableNotFoundError(f"{storage.root} does not hold a {format} table")
    else:
        fmt = detect_format(storage, registry)
    return Table(uri, storage, fmt)


__all__ = [
    "AmbiguousFormatError",
    "CommitConflictError",
    "CommitError",
    "CommitStateUnknownError",
    "CorruptTableError",
    "FormatDetectionError",
    "HistoryEntry",
    "LakecoreError",
    "MigrationError",
    "PluginNotInstalledError",
    "SchemaError",
    "Snapshot",
    "Storage",
    "Table",
    "TableExistsError",
    "TableNotFoundError",
    "UnknownFormatError",
    "UnsupportedFeatureError",
    "VersionNotFoundError",
    "open",
]
