"""Paths in the Delta log: URL-decoding and making them relative to the table root."""

from __future__ import annotations

from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def decode_paths(paths: pa.Array | pa.ChunkedArray, root: str) -> pa.Array:
    """Return log paths decoded (no ``%`` escapes), relative to ``root`` when inside it.

    Delta stores paths as URIs: relative ones are URL-encoded and resolved against the root;
    absolute ones (``file:/...``, ``s3://...``) are kept absolute unless they point inside
    the table. Only the paths that need it go through Python, so the common case stays
    vectorised.
    """
    if isinstance(paths, pa.ChunkedArray):
        paths = paths.combine_chunks()
    paths = paths.cast(pa.string())
    if not _may_need_decoding(paths):
        return paths
    needs = pc.or_(
        pc.match_substring(paths, "%"),
        pc.or_(pc.match_substring(paths, ":"), pc.starts_with(paths, "/")),
    )
    needs = pc.fill_null(needs, False)
    if not pc.any(needs).as_py():
        return paths
    # Only the flagged paths go through Python; Arrow splices them back in place.
    fixed = pa.array([_decode_one(p, root) for p in paths.filter(needs).to_pylist()], pa.string())
    return pc.replace_with_mask(paths, needs, fixed)


def _may_need_decoding(paths: pa.Array) -> bool:
    """False when no path holds ``%`` or ``:`` or starts with ``/`` (one scan of the bytes)."""
    if len(paths) == 0:
        return False
    offsets = np.frombuffer(paths.buffers()[1], dtype=np.int32)
    lo, hi = int(offsets[paths.offset]), int(offsets[paths.offset + len(paths)])
    data = paths.buffers()[2]
    raw = data.slice(lo, hi - lo).to_pybytes() if data is not None else b""
    return b"%" in raw or b":" in raw or bool(pc.any(pc.starts_with(paths, "/")).as_py())


def _decode_one(path: str, root: str) -> str:
    if "://" in path or path.startswith(("file:", "/")):
        absolute = _absolute(path)
        prefix = _same_scheme(root.rstrip("/") + "/")
        normalized = _same_scheme(absolute)
        if normalized.startswith(prefix):
            return normalized[len(prefix) :]
        return absolute
    return unquote(path)


_S3_ALIASES = ("s3a://", "s3n://")


def _same_scheme(uri: str) -> str:
    """``uri`` with Hadoop's S3 scheme aliases (``s3a://``, ``s3n://``) spelled ``s3://``.

    Spark writes ``s3a://bucket/table/...`` into the log of a table others open as
    ``s3://bucket/table``: both name the same object.
    """
    for alias in _S3_ALIASES:
        if uri.startswith(alias):
            return "s3://" + uri[len(alias) :]
    return uri


def _absolute(path: str) -> str:
    if path.startswith("file:"):
        rest = path[len("file:") :]
        if rest.startswith("//"):
            rest = rest[2:]
            if not rest.startswith("/"):
                rest = "/" + rest.split("/", 1)[1] if "/" in rest else "/"
        return unquote(rest)
    return unquote(path)
