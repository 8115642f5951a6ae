"""The file-system view: which base and log files make up each file group's latest file slice.

A file group is (partition path, file id). Its file slices are keyed by base instant; the
snapshot reads only the latest *visible* slice of each group that is not replaced. Visibility
comes from the timeline (``Visible``): a base file counts only if the instant that wrote it is
completed and at or before the snapshot's instant (files of inflight, failed or rolled-back
writes stay invisible).

Log files join slices differently per table version:

- table version 6: a log file names its slice's base instant. A log written against a
  compaction that is not visible yet (pending, or after the snapshot) merges into the
  previous slice, like Hudi's pending-compaction view does. A log first written by a write
  after the snapshot (``Visible.log_writers``) is not part of it.
- table version 8+: a log file names the delta commit that wrote it, and joins the slice with
  the greatest base instant *before that commit's completion time* (Hudi 1.x completion-time
  file slicing), so a delta commit that completed after a compaction was scheduled lands on
  the compacted slice.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from lakecore.storage import FileInfo
from lakecore_hudi.names import (
    BaseFile,
    LogFile,
    log_file_sort_key,
    parse_base_file_name,
    parse_log_file_name,
)

META_DIR = ".hoodie"


@dataclass(frozen=True, slots=True)
class Visible:
    """What the snapshot's timeline makes visible.

    ``instants``: completed write instants (commit, deltacommit, replacecommit, compaction)
    at or before the snapshot instant. ``completion``: instant -> completion time (table
    version 8+; may be empty). ``replaced``: (partition path, file id) of file groups that
    visible replacecommits replaced.
    """

    instants: frozenset[str]
    completion: Mapping[str, str] = field(default_factory=dict)
    replaced: frozenset[tuple[str, str]] = frozenset()
    archived_before: str = ""
    log_writers: Mapping[str, str] = field(default_factory=dict)
    """Table version 6: log file path -> the first completed write that wrote it (from
    commit metadata). A v6 log's name carries its slice's base instant, not its writer, so
    this is how a state before that write leaves the file out (its blocks would be filtered
    on read, but the file index would list a file the version does not have)."""

    def includes(self, timestamp: str) -> bool:
        """Whether files/blocks written by ``timestamp`` are visible.

        Instants older than the first one on the active timeline were archived; Hudi only
        archives completed instants, so those count as committed (as Hudi's readers do).
        """
        return timestamp in self.instants or timestamp < self.archived_before


@dataclass(frozen=True, slots=True)
class SliceFile:
    """A listed data file: its path relative to the table root plus the parsed name.

    ``partition``: its partition path when that is not the path's directory (an external
    file in a sub-directory of its partition); None derives it from the path.
    """

    info: FileInfo
    name: BaseFile | LogFile
    partition: str | None = None

    @property
    def partition_path(self) -> str:
        """The partition path of the file's file group."""
        return split_path(self.info.path)[0] if self.partition is None else self.partition


@dataclass(frozen=True, slots=True)
class FileSlice:
    """The latest visible slice of one file group: a base file and/or log files (in order)."""

    partition_path: str
    file_id: str
    base_instant: str
    base_file: FileInfo | None
    log_files: tuple[FileInfo, ...]
    log_names: tuple[LogFile, ...]

    @property
    def file(self) -> FileInfo:
        """The slice's representative file: its base file, else its first log file."""
        return self.base_file if self.base_file is not None else self.log_files[0]

    @property
    def path(self) -> str:
        """The path of ``file``."""
        return self.file.path


def split_path(path: str) -> tuple[str, str]:
    """Return (partition path, file name) of a path relative to the table root."""
    head, _, name = path.rpartition("/")
    return head, name


def data_files(listing: Iterable[FileInfo]) -> list[SliceFile]:
    """Keep the listed Hudi base and log files outside ``.hoodie`` (nothing else is data)."""
    out: list[SliceFile] = []
    for info in listing:
        if info.path.startswith(META_DIR + "/") or f"/{META_DIR}/" in info.path:
            continue
        _, name = split_path(info.path)
        parsed: BaseFile | LogFile | None = parse_log_file_name(name)
        if parsed is None:
            parsed = parse_base_file_name(name)
        if parsed is not None:
            out.append(SliceFile(info, parsed))
    return out


def latest_slices(
    files: Iterable[SliceFile], visible: Visible, completion_slicing: bool
) -> list[FileSlice]:
    """Return the latest visible file slice of every file group, sorted by path.

    ``completion_slicing`` selects the table version 8+ rule for assigning log files.
    """
    bases: dict[tuple[str, str], list[SliceFile]] = defaultdict(list)
    logs: dict[tuple[str, str], list[SliceFile]] = defaultdict(list)
    for f in files:
        group = (f.partition_path, f.name.file_id)
        if group in visible.replaced:
            continue
        if isinstance(f.name, LogFile):
            if not f.name.is_cdc:
                logs[group].append(f)
        elif visible.includes(f.name.instant):
            bases[group].append(f)
    completion = completion_slicing
    slices: list[FileSlice] = []
    for group in set(bases) | set(logs):
        found = _slice(group, bases.get(group, []), logs.get(group, []), visible, completion)
        if found is not None:
            slices.append(found)
    slices.sort(key=lambda s: s.path)
    return slices


def group_slice(
    group: tuple[str, str], files: Iterable[SliceFile], visible: Visible, completion_slicing: bool
) -> FileSlice | None:
    """The latest visible slice of one file group from its listed ``files`` (None: the group
    has none, or is replaced), as ``latest_slices`` builds it."""
    if group in visible.replaced:
        return None
    bases: list[SliceFile] = []
    logs: list[SliceFile] = []
    for f in files:
        if isinstance(f.name, LogFile):
            if not f.name.is_cdc:
                logs.append(f)
        elif visible.includes(f.name.instant):
            bases.append(f)
    if not bases and not logs:
        return None
    return _slice(group, bases, logs, visible, completion_slicing)


def _slice(
    group: tuple[str, str],
    bases: list[SliceFile],
    logs: list[SliceFile],
    visible: Visible,
    completion_slicing: bool,
) -> FileSlice | None:
    base = max(bases, key=lambda f: f.name.instant) if bases else None
    base_instant = base.name.instant if base is not None else ""
    kept = [
        f
        for f in logs
        if in_latest_slice(f.name, base_instant, visible, completion_slicing)
        and written_visibly(f, visible)
    ]
    if base is None and not any(visible.includes(f.name.instant) for f in kept):
        # No slice (table version 6: a log-only slice is keyed by the write that created the
        # file group, which must be visible; logs of a pending compaction alone are not).
        return None
    kept.sort(key=lambda f: _log_order(f.name, visible, completion_slicing))
    return FileSlice(
        partition_path=group[0],
        file_id=group[1],
        base_instant=base_instant,
        base_file=base.info if base is not None else None,
        log_files=tuple(f.info for f in kept),
        log_names=tuple(f.name for f in kept if isinstance(f.name, LogFile)),
    )


def in_latest_slice(
    name: BaseFile | LogFile, base_instant: str, visible: Visible, completion_slicing: bool
) -> bool:
    """Whether log file ``name`` belongs to the file group's slice based at ``base_instant``
    (its latest visible base instant, "" for none)."""
    if completion_slicing:
        if not visible.includes(name.instant):
            return False  # the delta commit that wrote it is not visible
        completed = visible.completion.get(name.instant, name.instant)
        return completed > base_instant
    # Table version 6: the name carries the slice's base instant. Logs on an older base were
    # compacted; logs on a newer, invisible base (pending compaction) merge into this slice.
    # Blocks of invisible delta commits are filtered when the log is read.
    return name.instant >= base_instant


def written_visibly(file: SliceFile, visible: Visible) -> bool:
    """Whether the write that first wrote log ``file`` is visible (true when unknown)."""
    writer = visible.log_writers.get(file.info.path)
    return writer is None or visible.includes(writer)


def _log_order(
    name: BaseFile | LogFile, visible: Visible, completion_slicing: bool
) -> tuple[str, tuple[str, int, str, bool]]:
    assert isinstance(name, LogFile)
    if completion_slicing:
        return visible.completion.get(name.instant, name.instant), log_file_sort_key(name)
    return "", log_file_sort_key(name)
