"""Schema evolution of Lance datasets: the ``SchemaUpdate`` builder ``Table.update_schema``
drives. Adds, drops and renames are metadata only, as pylance makes them: an added column is a
new field id no data file holds (it reads as nulls; a Lance ``Merge`` transaction with the
fragments unchanged), a dropped or renamed column a new field list (a Lance ``Project``);
data files keep the ids they were written with. A widened column gets a new field id and, in
every fragment, a new data file (one for all columns widened together) holding its values
cast to the new type (a Lance ``Merge``
with the fragments' new files); the old values stay in the old files under the old id, which
no reader asks for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from lakecore.errors import SchemaError, UnsupportedFeatureError
from lakecore.model.actions import Action, FormatPayload
from lakecore_lance.file_index import FRAGMENT_ID
from lakecore_lance.proto import file_pb2, table_pb2
from lakecore_lance.schema import leaf_type
from lakecore_lance.write.changes import FORMAT, LanceChange
from lakecore_lance.write.fields import ensure_column_name, lance_fields
from lakecore_lance.write.files_out import remove_quietly, write_fragments

if TYPE_CHECKING:
    from lakecore_lance.write.writer import LanceWriter


def next_field_id(m: table_pb2.Manifest) -> int:
    """An id no field of the schema or of any data file has ever had (a dropped field's
    id is never reused: old data files still hold it)."""
    ids = [int(f.id) for f in m.fields]
    ids.extend(int(i) for fragment in m.fragments for d in fragment.files for i in d.fields)
    return max(ids, default=-1) + 1


class LanceSchemaUpdate:
    """Stages schema changes against one manifest; ``actions`` returns them (see the module
    docstring)."""

    def __init__(self, manifest: table_pb2.Manifest, writer: LanceWriter | None = None) -> None:
        self._manifest = manifest
        self._writer = writer
        self._widened: dict[str, pa.DataType] = {}
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
        """Rename a top-level column; ``SchemaError`` if ``old`` is missing, ``new`` exists or
        is no Lance column name (``ensure_column_name``)."""
        field = self._top(old)
        if field is None:
            raise SchemaError(f"cannot rename missing column {old!r}")
        if self._top(new) is not None:
            raise SchemaError(f"cannot rename {old!r} to {new!r}: the column exists")
        ensure_column_name(new)
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
        """Widen a top-level, non-nested column (``is_widening``); its values are rewritten
        when ``actions`` is called.

        Raises ``SchemaError`` for a missing column or a change that is not a widening, and
        ``UnsupportedFeatureError`` for a nested column or a builder without a writer.
        """
        field = self._top(name)
        if field is None:
            raise SchemaError(f"cannot widen missing column {name!r}")
        if any(f.parent_id == field.id for f in self._fields):
            raise UnsupportedFeatureError(
                "lance:widen_nested", f"lakecore widens top-level leaf columns only ({name!r})"
            )
        old = leaf_type(field.logical_type, f"column {name!r}")
        if not is_widening(old, new_type):
            raise SchemaError(f"column {name!r}: {old} -> {new_type} is not a widening")
        if self._writer is None:
            raise UnsupportedFeatureError("lance:widen_type", "widening needs the dataset's writer")
        self._widened[name] = new_type
        return self

    def actions(self) -> list[Action]:
        """The staged change (none when nothing was staged); a widening writes its files
        here (they are listed in the change, so an abort removes them)."""
        if not (self._added or self._projected or self._widened):
            return []
        if self._widened and self._projected:
            raise UnsupportedFeatureError(
                "lance:transaction-shape",
                "widen columns in an update_schema of their own (not with drops or renames)",
            )
        updated: tuple[bytes, ...] = ()
        written: tuple[str, ...] = ()
        if self._widened:
            updated, written = self._rewrite_widened()
        schema = file_pb2.Schema(fields=self._fields).SerializeToString(deterministic=True)
        operation = "project" if self._projected else "add_columns"
        change = LanceChange(operation, schema=schema, updated_fragments=updated, written=written)
        return [FormatPayload(FORMAT, change)]

    def _rewrite_widened(self) -> tuple[tuple[bytes, ...], tuple[str, ...]]:
        """New fields for the widened columns, and every fragment with one new data file per
        widened column (all physical rows, deleted ones included, so offsets still match)."""
        assert self._writer is not None
        writer = self._writer
        m = self._manifest
        new_fields: dict[str, file_pb2.Field] = {}
        for name, new_type in self._widened.items():
            field = self._top(name)
            assert field is not None
            replacement = lance_fields(pa.schema([pa.field(name, new_type, field.nullable)]))[0]
            replacement.id = self._next
            replacement.metadata.update(field.metadata)
            replacement.unenforced_primary_key = field.unenforced_primary_key
            self._next += 1
            field.CopyFrom(replacement)
            new_fields[name] = replacement
        files = writer.snapshot_files()
        index = {int(i): n for n, i in enumerate(files.column(FRAGMENT_ID).to_pylist())}
        updated: list[bytes] = []
        written: list[str] = []
        try:
            for fragment in m.fragments:
                _, _, _, rows = writer.fragment_rows(files.slice(index[int(fragment.id)], 1))
                out = table_pb2.DataFragment()
                out.CopyFrom(fragment)
                columns = {
                    name: rows.column(name).cast(self._widened[name], safe=True)
                    for name in new_fields
                }
                target = pa.schema(
                    [pa.field(n, c.type, new_fields[n].nullable) for n, c in columns.items()]
                )
                made = write_fragments(
                    writer.storage,
                    list(new_fields.values()),
                    m.data_format.version,
                    pa.table(columns).cast(target),
                    rows.num_rows + 1,
                )
                written.extend(made.paths)
                out.files.append(table_pb2.DataFragment.FromString(made.fragments[0]).files[0])
                updated.append(out.SerializeToString(deterministic=True))
        except BaseException:
            remove_quietly(writer.storage, written)
            raise
        return tuple(updated), tuple(written)


_SIGNED = [pa.int8(), pa.int16(), pa.int32(), pa.int64()]
_UNSIGNED = [pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()]
_FLOATS = [pa.float16(), pa.float32(), pa.float64()]


def is_widening(old: pa.DataType, new: pa.DataType) -> bool:
    """Whether ``old`` -> ``new`` keeps every value exactly: wider integers (unsigned into a
    wider signed one too), wider floats, small integers into float64, decimals gaining digits
    on both sides of the point, and string/binary into their large forms."""
    for order in (_SIGNED, _UNSIGNED, _FLOATS):
        if old in order and new in order:
            return order.index(new) > order.index(old)
    if old in _UNSIGNED and new in _SIGNED:
        return _SIGNED.index(new) > _UNSIGNED.index(old)
    if old in (*_SIGNED[:3], *_UNSIGNED[:3]) and new == pa.float64():
        return True
    if pa.types.is_decimal(old) and pa.types.is_decimal(new):
        return bool(
            new != old
            and new.scale >= old.scale
            and new.precision - new.scale >= old.precision - old.scale
        )
    return (old, new) in ((pa.string(), pa.large_string()), (pa.binary(), pa.large_binary()))


def _copy(f: file_pb2.Field) -> file_pb2.Field:
    out = file_pb2.Field()
    out.CopyFrom(f)
    return out
