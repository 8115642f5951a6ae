"""Schema evolution of Lance datasets: the ``SchemaUpdate`` builder ``Table.update_schema``
drives. Changes are metadata only, as pylance makes them: an added column is a new field id
no data file holds (it reads as nulls; a Lance ``Merge`` transaction with the fragments
unchanged), a dropped or renamed column a new field list (a Lance ``Project``); data files
keep the ids they were written with.
"""

from __future__ import annotations

import pyarrow as pa

from lakecore.errors import SchemaError, UnsupportedFeatureError
from lakecore.model.actions import Action, FormatPayload
from lakecore_lance.proto import file_pb2, table_pb2
from lakecore_lance.write.changes import FORMAT, LanceChange
from lakecore_lance.write.fields import lance_fields


def next_field_id(m: table_pb2.Manifest) -> int:
    """An id no field of the schema or of any data file has ever had (a dropped field's
    id is never reused: old data files still hold it)."""
    ids = [int(f.id) for f in m.fields]
    ids.extend(int(i) for fragment in m.fragments for d in fragment.files for i in d.fields)
    return max(ids, default=-1) + 1


class LanceSchemaUpdate:
    """Stages schema changes against one manifest; ``actions`` returns them (see the module
    docstring)."""

    def __init__(self, manifest: table_pb2.Manifest) -> None:
        self._fields = [_copy(f) for f in manifest.fields]
        self._next = next_field_id(manifest)
        self._added = False
        self._projected = False

    def _top(self, name: str) -> file_pb2.Field | None:
        return next((f for f in self._fields if f.parent_id == -1 and f.name == name), None)

    def add_column(self, name: str, type: pa.DataType, nullable: bool = True) -> LanceSchemaUpdate:
        """Add a nullable top-level column (existing rows read as nulls).

        Raises ``SchemaError`` if it exists, is NOT NULL (existing rows have no value) or has
        a type Lance cannot hold.
        """
        if self._top(name) is not None:
            raise SchemaError(f"column {name!r} already exists")
        if not nullable:
            raise SchemaError(f"a column added to existing rows must be nullable: {name!r}")
        new = lance_fields(pa.schema([pa.field(name, type, nullable=True)]))
        remap = {int(f.id): self._next + i for i, f in enumerate(new)}
        for f in new:
            f.id = remap[int(f.id)]
            f.parent_id = remap.get(int(f.parent_id), -1)
            self._fields.append(f)
        self._next += len(new)
        self._added = True
        return self

    def rename_column(self, old: str, new: str) -> LanceSchemaUpdate:
        """Rename a top-level column; ``SchemaError`` if ``old`` is missing or ``new`` exists."""
        field = self._top(old)
        if field is None:
            raise SchemaError(f"cannot rename missing column {old!r}")
        if self._top(new) is not None:
            raise SchemaError(f"cannot rename {old!r} to {new!r}: the column exists")
        field.name = new
        self._projected = True
        return self

    def drop_column(self, name: str) -> LanceSchemaUpdate:
        """Drop a top-level column and its children; ``SchemaError`` if it is missing or the
        last one."""
        field = self._top(name)
        if field is None:
            raise SchemaError(f"cannot drop missing column {name!r}")
        gone = {int(field.id)}
        for f in self._fields:  # depth first: parents come before their children
            if int(f.parent_id) in gone:
                gone.add(int(f.id))
        kept = [f for f in self._fields if int(f.id) not in gone]
        if not any(f.parent_id == -1 for f in kept):
            raise SchemaError("cannot drop the last column of a Lance dataset")
        self._fields = kept
        self._projected = True
        return self

    def widen_type(self, name: str, new_type: pa.DataType) -> LanceSchemaUpdate:
        """Not written yet: Lance rewrites the column's data to change its type."""
        raise UnsupportedFeatureError(
            "lance:widen_type",
            f"lakecore does not change column types of Lance datasets yet ({name!r})",
        )

    def actions(self) -> list[Action]:
        """The staged change (none when nothing was staged)."""
        if not (self._added or self._projected):
            return []
        schema = file_pb2.Schema(fields=self._fields).SerializeToString(deterministic=True)
        operation = "project" if self._projected else "add_columns"
        return [FormatPayload(FORMAT, LanceChange(operation, schema=schema))]


def _copy(f: file_pb2.Field) -> file_pb2.Field:
    out = file_pb2.Field()
    out.CopyFrom(f)
    return out
