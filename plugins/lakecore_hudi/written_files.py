"""Checking a snapshot's file listing against the files its visible writes made.

The file-system view is built from a directory listing, so a data file that is gone (deleted
by hand, lost in a copy, cleaned away under a time-travel query) would silently make the view
fall back to an older version of its file group or drop the group: stale or missing rows. The
write statistics of the visible commits name the files they made; the newest base file of each
live file group and the log files of its latest slice must be listed.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from lakecore.errors import (
    CorruptTableError,
    InvalidArgumentError,
    LakecoreError,
    VersionNotFoundError,
)
from lakecore.storage.paths import contained_path
from lakecore_hudi.listing import parse_external_name
from lakecore_hudi.mdt.files_records import EXTERNAL_SUFFIX
from lakecore_hudi.names import BaseFile, LogFile, parse_base_file_name, parse_log_file_name
from lakecore_hudi.timeline.commit_metadata import CommitMetadata
from lakecore_hudi.view import FileSlice, SliceFile, Visible, in_latest_slice, split_path

Group = tuple[str, str]


def check_written_files(
    written: Iterable[tuple[str, CommitMetadata]],
    files: Sequence[SliceFile],
    slices: Sequence[FileSlice],
    visible: Visible,
    completion_slicing: bool,
    latest: bool,
    root: str = "",
    listed_by_metadata: bool = True,
) -> None:
    """Raise when a file that the snapshot needs and a visible write made is not listed.

    ``written`` holds (instant, commit metadata) of the snapshot's visible writes, ``files``
    the listing, ``slices`` the view built from it; ``latest`` says whether the snapshot is
    the table's latest completed write; ``root`` the table root (for messages);
    ``listed_by_metadata`` whether ``files`` is the metadata table's ``files`` partition.

    Raises:
        CorruptTableError: a file is missing from the latest snapshot (deleted or lost);
            names the file and the instant that wrote it. Also for a written path that
            escapes the table root.
        InvalidArgumentError: a visible write adopted another format's files (listed
            only in the metadata table, as ``_hudiext`` entries) and ``files`` was listed
            from storage (``hoodie.metadata.enable=false``), where they are no Hudi files.
        VersionNotFoundError: time travel to an instant whose files were cleaned since (the
            file group has a newer base file, or is gone entirely).
    """
    listed = {f.info.path for f in files}
    newest_listed: dict[Group, str] = {}
    for f in files:
        if isinstance(f.name, BaseFile):
            group = (f.partition_path, f.name.file_id)
            newest_listed[group] = max(newest_listed.get(group, ""), f.name.instant)
    bases: dict[Group, tuple[str, str, str]] = {}  # newest base: (its instant, path, writer)
    logs: dict[str, str] = {}  # log path -> writing instant
    slice_base = {(s.partition_path, s.file_id): s.base_instant for s in slices}
    for instant, path, external in _written_paths(written, root):
        if external is not None and not listed_by_metadata:
            raise InvalidArgumentError(
                f"{root}: instant {instant} adopted files another format wrote "
                f"({external.info.path}); such files are listed only in the table's "
                "metadata table, not by their names in storage: read it with "
                "hoodie.metadata.enable=true"
            )
        base: BaseFile | None
        log: LogFile | None
        if external is not None:
            # Another format's file, listed as <name>_<commit>_hudiext: its path and file
            # group come from that entry (its own name may look like a Hudi base file's).
            path, base, log = external.info.path, _base(external), None
            group = (external.partition_path, external.name.file_id)
        else:
            base, log = parse_base_file_name(path), parse_log_file_name(path)
            name: BaseFile | LogFile | None = base or log
            group = (split_path(path)[0], name.file_id) if name is not None else ("", "")
        if (base or log) is None or group in visible.replaced:
            continue
        if base is not None and base.instant >= bases.get(group, ("",))[0]:
            bases[group] = (base.instant, path, instant)
        elif (
            log is not None
            and not log.is_cdc
            and in_latest_slice(log, slice_base.get(group, ""), visible, completion_slicing)
        ):
            logs[path] = instant
    snapshot = max(visible.instants, default="")
    missing = [(path, by, group) for group, (_, path, by) in sorted(bases.items())]
    missing += [(path, by, _group(path)) for path, by in sorted(logs.items())]
    for path, by, group in missing:
        if path in listed:
            continue
        if not latest and newest_listed.get(group, "~") > snapshot:
            raise VersionNotFoundError(
                f"data file {path} (written by instant {by}) was cleaned since a later write "
                f"replaced it; the Hudi table can no longer be read as of {snapshot}"
            )
        raise CorruptTableError(
            f"data file {path}, written by the completed instant {by}, is missing from the "
            "Hudi table (deleted or lost)"
        )


def log_writers(written: Iterable[tuple[str, CommitMetadata]], root: str = "") -> dict[str, str]:
    """Log file path -> the first of the writes ``written`` (ascending) that wrote it.

    Raises ``CorruptTableError`` for a write stat path that escapes ``root``.
    """
    out: dict[str, str] = {}
    for instant, path, external in _written_paths(written, root):
        if external is None and parse_log_file_name(path) is not None:
            out.setdefault(path, instant)
    return out


def all_written_listed(
    written: Iterable[tuple[str, CommitMetadata]],
    files: Sequence[SliceFile],
    root: str = "",
    listed_by_metadata: bool = True,
) -> bool:
    """Whether every data file the writes ``written`` made is in the listing ``files`` (and
    no write stat is damaged): then ``check_written_files`` raises for no snapshot of those
    writes over this listing, as it only raises for a written file that is not listed, a path
    escaping ``root`` or an adopted file listed from storage. One pass over many instants'
    writes (a change feed) replaces a check per instant; False means: check each one."""
    listed = {f.info.path for f in files}
    try:
        for _, path, external in _written_paths(written, root):
            if external is not None:
                if not listed_by_metadata or external.info.path not in listed:
                    return False
            elif path not in listed and (parse_base_file_name(path) or parse_log_file_name(path)):
                return False
    except LakecoreError:
        return False
    return True


def _written_paths(
    written: Iterable[tuple[str, CommitMetadata]], root: str
) -> Iterator[tuple[str, str, SliceFile | None]]:
    """(instant, path, external file or None) of each data file the writes ``written`` name.

    Raises ``CorruptTableError`` for a path that escapes ``root``: Hudi writes paths relative
    to the base path (some writers with a leading "/"); one that escapes it is damage, never
    a file to look for.
    """
    for instant, meta in written:
        for stat in meta.write_stats():
            if not stat.path or "://" in stat.path:
                continue
            # A leading "/" is read as relative to the root (as Hudi's Path(base, p) does);
            # "//host/..." names a host and must reach contained_path, which refuses it.
            relative = stat.path if stat.path.startswith("//") else stat.path.lstrip("/")
            path = contained_path(relative, root, source=f"commit metadata of instant {instant}")
            yield instant, path, _external(path)


def _external(path: str) -> SliceFile | None:
    """The external file a write stat's ``path`` names (``<partition>/<name>_<commit>
    [_fg%3D<dir>]_hudiext``), or None."""
    if not path.endswith(EXTERNAL_SUFFIX):
        return None
    return parse_external_name(*split_path(path), 0)


def _base(file: SliceFile) -> BaseFile:
    assert isinstance(file.name, BaseFile)
    return file.name


def _group(path: str) -> Group:
    name = parse_base_file_name(path) or parse_log_file_name(path)
    assert name is not None
    return split_path(path)[0], name.file_id
