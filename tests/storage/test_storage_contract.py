"""Every FsspecStorage backend opts into the Storage contract suite."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import pytest

from lakecore.storage import FsspecStorage, Storage
from lakecore.testing.storage_contract import StorageContract


class LocalStorageFixture:
    @pytest.fixture
    def storage(self, tmp_path: Path) -> Storage:
        return FsspecStorage(str(tmp_path / "table"))


class FileUriStorageFixture:
    @pytest.fixture
    def storage(self, tmp_path: Path) -> Storage:
        return FsspecStorage((tmp_path / "table").as_uri())  # file:///...


class HadoopFileUriStorageFixture:
    @pytest.fixture
    def storage(self, tmp_path: Path) -> Storage:
        return FsspecStorage(f"file:{(tmp_path / 'table').as_posix()}")  # file:/... as Spark writes


class MemoryStorageFixture:
    @pytest.fixture
    def storage(self) -> Iterator[Storage]:
        # fsspec's memory store is process-wide: a unique root per test, removed afterwards.
        root = f"memory://lakecore-test-{uuid.uuid4().hex}"
        yield FsspecStorage(root)
        fs = fsspec.filesystem("memory")
        if fs.exists(root):
            fs.rm(root, recursive=True)


class S3StorageFixture:
    @pytest.fixture
    def storage(self, s3_uri: str, s3_storage_options: dict[str, Any]) -> Storage:
        return FsspecStorage(s3_uri, storage_options=s3_storage_options)


class TestLocalStorage(StorageContract, LocalStorageFixture):
    pass


class TestFileUriStorage(StorageContract, FileUriStorageFixture):
    pass


class TestHadoopFileUriStorage(StorageContract, HadoopFileUriStorageFixture):
    pass


class TestMemoryStorage(StorageContract, MemoryStorageFixture):
    pass


@pytest.mark.s3
class TestS3Storage(StorageContract, S3StorageFixture):
    pass
