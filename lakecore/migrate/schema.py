"""Schemas across formats: the user columns of a source, and how a target follows changes."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from lakecore.errors import MigrationError
from lakecore.snapshot import Snapshot


def data_schema(snapshot: Snapshot) -> pa.Schema:
    """The source's user columns: its schema less the columns the format fills itself."""
    system = set(snapshot.features.system_columns)
    return pa.schema(
        [f for f in snapshot.schema if f.name not in system], metadata=snapshot.schema.metadata
    )


def _plain(t: pa.DataType) -> pa.DataType:
    """A type without the field metadata (ids, physical names) formats keep in it."""
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _plain(f.type), f.nullable) for f in t])
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        item = t.value_field
        return pa.list_(pa.field("element", _plain(item.type), item.nullable))
    if pa.types.is_map(t):
        return pa.map_(_plain(t.key_type), _plain(t.item_type))
    return t


@dataclass(frozen=True, slots=True)
class SchemaChange:
    """Columns a target must add, and columns whose type it must widen (to the source's new
    type), so that it holds a new source schema."""

    added: tuple[pa.Field, ...]
    widened: tuple[pa.Field, ...] = ()

    @property
    def empty(self) -> bool:
        """Whether the target holds the source schema as it is."""
        return not self.added and not self.widened


def schema_change(target: pa.Schema, source: pa.Schema, version: int | str) -> SchemaChange:
    """What ``target`` must do to follow ``source`` (source ``version``).

    Added top-level columns are replayed; a dropped or renamed column raises ``MigrationError``
    naming it (its old values would have to change in every target file: migrate with
    ``history=False`` to write the latest schema only). A retyped column is no change when the
    target's type already holds every value of the new source type (``holds``): the target's
    schema is the target format's form of the source's (Avro has no 8/16-bit integers, Hudi
    reads them back as int32), so comparing it with the source's own types would refuse a
    source that did not change at all. Otherwise it is to be widened, if the source's change
    itself widens (the target's schema evolution decides whether it can follow: its refusal
    becomes ``MigrationError`` naming the column).
    """
    names = set(source.names)
    widened: list[pa.Field] = []
    for f in target:
        if f.name not in names:
            raise MigrationError(
                f"source version {version} drops or renames column {f.name!r}; the target "
                "cannot follow that: migrate into a new target (history=False writes only "
                "the latest schema)"
            )
        new = source.field(f.name)
        if not holds(f.type, new.type):
            if not holds(new.type, f.type):
                raise _retyped(version, f, new)
            widened.append(new)
    held = set(target.names)
    return SchemaChange(tuple(f for f in source if f.name not in held), tuple(widened))


def _retyped(version: int | str, old: pa.Field, new: pa.Field) -> MigrationError:
    return MigrationError(
        f"source version {version} changes the type of column {old.name!r} "
        f"({old.type} -> {new.type}); the target cannot follow that: migrate into a new "
        "target (history=False writes only the latest schema)"
    )


def refused_widening(version: int | str, old: pa.Field, new: pa.Field) -> MigrationError:
    """The ``MigrationError`` of a widening the target's schema evolution refuses."""
    return _retyped(version, old, new)


def _same_logical(a: pa.DataType, b: pa.DataType) -> bool:
    """Types a reader may report differently for the same stored values (large vs plain)."""
    pairs = {(pa.string(), pa.large_string()), (pa.binary(), pa.large_binary())}
    return (a, b) in pairs or (b, a) in pairs


_UNITS = ("s", "ms", "us", "ns")


def holds(target: pa.DataType, source: pa.DataType) -> bool:
    """Whether a ``target`` column holds every value of ``source`` type exactly: the same type
    (up to field metadata and large/plain forms), or a wider form a format stores it as
    (integers of more bits, a list for a fixed-size list, a finer timestamp unit, a decimal
    with at least as many integer and fractional digits), recursively inside nested types.
    A nested target field that is NOT NULL does not hold a nullable source field."""
    if _plain(target) == _plain(source) or _same_logical(target, source):
        return True
    if pa.types.is_integer(target) and pa.types.is_integer(source):
        if pa.types.is_signed_integer(target) == pa.types.is_signed_integer(source):
            return bool(target.bit_width >= source.bit_width)
        return bool(pa.types.is_signed_integer(target) and target.bit_width > source.bit_width)
    if pa.types.is_timestamp(target) and pa.types.is_timestamp(source):
        same_zone = (target.tz is None) == (source.tz is None)
        return same_zone and _UNITS.index(target.unit) >= _UNITS.index(source.unit)
    if pa.types.is_decimal(target) and pa.types.is_decimal(source):
        digits = target.precision - target.scale >= source.precision - source.scale
        return bool(digits and target.scale >= source.scale)
    lists = (pa.types.is_list, pa.types.is_large_list, pa.types.is_fixed_size_list)
    if any(f(target) for f in lists[:2]) and any(f(source) for f in lists):
        return _field_holds(target.value_field, source.value_field)
    if pa.types.is_map(target) and pa.types.is_map(source):
        return _field_holds(target.key_field, source.key_field) and _field_holds(
            target.item_field, source.item_field
        )
    if pa.types.is_struct(target) and pa.types.is_struct(source):
        names = [f.name for f in source]
        if [f.name for f in target] != names:
            return False
        return all(_field_holds(target.field(n), source.field(n)) for n in names)
    return False


def _field_holds(target: pa.Field, source: pa.Field) -> bool:
    return holds(target.type, source.type) and (target.nullable or not source.nullable)


def conform(rows: pa.Table, schema: pa.Schema) -> pa.Table:
    """``rows`` with the columns of ``schema``, in its order and types (raises
    ``MigrationError`` naming a column whose values the target type cannot hold)."""
    columns = []
    for f in schema:
        if f.name not in rows.column_names:
            columns.append(pa.nulls(rows.num_rows, f.type))
            continue
        col = rows.column(f.name)
        if col.type != f.type:
            try:
                col = col.cast(f.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise MigrationError(
                    f"column {f.name!r}: the target type {f.type} cannot hold the source's "
                    f"{col.type} values: {exc}"
                ) from exc
        columns.append(col)
    return pa.Table.from_arrays(columns, schema=schema)


def unchanged_as_source(
    target: pa.Schema, mirrored: pa.Schema | None, source: pa.Schema
) -> pa.Schema:
    """``target`` with each column the source did not retype since the target mirrored it
    given the source's type: the target format's form of it (timestamp[ns] kept as us, int8
    as int32) is no change of the source's."""
    if mirrored is None:
        return target
    fields = []
    for f in target:
        same = f.name in mirrored.names and f.name in source.names
        if same and mirrored.field(f.name).type == source.field(f.name).type:
            fields.append(source.field(f.name))
        else:
            fields.append(f)
    return pa.schema(fields)
