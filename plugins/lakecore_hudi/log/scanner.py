"""Reading the records of a file slice's log files in the order Hudi applies them.

Which blocks count (as Hudi 1.x's log record reader decides):

1. Blocks are read from the log files in the order given (the caller sorts them with
   ``names.log_file_sort_key``). A CORRUPT region is an error unless ``skip_corrupt``.
2. A data or delete block counts only if ``is_valid_instant(INSTANT_TIME)``: the instant is
   completed on the timeline, not rolled back, and not after the as-of instant. Command
   blocks are applied whatever their own instant.
3. A ROLLBACK command block removes every earlier block whose instant is its
   TARGET_INSTANT_TIME (blocks of that instant appearing after it count again).
4. Surviving blocks are grouped by instant, groups in order of first appearance and blocks in
   file order within a group; that is the order their records are applied in.
5. Log-compacted blocks (COMPACTED_BLOCK_TIMES header) replace the blocks of the instants
   they list and take the place of the latest of them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lakecore.errors import UnsupportedFeatureError
from lakecore.storage import Storage
from lakecore_hudi.log.blocks import avro_record_count, decode_avro_blocks, decode_data_block
from lakecore_hudi.log.delete_blocks import decode_delete_block
from lakecore_hudi.log.format import BlockType, CommandType, HeaderKey, LogBlock, read_log_blocks
from lakecore_hudi.parallel import map_in_chunks

__all__ = [
    "SEQ_COLUMN",
    "LogRecords",
    "order_log_blocks",
    "read_log_records",
    "read_slices_log_records",
]

SEQ_COLUMN = "_lakecore_log_seq"
"""Global application order of log records (data and deletes share one sequence)."""

_DATA_TYPES = (BlockType.AVRO_DATA, BlockType.PARQUET_DATA, BlockType.HFILE_DATA, BlockType.CDC)


@dataclass(frozen=True, slots=True)
class LogRecords:
    """The records of a set of log files.

    ``data`` has the reader schema's columns plus ``_lakecore_log_seq`` (int64), in
    application order. ``deletes`` has ``record_key``, ``partition_path``,
    ``ordering_value`` (null = applies regardless of ordering) and ``_lakecore_log_seq``. A
    later sequence number wins over an earlier one for the same key when orderings tie.
    """

    data: pa.Table
    deletes: pa.Table
    blocks_read: int
    blocks_applied: int


def read_log_records(
    storage: Storage,
    paths: Sequence[str],
    reader_schema: pa.Schema,
    is_valid_instant: Callable[[str], bool],
    *,
    skip_corrupt: bool = False,
) -> LogRecords:
    """Read and order the data and delete records of the log files ``paths``.

    Args:
        storage: Where the files live; ``paths`` are relative to its root.
        paths: The log files of one file slice, already in Hudi's log order.
        reader_schema: The schema to return data records in (schema evolution: missing
            columns are null, see ``blocks.conform_table``).
        is_valid_instant: Whether a data/delete block's INSTANT_TIME counts (completed, not
            rolled back, not after the as-of instant).
        skip_corrupt: Skip damaged regions as Hudi does for torn appends instead of raising.

    Raises:
        CorruptTableError: a log file or block is damaged (unless ``skip_corrupt``).
        UnsupportedFeatureError: a block this reader cannot apply (HFile/CDC data, partial
            updates, unknown command, Kryo delete blocks).
        FileNotFoundError: a log file does not exist.
    """
    return read_slices_log_records(
        storage, [paths], reader_schema, is_valid_instant, skip_corrupt=skip_corrupt
    )[0]


def read_slices_log_records(
    storage: Storage,
    slices: Sequence[Sequence[str]],
    reader_schema: pa.Schema,
    is_valid_instant: Callable[[str], bool],
    *,
    skip_corrupt: bool = False,
) -> list[LogRecords]:
    """``read_log_records`` for several file slices at once (one list of log paths each).

    The Avro data blocks of all the slices that share a writer schema are decoded in one
    call (the column-wise decoder's cost is per call and per field, so many slices with a
    few log records each cost about as much as one slice with all of them); the result is
    the same as reading the slices one by one.

    Raises:
        As ``read_log_records``.
    """
    read: list[int] = []
    groups: list[list[list[LogBlock]]] = []
    contents = iter(_read_all(storage, [path for paths in slices for path in paths]))
    for paths in slices:
        blocks: list[LogBlock] = []
        for path in paths:
            data = next(contents)
            blocks.extend(read_log_blocks(data, path, skip_corrupt=skip_corrupt))
        read.append(len(blocks))
        groups.append(_decode_groups(order_log_blocks(blocks, is_valid_instant)))
    decoded = _decode_avro_groups(groups, reader_schema)
    out = []
    for i, slice_groups in enumerate(groups):
        data_parts: list[pa.Table] = []
        delete_parts: list[pa.Table] = []
        seq = 0
        for j, group in enumerate(slice_groups):
            if group[0].block_type == BlockType.DELETE:
                table = decode_delete_block(group[0])
                delete_parts.append(_with_seq(table, seq))
            else:
                table = (
                    decoded[(i, j)] if (i, j) in decoded else _decode_other(group, reader_schema)
                )
                data_parts.append(_with_seq(table, seq))
            seq += table.num_rows
        out.append(
            LogRecords(
                data=_concat(data_parts, _seq_schema(reader_schema)),
                deletes=_concat_deletes(delete_parts),
                blocks_read=read[i],
                blocks_applied=sum(len(g) for g in slice_groups),
            )
        )
    return out


LOG_READERS = 4
"""Threads fetching the bytes of log files when several are read at once."""


def _read_all(storage: Storage, paths: Sequence[str]) -> list[bytes]:
    """The bytes of each of ``paths``, fetched on a few threads (Storage is thread-safe)."""
    return map_in_chunks(storage.read, paths, LOG_READERS)


def _decode_avro_groups(
    groups: Sequence[Sequence[Sequence[LogBlock]]], reader_schema: pa.Schema
) -> dict[tuple[int, int], pa.Table]:
    """The rows of every Avro group (slice i, group j), decoded one call per writer schema."""
    by_schema: dict[str | None, list[tuple[int, int]]] = {}
    for i, slice_groups in enumerate(groups):
        for j, group in enumerate(slice_groups):
            if group[0].block_type == BlockType.AVRO_DATA:
                for block in group:
                    _check_data_block(block)
                by_schema.setdefault(group[0].schema, []).append((i, j))
    out: dict[tuple[int, int], pa.Table] = {}
    for members in by_schema.values():
        blocks = [b for i, j in members for b in groups[i][j]]
        table = decode_avro_blocks(blocks, reader_schema)
        start = 0
        for i, j in members:
            count = sum(avro_record_count(b) for b in groups[i][j])
            out[(i, j)] = table.slice(start, count)
            start += count
    return out


def _decode_other(group: Sequence[LogBlock], reader_schema: pa.Schema) -> pa.Table:
    """A non-Avro data block (Parquet; HFile/CDC raise)."""
    for block in group:
        _check_data_block(block)
    return decode_data_block(group[0], reader_schema)


def order_log_blocks(
    blocks: Sequence[LogBlock], is_valid_instant: Callable[[str], bool]
) -> list[LogBlock]:
    """Return the data and delete blocks that count, in the order Hudi applies them.

    Pure: implements rules 2-5 of the module docstring on already-read blocks.

    Raises:
        UnsupportedFeatureError: a command block other than ROLLBACK.
    """
    by_instant: dict[str, list[LogBlock]] = {}  # dicts keep first-appearance order
    for block in blocks:
        if block.block_type == BlockType.CORRUPT:
            continue
        if block.block_type == BlockType.COMMAND:
            _apply_command(block, by_instant)
            continue
        instant = block.instant_time
        if instant is None or not is_valid_instant(instant):
            continue
        by_instant.setdefault(instant, []).append(block)
    return _place_compacted(by_instant)


def _apply_command(block: LogBlock, by_instant: dict[str, list[LogBlock]]) -> None:
    command = block.command_block_type
    if command != CommandType.ROLLBACK:
        raise UnsupportedFeatureError(
            f"hudi log command {command}",
            f"{block.path}: command block at byte {block.offset} is not a rollback",
        )
    target = block.target_instant_time
    if target is not None:
        by_instant.pop(target, None)


def _place_compacted(by_instant: dict[str, list[LogBlock]]) -> list[LogBlock]:
    """Flatten instant groups, letting log-compacted groups stand in for what they replace.

    Walking instants newest-first, a compacted group maps each instant it lists to the final
    compacted instant (compactions of compactions chain); a plain group already covered by a
    compaction is replaced by that compaction's blocks, placed once, at the position of the
    newest instant it covers.
    """
    final_of: dict[str, str] = {}
    placed: set[str] = set()
    groups: list[list[LogBlock]] = []
    for instant in reversed(list(by_instant)):
        blocks = by_instant[instant]
        listed = blocks[0].header.get(HeaderKey.COMPACTED_BLOCK_TIMES)
        if listed is not None:
            final = final_of.get(instant, instant)
            for original in listed.split(","):
                final_of[original.strip()] = final
            continue
        target = final_of.get(instant, instant)
        if target in placed:
            continue
        placed.add(target)
        groups.append(by_instant[target])
    return [block for group in reversed(groups) for block in group]


def _decode_groups(blocks: Sequence[LogBlock]) -> list[list[LogBlock]]:
    """``blocks`` in order, in groups decoded together: a run of consecutive Avro data blocks
    with the same SCHEMA header is one group (their records are consecutive in the
    application order, and one decoder call over many records is much cheaper than many
    calls); every other block is a group of its own."""
    groups: list[list[LogBlock]] = []
    for block in blocks:
        last = groups[-1][-1] if groups else None
        if (
            last is not None
            and block.block_type == BlockType.AVRO_DATA
            and last.block_type == BlockType.AVRO_DATA
            and block.schema == last.schema
        ):
            groups[-1].append(block)
        else:
            groups.append([block])
    return groups


def _check_data_block(block: LogBlock) -> None:
    if block.header.get(HeaderKey.IS_PARTIAL, "false").lower() == "true":
        raise UnsupportedFeatureError(
            "hudi partial-update log blocks",
            f"{block.path}: data block at byte {block.offset} holds partial updates "
            "(IS_PARTIAL); lakecore cannot merge them yet",
        )


def _with_seq(table: pa.Table, start: int) -> pa.Table:
    seq = pa.array(np.arange(start, start + table.num_rows, dtype=np.int64))
    return table.append_column(pa.field(SEQ_COLUMN, pa.int64(), nullable=False), seq)


def _seq_schema(schema: pa.Schema) -> pa.Schema:
    return schema.append(pa.field(SEQ_COLUMN, pa.int64(), nullable=False))


def _concat(parts: list[pa.Table], schema: pa.Schema) -> pa.Table:
    if not parts:
        return schema.empty_table()
    return parts[0] if len(parts) == 1 else pa.concat_tables(parts)


_NO_DELETES = pa.schema(
    [
        ("record_key", pa.string()),
        ("partition_path", pa.string()),
        ("ordering_value", pa.null()),
        pa.field(SEQ_COLUMN, pa.int64(), nullable=False),
    ]
).empty_table()


def _concat_deletes(parts: list[pa.Table]) -> pa.Table:
    if not parts:
        return _NO_DELETES
    if len(parts) == 1:
        return parts[0]
    # Ordering values of different blocks can have different types (a null-typed "no
    # ordering" block next to an int64 one); permissive promotion unifies them.
    return pa.concat_tables(parts, promote_options="permissive")
