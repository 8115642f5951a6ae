"""Log segments: which checkpoint and which commits make up a version of a Delta table."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lakecore.errors import CorruptTableError, TableNotFoundError, VersionNotFoundError
from lakecore.storage import Storage
from lakecore_delta.log.files import (
    LAST_CHECKPOINT,
    LOG_DIR,
    LogFile,
    LogFileKind,
    parse_log_file,
)

log = logging.getLogger(__name__)

_CHECKPOINT_KINDS = (
    LogFileKind.CHECKPOINT,
    LogFileKind.MULTIPART_CHECKPOINT,
    LogFileKind.V2_CHECKPOINT,
)


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A complete checkpoint: its version and its files (the parts, or the V2 top-level file)."""

    version: int
    files: tuple[LogFile, ...]

    @property
    def kind(self) -> LogFileKind:
        return self.files[0].kind


@dataclass(frozen=True, slots=True)
class LogSegment:
    """What to read to reconstruct ``version``: a checkpoint (or none) plus later log files.

    ``commits`` are the commit files after the checkpoint up to ``version``, ascending and
    contiguous. ``compactions`` may stand in for runs of those commits.
    """

    version: int
    checkpoint: Checkpoint | None
    commits: tuple[LogFile, ...]
    compactions: tuple[LogFile, ...] = ()
    tip: LogFile | None = None
    """The commit file of ``version`` itself, when listed (also when a checkpoint covers it)."""

    @property
    def last_commit(self) -> LogFile | None:
        return self.commits[-1] if self.commits else None

    def files_to_read(self) -> tuple[LogFile, ...]:
        """The commits to replay, with log compaction files standing in for runs of them.

        Greedy from the oldest commit: where a compaction starts, take the one reaching
        furthest (its actions are those commits' actions, already reconciled).
        """
        by_start: dict[int, LogFile] = {}
        for c in self.compactions:
            best = by_start.get(c.version)
            if best is None or (c.end_version or 0) > (best.end_version or 0):
                by_start[c.version] = c
        out: list[LogFile] = []
        i = 0
        while i < len(self.commits):
            version = self.commits[i].version
            compaction = by_start.get(version)
            if compaction is not None and compaction.end_version is not None:
                out.append(compaction)
                i += compaction.end_version - version + 1
            else:
                out.append(self.commits[i])
                i += 1
        return tuple(out)


def read_last_checkpoint_hint(storage: Storage) -> int | None:
    """Return the version named by ``_last_checkpoint``, or None if absent or unreadable.

    A torn or corrupt hint is only a hint: readers fall back to listing the whole log.
    """
    try:
        raw = storage.read(LAST_CHECKPOINT)
    except FileNotFoundError:
        return None
    try:
        version = json.loads(raw)["version"]
        return int(version) if int(version) >= 0 else None
    except (ValueError, KeyError, TypeError):
        log.info("ignoring unreadable %s", LAST_CHECKPOINT)
        return None


def list_log(storage: Storage, start_version: int = 0) -> list[LogFile]:
    """List the log files from ``start_version`` on, sorted by version then name."""
    out: list[LogFile] = []
    for info in storage.list_from(f"{LOG_DIR}/{start_version:020d}"):
        parsed = parse_log_file(info)
        if parsed is not None:
            out.append(parsed)
    return out


def complete_checkpoints(files: Iterable[LogFile]) -> list[Checkpoint]:
    """Return the complete checkpoints among ``files``, newest first.

    A multi-part checkpoint is complete when all its parts of one part count are present.
    For V2 checkpoints any one top-level file of a version is the checkpoint.
    """
    classic: dict[int, LogFile] = {}
    v2: dict[int, LogFile] = {}
    parts: dict[tuple[int, int], dict[int, LogFile]] = {}
    for f in files:
        if f.kind is LogFileKind.CHECKPOINT:
            classic[f.version] = f
        elif f.kind is LogFileKind.V2_CHECKPOINT:
            v2.setdefault(f.version, f)
        elif f.kind is LogFileKind.MULTIPART_CHECKPOINT:
            parts.setdefault((f.version, f.parts), {})[f.part] = f
    found: dict[int, Checkpoint] = {}
    for (version, count), got in parts.items():
        if len(got) == count and set(got) == set(range(1, count + 1)):
            found[version] = Checkpoint(version, tuple(got[i] for i in range(1, count + 1)))
    for version, f in classic.items():
        found[version] = Checkpoint(version, (f,))
    for version, f in v2.items():
        found[version] = Checkpoint(version, (f,))
    return [found[v] for v in sorted(found, reverse=True)]


def latest_version(files: Sequence[LogFile]) -> int | None:
    """Return the newest version the listed files reach (commit or checkpoint)."""
    versions = [f.version for f in files if f.kind is LogFileKind.COMMIT]
    versions += [c.version for c in complete_checkpoints(files)]
    return max(versions) if versions else None


def build_segment(
    files: Sequence[LogFile], version: int | None = None, skip_checkpoints: Iterable[int] = ()
) -> LogSegment:
    """Choose the checkpoint and commits that reconstruct ``version`` (latest by default).

    Raises ``TableNotFoundError`` when there is no log, ``VersionNotFoundError`` when
    ``version`` is beyond the log or can no longer be reconstructed, and ``CorruptTableError``
    when commits are missing between the checkpoint and ``version``.
    """
    newest = latest_version(files)
    if newest is None:
        raise TableNotFoundError("the _delta_log holds no commit or checkpoint")
    target = newest if version is None else version
    if target > newest or target < 0:
        raise VersionNotFoundError(f"version {target} does not exist; the latest is {newest}")
    skip = set(skip_checkpoints)
    checkpoint = next(
        (c for c in complete_checkpoints(files) if c.version <= target and c.version not in skip),
        None,
    )
    start = checkpoint.version + 1 if checkpoint else 0
    commits = {f.version: f for f in files if f.kind is LogFileKind.COMMIT}
    wanted = range(start, target + 1)
    missing = [v for v in wanted if v not in commits]
    if missing:
        unusable = sorted(
            c.version
            for c in complete_checkpoints(files)
            if c.version <= target and c.version in skip
        )
        return _missing_commits(files, checkpoint, target, missing, commits, unusable)
    compactions = tuple(
        f
        for f in files
        if f.kind is LogFileKind.COMPACTION
        and f.version >= start
        and f.end_version is not None
        and f.end_version <= target
    )
    return LogSegment(
        target, checkpoint, tuple(commits[v] for v in wanted), compactions, commits.get(target)
    )


def _missing_commits(
    files: Sequence[LogFile],
    checkpoint: Checkpoint | None,
    target: int,
    missing: list[int],
    commits: dict[int, LogFile],
    unusable: Sequence[int] = (),
) -> LogSegment:
    earliest = min(commits) if commits else None
    if unusable and (checkpoint is None or checkpoint.version < unusable[-1]):
        # The version was reachable through a checkpoint that turned out unreadable: the
        # table is damaged, not too old (VersionNotFoundError would send users the wrong way).
        raise CorruptTableError(
            f"{LOG_DIR}: version {target} needs checkpoint {unusable[-1]}, which is unreadable, "
            f"and commit file(s) for version(s) {_ranges(missing)} needed to replay without it "
            "are missing"
        )
    if checkpoint is None and (earliest is None or missing[-1] < earliest):
        raise VersionNotFoundError(
            f"version {target} cannot be reconstructed: no checkpoint at or before it and "
            f"the log's commits start at version {earliest}"
        )
    raise CorruptTableError(
        f"{LOG_DIR}: commit file(s) for version(s) {_ranges(missing)} are missing between "
        f"{'checkpoint ' + str(checkpoint.version) if checkpoint else 'version 0'} and "
        f"version {target}"
    )


def _ranges(values: list[int]) -> str:
    out: list[str] = []
    start = prev = values[0]
    for v in [*values[1:], -1]:
        if v == prev + 1:
            prev = v
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = v
    return ", ".join(out)
