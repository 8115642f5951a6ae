"""Creating an empty Hudi table: ``.hoodie/hoodie.properties`` and nothing else.

Hudi itself writes only ``hoodie.properties`` for a new table (the timeline directory appears
with the first instant). The table schema is recorded as ``hoodie.table.create.schema`` so that
readers know the columns before the first commit. By default no metadata table is declared
(``hoodie.table.metadata.partitions`` stays unset), so readers list files from storage; with
``metadata_enable`` (Hudi's ``hoodie.metadata.enable``) true, the metadata table is created
with its ``files`` partition (``mdt.table``) before ``hoodie.properties`` declares it, and
every later commit keeps it up to date (``mdt.maintain``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa

from lakecore.errors import SchemaError, TableExistsError
from lakecore.storage import Storage
from lakecore_hudi.avro_schema import arrow_to_avro, avro_to_arrow
from lakecore_hudi.keys import META_FIELDS
from lakecore_hudi.mdt.table import FILES_PARTITION, initialise_metadata_table
from lakecore_hudi.table_config import PROPERTIES_PATH, TableConfig, TableType
from lakecore_hudi.table_config_out import new_table_properties, render_table_config
from lakecore_hudi.write.lock import table_lock
from lakecore_hudi.write.rows_in import path_segments

#: lakecore's option names (``lakecore.create(..., properties={...})``).
OPTIONS = (
    "record_key",
    "precombine_field",
    "table_type",
    "table_version",
    "hive_style_partitioning",
    "table_name",
    "database_name",
    "metadata_enable",
    "populate_meta_fields",
    "url_encode_partitions",
    "drop_partition_columns",
)
_TABLE_TYPES: dict[str, TableType] = {
    "COPY_ON_WRITE": "COPY_ON_WRITE",
    "COW": "COPY_ON_WRITE",
    "MERGE_ON_READ": "MERGE_ON_READ",
    "MOR": "MERGE_ON_READ",
}
# Hudi's own names for the same settings, accepted as aliases.
_ALIASES = {
    "hoodie.table.recordkey.fields": "record_key",
    "hoodie.datasource.write.recordkey.field": "record_key",
    "hoodie.table.precombine.field": "precombine_field",
    "hoodie.datasource.write.precombine.field": "precombine_field",
    "hoodie.table.type": "table_type",
    "hoodie.datasource.write.table.type": "table_type",
    "hoodie.table.version": "table_version",
    "hoodie.datasource.write.hive_style_partitioning": "hive_style_partitioning",
    "hoodie.table.name": "table_name",
    "hoodie.database.name": "database_name",
    "hoodie.metadata.enable": "metadata_enable",
    "hoodie.populate.meta.fields": "populate_meta_fields",
    "hoodie.datasource.write.partitionpath.urlencode": "url_encode_partitions",
    "hoodie.datasource.write.drop.partition.columns": "drop_partition_columns",
}


@dataclass(frozen=True, slots=True)
class CreateOptions:
    """The validated settings of a new table."""

    table_name: str
    table_type: TableType
    table_version: int
    record_key: tuple[str, ...]
    precombine_field: str | None
    hive_style: bool
    database_name: str | None
    metadata_enable: bool = False
    populate_meta_fields: bool = True
    url_encode_partitions: bool = False
    drop_partition_columns: bool = False

    @classmethod
    def parse(cls, properties: Mapping[str, str], default_name: str) -> CreateOptions:
        """Validate ``properties`` (lakecore names or their ``hoodie.*`` aliases).

        No ``record_key`` makes a keyless table (Hudi 0.14+: keys are generated as records
        are written; no upsert or merge). ``populate_meta_fields=false`` makes a table with
        virtual keys (its files leave the ``_hoodie_*`` columns null); it needs a record key,
        unless ``drop_partition_columns`` is true too: a table of files written by another
        format (partition values in the paths, no meta columns) that only adopts files
        (``write.adopt``), as Apache XTable creates its Hudi targets; lakecore's writer
        refuses both kinds (``layout.ensure_writable``).

        Raises:
            ValueError: an unknown option, a bad table type / version / boolean, or virtual
                keys without a record key.
        """
        values: dict[str, str] = {}
        for key, raw in properties.items():
            name = _ALIASES.get(key, key)
            if name not in OPTIONS:
                raise ValueError(f"unknown Hudi table option {key!r}; known: {list(OPTIONS)}")
            values[name] = str(raw).strip()
        kind = values.get("table_type", "COPY_ON_WRITE").upper()
        if kind not in _TABLE_TYPES:
            raise ValueError(f"table_type must be COPY_ON_WRITE or MERGE_ON_READ, not {kind!r}")
        version = values.get("table_version", "8")
        if version not in ("6", "8", "9"):
            raise ValueError(f"lakecore creates Hudi table versions 6, 8 and 9, not {version!r}")
        hive = values.get("hive_style_partitioning", "false").lower()
        if hive not in ("true", "false"):
            raise ValueError(f"hive_style_partitioning must be true or false, not {hive!r}")
        keys = tuple(k.strip() for k in values.get("record_key", "").split(",") if k.strip())
        metadata = values.get("metadata_enable", "false").lower()
        if metadata not in ("true", "false"):
            raise ValueError(f"metadata_enable must be true or false, not {metadata!r}")
        if metadata == "true" and version == "6":
            raise ValueError("lakecore maintains the metadata tables of table versions 8 and 9")
        populate = values.get("populate_meta_fields", "true").lower()
        if populate not in ("true", "false"):
            raise ValueError(f"populate_meta_fields must be true or false, not {populate!r}")
        dropped = _flag(values, "drop_partition_columns")
        if populate == "false" and not keys and not dropped:
            raise ValueError(
                "populate_meta_fields=false needs a record_key: a table without meta fields "
                "derives its keys from the key columns"
            )
        return cls(
            table_name=_avro_name(values.get("table_name") or default_name),
            table_type=_TABLE_TYPES[kind],
            table_version=int(version),
            record_key=keys,
            precombine_field=values.get("precombine_field") or None,
            hive_style=hive == "true",
            database_name=values.get("database_name") or None,
            metadata_enable=metadata == "true",
            populate_meta_fields=populate == "true",
            url_encode_partitions=_flag(values, "url_encode_partitions"),
            drop_partition_columns=dropped,
        )


def _flag(values: Mapping[str, str], name: str) -> bool:
    """A true/false option (default false); raises ``ValueError`` for anything else."""
    text = values.get(name, "false").strip().lower()
    if text not in ("true", "false"):
        raise ValueError(f"{name} must be true or false, not {values[name]!r}")
    return text == "true"


def _avro_name(text: str) -> str:
    """``text`` made a valid Avro name (the table name is part of the schema's record name)."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", text) or "table"
    return name if not name[0].isdigit() else f"_{name}"


def table_schema_for(schema: pa.Schema, options: CreateOptions, partition_by: Sequence[str]) -> str:
    """Check ``schema`` for a Hudi table and return its Avro schema JSON.

    Raises:
        SchemaError: a type without an Avro equivalent, a ``_hoodie_*`` column, or record key,
            precombine or partition columns that are missing or not plain values.
    """
    reserved = [f.name for f in schema if f.name in META_FIELDS]
    if reserved:
        raise SchemaError(f"column(s) {reserved} are Hudi meta fields; rename them")
    names = set(schema.names)
    for role, columns in (
        ("record key", options.record_key),
        ("precombine", (options.precombine_field,) if options.precombine_field else ()),
        ("partition", tuple(partition_by)),
    ):
        missing = [c for c in columns if c not in names]
        if missing:
            raise SchemaError(f"{role} column(s) {missing} are not in the schema {schema.names}")
        nested = [c for c in columns if pa.types.is_nested(schema.field(c).type)]
        if nested:
            raise SchemaError(f"{role} column(s) {nested} must hold plain values, not nested ones")
    name = options.table_name
    avro = arrow_to_avro(schema, f"{name}_record", f"hoodie.{name}")
    avro_to_arrow(avro)  # what readers will do with it: fail here, not on the first read
    return json.dumps(avro, separators=(",", ":"))


def create_table(
    storage: Storage,
    schema: pa.Schema,
    partition_by: Sequence[str],
    properties: Mapping[str, str],
) -> None:
    """Create an empty Hudi table at ``storage``'s root.

    Raises:
        TableExistsError: ``hoodie.properties`` already exists (decided atomically).
        CommitConflictError: with ``metadata_enable``, another creator held the table lock
            for longer than the lock's expiry (a dead creator's lock is broken after it).
        SchemaError: see ``table_schema_for``.
        ValueError: see ``CreateOptions.parse``.
    """
    default_name = storage.root.rstrip("/").rsplit("/", 1)[-1]
    options = CreateOptions.parse(properties, default_name)
    create_schema = table_schema_for(schema, options, partition_by)
    props = new_table_properties(
        name=options.table_name,
        table_type=options.table_type,
        record_key_fields=options.record_key,
        precombine_field=options.precombine_field,
        partition_fields=tuple(partition_by),
        table_version=options.table_version,
        hive_style=options.hive_style,
        create_schema_json=create_schema,
        database_name=options.database_name,
        populate_meta_fields=options.populate_meta_fields,
    )
    # lakecore's instant times are UTC; say so, so that time-travel by wall clock agrees.
    props["hoodie.table.timeline.timezone"] = "UTC"
    if options.url_encode_partitions:
        props["hoodie.datasource.write.partitionpath.urlencode"] = "true"
    if options.drop_partition_columns:
        props["hoodie.datasource.write.drop.partition.columns"] = "true"
    if not options.metadata_enable:
        _put_properties(storage, props)
        return
    props["hoodie.table.metadata.partitions"] = FILES_PARTITION
    props["hoodie.table.metadata.partitions.inflight"] = ""
    # Building the metadata table deletes a dead create's leftover first; under the table lock,
    # so that a concurrent creator's metadata table (being built, or just finished with its
    # hoodie.properties) is never taken for one.
    with table_lock(storage, TableConfig.from_properties(props)):
        if storage.exists(PROPERTIES_PATH):
            raise TableExistsError(f"{storage.root} already holds a Hudi table")
        initialise_metadata_table(storage, props)
        _put_properties(storage, props)


def _put_properties(storage: Storage, props: Mapping[str, str]) -> None:
    """Write ``hoodie.properties``, which decides (atomically) that the table exists."""
    data = render_table_config(props, comment="Created by lakecore")
    try:
        storage.put_if_absent(PROPERTIES_PATH, data)
    except FileExistsError:
        raise TableExistsError(f"{storage.root} already holds a Hudi table") from None


def check_partition_values(properties: Mapping[str, str], values: pa.Table) -> None:
    """Refuse partition ``values`` (one column per partition column, by name) that a table
    created with ``properties`` could not write, as its first write would
    (``rows_in.path_segments``), but before the table exists: a migration calls it before it
    creates its target. Properties ``create_table`` refuses are left for it to refuse.

    Raises:
        ConstraintViolationError: a value its partition paths cannot hold (``/`` without
            ``url_encode_partitions``; ``.`` or ``..`` without hive-style paths).
        SchemaError: a column type that cannot be a partition column.
    """
    try:
        options = CreateOptions.parse(properties, "table")
    except ValueError:
        return
    for name in values.column_names:
        path_segments(name, values.column(name), options.url_encode_partitions, options.hive_style)
