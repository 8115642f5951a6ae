"""Reading one metadata-table file group back: its latest slice folded into live records.

A file group's latest slice (base HFile of the latest compaction, then the log files of
later delta commits, file slicing by completion time as in ``view``) folds as Hudi's
compactor folds it: the log records first, in the order Hudi applies the blocks
(``log.scanner.order_log_blocks``: rolled-back and uncommitted blocks dropped), each key's
records merged with the partition's ``merge``; a DELETE block entry deletes its key (a later
record of that key starts afresh); then each key's log result is merged onto its base record.
A block counts only when its metadata delta commit is completed (or archived) AND its data
instant is valid (``valid``: completed on the data timeline, archived, or one of the metadata
table's initialisation instants), as Hudi's metadata reader decides.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lakecore.storage import Storage
from lakecore_hudi.log.delete_blocks import decode_delete_block
from lakecore_hudi.log.format import BlockType, read_log_blocks
from lakecore_hudi.log.scanner import order_log_blocks
from lakecore_hudi.mdt.column_stats import (
    _block_records,
    _hfile_records,
    _slice_files,
    _Timeline,
)
from lakecore_hudi.mdt.partition_spec import PartitionSpec
from lakecore_hudi.view import FileSlice, latest_slices

__all__ = ["GroupFold", "file_group_ids", "fold_slice", "partition_slices"]

Record = dict[str, Any]


def file_group_ids(mdt: Storage, partition: str) -> list[str]:
    """The ids of the file groups partition ``partition`` has on storage (``mdt`` rooted at
    the metadata table), sorted."""
    return sorted({f.name.file_id for f in _slice_files(mdt.list_dir(partition))})


def partition_slices(mdt: Storage, partition: str, timeline: _Timeline) -> dict[str, FileSlice]:
    """file group id -> latest visible slice of every file group of ``partition``."""
    files = _slice_files(mdt.list_dir(partition))
    return {s.file_id: s for s in latest_slices(files, timeline.visible, True)}


@dataclass
class GroupFold:
    """A folded file group: ``records`` (key -> live record, sorted on output), what the
    compaction's write stat reports about the logs it read, and the keys it deleted."""

    records: dict[str, Record] = field(default_factory=dict)
    base_keys: frozenset[str] = frozenset()
    log_keys: set[str] = field(default_factory=set)
    deleted: set[str] = field(default_factory=set)
    log_records: int = 0
    log_blocks: int = 0


def fold_slice(
    mdt: Storage,
    file_slice: FileSlice,
    spec: PartitionSpec,
    timeline: _Timeline,
    valid: Callable[[str], bool],
) -> GroupFold:
    """Fold ``file_slice`` of ``spec``'s partition (see the module docstring).

    Raises:
        CorruptTableError: a file of the slice is unreadable; the message names it.
        UnsupportedFeatureError: a file uses a feature lakecore cannot read.
    """
    base: dict[str, Record] = {}
    if file_slice.base_file is not None:
        path = file_slice.base_file.path
        for r in _hfile_records(mdt.read(path), path, None):
            base[r.key] = {**r.record, "key": r.key}
    out = GroupFold(base_keys=frozenset(base))
    logs = _log_state(mdt, file_slice.log_files, spec, timeline, valid, out)
    merged = dict(base)
    for key, record in logs.items():
        result = None if record is None else spec.merge(base.get(key), record)
        if result is None:
            merged.pop(key, None)
            out.deleted.add(key)
        else:
            merged[key] = result
    out.records = merged
    return out


def _log_state(
    mdt: Storage,
    log_files: Sequence[Any],
    spec: PartitionSpec,
    timeline: _Timeline,
    valid: Callable[[str], bool],
    out: GroupFold,
) -> dict[str, Record | None]:
    """key -> the log records' merged result (None: deleted) of a slice's log files."""
    blocks = [
        b for f in log_files for b in read_log_blocks(mdt.read(f.path), f.path, skip_corrupt=True)
    ]
    state: dict[str, Record | None] = {}

    def live(instant: str) -> bool:
        return timeline.block_is_live(instant) and valid(instant)

    for block in order_log_blocks(blocks, live):
        if block.block_type == BlockType.DELETE:
            keys = decode_delete_block(block).column("record_key").to_pylist()
            out.log_blocks += 1
            out.log_records += len(keys)
            for key in keys:
                state[str(key)] = None
                out.log_keys.add(str(key))
            continue
        if block.block_type not in (BlockType.HFILE_DATA, BlockType.AVRO_DATA):
            continue
        out.log_blocks += 1
        for r in _block_records(block):
            out.log_records += 1
            out.log_keys.add(r.key)
            state[r.key] = spec.merge(state.get(r.key), {**r.record, "key": r.key})
    return state
