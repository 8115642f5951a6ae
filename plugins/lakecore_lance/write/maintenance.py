"""Lance upkeep lakecore writes: ``restore`` (a new version with an older version's content),
``vacuum`` (cleanup of old versions and the files only they need) and ``optimize``
(compaction)."""

from __future__ import annotations

import posixpath
import time

import numpy as np
import pyarrow as pa

from lakecore.errors import InvalidArgumentError
from lakecore.model.actions import Action, CommitInfo, FormatPayload
from lakecore.snapshot import Snapshot
from lakecore.storage import Storage
from lakecore_lance.deletions import DELETIONS_DIR, deletion_path
from lakecore_lance.file_index import FRAGMENT_ID
from lakecore_lance.history import TRANSACTIONS_DIR, tags, timestamp_ms
from lakecore_lance.manifest import VERSIONS_DIR, list_manifests, read_manifest
from lakecore_lance.proto import table_pb2
from lakecore_lance.state import DATA_DIR, load_state
from lakecore_lance.write.changes import FORMAT, LanceChange
from lakecore_lance.write.files_out import write_fragments
from lakecore_lance.write.metrics import change_metrics, new_rows
from lakecore_lance.write.writable import ensure_writable, state_of
from lakecore_lance.write.writer import LanceWriter


def restore_actions(
    storage: Storage, snapshot: Snapshot, version: int
) -> tuple[list[Action], CommitInfo]:
    """The change committing ``version``'s manifest content (fragments, schema, config) as
    the version after ``snapshot``, with a Lance ``Restore`` transaction; no file is written.

    Raises ``VersionNotFoundError`` for a version the dataset lacks (cleaned up or never
    written) and ``UnsupportedFeatureError`` when the latest or the restored version is one
    lakecore does not write (writer flags, data storage versions; ``ensure_writable``).
    """
    ensure_writable(state_of(snapshot))
    target = load_state(storage, version)
    ensure_writable(target)
    raw = target.manifest.SerializeToString(deterministic=True)
    change = LanceChange("restore", restored=raw)
    metrics = change_metrics(storage, state_of(snapshot).manifest, change)
    params = {"version": str(version)}
    info = CommitInfo("RESTORE", params, read_whole_table=True, metrics=metrics)
    return [FormatPayload(FORMAT, change)], info


DEFAULT_RETENTION_HOURS = 168.0
"""Below this, ``vacuum`` refuses unless ``enforce_retention=False`` (pylance's cleanup keeps
unverified files 7 days too)."""
CLEANED_DIRS = (DATA_DIR + "/", DELETIONS_DIR + "/", TRANSACTIONS_DIR + "/")
"""Where vacuum deletes unreferenced files; ``_indices/``, ``_refs/`` and anything else are
never touched."""


def vacuum(
    storage: Storage,
    snapshot: Snapshot,
    retention_hours: float,
    dry_run: bool,
    enforce_retention: bool,
) -> list[str]:
    """Remove the versions older than the retention and the files only they needed (Lance's
    ``cleanup_old_versions``); returns the removed paths, sorted (only listed with
    ``dry_run``).

    Kept: the latest version, every version newer than ``snapshot``'s, every tagged version
    and every version committed within ``retention_hours``; and every file a kept version
    references. Data, deletion and transaction files nothing kept references are removed only
    when older than the retention (a write in progress has not committed them yet). Manifests
    are deleted before files, so a crash in between leaves only unreferenced files.

    Raises ``InvalidArgumentError`` for a retention below ``DEFAULT_RETENTION_HOURS`` unless
    ``enforce_retention`` is False.
    """
    if enforce_retention and retention_hours < DEFAULT_RETENTION_HOURS:
        raise InvalidArgumentError(
            f"retention of {retention_hours} h is below the safe {DEFAULT_RETENTION_HOURS} h; "
            "readers and time travel may still need those versions. Pass "
            "enforce_retention=False to override."
        )
    cutoff = int(time.time() * 1000 - retention_hours * 3_600_000)
    manifests = list_manifests(storage)
    tagged = set(tags(storage).values())
    latest = max(m.version for m in manifests)
    modified = {f.path: f.modification_time for f in storage.list_dir(VERSIONS_DIR)}
    referenced: set[str] = set()
    doomed: list[str] = []
    for file in manifests:
        loaded = read_manifest(storage, file)
        stamp = timestamp_ms(loaded)
        when = stamp if stamp is not None else modified.get(file.path, 0)
        keep = (
            file.version == latest
            or file.version > int(snapshot.version)
            or file.version in tagged
            or when >= cutoff
        )
        if not keep:
            doomed.append(file.path)
            continue
        referenced.update(_references(loaded.manifest))
    doomed.extend(
        f.path
        for f in storage.list_all()
        if f.path.startswith(CLEANED_DIRS)
        and f.path not in referenced
        and f.modification_time < cutoff
    )
    if not dry_run:
        for path in doomed:  # manifests first (see above)
            storage.delete(path)
    return sorted(doomed)


def _references(m: table_pb2.Manifest) -> set[str]:
    """The files ``m`` references, spelt as the listing spells them: a manifest may name a
    data file ``./x.lance`` or ``a/../x.lance``, which the reader resolves to ``data/x.lance``;
    compared unnormalised, vacuum would delete a file the kept version reads."""
    out: set[str] = set()
    for fragment in m.fragments:
        out.update(posixpath.normpath(f"{DATA_DIR}/{f.path}") for f in fragment.files)
        if fragment.HasField("deletion_file"):
            out.add(deletion_path(int(fragment.id), fragment.deletion_file))
    if m.transaction_file:
        out.add(posixpath.normpath(f"{TRANSACTIONS_DIR}/{m.transaction_file}"))
    return out


TARGET_ROWS = 1024 * 1024
"""Rows per compacted fragment by default (pylance's ``target_rows_per_fragment``)."""
MATERIALIZE_DELETIONS = 0.1
"""A fragment with more than this share of its rows deleted is rewritten (pylance's
``materialize_deletions_threshold``)."""


def optimize_actions(
    storage: Storage, snapshot: Snapshot, target_file_size: int | None
) -> tuple[list[Action], CommitInfo]:
    """Compaction (Lance's ``compact_files``, a ``Rewrite`` transaction; rows unchanged).

    Candidates are fragments smaller than the target or with more than
    ``MATERIALIZE_DELETIONS`` of their rows deleted; each run of adjacent candidates becomes
    one group whose live rows are rewritten as fragments of the target size (a run of one
    fragment without deletions is left alone). The target is ``TARGET_ROWS`` rows, or with
    ``target_file_size`` that many bytes at the dataset's average bytes per row. No action
    when nothing qualifies.
    """
    writer = LanceWriter(storage, snapshot)
    state = state_of(snapshot)
    fragments = list(state.manifest.fragments)
    rows_total = sum(int(f.physical_rows) for f in fragments)
    target = TARGET_ROWS
    if target_file_size is not None and rows_total:
        size = sum(int(d.file_size_bytes) for f in fragments for d in f.files)
        target = max(1, int(target_file_size * rows_total / max(size, 1)))
    runs: list[list[table_pb2.DataFragment]] = [[]]
    for f in fragments:
        rows = int(f.physical_rows)
        deleted = int(f.deletion_file.num_deleted_rows) if f.HasField("deletion_file") else 0
        if rows and (rows < target or deleted > MATERIALIZE_DELETIONS * rows):
            runs[-1].append(f)
        elif runs[-1]:
            runs.append([])
    groups = [r for r in runs if len(r) > 1 or (r and r[0].HasField("deletion_file"))]
    if not groups:
        return [], CommitInfo("OPTIMIZE", {"groups": 0})
    files = snapshot.files()
    index = {int(i): n for n, i in enumerate(files.column(FRAGMENT_ID).to_pylist())}
    new: list[bytes] = []
    written: list[str] = []
    shape: list[tuple[tuple[int, ...], int]] = []
    m = state.manifest
    for group in groups:
        live = []
        for f in group:
            _, _, already, table = writer.fragment_rows(files.slice(index[int(f.id)], 1))
            keep = ~np.isin(np.arange(table.num_rows), already)
            live.append(table.filter(pa.array(keep)))
        out = write_fragments(
            storage, m.fields, m.data_format.version, pa.concat_tables(live), target
        )
        new.extend(out.fragments)
        written.extend(out.paths)
        shape.append((tuple(int(f.id) for f in group), len(out.fragments)))
    change = LanceChange(
        "rewrite",
        new_fragments=tuple(new),
        removed_fragment_ids=tuple(i for ids, _ in shape for i in ids),
        written=tuple(written),
        groups=tuple(shape),
    )
    # Compaction rewrites the live rows of its groups unchanged: they are copied.
    metrics = change_metrics(storage, m, change).with_rows(copied=new_rows(change))
    params = {"groups": len(shape), "target_rows": target}
    info = CommitInfo("OPTIMIZE", params, metrics=metrics)
    return [FormatPayload(FORMAT, change)], info
