"""Writer heartbeats: how a writer tells a live pending instant from one whose writer died.

As Hudi's ``HoodieHeartbeatClient`` does, a writer keeps ``.hoodie/.heartbeat/<instant>`` while
its instant is pending; the file's modification time is the heartbeat. A pending instant whose
heartbeat is missing or older than ``interval * tolerable misses`` (judged against the store's
clock, see ``is_expired``) (Hudi's
``hoodie.client.heartbeat.interval_in_ms``, default 60 s, and
``hoodie.client.heartbeat.tolerable.misses``, default 2, read from the table's properties) is a
failed write that the next writer rolls back.

lakecore writers beat when they start an instant, keep beating from a background thread
(``kept_alive``) while they write its files, however long that takes, and beat again just
before completing it. Between staging and committing (a transaction block held open) nothing
beats: a transaction held open for longer than the expiry may find its instant rolled back
(its commit then raises ``CommitConflictError``).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator

from lakecore.errors import CorruptTableError
from lakecore.storage import Storage
from lakecore_hudi.table_config import META_DIR, TableConfig

log = logging.getLogger(__name__)

HEARTBEAT_DIR = f"{META_DIR}/.heartbeat"
INTERVAL_KEY = "hoodie.client.heartbeat.interval_in_ms"
MISSES_KEY = "hoodie.client.heartbeat.tolerable.misses"
DEFAULT_INTERVAL_MS = 60_000
DEFAULT_TOLERABLE_MISSES = 2


def heartbeat_path(instant: str) -> str:
    """The heartbeat file of ``instant``."""
    return f"{HEARTBEAT_DIR}/{instant}"


def beat(storage: Storage, instant: str) -> None:
    """Create or refresh the heartbeat of ``instant``."""
    storage.put(heartbeat_path(instant), b"")


def stop(storage: Storage, instant: str) -> None:
    """Remove the heartbeat of ``instant`` (it completed or was rolled back).

    Never raises: it runs after the instant completed (or was rolled back), and a heartbeat
    left behind is harmless (an instant that is not pending has no use for it).
    """
    try:
        storage.delete(heartbeat_path(instant))
    except Exception as exc:  # cleanup must not fail the operation
        log.warning("could not delete the heartbeat of instant %s: %s", instant, exc)


def _positive_int(config: TableConfig, key: str, default: int) -> int:
    raw = config.get(key)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        value = 0
    if value <= 0:
        raise CorruptTableError(f"hoodie.properties: {key}={raw!r} is not a whole number > 0")
    return value


def interval_ms(config: TableConfig) -> int:
    """How often a writer beats (``hoodie.client.heartbeat.interval_in_ms``).

    Raises:
        CorruptTableError: the property is not a whole number > 0.
    """
    return _positive_int(config, INTERVAL_KEY, DEFAULT_INTERVAL_MS)


def expiry_ms(config: TableConfig) -> int:
    """How old a heartbeat may get before its instant counts as failed.

    Raises:
        CorruptTableError: a heartbeat property is not a whole number > 0.
    """
    return interval_ms(config) * _positive_int(config, MISSES_KEY, DEFAULT_TOLERABLE_MISSES)


def is_expired(storage: Storage, config: TableConfig, instant: str, now_ms: float) -> bool:
    """Whether ``instant``'s writer is gone: no heartbeat, or one older than the expiry.

    ``now_ms`` must be the current time on the clock that stamps the store's modification
    times (the S3 server's clock, not this client's): a decision to roll back another writer's
    instant must take it from ``TableLock.server_now_ms``, which is measured from the mtime of
    the lock file the caller created, plus the time elapsed on this process's monotonic clock.
    So a client whose wall clock runs ahead never takes a live writer's fresh heartbeat for
    expired (the rollback would delete a live write); comparing against ``time.time()`` is
    only good for a hint that is decided again under the lock.

    Raises:
        OSError: the heartbeat cannot be read.
    """
    try:
        last = storage.head(heartbeat_path(instant)).modification_time
    except FileNotFoundError:
        return True
    return now_ms - last > expiry_ms(config)


def refresh_period_s(config: TableConfig) -> float:
    """Seconds between background beats: the interval, or a third of the expiry if shorter
    (so that one slow or failed beat never lets the heartbeat expire)."""
    return min(interval_ms(config), expiry_ms(config) / 3) / 1000


@contextlib.contextmanager
def kept_alive(storage: Storage, config: TableConfig, instant: str) -> Iterator[None]:
    """Beat ``instant``'s heartbeat from a daemon thread while the block runs.

    The thread beats every ``refresh_period_s``; a failed beat is logged and retried at the
    next period (the block's own storage calls report real faults). The thread is stopped
    and joined when the block ends, however it ends.
    """
    period = refresh_period_s(config)
    done = threading.Event()

    def run() -> None:
        while not done.wait(period):
            try:
                beat(storage, instant)
            except Exception as exc:  # the next beat may work
                log.warning("could not refresh the heartbeat of instant %s: %s", instant, exc)

    thread = threading.Thread(target=run, name=f"hudi-heartbeat-{instant}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
