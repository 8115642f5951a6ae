"""Lance upkeep lakecore writes: ``restore`` (a new version with an older version's content)."""

from __future__ import annotations

from lakecore.model.actions import Action, CommitInfo, FormatPayload
from lakecore.snapshot import Snapshot
from lakecore.storage import Storage
from lakecore_lance.state import load_state
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
