"""Keeping paths that table metadata names inside the table root.

Logs, timelines and plans name data files; a damaged or crafted one can name ``../x``, an
encoded escape that decodes to it, or an absolute path elsewhere. Nothing outside a table's
root may be deleted because its metadata says so, and nothing outside may be read unless the
format allows absolute references (Delta: read-only). Every format checks its metadata paths
with ``contained_path`` before it uses them.
"""

from __future__ import annotations

import posixpath
import re

from lakecore.errors import CorruptTableError

# Hadoop's aliases of the S3 scheme: Spark writes ``s3a://b/t/x`` into tables others open as
# ``s3://b/t``; both name the same object.
_S3_ALIASES = ("s3a://", "s3n://")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def is_absolute(path: str) -> bool:
    """Whether ``path`` is absolute: a URI with a scheme, a ``file:`` URI or a rooted path.

    The scheme must start the path: a relative path may hold ``://`` further on (a decoded
    Hive partition value such as ``url=http://x/part.parquet``).
    """
    return _SCHEME.match(path) is not None or path.startswith(("file:", "/"))


def contained_path(path: str, root: str, *, source: str, allow_outside: bool = False) -> str:
    """Return ``path`` relative to ``root`` and normalised (no ``.``/``..``/empty segments).

    ``path`` is as the metadata names it, already decoded (no ``%`` escapes): relative to the
    root, or absolute (``s3://b/t/x``, ``file:/t/x``, ``/t/x``). An absolute path that lies
    under ``root`` is made relative. ``source`` names the metadata file that named ``path``
    (it goes into the error message).

    With ``allow_outside`` an absolute path outside the root is returned normalised, for the
    formats whose protocol allows absolute references to be read (never deleted); callers
    that delete must not pass it.

    Raises:
        CorruptTableError: a relative path escapes the root (``../x``, ``a/../../x``), the path
            names no file (empty, ``.``, the root itself), contains a NUL byte, starts with
            ``//`` (a network-path reference: a host, not a file) or is a ``file://`` URI
            naming a host other than ``localhost``, or is absolute and outside
            the root without ``allow_outside``; names ``source`` and ``path``.
    """
    if "\x00" in path:
        raise CorruptTableError(f"{source}: file path {path!r} contains a NUL byte")
    if _file_host(path) not in ("", "localhost"):
        raise CorruptTableError(
            f"{source}: file path {path!r} names host {_file_host(path)!r}, which is no "
            "file of this machine"
        )
    if path.startswith("//"):
        # RFC 3986 reads "//x/y" as a network-path reference (host "x"): neither a file of
        # the table nor a local absolute path, whatever a reader guesses (delta-rs takes it
        # as "<root>/x/y", Python's posixpath as "//x/y" or "/x/y").
        raise CorruptTableError(
            f"{source}: file path {path!r} is a network-path reference (//host/...), "
            "which names no file of the table"
        )
    if is_absolute(path):
        absolute = _normalise_absolute(path)
        unaliased = _same_scheme(absolute)
        base = _same_scheme(_normalise_absolute(root)).rstrip("/")
        if unaliased.startswith(base + "/"):
            path = unaliased[len(base) + 1 :]
        elif unaliased == base:
            raise CorruptTableError(f"{source}: file path {path!r} names the table root {root}")
        elif allow_outside:
            return absolute
        else:
            raise CorruptTableError(
                f"{source}: file path {path!r} lies outside the table root {root}; "
                "lakecore never deletes or reads outside a table because its metadata says so"
            )
    normal = posixpath.normpath(path) if path else "."
    if normal == ".":
        raise CorruptTableError(f"{source}: file path {path!r} names no file of the table")
    if normal == ".." or normal.startswith("../"):
        raise CorruptTableError(
            f"{source}: file path {path!r} escapes the table root {root} ('..'); "
            "lakecore never deletes or reads outside a table because its metadata says so"
        )
    return normal


def _file_host(path: str) -> str:
    """The host of a ``file://host/...`` URI ("" for other paths and ``file:/`` forms)."""
    if not path.startswith("file://"):
        return ""
    return path[len("file://") :].partition("/")[0]


def _same_scheme(uri: str) -> str:
    for alias in _S3_ALIASES:
        if uri.startswith(alias):
            return "s3://" + uri[len(alias) :]
    return uri


def _normalise_absolute(uri: str) -> str:
    """``uri`` with ``file:`` URIs as local paths and dot segments of its path resolved."""
    if uri.startswith("file:"):
        rest = uri[len("file:") :]
        if rest.startswith("//"):
            # Hadoop writes "file:/a/b", others "file:///a/b" or "file://localhost/a/b".
            # (contained_path refuses any other host: it names no local file).
            _, slash, local = rest[2:].partition("/")
            rest = slash + local or "/"
        uri = rest
    if "://" in uri:
        scheme, rest = uri.split("://", 1)
        authority, slash, key = rest.partition("/")
        return f"{scheme}://{authority}" + (_normpath("/" + key) if slash else "")
    return _normpath(uri)


def _normpath(path: str) -> str:
    # posixpath keeps a leading "//" (POSIX leaves its meaning open); one "/" means the same.
    normal = posixpath.normpath(path)
    return "/" + normal.lstrip("/") if normal.startswith("//") else normal
