"""Turning a ``ChangeSet`` into files of one instant, and the write stats that describe them.

Writing happens in two steps so that a crash can always be undone: ``plan_jobs`` names every
file first (the names go into the instant's inflight metadata, which a rollback reads), then
``run_job`` writes each file. Per table type:

* new rows -> new file groups (base files) of a partition, as many as the records per file
  group allow (``sizing``), for CoW and MoR alike;
* CoW changes to a file group -> a new base file of the same group: its live records minus
  the changed keys, plus the new rows;
* MoR changes to a file group -> a new log file with an Avro data block (the new rows) and/or
  a delete block (the removed keys). Table version 8 names it after the delta commit
  (``.<fileId>_<instant>.log.1_<token>``); version 6 after the slice's base instant, with the
  next free log version.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import CommitConflictError
from lakecore.storage import Storage
from lakecore_hudi.keys import RECORD_KEY
from lakecore_hudi.names import (
    base_file_name,
    log_file_name,
    new_file_id,
    parse_log_file_name,
    write_token,
)
from lakecore_hudi.timeline.commit_metadata import WriteStat
from lakecore_hudi.view import FileSlice, split_path
from lakecore_hudi.write.changes import ChangeSet, SliceRows
from lakecore_hudi.write.files_out import (
    carried_over,
    join_path,
    log_content,
    new_records,
    write_base_file,
    write_partition_metadata,
)
from lakecore_hudi.write.lance_base import base_file_extension
from lakecore_hudi.write.layout import WriteLayout
from lakecore_hudi.write.rows_in import KEY, PARTITION
from lakecore_hudi.write.sizing import split


@dataclass(frozen=True, slots=True)
class FileJob:
    """One file to write: a new group's base file, a CoW rewrite, or a MoR log file.

    ``slice_index`` names the existing slice changed (None for a new group); ``rows`` are keyed
    rows to write as new records; ``deletes`` the keys removed (``RECORD_KEY``,
    ``PARTITION_PATH``).
    """

    kind: str  # "insert" | "rewrite" | "log"
    partition: str
    file_id: str
    name: str
    index: int
    slice_index: int | None = None
    rows: pa.Table | None = None
    deletes: pa.Table | None = None

    @property
    def path(self) -> str:
        """The file's table-relative path."""
        return join_path(self.partition, self.name)


def _token(index: int, instant: str) -> str:
    # Spark's (partition, stage, attempt); the stage number only has to keep names of
    # concurrent writers apart, so it is taken from the instant.
    return write_token(index, int(instant[-9:]), 0)


def plan_jobs(
    storage: Storage,
    changes: ChangeSet,
    slices: tuple[FileSlice, ...],
    layout: WriteLayout,
    instant: str,
    per_file: int | None = None,
) -> list[FileJob]:
    """Name every file ``changes`` needs (nothing is written); a partition's inserts go to
    new file groups of at most ``per_file`` records each (``sizing``; one group if None)."""
    jobs: list[FileJob] = []
    listings: dict[str, list[str]] = {}
    ext = base_file_extension(layout.config)
    for i in sorted(changes.touched()):
        s = slices[i]
        rows = changes.updates.get(i)
        deletes = changes.deletes.get(i)
        token = _token(len(jobs), instant)
        if layout.is_mor:
            name = _log_name(storage, s, layout, instant, token, listings)
            jobs.append(
                FileJob("log", s.partition_path, s.file_id, name, len(jobs), i, rows, deletes)
            )
        else:
            name = base_file_name(s.file_id, token, instant, ext)
            jobs.append(
                FileJob("rewrite", s.partition_path, s.file_id, name, len(jobs), i, rows, deletes)
            )
    if changes.inserts:
        inserts = pa.concat_tables(changes.inserts)
        for partition in sorted(pc.unique(inserts.column(PARTITION)).to_pylist()):
            part = inserts.filter(pc.equal(inserts.column(PARTITION), partition))
            for group in split(part, per_file or max(1, part.num_rows)):
                file_id = new_file_id()
                name = base_file_name(file_id, _token(len(jobs), instant), instant, ext)
                jobs.append(FileJob("insert", partition, file_id, name, len(jobs), None, group))
    return jobs


def _log_name(
    storage: Storage,
    s: FileSlice,
    layout: WriteLayout,
    instant: str,
    token: str,
    listings: dict[str, list[str]],
) -> str:
    if layout.table_version >= 8:
        return log_file_name(s.file_id, instant, 1, token)
    # Version 6 names the slice's base instant (a log-only slice: its first log's instant) and
    # takes the next version: listed, so failed and concurrent writers' logs count too.
    base = s.base_instant or (s.log_names[0].instant if s.log_names else instant)
    if s.partition_path not in listings:
        found = storage.list_dir(s.partition_path)
        listings[s.partition_path] = [split_path(info.path)[1] for info in found]
    versions = [
        log.version
        for name in listings[s.partition_path]
        if (log := parse_log_file_name(name)) is not None
        and log.file_id == s.file_id
        and log.instant == base
    ]
    return log_file_name(s.file_id, base, max(versions, default=0) + 1, token)


def planned_stat(
    job: FileJob, slices: tuple[FileSlice, ...], layout: WriteLayout, instant: str
) -> WriteStat:
    """The stat of ``job`` before it runs (for the inflight file): names, no sizes."""
    s = slices[job.slice_index] if job.slice_index is not None else None
    prev = (
        None
        if s is None
        else (instant if job.kind == "log" and layout.table_version >= 8 else s.base_instant)
    )
    rows = job.rows.num_rows if job.rows is not None else 0
    return WriteStat(
        file_id=job.file_id,
        path=job.path,
        partition_path=job.partition,
        prev_commit=prev or None,
        num_inserts=rows if job.kind == "insert" else 0,
        num_update_writes=rows if job.kind != "insert" else 0,
    )


def run_job(
    storage: Storage, rows: SliceRows, job: FileJob, layout: WriteLayout, instant: str
) -> WriteStat:
    """Write ``job``'s file; return its write stat."""
    stat = planned_stat(job, rows.slices, layout, instant)
    if job.kind == "insert":
        assert job.rows is not None
        write_partition_metadata(storage, job.partition, instant)
        records = _new(job.rows, job, layout, instant, job.name)
        size = write_base_file(storage, job.path, records, meta_keys=not layout.virtual_keys)
        return _with(stat, num_writes=records.num_rows, num_inserts=records.num_rows, size=size)
    if job.kind == "rewrite":
        return _rewrite(storage, rows, job, layout, instant, stat)
    return _append_log(storage, rows, job, layout, instant, stat)


def _new(
    keyed: pa.Table, job: FileJob, layout: WriteLayout, instant: str, file_name: str
) -> pa.Table:
    log = job.kind == "log"
    return new_records(
        keyed, keyed.column(KEY), job.partition, instant, job.index, file_name, layout, log
    )


def _rewrite(
    storage: Storage,
    rows: SliceRows,
    job: FileJob,
    layout: WriteLayout,
    instant: str,
    stat: WriteStat,
) -> WriteStat:
    assert job.slice_index is not None
    s = rows.slices[job.slice_index]
    old = rows.records(job.slice_index)
    removed = _changed_keys(job)
    hit = pc.fill_null(pc.is_in(old.column(RECORD_KEY), value_set=removed), False)
    kept = carried_over(old.filter(pc.invert(hit)), job.name, layout)
    parts = [kept]
    updated = 0
    if job.rows is not None and job.rows.num_rows:
        parts.append(_new(job.rows, job, layout, instant, job.name))
        updated = job.rows.num_rows
    records = pa.concat_tables(parts)
    size = write_base_file(storage, job.path, records, meta_keys=not layout.virtual_keys)
    deleted = int(pc.sum(hit.cast(pa.int64())).as_py() or 0) - updated
    return _with(
        stat,
        num_writes=records.num_rows,
        num_update_writes=updated,
        num_deletes=max(deleted, 0),
        size=size,
        prev_base_file=_name(s.base_file.path) if s.base_file is not None else None,
    )


def _changed_keys(job: FileJob) -> pa.Array:
    keys = []
    if job.rows is not None:
        keys.append(job.rows.column(KEY).combine_chunks().cast(pa.string()))
    if job.deletes is not None:
        keys.append(job.deletes.column(RECORD_KEY).combine_chunks().cast(pa.string()))
    return pa.concat_arrays(keys) if keys else pa.array([], pa.string())


def _append_log(
    storage: Storage,
    rows: SliceRows,
    job: FileJob,
    layout: WriteLayout,
    instant: str,
    stat: WriteStat,
) -> WriteStat:
    assert job.slice_index is not None
    s = rows.slices[job.slice_index]
    records = None
    if job.rows is not None and job.rows.num_rows:
        # Log records name their file group, not a file (as Hudi's append handle does).
        records = _new(job.rows, job, layout, instant, job.file_id)
    data = log_content(records, job.deletes, instant, layout)
    try:
        storage.put_if_absent(job.path, data)
    except FileExistsError:
        # Table version 6 names a log file by its slice and the next free version: a
        # concurrent writer to the same file group took that name first.
        raise CommitConflictError(
            f"{job.path} was written by a concurrent writer to file group {job.file_id}; "
            f"instant {instant} is rolled back, run the operation again"
        ) from None
    log = parse_log_file_name(job.name)
    updated = records.num_rows if records is not None else 0
    deleted = job.deletes.num_rows if job.deletes is not None else 0
    return _with(
        stat,
        num_writes=updated,
        num_update_writes=updated,
        num_deletes=deleted,
        size=len(data),
        # Version 8 leaves the base file out (log files name their delta commit), 6 names it.
        base_file=""
        if layout.table_version >= 8 or s.base_file is None
        else _name(s.base_file.path),
        log_files=(job.name,),
        log_version=log.version if log is not None else 1,
        log_offset=0,
    )


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _with(stat: WriteStat, *, size: int, **changes: object) -> WriteStat:
    return replace(stat, total_write_bytes=size, file_size_in_bytes=size, **changes)  # type: ignore[arg-type]
