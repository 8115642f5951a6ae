"""An Arrow schema -> a manifest's Lance field list (the inverse of ``lakecore_lance.schema``).

Fields are listed depth first with ids ``0, 1, ...`` (as pylance assigns them on create), each
naming its parent (-1 at the top). Logical types, encodings and nullability are spelled as
pylance 14 spells them (``tests/lance/test_write_fields.py`` compares with pylance's own
manifests). A 2.1+ data file has one column per leaf field, in depth-first order: the data
file's ``fields`` are the leaf ids and its ``column_indices`` count them; a 2.0 file has one
column per field (``column_ids``).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from lakecore.errors import SchemaError
from lakecore.model.distinct_values import repeated
from lakecore_lance.proto import file_pb2
from lakecore_lance.schema import FieldNode, field_tree

PRIMARY_KEY = "lance-schema:unenforced-primary-key"
"""Field metadata marking a primary-key column (``Field.unenforced_primary_key``), as pylance
reads it from an Arrow schema."""

_NAMES: dict[pa.DataType, str] = {
    pa.null(): "null",
    pa.bool_(): "bool",
    pa.int8(): "int8",
    pa.uint8(): "uint8",
    pa.int16(): "int16",
    pa.uint16(): "uint16",
    pa.int32(): "int32",
    pa.uint32(): "uint32",
    pa.int64(): "int64",
    pa.uint64(): "uint64",
    pa.float16(): "halffloat",
    pa.float32(): "float",
    pa.float64(): "double",
    pa.string(): "string",
    pa.binary(): "binary",
    pa.large_string(): "large_string",
    pa.large_binary(): "large_binary",
    pa.date32(): "date32:day",
    pa.date64(): "date64:ms",
}


def logical_type(t: pa.DataType, where: str) -> str:
    """Lance's logical type string of a leaf Arrow type; ``SchemaError`` when Lance has none."""
    name = _NAMES.get(t)
    if name is not None:
        return name
    if pa.types.is_timestamp(t):
        return f"timestamp:{t.unit}:{t.tz or '-'}"
    if pa.types.is_time32(t) or pa.types.is_time64(t):
        return f"time{t.bit_width}:{t.unit}"
    if pa.types.is_duration(t):
        return f"duration:{t.unit}"
    if pa.types.is_decimal128(t) or pa.types.is_decimal256(t):
        return f"decimal:{t.bit_width}:{t.precision}:{t.scale}"
    if pa.types.is_fixed_size_binary(t):
        return f"fixed_size_binary:{t.byte_width}"
    if pa.types.is_fixed_size_list(t):
        return f"fixed_size_list:{logical_type(t.value_type, where)}:{t.list_size}"
    if pa.types.is_dictionary(t):
        value = logical_type(t.value_type, where)
        index = logical_type(t.index_type, where)
        return f"dict:{value}:{index}:{str(t.ordered).lower()}"
    raise SchemaError(f"{where}: Lance datasets cannot hold {t} columns")


def _encoding(t: pa.DataType) -> int:
    if pa.types.is_struct(t) or pa.types.is_null(t):
        return int(file_pb2.NONE)
    if pa.types.is_dictionary(t):
        return int(file_pb2.DICTIONARY)
    if (
        pa.types.is_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_string(t)
        or pa.types.is_large_binary(t)
    ):
        return int(file_pb2.VAR_BINARY)
    return int(file_pb2.PLAIN)


def lance_fields(schema: pa.Schema) -> list[file_pb2.Field]:
    """The depth-first Lance fields of ``schema`` with ids from 0.

    Field metadata is kept (lakecore's own ``lakecore.field_id`` key excepted). Raises
    ``SchemaError`` for a type Lance datasets cannot hold (maps, unions, views, ...); the
    message must name the top-level column, and the nested field's dotted path when the
    type sits below it (a map in a list names its column, not the list's ``element``), for a
    struct repeating a field name, and for a top-level name holding ``.``
    (``ensure_column_name``).
    """
    out: list[file_pb2.Field] = []

    def add(f: pa.Field, parent: int, path: tuple[str, ...]) -> None:
        t = f.type
        path = (*path, f.name)
        where = f"column {path[0]!r}"
        if len(path) > 1:
            where += f" (field {'.'.join(path)!r})"
        if pa.types.is_struct(t):
            logical = "struct"
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            base = "large_list" if pa.types.is_large_list(t) else "list"
            logical = base + (".struct" if pa.types.is_struct(t.value_type) else "")
        else:
            logical = logical_type(t, where)
        meta = {
            k.decode(): bytes(v)
            for k, v in (f.metadata or {}).items()
            if not k.startswith(b"lakecore.")
        }
        proto = file_pb2.Field(
            name=f.name,
            id=len(out),
            parent_id=parent,
            logical_type=logical,
            nullable=f.nullable,
            encoding=_encoding(t),  # type: ignore[arg-type]
            metadata=meta,
            unenforced_primary_key=meta.get(PRIMARY_KEY, b"").lower() == b"true",
        )
        out.append(proto)
        if pa.types.is_struct(t):
            twice = repeated(t.field(i).name for i in range(t.num_fields))
            if twice:  # pylance writes such a struct but cannot read the dataset back
                raise SchemaError(
                    f"{where}: struct field names must be distinct; repeated: {twice}"
                )
            for i in range(t.num_fields):
                add(t.field(i), proto.id, path)
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            add(t.value_field, proto.id, path)

    for f in schema:
        ensure_column_name(f.name)
        add(f, -1, ())
    return out


def ensure_column_name(name: str) -> None:
    """Raise ``SchemaError`` for a top-level column name Lance refuses: one holding ``.``
    (Lance reads it as a path to a nested field; its file writer refuses it, so a dataset
    created with it could never take a row)."""
    if "." in name:
        raise SchemaError(
            f"column {name!r}: Lance top-level column names cannot contain '.' (it separates "
            "the names of nested fields)"
        )


def column_ids(fields: Sequence[file_pb2.Field], data_version: str) -> list[int]:
    """The field ids a data file of ``data_version`` holds, one per column in order: every
    field (depth first) in 2.0 files, the leaves in 2.1+ (as pylance lists them)."""
    if data_version == "2.0":
        return [int(f.id) for top in field_tree(list(fields)) for f in _walk(top)]
    return leaf_ids(fields)


def _walk(node: FieldNode) -> list[file_pb2.Field]:
    out = [node.proto]
    for child in node.children:
        out.extend(_walk(child))
    return out


def leaf_ids(fields: Sequence[file_pb2.Field]) -> list[int]:
    """The ids of the fields without children, depth first: the columns of a 2.1+ data file."""
    out: list[int] = []

    def walk(node: FieldNode) -> None:
        if not node.children:
            out.append(node.id)
        for child in node.children:
            walk(child)

    for top in field_tree(list(fields)):
        walk(top)
    return out
