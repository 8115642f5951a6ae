"""The committed protobuf modules agree with the ``.proto`` files they were generated from.

No protoc is needed: a small parser reads each ``.proto`` (messages, nested messages, enums,
fields with their labels, types and numbers, maps, oneofs) and the result is compared with the
descriptors of the generated ``*_pb2`` modules, so a ``.proto`` edited without regenerating
(``make lance-protos``) fails here.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor

PROTO_DIR = Path(__file__).resolve().parents[2] / "plugins" / "lakecore_lance" / "proto"
PROTOS = ("file", "table", "transaction")

_SCALARS = {
    "double": FieldDescriptor.TYPE_DOUBLE,
    "float": FieldDescriptor.TYPE_FLOAT,
    "int64": FieldDescriptor.TYPE_INT64,
    "uint64": FieldDescriptor.TYPE_UINT64,
    "int32": FieldDescriptor.TYPE_INT32,
    "uint32": FieldDescriptor.TYPE_UINT32,
    "bool": FieldDescriptor.TYPE_BOOL,
    "string": FieldDescriptor.TYPE_STRING,
    "bytes": FieldDescriptor.TYPE_BYTES,
    "sint32": FieldDescriptor.TYPE_SINT32,
    "sint64": FieldDescriptor.TYPE_SINT64,
    "fixed32": FieldDescriptor.TYPE_FIXED32,
    "fixed64": FieldDescriptor.TYPE_FIXED64,
}


@dataclass
class ParsedField:
    name: str
    number: int
    label: str  # "", "repeated", "optional", "map"
    type: str  # a scalar name, a (possibly qualified) message/enum name, or "map<k,v>"
    oneof: str | None = None


@dataclass
class ParsedMessage:
    name: str
    fields: list[ParsedField] = field(default_factory=list)
    messages: dict[str, ParsedMessage] = field(default_factory=dict)
    enums: dict[str, dict[str, int]] = field(default_factory=dict)


def _tokens(text: str) -> list[str]:
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.findall(r"map\s*<\s*\w+\s*,\s*[\w.]+\s*>|\"[^\"]*\"|[\w.]+|[{};=<>,()\[\]-]", text)


def parse_proto(text: str) -> tuple[str, ParsedMessage]:
    """Return the package and a root pseudo-message holding the file's messages and enums."""
    toks = _tokens(text)
    pos = 0
    package = ""

    def skip_statement() -> None:
        nonlocal pos
        while toks[pos] != ";":
            pos += 1
        pos += 1

    def parse_enum() -> dict[str, int]:
        nonlocal pos
        values: dict[str, int] = {}
        assert toks[pos] == "{"
        pos += 1
        while toks[pos] != "}":
            if toks[pos] in ("option", "reserved"):
                skip_statement()
                continue
            name, eq, number = toks[pos], toks[pos + 1], toks[pos + 2]
            assert eq == "=", (name, eq)
            values[name] = int(number)
            pos += 3
            skip_statement()
        pos += 1
        return values

    def parse_body(message: ParsedMessage, oneof: str | None = None) -> None:
        nonlocal pos
        assert toks[pos] == "{"
        pos += 1
        while toks[pos] != "}":
            tok = toks[pos]
            if tok in ("reserved", "option"):
                skip_statement()
            elif tok == "message":
                nested = ParsedMessage(toks[pos + 1])
                pos += 2
                parse_body(nested)
                message.messages[nested.name] = nested
            elif tok == "enum":
                name = toks[pos + 1]
                pos += 2
                message.enums[name] = parse_enum()
            elif tok == "oneof":
                name = toks[pos + 1]
                pos += 2
                parse_body(message, oneof=name)
            elif tok == ";":
                pos += 1
            else:
                label = ""
                if tok in ("repeated", "optional"):
                    label, pos = tok, pos + 1
                type_ = toks[pos]
                if type_.startswith("map"):
                    label = "map"
                    type_ = re.sub(r"\s+", "", type_)
                name, eq, number = toks[pos + 1], toks[pos + 2], toks[pos + 3]
                assert eq == "=", (name, eq)
                message.fields.append(ParsedField(name, int(number), label, type_, oneof))
                pos += 4
                skip_statement()
        pos += 1

    root = ParsedMessage("")
    while pos < len(toks):
        tok = toks[pos]
        if tok == "package":
            package = toks[pos + 1]
            skip_statement()
        elif tok in ("syntax", "import", "option"):
            skip_statement()
        elif tok == "message":
            msg = ParsedMessage(toks[pos + 1])
            pos += 2
            parse_body(msg)
            root.messages[msg.name] = msg
        elif tok == "enum":
            name = toks[pos + 1]
            pos += 2
            root.enums[name] = parse_enum()
        else:
            raise AssertionError(f"unexpected token {tok!r}")
    return package, root


def _type_matches(declared: str, fd: FieldDescriptor) -> bool:
    if declared in _SCALARS:
        return fd.type == _SCALARS[declared]
    target = fd.message_type or fd.enum_type
    if target is None:
        return False
    # A reference resolves by suffix: "DataFragment", "lance.file.Field", "MemWal.State", ...
    return ("." + target.full_name).endswith("." + declared)


def _compare_enum(parsed: dict[str, int], enum: EnumDescriptor) -> list[str]:
    actual = {v.name: v.number for v in enum.values}
    return [] if actual == parsed else [f"enum {enum.full_name}: {parsed} != {actual}"]


def _compare(parsed: ParsedMessage, desc: Descriptor) -> list[str]:
    errors: list[str] = []
    actual = {f.name: f for f in desc.fields}
    if set(actual) != {f.name for f in parsed.fields}:
        errors.append(
            f"{desc.full_name}: fields {sorted(f.name for f in parsed.fields)} != {sorted(actual)}"
        )
    for pf in parsed.fields:
        fd = actual.get(pf.name)
        if fd is None:
            continue
        where = f"{desc.full_name}.{pf.name}"
        if fd.number != pf.number:
            errors.append(f"{where}: number {pf.number} != {fd.number}")
        oneof = fd.containing_oneof
        real_oneof = None if oneof is None or oneof.name == f"_{pf.name}" else oneof.name
        if real_oneof != pf.oneof:
            errors.append(f"{where}: oneof {pf.oneof} != {real_oneof}")
        if pf.label == "map":
            entry = fd.message_type
            key, value = pf.type[4:-1].split(",")
            ok = (
                entry is not None
                and entry.GetOptions().map_entry
                and _type_matches(key, entry.fields_by_name["key"])
                and _type_matches(value, entry.fields_by_name["value"])
            )
            if not ok:
                errors.append(f"{where}: not {pf.type}")
            continue
        repeated = fd.is_repeated
        if repeated != (pf.label == "repeated"):
            errors.append(f"{where}: repeated {repeated}, declared {pf.label!r}")
        explicit = oneof is not None and oneof.name == f"_{pf.name}"
        if explicit != (pf.label == "optional"):
            errors.append(f"{where}: proto3 optional {explicit}, declared {pf.label!r}")
        if not _type_matches(pf.type, fd):
            errors.append(f"{where}: type {pf.type!r} != {fd.type}")
    nested = {m.name: m for m in desc.nested_types if not m.GetOptions().map_entry}
    if set(nested) != set(parsed.messages):
        errors.append(f"{desc.full_name}: messages {sorted(parsed.messages)} != {sorted(nested)}")
    for name, sub in parsed.messages.items():
        if name in nested:
            errors.extend(_compare(sub, nested[name]))
    enums = {e.name: e for e in desc.enum_types}
    if set(enums) != set(parsed.enums):
        errors.append(f"{desc.full_name}: enums {sorted(parsed.enums)} != {sorted(enums)}")
    for name, values in parsed.enums.items():
        if name in enums:
            errors.extend(_compare_enum(values, enums[name]))
    return errors


@pytest.mark.parametrize("name", PROTOS)
def test_generated_module_matches_proto(name: str) -> None:
    module = importlib.import_module(f"lakecore_lance.proto.{name}_pb2")
    package, root = parse_proto((PROTO_DIR / f"{name}.proto").read_text())
    file_desc = module.DESCRIPTOR
    assert file_desc.package == package
    assert set(file_desc.message_types_by_name) == set(root.messages)
    assert set(file_desc.enum_types_by_name) == set(root.enums)
    errors: list[str] = []
    for msg_name, parsed in root.messages.items():
        errors.extend(_compare(parsed, file_desc.message_types_by_name[msg_name]))
    for enum_name, values in root.enums.items():
        errors.extend(_compare_enum(values, file_desc.enum_types_by_name[enum_name]))
    assert errors == []


def test_parser_sees_a_changed_field() -> None:
    """The comparison fails when the .proto and the module differ (a renumbered field)."""
    from lakecore_lance.proto import table_pb2

    text = (PROTO_DIR / "table.proto").read_text()
    changed = text.replace("uint64 physical_rows = 4;", "uint64 physical_rows = 40;")
    assert changed != text
    _, root = parse_proto(changed)
    errors = _compare(root.messages["DataFragment"], table_pb2.DataFragment.DESCRIPTOR)
    assert errors == ["lakecore.lance.table.DataFragment.physical_rows: number 40 != 4"]


def test_wire_numbers_of_key_fields() -> None:
    """Spot-check numbers the manifest reader depends on against Lance's published wire format."""
    from lakecore_lance.proto import file_pb2, table_pb2, transaction_pb2

    manifest = table_pb2.Manifest.DESCRIPTOR.fields_by_name
    assert {n: manifest[n].number for n in ("fields", "fragments", "version", "timestamp")} == {
        "fields": 1,
        "fragments": 2,
        "version": 3,
        "timestamp": 7,
    }
    assert manifest["reader_feature_flags"].number == 9
    assert manifest["data_format"].number == 15
    assert table_pb2.DataFragment.DESCRIPTOR.fields_by_name["physical_rows"].number == 4
    assert file_pb2.Field.DESCRIPTOR.fields_by_name["logical_type"].number == 5
    ops = transaction_pb2.Transaction.DESCRIPTOR.oneofs_by_name["operation"]
    assert {f.name: f.number for f in ops.fields}["update"] == 108
