"""Reading Lance fragments: the ``read_files`` / ``deleted_positions`` halves of ``LanceFormat``.

A fragment's rows are spread over its data files, each holding some of the fields (a column
added later lives in a new file; an updated column may be rewritten into a new file, the old
file's field id tombstoned as -2). For each requested column the last data file holding its
field id is read, and the fragment's rows are the columns side by side, in position order.

Modern data files (file format 2.x) are decoded by pylance's ``lance.file.LanceFileReader``;
legacy (v0.1) files, which it refuses, by ``lakecore_lance.legacy`` (the format implemented
from the spec). Which applies is decided per file from the manifest's ``DataFile`` version.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from lakecore.errors import (
    CorruptTableError,
    LakecoreError,
    StorageError,
    UnsupportedFeatureError,
)
from lakecore.model import files as fi
from lakecore.model.schema import field_id
from lakecore.planning.tasks import FileRows, RowPositions, ScanContext
from lakecore.storage import Storage
from lakecore_lance import fragment_tasks as tasks
from lakecore_lance.columns import in_order, shift_columns
from lakecore_lance.deletions import read_deleted
from lakecore_lance.nested import Path, conform, file_field_ids
from lakecore_lance.read_plan import Output, Plan, ancestors, layout_from_ids, plan_for
from lakecore_lance.small_files import SmallFile, collect, read_error, read_small_files
from lakecore_lance.state import DataFileInfo, LanceScanState, LanceState

TOMBSTONE = -2
"""A ``DataFile.fields`` entry of a field whose data moved to another file."""
BATCH_ROWS = 64 * 1024


def scan_context(storage: Storage, state: LanceState) -> ScanContext:
    """The ``ScanContext`` of ``state``'s version of the dataset in ``storage``."""
    return ScanContext(
        format="lance",
        table_uri=storage.root,
        schema=state.schema,
        file_format="lance",
        storage_options=dict(getattr(storage, "storage_options", None) or {}),
        state=state.scan_state(),
        storage=storage,
    )


def scan_state(context: ScanContext) -> LanceScanState:
    """``context.state``; raises ``TypeError`` when it is not a Lance scan state."""
    if not isinstance(context.state, LanceScanState):
        raise TypeError(f"expected a LanceScanState in the scan context, got {context.state!r}")
    return context.state


def read_files(context: ScanContext, files: pa.Table, columns: Sequence[str]) -> Iterator[FileRows]:
    """Yield every row (deleted ones included) of each fragment of ``files`` (see module doc)."""
    state = scan_state(context)
    storage = context.open_storage()
    wanted = [(name, context.schema.field(name)) for name in columns]
    ids = []
    for name, f in wanted:
        fid = field_id(f)
        if fid is None:
            raise CorruptTableError(f"column {name!r} of the Lance schema has no field id")
        ids.append(fid)
    tops = {node.id: node for node in state.tree()}
    ancestor = ancestors(tops)
    paths = files.column(fi.PATH).to_pylist()
    for path in paths:
        if path not in state.fragments:
            raise CorruptTableError(f"{path} is not a fragment of version {state.version}")
    out = Output(wanted, ids)
    plans: dict[tuple[tuple[Any, ...], ...], Plan | None] = {}

    local = _is_local(storage)

    def read(group: list[str]) -> list[list[pa.RecordBatch]]:
        todo = []
        for p in group:
            infos, rows = state.fragments[p], state.physical_rows[p]
            todo.append((infos, rows, plan_for(plans, infos, ancestor, ids)))
        early = _read_small(storage, todo) if local else {}
        fragments = []
        for k, (infos, rows, plan) in enumerate(todo):
            if plan is None or rows is None:
                table = _read_fragment(storage, state, ancestor, infos, rows, wanted, ids)
            else:
                whole = early.get(k)
                if isinstance(whole, BaseException):
                    raise whole
                table = _read_planned(storage, infos, rows, plan, out, whole)
            fragments.append(table.to_batches(max_chunksize=BATCH_ROWS))
        return fragments

    def group_rows(group: list[str]) -> int:
        return sum(state.physical_rows[p] or tasks.THREADED_ROWS for p in group)

    groups = tasks.groups(state, paths, local=local)
    for index, batches in enumerate(tasks.in_order(read, groups, group_rows)):
        offset = 0
        for batch in batches:
            yield FileRows(index, offset, batch)
            offset += batch.num_rows


def _read_small(
    storage: Storage, todo: list[tuple[tuple[DataFileInfo, ...], int | None, Plan | None]]
) -> dict[int, pa.Table | BaseException]:
    """The fragments of ``todo`` (local) read whole from one small file, read together
    (``small_files``): position in ``todo`` -> the file's table or the error to raise when
    its turn comes. Fragments left out are read one by one."""
    positions: list[int] = []
    files: list[SmallFile] = []
    for k, (infos, rows, plan) in enumerate(todo):
        if plan is not None and plan.whole and rows is not None and 0 < rows <= BATCH_ROWS:
            step = plan.steps[0]
            positions.append(k)
            files.append((infos[step.index], rows, step.width))
    if len(files) < 2:
        return {}
    results = read_small_files(storage, files, BATCH_ROWS)
    return {k: r for k, r in zip(positions, results, strict=True) if not isinstance(r, str)}


def _read_planned(
    storage: Storage,
    infos: tuple[DataFileInfo, ...],
    rows: int,
    plan: Plan,
    out: Output,
    whole: pa.Table | None = None,
) -> pa.Table:
    """A fragment of ``rows`` rows read by its ``plan`` (same result as ``_read_fragment``);
    ``whole``: its one file, already read (``plan.whole``)."""
    if plan.whole:
        # The file holds exactly the requested columns in order (a fragment appended with
        # the current schema): its table is the fragment's once the types agree.
        step = plan.steps[0]
        if whole is None:
            whole = _read_whole(storage, infos[step.index], step.width)
        if whole.num_rows == rows and whole.schema.types == out.types:
            return pa.Table.from_arrays(whole.columns, schema=out.schema)
    read: dict[int, pa.ChunkedArray] = {}
    for step in plan.steps:
        info = infos[step.index]
        if whole is None:
            modern = _read_modern(storage, info, step.positions, step.width)
        else:
            modern = [whole.column(p) for p in step.positions]
        file_ids: dict[Path, int] = {}
        for fid, column in zip(step.fids, modern, strict=True):
            if len(column) != rows:
                raise CorruptTableError(
                    f"{info.path} holds {len(column)} rows but its fragment has {rows}"
                )
            read[fid] = _by_id(storage, info, column, out.targets[fid], file_ids)
    if not out.wanted:
        return pa.table({"_": pa.nulls(rows)}).drop_columns(["_"])
    arrays = []
    for (name, f), fid in zip(out.wanted, out.ids, strict=True):
        column = read.get(fid)
        if column is None:  # a field none of the fragment's files holds: all null
            arrays.append(pa.chunked_array([pa.nulls(rows, f.type)], type=f.type))
        else:
            arrays.append(_as_type(column, f.type, name))
    return pa.Table.from_arrays(arrays, schema=out.schema)


def _is_local(storage: Storage) -> bool:
    return bool(getattr(storage, "is_local", False))


def _read_fragment(
    storage: Storage,
    state: LanceScanState,
    ancestor: dict[int, int],
    infos: tuple[DataFileInfo, ...],
    rows: int | None,
    wanted: list[tuple[str, pa.Field]],
    ids: list[int],
) -> pa.Table:
    holder: dict[int, tuple[DataFileInfo, int]] = {}
    widths: dict[str, int] = {}
    for info in infos:
        layout = None if info.legacy else layout_from_ids(info, ancestor)
        if layout is None and not info.legacy:
            layout = _layout_from_file(storage, info, ancestor)
        if info.legacy:
            for top in _legacy_tops(info, ancestor):
                # Two legacy files of a fragment may claim one field id (lance 0.10 add/drop
                # columns, corpus v0.10.5__corrupt_schema): the first file's column is read,
                # as pylance does.
                holder.setdefault(top, (info, -1))
            continue
        assert layout is not None
        widths[info.path] = len(layout)
        for position, owner in enumerate(layout):
            if owner is not None:
                holder[owner] = (info, position)
    by_file: dict[str, list[int]] = {}
    for fid in ids:
        if fid in holder:
            by_file.setdefault(holder[fid][0].path, []).append(fid)
    read: dict[int, pa.ChunkedArray] = {}
    targets = {fid: f for (_, f), fid in zip(wanted, ids, strict=True)}
    for info in infos:
        needed = by_file.get(info.path)
        if not needed:
            continue
        file_ids: dict[Path, int] = {}
        if info.legacy:
            table = _read_legacy(storage, state, info, needed)
            columns = dict(zip(needed, table.columns, strict=True))
        else:
            positions = [holder[fid][1] for fid in needed]
            modern = _read_modern(storage, info, positions, widths[info.path])
            columns = {
                fid: _by_id(storage, info, column, targets[fid], file_ids)
                for fid, column in zip(needed, modern, strict=True)
            }
        for fid, column in columns.items():
            if rows is None:
                rows = len(column)
            if len(column) != rows:
                raise CorruptTableError(
                    f"{info.path} holds {len(column)} rows but its fragment has {rows}"
                )
            read[fid] = column
    if rows is None:
        rows = _row_count(storage, state, infos[0])
    arrays = []
    for (name, f), fid in zip(wanted, ids, strict=True):
        column = read.get(fid)
        if column is None:  # a field none of the fragment's files holds: all null
            arrays.append(pa.chunked_array([pa.nulls(rows, f.type)], type=f.type))
        else:
            arrays.append(_as_type(column, f.type, name))
    if not wanted:  # no column requested (a count): the rows still exist
        return pa.table({"_": pa.nulls(rows)}).drop_columns(["_"])
    return pa.Table.from_arrays(arrays, schema=pa.schema([f for _, f in wanted]))


def _row_count(storage: Storage, state: LanceScanState, info: DataFileInfo) -> int:
    """Rows of a data file (fragments whose manifest does not say)."""
    if info.legacy:
        tops = _legacy_tops(info, ancestors({n.id: n for n in state.tree()}))
        return int(_read_legacy(storage, state, info, tops[:1]).num_rows)
    with _reader(storage, info, None) as reader:
        return int(reader.num_rows())


def _layout_from_file(
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


def _legacy_tops(info: DataFileInfo, ancestor: dict[int, int]) -> list[int]:
    seen: list[int] = []
    for fid in info.fields:
        top = ancestor.get(fid)
        if top is not None and top not in seen:
            seen.append(top)
    return seen


def _read_modern(
    storage: Storage, info: DataFileInfo, positions: list[int], width: int
) -> list[pa.ChunkedArray]:
    """The file's top-level columns at ``positions`` (pylance's file reader); the file has
    ``width`` top-level columns."""
    if not in_order(info.column_indices):
        return [_read_shifted(storage, info, p) for p in positions]
    if len(set(positions)) == width:
        table = _read_whole(storage, info, width)
        return [table.column(p) for p in positions]
    with _reader(storage, info, None) as reader:
        names = reader.metadata().schema.names
    selected = [names[p] for p in positions]
    with _reader(storage, info, selected) as projected:
        table = projected.read_all(batch_size=BATCH_ROWS).to_table()
    return [table.column(names[p]) for p in positions]


def _read_whole(storage: Storage, info: DataFileInfo, width: int) -> pa.Table:
    """Every column of the 2.x file ``info`` (in-order columns), which has ``width`` top-level
    columns: one reader and one ``read_all``, no ``metadata()`` call (a tenth of a
    millisecond per file, most of the reader's cost on small fragments).

    Raises ``CorruptTableError`` naming the file when it is missing, does not decode or holds
    another number of columns.
    """
    if _is_local(storage):
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


def _read_legacy(
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


def _by_id(
    storage: Storage,
    info: DataFileInfo,
    column: pa.ChunkedArray,
    target: pa.Field,
    file_ids: dict[Path, int],
) -> pa.ChunkedArray:
    """A nested column whose type differs from the dataset's (renamed or dropped children):
    children matched by field id (``lakecore_lance.nested``); other columns as they are."""
    t = target.type
    if column.type.equals(t) or not pa.types.is_nested(t) or pa.types.is_fixed_size_list(t):
        return column
    if not file_ids:
        file_ids.update(file_field_ids(storage, info.path))
    top = [p for p, i in file_ids.items() if len(p) == 1 and i == field_id(target)]
    if not top:
        return column  # the file does not say: the schema cast decides (``_as_type``)
    try:
        chunks = [conform(c, target, file_ids, top[0]) for c in column.chunks]
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise CorruptTableError(
            f"column {target.name!r} of {info.path} does not convert to {t}: {exc}"
        ) from exc
    return pa.chunked_array(chunks, type=t)


def _as_type(column: pa.ChunkedArray, target: pa.DataType, name: str) -> pa.ChunkedArray:
    if column.type.equals(target):
        return column
    try:
        return column.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise CorruptTableError(
            f"column {name!r} is {column.type} in its data file, {target} in the schema"
        ) from exc


def deleted_positions(context: ScanContext, files: pa.Table) -> list[RowPositions | None]:
    """The deleted row offsets of each fragment of ``files`` (None: no deletion file)."""
    scan_state(context)
    storage = context.open_storage()
    result: list[RowPositions | None] = []
    for value in files.column(fi.DELETION).to_pylist():
        if value is None:
            result.append(None)
            continue
        descriptor = value.get(fi.DESCRIPTOR)
        if not descriptor:
            raise CorruptTableError("a Lance deletion descriptor is empty")
        path = bytes(descriptor).decode("utf-8", errors="strict")
        positions = read_deleted(storage, path)
        result.append(np.asarray(positions, dtype=np.uint64))
    return result
