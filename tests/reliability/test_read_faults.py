"""Storage faults met while reading rows are ``StorageError`` on every read entry point.

Readers are generators and reopen the table's storage from its URI (as Spark tasks do), so
these tests make the storage class itself fail for data files, deletion-vector files and log
files, then read through ``Table``, ``Snapshot`` and ``Scan``. A missing or undecodable file
is corruption (``CorruptTableError``); a store that times out or refuses access is not.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lakecore
from lakecore.errors import CorruptTableError, LakecoreError, StorageError
from lakecore.storage.fsspec_storage import FsspecStorage
from tests.hudi.write.helpers import create as create_hudi
from tests.hudi.write.helpers import rows as hudi_rows

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])

READS: dict[str, Callable[[lakecore.Table], Any]] = {
    "table.to_arrow": lambda t: t.to_arrow(),
    "snapshot.to_arrow": lambda t: t.snapshot().to_arrow(),
    "snapshot.to_batches": lambda t: list(t.snapshot().to_batches()),
    "scan.to_arrow": lambda t: t.scan(where="id >= 0").to_arrow(),
    "scan.to_batches": lambda t: list(t.scan(columns=["id"]).to_batches()),
}


def delta_table(root: Path, deletion_vectors: bool) -> lakecore.Table:
    properties = {"delta.enableDeletionVectors": "true"} if deletion_vectors else None
    t = lakecore.create(str(root), SCHEMA, partition_by=["p"], properties=properties)
    t.append(pa.table({"id": list(range(1000)), "p": ["a"] * 1000}, schema=SCHEMA))
    # Scattered deletes: a deletion vector too big to be stored inline in the log.
    t.delete("id % 3 = 0")
    return t


def hudi_table(root: Path) -> lakecore.Table:
    t = create_hudi(root, "MERGE_ON_READ")
    t.append(hudi_rows((1, "a", 1, "x"), (2, "b", 1, "y")))
    t.upsert(hudi_rows((1, "u", 2, "x")))
    return t


def fail_reads_of(
    monkeypatch: pytest.MonkeyPatch, suffix: str, fault: Callable[[str], OSError]
) -> None:
    """Make every storage read (whole, ranged or opened) of a path ending ``suffix`` fail."""
    read, open_input = FsspecStorage.read, FsspecStorage.open_input

    def failing_read(self: FsspecStorage, path: str, *args: Any, **kwargs: Any) -> bytes:
        if path.endswith(suffix):
            raise fault(path)
        return read(self, path, *args, **kwargs)

    def failing_open(self: FsspecStorage, path: str) -> Any:
        if path.endswith(suffix):
            raise fault(path)
        return open_input(self, path)

    monkeypatch.setattr(FsspecStorage, "read", failing_read)
    monkeypatch.setattr(FsspecStorage, "open_input", failing_open)


def timeout(path: str) -> OSError:
    return TimeoutError(errno.ETIMEDOUT, "read timed out", path)


def refused(path: str) -> OSError:
    return PermissionError(errno.EACCES, "access denied", path)


CASES = [
    (kind, suffix, fault, read)
    for kind, suffix in (("delta", ".parquet"), ("delta-dv", ".bin"), ("hudi-mor", ".parquet"))
    for fault in (timeout, refused)
    for read in READS
]


def test_case_count() -> None:
    assert len(CASES) == 30


@pytest.mark.parametrize(("kind", "suffix", "fault", "read"), CASES)
def test_store_faults_while_reading_rows_are_storage_errors(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    suffix: str,
    fault: Callable[[str], OSError],
    read: str,
) -> None:
    if kind == "hudi-mor":
        table = hudi_table(tmp_path / "t")
    else:
        table = delta_table(tmp_path / "t", deletion_vectors=kind == "delta-dv")
    expected = READS[read](table)
    fail_reads_of(monkeypatch, suffix, fault)
    with pytest.raises(StorageError) as info:
        READS[read](table)
    assert not isinstance(info.value, CorruptTableError)
    monkeypatch.undo()
    assert READS[read](table) == expected


@pytest.mark.parametrize("read", sorted(READS))
def test_a_missing_data_file_is_a_typed_error(tmp_path: Path, read: str) -> None:
    table = delta_table(tmp_path / "t", deletion_vectors=False)
    for path in table.snapshot().files().column("path").to_pylist():
        (tmp_path / "t" / path).unlink()
    with pytest.raises(LakecoreError):
        READS[read](table)
