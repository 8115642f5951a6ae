"""Per-file column statistics: the ``stats`` JSON of add actions to typed Arrow structs."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakecore.model.schema import physical_name
from lakecore_delta.stats_text import read_stats_text

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


def add_stats(adds: pa.Table, fields: Sequence[pa.Field], counts_only: bool = False) -> pa.Table:
    """``numRecords`` and the ``min``/``max``/``null_count`` structs of ``fields`` for add
    actions (columns ``stats`` and, from checkpoints, maybe ``stats_parsed``); ``counts_only``
    as ``parse_stats`` with ``records`` (no JSON parsed for an empty ``fields``).

    Where a checkpoint holds an add's ``stats_parsed`` (``delta.checkpoint.writeStatsAsStruct``)
    the typed struct is used and that add's ``stats`` text is never parsed: the protocol makes
    both the same statistics, and the struct needs no JSON parse. The text is parsed only for
    the adds without a struct (later JSON commits, older checkpoints). A struct without
    ``numRecords`` (empty: written for a file without stats) stands only where there is no
    text either, so it never hides the text's statistics.
    """
    text = adds.column("stats")
    parsed = adds.column("stats_parsed") if "stats_parsed" in adds.column_names else None
    use_struct = None if parsed is None else _struct_stands(parsed, text)
    if parsed is None or use_struct is None or not pc.any(use_struct).as_py():
        records = record_counts(text) if counts_only else None
        return parse_stats(text, fields, records=records)
    struct_stats = stats_from_struct(parsed, fields)
    if pc.all(use_struct).as_py():
        return struct_stats
    # Only the text of the adds without a struct is parsed (a filtered copy: masking the
    # others as null would keep their bytes, which sends the parse down its careful path),
    # then spread back to one row per add, null where the struct stands.
    rest = text.filter(pc.invert(use_struct))
    from_text = parse_stats(rest, fields, records=record_counts(rest) if counts_only else None)
    need = np.invert(use_struct.to_numpy(zero_copy_only=False))
    rows = pa.array(np.cumsum(need, dtype=np.int64) - 1, pa.int64(), mask=~need)
    return merge_stats(from_text.take(rows), struct_stats, use_struct)


def _struct_stands(parsed: pa.ChunkedArray, text: pa.ChunkedArray) -> pa.Array:
    """Which adds take their stats from ``stats_parsed``: a valid struct with ``numRecords``,
    or any valid struct where the add has no text."""
    valid = pc.is_valid(parsed)
    if parsed.type.get_field_index("numRecords") >= 0:
        counted = pc.is_valid(pc.struct_field(parsed, "numRecords"))
        valid = pc.and_(valid, pc.or_(counted, pc.is_null(text)))
    return valid.combine_chunks() if isinstance(valid, pa.ChunkedArray) else valid


def parse_stats(
    stats: pa.Array | pa.ChunkedArray,
    fields: Sequence[pa.Field],
    records: pa.Array | pa.ChunkedArray | None = None,
) -> pa.Table:
    """Parse ``stats`` strings into ``numRecords`` plus ``min``/``max``/``null_count`` structs.

    Fields are the table's data (non-partition) columns, or the subset whose stats are wanted;
    results use logical names. A stat that is absent or unparsable is null ("unknown"), never
    an error: stats only guide pruning. ``records`` (``record_counts(stats)``) stands for
    ``numRecords`` when ``fields`` is empty: then no JSON is parsed at all.
    """
    if isinstance(stats, pa.Array):
        stats = pa.chunked_array([stats], stats.type)
    n = len(stats)
    if records is not None and not fields:
        empty = _empty_structs(n)
        return pa.table({"numRecords": records, "min": empty, "max": empty, "null_count": empty})
    parsed = read_stats_text(stats, stats_json_schema(fields))
    out = {"numRecords": parsed.column("numRecords") if parsed else pa.nulls(n, pa.int64())}
    for key, name in _STAT_KINDS:
        logical = _stats_struct(fields, key, logical=True) or pa.struct([])
        col = parsed.column(key) if parsed and key in parsed.column_names else None
        out[name] = _to_logical(col, fields, logical, n)
    return pa.table(out)


_RECORDS = r'^\{"numRecords":(?P<n>[0-9]{1,18})[,}]'
"""Where writers put ``numRecords`` (Spark, delta-rs, lakecore: first, compact JSON)."""


def record_counts(stats: pa.Array | pa.ChunkedArray) -> pa.ChunkedArray:
    """``numRecords`` of each ``stats`` string (null where unknown), as ``parse_stats`` reads it.

    Values that start with ``{"numRecords":<digits>`` are read by one regular expression over
    all of them; only the others go through the JSON parser.
    """
    if isinstance(stats, pa.Array):
        stats = pa.chunked_array([stats], stats.type)
    out = []
    for chunk in stats.chunks:
        found = pc.extract_regex(chunk, _RECORDS)
        counts = pc.cast(pc.struct_field(found, [0]), pa.int64())
        missed = pc.and_(pc.is_null(counts), pc.is_valid(chunk))
        if pc.any(missed).as_py():
            others = parse_stats(chunk.filter(missed), []).column("numRecords").combine_chunks()
            counts = pc.replace_with_mask(counts, missed, others)
        out.append(counts)
    return pa.chunked_array(out, pa.int64())


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


def _to_logical(
    col: pa.Array | pa.ChunkedArray | None,
    fields: Sequence[pa.Field],
    logical: pa.StructType,
    n: int,
) -> pa.Array | pa.ChunkedArray:
    if isinstance(col, pa.ChunkedArray):
        if col.num_chunks > 1:
            # Chunk by chunk (the JSON reader's pieces): a combined copy of all the parsed
            # stats would cost a tenth of the parse and, briefly, twice their memory.
            parts = [_to_logical(chunk, fields, logical, len(chunk)) for chunk in col.chunks]
            return pa.chunked_array(parts, parts[0].type)
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
        return _empty_structs(n)
    names = [t.name for t in logical]
    return pa.StructArray.from_arrays(children, names=names)


def _empty_structs(n: int) -> pa.StructArray:
    """``n`` valid structs without fields (no Python objects: n can be millions)."""
    return pa.StructArray.from_buffers(pa.struct([]), n, [None])


def _convert(values: pa.Array | None, source: pa.Field, target: pa.DataType, n: int) -> pa.Array:
    if pa.types.is_struct(target):
        if values is None:
            values = pa.nulls(n, pa.struct([]))
        return _to_logical(values, list(source.type), target, n)
    want = target if pa.types.is_integer(target) else source.type
    if values is None:
        return pa.nulls(n, want)
    if values.type == want:
        return values
    # Checkpoint structs may type a stat otherwise than the column now is (written before a
    # type change, or by a writer typing every integer as long): cast it to the column's.
    try:
        return values.cast(want)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return _cast_each(values, want)


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
