"""What one Hudi write instant did (``WriteMetrics``), from the write stats its commit
metadata records (``HoodieWriteStat``: ``numInserts``, ``numUpdateWrites``, ``numDeletes``,
``numWrites``, ``fileSizeInBytes`` per file written) and the file slices it supersedes.

Files written (base files and log files) are added; the files of the slices a copy-on-write
rewrite or a replacecommit supersedes (base file and log files) are removed; a merge-on-read
log file leaves its slice's files live. Records a rewrite carries over unchanged are copied.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from lakecore.model.metrics import WriteMetrics
from lakecore.storage import FileInfo
from lakecore_hudi.timeline.commit_metadata import WriteStat
from lakecore_hudi.view import FileSlice


def instant_metrics(
    stats: Sequence[WriteStat],
    slices: Sequence[FileSlice],
    gone: Collection[int],
    inserted: int | None = None,
    live_records: Callable[[Collection[int]], int] | None = None,
) -> WriteMetrics:
    """The metrics of an instant writing ``stats`` and superseding the slices ``gone``
    (indices into ``slices``).

    ``inserted`` (a replacecommit): how many of the new records are new rows; the others
    were carried over from the replaced slices (copied), and the replaced slices' other live
    records (``live_records(gone)``) are deleted.
    """
    files = [f for i in sorted(gone) for f in files_of(slices[i])]
    written = [s for s in stats if s.path]
    metrics = WriteMetrics(
        files_added=len(written),
        files_removed=len(files),
        rows_inserted=sum(s.num_inserts for s in stats),
        rows_updated=sum(s.num_update_writes for s in stats),
        rows_deleted=sum(s.num_deletes for s in stats),
        rows_copied=sum(carried(s) for s in stats),
        bytes_added=sum(s.file_size_in_bytes for s in written),
        bytes_removed=sum(f.size for f in files),
    )
    if inserted is None or live_records is None:
        return metrics
    copied = metrics.rows_inserted - inserted
    deleted = live_records(gone) - copied
    return metrics.with_rows(inserted=inserted, copied=copied, deleted=deleted)


def carried(stat: WriteStat) -> int:
    """Records a write carried over unchanged (a copy-on-write rewrite's other records)."""
    return max(stat.num_writes - stat.num_inserts - stat.num_update_writes, 0)


def files_of(s: FileSlice) -> list[FileInfo]:
    """The data files of a slice (its base file, then its log files)."""
    return ([s.base_file] if s.base_file is not None else []) + list(s.log_files)
