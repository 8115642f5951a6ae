"""Nested columns of a 2.x data file brought to the dataset's type by field id.

A data file keeps the names its fields had when it was written; the dataset may have renamed
or dropped nested fields since (``alter_columns``/``drop_columns`` on ``point.x``). Casting by
name would turn a renamed child into nulls, so the children are matched by Lance field id: the
file's own schema (a ``lance.file.FileDescriptor`` in its first global buffer) names each
field's id, the dataset schema carries ids in ``lakecore.field_id`` metadata. A child the file
lacks reads as nulls; a child the dataset dropped is left out.

2.x footer (little endian, last 40 bytes): u64 column-metadata start, u64 column-metadata
offset table, u64 global-buffer offset table, u32 global buffers, u32 columns, u16 major,
u16 minor, ``LANC``; the offset tables hold (u64 position, u64 size) pairs.
"""

from __future__ import annotations

import struct

import pyarrow as pa
from google.protobuf.message import DecodeError

from lakecore.errors import CorruptTableError
from lakecore.model.schema import field_id
from lakecore.storage import Storage
from lakecore_lance.proto import file_pb2
from lakecore_lance.schema import FieldNode, field_tree

FOOTER = struct.Struct("<QQQIIHH4s")
ENTRY = struct.Struct("<QQ")

Path = tuple[str, ...]


def file_field_ids(storage: Storage, path: str) -> dict[Path, int]:
    """The Lance field id of every field of the 2.x data file ``path``, by its name path."""
    try:
        size = storage.head(path).size
        footer = storage.read(path, max(0, size - FOOTER.size), size)
        if len(footer) != FOOTER.size:
            raise CorruptTableError(f"data file {path} is too short for a Lance file")
        _, _, gbo, buffers, _, _, _, magic = FOOTER.unpack(footer)
        if magic != b"LANC" or buffers < 1:
            raise CorruptTableError(f"data file {path} has no 2.x footer with a schema")
        position, length = ENTRY.unpack(storage.read(path, gbo, gbo + ENTRY.size))
        descriptor = file_pb2.FileDescriptor()
        descriptor.ParseFromString(storage.read(path, position, position + length))
    except (struct.error, DecodeError) as exc:
        raise CorruptTableError(f"data file {path}: its schema does not decode: {exc}") from exc
    found: dict[Path, int] = {}

    def walk(node: FieldNode, prefix: Path) -> None:
        here = (*prefix, node.proto.name)
        found[here] = node.id
        for child in node.children:
            walk(child, here)

    for root in field_tree(list(descriptor.schema.fields)):
        walk(root, ())
    return found


def conform(array: pa.Array, target: pa.Field, ids: dict[Path, int], path: Path) -> pa.Array:
    """``array`` (the file's field at name path ``path``) as ``target``'s type, children by id."""
    t = target.type
    source = array.type
    if pa.types.is_struct(t) and pa.types.is_struct(source):
        by_id = {ids.get((*path, source.field(i).name)): i for i in range(source.num_fields)}
        children = array.flatten()
        arrays = []
        for j in range(t.num_fields):
            child = t.field(j)
            index = by_id.get(field_id(child))
            if index is None:
                arrays.append(pa.nulls(len(array), child.type))
            else:
                name = source.field(index).name
                arrays.append(conform(children[index], child, ids, (*path, name)))
        return pa.StructArray.from_arrays(
            arrays, fields=[t.field(j) for j in range(t.num_fields)], mask=array.is_null()
        )
    lists = (pa.types.is_list, pa.types.is_large_list)
    if any(f(t) for f in lists) and any(f(source) for f in lists):
        item = (*path, source.value_field.name)
        values = conform(array.values, t.value_field, ids, item)
        offsets = array.offsets
        cls = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
        if pa.types.is_large_list(t) != pa.types.is_large_list(source):
            offsets = offsets.cast(pa.int64() if pa.types.is_large_list(t) else pa.int32())
        mask = array.is_null() if array.null_count else None
        return cls.from_arrays(offsets, values, type=t, mask=mask)
    return array if source.equals(t) else array.cast(t)
