"""Reading base files: Parquet (pyarrow) and Lance (pylance's file reader, Hudi 1.1+ tables)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from lakecore.errors import CorruptTableError, StorageError, UnsupportedFeatureError
from lakecore.faults import open_input
from lakecore.model.parquet_read import open_parquet
from lakecore.storage import Storage

BASE_FORMATS = {"parquet": "PARQUET", "lance": "LANCE"}
_THREADED_ROWS = 16_384
READ_BATCH_ROWS = 131_072
"""Rows per piece when a Parquet base file is streamed (``iter_base_file``)."""


def base_file_format(path: str) -> str:
    """Return the file format of a base file from its extension; raises for unknown ones."""
    ext = path.rsplit(".", 1)[-1].lower()
    if ext not in BASE_FORMATS:
        raise UnsupportedFeatureError(
            f"base-file-format:{ext}", f"lakecore reads Parquet and Lance base files, not {path}"
        )
    return BASE_FORMATS[ext]


def read_base_file(storage: Storage, path: str, columns: Sequence[str] | None) -> pa.Table:
    """Read ``columns`` (all if None; names missing from the file are skipped) of a base file.

    Raises ``CorruptTableError`` naming the file when it cannot be decoded,
    ``StorageError`` when the store fails to open it (timeout, access denied) and
    ``FileNotFoundError`` when it is gone (e.g. cleaned).
    """
    fmt = base_file_format(path)
    try:
        if fmt == "LANCE":
            return _read_lance(storage, path, columns)
        source = open_input(storage, path, "base file")
        with source as f:
            pf = open_parquet(f)
            names = pf.schema_arrow.names
            wanted = None if columns is None else [c for c in columns if c in names]
            # Column threads cost more than they save on small files (a table of many small
            # file groups: ~30% more CPU a file, measured).
            return pf.read(columns=wanted, use_threads=pf.metadata.num_rows >= _THREADED_ROWS)
    except (FileNotFoundError, UnsupportedFeatureError, StorageError):
        raise
    except (OSError, pa.ArrowException) as exc:
        raise CorruptTableError(f"cannot read base file {path}: {exc}") from exc


def iter_base_file(
    storage: Storage, path: str, columns: Sequence[str], batch_rows: int | None = None
) -> Iterator[pa.Table]:
    """Yield ``columns`` (names missing from the file skipped) of a Parquet base file in
    pieces of at most ``batch_rows`` rows (``READ_BATCH_ROWS`` by default), in file order,
    a row group at a time.

    A file whose listed columns are all missing yields no piece. Raises as
    ``read_base_file`` does, while iterating.
    """
    try:
        with open_input(storage, path, "base file") as f:
            pf = open_parquet(f)
            names = pf.schema_arrow.names
            wanted = [c for c in columns if c in names]
            if not wanted:
                return
            for batch in pf.iter_batches(batch_size=batch_rows or READ_BATCH_ROWS, columns=wanted):
                yield pa.Table.from_batches([batch])
    except (FileNotFoundError, UnsupportedFeatureError, StorageError):
        raise
    except (OSError, pa.ArrowException) as exc:
        raise CorruptTableError(f"cannot read base file {path}: {exc}") from exc


def read_base_schema(storage: Storage, path: str) -> pa.Schema:
    """The Arrow schema of a base file, from its footer/metadata only (no data read).

    Raises as ``read_base_file`` does.
    """
    fmt = base_file_format(path)
    try:
        if fmt == "LANCE":
            schema: pa.Schema = _lance_reader(storage, path).metadata().schema
            return schema.remove_metadata()
        with open_input(storage, path, "base file") as f:
            return pq.read_schema(f).remove_metadata()
    except (FileNotFoundError, UnsupportedFeatureError, StorageError):
        raise
    except (OSError, pa.ArrowException) as exc:
        raise CorruptTableError(f"cannot read base file {path}: {exc}") from exc


def _lance_reader(storage: Storage, path: str) -> Any:
    try:
        from lance.file import LanceFileReader
    except ImportError as exc:  # pragma: no cover - the lance extra is installed in tests
        raise UnsupportedFeatureError(
            "base-file-format:lance", "Lance base files need pylance: pip install 'lakecore[lance]'"
        ) from exc
    raw = getattr(storage, "storage_options", None) or {}
    options = {k: str(v) for k, v in raw.items()} or None
    return LanceFileReader(storage.resolve(path), storage_options=options)


def _read_lance(storage: Storage, path: str, columns: Sequence[str] | None) -> pa.Table:
    reader = _lance_reader(storage, path)
    table: pa.Table = reader.read_all().to_table()
    if columns is not None:
        table = table.select([c for c in columns if c in table.column_names])
    return table.replace_schema_metadata(None)
