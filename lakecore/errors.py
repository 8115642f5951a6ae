"""The one exception tree of lakecore: every error the library raises derives from LakecoreError."""

from __future__ import annotations

from collections.abc import Sequence


class LakecoreError(Exception):
    """Base class of every error lakecore raises on purpose."""


class TableNotFoundError(LakecoreError):
    """Raised when the URI holds no table (no log, no timeline, no manifests)."""


class TableExistsError(LakecoreError):
    """Raised when creating a table where one already exists."""


class VersionNotFoundError(LakecoreError, ValueError):
    """Raised when a version or timestamp asked for does not exist or can't be reconstructed."""


class FormatDetectionError(LakecoreError):
    """Raised when the format of a table cannot be decided."""


class UnknownFormatError(FormatDetectionError):
    """Raised when no installed format plugin recognises the table."""


class AmbiguousFormatError(FormatDetectionError):
    """Raised when more than one format plugin recognises the table."""

    def __init__(self, uri: str, candidates: Sequence[str]) -> None:
        self.candidates = tuple(candidates)
        super().__init__(
            f"{uri} looks like more than one table format: {', '.join(self.candidates)}; "
            "pass format=... to lakecore.open to choose"
        )


class UnsupportedFeatureError(LakecoreError):
    """Raised before any work when a table needs a feature lakecore does not implement."""

    def __init__(self, feature: str, message: str | None = None) -> None:
        self.feature = feature
        super().__init__(message or f"table feature {feature!r} is not supported by lakecore")


class CorruptTableError(LakecoreError):
    """Raised when table metadata is unreadable or violates the format; names the file."""


class SchemaError(LakecoreError):
    """Raised when a schema cannot be parsed, converted or evolved as asked."""


class PredicateError(LakecoreError, ValueError):
    """Raised, before any data is read, for a predicate lakecore cannot parse or evaluate."""


class ConstraintViolationError(LakecoreError, ValueError):
    """Raised when written rows violate NOT NULL, CHECK, invariants or append-only rules."""


class MergeConflictError(ConstraintViolationError):
    """Raised, before anything is written, when a MERGE's ``on`` matches one target row with
    several source rows (deltalake and Spark refuse such a merge: which update wins is
    undefined)."""


class CommitError(LakecoreError):
    """Raised when a commit fails."""


class CommitConflictError(CommitError):
    """Raised when a concurrent commit conflicts with this one; names the winning version."""

    def __init__(self, message: str, winning_version: int | str | None = None) -> None:
        self.winning_version = winning_version
        super().__init__(message)


class CommitStateUnknownError(CommitError):
    """Raised when it cannot be known whether a commit landed (e.g. a timeout mid-write)."""


class StorageError(LakecoreError, OSError):
    """Raised when the storage fails (I/O error, timeout, access denied); names the operation."""


class CommitStorageError(CommitError, StorageError):
    """Raised when the storage fails during a write before its commit was tried: nothing landed."""


class InvalidArgumentError(LakecoreError, ValueError):
    """Raised, before any work, for an argument outside what an operation accepts."""


class ArgumentTypeError(InvalidArgumentError, TypeError):
    """Raised, before any work, for an argument of a type an operation does not take."""


class PluginNotInstalledError(LakecoreError):
    """Raised when a format is asked for whose plugin is not installed or is disabled."""

    def __init__(self, format_name: str, hint: str | None = None) -> None:
        self.format_name = format_name
        super().__init__(
            hint
            or f"no installed lakecore plugin provides format {format_name!r}; install the "
            "package of the plugin that provides it, or check LAKECORE_DISABLED_PLUGINS"
        )


class MigrationError(LakecoreError):
    """Raised when a table cannot be migrated between formats without losing data."""


__all__ = [
    "AmbiguousFormatError",
    "ArgumentTypeError",
    "CommitConflictError",
    "CommitError",
    "CommitStateUnknownError",
    "CommitStorageError",
    "ConstraintViolationError",
    "CorruptTableError",
    "FormatDetectionError",
    "InvalidArgumentError",
    "LakecoreError",
    "MigrationError",
    "PluginNotInstalledError",
    "PredicateError",
    "SchemaError",
    "StorageError",
    "TableExistsError",
    "TableNotFoundError",
    "UnknownFormatError",
    "UnsupportedFeatureError",
    "VersionNotFoundError",
]
