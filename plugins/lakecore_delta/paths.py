"""Paths in the Delta log: URL-decoding and making them relative to the table root."""

from __future__ import annotations

from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakecore.storage.paths import contained_path, is_absolute
from lakecore_delta.log.files import LOG_DIR


def decode_paths(
    paths: pa.Array | pa.ChunkedArray, root: str, source: str | None = None
) -> pa.Array | pa.ChunkedArray:
    """Return log paths decoded (no ``%`` escapes), relative to ``root`` when inside it.

    Delta stores paths as URIs: relative ones are URL-encoded and resolved against the root;
    absolute ones (``file:/...``, ``s3://...``) are kept absolute unless they point inside
    the table (the protocol allows them as references to read; nothing deletes them). Dot
    segments are resolved. Only the paths that need it go through Python, so the common case
    stays vectorised. ``source`` names the log file the paths come from (for errors; default:
    the table's log). A chunked array comes back chunked the same way (a million paths
    are ~90 MB: joining them is a copy into fresh memory).

    Raises:
        CorruptTableError: a relative path escapes the root (``../x``, ``a/../../x``,
            ``%2E%2E/x``) or names no file; names the offending path.
    """
    if isinstance(paths, pa.ChunkedArray):
        return pa.chunked_array([_decode_array(c, root, source) for c in paths.chunks], pa.string())
    return _decode_array(paths, root, source)


def _decode_array(paths: pa.Array, root: str, source: str | None) -> pa.Array:
    paths = paths.cast(pa.string())
    if not _may_need_decoding(paths):
        return paths
    # Whether a path goes through Python depends on the path alone, so every spelling of a
    # file is decoded the same way in every batch (add and remove keys must match).
    needs = _odd_ends(paths)
    for marker in _MARKERS:
        needs = pc.or_(needs, pc.match_substring(paths, marker))
    needs = pc.fill_null(needs, False)
    if not pc.any(needs).as_py():
        return paths
    where = source or f"{root.rstrip('/')}/{LOG_DIR}"
    # Only the flagged paths go through Python; Arrow splices them back in place.
    fixed = pa.array(
        [_decode_one(p, root, where) for p in paths.filter(needs).to_pylist()], pa.string()
    )
    return pc.replace_with_mask(paths, needs, fixed)


_MARKERS = ("%", ":", "..", "./", "//", "/.", "\x00")
"""Substrings that send a path through Python: escapes, URIs, ``..`` (a possible escape of the
table root; resolved, or refused), and ``./`` or ``//`` (``./a`` and ``a`` are one file: an
add and a remove must reconcile however the log spells it, as Hadoop paths normalise; ``/.``
for a trailing dot segment), and NUL (no file name holds it: refused as corruption)."""


def _odd_ends(paths: pa.Array) -> pa.Array:
    """Paths no marker finds that still need the decode: absolute (``/x``), with a trailing
    ``/`` (``a.parquet/`` names ``a.parquet``), or naming the root (``.``, empty)."""
    return pc.or_(
        pc.or_(pc.starts_with(paths, "/"), pc.ends_with(paths, "/")),
        pc.is_in(paths, pa.array([".", ""], pa.string())),
    )


_GATE_BLOCK = 1 << 20


def _may_need_decoding(paths: pa.Array) -> bool:
    """False when no path holds a marker or has an odd end (``_odd_ends``); must flag
    every marker of ``_MARKERS``.

    Byte tests over the text buffer, a block at a time into reused scratch arrays: a substring
    search per marker costs several times more, and whole-buffer temporaries (a million paths
    are ~90 MB) cost more in fresh-page faults than the tests themselves; this runs on every
    open. Pairs spanning two paths only make the answer True where the exact per-path match
    then decides.
    """
    if len(paths) == 0:
        return False
    offsets = np.frombuffer(paths.buffers()[1], dtype=np.int32)
    lo, hi = int(offsets[paths.offset]), int(offsets[paths.offset + len(paths)])
    data = paths.buffers()[2]
    if data is not None and hi > lo:
        text = np.frombuffer(data, dtype=np.uint8, count=hi - lo, offset=lo)
        scratch = np.empty(_GATE_BLOCK + 1, dtype=np.uint8)
        hits = np.empty(_GATE_BLOCK + 1, dtype=np.bool_)
        for start in range(0, len(text), _GATE_BLOCK):
            block = text[start : start + _GATE_BLOCK + 1]  # one byte of overlap for pairs
            n = len(block)
            # '.' is 0x2E and '/' 0x2F: every pair of them is a marker ("..", "./", "//", "/.").
            np.equal(np.bitwise_and(block, 0xFE, out=scratch[:n]), 0x2E, out=hits[:n])
            if bool(np.any(np.logical_and(hits[: n - 1], hits[1:n], out=hits[: n - 1]))):
                return True
            for byte in (ord("%"), ord(":"), 0):
                if bool(np.any(np.equal(block, byte, out=hits[:n]))):
                    return True
    return bool(pc.any(_odd_ends(paths)).as_py())


def _decode_one(path: str, root: str, source: str) -> str:
    if is_absolute(path):
        return contained_path(unquote(path), root, source=source, allow_outside=True)
    return contained_path(unquote(path), root, source=source)
