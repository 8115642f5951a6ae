"""Writing Hudi data files: Parquet base files, log files, partition metadata.

Rows are written in the table's *file schema* (``WriteLayout.file_schema``): the five meta
columns, then the data columns. On a table with virtual keys the meta columns are there but
null (but the base files' ``_hoodie_file_name``), and base files get no bloom filter, as
Hudi's writers leave them. New records get their meta fields here; records carried over
from an older file keep their commit time and sequence number and point at the new file (as
Hudi's merge handle does).
"""

from __future__ import annotations

import contextlib
import datetime as dt

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakecore.model.hidden_nulls import fill_hidden_nulls
from lakecore.storage import Storage
from lakecore_hudi.bloom import BloomSettings, footer_metadata
from lakecore_hudi.keys import FILE_NAME, PARTITION_PATH, RECORD_KEY
from lakecore_hudi.log.blocks import encode_avro_data_block
from lakecore_hudi.log.delete_blocks import encode_delete_block
from lakecore_hudi.write.lance_base import is_lance_path, write_lance_base_file
from lakecore_hudi.write.layout import WriteLayout

PARTITION_METADATA = ".hoodie_partition_metadata"
PARQUET_COMPRESSION = "snappy"


def join_path(partition: str, name: str) -> str:
    """The table-relative path of file ``name`` in ``partition`` ("" = the table root)."""
    return f"{partition}/{name}" if partition else name


def write_partition_metadata(storage: Storage, partition: str, instant: str) -> None:
    """Write ``.hoodie_partition_metadata`` into ``partition`` unless it is there already.

    The file is what Hudi writes: a Java properties file with the instant that created the
    partition and its depth (the number of path segments).
    """
    depth = len(partition.split("/")) if partition else 0
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%a %b %d %H:%M:%S UTC %Y")
    text = f"#partition metadata\n#{stamp}\ncommitTime={instant}\npartitionDepth={depth}\n"
    # Another write may have created the partition first; its file is as good as ours.
    with contextlib.suppress(FileExistsError):
        storage.put_if_absent(join_path(partition, PARTITION_METADATA), text.encode("ascii"))


def new_records(
    rows: pa.Table,
    keys: pa.ChunkedArray,
    partition: str,
    instant: str,
    file_index: int,
    file_name: str,
    layout: WriteLayout,
    log: bool = False,
) -> pa.Table:
    """Data ``rows`` (data schema) as new records of ``instant`` in file ``file_name``.

    ``_hoodie_commit_seqno`` is ``<instant>_<file index>_<row index>``, as Hudi numbers records
    ``<instant>_<task partition>_<record>``. A null key (a keyless table's new record) becomes
    that same sequence id, as Hudi's auto-generated keys are (``HoodieRecord.generateSequenceId``):
    unique in the table, since file indexes are unique within an instant.

    On a table with virtual keys (``layout.virtual_keys``) every meta field is null but, in a
    base file (not ``log``), ``_hoodie_file_name``: what Hudi's Spark writers store (their
    Parquet writer fills only the file name; their append handle fills nothing).
    """
    n = rows.num_rows
    data = [rows.column(f.name).combine_chunks() for f in layout.data_schema]
    if layout.virtual_keys:
        return pa.Table.from_arrays(
            _virtual_meta(n, None if log else file_name) + data, schema=layout.file_schema
        )
    seqno = pa.array([f"{instant}_{file_index}_{i}" for i in range(n)], pa.string())
    meta = [
        pa.array([instant] * n, pa.string()),
        seqno,
        pc.coalesce(keys.combine_chunks().cast(pa.string()), seqno),
        pa.array([partition] * n, pa.string()),
        pa.array([file_name] * n, pa.string()),
    ]
    return pa.Table.from_arrays(meta + data, schema=layout.file_schema)


def carried_over(records: pa.Table, file_name: str, layout: WriteLayout) -> pa.Table:
    """Existing records (file schema columns, any order) moved into file ``file_name``.

    With virtual keys the records need only the data columns: the meta fields are written
    null but for the file name (``new_records``), whatever ``records`` derived for them.
    """
    if layout.virtual_keys:
        data = [_conformed(records.column(f.name), f.type) for f in layout.data_schema]
        meta = _virtual_meta(records.num_rows, file_name)
        return pa.Table.from_arrays(meta + data, schema=layout.file_schema)
    columns = []
    for field in layout.file_schema:
        if field.name == FILE_NAME:
            columns.append(pa.array([file_name] * records.num_rows, pa.string()))
        else:
            columns.append(_conformed(records.column(field.name), field.type))
    return pa.Table.from_arrays(columns, schema=layout.file_schema)


def _conformed(column: pa.ChunkedArray, type_: pa.DataType) -> pa.ChunkedArray:
    return column if column.type == type_ else column.cast(type_)


def _virtual_meta(n: int, file_name: str | None) -> list[pa.Array]:
    """The meta columns of ``n`` records of a table with virtual keys: nulls, but the file
    name when given."""
    name = pa.array([file_name] * n, pa.string()) if file_name else pa.nulls(n, pa.string())
    return [pa.nulls(n, pa.string()) for _ in range(4)] + [name]


def write_base_file(
    storage: Storage,
    path: str,
    records: pa.Table,
    bloom: BloomSettings | None = None,
    meta_keys: bool = True,
) -> int:
    """Write ``records`` (file schema) as a Parquet base file; returns its size in bytes.
    A ``path`` ending in ``.lance`` gets a Lance base file instead (``lance_base``), with the
    same bloom index metadata in its schema metadata, as Hudi 1.1 writes them.

    The footer's key-value metadata carries what Hudi's Parquet writer puts there for its
    bloom index (``lakecore_hudi.bloom``): the serialized filter of the file's record keys
    (added in row order, so the bits are the ones Hudi would set), its type code, and
    ``hoodie_min_record_key`` / ``hoodie_max_record_key`` (when the file has rows); none of
    them when ``records`` has no ``_hoodie_record_key`` values (no column, nulls, or
    ``meta_keys`` False: a table with virtual keys). ``bloom``
    sizes the filter (Hudi's defaults when None: DYNAMIC_V0, 60000 entries, fpp 1e-9).
    The metadata goes into the footer only, not into the embedded Arrow schema (which
    would hold the 430 KB filter a second time).
    """
    # Files without key values (tables with hoodie.populate.meta.fields=false) get no bloom
    # entries: Hudi's writers enable the filter only when meta fields are populated.
    keyed = (
        meta_keys
        and RECORD_KEY in records.column_names
        and records.column(RECORD_KEY).null_count == 0
    )
    extra = footer_metadata(records.column(RECORD_KEY), bloom) if keyed else {}
    if is_lance_path(path):
        return write_lance_base_file(storage, path, records, extra)
    # Records read back from another file carry that file's footer metadata (its filter).
    records = fill_hidden_nulls(records.replace_schema_metadata(None))
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, records.schema, compression=PARQUET_COMPRESSION) as writer:
        writer.write_table(records)
        if extra:
            writer.add_key_value_metadata(extra)
    data = sink.getvalue().to_pybytes()
    storage.put_if_absent(path, data)
    return len(data)


def log_content(
    records: pa.Table | None, deletes: pa.Table | None, instant: str, layout: WriteLayout
) -> bytes:
    """The bytes of a log file holding an Avro data block of ``records`` (file schema) and/or a
    delete block of ``deletes`` (``record_key``, ``partition_path``), both of ``instant``."""
    parts = []
    if records is not None and records.num_rows:
        parts.append(encode_avro_data_block(records, layout.file_avro(), instant))
    if deletes is not None and deletes.num_rows:
        keys = deletes.select([RECORD_KEY, PARTITION_PATH]).rename_columns(
            ["record_key", "partition_path"]
        )
        parts.append(encode_delete_block(keys, instant, writer_schema=layout.data_avro_json()))
    return b"".join(parts)


def records_touching(records: pa.Table, keys: pa.Array) -> pa.Array:
    """Boolean mask of the records whose record key is in ``keys``."""
    return pc.is_in(records.column(RECORD_KEY), value_set=keys)


__all__ = [
    "PARTITION_METADATA",
    "carried_over",
    "join_path",
    "log_content",
    "new_records",
    "records_touching",
    "write_base_file",
    "write_partition_metadata",
]
