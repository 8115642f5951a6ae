"""Creating a Delta table: commit 0 with protocol and metadata."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from lakecore.errors import InvalidArgumentError, SchemaError, TableExistsError
from lakecore.model.actions import CommitInfo
from lakecore.model.schema import FIELD_ID, PHYSICAL_NAME
from lakecore.storage import Storage
from lakecore_delta.commit_metadata import ENABLE_ICT, ict_enabled
from lakecore_delta.log.files import commit_path
from lakecore_delta.protocol import COLUMN_MAPPING_MODE
from lakecore_delta.schema import (
    CM_ID,
    CM_PHYSICAL,
    DELTA_METADATA,
    check_storable,
    declared_metadata,
    schema_string,
)
from lakecore_delta.write.features import protocol_for, required_features
from lakecore_delta.write.log_out import commit_info_line, encode_lines, now_ms
from lakecore_delta.write.properties import validate_properties

MAX_COLUMN_ID = "delta.columnMapping.maxColumnId"


def with_column_mapping(schema: pa.Schema, start: int = 0) -> tuple[pa.Schema, int]:
    """Give every field (nested too) a column-mapping id and physical name.

    Returns the schema and the largest id used. Fields that have an id keep it.
    """
    counter = [start]

    def assign(f: pa.Field) -> pa.Field:
        t = f.type
        if pa.types.is_struct(t):
            t = pa.struct([assign(t.field(i)) for i in range(t.num_fields)])
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            t = pa.list_(_nested(t.value_field))
        elif pa.types.is_map(t):
            t = pa.map_(_nested(t.key_field).with_nullable(False), _nested(t.item_field))
        meta = declared_metadata(f)  # plain delta.* keys too (a generation expression)
        if CM_ID not in meta:
            counter[0] += 1
            meta = {CM_PHYSICAL: f"col-{uuid.uuid4()}", **meta, CM_ID: counter[0]}
        return pa.field(
            f.name,
            t,
            f.nullable,
            metadata={
                DELTA_METADATA: json.dumps(meta, separators=(",", ":")).encode(),
                FIELD_ID: str(meta[CM_ID]).encode(),
                PHYSICAL_NAME: str(meta[CM_PHYSICAL]).encode(),
            },
        )

    def _nested(element: pa.Field) -> pa.Field:
        # List elements and map keys/values carry no mapping themselves; structs inside do.
        t = element.type
        if pa.types.is_struct(t):
            t = pa.struct([assign(t.field(i)) for i in range(t.num_fields)])
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            t = pa.list_(_nested(t.value_field))
        elif pa.types.is_map(t):
            t = pa.map_(_nested(t.key_field).with_nullable(False), _nested(t.item_field))
        return pa.field(element.name, t, element.nullable, metadata=element.metadata)

    return pa.schema([assign(f) for f in schema]), counter[0]


def initial_commit(
    schema: pa.Schema,
    partition_by: Sequence[str],
    properties: Mapping[str, str],
    timestamp_ms: int | None = None,
) -> bytes:
    """The bytes of commit 0 for a new table.

    ``timestamp_ms``: the creation's commit time (a migration replaying its source's
    history). Only in-commit timestamps make a chosen time visible to time travel, so it
    enables them (``delta.enableInCommitTimestamps=true``) unless the properties turn them
    off, which raises ``InvalidArgumentError``.

    Raises ``InvalidArgumentError`` for a property value Delta would refuse
    (``validate_properties``).
    """
    configuration = {k: str(v) for k, v in properties.items()}
    if timestamp_ms is not None:
        if not ict_enabled(configuration) and ENABLE_ICT in configuration:
            raise InvalidArgumentError(
                f"a creation timestamp needs in-commit timestamps, but {ENABLE_ICT} is "
                f"{configuration[ENABLE_ICT]!r}"
            )
        configuration[ENABLE_ICT] = "true"
    validate_properties(configuration)
    if COLUMN_MAPPING_MODE in configuration:
        # Delta reads the mode in any case; lakecore's readers compare it in lower case.
        configuration[COLUMN_MAPPING_MODE] = configuration[COLUMN_MAPPING_MODE].lower()
    if configuration.get(COLUMN_MAPPING_MODE, "none") != "none":
        schema, max_id = with_column_mapping(schema)
        configuration[MAX_COLUMN_ID] = str(max_id)
    now = now_ms() if timestamp_ms is None else int(timestamp_ms)
    metadata: dict[str, Any] = {
        "id": str(uuid.uuid4()),
        "format": {"provider": "parquet", "options": {}},
        "schemaString": schema_string(schema),
        "partitionColumns": list(partition_by),
        "configuration": configuration,
        "createdTime": now,
    }
    protocol = protocol_for(required_features(schema, configuration))
    ict = now if ict_enabled(configuration) else None
    info = CommitInfo(
        "CREATE TABLE",
        {"partitionBy": list(partition_by), "properties": configuration, "isManaged": "false"},
    )
    lines = [
        commit_info_line(info, None, now, ict, True),
        {"protocol": protocol},
        {"metaData": metadata},
    ]
    return encode_lines(lines)


def create_table(
    storage: Storage,
    schema: pa.Schema,
    partition_by: Sequence[str],
    properties: Mapping[str, str],
    timestamp_ms: int | None = None,
) -> None:
    """Create the table with an atomic put of commit 0; ``TableExistsError`` if it exists.

    ``timestamp_ms`` as for ``initial_commit``."""
    for name in partition_by:
        t = schema.field(name).type
        if pa.types.is_nested(t):
            raise SchemaError(f"partition column {name!r} has nested type {t}")
    for f in schema:
        check_storable(f.type, f.name)
    try:
        commit = initial_commit(schema, partition_by, properties, timestamp_ms)
        storage.put_if_absent(commit_path(0), commit)
    except FileExistsError as exc:
        raise TableExistsError(f"{storage.root} already holds a Delta table") from exc
