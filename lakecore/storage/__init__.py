"""Storage: the protocol every format's logic reads and writes through, and its implementation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lakecore.storage.base import FileInfo, Storage
from lakecore.storage.fsspec_storage import FsspecStorage, normalize_uri


def open_storage(uri: str, storage_options: Mapping[str, Any] | None = None) -> Storage:
    """Return the Storage rooted at ``uri`` (local path, ``file://``, ``memory://``, ``s3://``)."""
    return FsspecStorage(uri, storage_options)


__all__ = ["FileInfo", "FsspecStorage", "Storage", "normalize_uri", "open_storage"]
