"""Schema normalization (corpus README, "Schema normalization") and schema comparison."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

_STRINGS = (pa.types.is_string, pa.types.is_large_string, pa.types.is_string_view)
_BINARIES = (pa.types.is_binary, pa.types.is_large_binary, pa.types.is_binary_view)
_LIST_NAME = re.compile(r"(list<)[^:<>,]+: ")


def normalize_type(t: pa.DataType) -> pa.DataType:
    """Return ``t`` with views/large variants, dictionaries and extensions normalized.

    string_view/large_string -> string, binary_view/large_binary -> binary, large_list/
    list_view -> list, dictionary -> value type, extension -> storage type; recursively inside
    struct, list and map. Field names and nullability are kept, field metadata dropped.
    """
    if isinstance(t, pa.ExtensionType):
        return normalize_type(t.storage_type)
    if pa.types.is_dictionary(t):
        return normalize_type(t.value_type)
    if any(test(t) for test in _STRINGS):
        return pa.string()
    if any(test(t) for test in _BINARIES):
        return pa.binary()
    if pa.types.is_struct(t):
        return pa.struct([normalize_field(t.field(i)) for i in range(t.num_fields)])
    if pa.types.is_map(t):
        return pa.map_(normalize_field(t.key_field), normalize_field(t.item_field))
    if pa.types.is_fixed_size_list(t):
        return pa.list_(normalize_field(t.value_field), t.list_size)
    if _is_list_like(t):
        return pa.list_(normalize_field(t.value_field))
    return t


def _is_list_like(t: pa.DataType) -> bool:
    tests = ("is_list", "is_large_list", "is_list_view", "is_large_list_view")
    return any(getattr(pa.types, name, lambda _t: False)(t) for name in tests)


def normalize_field(f: pa.Field) -> pa.Field:
    """Return ``f`` with a normalized type and no metadata."""
    return pa.field(f.name, normalize_type(f.type), nullable=f.nullable)


def describe_schema(schema: pa.Schema) -> list[dict[str, Any]]:
    """Return ``schema`` in the corpus JSON form: ``[{name, type, nullable}]``, normalized."""
    fields = [normalize_field(f) for f in schema]
    return [{"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in fields]


def relax(type_text: str) -> str:
    """Drop nested nullability and list item names from a type string (``list<item: x>``)."""
    return _LIST_NAME.sub(r"\1", type_text.replace(" not null", ""))


def compare_schema(
    actual: pa.Schema, expected: Sequence[dict[str, Any]]
) -> tuple[list[str], list[str]]:
    """Compare ``actual`` with an expected JSON schema; return ``(failures, notes)``.

    Names and normalized types must match. Differences in nullability (top-level or nested)
    and in list item field names (``element`` vs ``item``) and in column order are only noted.
    """
    got = {d["name"]: d for d in describe_schema(actual)}
    want = {str(d["name"]): d for d in expected}
    failures: list[str] = []
    notes: list[str] = []
    missing = [n for n in want if n not in got]
    extra = [n for n in got if n not in want]
    if missing:
        failures.append(f"missing columns {missing}")
    if extra:
        failures.append(f"unexpected columns {extra}")
    for name in (n for n in want if n in got):
        _compare_column(name, got[name], want[name], failures, notes)
    common_got = [n for n in got if n in want]
    if common_got != [n for n in want if n in got]:
        notes.append(f"column order {common_got} differs from expected {list(want)}")
    return failures, notes


def _compare_column(
    name: str, got: dict[str, Any], want: dict[str, Any], failures: list[str], notes: list[str]
) -> None:
    got_type, want_type = str(got["type"]), str(want["type"])
    if got_type != want_type:
        if relax(got_type) == relax(want_type):
            notes.append(
                f"column {name!r}: type {got_type} vs expected {want_type} (nullability/"
                "item name only)"
            )
        else:
            failures.append(f"column {name!r}: type {got_type}, expected {want_type}")
    if bool(got["nullable"]) != bool(want.get("nullable", True)):
        notes.append(
            f"column {name!r}: nullable={got['nullable']}, oracle says {want.get('nullable')}"
        )
