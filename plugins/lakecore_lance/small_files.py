"""Reading a group of small local Lance data files whole, with few waits.

Each call into pylance's file reader is a round trip into its Tokio runtime: the call is
handed to a runtime thread and the Python thread waits for the answer. A small data file
takes three (open the reader, start the read, take its one batch), and on a busy machine each
wait costs more than the work. Reading a group in phases (open every reader, then start every
read, then take every batch) lets the runtime fetch and decode the later files while the
earlier ones are being opened or collected: ``read_small_files``.

Errors are not raised where they happen but returned for their file, so that the caller
raises them in fragment order, as reading the files one by one would.
"""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa

from lakecore.errors import CorruptTableError, LakecoreError
from lakecore.storage import Storage
from lakecore_lance.state import DataFileInfo

REREAD = "reread"
"""``read_small_files``'s answer for a file whose footer counts other rows than the manifest:
the caller reads it the regular way, which raises the error naming both counts."""

SmallFile = tuple[DataFileInfo, int, int]
"""A 2.x data file with in-order columns, its rows (0 < rows <= batch rows) and its number
of top-level columns."""


def read_small_files(
    storage: Storage, files: list[SmallFile], batch_rows: int
) -> list[pa.Table | BaseException | str]:
    """Every row and column of each of ``files`` (local ``storage``), in order: a table, the
    ``CorruptTableError`` reading it raised (missing, undecodable, another number of
    columns), or ``REREAD``. ``batch_rows`` is the batch size asked of the reader.

    Interrupts (``KeyboardInterrupt``, ``SystemExit``) are raised at once.
    """
    from lance.file import LanceFileReader

    results: list[pa.Table | BaseException | str | None] = [None] * len(files)
    paths = [storage.resolve(info.path) for info, _, _ in files]
    readers: list[Any] = [None] * len(files)
    for k, (info, _, _) in enumerate(files):
        try:
            readers[k] = LanceFileReader(paths[k])
        except BaseException as exc:
            results[k] = _failed(info, paths[k], exc, opening=True)
    streams: list[Any] = [None] * len(files)
    for k, (info, rows, _) in enumerate(files):
        if readers[k] is None:
            continue
        try:
            if int(readers[k].num_rows()) != rows:
                results[k] = REREAD
                continue
            streams[k] = readers[k].read_all(batch_size=batch_rows).to_batches()
        except BaseException as exc:
            results[k] = _failed(info, paths[k], exc, opening=False)
    for k, (info, rows, width) in enumerate(files):
        if streams[k] is None:
            continue
        try:
            table = collect(streams[k], rows)
        except BaseException as exc:
            results[k] = _failed(info, paths[k], exc, opening=False)
            continue
        if table.num_columns != width:
            results[k] = CorruptTableError(
                f"{info.path} holds {table.num_columns} columns; its manifest entry, {width}"
            )
        else:
            results[k] = table
    return [r if r is not None else REREAD for r in results]


def collect(stream: Any, rows: int) -> pa.Table:
    """The batches of ``stream`` until they hold ``rows`` rows (the stream's end is not asked
    for: one round trip fewer) or it ends."""
    batches = [stream.read_next_batch()]
    got = batches[0].num_rows
    while got < rows:
        try:
            batches.append(stream.read_next_batch())
        except StopIteration:
            break
        got += batches[-1].num_rows
    return pa.Table.from_batches(batches)


def _failed(info: DataFileInfo, path: str, exc: BaseException, opening: bool) -> BaseException:
    error = read_error(info, path, exc, opening)
    if not isinstance(error, Exception):
        raise error  # an interrupt: now, not in fragment order
    if error is not exc:
        error.__cause__ = exc
    return error


def read_error(info: DataFileInfo, path: str, exc: BaseException, opening: bool) -> BaseException:
    """What opening (``opening``) or reading the local file ``path`` of ``info`` raises instead
    of ``exc``: ``CorruptTableError`` naming the file when it is missing or does not decode;
    ``exc`` itself for lakecore's errors and interrupts.

    pylance raises ``ValueError``/``OSError``/``ArrowInvalid`` for most corrupt files, and
    pyo3's ``PanicException`` (a ``BaseException``, not an ``Exception``) when its Rust code
    panics on one.
    """
    if isinstance(exc, LakecoreError):
        return exc
    if not isinstance(exc, Exception) and type(exc).__name__ != "PanicException":
        return exc  # KeyboardInterrupt, SystemExit, GeneratorExit
    if opening and not os.path.exists(path):
        return CorruptTableError(f"data file {info.path} is missing")
    if opening and isinstance(exc, (OSError, ValueError, RuntimeError)):
        return CorruptTableError(f"cannot read data file {info.path}: {exc}")
    return CorruptTableError(f"cannot decode data file {info.path}: {exc}")
