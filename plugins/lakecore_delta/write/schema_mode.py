"""deltalake's ``schema_mode`` for Delta appends and overwrites (``FormatWriter.append``).

None: the data must carry every column of the table but its generated columns (which the
writer computes), as ``write_deltalake`` refuses a missing nullable column. ``"merge"``: the
data's new top-level columns are added, nullable, through ``DeltaSchemaUpdate.add_column``
(column-mapping ids and physical names on a mapped table); columns the data lacks are written
as nulls. ``"overwrite"``: the schema becomes the data's, partition columns kept; a mapped
table gives the new columns fresh ids (every old file is removed by the same commit). Either
way the new schema is a ``SetSchema`` action of the write's own commit.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace

import pyarrow as pa

from lakecore.errors import SchemaError
from lakecore.model.actions import Action, SetProperties, SetSchema
from lakecore_delta.protocol import COLUMN_MAPPING_MODE
from lakecore_delta.schema import check_storable, parse_schema_string, schema_string
from lakecore_delta.state import DeltaState
from lakecore_delta.write.create import MAX_COLUMN_ID, with_column_mapping
from lakecore_delta.write.schema_update import DeltaSchemaUpdate


def check_columns(data: pa.Table, schema: pa.Schema, computed: Collection[str]) -> None:
    """Raise ``SchemaError`` naming the table's columns ``data`` lacks (``computed``
    columns, filled by the writer, aside): the default ``schema_mode``."""
    missing = [f.name for f in schema if f.name not in data.column_names and f.name not in computed]
    if missing:
        raise SchemaError(
            f"the data has no column(s) {missing} of the table; pass schema_mode='merge' to "
            "write them as nulls"
        )


def evolved(state: DeltaState, data: pa.Table, mode: str) -> tuple[DeltaState, list[Action]]:
    """The state whose schema the write of ``data`` with ``schema_mode=mode`` gives, and the
    actions recording it (none when the schema stays).

    Raises ``SchemaError`` for a type Delta cannot hold, a new NOT NULL column under
    ``"merge"`` (it is added nullable: only the data's nullability is relaxed), and data
    without a partition column under ``"overwrite"``.
    """
    if mode == "merge":
        actions = _merged(state, data)
    elif mode == "overwrite":
        actions = _replaced(state, data)
    else:
        raise ValueError(f"unknown schema_mode {mode!r}")
    if not actions:
        return state, []
    configuration = state.configuration
    schema = state.schema
    for action in actions:
        if isinstance(action, SetProperties):
            configuration.update({k: v for k, v in action.properties.items() if v is not None})
        elif isinstance(action, SetSchema):
            schema = action.schema
    metadata = {**state.metadata, "configuration": configuration}
    return replace(state, schema=schema, metadata=metadata), actions


def _delta_fields(fields: list[pa.Field]) -> list[pa.Field]:
    """``fields`` in the Arrow types Delta reads them back as (a ``large_string`` is a
    ``string``), metadata dropped; ``SchemaError`` for a type Delta cannot hold."""
    plain = [pa.field(f.name, f.type, f.nullable) for f in fields]
    for f in plain:
        check_storable(f.type, f.name)
    return list(parse_schema_string(schema_string(pa.schema(plain))))


def _merged(state: DeltaState, data: pa.Table) -> list[Action]:
    new = [f for f in data.schema if state.schema.get_field_index(f.name) < 0]
    if not new:
        return []
    update = DeltaSchemaUpdate(state)
    for f in _delta_fields(new):
        update.add_column(f.name, f.type, True)
    return update.actions()


def _replaced(state: DeltaState, data: pa.Table) -> list[Action]:
    missing = [c for c in state.partition_columns if c not in data.column_names]
    if missing:
        raise SchemaError(
            f"the data has no partition column(s) {missing}: an overwrite of the schema keeps "
            "the table's partitioning"
        )
    schema = pa.schema(_delta_fields(list(data.schema)))
    if schema.equals(state.schema, check_metadata=False) and not _mapped(state):
        return []
    if not _mapped(state):
        return [SetSchema(schema)]
    start = int(state.configuration.get(MAX_COLUMN_ID, "0"))
    mapped, max_id = with_column_mapping(schema, start)
    return [SetProperties({MAX_COLUMN_ID: str(max_id)}), SetSchema(mapped)]


def _mapped(state: DeltaState) -> bool:
    return state.configuration.get(COLUMN_MAPPING_MODE, "none") != "none"
