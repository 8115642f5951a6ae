"""Storage fault injection for tests: a Storage that fails at a chosen call.

``FaultyStorage`` wraps a real Storage, counts every call that reaches the store (listing,
reading, heads, puts, deletes; ``root``/``resolve`` are pure and not counted) and, when armed,
raises an ``OSError`` at call number ``fail_at`` (0-based):

- ``mode="before"``: the call fails without reaching the store (a refused or dropped request);
- ``mode="after"``: the call reaches the store and THEN fails (the request landed but its reply
  was lost: a timeout or connection reset after the PUT was sent); the store's own answer,
  even an error, is replaced by the fault;
- ``persistent=True``: every call from ``fail_at`` on fails the same way (the store went away).

Run an operation once unarmed to count its calls (``calls``), then once per call index with a
fault there. The error types rotate with the index (timeout, connection reset, permission,
plain I/O error) so every kind of ``OSError`` fsspec and s3fs raise is exercised.

Example:
    >>> import lakecore  # doctest: +SKIP
    >>> from lakecore.storage import open_storage
    >>> faulty = FaultyStorage(open_storage("/data/t"))  # doctest: +SKIP
    >>> table = lakecore.open("/data/t", storage=faulty)  # doctest: +SKIP
    >>> faulty.arm(fail_at=3, mode="after")  # doctest: +SKIP
"""

from __future__ import annotations

import collections
import errno
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO, Literal, TypeVar

from lakecore.storage.base import FileInfo, Storage

Mode = Literal["before", "after"]
T = TypeVar("T")

MUTATING = frozenset({"put", "put_if_absent", "delete"})
"""The calls that change the store."""


def fault_for(index: int, call: str, path: str) -> OSError:
    """The injected error of call number ``index``: the kinds rotate with the index."""
    where = f"injected fault at storage call {index} ({call} {path})"
    kinds: list[OSError] = [
        TimeoutError(errno.ETIMEDOUT, f"{where}: timed out"),
        ConnectionResetError(errno.ECONNRESET, f"{where}: connection reset by peer"),
        PermissionError(errno.EACCES, f"{where}: access denied"),
        OSError(errno.EIO, f"{where}: input/output error"),
    ]
    return kinds[index % len(kinds)]


@dataclass(frozen=True, slots=True)
class Call:
    """One counted storage call: the method's name and the path it was given."""

    method: str
    path: str


class FaultyStorage:
    """A Storage delegating to ``inner`` that raises ``OSError`` at a chosen call when armed.

    Thread-safe: calls are counted under a lock (so with threads the index of a call may vary
    between runs, never its effect).
    """

    def __init__(self, inner: Storage) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self._fail_at: int | None = None
        self._mode: Mode = "before"
        self._persistent = False
        self._on_fault: Callable[[int, Call], None] | None = None
        self._match: Callable[[Call], bool] | None = None
        self._matched = 0
        self.calls: list[Call] = []
        """Every call counted since the last ``reset``/``arm``."""
        self.faults: list[Call] = []
        """The calls that were made to fail."""

    # ---------------------------------------------------------------- control

    def arm(
        self,
        fail_at: int | None,
        mode: Mode = "before",
        persistent: bool = False,
        on_fault: Callable[[int, Call], None] | None = None,
        match: Callable[[Call], bool] | None = None,
    ) -> None:
        """Restart counting and fail call number ``fail_at`` (None: count only).

        ``on_fault(index, call)`` runs instead of raising when given (e.g. ``os._exit`` to
        simulate a killed process); in ``"after"`` mode it runs after the call reached the store.
        With ``match``, ``fail_at`` counts only the calls ``match`` accepts (``0``: the first
        commit put, say), wherever they fall.
        """
        with self._lock:
            self._fail_at = fail_at
            self._mode = mode
            self._persistent = persistent
            self._on_fault = on_fault
            self._match = match
            self._matched = 0
            self.calls = []
            self.faults = []

    def reset(self) -> None:
        """Disarm and restart counting."""
        self.arm(None)

    @property
    def inner(self) -> Storage:
        """The wrapped Storage."""
        return self._inner

    def _call(self, method: str, path: str, run: Callable[[], T]) -> T:
        with self._lock:
            call = Call(method, path)
            index = len(self.calls)
            self.calls.append(call)
            if self._match is not None:
                if not self._match(call):
                    return run()
                index, self._matched = self._matched, self._matched + 1
            fail_at = self._fail_at
            hit = fail_at is not None and (
                index == fail_at or (self._persistent and index > fail_at)
            )
            if hit:
                self.faults.append(call)
            mode, on_fault = self._mode, self._on_fault
        if not hit:
            return run()
        if mode == "after":
            # The request reaches the store; whatever the store answered (even an error such
            # as FileExistsError) is lost on the way back and the fault is reported instead.
            try:
                result: object = run()
            except Exception:
                result = None
            close = getattr(result, "close", None)
            if callable(close):  # an opened file the caller will never see
                close()
        if on_fault is not None:
            on_fault(index, call)
        raise fault_for(index, method, path)

    # ---------------------------------------------------------------- Storage

    @property
    def root(self) -> str:
        return self._inner.root

    @property
    def is_local(self) -> bool:
        """As the wrapped storage (the format plugins choose sequential local reads by it)."""
        return bool(getattr(self._inner, "is_local", False))

    @property
    def storage_options(self) -> dict[str, Any]:
        """The wrapped storage's options (scans reopen the store in other processes by them)."""
        return dict(getattr(self._inner, "storage_options", None) or {})

    def resolve(self, path: str) -> str:
        return self._inner.resolve(path)

    def list_from(self, path: str) -> Iterator[FileInfo]:
        # Listed at once, so a fault strikes at the call, not somewhere inside the iteration.
        return iter(self._call("list_from", path, lambda: list(self._inner.list_from(path))))

    def list_dir(self, path: str) -> list[FileInfo]:
        return self._call("list_dir", path, lambda: self._inner.list_dir(path))

    def list_all(self, path: str = "") -> list[FileInfo]:
        return self._call("list_all", path, lambda: self._inner.list_all(path))

    def read(self, path: str, start: int | None = None, end: int | None = None) -> bytes:
        return self._call("read", path, lambda: self._inner.read(path, start, end))

    def open_input(self, path: str) -> BinaryIO:
        return self._call("open_input", path, lambda: self._inner.open_input(path))

    def head(self, path: str) -> FileInfo:
        return self._call("head", path, lambda: self._inner.head(path))

    def exists(self, path: str) -> bool:
        return self._call("exists", path, lambda: self._inner.exists(path))

    def put(self, path: str, data: bytes) -> None:
        self._call("put", path, lambda: self._inner.put(path, data))

    def put_if_absent(self, path: str, data: bytes) -> None:
        self._call("put_if_absent", path, lambda: self._inner.put_if_absent(path, data))

    def delete(self, path: str) -> None:
        self._call("delete", path, lambda: self._inner.delete(path))


class _Counted:
    """A file object that adds what it reads to ``sink[path]``."""

    def __init__(self, f: BinaryIO, sink: collections.Counter[str], path: str) -> None:
        self._f, self._sink, self._path = f, sink, path

    def read(self, n: int = -1) -> bytes:
        data = self._f.read(n)
        self._sink[self._path] += len(data)
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._f, name)

    def __enter__(self) -> _Counted:
        return self

    def __exit__(self, *exc: object) -> None:
        self._f.close()


class CountingStorage(FaultyStorage):
    """A FaultyStorage that also counts the bytes read from each path (``open_input`` and
    ``read``) in ``bytes``: how tests and benchmarks see what an operation reads."""

    def __init__(self, inner: Storage) -> None:
        super().__init__(inner)
        self.bytes: collections.Counter[str] = collections.Counter()

    def open_input(self, path: str) -> BinaryIO:
        return _Counted(super().open_input(path), self.bytes, path)  # type: ignore[return-value]

    def read(self, path: str, start: int | None = None, end: int | None = None) -> bytes:
        data = super().read(path, start, end)
        self.bytes[path] += len(data)
        return data


__all__ = ["MUTATING", "Call", "CountingStorage", "FaultyStorage", "Mode", "fault_for"]
