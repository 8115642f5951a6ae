"""Lance upkeep lakecore writes: ``restore`` (a new version with an older version's content)
and ``vacuum`` (cleanup of old versions and the files only they need)."""

from __future__ import annotations

import time

from lakecore.errors import InvalidArgumentError
from lakecore.model.actions import Action, CommitInfo, FormatPayload
from lakecore.snapshot import Snapshot
from lakecore.storage import Storage
from lakecore_lance.deletions import DELETIONS_DIR, deletion_path
from lakecore_lance.history import TRANSACTIONS_DIR, tags, timestamp_ms
from lakecore_lance.manifest import VERSIONS_DIR, list_manifests, read_manifest
from lakecore_lance.proto import table_pb2
from lakecore_lance.state import DATA_DIR, load_state
from lakecore_lance.write.changes import FORMAT, LanceChange
from lakecore_lance.write.writer import ensure_writable, state_of


def restore_actions(
    storage: Storage, snapshot: Snapshot, version: int
) -> tuple[list[Action], CommitInfo]:
    """The change committing ``version``'s manifest content (fragments, schema, config) as
    the version after ``snapshot``, with a Lance ``Restore`` transaction; no file is written.

    Raises ``VersionNotFoundError`` for a version the dataset lacks (cleaned up or never
    written) and ``UnsupportedFeatureError`` when the latest or the restored version is one
    lakecore does not write (indices, writer flags, data storage versions; ``ensure_writable``).
    """
    ensure_writable(state_of(snapshot))
    target = load_state(storage, version)
    ensure_writable(target)
    raw = target.manifest.SerializeToString(deterministic=True)
    change = LanceChange("restore", restored=raw)
    info = CommitInfo("RESTORE", {"version": str(version)}, read_whole_table=True)
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
    out: set[str] = set()
    for fragment in m.fragments:
        out.update(f"{DATA_DIR}/{f.path}" for f in fragment.files)
        if fragment.HasField("deletion_file"):
            out.add(deletion_path(int(fragment.id), fragment.deletion_file))
    if m.transaction_file:
        out.add(f"{TRANSACTIONS_DIR}/{m.transaction_file}")
    return out
