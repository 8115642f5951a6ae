"""What a writer needs to know about a Hudi table: keys, partitions, schemas, and what it gates.

Hudi writers store two schemas: the *data* schema (the user's columns; commit metadata's
``extraMetadata.schema`` and ``hoodie.table.create.schema``) and the *file* schema (the five
``_hoodie_*`` meta columns, nullable strings, followed by the data columns) that base files and
log data blocks are written in.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from lakecore.errors import UnsupportedFeatureError
from lakecore_hudi.avro_schema import arrow_to_avro
from lakecore_hudi.keys import META_FIELDS
from lakecore_hudi.mdt.partition_spec import is_maintained
from lakecore_hudi.mdt.table import METADATA_TABLE_VERSIONS
from lakecore_hudi.table_config import TableConfig

#: Table versions lakecore writes (Hudi 0.14/0.15, 1.0 and 1.1).
WRITABLE_TABLE_VERSIONS = frozenset({6, 8, 9})
_WRITABLE_KEYGENS = frozenset({"SIMPLE", "COMPLEX", "NON_PARTITION", "TIMESTAMP", "CUSTOM"})


@dataclass(frozen=True, slots=True)
class WriteLayout:
    """How rows of one table are keyed, partitioned and typed when written.

    ``data_schema`` holds the user columns only (no meta fields), typed as the table's Avro
    schema reads back (the types base files must hold).
    """

    config: TableConfig
    data_schema: pa.Schema
    value_only_keys: bool = False
    """A COMPLEX key generator over one key field stores the bare value (HUDI-7001: Hudi
    0.14.1-1.0.2 wrote such keys without the ``field:`` prefix)."""

    @property
    def table_version(self) -> int:
        """``hoodie.table.version`` (6 or 8)."""
        return self.config.table_version

    @property
    def is_mor(self) -> bool:
        """Whether the table is MERGE_ON_READ (updates go to log files)."""
        return self.config.table_type == "MERGE_ON_READ"

    @property
    def write_action(self) -> str:
        """The action of a plain write: ``deltacommit`` (MoR) or ``commit`` (CoW)."""
        return "deltacommit" if self.is_mor else "commit"

    @property
    def key_fields(self) -> tuple[str, ...]:
        """The record key columns."""
        return self.config.record_key_fields

    @property
    def keyless(self) -> bool:
        """Whether the table has no record key fields (Hudi 0.14+ auto-generated keys): new
        records get ``<instant>_<file index>_<row index>`` keys, as Hudi's
        ``AutoRecordGenWrapperKeyGenerator`` gives ``<instant>_<task>_<row>``."""
        return not self.key_fields

    @property
    def precombine_field(self) -> str | None:
        """The ordering column that decides between two records of one key, if any."""
        return self.config.precombine_field

    @property
    def partition_fields(self) -> tuple[str, ...]:
        """The partition columns, outermost first."""
        return self.config.partition_fields

    @property
    def complex_keys(self) -> bool:
        """Whether keys render as ``field:value,...`` (several key fields, or the COMPLEX key
        generator over one, unless the table stores bare values) rather than the bare value."""
        if len(self.key_fields) > 1:
            return True
        return self.config.keygen_type == "COMPLEX" and not self.value_only_keys

    @property
    def record_name(self) -> str:
        """The Avro record name Hudi's writers give the table schema."""
        return f"{self.config.table_name}_record"

    @property
    def namespace(self) -> str:
        """The Avro namespace Hudi's writers give the table schema."""
        return f"hoodie.{self.config.table_name}"

    def data_avro(self) -> dict[str, Any]:
        """The Avro record schema of the data columns."""
        return arrow_to_avro(self.data_schema, self.record_name, self.namespace)

    def data_avro_json(self) -> str:
        """``data_avro()`` as compact JSON (what commit metadata records as ``schema``)."""
        return json.dumps(self.data_avro(), separators=(",", ":"))

    @property
    def virtual_keys(self) -> bool:
        """Whether the table stores no meta field values (``hoodie.populate.meta.fields=false``):
        keys and partition paths are derived from the key and partition fields on every read."""
        return not self.config.populate_meta_fields

    @property
    def file_schema(self) -> pa.Schema:
        """Meta fields (nullable strings) then the data columns: the schema of written files.

        Tables with virtual keys keep the meta columns in their files too, as Hudi's writers
        do (its write schema always has them), but leave them null (``files_out``)."""
        meta = [pa.field(name, pa.string()) for name in META_FIELDS]
        return pa.schema(meta + list(self.data_schema))

    def file_avro(self) -> dict[str, Any]:
        """The Avro schema of ``file_schema`` (log data blocks are written in it)."""
        return arrow_to_avro(self.file_schema, self.record_name, self.namespace)


def layout_for(
    config: TableConfig, table_schema: pa.Schema, stored_key: str | None = None
) -> WriteLayout:
    """The layout of a table whose full schema (meta fields included or not) is ``table_schema``.

    ``stored_key`` is any ``_hoodie_record_key`` of the table, if it has records: with the
    COMPLEX key generator over one field it tells which key encoding the table uses (unless
    ``hoodie.table.complex.keygen.encoding`` says so).
    """
    data = pa.schema([f for f in table_schema if f.name not in META_FIELDS])
    encoding = (config.get("hoodie.table.complex.keygen.encoding") or "").strip().upper()
    if encoding:
        value_only = encoding == "VALUE_ONLY"
    else:
        prefix = f"{config.record_key_fields[0]}:" if config.record_key_fields else ""
        value_only = stored_key is not None and not stored_key.startswith(prefix)
    return WriteLayout(config, data, value_only)


def ensure_writable(config: TableConfig) -> None:
    """Raise ``UnsupportedFeatureError`` naming the first table feature lakecore cannot write.

    Must run before any file is read or written for a write.
    """
    checks: list[tuple[bool, str, str]] = [
        (
            config.table_version not in WRITABLE_TABLE_VERSIONS,
            f"hudi-write-table-version-{config.table_version}",
            f"lakecore writes Hudi table versions 6, 8 and 9, not {config.table_version}",
        ),
        (
            len(config.ordering_fields) > 1,
            "hudi-ordering-fields",
            f"the table orders records by several fields {list(config.ordering_fields)} "
            "(hoodie.table.ordering.fields); lakecore merges by one",
        ),
        (
            (config.get("hoodie.table.partial.update.mode") or "NONE").upper() != "NONE",
            "hudi-partial-update",
            "the table merges partial updates "
            f"(hoodie.table.partial.update.mode={config.get('hoodie.table.partial.update.mode')})",
        ),
        (
            any(k.startswith("hoodie.record.merge.property.") for k in config.raw),
            "hudi-merge-properties",
            "the table's merges take properties (hoodie.record.merge.property.*, e.g. "
            "delete markers of a legacy payload)",
        ),
        (
            (config.get("hoodie.table.format") or "native") != "native",
            f"hudi-table-format-{config.get('hoodie.table.format')}",
            f"the table's format is {config.get('hoodie.table.format')!r}, not native Hudi",
        ),
        (
            not config.populate_meta_fields and not config.record_key_fields,
            "hudi-virtual-keys",
            "the table stores no meta fields (hoodie.populate.meta.fields=false) and has no "
            "record key fields: its keys could not be derived",
        ),
        (
            config.base_file_format not in ("PARQUET", "LANCE")
            or (config.base_file_format == "LANCE" and config.table_version < 9),
            f"hudi-base-file-format-{config.base_file_format.lower()}",
            "lakecore writes Parquet base files, and Lance base files on table version 9 "
            f"(Hudi 1.1+), not {config.base_file_format} on version {config.table_version}",
        ),
        (
            (config.keygen_type or "SIMPLE") not in _WRITABLE_KEYGENS,
            f"hudi-keygen-{(config.keygen_type or config.keygen_class or '').lower()}",
            "lakecore writes tables with the SIMPLE, COMPLEX, NON_PARTITION, TIMESTAMP and CUSTOM "
            "key generators",
        ),
        (
            config.url_encode_partitions and config.keygen_type in ("TIMESTAMP", "CUSTOM"),
            "hudi-partition-url-encoding",
            "hoodie.datasource.write.partitionpath.urlencode=true is not supported for writing "
            "with the TIMESTAMP and CUSTOM key generators",
        ),
        (
            config.drop_partition_columns,
            "hudi-drop-partition-columns",
            "tables that leave partition columns out of data files are not writable",
        ),
        (
            config.record_merge_mode == "CUSTOM",
            "hudi-custom-merge",
            f"the table merges records with a custom payload/merger ({config.payload_class})",
        ),
        (
            bool(config.get("hoodie.bootstrap.base.path")),
            "hudi-bootstrap",
            "bootstrapped tables (hoodie.bootstrap.base.path) are not writable",
        ),
    ]
    for failed, feature, why in checks:
        if failed:
            raise UnsupportedFeatureError(feature, f"cannot write this Hudi table: {why}")
    _ensure_metadata_writable(config)


def _ensure_metadata_writable(config: TableConfig) -> None:
    """Refuse a metadata table lakecore cannot keep up to date, naming the partition.

    lakecore maintains the ``files`` partition of version 8 and 9 tables and the index
    partitions wired in ``mdt.partition_spec`` (``mdt.maintain``); any other partition (e.g.
    bloom_filters, expression indexes) would go stale, and a partition still being built is not
    ready.
    """
    building = list(config.metadata_partitions_inflight)
    if building:
        raise UnsupportedFeatureError(
            f"hudi-metadata-{building[0]}",
            f"cannot write this Hudi table: its metadata table partition {building[0]!r} is "
            "still being built (hoodie.table.metadata.partitions.inflight)",
        )
    others = [p for p in config.metadata_partitions if not is_maintained(p)]
    if others:
        raise UnsupportedFeatureError(
            f"hudi-metadata-{others[0]}",
            f"cannot write this Hudi table: lakecore does not maintain its metadata table "
            f"partition {others[0]!r} (of {list(config.metadata_partitions)}), so its writes "
            "would be invisible to readers that use it",
        )
    if config.metadata_partitions and config.table_version not in METADATA_TABLE_VERSIONS:
        raise UnsupportedFeatureError(
            f"hudi-metadata-table-v{config.table_version}",
            "cannot write this Hudi table: lakecore maintains metadata tables of table "
            f"versions 8 and 9, not {config.table_version}",
        )
