"""Schema evolution of a Delta table: a builder that stages changes and never mutates.

Renames and drops need column mapping: on a table without it, the builder turns on
``delta.columnMapping.mode = name`` with physical names equal to today's names, so existing
files keep reading right (the protocol upgrade follows from the new property).
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from lakecore.errors import SchemaError
from lakecore.model.actions import Action, SetProperties, SetSchema
from lakecore.model.schema import FIELD_ID, PHYSICAL_NAME
from lakecore_delta.protocol import COLUMN_MAPPING_MODE
from lakecore_delta.schema import (
    CM_ID,
    CM_PHYSICAL,
    DELTA_METADATA,
    check_storable,
    delta_metadata,
    to_delta_type,
)
from lakecore_delta.state import DeltaState
from lakecore_delta.write.create import MAX_COLUMN_ID, with_column_mapping

TYPE_WIDENING = "delta.enableTypeWidening"

_INT_ORDER = [pa.int8(), pa.int16(), pa.int32(), pa.int64()]


def _with_meta(
    f: pa.Field, meta: dict[str, Any], name: str | None = None, t: pa.DataType | None = None
) -> pa.Field:
    out: dict[bytes, bytes] = {DELTA_METADATA: json.dumps(meta, separators=(",", ":")).encode()}
    if CM_ID in meta:
        out[FIELD_ID] = str(meta[CM_ID]).encode()
    if CM_PHYSICAL in meta:
        out[PHYSICAL_NAME] = str(meta[CM_PHYSICAL]).encode()
    return pa.field(name or f.name, t or f.type, f.nullable, metadata=out)


def is_widening(old: pa.DataType, new: pa.DataType) -> bool:
    """Whether Delta's type widening allows ``old`` -> ``new``."""
    if old in _INT_ORDER and new in _INT_ORDER:
        return _INT_ORDER.index(new) > _INT_ORDER.index(old)
    if old == pa.float32() and new == pa.float64():
        return True
    if old in _INT_ORDER[:3] and new == pa.float64():
        return True
    if pa.types.is_date(old) and pa.types.is_timestamp(new) and new.tz is None:
        return True
    if pa.types.is_decimal(old) and pa.types.is_decimal(new):
        return bool(
            new.scale >= old.scale
            and (new.precision - new.scale) >= (old.precision - old.scale)
            and new != old
        )
    if old in _INT_ORDER and pa.types.is_decimal(new):
        digits = {pa.int8(): 3, pa.int16(): 5, pa.int32(): 10, pa.int64(): 20}[old]
        return bool(new.precision - new.scale >= digits)
    return False


class DeltaSchemaUpdate:
    """Stages schema changes against a snapshot's state; ``actions()`` returns them."""

    def __init__(self, state: DeltaState) -> None:
        self._state = state
        self._schema = state.schema
        self._properties: dict[str, str | None] = {}
        self._mode = state.configuration.get(COLUMN_MAPPING_MODE, "none")
        self._max_id = int(state.configuration.get(MAX_COLUMN_ID, "0"))

    def _index(self, name: str) -> int:
        i = int(self._schema.get_field_index(name))
        if i < 0:
            raise SchemaError(f"no column {name!r}; the table has {self._schema.names}")
        return i

    def _need_mapping(self) -> None:
        if self._mode != "none":
            return
        # Existing columns keep their names as physical names: old files stay readable.
        fields = [_physical_is_name(f) for f in self._schema]
        self._schema, self._max_id = with_column_mapping(pa.schema(fields), self._max_id)
        self._mode = "name"
        self._properties[COLUMN_MAPPING_MODE] = "name"
        self._properties[MAX_COLUMN_ID] = str(self._max_id)

    def add_column(self, name: str, type: pa.DataType, nullable: bool = True) -> DeltaSchemaUpdate:
        """Add a top-level column (existing rows read it as null, so it must be nullable)."""
        if self._schema.get_field_index(name) >= 0:
            raise SchemaError(f"column {name!r} already exists")
        if not nullable:
            raise SchemaError(f"new column {name!r} must be nullable: existing rows have no value")
        to_delta_type(type, name)
        check_storable(type, name)
        field = pa.field(name, type, True)
        if self._mode != "none":
            field, self._max_id = _mapped_one(field, self._max_id)
            self._properties[MAX_COLUMN_ID] = str(self._max_id)
        self._schema = self._schema.append(field)
        return self

    def rename_column(self, old: str, new: str) -> DeltaSchemaUpdate:
        """Rename a column (enables column mapping when the table has none)."""
        if self._schema.get_field_index(new) >= 0:
            raise SchemaError(f"column {new!r} already exists")
        if old in self._state.partition_columns:
            raise SchemaError(f"renaming partition column {old!r} is not supported")
        self._need_mapping()
        i = self._index(old)
        f = self._schema.field(i)
        self._schema = self._schema.set(i, _with_meta(f, delta_metadata(f), name=new))
        return self

    def drop_column(self, name: str) -> DeltaSchemaUpdate:
        """Drop a column (enables column mapping when the table has none)."""
        if name in self._state.partition_columns:
            raise SchemaError(f"dropping partition column {name!r} is not supported")
        self._need_mapping()
        i = self._index(name)
        if len(self._schema) == 1:
            raise SchemaError("cannot drop the last column")
        self._schema = self._schema.remove(i)
        return self

    def widen_type(self, name: str, new_type: pa.DataType) -> DeltaSchemaUpdate:
        """Widen a column's type (typeWidening: e.g. int -> long, float -> double)."""
        i = self._index(name)
        f = self._schema.field(i)
        if not is_widening(f.type, new_type):
            raise SchemaError(f"column {name!r}: {f.type} -> {new_type} is not a type widening")
        check_storable(new_type, name)
        meta = delta_metadata(f)
        changes = list(meta.get("delta.typeChanges") or [])
        changes.append(
            {"fromType": to_delta_type(f.type, name), "toType": to_delta_type(new_type, name)}
        )
        self._schema = self._schema.set(
            i, _with_meta(f, {**meta, "delta.typeChanges": changes}, t=new_type)
        )
        self._properties[TYPE_WIDENING] = "true"
        return self

    def actions(self) -> list[Action]:
        """The staged changes (empty when nothing changed)."""
        if self._schema.equals(self._state.schema, check_metadata=True) and not self._properties:
            return []
        out: list[Action] = []
        if self._properties:
            out.append(SetProperties(dict(self._properties)))
        out.append(SetSchema(self._schema))
        return out


def _physical_is_name(f: pa.Field) -> pa.Field:
    t = f.type
    if pa.types.is_struct(t):
        t = pa.struct([_physical_is_name(t.field(i)) for i in range(t.num_fields)])
    return _with_meta(f, {**delta_metadata(f), CM_PHYSICAL: f.name}, t=t)


def _mapped_one(field: pa.Field, max_id: int) -> tuple[pa.Field, int]:
    schema, new_max = with_column_mapping(pa.schema([field]), max_id)
    return schema.field(0), new_max
