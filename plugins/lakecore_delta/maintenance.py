"""Table maintenance for Delta: checkpoint, vacuum, restore, optimize (compaction)."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.arguments import check_number
from lakecore.errors import (
    CorruptTableError,
    InvalidArgumentError,
    LakecoreError,
    UnsupportedFeatureError,
)
from lakecore.model import files as fi
from lakecore.model.actions import (
    Action,
    AddFiles,
    CommitInfo,
    RemoveFiles,
    SetProperties,
    SetSchema,
)
from lakecore.planning.read import read_files
from lakecore.snapshot import Snapshot
from lakecore.storage import Storage
from lakecore.storage.paths import contained_path, is_absolute
from lakecore_delta import history as delta_history
from lakecore_delta.deletion_vectors import DeletionVectorDescriptor
from lakecore_delta.log.commits import parse_actions, read_all
from lakecore_delta.log.files import LOG_DIR, LogFileKind
from lakecore_delta.log.segment import list_log
from lakecore_delta.paths import decode_paths
from lakecore_delta.source import DeltaSnapshotSource
from lakecore_delta.state import DeltaState, load_state
from lakecore_delta.write.checkpoint_out import write_checkpoint
from lakecore_delta.write.create import MAX_COLUMN_ID
from lakecore_delta.write.data_files import write_data_files
from lakecore_delta.write.partition_out import partition_text_struct
from lakecore_delta.write.stats_out import index_bounds, string_prefix_length
from lakecore_delta.write.writer import DeltaWriter, state_of

DEFAULT_RETENTION_HOURS = 168.0


class RetentionError(InvalidArgumentError):
    """Raised when vacuum is asked for a retention shorter than the table's safety limit."""


def checkpoint(storage: Storage, snapshot: Snapshot) -> int:
    """Write a checkpoint of ``snapshot``'s version; returns that version."""
    state = state_of(snapshot)
    write_checkpoint(storage, state)
    return state.version


def _referenced(storage: Storage, snapshot: Snapshot, cutoff_ms: int) -> set[str]:
    """Files any version newer than the cutoff (or the latest) still needs, DV files too."""
    try:
        oldest = delta_history.version_at(storage, cutoff_ms)
    except LakecoreError:
        oldest = 0
    versions = [int(oldest), int(snapshot.version)]
    keep: set[str] = set()
    state = load_state(storage, versions[0]) if versions[0] != versions[1] else state_of(snapshot)
    keep.update(_state_files(state.adds))
    commits = [
        f
        for f in list_log(storage, versions[0] + 1)
        if f.kind is LogFileKind.COMMIT and versions[0] < f.version <= versions[1]
    ]
    for f, chunk in zip(commits, read_all(storage, commits), strict=True):
        for action in parse_actions(chunk, f):
            for kind in ("add", "remove", "cdc"):
                body = action.get(kind)
                if isinstance(body, dict) and body.get("path"):
                    keep.add(_decode(body["path"], storage, f.path))
                    dv = body.get("deletionVector")
                    if dv:
                        keep.update(_dv_paths([dv]))
    return keep


def _decode(path: str, storage: Storage, source: str) -> str:
    return str(decode_paths(pa.array([path], pa.string()), storage.root, source)[0].as_py())


def _state_files(adds: pa.Table) -> set[str]:
    out = set(adds.column("path").to_pylist())
    dvs = adds.column("deletionVector").to_pylist()
    out.update(_dv_paths([d for d in dvs if d]))
    return out


def _dv_paths(dvs: list[dict[str, object]]) -> set[str]:
    out = set()
    for dv in dvs:
        if dv.get("storageType") == "u":
            descriptor = DeletionVectorDescriptor("u", str(dv["pathOrInlineDv"]), None, 0, 0)
            if descriptor.relative_path:
                out.add(descriptor.relative_path)
    return out


def vacuum(
    storage: Storage,
    snapshot: Snapshot,
    retention_hours: float = DEFAULT_RETENTION_HOURS,
    dry_run: bool = True,
    enforce_retention: bool = True,
) -> list[str]:
    """Delete files no version within the retention period needs; returns them (sorted).

    Only files older than the retention are candidates; ``_delta_log`` and other ``_``/``.``
    directories are never touched. With ``dry_run`` nothing is deleted. Candidates come from
    listing the table root, never from paths in the log, so nothing outside the root (absolute
    references, ``..`` escapes, targets of symlinked directories) is ever deleted.

    Raises:
        CorruptTableError: a log path escapes the table root (the log is damaged or crafted).
        InvalidArgumentError: the retention is negative or not a finite number (before any
            work).
    """
    check_number("retention_hours", retention_hours, minimum=0)
    configured = state_of(snapshot).configuration.get("delta.deletedFileRetentionDuration")
    if enforce_retention and retention_hours < DEFAULT_RETENTION_HOURS:
        raise RetentionError(
            f"retention of {retention_hours} h is below the safe {DEFAULT_RETENTION_HOURS} h "
            f"(table setting: {configured or 'default'}); concurrent readers and time travel may "
            "still need those files. Pass enforce_retention=False to override."
        )
    cutoff = int(time.time() * 1000 - retention_hours * 3_600_000)
    keep = _referenced(storage, snapshot, cutoff)
    doomed = [
        f.path
        for f in storage.list_all()
        if _inside(f.path, storage)
        and not _hidden(f.path)
        and f.path not in keep
        and f.modification_time < cutoff
    ]
    if not dry_run:
        for path in doomed:
            storage.delete(path)
    return sorted(doomed)


def _inside(path: str, storage: Storage) -> bool:
    """Whether a listed ``path`` is a plain table-relative path (the only kind vacuum deletes)."""
    if is_absolute(path):
        return False
    try:
        return contained_path(path, storage.root, source=f"listing of {storage.root}") == path
    except CorruptTableError:
        return False


def _hidden(path: str) -> bool:
    return any(part.startswith(("_", ".")) for part in path.split("/")[:-1]) or path.startswith(
        (LOG_DIR, ".", "_")
    )


def restore_actions(storage: Storage, snapshot: Snapshot, version: int) -> list[Action]:
    """Actions that make the table's files, schema and properties those of ``version``.

    As Delta Spark's RESTORE and delta-rs' restore, the restored version's metadata comes back
    with its files: a column added since goes, a renamed one takes its old name, constraints
    and properties set since are unset (the protocol only ever gains features).

    Raises ``CorruptTableError`` if a file of that version is gone (vacuumed), and
    ``UnsupportedFeatureError`` when the version has other partition columns (a
    repartitioning by another engine; lakecore's writes never change them).
    """
    target = load_state(storage, version)
    current = state_of(snapshot)
    if target.partition_columns != current.partition_columns:
        raise UnsupportedFeatureError(
            "restore-repartitioned",
            f"version {version} is partitioned by {list(target.partition_columns)}, the "
            f"table now by {list(current.partition_columns)}: lakecore cannot restore across "
            "a change of partition columns",
        )
    old = DeltaSnapshotSource(storage, target).files()
    current_files = snapshot.files()
    key = _keys
    add = old.filter(pc.invert(pc.is_in(key(old), value_set=key(current_files))))
    remove = current_files.filter(pc.invert(pc.is_in(key(current_files), value_set=key(old))))
    missing = [p for p in add.column(fi.PATH).to_pylist() if not storage.exists(p)]
    if missing:
        raise CorruptTableError(
            f"cannot restore version {version}: {len(missing)} of its files were vacuumed, "
            f"e.g. {missing[0]}"
        )
    # The files come back with the typed stats of the target version's index (no Delta JSON
    # carried through), keyed by its names, which the restored schema has again; the log
    # renders them, with maxima made safe to re-render.
    add = index_bounds(add, string_prefix_length(target.configuration))
    # Not ``owned``: other versions reference these files, an aborted restore keeps them.
    return [*_restored_metadata(target, current), RemoveFiles(remove), AddFiles(add)]


def _restored_metadata(target: DeltaState, current: DeltaState) -> list[Action]:
    """The schema and property changes that give the table ``target``'s metadata again."""
    out: list[Action] = []
    if target.metadata.get("schemaString") != current.metadata.get("schemaString"):
        out.append(SetSchema(target.schema))
    was, now = dict(target.configuration), current.configuration
    if MAX_COLUMN_ID in now:
        # Column ids are never handed out twice: files written since hold the newer ones.
        was[MAX_COLUMN_ID] = str(max(int(now[MAX_COLUMN_ID]), int(was.get(MAX_COLUMN_ID, 0))))
    changes: dict[str, str | None] = {k: v for k, v in was.items() if now.get(k) != v}
    changes.update({k: None for k in now if k not in was})
    if changes:
        out.append(SetProperties(changes))
    return out


def _keys(files: pa.Table) -> pa.Array:
    dv = files.column(fi.DELETION).combine_chunks()
    # The opaque descriptor names the deletion vector (Delta: its path or inline bitmap).
    dv_id = pc.fill_null(pc.cast(pc.struct_field(dv, fi.DESCRIPTOR), pa.string()), "")
    paths = files.column(fi.PATH).combine_chunks()
    return pc.binary_join_element_wise(paths, dv_id, "\x1f")


@dataclass(frozen=True, slots=True)
class OptimizePlan:
    """Bins of files to compact, per partition."""

    bins: list[pa.Table]


def plan_optimize(files: pa.Table, target_size: int) -> OptimizePlan:
    """Group small files (and files with deletion vectors) per partition into bins of about
    ``target_size`` bytes; a bin of one file without deletes is left alone."""
    # Candidates by Arrow compute: the Python below runs over them only, not every file.
    wanted = pc.or_(
        pc.fill_null(pc.less(files.column(fi.SIZE), target_size), False),
        pc.is_valid(files.column(fi.DELETION)),
    )
    candidates = pc.indices_nonzero(wanted.combine_chunks())
    sizes = files.column(fi.SIZE).take(candidates).to_pylist()
    rows = candidates.to_pylist()
    # Keyed by the partition values' log text: Python cannot hold every value (year 0).
    parts = partition_text_struct(files.column(fi.PARTITION).take(candidates)).to_pylist()
    by_partition: dict[str, list[int]] = {}
    for k, part in enumerate(parts):
        by_partition.setdefault(repr(sorted((part or {}).items())), []).append(k)
    bins: list[pa.Table] = []
    for ks in by_partition.values():
        current: list[int] = []
        size = 0
        for k in sorted(ks, key=lambda j: sizes[j]):
            if current and size + sizes[k] > target_size:
                bins.append(files.take(pa.array(current, pa.int64())))
                current, size = [], 0
            current.append(rows[k])
            size += sizes[k]
        if current:
            bins.append(files.take(pa.array(current, pa.int64())))
    keep = [b for b in bins if b.num_rows > 1 or b.column(fi.DELETION).null_count < b.num_rows]
    return OptimizePlan(keep)


def optimize_actions(
    storage: Storage, snapshot: Snapshot, target_size: int
) -> tuple[list[Action], CommitInfo, int]:
    """Compaction actions (``dataChange=false``); returns them, the info and files removed.

    Raises ``InvalidArgumentError`` unless ``target_size`` is a positive integer (bytes).
    """
    check_number("target_file_size", target_size, minimum=1, integral=True)
    writer = DeltaWriter(storage, snapshot)
    context = snapshot.source.scan_context()
    plan = plan_optimize(snapshot.files(), target_size)
    actions: list[Action] = []
    removed = 0
    layout = replace(writer.layout(), target_file_size=target_size)
    for files in plan.bins:
        rows = pa.Table.from_batches(list(read_files(context, files)), schema=snapshot.schema)
        actions.append(RemoveFiles(files, data_change=False))
        if rows.num_rows:
            written = write_data_files(storage, layout, rows)
            actions.append(AddFiles(written, data_change=False, owned=True))
        removed += files.num_rows
    info = CommitInfo("OPTIMIZE", {"targetFileSize": str(target_size), "predicate": "[]"})
    return actions, info, removed
