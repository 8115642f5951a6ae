"""Reading one Lance data file: its columns, its row count and which field ids it holds.

A fragment's reader (``lakecore_lance.scan``) asks this module for the top-level columns of
one data file at a time. Modern data files (file format 2.x) are decoded by pylance's
``lance.file.LanceFileReader``, through the local path when the storage is local, else
through a local copy read by ``Storage`` (so that object stores take lakecore's storage and
options); legacy (v0.1) files, which it refuses, by ``lakecore_lance.legacy``. Columns come
back as the file stores them; matching them to the dataset schema is the caller's.

Contracts: a missing data file, one pylance cannot decode (pyo3 panics included) or one whose
manifest entry disagrees with its contents raises ``CorruptTableError`` naming the file; a
storage failure other than a missing file raises ``StorageError``; a file layout lakecore
does not read (nested fields at shifted columns, a legacy file without the legacy reader)
raises ``UnsupportedFeatureError``. ``BATCH_ROWS`` bounds the batches read.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from lakecore.errors import (
    CorruptTableError,
    LakecoreError,
    StorageError,
    UnsupportedFeatureError,
)
from lakecore.storage import Storage
from lakecore_lance.columns import in_order, shift_columns
from lakecore_lance.read_plan import ancestors
from lakecore_lance.small_files import collect, read_error
from lakecore_lance.state import DataFileInfo, LanceScanState

BATCH_ROWS = 64 * 1024


def is_local(storage: Storage) -> bool:
    """Whether ``storage`` is a local file system (its files have local paths)."""
    return bool(getattr(storage, "is_local", False))


def row_count(storage: Storage, state: LanceScanState, info: DataFileInfo) -> int:
    """Rows of a data file (fragments whose manifest does not say)."""
    if info.legacy:
        tops = legacy_tops(info, ancestors({n.id: n for n in state.tree()}))
        return int(read_legacy(storage, state, info, tops[:1]).num_rows)
    with _reader(storage, info, None) as reader:
        return int(reader.num_rows())


def layout_from_file(
    storage: Storage, info: DataFileInfo, ancestor: dict[int, int]
) -> list[int | None]:
    """As ``read_plan.layout_from_ids``, walking the file's own schema to see how many ids each
    column takes (every node, or leaves only); columns of unknown or tombstoned ids map to
    None."""
    with _reader(storage, info, None) as reader:
        schema = reader.metadata().schema
    nodes = [_count(f.type, leaves=False) for f in schema]
    leaves = [_count(f.type, leaves=True) for f in schema]
    if len(info.fields) == sum(nodes):
        widths = nodes
    elif len(info.fields) == sum(leaves):
        widths = leaves
    else:
        raise CorruptTableError(
            f"{info.path}: the manifest lists {len(info.fields)} field ids for a file of "
            f"{sum(nodes)} fields ({sum(leaves)} leaves)"
        )
    layout: list[int | None] = []
    start = 0
    for width in widths:
        span = info.fields[start : start + width]
        start += width
        known = [ancestor[i] for i in span if i in ancestor]
        layout.append(known[0] if known else None)
    return layout


def _count(t: pa.DataType, leaves: bool) -> int:
    own = 0 if leaves else 1
    if pa.types.is_struct(t):
        return own + sum(_count(t.field(i).type, leaves) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return own + _count(t.value_type, leaves)
    return 1


def legacy_tops(info: DataFileInfo, ancestor: dict[int, int]) -> list[int]:
    """The top-level ids of the legacy file ``info``'s known fields, in file order, once each."""
    seen: list[int] = []
    for fid in info.fields:
        top = ancestor.get(fid)
        if top is not None and top not in seen:
            seen.append(top)
    return seen


def read_modern(
    storage: Storage, info: DataFileInfo, positions: list[int], width: int
) -> list[pa.ChunkedArray]:
    """The file's top-level columns at ``positions`` (pylance's file reader); the file has
    ``width`` top-level columns."""
    if not in_order(info.column_indices):
        return [_read_shifted(storage, info, p) for p in positions]
    if len(set(positions)) == width:
        table = read_whole(storage, info, width)
        return [table.column(p) for p in positions]
    with _reader(storage, info, None) as reader:
        names = reader.metadata().schema.names
    selected = [names[p] for p in positions]
    with _reader(storage, info, selected) as projected:
        table = projected.read_all(batch_size=BATCH_ROWS).to_table()
    return [table.column(names[p]) for p in positions]


def read_whole(storage: Storage, info: DataFileInfo, width: int) -> pa.Table:
    """Every column of the 2.x file ``info`` (in-order columns), which has ``width`` top-level
    columns: one reader and one ``read_all``, no ``metadata()`` call (a tenth of a
    millisecond per file, most of the reader's cost on small fragments).

    Raises ``CorruptTableError`` naming the file when it is missing, does not decode or holds
    another number of columns.
    """
    if is_local(storage):
        # The usual case, without ``_reader``'s context managers and existence check (a
        # missing file is told apart only when opening it failed): per 100-row fragment
        # they cost a fifth of the read.
        from lance.file import LanceFileReader

        path = storage.resolve(info.path)
        try:
            reader = LanceFileReader(path)
        except BaseException as exc:
            raise read_error(info, path, exc, opening=True) from exc
        try:
            table = _read_all(reader)
        except BaseException as exc:
            raise read_error(info, path, exc, opening=False) from exc
    else:
        with _reader(storage, info, None) as reader:
            table = reader.read_all(batch_size=BATCH_ROWS).to_table()
    if table.num_columns != width:
        raise CorruptTableError(
            f"{info.path} holds {table.num_columns} columns; its manifest entry, {width}"
        )
    return table


def _read_all(reader: Any) -> pa.Table:
    """Every row of the open ``LanceFileReader`` ``reader``: a file of at most BATCH_ROWS rows
    in one batch, without asking the stream for its end (``small_files.collect``)."""
    rows = int(reader.num_rows())
    if not 0 < rows <= BATCH_ROWS:
        return reader.read_all(batch_size=BATCH_ROWS).to_table()
    return collect(reader.read_all(batch_size=BATCH_ROWS).to_batches(), rows)


def _read_shifted(storage: Storage, info: DataFileInfo, position: int) -> pa.ChunkedArray:
    """One field of a file whose fields do not start at consecutive columns
    (``lakecore_lance.columns``): read from a copy where it does."""
    with _reader(storage, info, None) as reader:
        schema = reader.metadata().schema
    if any(pa.types.is_nested(f.type) for f in schema):
        raise UnsupportedFeatureError(
            "lance:column_indices",
            f"{info.path} stores nested fields at columns {list(info.column_indices)}; "
            "lakecore reads such files only with flat fields",
        )
    if len(info.column_indices) != len(schema):
        raise CorruptTableError(
            f"{info.path}: {len(info.column_indices)} column indices for {len(schema)} fields"
        )
    first = info.column_indices[position]
    name = schema.names[position]
    with _reader(storage, info, [name], shift=(position, first)) as reader:
        table = reader.read_all(batch_size=BATCH_ROWS).to_table()
    return table.column(name)


def read_legacy(
    storage: Storage, state: LanceScanState, info: DataFileInfo, field_ids: list[int]
) -> pa.Table:
    """The fields ``field_ids`` of a legacy (v0.1) data file, through ``lakecore_lance.legacy``."""
    try:
        from lakecore_lance.legacy.reader import read_legacy_file
    except ImportError as exc:
        raise UnsupportedFeatureError(
            "lance:legacy_file_format",
            f"{info.path} is a legacy (v0.1) Lance data file and the legacy reader is missing",
        ) from exc
    table: pa.Table = read_legacy_file(
        storage,
        info.path,
        state.fields(),
        field_ids,
        file_field_ids=list(info.fields),
        dictionary_file=state.manifest_path,
    )
    return table


@contextlib.contextmanager
def _reader(
    storage: Storage,
    info: DataFileInfo,
    columns: list[str] | None,
    shift: tuple[int, int] | None = None,
) -> Iterator[Any]:
    """A ``LanceFileReader`` of ``info``: the local path directly, else a local copy made
    through ``storage`` (so that object stores go through lakecore's storage and options).
    ``shift=(field, column)`` reads a copy in which ``field`` starts at ``column``."""
    from lance.file import LanceFileReader

    if getattr(storage, "is_local", False) and shift is None:
        path = storage.resolve(info.path)
        if not os.path.exists(path):
            raise CorruptTableError(f"data file {info.path} is missing")
        with _decoding(info):
            yield _open(LanceFileReader, path, columns, info)
        return
    try:
        data = storage.read(info.path)
    except FileNotFoundError as exc:
        raise CorruptTableError(f"data file {info.path} is missing") from exc
    except OSError as exc:
        raise StorageError(f"cannot read data file {info.path}: {exc}") from exc
    if shift is not None:
        data = shift_columns(data, shift[0], shift[1], info.path)
    with tempfile.TemporaryDirectory(prefix="lakecore-lance-") as tmp:
        local = os.path.join(tmp, "file.lance")
        with open(local, "wb") as out:
            out.write(data)
        with _decoding(info):
            yield _open(LanceFileReader, local, columns, info)


@contextlib.contextmanager
def _decoding(info: DataFileInfo) -> Iterator[None]:
    """Turn what pylance raises while decoding ``info`` into ``CorruptTableError`` naming it.

    pylance raises ``ValueError``/``OSError``/``ArrowInvalid`` for most corrupt files, and
    pyo3's ``PanicException`` (a ``BaseException``, not an ``Exception``) when its Rust code
    panics on one; interpreter exits and lakecore's own errors pass through.
    """
    try:
        yield
    except LakecoreError:
        raise
    except BaseException as exc:
        if not isinstance(exc, Exception) and type(exc).__name__ != "PanicException":
            raise  # KeyboardInterrupt, SystemExit, GeneratorExit
        raise CorruptTableError(f"cannot decode data file {info.path}: {exc}") from exc


def _open(cls: Any, path: str, columns: list[str] | None, info: DataFileInfo) -> Any:
    try:
        return cls(path, columns=columns)
    except (OSError, ValueError, RuntimeError) as exc:
        raise CorruptTableError(f"cannot read data file {info.path}: {exc}") from exc
