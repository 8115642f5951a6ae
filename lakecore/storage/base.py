"""The Storage protocol: the only door between protocol logic and bytes.

Paths given to a Storage are either relative to its root (``_delta_log/00.json``) or absolute
URIs/paths (``s3://b/t/x.parquet``, ``/data/t/x.parquet``, ``file:/data/t/x.parquet``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO, Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class FileInfo:
    """One listed object: path relative to the storage root, size in bytes, mtime in epoch ms."""

    path: str
    size: int
    modification_time: int


@runtime_checkable
class Storage(Protocol):
    """Object access rooted at a table's location.

    Implementations must be safe to share between threads.
    """

    @property
    def root(self) -> str:
        """The table root URI (no trailing slash)."""
        ...

    def resolve(self, path: str) -> str:
        """Return the full URI/path of ``path`` (relative paths are joined to the root)."""
        ...

    def list_from(self, path: str) -> Iterator[FileInfo]:
        """List the files in ``path``'s directory whose names sort at or after its last part.

        ``"_delta_log/00000000000000000010"`` yields the files of ``_delta_log`` whose names
        are ``>= "00000000000000000010"``; a directory-like path (``"_delta_log/"``) yields the
        whole directory. Must yield files only (no directories), sorted by path. A missing
        directory yields nothing.
        """
        ...

    def list_dir(self, path: str) -> list[FileInfo]:
        """List the files directly in directory ``path``, sorted by path.

        Must list files only (no directories, nothing from subdirectories); paths are relative
        to the root when under it. A missing directory, or a path naming a file, is empty.
        """
        ...

    def list_all(self, path: str = "") -> list[FileInfo]:
        """List every file below directory ``path`` (recursively), sorted by path.

        A missing directory is empty. Used by maintenance (vacuum), never on read paths.
        """
        ...

    def read(self, path: str, start: int | None = None, end: int | None = None) -> bytes:
        """Return the bytes of ``path`` in ``[start, end)`` (the whole file by default).

        ``end`` past the end of the file reads to its end; ``end <= start`` reads nothing;
        negative offsets must raise ``ValueError``.

        Must raise ``FileNotFoundError`` when the file does not exist.
        """
        ...

    def open_input(self, path: str) -> BinaryIO:
        """Open ``path`` for random-access reading; must raise ``FileNotFoundError`` if absent."""
        ...

    def head(self, path: str) -> FileInfo:
        """Return the metadata of file ``path``; must raise ``FileNotFoundError`` if absent.

        A directory is not a file: it must raise ``FileNotFoundError`` too.
        """
        ...

    def exists(self, path: str) -> bool:
        """Return whether a file exists at ``path``."""
        ...

    def put(self, path: str, data: bytes) -> None:
        """Write ``data`` to ``path``, replacing any existing file; creates parent directories."""
        ...

    def put_if_absent(self, path: str, data: bytes) -> None:
        """Write ``data`` to ``path`` only if nothing is there, atomically.

        Must raise ``FileExistsError`` if the path exists, decided by the store in one step
        (never "check exists, then write"): of N concurrent callers exactly one succeeds.
        A reader must never observe a partially written file.
        """
        ...

    def delete(self, path: str) -> None:
        """Delete ``path``; deleting a missing file is not an error (idempotent)."""
        ...
