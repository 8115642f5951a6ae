"""Compacting the metadata table: every file group of every maintained partition at once.

As Hudi's metadata writer does, one compaction instant (plan, inflight, ``commit``) folds
the latest slice of every file group that has log files (``file_group_fold``) into a new
base HFile ``<file id>_0-0-0_<compaction>.hfile`` written as Hudi writes base files
(``table.files_hfile``: schema, bloom filter of the keys, min/max key). Deleted keys are
dropped. A file group with no base file whose logs hold no key at all (only the empty
delete block that initialised it) gets no base file on table version 8 (Hudi 1.0's compactor
writes none) and an empty one on version 9 (Hudi 1.1's does), as the corpus compactions show.
Hudi 1.0 and 1.1 (table versions 8 and 9) name the base file in its records'
``_hoodie_file_name`` (the other meta fields stay null), as the corpus's compacted files show.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lakecore.storage import Storage
from lakecore_hudi.mdt.column_stats import _load_timeline
from lakecore_hudi.mdt.file_group_fold import GroupFold, fold_slice, partition_slices
from lakecore_hudi.mdt.files_records import schema_json
from lakecore_hudi.mdt.partition_spec import PartitionSpec
from lakecore_hudi.mdt.prefixed import PrefixedStorage
from lakecore_hudi.mdt.table import files_hfile
from lakecore_hudi.names import base_file_name
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.timeline.commit_metadata import CommitMetadata, WriteStat, encode_commit_metadata
from lakecore_hudi.timeline.instants import COMPACTION
from lakecore_hudi.timeline.lifecycle import complete, write_inflight, write_requested
from lakecore_hudi.view import FileSlice

__all__ = ["compact_metadata"]

_WRITE_TOKEN = "0-0-0"


def compact_metadata(
    storage: Storage,
    mdt: PrefixedStorage,
    mconfig: TableConfig,
    specs: Sequence[PartitionSpec],
    instant: str,
    valid: Callable[[str], bool],
) -> None:
    """Compact ``specs``' partitions under compaction instant ``instant``.

    ``storage`` is the data table's; ``valid`` says which data instants' blocks count.

    Raises:
        OSError: the storage failed (the compaction stays pending).
        CorruptTableError: a metadata file is unreadable.
    """
    from lakecore_hudi.write.compaction import encode_compaction_plan  # imports write.commit

    version = mconfig.table_version
    timeline = _load_timeline(storage, mconfig)
    work: list[tuple[PartitionSpec, FileSlice]] = []
    for spec in specs:
        slices = partition_slices(mdt, spec.name, timeline)
        work.extend((spec, s) for _, s in sorted(slices.items()) if s.log_files)
    folds = [(spec, s, fold_slice(mdt, s, spec, timeline, valid)) for spec, s in work]
    plan = encode_compaction_plan([s for _, s in work])
    outputs = []
    for spec, s, fold in folds:
        if s.base_file is None and not fold.log_keys and version < 9:
            continue  # Hudi 1.0's compactor writes nothing for it (1.1 an empty base file)
        name = base_file_name(s.file_id, _WRITE_TOKEN, instant, "hfile")
        records = []
        for key in sorted(fold.records):
            record = spec.compacted(fold.records[key])
            if record is not None:
                records.append({**record, "_hoodie_file_name": name})
        outputs.append((spec, s, fold, name, files_hfile(records, version), len(records)))
    write_requested(mdt, mconfig, COMPACTION, instant, plan)
    write_inflight(mdt, mconfig, COMPACTION, instant, plan)
    stats: dict[str, list[WriteStat]] = {}
    for spec, s, fold, name, content, written in outputs:
        mdt.put(f"{spec.name}/{name}", content)
        stats.setdefault(spec.name, []).append(_stat(spec.name, s, fold, name, content, written))
    meta = CommitMetadata(
        partition_to_write_stats=stats,
        operation_type="COMPACT",
        extra_metadata={"schema": schema_json(version)},
        compacted=True,
    )
    complete(mdt, mconfig, COMPACTION, instant, encode_commit_metadata(meta, version))


def _stat(
    partition: str, s: FileSlice, fold: GroupFold, name: str, content: bytes, written: int
) -> WriteStat:
    updated = len(fold.log_keys & fold.base_keys)
    return WriteStat(
        file_id=s.file_id,
        path=f"{partition}/{name}",
        partition_path=partition,
        prev_commit=s.base_instant if s.base_file is not None else "null",
        num_writes=written,
        num_inserts=len(fold.log_keys - fold.base_keys - fold.deleted),
        num_update_writes=updated,
        num_deletes=len(fold.deleted),
        total_write_bytes=len(content),
        file_size_in_bytes=len(content),
        total_log_records=fold.log_records,
        total_log_blocks=fold.log_blocks,
        total_log_files_compacted=len(s.log_files),
        total_log_size_compacted=sum(f.size for f in s.log_files),
        total_updated_records_compacted=len(fold.log_keys),
    )
