"""Refusing malformed log actions instead of reading around them.

An ``add`` without a path or partition values, a ``remove`` without a path, an action that is
JSON ``null``, an ``add`` or ``cdc`` of negative size or a ``metaData`` without an id are not
Delta: skipping them silently reads wrong rows (a lost add is lost data), so they raise
``CorruptTableError`` naming the log file and what is wrong. Required fields follow the
protocol's action schemas (and what delta-rs refuses); fields lakecore does not read
(``dataChange``, ``modificationTime``) are not checked.

File actions are checked with Arrow compute over all parsed actions at once; the per-file loop
runs only to name the file once something is wrong.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import CorruptTableError

# Fields of file actions that must be present (non-null) whenever the action is.
REQUIRED_FILE_FIELDS: Mapping[str, tuple[str, ...]] = {
    "add": ("path", "partitionValues", "size"),
    "remove": ("path",),
    "cdc": ("path", "partitionValues", "size"),
    "txn": ("appId", "version"),
}
# Fields of the metaData and protocol actions that must be present. (schemaString may be
# absent: Delta before 1.0 wrote metaData without it, and Delta Spark reads that as an empty
# schema; when present it must be a string.)
REQUIRED_FIELDS: Mapping[str, tuple[str, ...]] = {
    "metaData": ("id", "partitionColumns"),
    "protocol": ("minReaderVersion", "minWriterVersion"),
    **REQUIRED_FILE_FIELDS,
}
_FIELD_TYPES: Mapping[str, type] = {
    "id": str,
    "schemaString": str,
    "partitionColumns": list,
    "minReaderVersion": int,
    "minWriterVersion": int,
}

# A line that is JSON null, or whose action is null ({"add": null}): no action can be read
# from it, and pyarrow's reader would take it for a line without that action. The pattern
# starts at a newline (a literal, so the search is fast); the first line is matched apart.
_NULL_LINE = (
    rb'[ \t]*(?:null[ \t\r]*(?=\n|$)|\{[ \t]*"(add|remove|cdc|txn|metaData|protocol)"'
    rb"[ \t]*:[ \t]*null[ \t]*[,}])"
)
_NULL_FIRST = re.compile(_NULL_LINE)
_NULL_NEXT = re.compile(rb"\n" + _NULL_LINE)


# Lists of strings and maps of strings in metaData / protocol (fuzzing found each of them
# retyped or swapped: features that are a bool, a configuration that is a list ...).
_STRING_LISTS = ("partitionColumns", "readerFeatures", "writerFeatures")
_STRING_MAPS = ("configuration",)


def check_action(kind: str, value: Any, source: str) -> None:
    """Raise ``CorruptTableError`` unless ``value`` is a well-formed ``kind`` action.

    ``kind`` is ``metaData`` or ``protocol`` (as a dict, as the log's JSON holds it);
    ``source`` names the log file it was read from.
    """
    if not isinstance(value, dict):
        raise CorruptTableError(f"{source}: the {kind} action is not an object")
    for name in REQUIRED_FIELDS.get(kind, ()):
        if value.get(name) is None:
            raise CorruptTableError(f"{source}: the {kind} action has no {name}")
    for name, expected in _FIELD_TYPES.items():
        if (
            name in value
            and value[name] is not None
            and (not isinstance(value[name], expected) or isinstance(value[name], bool))
        ):
            raise CorruptTableError(
                f"{source}: the {kind} action's {name} is not a {_type_name(expected)}"
            )
    for name in _STRING_LISTS:
        items = value.get(name)
        if items is not None and (
            not isinstance(items, list) or not all(isinstance(i, str) for i in items)
        ):
            raise CorruptTableError(f"{source}: the {kind} action's {name} is not a string list")
    for name in _STRING_MAPS:
        entries = value.get(name)
        if entries is not None and (
            not isinstance(entries, dict)
            or not all(isinstance(v, str) or v is None for v in entries.values())
        ):
            raise CorruptTableError(f"{source}: the {kind} action's {name} is not a string map")


def _type_name(expected: type) -> str:
    return {str: "string", list: "list", int: "number"}.get(expected, expected.__name__)


def null_action_problem(chunk: bytes) -> str | None:
    """Describe the first line of a commit that is ``null`` or a null action; None if none."""
    match, line = _NULL_FIRST.match(chunk), 1
    if match is None:
        match = _NULL_NEXT.search(chunk)
        if match is None:
            return None
        line = chunk.count(b"\n", 0, match.start()) + 2  # the match starts at a newline
    kind = match.group(1)
    if kind is None:
        return f"line {line} is JSON null, not an action"
    return f"line {line} holds a null {kind.decode()} action"


def file_action_problem(actions: pa.Table) -> str | None:
    """Describe the first malformed file action among parsed ``actions``; None if none.

    ``actions`` has the columns of ``file_action_json_schema`` (or a subset of them).
    """
    for kind, fields in REQUIRED_FILE_FIELDS.items():
        if kind not in actions.column_names:
            continue
        column = actions.column(kind)
        present = pc.is_valid(column)
        if not pc.any(present).as_py():
            continue
        for name in fields:
            if column.type.get_field_index(name) < 0:
                continue
            missing = pc.and_(present, pc.is_null(pc.struct_field(column, name)))
            count = pc.sum(missing).as_py() or 0
            if count:
                row = pc.index(missing, True).as_py()
                return f"{count} {kind} action(s) without {name} (the first in row {row + 1})"
        if kind in _SIZED and column.type.get_field_index("size") >= 0:
            problem = _negative_size(kind, column, present)
            if problem is not None:
                return problem
        problem = _vector_without_storage_type(kind, column)
        if problem is not None:
            return problem
    return None


def _vector_without_storage_type(kind: str, column: pa.ChunkedArray) -> str | None:
    """A ``deletionVector`` with fields but no ``storageType`` cannot be read, and taking it
    for "no deletes" would bring its deleted rows back (an all-null one is no vector)."""
    if column.type.get_field_index("deletionVector") < 0:
        return None
    dv = pc.struct_field(column, "deletionVector")
    if not pa.types.is_struct(dv.type) or dv.type.get_field_index("storageType") < 0:
        return None  # a deletionVector of another type fails where the adds are laid out
    others = [pc.struct_field(dv, f.name) for f in dv.type if f.name != "storageType"]
    if all(o.null_count == len(o) for o in others):
        return None  # no vector has any field: the common case, no mask to build
    has_fields = functools.reduce(pc.or_, [pc.is_valid(o) for o in others])
    orphan = pc.and_(pc.is_null(pc.struct_field(dv, "storageType")), has_fields)
    count = pc.sum(orphan).as_py() or 0
    if not count:
        return None
    row = pc.index(orphan, True).as_py()
    return (
        f"{count} {kind} action(s) with a deletionVector without storageType (the first in "
        f"row {row + 1}: {column[row].as_py().get('path')!r}); its deleted rows cannot be read"
    )


# File actions whose ``size`` is required: "the size of this data file in bytes" (a negative
# one is no size; a remove's optional size only feeds metrics and is left alone).
_SIZED = ("add", "cdc")


def _negative_size(kind: str, column: pa.ChunkedArray, present: Any) -> str | None:
    negative = pc.fill_null(pc.and_(present, pc.less(pc.struct_field(column, "size"), 0)), False)
    count = pc.sum(negative).as_py() or 0
    if not count:
        return None
    row = pc.index(negative, True).as_py()
    first = column[row].as_py() or {}
    return (
        f"{count} {kind} action(s) with a negative size (the first in row {row + 1}: "
        f"{first.get('path')!r}, size {first.get('size')})"
    )


def check_file_actions(
    actions: pa.Table, chunks: Sequence[bytes], sources: Sequence[str], parse: Any
) -> None:
    """Raise ``CorruptTableError`` naming the file of the first malformed file action.

    ``actions`` are the parsed actions of ``chunks`` (read from ``sources``) together;
    ``parse(chunk, i)`` parses one chunk alone (used only once a problem is found, to name the
    file).
    """
    for chunk, source in zip(chunks, sources, strict=True):
        problem = null_action_problem(chunk)
        if problem is not None:
            raise CorruptTableError(f"{source}: {problem}")
    if file_action_problem(actions) is None:
        return
    if len(chunks) == 1:
        raise CorruptTableError(f"{sources[0]}: {file_action_problem(actions)}")
    for i, (chunk, source) in enumerate(zip(chunks, sources, strict=True)):
        problem = file_action_problem(parse(chunk, i))
        if problem is not None:
            raise CorruptTableError(f"{source}: {problem}")
    raise CorruptTableError(f"{sources[0]}..{sources[-1]}: {file_action_problem(actions)}")
