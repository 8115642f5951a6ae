"""Reading commit files: raw bytes, the few non-file actions, and file actions as Arrow."""

from __future__ import annotations

import itertools
import json
import os
import re
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, NoReturn

import pyarrow as pa
import pyarrow.json as pj

from lakecore.errors import CorruptTableError
from lakecore.storage import Storage
from lakecore_delta.log.files import LogFile
from lakecore_delta.log.schemas import file_action_json_schema
from lakecore_delta.log.validate import check_action, check_file_actions, null_action_problem

_REMOTE_READERS = 16


def read_all(storage: Storage, files: Sequence[LogFile]) -> list[bytes]:
    """Read ``files`` whole, in order (in parallel when the storage is remote)."""
    paths = [f.path for f in files]
    if getattr(storage, "is_local", False) or len(paths) < 4:
        return [storage.read(p) for p in paths]
    with ThreadPoolExecutor(_REMOTE_READERS) as pool:
        return list(pool.map(storage.read, paths))


def _line_at(chunk: bytes, pos: int) -> bytes:
    start = chunk.rfind(b"\n", 0, pos) + 1
    end = chunk.find(b"\n", pos)
    return chunk[start : end if end >= 0 else len(chunk)]


def find_last_action(
    chunks: Sequence[bytes], files: Sequence[LogFile], key: str
) -> dict[str, Any] | None:
    """Return the newest ``key`` action (e.g. ``metaData``) among the commits, or None.

    Scans bytes from the newest commit backwards and parses only candidate lines, so the
    cost does not grow with the number of add actions.
    """
    needle = f'"{key}"'.encode()
    for chunk, f in zip(reversed(chunks), reversed(files), strict=True):
        pos = chunk.rfind(needle)
        while pos >= 0:
            if pos == 0 or chunk[pos - 1] != ord("\\"):
                action = _parse_line(_line_at(chunk, pos), f)
                if isinstance(action, dict) and key in action:
                    value = action[key]
                    check_action(key, value, f.path)
                    return value  # type: ignore[no-any-return]
            line_start = chunk.rfind(b"\n", 0, pos)
            if line_start < 0:
                break
            pos = chunk.rfind(needle, 0, line_start)
    return None


def parse_actions(chunk: bytes, f: LogFile) -> list[dict[str, Any]]:
    """Parse every action of one commit with ``json`` (for the few places that need all)."""
    out: list[dict[str, Any]] = []
    for line in chunk.splitlines():
        if line.strip():
            action = _parse_line(line, f)
            if not isinstance(action, dict):
                raise CorruptTableError(f"{f.path}: a line is not a JSON object")
            out.append(action)
    return out


def _parse_line(line: bytes, f: LogFile) -> Any:
    try:
        return json.loads(line)
    except ValueError as exc:
        raise CorruptTableError(f"{f.path}: invalid JSON in the commit: {exc}") from exc


def first_action(chunk: bytes, f: LogFile) -> dict[str, Any] | None:
    """Return the first action of a commit (where commitInfo with inCommitTimestamp must be)."""
    for line in chunk.split(b"\n", 8):
        if line.strip():
            action = _parse_line(line, f)
            return action if isinstance(action, dict) else None
    return None


def parse_file_actions(
    chunks: Sequence[bytes], files: Sequence[LogFile], physical_partition_columns: Sequence[str]
) -> pa.Table:
    """Parse the add/remove/cdc/txn actions of commits into one Arrow table, in log order.

    Raises ``CorruptTableError`` naming the first commit that is not valid JSON lines, or
    that holds a malformed action (see ``lakecore_delta.log.validate``).
    """
    schema = file_action_json_schema(physical_partition_columns)
    if not chunks:
        return schema.empty_table()
    try:
        actions = _read_json_pieces(chunks, schema)
    except (pa.ArrowInvalid, ValueError) as exc:
        _raise_for_json(chunks, files, schema, exc)
    check_file_actions(
        actions, chunks, [f.path for f in files], lambda chunk, _: _read_json(chunk, schema)
    )
    return actions


def _raise_for_json(
    chunks: Sequence[bytes], files: Sequence[LogFile], schema: pa.Schema, exc: Exception
) -> NoReturn:
    """Raise ``CorruptTableError`` naming the commit whose JSON ``exc`` came from."""
    for chunk, f in zip(chunks, files, strict=True):
        try:
            _read_json(chunk, schema)
        except (pa.ArrowInvalid, ValueError) as inner:
            raise CorruptTableError(f"{f.path}: not valid Delta JSON: {inner}") from inner
    raise CorruptTableError(f"commits {files[0].path}..{files[-1].path}: {exc}") from exc


_BLOCK_SIZE = 8 << 20
_PARSE_THREADS = 4


def _read_json_pieces(chunks: Sequence[bytes], schema: pa.Schema) -> pa.Table:
    """Parse commits as ``_read_json`` would parse them joined by newlines, in log order.

    Pieces of text (a commit of its own, small commits joined, big ones cut at line ends into
    pieces of about ``_BLOCK_SIZE``) are parsed on parallel threads, one block each: faster
    than the reader's own block threads. Only small commits are copied (joined); the others
    are parsed in place, so the text of the log is never copied whole.
    """
    pieces = _json_pieces(chunks)
    first = next(pieces, b"")
    second = next(pieces, None)
    if second is None:
        return _read_json(first, schema)
    threads = max(1, min(_PARSE_THREADS, os.cpu_count() or 1))
    tables: list[pa.Table] = []
    with ThreadPoolExecutor(threads) as pool:
        pending: deque[Future[pa.Table]] = deque()
        for piece in itertools.chain((first, second), pieces):
            if len(pending) > 2 * threads:
                tables.append(pending.popleft().result())
            pending.append(pool.submit(_read_json, piece, schema, True))
        tables += [f.result() for f in pending]
    return pa.concat_tables(tables)


_OWN_PIECE = 64 << 10
"""A commit at least this big is parsed as a piece of its own (joining copies it, and the
reader's cost per call is small against parsing this much)."""


def _json_pieces(chunks: Sequence[bytes]) -> Iterator[bytes | memoryview]:
    group: list[bytes] = []
    size = 0
    for chunk in chunks:
        if group and (len(chunk) >= _OWN_PIECE or size + len(chunk) > _BLOCK_SIZE):
            yield b"\n".join(group)
            group, size = [], 0
        if len(chunk) < _OWN_PIECE:
            group.append(chunk)
            size += len(chunk) + 1
            continue
        view, start = memoryview(chunk), 0
        while len(chunk) - start > _BLOCK_SIZE:
            end = chunk.find(b"\n", start + _BLOCK_SIZE)
            if end < 0:
                break
            yield view[start:end]
            start = end + 1
        yield view[start:]
    if group:
        yield b"\n".join(group)


# A line whose value starts with null. (JSON strings hold no raw line breaks, so every "\n"
# in a commit ends a line; the search for the literal "\n" prefix is fast.)
_NULL_FIRST_LINE = re.compile(rb"[ \t\r\n]*null")
_NULL_LINE = re.compile(rb"\n[ \t\r]*null")


def _read_json(data: bytes | memoryview, schema: pa.Schema, whole: bool = False) -> pa.Table:
    """Parse JSON lines (``whole``: as one block, on this thread only)."""
    if not data or (len(data) < 4096 and not bytes(data).strip()):
        return schema.empty_table()
    if _NULL_FIRST_LINE.match(data) or _NULL_LINE.search(data):
        # pyarrow's JSON reader (26.0) crashes the process (SIGSEGV) when a block starts with
        # a top-level null; a line that starts with null is no action anyway.
        problem = null_action_problem(bytes(data)) or "a line starts with null, not an action"
        raise pa.ArrowInvalid(problem)
    parse = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    try:
        table = pj.read_json(
            pa.BufferReader(pa.py_buffer(data)),
            read_options=(
                pj.ReadOptions(block_size=len(data) + 1, use_threads=False)
                if whole
                else pj.ReadOptions(block_size=_BLOCK_SIZE)
            ),
            parse_options=parse,
        )
    except pa.ArrowInvalid as exc:
        if "straddling" not in str(exc) and "block" not in str(exc):
            raise
        # A line longer than a block (a huge schema, say): parse the whole buffer as one block.
        table = pj.read_json(
            pa.BufferReader(pa.py_buffer(data)),
            read_options=pj.ReadOptions(block_size=len(data) + 1),
            parse_options=parse,
        )
    # pyarrow's JSON reader keeps invalid UTF-8 in strings; full validation (fast, no copy)
    # raises ArrowInvalid for it here instead of a UnicodeDecodeError far from the log.
    table.validate(full=True)
    return table
