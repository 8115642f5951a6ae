"""The fsspec-backed Storage used for local paths, ``file://``, ``memory://`` and ``s3://``."""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import os
import posixpath
import stat
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from operator import attrgetter
from typing import Any, BinaryIO, cast
from urllib.parse import unquote

import fsspec
from fsspec.asyn import sync
from fsspec.core import url_to_fs

from lakecore.errors import (
    InvalidArgumentError,
    LakecoreError,
    StorageError,
    UnsupportedFeatureError,
)
from lakecore.storage.aws_options import translate_aws_options
from lakecore.storage.base import FileInfo

# fsspec's memory filesystem is one process-wide store, so its conditional put needs one lock
# for the whole process, not one per Storage instance.
_MEMORY_LOCK = threading.Lock()

EXTRAS = {"s3": "'lakecore[s3]'", "s3a": "'lakecore[s3]'"}
"""The lakecore extra that installs a scheme's filesystem package (the others: fsspec's hint)."""

S3_CONFLICT_RETRIES = 5
"""Retries of a conditional PUT that S3 answered with 409 (a concurrent conditional write)."""


def normalize_uri(uri: str) -> str:
    """Return ``uri`` in the form lakecore keeps: local paths absolute, no trailing slash."""
    uri = os.fspath(uri)
    if uri.startswith("file:"):
        uri = _file_uri_to_path(uri)
    if "://" not in uri:
        return os.path.abspath(os.path.expanduser(uri)).rstrip(os.sep) or os.sep
    return uri.rstrip("/")


def _file_uri_to_path(uri: str) -> str:
    # Hadoop writes "file:/a/b", others "file:///a/b"; both name the local path "/a/b".
    rest = uri[len("file:") :]
    if rest.startswith("//"):
        rest = rest[2:]
        if not rest.startswith("/"):  # file://host/path: the host part is ignored locally
            rest = "/" + rest.split("/", 1)[1] if "/" in rest else "/"
    return unquote(rest)


def filesystem_for(uri: str, options: Mapping[str, Any]) -> tuple[Any, str]:
    """Return (fsspec filesystem, path in it) for a URI with a scheme.

    Raises:
        UnsupportedFeatureError: the scheme is unknown to fsspec, or its filesystem package
            is not installed (the message gives fsspec's install hint); names the URI.
        StorageError: the filesystem cannot be set up (bad options, a missing native
            library); names the URI.
        InvalidArgumentError: an ``AWS_*`` option lakecore does not know or cannot honour
            (see ``lakecore.storage.aws_options``).
    """
    scheme = uri.split("://", 1)[0]
    options = _options_for(uri, options)  # InvalidArgumentError for AWS_* keys it refuses
    try:
        return cast(tuple[Any, str], url_to_fs(uri, **options))
    except ImportError as exc:
        # fsspec's hint names the package ("Install s3fs to access S3"); S3 has an extra.
        hint = f"; pip install {EXTRAS[scheme]}" if scheme in EXTRAS else ""
        raise UnsupportedFeatureError(
            f"{scheme}:// storage", f"cannot open {uri}: {exc}{hint}"
        ) from exc
    except ValueError as exc:
        if "protocol not known" in str(exc).lower():
            raise UnsupportedFeatureError(
                f"{scheme}:// storage",
                f"cannot open {uri}: unknown URI scheme {scheme!r}; lakecore opens local paths, "
                "file://, memory://, s3:// and the other fsspec filesystems whose package is "
                "installed",
            ) from exc
        raise StorageError(f"cannot open {uri}: {exc}") from exc
    except LakecoreError:
        raise
    except Exception as exc:  # backends raise their own types (OSError, botocore errors ...)
        raise StorageError(f"cannot open {uri}: {type(exc).__name__}: {exc}") from exc


@contextlib.contextmanager
def backend_faults(what: str) -> Iterator[None]:
    """Re-raise a remote filesystem's own exception types as ``OSError``.

    The Storage contract is that storage faults are ``OSError``s, which callers classify
    (a commit's state unknown, a typed ``StorageError``); s3fs lets botocore's errors (an
    unreachable endpoint: ``EndpointConnectionError``) and bucket-name ``ValueError``s through
    untranslated. ``OSError``s (``FileNotFoundError``, ``FileExistsError`` ...) pass unchanged.
    """
    errors, connection_errors = _backend_errors()
    try:
        yield
    except OSError:
        raise
    except errors as exc:
        kind = ConnectionError if isinstance(exc, connection_errors) else OSError
        raise kind(f"{what} failed: {type(exc).__name__}: {exc}") from exc


@functools.cache
def _backend_errors() -> tuple[tuple[type[Exception], ...], tuple[type[Exception], ...]]:
    """The backend exception types that are storage faults, and those that are connection
    faults. Anything else (a TypeError in a backend) is a bug and passes through."""
    try:
        from botocore import exceptions as boto  # type: ignore[import-untyped]
    except ImportError:  # no S3 support installed: only fsspec's own ValueErrors
        return (ValueError,), ()
    return (ValueError, boto.BotoCoreError, boto.ClientError), (boto.ConnectionError,)


def _mtime_ms(info: Mapping[str, Any]) -> int:
    for key in ("mtime", "LastModified", "last_modified", "created", "modified"):
        value = info.get(key)
        if value is None:
            continue
        if isinstance(value, dt.datetime):
            if value.tzinfo is None:
                value = value.replace(tzinfo=dt.timezone.utc)
            return int(value.timestamp() * 1000)
        if isinstance(value, int | float):
            return int(float(value) * 1000)
        if isinstance(value, str):
            return int(dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
    return 0


_entry_name = attrgetter("name")
"""An ``os.DirEntry``'s name (the sort key of local listings)."""


class FsspecStorage:
    """Storage over an fsspec filesystem, rooted at a table URI.

    Local files use ``os`` directly: a put writes a temp file and renames it into place, and the
    conditional put writes a temp file and ``os.link``s it into place, which fails if the target
    exists. S3 uses a conditional PUT (``If-None-Match: *``), so the store itself decides which
    of several concurrent writers wins; S3 metadata calls bypass s3fs's listing cache so that
    files written by other processes are seen at once.
    """

    def __init__(self, uri: str, storage_options: Mapping[str, Any] | None = None) -> None:
        self._options = dict(storage_options or {})
        self._root = normalize_uri(uri)
        self._fs, self._fs_root = self._filesystem_for(self._root)
        self._local = "://" not in self._root
        self._other: dict[str, Any] = {}
        self._other_lock = threading.Lock()

    def _filesystem_for(self, uri: str) -> tuple[Any, str]:
        if "://" not in uri:
            return fsspec.filesystem("file"), uri
        fs, path = filesystem_for(uri, self._options)
        return fs, path.rstrip("/")

    @property
    def root(self) -> str:
        return self._root

    @property
    def storage_options(self) -> dict[str, Any]:
        """The options this storage was opened with (``open_storage(root, options)`` reopens it)."""
        return dict(self._options)

    @property
    def is_local(self) -> bool:
        """True when the root is a local directory."""
        return self._local

    def resolve(self, path: str) -> str:
        """The full location of ``path``: as is when absolute, else under the root.

        Raises:
            InvalidArgumentError: a relative ``path`` that leads out of the root (``../x``,
                ``a/../../x``), or a ``file:`` URI of a relative path: whatever named it,
                nothing outside the table is read, written or deleted through a relative
                path.
        """
        if path.startswith("file:"):
            local = _file_uri_to_path(path)
            if not local.startswith("/"):
                raise InvalidArgumentError(
                    f"path {path!r} is a relative file: URI; lakecore takes file: URIs of "
                    "absolute paths only"
                )
            return local
        if "://" in path or path.startswith("/"):
            return path
        normal = posixpath.normpath(path) if path else "."
        if normal == ".." or normal.startswith("../"):
            raise InvalidArgumentError(
                f"path {path!r} leads out of the storage root {self._root}; lakecore never "
                "reads, writes or deletes outside a table through a relative path"
            )
        if self._local:
            return os.path.join(self._root, path)
        return f"{self._root}/{path}"

    def _locate(self, path: str) -> tuple[Any, str]:
        """Return (filesystem, filesystem path) for ``path``."""
        full = self.resolve(path)
        if self._local and "://" not in full:
            return self._fs, full
        if "://" in full and not full.startswith(self._root.split("://", 1)[0] + "://"):
            protocol = full.split("://", 1)[0]
            with self._other_lock:
                if protocol not in self._other:
                    self._other[protocol] = filesystem_for(full, self._options)[0]
            fs = self._other[protocol]
            return fs, fs._strip_protocol(full)
        return self._fs, self._fs._strip_protocol(full)

    def _is_os(self, fs: Any) -> bool:
        """True when ``fs`` is the local filesystem that this storage drives through ``os``."""
        return self._local and fs is self._fs

    def _relative(self, fs_path: str) -> str:
        root = self._fs_root if not self._local else self._root
        root = root.rstrip("/")
        if fs_path.startswith(root + "/"):
            return fs_path[len(root) + 1 :]
        return fs_path

    def list_dir(self, path: str) -> list[FileInfo]:
        fs, fs_path = self._locate(path)
        if self._is_os(fs):
            return self._list_local(fs_path)
        fs_path = fs_path.rstrip("/")
        try:
            # refresh: s3fs caches listings, and a stale listing hides other writers' commits.
            with backend_faults(f"listing {fs_path}"):
                entries = (
                    fs.ls(fs_path, detail=True, refresh=True)
                    if _is_s3(fs)
                    else fs.ls(fs_path, detail=True)
                )
        except (FileNotFoundError, NotADirectoryError):
            return []
        out = [
            FileInfo(self._relative(e["name"]), int(e.get("size") or 0), _mtime_ms(e))
            for e in entries
            # ls of a file path returns the file itself: only direct children are listed.
            if e.get("type") == "file" and posixpath.dirname(e["name"].rstrip("/")) == fs_path
        ]
        out.sort(key=lambda f: f.path)
        return out

    def _list_local(self, directory: str) -> list[FileInfo]:
        out: list[FileInfo] = []
        try:
            with os.scandir(directory) as it:
                for entry in it:
                    try:
                        if not entry.is_file():
                            continue
                        st = entry.stat()
                    except FileNotFoundError:
                        continue  # removed while listing (another writer's temp file)
                    else:
                        out.append(
                            FileInfo(
                                self._relative(entry.path), st.st_size, st.st_mtime_ns // 1_000_000
                            )
                        )
        except (FileNotFoundError, NotADirectoryError):
            return []
        out.sort(key=lambda f: f.path)
        return out

    def list_all(self, path: str = "") -> list[FileInfo]:
        fs, fs_path = self._locate(path)
        if self._is_os(fs):
            out = []
            for directory, _, names in os.walk(fs_path):
                for name in names:
                    full = os.path.join(directory, name)
                    try:
                        st = os.stat(full)
                    except FileNotFoundError:
                        continue
                    out.append(
                        FileInfo(self._relative(full), st.st_size, st.st_mtime_ns // 1_000_000)
                    )
            out.sort(key=lambda f: f.path)
            return out
        try:
            with backend_faults(f"listing {fs_path}"):
                found = fs.find(fs_path.rstrip("/"), detail=True)
        except FileNotFoundError:
            return []
        out = [
            FileInfo(self._relative(name), int(e.get("size") or 0), _mtime_ms(e))
            for name, e in found.items()
            if e.get("type") == "file"
        ]
        out.sort(key=lambda f: f.path)
        return out

    def list_from(self, path: str) -> Iterator[FileInfo]:
        # "log/00" lists "log" from "00"; a directory-like "log/" lists all of "log".
        directory, _, start = path.rpartition("/")
        fs, fs_path = self._locate(directory)
        if self._is_os(fs):
            yield from self._iter_local(fs_path, start)
            return
        for info in self.list_dir(directory):
            if posixpath.basename(info.path) >= start:
                yield info

    def _iter_local(self, directory: str, start: str) -> Iterator[FileInfo]:
        """Local ``list_from``: names sorted first, each file stat-ed only when it is reached, so
        entries before ``start`` are never stat-ed and a caller that stops early pays little."""
        try:
            with os.scandir(directory) as it:
                entries = [e for e in it if e.name >= start]
        except (FileNotFoundError, NotADirectoryError):
            return
        # Sorted by name alone; whether an entry is a file is asked only when it is reached
        # (a Lance open lists 1,000 manifests twice to read the first name).
        entries.sort(key=_entry_name)
        for entry in entries:
            try:
                if not entry.is_file():
                    continue
                st = entry.stat()
            except FileNotFoundError:
                continue  # removed while listing (another writer's temp file)
            yield FileInfo(self._relative(entry.path), st.st_size, st.st_mtime_ns // 1_000_000)

    def read(self, path: str, start: int | None = None, end: int | None = None) -> bytes:
        if (start is not None and start < 0) or (end is not None and end < 0):
            raise ValueError(f"read range of {path} must not be negative: [{start}, {end})")
        fs, fs_path = self._locate(path)
        if end is not None and end <= (start or 0):
            self.head(path)  # an empty range of a missing file is still an error
            return b""
        if self._is_os(fs):
            with open(fs_path, "rb") as f:
                if start:
                    f.seek(start)
                return f.read() if end is None else f.read(end - (start or 0))
        try:
            with backend_faults(f"reading {fs_path}"):
                if _is_s3(fs) and start is None and end is None:
                    # One GET: s3fs would first HEAD the object to decide on a chunked download.
                    return cast(bytes, fs.cat_file(fs_path, max_concurrency=1))
                return cast(bytes, fs.cat_file(fs_path, start=start, end=end))
        except OSError as exc:
            # S3 answers a range that starts past the end with 416: the file is there, the
            # range is empty.
            if _error_status(exc) == (416, "InvalidRange"):
                return b""
            raise

    def open_input(self, path: str) -> BinaryIO:
        fs, fs_path = self._locate(path)
        if self._is_os(fs):
            return open(fs_path, "rb")
        with backend_faults(f"opening {fs_path}"):
            return cast(BinaryIO, fs.open(fs_path, "rb"))

    def head(self, path: str) -> FileInfo:
        fs, fs_path = self._locate(path)
        if self._is_os(fs):
            try:
                st = os.stat(fs_path)
            except NotADirectoryError as exc:
                # A path below a file (the root is a file): absent, as the contract says.
                raise FileNotFoundError(f"not a file: {fs_path}") from exc
            if not stat.S_ISREG(st.st_mode):
                raise FileNotFoundError(f"not a file: {fs_path}")
            return FileInfo(self._relative(fs_path), st.st_size, st.st_mtime_ns // 1_000_000)
        # refresh: s3fs answers info() from a cached parent listing when it has one, which
        # reports a file written since by another process as missing.
        with backend_faults(f"looking up {fs_path}"):
            info = fs.info(fs_path, refresh=True) if _is_s3(fs) else fs.info(fs_path)
        if info.get("type") != "file":
            raise FileNotFoundError(fs_path)
        return FileInfo(self._relative(fs_path), int(info.get("size") or 0), _mtime_ms(info))

    def exists(self, path: str) -> bool:
        try:
            self.head(path)
        except FileNotFoundError:
            return False
        return True

    def put(self, path: str, data: bytes) -> None:
        fs, fs_path = self._locate(path)
        if self._is_os(fs):
            directory = os.path.dirname(fs_path)
            os.makedirs(directory, exist_ok=True)
            tmp = _write_temp(directory, os.path.basename(fs_path), data, durable=False)
            try:
                os.replace(tmp, fs_path)
            except BaseException:
                _unlink_quietly(tmp)
                raise
            return
        with backend_faults(f"writing {fs_path}"):
            fs.pipe_file(fs_path, data)

    def put_if_absent(self, path: str, data: bytes) -> None:
        fs, fs_path = self._locate(path)
        if self._is_os(fs):
            _put_if_absent_local(fs_path, data)
            return
        with backend_faults(f"writing {fs_path}"):
            if _is_s3(fs):
                _put_if_absent_s3(fs, fs_path, data)
            elif _protocols(fs) & {"memory"}:
                # fsspec's memory store has no atomic create: serialise every writer.
                with _MEMORY_LOCK:
                    if fs.exists(fs_path):
                        raise FileExistsError(fs_path)
                    fs.pipe_file(fs_path, data)
            else:
                _put_if_absent_exclusive(fs, fs_path, data)

    def delete(self, path: str) -> None:
        fs, fs_path = self._locate(path)
        if self._is_os(fs):
            _unlink_quietly(fs_path)
            return
        with contextlib.suppress(FileNotFoundError), backend_faults(f"deleting {fs_path}"):
            fs.rm_file(fs_path)


def _options_for(uri: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """Return the filesystem options for ``uri``: the caller's, plus lakecore's S3 defaults.

    s3fs answers ``info``/``size`` (and so ``open`` and whole-file reads) from listings it has
    cached, which hides or truncates files that other writers create or overwrite; a table's
    log changes under us, so S3 listings are not cached unless the caller asks for it.
    """
    out = dict(options)
    if uri.split("://", 1)[0] in ("s3", "s3a"):
        # deltalake-style AWS_* keys: translated (or refused by name), not handed to s3fs.
        out = translate_aws_options(out)
        out.setdefault("use_listings_cache", False)
    return out


def _protocols(fs: Any) -> set[str]:
    protocol = fs.protocol
    return set(protocol) if isinstance(protocol, tuple | list) else {protocol}


def _is_s3(fs: Any) -> bool:
    return bool(_protocols(fs) & {"s3", "s3a"})


def _unlink_quietly(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _write_temp(directory: str, name: str, data: bytes, *, durable: bool) -> str:
    """Write ``data`` to a new hidden temp file next to ``name`` and return its path."""
    tmp = os.path.join(directory, f".{name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "xb") as f:
            f.write(data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
    except BaseException:
        _unlink_quietly(tmp)
        raise
    return tmp


def _put_if_absent_local(fs_path: str, data: bytes) -> None:
    directory = os.path.dirname(fs_path)
    os.makedirs(directory, exist_ok=True)
    tmp = _write_temp(directory, os.path.basename(fs_path), data, durable=True)
    try:
        os.link(tmp, fs_path)  # atomic; fails with FileExistsError if the target exists
    finally:
        os.unlink(tmp)


def _put_if_absent_s3(fs: Any, fs_path: str, data: bytes) -> None:
    """One ``PutObject`` with ``If-None-Match: *``: S3 answers 412 if the key exists.

    s3fs's ``open(path, "xb")`` sends the same header for small files, but an empty file goes
    through ``touch`` (an unconditional PUT) and a large one through a multipart upload that
    is checked only on completion; a single conditional PutObject is exact for every size S3
    accepts in one request (5 GiB). S3 answers 409 ConditionalRequestConflict while another
    conditional write of the key is in flight; the request is then retried, as AWS advises.
    """
    bucket, key, _ = fs.split_path(fs_path)
    for attempt in range(S3_CONFLICT_RETRIES + 1):
        try:
            sync(
                fs.loop,
                fs._call_s3,
                "put_object",
                Bucket=bucket,
                Key=key,
                Body=data,
                IfNoneMatch="*",
            )
            return
        except FileExistsError:
            raise
        except OSError as exc:
            status = _error_status(exc)[0]
            if status == 412:  # PreconditionFailed: the key exists
                raise FileExistsError(f"{fs_path} already exists") from exc
            if status != 409 or attempt == S3_CONFLICT_RETRIES:
                raise
            time.sleep(0.05 * 2**attempt)
        finally:
            fs.invalidate_cache(fs_path)


def _error_status(exc: BaseException) -> tuple[int | None, str | None]:
    """Return (HTTP status, error code) of the botocore error behind ``exc``, if there is one."""
    for err in (exc, exc.__cause__, exc.__context__):
        response = getattr(err, "response", None)
        if isinstance(response, Mapping):
            status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
            return status, (response.get("Error") or {}).get("Code")
    return None, None


def _put_if_absent_exclusive(fs: Any, fs_path: str, data: bytes) -> None:
    # Other fsspec backends: exclusive-create mode, atomic only where the backend makes it so.
    with fs.open(fs_path, "xb") as f:
        f.write(data)
