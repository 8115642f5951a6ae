"""A Storage view of a sub-directory: the metadata table as a table of its own.

The metadata table (``.hoodie/metadata``) is a Hudi table with its own ``hoodie.properties``
and timeline; viewing it through a Storage rooted there lets the timeline code (instant
life cycle, timeline loading) work on it unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

from lakecore.storage import FileInfo, Storage

__all__ = ["PrefixedStorage"]


class PrefixedStorage:
    """``base`` seen from its directory ``prefix`` (relative paths only)."""

    def __init__(self, base: Storage, prefix: str) -> None:
        self._base = base
        self._prefix = prefix.strip("/") + "/"

    @property
    def root(self) -> str:
        """The sub-directory's location."""
        return self._base.resolve(self._prefix.rstrip("/"))

    def _in(self, path: str) -> str:
        return self._prefix + path if path else self._prefix.rstrip("/")

    def _out(self, info: FileInfo) -> FileInfo:
        path = info.path[len(self._prefix) :] if info.path.startswith(self._prefix) else info.path
        return FileInfo(path, info.size, info.modification_time)

    def resolve(self, path: str) -> str:
        """The absolute location of ``path``."""
        return self._base.resolve(self._in(path))

    def list_from(self, path: str) -> Iterator[FileInfo]:
        """As ``Storage.list_from``, under the sub-directory."""
        return (self._out(i) for i in self._base.list_from(self._in(path)))

    def list_dir(self, path: str) -> list[FileInfo]:
        """As ``Storage.list_dir``, under the sub-directory."""
        return [self._out(i) for i in self._base.list_dir(self._in(path))]

    def list_all(self, path: str = "") -> list[FileInfo]:
        """As ``Storage.list_all``, under the sub-directory."""
        return [self._out(i) for i in self._base.list_all(self._in(path))]

    def read(self, path: str, start: int | None = None, end: int | None = None) -> bytes:
        """As ``Storage.read``."""
        return self._base.read(self._in(path), start, end)

    def open_input(self, path: str) -> BinaryIO:
        """As ``Storage.open_input``."""
        return self._base.open_input(self._in(path))

    def head(self, path: str) -> FileInfo:
        """As ``Storage.head``."""
        return self._out(self._base.head(self._in(path)))

    def exists(self, path: str) -> bool:
        """As ``Storage.exists``."""
        return self._base.exists(self._in(path))

    def put(self, path: str, data: bytes) -> None:
        """As ``Storage.put``."""
        self._base.put(self._in(path), data)

    def put_if_absent(self, path: str, data: bytes) -> None:
        """As ``Storage.put_if_absent``."""
        self._base.put_if_absent(self._in(path), data)

    def delete(self, path: str) -> None:
        """As ``Storage.delete``."""
        self._base.delete(self._in(path))
