"""Archiving the metadata table's own timeline, as Hudi archives it.

Every data instant adds a delta commit (three timeline files) to the metadata timeline, so it
is archived like any merge-on-read table's (``write.archive_plan.select``: beyond
``hoodie.keep.max.commits`` = 30 completed writes, down to 20, never a delta commit the next
compaction still needs), into the LSM timeline under ``.hoodie/metadata/.hoodie/timeline/
history``, with one rule of Hudi's for metadata tables on top: no instant at or after the data
table's earliest active instant is archived. Readers then count an archived delta commit's
blocks as completed (``column_stats._Timeline.block_is_live``), and its data instant is valid
(archived too, or older than the data timeline: ``files_partition``).

It runs after a metadata compaction, under the data table's lock like every metadata write. A
failure is logged, never raised: the data instant being committed must not fail for it, and the
next compaction tries again.
"""

from __future__ import annotations

import logging

from lakecore.errors import LakecoreError
from lakecore.storage import Storage
from lakecore_hudi.mdt.prefixed import PrefixedStorage
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.timeline.active import load_timeline
from lakecore_hudi.timeline.lsm_writer import compact_and_clean, write_entries
from lakecore_hudi.write.archive import delete_archived, lsm_entry
from lakecore_hudi.write.archive_plan import ArchiveSettings, TableFacts, select

__all__ = ["SETTINGS", "archive_metadata_timeline"]

log = logging.getLogger(__name__)

SETTINGS = ArchiveSettings(
    min_commits=20, max_commits=30, cleaner_commits_retained=None, max_delta_commits=10
)
"""Hudi's defaults for the metadata table (no cleaner bound: its cleaner keeps slices)."""


def archive_metadata_timeline(
    storage: Storage, config: TableConfig, mdt: PrefixedStorage, mconfig: TableConfig
) -> tuple[str, ...]:
    """Archive what the metadata timeline no longer needs active; returns the archived
    instant times (empty when nothing was, or archiving failed: logged)."""
    try:
        return _archive(storage, config, mdt, mconfig)
    except (LakecoreError, OSError) as exc:
        log.warning("archiving the metadata timeline of %s failed: %s", storage.root, exc)
        return ()


def _archive(
    storage: Storage, config: TableConfig, mdt: PrefixedStorage, mconfig: TableConfig
) -> tuple[str, ...]:
    timeline = load_timeline(mdt, mconfig)
    actions = select(timeline, SETTINGS, TableFacts(merge_on_read=True), mconfig.table_version)
    data = load_timeline(storage, config)
    first = min((i.timestamp for i in data.instants), default=None)
    kept = []
    for action in actions:  # oldest first: keep a prefix, never leave a hole
        if first is None or action.timestamp >= first:
            break
        kept.append(action)
    if not kept:
        return ()
    write_entries(mdt, mconfig.archive_dir, [lsm_entry(mdt, timeline, a) for a in kept])
    delete_archived(mdt, timeline, kept)
    compact_and_clean(mdt, mconfig.archive_dir, SETTINGS.timeline_compaction_batch)
    return tuple(a.timestamp for a in kept)
