"""Storage faults made typed: a raw ``OSError`` from the storage never reaches a user."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, BinaryIO, TypeVar

from lakecore.errors import (
    CommitError,
    CommitStorageError,
    CorruptTableError,
    LakecoreError,
    StorageError,
)

if TYPE_CHECKING:
    from lakecore.storage.base import Storage

T = TypeVar("T")


@contextmanager
def storage_faults(what: str, error: type[StorageError] = CommitStorageError) -> Iterator[None]:
    """Raise ``error`` for a raw ``OSError`` (a storage fault) escaping the block.

    The message names ``what`` was being done and the fault; the fault is the ``__cause__``.
    A ``FileNotFoundError`` on a read is ``CorruptTableError`` (the table names a file the
    store lacks). LakecoreErrors and exceptions that are not ``OSError`` pass through
    unchanged, except that a (read) ``StorageError`` becomes ``error`` when that is a
    CommitError. Use the
    default (``CommitStorageError``: nothing was committed) only around work that happens
    before a commit is attempted.
    """
    committing = issubclass(error, CommitError)
    done = "; nothing was committed" if committing else ""
    try:
        yield
    except LakecoreError as exc:
        if committing and isinstance(exc, StorageError) and not isinstance(exc, CommitError):
            # A read that failed while planning a write: the write's error says so.
            raise error(f"{what} failed: {exc}{done}") from exc
        raise
    except FileNotFoundError as exc:
        if committing:
            raise error(f"{what} failed: a file is missing: {exc}{done}") from exc
        # The table's metadata names a file the store does not have (deleted after planning,
        # or by hand): the table as read is inconsistent, not the store unreachable.
        raise CorruptTableError(
            f"{what} failed: a file the table references is missing: {exc}"
        ) from exc
    except OSError as exc:
        raise error(f"{what} failed: the storage raised {type(exc).__name__}: {exc}{done}") from exc


def typed_iteration(what: str, items: Iterator[T]) -> Iterator[T]:
    """Yield ``items``, raising ``StorageError`` for a raw ``OSError`` met while iterating.

    Readers are generators, so a fault surfaces where the caller iterates, not where the
    reader was created; this carries ``storage_faults`` over to that point.
    """
    with storage_faults(what, StorageError):
        yield from items


def open_input(storage: Storage, path: str, what: str = "file") -> BinaryIO:
    """Open ``path`` for reading; a store that fails to open it is ``StorageError``.

    A timeout or refused access is not corruption: only a file that is gone
    (``FileNotFoundError``, passed through for the caller to judge) or does not decode is.
    """
    try:
        return storage.open_input(path)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise StorageError(f"cannot open {what} {path}: {exc}") from exc
