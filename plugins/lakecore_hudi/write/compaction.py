"""MoR compaction: merging each file slice that has log files into a new base file.

The instant goes ``<ts>.compaction.requested`` (a ``HoodieCompactionPlan``: one operation per
slice, naming its base file and log files), ``<ts>.compaction.inflight`` (empty), and completes
as a ``commit`` (in both timeline layouts) whose metadata is marked ``compacted``. Each new base
file keeps its file group and holds the slice's live records as the snapshot reads them; the
records keep their commit times (as Hudi's compactor does) and point at the new file.
"""

from __future__ import annotations

import io
import logging
from typing import Any

import fastavro

from lakecore.storage import Storage
from lakecore_hudi.mdt.index_gate import ensure_index_partitions_writable
from lakecore_hudi.names import base_file_name, write_token
from lakecore_hudi.state import HudiState
from lakecore_hudi.timeline.commit_metadata import CommitMetadata, WriteStat, stats_by_partition
from lakecore_hudi.timeline.instants import COMPACTION, INFLIGHT, make_instant
from lakecore_hudi.timeline.lifecycle import write_inflight
from lakecore_hudi.view import FileSlice
from lakecore_hudi.write import heartbeat
from lakecore_hudi.write.changes import SliceRows
from lakecore_hudi.write.commit import commit_planned
from lakecore_hudi.write.files_out import carried_over, join_path, write_base_file
from lakecore_hudi.write.lance_base import base_file_extension
from lakecore_hudi.write.layout import WriteLayout, ensure_writable, layout_for
from lakecore_hudi.write.planned import PlannedInstant, start_instant
from lakecore_hudi.write.rollback import rollback_failed_writes, rollback_instant

_NS = "org.apache.hudi.avro.model"
log = logging.getLogger(__name__)


def _opt(avro: Any) -> list[Any]:
    return ["null", avro]


#: HoodieCompactionPlan as Hudi 1.0 embeds it in ``.compaction.requested`` files.
COMPACTION_PLAN: dict[str, Any] = {
    "type": "record",
    "name": f"{_NS}.HoodieCompactionPlan",
    "fields": [
        {
            "name": "operations",
            "default": None,
            "type": _opt(
                {
                    "type": "array",
                    "items": {
                        "type": "record",
                        "name": f"{_NS}.HoodieCompactionOperation",
                        "fields": [
                            {"name": "baseInstantTime", "type": _opt("string")},
                            {
                                "name": "deltaFilePaths",
                                "default": None,
                                "type": _opt({"type": "array", "items": "string"}),
                            },
                            {"name": "dataFilePath", "default": None, "type": _opt("string")},
                            {"name": "fileId", "type": _opt("string")},
                            {"name": "partitionPath", "default": None, "type": _opt("string")},
                            {
                                "name": "metrics",
                                "default": None,
                                "type": _opt({"type": "map", "values": "double"}),
                            },
                            {"name": "bootstrapFilePath", "default": None, "type": _opt("string")},
                        ],
                    },
                }
            ),
        },
        {
            "name": "extraMetadata",
            "default": None,
            "type": _opt({"type": "map", "values": "string"}),
        },
        {"name": "version", "default": 1, "type": ["int", "null"]},
        {
            "name": "strategy",
            "default": None,
            "type": _opt(
                {
                    "type": "record",
                    "name": f"{_NS}.HoodieCompactionStrategy",
                    "fields": [
                        {"name": "compactorClassName", "default": None, "type": _opt("string")},
                        {
                            "name": "strategyParams",
                            "default": None,
                            "type": _opt({"type": "map", "values": "string"}),
                        },
                        {"name": "version", "default": 1, "type": ["int", "null"]},
                    ],
                }
            ),
        },
        {"name": "preserveHoodieMetadata", "default": False, "type": ["boolean", "null"]},
        {
            "name": "missingSchedulePartitions",
            "default": None,
            "type": _opt({"type": "array", "items": "string"}),
        },
    ],
}


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _operation(s: FileSlice) -> dict[str, Any]:
    log_size = float(sum(f.size for f in s.log_files))
    return {
        "baseInstantTime": s.base_instant or (s.log_names[0].instant if s.log_names else ""),
        "deltaFilePaths": [_name(f.path) for f in s.log_files],
        "dataFilePath": _name(s.base_file.path) if s.base_file is not None else None,
        "fileId": s.file_id,
        "partitionPath": s.partition_path,
        "metrics": {
            "TOTAL_LOG_FILES": float(len(s.log_files)),
            "TOTAL_LOG_FILES_SIZE": log_size,
            "TOTAL_IO_READ_MB": 0.0,
            "TOTAL_IO_WRITE_MB": 0.0,
            "TOTAL_IO_MB": 0.0,
        },
        "bootstrapFilePath": None,
    }


def encode_compaction_plan(slices: list[FileSlice]) -> bytes:
    """A ``.compaction.requested`` file compacting ``slices`` (Avro container, plan version 2)."""
    record = {
        "operations": [_operation(s) for s in slices],
        "extraMetadata": {},
        "version": 2,
        "strategy": None,
        "preserveHoodieMetadata": False,
        "missingSchedulePartitions": [],
    }
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(COMPACTION_PLAN), [record], codec="null")
    return out.getvalue()


def compact(storage: Storage, state: HudiState) -> str | None:
    """Compact every file slice of ``state`` that has log files; returns the instant, or None
    when there is nothing to compact (a CoW table, or no log files).

    Raises:
        UnsupportedFeatureError: the table is not writable by lakecore.
        CommitConflictError: a concurrent write changed one of the slices (the compaction is
            rolled back).
    """
    config = state.config
    ensure_writable(config)
    ensure_index_partitions_writable(storage, config, state.table_schema)
    if config.table_type != "MERGE_ON_READ":
        return None
    targets = [i for i, s in enumerate(state.slices) if s.log_files]
    if not targets:
        return None
    rollback_failed_writes(storage, config)
    layout = layout_for(config, state.table_schema)
    rows = SliceRows(storage, state)
    plan = encode_compaction_plan([state.slices[i] for i in targets])
    ts = start_instant(storage, config, COMPACTION, plan)
    try:
        with heartbeat.kept_alive(storage, config, ts):  # see HudiWriter._write_files
            write_inflight(storage, config, COMPACTION, ts)
            stats = [_compact_slice(storage, rows, i, n, layout, ts) for n, i in enumerate(targets)]
    except BaseException:
        instant = make_instant(ts, COMPACTION, INFLIGHT, config.timeline_layout_version)
        try:
            rollback_instant(storage, config, instant)
        except Exception as exc:  # the compaction's own error is reported
            log.warning("could not roll back compaction %s: %s", ts, exc)
        raise
    meta = CommitMetadata(
        partition_to_write_stats=stats_by_partition(stats),
        operation_type="COMPACT",
        extra_metadata={"schema": layout.data_avro_json()},
        compacted=True,
    )
    groups = frozenset((state.slices[i].partition_path, state.slices[i].file_id) for i in targets)
    files = tuple(s.path for s in stats if s.path)
    planned = PlannedInstant(ts, COMPACTION, meta, files, groups)
    return commit_planned(storage, state, [planned])


def _compact_slice(
    storage: Storage, rows: SliceRows, index: int, n: int, layout: WriteLayout, instant: str
) -> WriteStat:
    s = rows.slices[index]
    name = base_file_name(
        s.file_id, write_token(n, int(instant[-9:]), 0), instant, base_file_extension(layout.config)
    )
    path = join_path(s.partition_path, name)
    records = carried_over(rows.records(index), name, layout)
    size = write_base_file(storage, path, records, meta_keys=not layout.virtual_keys)
    log_size = sum(f.size for f in s.log_files)
    return WriteStat(
        file_id=s.file_id,
        path=path,
        partition_path=s.partition_path,
        prev_commit=s.base_instant or None,
        num_writes=records.num_rows,
        total_write_bytes=size,
        file_size_in_bytes=size,
        total_log_files_compacted=len(s.log_files),
        total_log_size_compacted=log_size,
        total_log_blocks=len(s.log_files),
        prev_base_file=_name(s.base_file.path) if s.base_file is not None else None,
    )
