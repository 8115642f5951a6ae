"""Reading Parquet footers for their statistics and schema, and a memo of the footers read.

A footer's key-value metadata can dwarf the rest of it: Hudi keeps a bloom filter of the
file's record keys there (~430 KB in a 10-row file), which a reader after statistics and
schema never looks at. ``read_footer`` reads the footer's Thrift bytes, leaves out every
key-value entry whose value is longer than ``KEEP_VALUE_BYTES`` (except ``ARROW:schema``,
which decides the Arrow schema pyarrow derives), and parses the rest with pyarrow: a large
skipped value is never read from the store when the footer is bigger than one read window.
Everything but those entries (schema, row groups and their statistics, ``created_by``,
column orders) is parsed from the file's own bytes.

``Footers`` memoises the footers one operation reads (e.g. a snapshot's file index, whose
footers a migration's adoption check reads again): it belongs to that operation's object and
is dropped with it, never global (a path rewritten later must not be served stale).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import BinaryIO, TypeVar

import pyarrow as pa
import pyarrow.parquet as pq

from lakecore.errors import CorruptTableError, LakecoreError, StorageError
from lakecore.faults import open_input
from lakecore.model.footer_thrift import KEEP_VALUE_BYTES, WINDOW, trimmed_footer
from lakecore.storage import Storage

__all__ = [
    "FOOTER_READERS",
    "KEEP_VALUE_BYTES",
    "MEMO_BYTES",
    "Footers",
    "footer_bytes",
    "parse_footer",
    "read_footer",
    "trimmed_footer",
]

FOOTER_READERS = 8
"""Footers read at once by ``Footers.read_many`` (pyarrow and file reads release the GIL)."""
MEMO_BYTES = 64 * 1024 * 1024
"""Footer bytes a ``Footers`` keeps by default (~30,000 Hudi base files' trimmed footers)."""
_WINDOW = WINDOW
"""Bytes of a footer read at a time (a footer up to this size is read at once)."""


def read_footer(f: BinaryIO) -> pq.FileMetaData:
    """The footer of the Parquet file open as ``f``, without its large key-value values.

    Raises ``pa.ArrowInvalid`` when ``f`` does not end like a plain Parquet file or its
    footer does not decode (``OSError`` when reading fails).
    """
    return parse_footer(footer_bytes(f))


def parse_footer(data: bytes) -> pq.FileMetaData:
    """The footer of ``data``, a Parquet file made of a footer only (``footer_bytes``);
    raises ``pa.ArrowInvalid`` when it does not decode (whatever pyarrow raises about it)."""
    try:
        return pq.read_metadata(pa.BufferReader(data))
    except pa.ArrowInvalid:
        raise
    # pyarrow's Thrift errors (the bytes are in memory: no IO) and what its conversions to
    # Python raise on damaged fields (e.g. a column name that is not UTF-8)
    except _DECODING_ERRORS as exc:
        raise pa.ArrowInvalid(f"the Parquet footer does not decode ({exc!r})") from exc


_DECODING_ERRORS = (
    pa.ArrowException,  # e.g. ArrowNotImplementedError: "Integers with more than 64 bits"
    OSError,
    ValueError,
    IndexError,
    RecursionError,
    OverflowError,
    TypeError,
)
"""What decoding damaged footer bytes may raise (``UnicodeDecodeError`` is a ``ValueError``)."""


def footer_bytes(f: BinaryIO) -> bytes:
    """``PAR1`` + the footer of the Parquet file open as ``f`` without its large key-value
    values + its length + ``PAR1``: a file pyarrow reads the footer of. Raises
    ``pa.ArrowInvalid`` only when ``f`` does not end like a Parquet file (``parse_footer``
    judges the footer itself; one this walk does not understand is kept whole)."""
    size = f.seek(0, os.SEEK_END)
    if size < 12:
        raise pa.ArrowInvalid(f"{size} bytes is too small for a Parquet file")
    f.seek(size - 8)
    trailer = f.read(8)
    length = int.from_bytes(trailer[:4], "little")
    if trailer[4:] != b"PAR1" or length > size - 12:
        raise pa.ArrowInvalid("no plain Parquet footer at the end of the file")
    # Exactly the footer, never a tail of the data before it (on a table of small files a
    # fixed tail read is most of each file); a large footer is read a window at a time.
    footer = _Window(f, size - 8 - length, length)
    try:
        body = trimmed_footer(footer.bytes_at, length)
    except (IndexError, ValueError, RecursionError, OverflowError):
        # Not the Thrift this walk knows: the whole footer, for pyarrow to judge (so the walk
        # can never refuse a footer pyarrow reads).
        body = footer.bytes_at(0, length)
    return b"PAR1" + body + len(body).to_bytes(4, "little") + b"PAR1"


class _Window:
    """The bytes of a footer at ``start`` of ``length`` bytes in ``f``, read in windows of
    ``_WINDOW`` bytes where a caller asks for them (the whole footer at once when it fits)."""

    def __init__(self, f: BinaryIO, start: int, length: int) -> None:
        self._f = f
        self._start = start
        self._length = length
        self._windows: list[tuple[int, bytes]] = []

    def bytes_at(self, a: int, b: int) -> bytes:
        b = min(b, self._length)
        if a >= b:
            return b""
        for at, data in self._windows:
            if at <= a and b <= at + len(data):
                return data[a - at : b - at]
        self._f.seek(self._start + a)
        data = self._f.read(min(max(b - a, _WINDOW), self._length - a))
        self._windows.append((a, data))
        return data[: b - a]


class Footers:
    """The footers of Parquet files of one storage, each read once (``read_footer``).

    Keeps each footer as its trimmed bytes (~2 KB for a Hudi base file whose bloom filter
    takes ~430 KB of its footer; pyarrow's parsed footer takes ~20 KB) and parses them again
    on each ``get`` (~0.1 ms, a tenth of reading them). Thread-safe. ``reads`` counts the
    footers read from the store (not those served from the memo). Keeps at most
    ``keep_bytes`` of footers (a snapshot keeps its memo while it lives); footers read beyond
    that are returned but not kept (read again when asked again). Must only be shared by
    readers of the same files as they were when first read (e.g. one snapshot's immutable
    data files).
    """

    def __init__(self, storage: Storage, keep_bytes: int = MEMO_BYTES) -> None:
        self.storage = storage
        self.reads = 0
        self._footers: dict[str, bytes] = {}
        self._kept = 0
        self._keep_bytes = keep_bytes
        self._lock = threading.Lock()

    def get(self, path: str) -> pq.FileMetaData:
        """The footer of ``path`` (relative to the storage, or an absolute URI).

        Raises ``CorruptTableError`` (naming the file) when it has no readable footer,
        ``FileNotFoundError`` when it is gone, ``StorageError`` when the store fails.
        """
        with self._lock:
            data = self._footers.get(path)
        if data is None:
            data = self._fetch(path)
        try:
            return parse_footer(data)
        except pa.ArrowInvalid as exc:
            raise CorruptTableError(f"{path}: not a readable Parquet file ({exc})") from exc

    def read_many(self, paths: Iterable[str]) -> list[pq.FileMetaData]:
        """``get`` of every path, in order, ``FOOTER_READERS`` at once; raises as ``get``."""
        return _in_batches(list(paths), self.get)

    def prefetch(self, paths: Iterable[str]) -> None:
        """Read the footers of ``paths`` not read yet into the memo, ``FOOTER_READERS`` at
        once, without parsing them (a caller then ``get``s them one by one without waiting on
        the store); a footer that cannot be read is left for ``get`` to raise about. Stops
        once the memo is full (what it cannot keep would be read twice)."""

        def one(path: str) -> None:
            if self._kept >= self._keep_bytes:
                return
            with contextlib.suppress(LakecoreError, OSError):
                self._fetch(path)

        _in_batches([p for p in dict.fromkeys(paths) if not self.known(p)], one)

    def _fetch(self, path: str) -> bytes:
        """Read the footer bytes of ``path`` into the memo; raises as ``get``."""
        try:
            with open_input(self.storage, path, "data file") as f:
                data = footer_bytes(f)
        except (FileNotFoundError, StorageError):
            raise
        except (pa.ArrowInvalid, OSError) as exc:
            raise CorruptTableError(f"{path}: not a readable Parquet file ({exc})") from exc
        with self._lock:
            self.reads += 1
            if path not in self._footers and self._kept + len(data) <= self._keep_bytes:
                self._footers[path] = data
                self._kept += len(data)
        return data

    def known(self, path: str) -> bool:
        """Whether the footer of ``path`` has been read."""
        with self._lock:
            return path in self._footers


T = TypeVar("T")


def _in_batches(paths: list[str], read: Callable[[str], T]) -> list[T]:
    """``read`` of every path, in order, on ``FOOTER_READERS`` threads, a batch of paths per
    task (a task per path costs more than a local footer read)."""
    if len(paths) < 2:
        return [read(p) for p in paths]
    size = max(1, -(-len(paths) // (FOOTER_READERS * 4)))
    batches = [paths[i : i + size] for i in range(0, len(paths), size)]
    with ThreadPoolExecutor(min(FOOTER_READERS, len(batches))) as pool:
        done = list(pool.map(lambda batch: [read(p) for p in batch], batches))
    return [x for batch in done for x in batch]
