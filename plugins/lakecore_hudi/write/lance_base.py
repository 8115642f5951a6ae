"""Lance base files: what Hudi 1.1 writes on a table with ``hoodie.table.base.file.format=LANCE``.

Hudi 1.1's Lance writer (``HoodieBaseLanceWriter`` / ``HoodieSparkLanceWriter``) writes base
files named like Parquet ones but ending in ``.lance``, in Lance file format 2.0 (stored
version 0.3), in the file schema (the five ``_hoodie_*`` meta columns, nullable strings, then
the data columns). The bloom index entries Parquet keeps in its footer go into the Lance
schema metadata instead, under the same keys: ``hoodie_bloom_filter_type_code``,
``hoodie_min_record_key``, ``hoodie_max_record_key`` and ``org.apache.hudi.bloomfilter``
(the corpus table ``mor_avro_v9_lance_nonhivestyle`` holds exactly these).

The ``.lance`` encoding itself is pylance's ``lance.file.LanceFileWriter`` (the ``lance``
extra). The file is written to a local temporary file first and then put on the table's
storage with ``put_if_absent``, as Parquet base files are, so that an existing file is never
overwritten and object stores get one whole object.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

import pyarrow as pa

from lakecore.errors import UnsupportedFeatureError
from lakecore.storage import Storage
from lakecore_hudi.table_config import TableConfig

LANCE_EXTENSION = "lance"
LANCE_FILE_VERSION = "2.0"
"""The Lance file format version Hudi 1.1's writer produces (stored as major 0, minor 3)."""


def base_file_extension(config: TableConfig) -> str:
    """The extension (no dot) of new base files of the table: ``lance`` or ``parquet``.

    Raises:
        UnsupportedFeatureError: any other base file format (``ensure_writable`` refuses
            such tables before a write starts).
    """
    fmt = config.base_file_format
    if fmt == "PARQUET":
        return "parquet"
    if fmt == "LANCE":
        return LANCE_EXTENSION
    raise UnsupportedFeatureError(
        f"hudi-base-file-format-{fmt.lower()}", f"lakecore writes Parquet and Lance, not {fmt}"
    )


def is_lance_path(path: str) -> bool:
    """Whether ``path`` names a Lance base file."""
    return path.lower().endswith("." + LANCE_EXTENSION)


def write_lance_base_file(
    storage: Storage, path: str, records: pa.Table, metadata: dict[str, str]
) -> int:
    """Write ``records`` (file schema) as a Lance 2.0 base file at ``path``; return its size.

    ``metadata`` is the bloom index metadata (``bloom.footer_metadata``; empty for files
    without record keys) and becomes the file's schema metadata. Metadata ``records`` carries
    from the file it was read from is dropped (it would name the old file's keys).

    Raises:
        UnsupportedFeatureError: pylance is not installed.
        FileExistsError: ``path`` exists already (``Storage.put_if_absent``).
    """
    writer_class = _lance_file().LanceFileWriter
    records = records.replace_schema_metadata(None)
    schema = records.schema.with_metadata(metadata) if metadata else records.schema
    with tempfile.TemporaryDirectory(prefix="lakecore-hudi-lance-") as tmp:
        local = os.path.join(tmp, "base.lance")
        writer = writer_class(local, schema, version=LANCE_FILE_VERSION)
        # Also with no rows: Hudi's writer then writes one empty batch (a schema-only file).
        writer.write_batch(records)
        writer.close()
        with open(local, "rb") as f:
            data = f.read()
    storage.put_if_absent(path, data)
    return len(data)


def read_lance_schema_metadata(storage: Storage, path: str) -> dict[bytes, bytes]:
    """The schema metadata of Lance file ``path`` (where Hudi keeps the bloom index entries),
    read from the file's metadata only (no data pages).

    Raises:
        UnsupportedFeatureError: pylance is not installed.
        OSError / ValueError: the file cannot be read or is no Lance file (pylance's errors).
    """
    raw = getattr(storage, "storage_options", None) or {}
    options = {k: str(v) for k, v in raw.items()} or None
    reader = _lance_file().LanceFileReader(storage.resolve(path), storage_options=options)
    metadata: dict[bytes, bytes] = reader.metadata().schema.metadata or {}
    return metadata


def _lance_file() -> Any:
    """pylance's ``lance.file`` module; raises ``UnsupportedFeatureError`` without it."""
    try:
        import lance.file
    except ImportError as exc:  # pragma: no cover - the lance extra is installed in tests
        raise UnsupportedFeatureError(
            "base-file-format:lance", "Lance base files need pylance: pip install 'lakecore[lance]'"
        ) from exc
    return lance.file


__all__ = [
    "LANCE_EXTENSION",
    "LANCE_FILE_VERSION",
    "base_file_extension",
    "is_lance_path",
    "read_lance_schema_metadata",
    "write_lance_base_file",
]
