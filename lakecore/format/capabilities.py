"""What a format supports (``Capability``) and what one table of it uses (``TableFeatures``).

A ``TableFormat`` declares ``capabilities``: the operations lakecore can run on tables of that
format. ``Table`` checks the capability of every verb before it reads or writes anything and
raises ``UnsupportedFeatureError`` naming the capability (``require``), so a format never has
to be probed for methods and an unsupported operation costs no IO.

``TableFeatures`` is the typed, format-neutral view of what one snapshot's table uses (its
format version, the named reader/writer features, whether reads merge changes), filled by each
format when it loads a snapshot (``Snapshot.features``). A format's own protocol record (Delta's
``protocol`` action, Hudi's ``hoodie.properties``) stays in the plugin's snapshot state.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from lakecore.errors import UnsupportedFeatureError


class Capability(str, enum.Enum):
    """An operation lakecore can run on tables of a format (the ``Table`` verb it gates).

    A ``str`` enum (``Capability("merge")``; ``.value`` is the name errors carry).
    """

    WRITE = "write"
    """Create tables, append rows and run transactions (``create``, ``append``,
    ``transaction``); the format must implement ``WritableFormat``."""
    OVERWRITE = "overwrite"
    """Replace all rows, or the rows matching a predicate (``overwrite``)."""
    DELETE = "delete"
    """Delete the rows matching a predicate (``delete``)."""
    UPDATE = "update"
    """Set columns on the rows matching a predicate (``update``)."""
    MERGE = "merge"
    """MERGE a source on key columns (``merge``)."""
    UPSERT = "upsert"
    """Insert or replace rows by the table's own record key (``upsert``)."""
    SET_PROPERTIES = "set_properties"
    """Set and unset table properties (``set_properties``)."""
    CONSTRAINTS = "constraints"
    """CHECK constraints kept by the table and enforced on writes (``add_constraint``,
    ``drop_constraint``); the writer must implement ``add_constraint``/``drop_constraint``."""
    APP_TRANSACTIONS = "app_transactions"
    """Idempotent application versions recorded with a commit (``set_app_transaction``)."""
    SCHEMA_EVOLUTION = "schema_evolution"
    """Add, rename, drop and widen columns (``update_schema``)."""
    SCHEMA_MERGE = "schema_merge"
    """Writes that add the data's new columns (nullable) in their own commit
    (``append``/``overwrite`` with ``schema_mode="merge"``; ``FormatWriter.append``)."""
    SCHEMA_OVERWRITE = "schema_overwrite"
    """A whole-table overwrite that replaces the schema by the data's
    (``overwrite(data, schema_mode="overwrite")``)."""
    CHANGE_FEED = "change_feed"
    """The rows changed between versions (``changes``)."""
    TIME_TRAVEL_BY_TIMESTAMP = "time_travel_by_timestamp"
    """Snapshots as of a point in time (``snapshot(timestamp=...)``, ``scan(timestamp=...)``);
    time travel by version is part of every ``TableFormat``."""
    CHECKPOINT = "checkpoint"
    """Write a checkpoint of the log (``checkpoint``); ``MaintainableFormat``."""
    VACUUM = "vacuum"
    """Delete files no retained version needs (``vacuum``); ``MaintainableFormat``."""
    RESTORE = "restore"
    """Commit an older version's rows as a new version (``restore``); ``MaintainableFormat``."""
    OPTIMIZE = "optimize"
    """Rewrite small files into bigger ones (``optimize``); ``MaintainableFormat``."""
    COMPACT = "compact"
    """Merge log files into base files (``compact``); ``MergeOnReadFormat``."""
    CLEAN = "clean"
    """Delete file slices old commits alone need (``clean``); ``MergeOnReadFormat``."""
    TAGS = "tags"
    """Name versions (``create_tag``, ``delete_tag``, ``tags``) that ``snapshot(version=name)``
    reads and vacuum keeps; ``TaggableFormat``."""
    PARTITIONING = "partitioning"
    """Tables partitioned by columns (``create(partition_by=...)``, ``Snapshot.partition_columns``);
    formats without it raise ``UnsupportedFeatureError`` for ``partition_by``."""
    REPLACE_FILES = "replace_files"
    """Publish new data files and remove given files of the index in one commit
    (``FormatWriter.file_writer("replace")`` + ``replace_files``; migration)."""
    COMMIT_METADATA = "commit_metadata"
    """Key/values stored with a commit (``CommitInfo.app_metadata``,
    ``HistoryEntry.app_metadata``, ``Table.transaction(app_metadata=)``)."""
    COMMIT_TIMESTAMPS = "commit_timestamps"
    """Commits made with a given timestamp that time travel honours (``CommitInfo.timestamp_ms``;
    a migration replaying its source's history)."""
    ADOPT_FILES = "adopt_files"
    """Publish Parquet files that exist under the table root, written by another format, as
    they are (``Transaction.adopt_files``: ``AddFiles(owned=False)`` of file-index rows with
    relative paths, typed partition values and stats; columns the table does not have are
    ignored by readers). An abort never deletes them. Zero-copy migration in place."""


def capabilities(*names: Capability | str) -> frozenset[Capability]:
    """The frozenset of ``names``; raises ``ValueError`` for a name that is no ``Capability``."""
    return frozenset(Capability(n) for n in names)


def require(
    format_name: str, declared: Iterable[Capability], capability: Capability, what: str = ""
) -> None:
    """Raise ``UnsupportedFeatureError(capability)`` unless ``declared`` holds ``capability``.

    Called before any IO of the operation. ``what`` names the operation in the message when it
    is not the capability itself.
    """
    if capability in declared:
        return
    operation = what or capability.value.replace("_", " ")
    raise UnsupportedFeatureError(
        capability.value,
        f"{format_name} tables do not support {operation} in lakecore "
        f"(capability {capability.value!r} is not declared by the {format_name} format)",
    )


@dataclass(frozen=True, slots=True)
class TableFeatures:
    """What one version of a table uses, in format-neutral terms (``Snapshot.features``).

    Formats fill in what they have; a format without named features leaves them empty.
    """

    format_version: str
    """The table's format/protocol version as the format writes it (Delta:
    ``"<minReaderVersion>.<minWriterVersion>"``; Hudi: the table version, ``"8"``)."""
    reader_features: frozenset[str] = frozenset()
    """Named features a reader must understand (Delta: explicit ``readerFeatures`` or those
    implied by the reader version, e.g. ``columnMapping``, ``deletionVectors``)."""
    writer_features: frozenset[str] = frozenset()
    """Named features a writer must honour (Delta: ``writerFeatures`` or those implied by the
    writer version, e.g. ``appendOnly``, ``checkConstraints``)."""
    merge_on_read: bool = False
    """Whether readers merge row changes kept apart from the data files: Hudi
    ``MERGE_ON_READ`` log files, Delta deletion vectors, Lance deletion files."""
    system_columns: tuple[str, ...] = ()
    """Columns of ``Snapshot.schema`` the format fills itself, not user data (Hudi's
    ``_hoodie_*`` meta columns); writers never take them and a migration drops them."""
    plain_data_files: bool = False
    """Whether every file-index row with a null ``deletion`` and no ``data_files`` holds
    exactly the rows of the Parquet file at its ``path``: columns by physical name (missing
    ones null), partition columns from the row's ``partition``, nothing merged or filtered.
    Engines may then read such files with their own Parquet reader (``lakecore.spark.read``
    checks each file's footer first, ``lakecore.spark.native``). Delta: always."""
    record_key: tuple[str, ...] = ()
    """The columns that identify a row, when the table has a record key (Hudi); a table
    created with ``properties={"record_key": "a,b"}`` by a format with one has this key."""


__all__ = ["Capability", "TableFeatures", "capabilities", "require"]
