"""The ``stats`` JSON text of add actions parsed into Arrow rows (one per value).

The fast path parses the strings' own data buffers in pieces on threads; values it cannot
take (a line break inside, a value that is not one object, text that does not fit the
schema) send the column through a careful parse that keeps every file's stats that fit.
Typing the rows into the file index's structs is ``lakecore_delta.stats``.
"""

from __future__ import annotations

import io
import itertools
import json
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj


def read_stats_text(stats: pa.ChunkedArray, schema: pa.Schema) -> pa.Table | None:
    """One row of ``schema`` per value of ``stats`` (null or empty values: null rows), or
    None when nothing parses; a value's row depends on its own text only."""
    parsed = _read_stats_direct(stats, schema)
    if parsed is None:
        whole = stats.combine_chunks() if stats.num_chunks else pa.array([], pa.string())
        parsed = _read_stats(whole, schema)
    return parsed


_PIECE_BYTES = 8 << 20
"""Stats text parsed per call of the JSON reader: pieces are parsed on a few threads."""


def _read_stats_direct(stats: pa.ChunkedArray, schema: pa.Schema) -> pa.Table | None:
    """Parse the stats straight from the strings' own data buffers (no joined copy).

    A string array's data buffer holds its values back to back (null and empty values hold
    no bytes), and the JSON reader parses a run of concatenated objects as one row each, so
    every piece of the buffer cut at value boundaries is parsed as it is, pieces on parallel
    threads (pyarrow releases the GIL). Returns None, for the careful path, unless every
    non-empty value starts with ``{`` and ends with ``}`` and each piece yields exactly one
    row per value; rows of null or empty values are null.
    """
    jobs: list[tuple[pa.Buffer, int]] = []
    present_chunks: list[npt.NDArray[np.bool_]] = []
    for chunk in stats.chunks:
        if len(chunk) == 0:
            continue
        if not (pa.types.is_string(chunk.type) or pa.types.is_large_string(chunk.type)):
            return None
        pieces = _pieces(chunk)
        if pieces is None:
            return None
        jobs += pieces[0]
        present_chunks.append(pieces[1])
    if not jobs:
        return None
    parsed = _parse_pieces(_merged(jobs), schema)
    if parsed is None:
        return None
    present_all = np.concatenate(present_chunks)
    if bool(present_all.all()):
        return parsed
    # Rows for the values with stats, null rows for the others: one take.
    rows = np.cumsum(present_all, dtype=np.int64) - 1
    return parsed.take(pa.array(rows, pa.int64(), mask=~present_all))


def _merged(jobs: list[tuple[pa.Buffer, int]]) -> list[tuple[pa.Buffer, int]]:
    """``jobs`` with neighbours that lie back to back in one buffer joined (up to about
    ``_PIECE_BYTES``): the chunks of a column sliced from one parsed piece of log (the add
    rows between commitInfo rows) would otherwise each cost one call of the JSON reader."""
    out: list[tuple[pa.Buffer, int]] = []
    for buffer, values in jobs:
        if out:
            last, count = out[-1]
            parent, other = last.parent, buffer.parent
            if (
                parent is not None
                and other is not None
                and (parent.address, parent.size) == (other.address, other.size)
                and last.address + last.size == buffer.address
                and last.size + buffer.size <= _PIECE_BYTES
            ):
                start = last.address - parent.address
                out[-1] = (parent.slice(start, last.size + buffer.size), count + values)
                continue
        out.append((buffer, values))
    return out


def _pieces(
    chunk: pa.Array,
) -> tuple[list[tuple[pa.Buffer, int]], npt.NDArray[np.bool_]] | None:
    """``chunk``'s value bytes cut at value boundaries into pieces of about ``_PIECE_BYTES``,
    each with the number of (non-empty) values it holds, and which values are non-empty.

    None when a non-empty value does not start with ``{`` and end with ``}``. With that,
    values cannot run into each other: a value written by a JSON serializer closes its
    strings, and after an unterminated string the next value's ``{"key`` is a syntax error,
    so the count check of ``_parse_pieces`` sees any value that is not one object.
    """
    width = np.int64 if pa.types.is_large_string(chunk.type) else np.int32
    offsets = np.frombuffer(chunk.buffers()[1], dtype=width)[
        chunk.offset : chunk.offset + len(chunk) + 1
    ].astype(np.int64)
    data = chunk.buffers()[2]
    lengths = np.diff(offsets)
    if chunk.null_count:
        valid = np.asarray(pc.is_valid(chunk).to_numpy(zero_copy_only=False))
        if bool(np.any(lengths[~valid])):
            return None  # a null slot holding bytes (Arrow allows it) would be parsed
    present = lengths > 0
    if data is None or not present.any():
        return [], present
    raw = np.frombuffer(data, dtype=np.uint8)
    starts = offsets[:-1][present]
    if not (
        bool(np.all(raw[starts] == ord("{")))
        and bool(np.all(raw[offsets[1:][present] - 1] == ord("}")))
    ):
        return None
    counts = np.concatenate(([0], np.cumsum(present)))
    targets = np.arange(offsets[0], offsets[-1], _PIECE_BYTES)[1:]
    cuts = np.unique(np.concatenate(([0], np.searchsorted(offsets, targets), [len(chunk)])))
    out = []
    for a, b in itertools.pairwise(cuts):
        start, end = int(offsets[a]), int(offsets[b])
        values = int(counts[b] - counts[a])
        if values:
            out.append((data.slice(start, end - start), values))
    return out, present


def _parse_pieces(jobs: list[tuple[pa.Buffer, int]], schema: pa.Schema) -> pa.Table | None:
    options = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")

    def parse(job: tuple[pa.Buffer, int]) -> pa.Table | None:
        buffer, values = job
        try:
            table = pj.read_json(
                pa.BufferReader(buffer),
                # One block per piece: values may hold line breaks, pieces run in parallel.
                read_options=pj.ReadOptions(block_size=buffer.size + 1, use_threads=False),
                parse_options=options,
            )
        except (pa.ArrowInvalid, ValueError):
            return None
        return table if table.num_rows == values else None

    if len(jobs) == 1:
        tables = [parse(jobs[0])]
    else:
        with ThreadPoolExecutor(min(len(jobs), _parse_threads())) as pool:
            tables = list(pool.map(parse, jobs))
    if any(t is None for t in tables):
        return None
    return pa.concat_tables(_regrouped([t for t in tables if t is not None]))


_SMALL_PIECE_ROWS = 4_096
_JOINED_ROWS = 1 << 16
"""Parsed pieces of fewer than ``_SMALL_PIECE_ROWS`` rows are joined (runs of up to
``_JOINED_ROWS``) before typing: each chunk is typed column by column (~1.5 ms of kernel calls
for five stats columns), and the commits of a JSON log are parsed one by one (100 commits of
1,000 adds cost 0.15 s unjoined). Bigger pieces stay as they are: joining copies, and copying
the 39 pieces of a 1M-file checkpoint cost 0.24 s, more than typing them apart."""


def _regrouped(tables: list[pa.Table]) -> list[pa.Table]:
    """``tables`` with runs of small neighbours joined into one chunk each (in order)."""
    out: list[pa.Table] = []
    run: list[pa.Table] = []
    rows = 0

    def flush() -> None:
        if run:
            out.append(pa.concat_tables(run).combine_chunks() if len(run) > 1 else run[0])
            run.clear()

    for table in tables:
        if table.num_rows >= _SMALL_PIECE_ROWS:
            flush()
            out.append(table)
            rows = 0
            continue
        if rows + table.num_rows > _JOINED_ROWS:
            flush()
            rows = 0
        run.append(table)
        rows += table.num_rows
    flush()
    return out


def _parse_threads() -> int:
    return max(1, min(4, os.cpu_count() or 1))


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
