"""Per-file column statistics: the ``stats`` JSON of add actions to typed Arrow structs."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from lakecore.model.schema import physical_name

_STAT_KINDS = (("minValues", "min"), ("maxValues", "max"), ("nullCount", "null_count"))


def _stat_leaf_type(t: pa.DataType, kind: str, logical: bool) -> pa.DataType | None:
    if pa.types.is_struct(t):
        return _stats_struct(list(t), kind, logical)
    if kind == "nullCount":
        return pa.int64()
    if pa.types.is_nested(t) or pa.types.is_binary(t) or pa.types.is_boolean(t):
        return None  # the protocol collects no min/max for these
    if pa.types.is_date(t):
        return pa.string()  # Arrow's JSON reader takes dates only as text; cast afterwards
    return t


def _stats_struct(fields: Sequence[pa.Field], kind: str, logical: bool) -> pa.StructType | None:
    children = []
    for f in fields:
        leaf = _stat_leaf_type(f.type, kind, logical)
        if leaf is not None:
            children.append(pa.field(f.name if logical else physical_name(f), leaf))
    return pa.struct(children) if children else None


def stats_json_schema(fields: Sequence[pa.Field]) -> pa.Schema:
    """The Arrow schema used to parse the ``stats`` JSON of files with these data columns."""
    out: list[pa.Field] = [pa.field("numRecords", pa.int64())]
    for key, _ in _STAT_KINDS:
        st = _stats_struct(fields, key, logical=False)
        if st is not None:
            out.append(pa.field(key, st))
    return pa.schema(out)


def parse_stats(stats: pa.Array | pa.ChunkedArray, fields: Sequence[pa.Field]) -> pa.Table:
    """Parse ``stats`` strings into ``numRecords`` plus ``min``/``max``/``null_count`` structs.

    Fields are the table's data (non-partition) columns; results use logical names. A stat that
    is absent or unparsable is null ("unknown"), never an error: stats only guide pruning.
    """
    if isinstance(stats, pa.ChunkedArray):
        stats = stats.combine_chunks() if stats.num_chunks else pa.array([], pa.string())
    n = len(stats)
    schema = stats_json_schema(fields)
    parsed = _read_stats(stats, schema)
    out = {"numRecords": parsed.column("numRecords") if parsed else pa.nulls(n, pa.int64())}
    for key, name in _STAT_KINDS:
        logical = _stats_struct(fields, key, logical=True) or pa.struct([])
        col = parsed.column(key) if parsed and key in parsed.column_names else None
        out[name] = _to_logical(col, fields, logical, n)
    return pa.table(out)


def stats_from_struct(parsed: pa.Array | pa.ChunkedArray, fields: Sequence[pa.Field]) -> pa.Table:
    """Convert checkpoint ``stats_parsed`` structs to the shape ``parse_stats`` returns."""
    if isinstance(parsed, pa.ChunkedArray):
        parsed = parsed.combine_chunks()
    n = len(parsed)
    names = {parsed.type.field(i).name for i in range(parsed.type.num_fields)}

    def part(key: str) -> pa.Array | None:
        return pc.struct_field(parsed, key) if key in names else None

    records = part("numRecords")
    out = {
        "numRecords": records.cast(pa.int64()) if records is not None else pa.nulls(n, pa.int64())
    }
    for key, name in _STAT_KINDS:
        logical = _stats_struct(fields, key, logical=True) or pa.struct([])
        out[name] = _to_logical(part(key), fields, logical, n)
    return pa.table(out)


def merge_stats(json_stats: pa.Table, struct_stats: pa.Table, use_struct: pa.Array) -> pa.Table:
    """Take ``struct_stats`` where ``use_struct`` is true, else ``json_stats`` (same shapes)."""
    return pa.table(
        {
            name: pc.if_else(use_struct, struct_stats.column(name), json_stats.column(name))
            for name in json_stats.column_names
        }
    )


def _read_stats(stats: pa.Array, schema: pa.Schema) -> pa.Table | None:
    if len(stats) == 0:
        return schema.empty_table()
    filled = pc.fill_null(stats, "{}")
    blank = pc.or_(pc.equal(filled, ""), _null_text(filled))
    if pc.any(blank).as_py():  # rare: if_else would copy all the stats text
        filled = pc.if_else(blank, "{}", filled)
    if pc.any(pc.match_substring(filled, "\n")).as_py():
        # A line break inside a value could start a JSON block with a top-level null (see
        # _null_text); the lenient parse reads each value on a line of its own.
        return _read_stats_lenient(filled, schema)
    try:
        parsed = pj.read_json(
            _joined_lines(filled),
            read_options=pj.ReadOptions(block_size=16 << 20),
            parse_options=pj.ParseOptions(
                explicit_schema=schema, unexpected_field_behavior="ignore"
            ),
        )
    except (pa.ArrowInvalid, ValueError):
        return _read_stats_lenient(filled, schema)
    if parsed.num_rows != len(filled):
        # A value held a line break (pretty-printed or several objects): rows no longer
        # line up with files.
        return _read_stats_lenient(filled, schema)
    return parsed


_NULL_STARTS = pa.array([" ", "\t", "\n", "\r", "n"], pa.string())


def _null_text(strings: pa.Array) -> pa.Array:
    """Which stats are JSON ``null`` (no stats): pyarrow's JSON reader (26.0) crashes the
    process (SIGSEGV) when a block starts with a top-level null, so they never reach it."""
    suspect = pc.is_in(pc.utf8_slice_codeunits(strings, 0, 1), value_set=_NULL_STARTS)
    if not pc.any(suspect).as_py():
        return suspect
    return pc.fill_null(pc.match_substring_regex(strings, r"^\s*null"), False)


def _joined_lines(strings: pa.Array) -> pa.BufferReader:
    """Newline-separated values as one buffer, built by Arrow without a Python loop.

    Joined in 32-bit offsets while the result fits (a cast to large_string would copy all the
    text once more), in large_string beyond that.
    """
    if pa.types.is_string(strings.type) and strings.nbytes + len(strings) < 2**31 - 1:
        width = "int32"
    else:
        strings, width = strings.cast(pa.large_string()), "int64"
    lines = pc.binary_join_element_wise(
        strings, pa.scalar("\n", strings.type), pa.scalar("", strings.type)
    )
    offsets = np.frombuffer(lines.buffers()[1], dtype=width)[
        lines.offset : lines.offset + len(lines) + 1
    ]
    start, end = int(offsets[0]), int(offsets[-1])
    return pa.BufferReader(lines.buffers()[2].slice(start, end - start))


def _read_stats_lenient(strings: pa.Array, schema: pa.Schema) -> pa.Table | None:
    """Parse when the one-shot parse failed: keep every file's stats that fit the schema.

    Halves the batch until the bad files are isolated (so one bad file among millions costs
    a few dozen parses, not one per file), then keeps each part of a bad file's stats
    (``numRecords``, each column of ``minValues`` ...) that parses on its own. Good files'
    stats are parsed from their own text: re-serialising would round decimals via floats.
    """
    options = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    # JSON text holds line breaks only as whitespace (inside strings they are escaped).
    lines = [s.replace("\r", " ").replace("\n", " ") for s in strings.to_pylist()]
    return _parse_halving(lines, options)


def _parse_lines(lines: Sequence[str], options: pj.ParseOptions) -> pa.Table | None:
    try:
        table = pj.read_json(
            io.BytesIO("\n".join(lines).encode()),
            read_options=pj.ReadOptions(block_size=16 << 20),
            parse_options=options,
        )
    except (pa.ArrowInvalid, ValueError):
        return None
    return table if table.num_rows == len(lines) else None


def _parse_halving(lines: Sequence[str], options: pj.ParseOptions) -> pa.Table:
    table = _parse_lines(lines, options)
    if table is not None:
        return table
    if len(lines) == 1:
        salvaged = _salvage(lines[0], lambda line: _parse_lines([line], options) is not None)
        return pj.read_json(io.BytesIO(salvaged.encode()), parse_options=options)
    mid = len(lines) // 2
    return pa.concat_tables(
        [_parse_halving(lines[:mid], options), _parse_halving(lines[mid:], options)]
    )


def _salvage(text: str, fits: Callable[[str], bool]) -> str:
    """The parts of one file's stats JSON that parse on their own, as one JSON line."""
    try:
        row = json.loads(text)
    except ValueError:
        return "{}"
    if not isinstance(row, dict):
        return "{}"
    kept: dict[str, object] = {}
    for key, value in row.items():
        if isinstance(value, dict):
            part = {c: v for c, v in value.items() if fits(json.dumps({key: {c: v}}))}
            if part:
                kept[key] = part
        elif fits(json.dumps({key: value})):
            kept[key] = value
    return json.dumps(kept)


def _to_logical(
    col: pa.Array | pa.ChunkedArray | None,
    fields: Sequence[pa.Field],
    logical: pa.StructType,
    n: int,
) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    children = []
    for target in logical:
        source = next(f for f in fields if f.name == target.name)
        values = None
        index = col.type.get_field_index(physical_name(source)) if col is not None else -1
        if index >= 0:
            # By index: pyarrow reads a name starting with "." or "[" as a field path.
            values = pc.struct_field(col, [index])
        children.append(_convert(values, source, target.type, n))
    if not children:
        return pa.array([{}] * n, pa.struct([]))
    names = [t.name for t in logical]
    return pa.StructArray.from_arrays(children, names=names)


def _convert(values: pa.Array | None, source: pa.Field, target: pa.DataType, n: int) -> pa.Array:
    if pa.types.is_struct(target):
        if values is None:
            values = pa.nulls(n, pa.struct([]))
        return _to_logical(values, list(source.type), target, n)
    if values is None:
        return pa.nulls(n, target if pa.types.is_integer(target) else source.type)
    try:
        return values if pa.types.is_integer(target) else values.cast(source.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return _cast_each(values, source.type)


def _cast_each(values: pa.Array, t: pa.DataType) -> pa.Array:
    """Cast value by value, nulling only the values that do not convert (one bad file's
    stats must not hide the stats of the others)."""
    out = []
    for v in values:
        try:
            out.append(v.cast(t).as_py())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            out.append(None)
    return pa.array(out, t)
