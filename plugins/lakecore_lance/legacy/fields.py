"""The manifest schema's fields as the legacy (v0.1) reader needs them.

A legacy data file does not describe its own columns well enough to be read alone: the page
table is indexed by the manifest's field ids, and each column's Arrow type comes from the field's
``logical_type`` string (``"int64"``, ``"list.struct"``, ``"fixed_size_list:float:128"``,
``"dict:string:int32:false"``...). :class:`LegacyField` is that tree, built from the manifest's
flat, depth-first ``Field`` messages (children point at their parent through ``parent_id``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import pyarrow as pa

from lakecore.errors import CorruptTableError, UnsupportedFeatureError
from lakecore_lance.schema import SIMPLE_TYPES

# protos/file.proto Encoding: how a leaf's pages are laid out.
ENCODING_NONE = 0
ENCODING_PLAIN = 1
ENCODING_VAR_BINARY = 2
ENCODING_DICTIONARY = 3
ENCODING_RLE = 4

_TIME_UNITS = {"s", "ms", "us", "ns"}


class ProtoFieldLike(Protocol):
    """The members of a manifest ``lance.file.Field`` message this reader uses."""

    @property
    def name(self) -> str: ...
    @property
    def id(self) -> int: ...
    @property
    def parent_id(self) -> int: ...
    @property
    def logical_type(self) -> str: ...
    @property
    def nullable(self) -> bool: ...
    @property
    def encoding(self) -> int: ...
    @property
    def dictionary(self) -> ProtoDictionaryLike: ...
    def HasField(self, name: str) -> bool: ...


class ProtoDictionaryLike(Protocol):
    """A ``lance.file.Dictionary`` message: where the dictionary values are stored."""

    @property
    def offset(self) -> int: ...
    @property
    def length(self) -> int: ...


@dataclass(frozen=True, slots=True)
class LegacyField:
    """One field of the manifest schema with its children (depth-first order kept).

    ``dictionary`` is ``(offset, length)`` of the dictionary values in the manifest file (legacy
    datasets keep them there, plain- or var-binary-encoded); ``None`` when the field has none.
    """

    id: int
    name: str
    logical_type: str
    nullable: bool
    encoding: int = ENCODING_NONE
    dictionary: tuple[int, int] | None = None
    children: tuple[LegacyField, ...] = ()

    def arrow_type(self) -> pa.DataType:
        """The Arrow type this field's column has (raises ``UnsupportedFeatureError``)."""
        lt = self.logical_type
        if lt in ("list", "list.struct", "large_list", "large_list.struct"):
            item = self._only_child().arrow_field()
            return pa.large_list(item) if lt.startswith("large") else pa.list_(item)
        if lt == "struct":
            return pa.struct([c.arrow_field() for c in self.children])
        return logical_to_arrow(lt)

    def arrow_field(self) -> pa.Field:
        """This field as an Arrow field (name, type, nullability)."""
        return pa.field(self.name, self.arrow_type(), nullable=self.nullable)

    def _only_child(self) -> LegacyField:
        if len(self.children) != 1:
            raise CorruptTableError(
                f"lance field {self.name!r} (id {self.id}) is a list with "
                f"{len(self.children)} children, expected 1"
            )
        return self.children[0]

    def walk(self) -> Iterable[LegacyField]:
        """This field and all its descendants, depth first."""
        yield self
        for child in self.children:
            yield from child.walk()


def logical_to_arrow(logical_type: str) -> pa.DataType:
    """Map a non-nested Lance logical type string to its Arrow type.

    Raises:
        UnsupportedFeatureError: the string names a type lakecore does not know.
    """
    simple = SIMPLE_TYPES.get(logical_type)
    if simple is not None:
        return simple
    parts = logical_type.split(":")
    try:
        return _parametrized(parts)
    except (ValueError, pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise UnsupportedFeatureError(
            f"lance logical type {logical_type}",
            f"lance logical type {logical_type!r} is not supported by lakecore ({exc})",
        ) from exc


def _parametrized(parts: list[str]) -> pa.DataType:
    kind = parts[0]
    if kind == "fixed_size_list" and len(parts) >= 3:
        inner = ":".join(parts[1:-1])
        item_type = pa.binary(2) if inner == "lance.bfloat16" else logical_to_arrow(inner)
        return pa.list_(pa.field("item", item_type), int(parts[-1]))
    if kind == "fixed_size_binary" and len(parts) == 2:
        return pa.binary(int(parts[1]))
    if kind == "dict" and len(parts) == 4:
        return pa.dictionary(logical_to_arrow(parts[2]), logical_to_arrow(parts[1]))
    if kind == "decimal" and len(parts) == 4:
        bits, precision, scale = int(parts[1]), int(parts[2]), int(parts[3])
        if bits == 128:
            return pa.decimal128(precision, scale)
        if bits == 256:
            return pa.decimal256(precision, scale)
    if kind == "timestamp" and len(parts) == 3 and parts[1] in _TIME_UNITS:
        return pa.timestamp(parts[1], tz=None if parts[2] == "-" else parts[2])
    raise ValueError("unknown logical type")


def fields_from_proto(messages: Sequence[ProtoFieldLike]) -> tuple[LegacyField, ...]:
    """Build the top-level field trees from the manifest's flat ``Field`` messages.

    Raises:
        CorruptTableError: a field names a parent that does not precede it, or ids repeat.
    """
    children: dict[int, list[int]] = {}
    by_id: dict[int, ProtoFieldLike] = {}
    roots: list[int] = []
    for msg in messages:
        if msg.id in by_id:
            raise CorruptTableError(f"lance schema has field id {msg.id} twice")
        if msg.parent_id != -1 and msg.parent_id not in by_id:
            raise CorruptTableError(
                f"lance field {msg.name!r} (id {msg.id}) names parent {msg.parent_id}, "
                "which does not precede it"
            )
        by_id[msg.id] = msg
        children[msg.id] = []
        (roots if msg.parent_id == -1 else children[msg.parent_id]).append(msg.id)

    def build(field_id: int) -> LegacyField:
        msg = by_id[field_id]
        dictionary = None
        if msg.HasField("dictionary"):
            dictionary = (msg.dictionary.offset, msg.dictionary.length)
        return LegacyField(
            id=msg.id,
            name=msg.name,
            logical_type=msg.logical_type,
            nullable=msg.nullable,
            encoding=msg.encoding,
            dictionary=dictionary,
            children=tuple(build(c) for c in children[field_id]),
        )

    return tuple(build(r) for r in roots)
