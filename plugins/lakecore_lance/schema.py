"""A manifest's field list -> the dataset's Arrow schema.

Lance lists the fields of a schema depth first; each names its parent by ``parent_id`` (-1 at
the top). A struct (``"struct"``) has its children as fields, a list (``"list"``,
``"large_list"``, ``"list.struct"``, ``"large_list.struct"``) has one child, its item; every
other logical type is a leaf spelled as a string (``"int64"``, ``"fixed_size_list:float:128"``,
``"dict:string:int32:false"``, ``"timestamp:us:UTC"``, ``"decimal:128:10:2"``...).

Every Arrow field keeps its Lance field id in the ``lakecore.field_id`` metadata key
(``lakecore.model.schema.FIELD_ID``, as Delta column mapping does), next to the field's own
Lance metadata.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa

from lakecore.errors import CorruptTableError, UnsupportedFeatureError
from lakecore.model.schema import FIELD_ID
from lakecore_lance.proto import file_pb2

EXTENSION_NAME = b"ARROW:extension:name"

SIMPLE_TYPES: dict[str, pa.DataType] = {
    "null": pa.null(),
    "bool": pa.bool_(),
    "int8": pa.int8(),
    "uint8": pa.uint8(),
    "int16": pa.int16(),
    "uint16": pa.uint16(),
    "int32": pa.int32(),
    "uint32": pa.uint32(),
    "int64": pa.int64(),
    "uint64": pa.uint64(),
    "halffloat": pa.float16(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "binary": pa.binary(),
    "large_string": pa.large_string(),
    "large_binary": pa.large_binary(),
    "json": pa.large_binary(),
    "date32:day": pa.date32(),
    "date64:ms": pa.date64(),
    "time32:s": pa.time32("s"),
    "time32:ms": pa.time32("ms"),
    "time64:us": pa.time64("us"),
    "time64:ns": pa.time64("ns"),
    "duration:s": pa.duration("s"),
    "duration:ms": pa.duration("ms"),
    "duration:us": pa.duration("us"),
    "duration:ns": pa.duration("ns"),
}
_UNITS = ("s", "ms", "us", "ns")
_LISTS = {"list": pa.list_, "list.struct": pa.list_, "large_list": pa.large_list}
_LISTS["large_list.struct"] = pa.large_list


@dataclass(frozen=True, slots=True)
class FieldNode:
    """One field of the tree: its proto and its children (in schema order)."""

    proto: file_pb2.Field
    children: tuple[FieldNode, ...]

    @property
    def id(self) -> int:
        return int(self.proto.id)

    def ids(self) -> Iterable[int]:
        """This field's id and its descendants', depth first."""
        yield self.id
        for child in self.children:
            yield from child.ids()


def field_tree(fields: Sequence[file_pb2.Field]) -> tuple[FieldNode, ...]:
    """The top-level fields of a depth-first field list, with their children.

    Raises ``CorruptTableError`` for a duplicate id or a parent that does not come first.
    """
    children: dict[int, list[file_pb2.Field]] = {}
    seen: set[int] = set()
    roots: list[file_pb2.Field] = []
    for f in fields:
        if f.id in seen:
            raise CorruptTableError(f"the manifest schema has field id {f.id} twice")
        seen.add(f.id)
        if f.parent_id < 0:
            roots.append(f)
        elif f.parent_id not in seen:
            raise CorruptTableError(
                f"field {f.name!r} (id {f.id}) names parent {f.parent_id}, not listed before it"
            )
        else:
            children.setdefault(f.parent_id, []).append(f)

    def build(f: file_pb2.Field) -> FieldNode:
        return FieldNode(f, tuple(build(c) for c in children.get(f.id, ())))

    return tuple(build(f) for f in roots)


def arrow_schema(
    fields: Sequence[file_pb2.Field], metadata: Mapping[str, bytes] | None = None
) -> pa.Schema:
    """The Arrow schema of a manifest's fields (and schema metadata).

    Raises ``UnsupportedFeatureError`` naming a logical type lakecore does not read, and
    ``CorruptTableError`` for a malformed field tree.
    """
    schema_meta = {k.encode(): bytes(v) for k, v in (metadata or {}).items()} or None
    return pa.schema([arrow_field(n) for n in field_tree(fields)], metadata=schema_meta)


def arrow_field(node: FieldNode) -> pa.Field:
    """The Arrow field of ``node`` with its id in ``lakecore.field_id`` metadata."""
    f = node.proto
    meta: dict[bytes, bytes] = {k.encode(): bytes(v) for k, v in f.metadata.items()}
    meta[FIELD_ID] = str(f.id).encode()
    if f.extension_name:
        meta.setdefault(EXTENSION_NAME, f.extension_name.encode())
    return pa.field(f.name, arrow_type(node), nullable=f.nullable, metadata=meta)


def arrow_type(node: FieldNode) -> pa.DataType:
    """The Arrow type of ``node`` (nested types from its children)."""
    logical = node.proto.logical_type
    where = f"field {node.proto.name!r} (id {node.id})"
    if logical == "struct":
        return pa.struct([arrow_field(c) for c in node.children])
    if logical in _LISTS:
        if len(node.children) != 1:
            raise CorruptTableError(f"{where}: a {logical} has {len(node.children)} children")
        return _LISTS[logical](arrow_field(node.children[0]))
    return leaf_type(logical, where)


def leaf_type(logical: str, where: str = "a field") -> pa.DataType:
    """The Arrow type of a leaf logical type string."""
    simple = SIMPLE_TYPES.get(logical)
    if simple is not None:
        return simple
    parts = logical.split(":")
    try:
        kind = parts[0]
        if kind == "fixed_size_list" and len(parts) >= 3:
            inner = ":".join(parts[1:-1])
            if inner == "lance.bfloat16":
                raise UnsupportedFeatureError(
                    "lance:bfloat16", f"{where}: bfloat16 vectors are not read by lakecore yet"
                )
            return pa.list_(pa.field("item", leaf_type(inner, where)), int(parts[-1]))
        if kind == "fixed_size_binary" and len(parts) == 2:
            return pa.binary(int(parts[1]))
        if kind == "dict" and len(parts) == 4:
            return pa.dictionary(leaf_type(parts[2], where), leaf_type(parts[1], where))
        if kind == "decimal" and len(parts) == 4:
            bits, precision, scale = int(parts[1]), int(parts[2]), int(parts[3])
            if bits == 128:
                return pa.decimal128(precision, scale)
            if bits == 256:
                return pa.decimal256(precision, scale)
        if kind == "timestamp" and len(parts) >= 3 and parts[1] in _UNITS:
            tz = ":".join(parts[2:])
            return pa.timestamp(parts[1], None if tz == "-" else tz)
        if kind in ("time32", "time64", "duration") and len(parts) == 2 and parts[1] in _UNITS:
            made: pa.DataType = getattr(pa, kind)(parts[1])
            return made
    except ValueError as exc:
        raise CorruptTableError(f"{where}: bad logical type {logical!r}: {exc}") from exc
    raise UnsupportedFeatureError(
        f"lance:type:{logical}", f"{where} has Lance type {logical!r}, which lakecore does not read"
    )
