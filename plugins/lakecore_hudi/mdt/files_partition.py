"""Reading the metadata table's ``files`` partition: the data table's file listing.

The latest snapshot of the partition is its file slices (base HFile of the latest completed
compaction, then the log files of later completed delta commits), folded as Hudi's payload
does (``files_records.fold_listing``). As Hudi's ``HoodieBackedTableMetadata`` does, a log
block counts only when its instant is completed on the metadata table's timeline AND is a
valid instant of the data table: completed on the data timeline, older than the data
timeline's first instant (archived), or one of the metadata table's own initialisation
instants (``00000000000000000``...). So a metadata delta commit whose data instant never
completed (a writer that died between the two) lists nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from lakecore.errors import CorruptTableError
from lakecore.storage import Storage
from lakecore_hudi.mdt.column_stats import (
    METADATA_DIR,
    _block_records,
    _hfile_records,
    _live_blocks,
    _load_timeline,
    _metadata_config,
    _slice_files,
    _Timeline,
)
from lakecore_hudi.mdt.files_records import ALL_PARTITIONS, fold_listing, partition_path
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.timeline.active import load_timeline
from lakecore_hudi.view import latest_slices

__all__ = ["FILES_PARTITION", "is_init_instant", "read_files_partition", "valid_data_instants"]

FILES_PARTITION = "files"


def is_init_instant(instant: str) -> bool:
    """Whether ``instant`` is one of the metadata table's own initialisation instants."""
    return len(instant) == 17 and instant.startswith("00000000000000")


def valid_data_instants(storage: Storage, config: TableConfig) -> tuple[frozenset[str], str | None]:
    """(completed instants of the data timeline, its earliest instant or None)."""
    timeline = load_timeline(storage, config)
    completed = frozenset(i.timestamp for i in timeline.completed())
    first = min((i.timestamp for i in timeline.instants), default=None)
    return completed, first


def read_files_partition(
    storage: Storage,
    config: TableConfig,
    data_instants: tuple[Collection[str], str | None] | None = None,
) -> dict[str, dict[str, int]] | None:
    """The data table's listing as the ``files`` partition holds it.

    Args:
        storage: Storage rooted at the data table.
        config: The data table's configuration.
        data_instants: ``valid_data_instants`` of the data table (loaded when None).

    Returns:
        partition path (``""`` for the root) -> file name -> size; the partition list of
        ``__all_partitions__`` is checked against the per-partition records (a partition
        with files but not listed is not returned). None without a metadata table or
        ``files`` partition.

    Raises:
        CorruptTableError: a metadata-table file is unreadable, or the ``files`` partition
            has no completed file slice; the message names the file or directory.
        UnsupportedFeatureError: a metadata-table file uses a feature lakecore cannot read.
    """
    if FILES_PARTITION not in config.metadata_partitions:
        return None
    mdt = _metadata_config(storage)
    if mdt is None:
        return None
    completed, first = data_instants or valid_data_instants(storage, config)
    timeline = _load_timeline(storage, mdt)
    folded = fold_listing(_records(storage, mdt.table_version, timeline, completed, first))
    partitions = folded.pop(ALL_PARTITIONS, {})
    return {partition_path(k): folded.get(k, {}) for k in partitions}


def _records(
    storage: Storage,
    mdt_version: int,
    timeline: _Timeline,
    completed: Collection[str],
    first: str | None,
) -> list[Mapping[str, Any]]:
    def valid(instant: str) -> bool:
        if is_init_instant(instant) or instant in completed:
            return True
        return first is not None and instant < first

    directory = f"{METADATA_DIR}/{FILES_PARTITION}"
    slices = latest_slices(
        _slice_files(storage.list_dir(directory)), timeline.visible, mdt_version >= 8
    )
    if not slices:
        # Initialising the partition writes its first base file; without any slice the
        # listing would read as an empty table.
        raise CorruptTableError(
            f"{directory}: the metadata table's 'files' partition has no completed file slice"
        )
    out: list[Mapping[str, Any]] = []
    for s in slices:
        if s.base_file is not None:
            path = s.base_file.path
            out.extend(
                {**r.record, "key": r.key} for r in _hfile_records(storage.read(path), path, None)
            )
        logs = [(f.path, storage.read(f.path)) for f in s.log_files]
        for block in _live_blocks(logs, timeline):
            if block.instant_time is None or not valid(block.instant_time):
                continue
            out.extend({**r.record, "key": r.key} for r in _block_records(block))
    return out
