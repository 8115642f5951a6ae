"""Writing ``hoodie.properties``: a new table's properties, and the file's rendered bytes.

``new_table_properties`` gives the properties Hudi 0.15 (table version 6), 1.0 (8) or 1.1 (9)
writes when it creates a table; ``render_table_config`` renders any properties as the file,
with the ``hoodie.table.checksum`` a reader validates (see ``lakecore_hudi.table_config``,
which reads it back). Both are pure: the caller puts the bytes on storage.
"""

from __future__ import annotations

from collections.abc import Mapping

from lakecore_hudi.java_properties import escape
from lakecore_hudi.table_config import (
    DEFAULT_PAYLOAD,
    OVERWRITE_PAYLOAD,
    TABLE_TYPES,
    TableType,
    table_checksum,
)

# Record merge strategy ids Hudi writes for its built-in merge modes.
EVENT_TIME_STRATEGY_ID = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
COMMIT_TIME_STRATEGY_ID = "ce9acb64-bde0-424c-9b91-f6ebba25356d"


def render_table_config(props: Mapping[str, str], comment: str | None = None) -> bytes:
    """Render ``props`` as ``hoodie.properties`` bytes (ASCII, Java escapes, sorted keys).

    ``hoodie.table.checksum`` is (re)computed from the table and database names, so a reader
    running Hudi's checksum validation accepts the file. ``comment`` becomes a ``#`` header line.

    Raises:
        ValueError: ``hoodie.table.name`` is missing.
    """
    if not props.get("hoodie.table.name"):
        raise ValueError("hoodie.table.name must be set to render hoodie.properties")
    full = dict(props)
    full["hoodie.table.checksum"] = str(table_checksum(full))
    lines = [f"#{escape(comment, False)}"] if comment else []
    lines += [f"{escape(k, True)}={escape(v, False)}" for k, v in sorted(full.items())]
    return ("\n".join(lines) + "\n").encode("ascii")


def new_table_properties(
    name: str,
    table_type: TableType,
    record_key_fields: tuple[str, ...] | list[str],
    precombine_field: str | None,
    partition_fields: tuple[str, ...] | list[str],
    table_version: int = 8,
    hive_style: bool = False,
    base_file_format: str = "PARQUET",
    create_schema_json: str | None = None,
    populate_meta_fields: bool = True,
    database_name: str | None = None,
) -> dict[str, str]:
    """The properties Hudi 0.15 (``table_version=6``), 1.0 (``8``) or 1.1 (``9``) writes for a
    new table.

    The checksum is added by ``render_table_config``. Key generator: NON_PARTITION when there
    are no partition fields, COMPLEX for several record key or partition fields, else SIMPLE.
    Version 9 names the ordering column ``hoodie.table.ordering.fields`` and records the merge
    mode without a payload class or merge strategy id (Hudi 1.1's ``EightToNineUpgradeHandler``
    turns a version 8 table into that).

    Raises:
        ValueError: ``table_version`` is not 6, 8 or 9, the table type is unknown or the name
            empty.
    """
    if table_version not in (6, 8, 9):
        raise ValueError(f"lakecore creates Hudi tables of version 6, 8 or 9, not {table_version}")
    if table_type not in TABLE_TYPES:
        raise ValueError(f"unknown Hudi table type {table_type!r}")
    if not name:
        raise ValueError("a Hudi table needs a name")
    keygen = _keygen_for(tuple(record_key_fields), tuple(partition_fields))
    props: dict[str, str] = {
        "hoodie.table.name": name,
        "hoodie.table.type": table_type,
        "hoodie.table.version": str(table_version),
        "hoodie.archivelog.folder": "archived",
        "hoodie.datasource.write.drop.partition.columns": "false",
        "hoodie.datasource.write.hive_style_partitioning": "true" if hive_style else "false",
        "hoodie.datasource.write.partitionpath.urlencode": "false",
    }
    if base_file_format.upper() != "PARQUET":
        # Hudi leaves the default format unrecorded.
        props["hoodie.table.base.file.format"] = base_file_format.upper()
    if database_name:
        props["hoodie.database.name"] = database_name
    if record_key_fields:
        props["hoodie.table.recordkey.fields"] = ",".join(record_key_fields)
    if partition_fields:
        props["hoodie.table.partition.fields"] = ",".join(partition_fields)
    if precombine_field:
        ordering_key = "ordering.fields" if table_version >= 9 else "precombine.field"
        props[f"hoodie.table.{ordering_key}"] = precombine_field
    if create_schema_json:
        props["hoodie.table.create.schema"] = create_schema_json
    if not populate_meta_fields:
        props["hoodie.populate.meta.fields"] = "false"
    if table_version == 6:
        props["hoodie.timeline.layout.version"] = "1"
        props["hoodie.table.keygenerator.class"] = f"org.apache.hudi.keygen.{keygen[1]}"
        if table_type == "MERGE_ON_READ":
            # Hudi 0.x's default payload, recorded for MOR tables only.
            props["hoodie.compaction.payload.class"] = OVERWRITE_PAYLOAD
            props["hoodie.compaction.record.merger.strategy"] = EVENT_TIME_STRATEGY_ID
    else:
        # Versions 8 and 9 share the timeline layout; 9 records the merge mode alone (Hudi
        # 1.1's upgrade from 8 drops the payload class and strategy id of built-in modes).
        event_time = precombine_field is not None
        props.update(
            {
                "hoodie.table.initial.version": str(table_version),
                "hoodie.timeline.layout.version": "2",
                "hoodie.timeline.path": "timeline",
                "hoodie.timeline.history.path": "history",
                "hoodie.table.keygenerator.type": keygen[0],
                "hoodie.record.merge.mode": (
                    "EVENT_TIME_ORDERING" if event_time else "COMMIT_TIME_ORDERING"
                ),
            }
        )
        if table_version == 9:
            props["hoodie.table.format"] = "native"
        else:
            props["hoodie.record.merge.strategy.id"] = (
                EVENT_TIME_STRATEGY_ID if event_time else COMMIT_TIME_STRATEGY_ID
            )
            props["hoodie.compaction.payload.class"] = (
                DEFAULT_PAYLOAD if event_time else OVERWRITE_PAYLOAD
            )
    return props


def _keygen_for(keys: tuple[str, ...], partitions: tuple[str, ...]) -> tuple[str, str]:
    """(keygenerator.type, keygenerator class simple name) for the given key layout."""
    if not partitions:
        return "NON_PARTITION", "NonpartitionedKeyGenerator"
    if len(keys) > 1 or len(partitions) > 1:
        return "COMPLEX", "ComplexKeyGenerator"
    return "SIMPLE", "SimpleKeyGenerator"
