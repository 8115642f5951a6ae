"""The Hudi side of the one read path: a snapshot's ScanContext and reading file slices.

A file-index row is one file slice: its ``data_files`` are the base file (when it has one)
then the log files in merge order. Everything a reader in another process (a Spark
executor) needs to merge a slice travels in the typed ``HudiScanState``: the table schema
(meta fields included), the merge spec (key fields, ordering field and mode), which instants'
log blocks count, and the reading options. Hudi has no position deletes: deletes live in log
blocks and are merged by key, so ``deleted_positions`` never has anything to answer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace

import pyarrow as pa

from lakecore.errors import CorruptTableError
from lakecore.model import files as fi
from lakecore.planning.tasks import FileRows, RowPositions, ScanContext
from lakecore.storage import Storage
from lakecore_hudi.merge import MergeSpec
from lakecore_hudi.names import is_log_file
from lakecore_hudi.options import ReadOptions
from lakecore_hudi.partitions import prunable_partition_columns
from lakecore_hudi.reader import SliceReader
from lakecore_hudi.state import HudiState
from lakecore_hudi.view import Visible


@dataclass(frozen=True, slots=True)
class HudiScanState:
    """What reading a Hudi snapshot's file slices needs beyond the neutral ``ScanContext``.

    ``table_schema``: every column of the table, meta fields included when it has them
    (merging needs record keys); ``merge``: how records of one key combine;
    ``valid_instants``/``archived_before``: which instants' log blocks are part of the
    snapshot (``Visible``); ``options``: the reading options the table was opened with.
    """

    table_schema: pa.Schema
    merge: MergeSpec
    valid_instants: frozenset[str]
    archived_before: str = ""
    options: ReadOptions = field(default_factory=ReadOptions)
    path_partitions: tuple[str, ...] = ()
    """Partition columns the data files do not hold (``drop.partition.columns``): read from
    the file index's ``partition`` values, which come from the slice's partition path."""

    def includes(self, timestamp: str) -> bool:
        """Whether log blocks written by ``timestamp`` are part of the snapshot."""
        return Visible(self.valid_instants, archived_before=self.archived_before).includes(
            timestamp
        )


def scan_context(storage: Storage, state: HudiState) -> ScanContext:
    """The ScanContext of the snapshot ``state`` of the table in ``storage``."""
    return ScanContext(
        format="hudi",
        table_uri=storage.root,
        schema=state.schema,
        partition_columns=prunable_partition_columns(state.config, state.table_schema),
        file_format=state.config.base_file_format.lower(),
        storage_options=dict(getattr(storage, "storage_options", None) or {}),
        state=HudiScanState(
            table_schema=state.table_schema,
            merge=state.merge_spec,
            valid_instants=frozenset(state.visible.instants),
            archived_before=state.visible.archived_before,
            options=state.options,
            path_partitions=state.config.partition_fields
            if state.config.drop_partition_columns
            else (),
        ),
        storage=storage,
    )


def scan_state(context: ScanContext) -> HudiScanState:
    """``context.state``; raises ``TypeError`` when it is not a Hudi scan state."""
    if not isinstance(context.state, HudiScanState):
        raise TypeError(f"expected a HudiScanState in the scan context, got {context.state!r}")
    return context.state


# Merged slices are read in batches of at most this many slices and about this many bytes
# of files: one decoding and one merge per batch (``SliceReader.read_merged``).
MERGE_BATCH_SLICES = 256
MERGE_BATCH_BYTES = 64 * 1024 * 1024


def read_files(context: ScanContext, files: pa.Table, columns: Sequence[str]) -> Iterator[FileRows]:
    """The live rows of each file slice of ``files``, merged (MoR), one ``FileRows`` each.

    Slices come out in order; consecutive slices with log files are merged in batches.
    Partition columns the data files leave out take the slice's partition values.
    """
    state = scan_state(context)
    rows = _read_slices(context, state, files, columns)
    if state.path_partitions and any(c in state.path_partitions for c in columns):
        return _with_path_partitions(files, state.path_partitions, columns)(rows)
    return rows


def _read_slices(
    context: ScanContext, state: HudiScanState, files: pa.Table, columns: Sequence[str]
) -> Iterator[FileRows]:
    reader = SliceReader(
        context.open_storage(),
        state.table_schema,
        state.merge,
        state.includes,
        state.options.read_optimized,
    )
    out_schema = pa.schema([context.schema.field(c) for c in columns])
    wanted = list(columns) or context.schema.names[:1]
    sizes = _sizes(files)
    batch: list[tuple[int, str | None, list[str]]] = []
    batch_bytes = 0
    for index, unit in enumerate(slice_files(files)):
        base = unit[0] if unit and not is_log_file(unit[0]) else None
        logs = unit[1:] if base is not None else unit
        if logs and not reader.read_optimized:
            batch.append((index, base, logs))
            batch_bytes += sizes[index]
            if len(batch) >= MERGE_BATCH_SLICES or batch_bytes >= MERGE_BATCH_BYTES:
                yield from _merged_rows(reader, batch, wanted, columns, out_schema)
                batch, batch_bytes = [], 0
            continue
        yield from _merged_rows(reader, batch, wanted, columns, out_schema)
        batch, batch_bytes = [], 0
        pieces = reader.read_pieces(base, logs, wanted)
        yield from _file_rows(index, pieces, columns, out_schema)
    yield from _merged_rows(reader, batch, wanted, columns, out_schema)


def _merged_rows(
    reader: SliceReader,
    batch: list[tuple[int, str | None, list[str]]],
    wanted: list[str],
    columns: Sequence[str],
    out_schema: pa.Schema,
) -> Iterator[FileRows]:
    if not batch:
        return
    tables = reader.read_merged([(base, logs) for _, base, logs in batch], wanted)
    for (index, _, _), table in zip(batch, tables, strict=True):
        yield from _file_rows(index, [table], columns, out_schema)


def _file_rows(
    index: int, pieces: Iterable[pa.Table], columns: Sequence[str], out_schema: pa.Schema
) -> Iterator[FileRows]:
    # No columns (a count): one column was read anyway, since a file read with none has no
    # rows.
    offset = 0
    for piece in pieces:
        rows = piece.combine_chunks()
        if not columns:
            yield FileRows(index, offset, _no_columns(rows.num_rows))
            offset += rows.num_rows
            continue
        for batch in rows.to_batches():
            yield FileRows(
                index, offset, pa.RecordBatch.from_arrays(batch.columns, schema=out_schema)
            )
            offset += batch.num_rows


def _with_path_partitions(
    files: pa.Table, names: Sequence[str], columns: Sequence[str]
) -> Callable[[Iterator[FileRows]], Iterator[FileRows]]:
    """A filter that sets the partition columns ``names`` of each slice's rows to the slice's
    partition values (the file index's ``partition``).

    Raises:
        CorruptTableError: the file index has no partition values (a partition path that
            does not name them), naming the first slice.
    """
    if fi.PARTITION not in files.column_names:
        first = files.column(fi.PATH)[0].as_py() if files.num_rows else "?"
        raise CorruptTableError(
            f"{first}: the table leaves partition columns {list(names)} out of its data "
            "files, but its partition paths do not name their values"
        )
    values = files.column(fi.PARTITION).combine_chunks()
    fields = [n for n in names if n in columns]

    def fill(rows: Iterator[FileRows]) -> Iterator[FileRows]:
        for piece in rows:
            batch = piece.batch
            arrays = list(batch.columns)
            for name in fields:
                value = values.field(name)[piece.index]
                i = batch.schema.get_field_index(name)
                constant = pa.array([value.as_py()] * batch.num_rows, batch.schema.field(i).type)
                arrays[i] = constant
            yield replace(piece, batch=pa.RecordBatch.from_arrays(arrays, schema=batch.schema))

    return fill


def _sizes(files: pa.Table) -> list[int]:
    """Each slice's size in bytes as the file index has it (0 where unknown)."""
    if fi.SIZE not in files.column_names:
        return [0] * files.num_rows
    return [int(v or 0) for v in files.column(fi.SIZE).to_pylist()]


def _no_columns(n: int) -> pa.RecordBatch:
    """A batch of ``n`` rows and no columns."""
    return pa.RecordBatch.from_pydict({"_": pa.nulls(n)}).select([])


def slice_files(files: pa.Table) -> list[list[str]]:
    """Per row of ``files``: the slice's base file (if any), then its log files in order."""
    paths = files.column(fi.PATH).to_pylist()
    if fi.DATA_FILES not in files.column_names:
        return [[p] for p in paths]
    data = files.column(fi.DATA_FILES).to_pylist()
    return [list(d) if d else [p] for p, d in zip(paths, data, strict=True)]


def deleted_positions(context: ScanContext, files: pa.Table) -> list[RowPositions | None]:
    """Hudi slices have no position deletes; raises ``CorruptTableError`` if a row claims one."""
    deletion = files.column(fi.DELETION) if fi.DELETION in files.column_names else None
    if deletion is not None and deletion.null_count < files.num_rows:
        raise CorruptTableError("a Hudi file slice cannot carry position deletes")
    return [None] * files.num_rows
