"""Writer heartbeats: how a writer tells a live pending instant from one whose writer died.

As Hudi's ``HoodieHeartbeatClient`` does, a writer keeps ``.hoodie/.heartbeat/<instant>`` while
its instant is pending; the file's modification time is the heartbeat. A pending instant whose
heartbeat is missing or older than ``interval * tolerable misses`` (Hudi's
``hoodie.client.heartbeat.interval_in_ms``, default 60 s, and
``hoodie.client.heartbeat.tolerable.misses``, default 2, read from the table's properties) is a
failed write that the next writer rolls back. lakecore writers beat when they start an instant
and again just before completing it; they do not beat in the background, so a transaction held
open longer than the expiry may find its instant rolled back (its commit then raises
``CommitConflictError``).
"""

from __future__ import annotations

import time

from lakecore.storage import Storage
from lakecore_hudi.table_config import META_DIR, TableConfig

HEARTBEAT_DIR = f"{META_DIR}/.heartbeat"
DEFAULT_INTERVAL_MS = 60_000
DEFAULT_TOLERABLE_MISSES = 2


def heartbeat_path(instant: str) -> str:
    """The heartbeat file of ``instant``."""
    return f"{HEARTBEAT_DIR}/{instant}"


def beat(storage: Storage, instant: str) -> None:
    """Create or refresh the heartbeat of ``instant``."""
    storage.put(heartbeat_path(instant), b"")


def stop(storage: Storage, instant: str) -> None:
    """Remove the heartbeat of ``instant`` (it completed or was rolled back)."""
    storage.delete(heartbeat_path(instant))


def expiry_ms(config: TableConfig) -> int:
    """How old a heartbeat may get before its instant counts as failed."""
    interval = int(config.get("hoodie.client.heartbeat.interval_in_ms") or DEFAULT_INTERVAL_MS)
    misses = int(config.get("hoodie.client.heartbeat.tolerable.misses") or DEFAULT_TOLERABLE_MISSES)
    return interval * misses


def is_expired(storage: Storage, config: TableConfig, instant: str) -> bool:
    """Whether ``instant``'s writer is gone: no heartbeat, or one older than the expiry."""
    try:
        last = storage.head(heartbeat_path(instant)).modification_time
    except FileNotFoundError:
        return True
    return time.time() * 1000 - last > expiry_ms(config)
