"""Reading Lance fragments: the ``read_files`` / ``deleted_positions`` halves of ``LanceFormat``.

A fragment's rows are spread over its data files, each holding some of the fields (a column
added later lives in a new file; an updated column may be rewritten into a new file, the old
file's field id tombstoned as -2). For each requested column the last data file holding its
field id is read, and the fragment's rows are the columns side by side, in position order.

Each data file is read by ``lakecore_lance.data_files``: modern data files (file format 2.x)
by pylance's ``lance.file.LanceFileReader``; legacy (v0.1) files, which it refuses, by
``lakecore_lance.legacy`` (the format implemented from the spec). Which applies is decided per
file from the manifest's ``DataFile`` version. This module matches the files' columns to the
dataset's fields (by field id; a field no file holds reads as nulls) and hands the rows over.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from lakecore.errors import CorruptTableError
from lakecore.model import files as fi
from lakecore.model.schema import field_id
from lakecore.planning.tasks import FileRows, RowPositions, ScanContext
from lakecore.storage import Storage
from lakecore_lance import fragment_tasks as tasks
from lakecore_lance.data_files import (
    BATCH_ROWS,
    is_local,
    layout_from_file,
    legacy_tops,
    read_legacy,
    read_modern,
    read_whole,
    row_count,
)
from lakecore_lance.deletions import read_deleted
from lakecore_lance.nested import Path, conform, file_field_ids
from lakecore_lance.read_plan import Output, Plan, ancestors, layout_from_ids, plan_for
from lakecore_lance.small_files import SmallFile, read_small_files
from lakecore_lance.state import DataFileInfo, LanceScanState, LanceState

TOMBSTONE = -2
"""A ``DataFile.fields`` entry of a field whose data moved to another file."""


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

    local = is_local(storage)

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
            whole = read_whole(storage, infos[step.index], step.width)
        if whole.num_rows == rows and whole.schema.types == out.types:
            return pa.Table.from_arrays(whole.columns, schema=out.schema)
    read: dict[int, pa.ChunkedArray] = {}
    for step in plan.steps:
        info = infos[step.index]
        if whole is None:
            modern = read_modern(storage, info, step.positions, step.width)
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
            layout = layout_from_file(storage, info, ancestor)
        if info.legacy:
            for top in legacy_tops(info, ancestor):
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
            table = read_legacy(storage, state, info, needed)
            columns = dict(zip(needed, table.columns, strict=True))
        else:
            positions = [holder[fid][1] for fid in needed]
            modern = read_modern(storage, info, positions, widths[info.path])
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
        rows = row_count(storage, state, infos[0])
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
