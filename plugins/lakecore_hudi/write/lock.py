"""The table lock: Hudi's filesystem-based lock, taken with ``put_if_absent``.

Writers serialise the steps that must not interleave (picking an instant time and claiming
it; checking a write for conflicts and completing it; rolling back a failed write) by holding
this lock. It is the lock of Hudi's ``FileSystemBasedLockProvider`` (Hudi 1.x default path):

* the lock is the file ``.hoodie/.aux/lock``; whoever creates it (an atomic create:
  ``put_if_absent``, a conditional PUT on S3) holds the lock, and deleting it releases it. Hudi
  writers configured with ``FileSystemBasedLockProvider`` (and no other
  ``hoodie.write.lock.filesystem.path``) take the same file, so they exclude lakecore writers
  and the other way round. Hudi 0.x and 1.0 used ``.hoodie/lock`` when no path was set: set
  ``hoodie.write.lock.filesystem.path=<table>/.hoodie/.aux`` on such writers.
* a lock file older than ``hoodie.write.lock.filesystem.expire`` minutes (by its modification
  time, as Hudi judges it) is stale: its holder is taken for dead and the lock is broken.
  Hudi's default, 0, means "never"; lakecore uses 1 minute when the table does not say (what
  Hudi's ``getLockConfig`` sets), so a crashed holder blocks others for at most a minute.
  ``0`` in ``hoodie.properties`` keeps Hudi's never-expiring lock.
* the file holds JSON naming its holder (Hudi writes its ``LockInfo`` there; it only logs it).

Breaking a stale lock is itself guarded: the breaker first claims ``lock.<digest>.breaking``
(``put_if_absent``, one per stale lock file, named by a digest of its content), then deletes
the lock only if it still holds that content. So two waiters never both break one lock, and a
waiter never deletes a fresh lock it did not look at. What no file lock can rule out: a holder
that stalls for longer than the expiry while holding the lock (its lock is broken under it).
lakecore holds the lock for a few storage calls and checks ``still_held`` right before it
completes an instant, which narrows that to the stall of one storage call.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import logging
import os
import random
import socket
import threading
import time
import uuid
from collections.abc import Iterator

from lakecore.errors import CommitConflictError, CorruptTableError
from lakecore.storage import Storage
from lakecore_hudi.table_config import META_DIR, TableConfig

log = logging.getLogger(__name__)

LOCK_DIR = f"{META_DIR}/.aux"
LOCK_PATH = f"{LOCK_DIR}/lock"
EXPIRE_KEY = "hoodie.write.lock.filesystem.expire"
DEFAULT_EXPIRE_MINUTES = 1
WAIT_MARGIN_MS = 60_000
"""How long a writer waits beyond the expiry (a dead holder's lock is broken at the expiry)."""
MAX_POLL_S = 0.2
RELEASE_ATTEMPTS = 3


def expire_ms(config: TableConfig) -> int:
    """The table's lock expiry in milliseconds (0: never).

    Raises:
        CorruptTableError: ``hoodie.write.lock.filesystem.expire`` is not a whole number >= 0.
    """
    raw = config.get(EXPIRE_KEY)
    if raw is None or raw.strip() == "":
        return DEFAULT_EXPIRE_MINUTES * 60_000
    try:
        minutes = int(raw.strip())
    except ValueError:
        minutes = -1
    if minutes < 0:
        raise CorruptTableError(
            f"hoodie.properties: {EXPIRE_KEY}={raw!r} is not a whole number of minutes >= 0"
        )
    return minutes * 60_000


def _digest(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()[:32]


class TableLock:
    """A held table lock; ``release`` gives it up (never raising)."""

    def __init__(self, storage: Storage, content: bytes, expiry_ms: int) -> None:
        self._storage = storage
        self._content = content
        self._expiry_ms = expiry_ms
        self._released = False

    def still_held(self) -> bool:
        """Whether the lock file is still ours (False once it was broken).

        Raises:
            OSError: the lock file cannot be read.
        """
        try:
            return self._storage.read(LOCK_PATH) == self._content
        except FileNotFoundError:
            return False

    def release(self) -> None:
        """Delete the lock file if it is still ours.

        Must never raise: it runs after a commit has completed, and a failed release must
        not turn that success into a failure. A failing store is tried a few times (a lock
        left behind blocks other writers until it expires), then the failure is logged.
        """
        if self._released:
            return
        self._released = True
        for attempt in range(RELEASE_ATTEMPTS):
            try:
                if self._storage.read(LOCK_PATH) == self._content:
                    self._storage.delete(LOCK_PATH)
                else:
                    log.warning("the table lock of %s was broken while held", self._storage.root)
                return
            except FileNotFoundError:
                log.warning("the table lock of %s was broken while held", self._storage.root)
                return
            except Exception as exc:  # releasing must not fail the operation
                if attempt == RELEASE_ATTEMPTS - 1:
                    log.warning(
                        "could not release the table lock of %s (it expires in %s min): %s",
                        self._storage.root,
                        self._expiry_ms / 60_000,
                        exc,
                    )
                else:
                    time.sleep(0.01 * 2**attempt)


def _lock_content() -> bytes:
    """What the lock file holds: its holder, in the keys of Hudi's ``LockInfo``."""
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    info = {
        "lockCreateTime": now,
        "lockThreadName": f"lakecore {socket.gethostname()} pid {os.getpid()} "
        f"{threading.current_thread().name}",
        "lockStacksInfo": [],
        "lakecoreToken": uuid.uuid4().hex,
    }
    return json.dumps(info).encode()


def acquire(storage: Storage, config: TableConfig, wait_ms: int | None = None) -> TableLock:
    """Take the table lock, waiting for its holder (and breaking it once it is stale).

    ``wait_ms`` defaults to the expiry plus a minute (a dead holder's lock is broken once it
    expired; with expiry 0 it never is, and the wait is the minute).

    Raises:
        CommitConflictError: the lock stayed held by another writer for ``wait_ms``.
        CorruptTableError: see ``expire_ms``.
        OSError: the storage failed (nothing is held then).
    """
    expiry = expire_ms(config)
    if wait_ms is None:
        wait_ms = expiry + WAIT_MARGIN_MS
    content = _lock_content()
    deadline = time.monotonic() + wait_ms / 1000
    delay = 0.005
    while True:
        try:
            storage.put_if_absent(LOCK_PATH, content)
            return TableLock(storage, content, expiry)
        except FileExistsError:
            pass
        except OSError:
            # The PUT may have landed although its reply was lost: then the lock is ours.
            with contextlib.suppress(OSError):
                if storage.read(LOCK_PATH) == content:
                    return TableLock(storage, content, expiry)
            raise
        _break_if_stale(storage, expiry)
        if time.monotonic() > deadline:
            raise CommitConflictError(
                f"could not take the table lock {storage.resolve(LOCK_PATH)} within "
                f"{wait_ms / 1000:.0f}s: another writer holds it ({_holder(storage)}); "
                "run the operation again"
            )
        time.sleep(random.uniform(delay / 2, delay))
        delay = min(delay * 2, MAX_POLL_S)


@contextlib.contextmanager
def table_lock(storage: Storage, config: TableConfig) -> Iterator[TableLock]:
    """Hold the table lock for the block; it is released however the block ends.

    Raises:
        CommitConflictError, CorruptTableError, OSError: see ``acquire``.
    """
    lock = acquire(storage, config)
    try:
        yield lock
    finally:
        lock.release()


def _holder(storage: Storage) -> str:
    try:
        info = json.loads(storage.read(LOCK_PATH))
        return str(info.get("lockThreadName", "unknown holder"))
    except (OSError, ValueError, AttributeError):
        return "unknown holder"


def _break_if_stale(storage: Storage, expiry: int) -> None:
    """Delete the lock file if it is older than ``expiry`` ms (see the module docstring)."""
    if expiry == 0:
        return
    try:
        if time.time() * 1000 - storage.head(LOCK_PATH).modification_time <= expiry:
            return  # the common case: one call per poll
        # Content, then the age again: if the lock changed in between, the age is the new one's.
        content = storage.read(LOCK_PATH)
        age = time.time() * 1000 - storage.head(LOCK_PATH).modification_time
    except FileNotFoundError:
        return
    if age <= expiry:
        return
    marker = f"{LOCK_PATH}.{_digest(content)}.breaking"
    try:
        storage.put_if_absent(marker, b"")
    except FileExistsError:
        # Another waiter is breaking this lock; if it died doing so, its marker ages out.
        with contextlib.suppress(FileNotFoundError):
            if time.time() * 1000 - storage.head(marker).modification_time > expiry:
                storage.delete(marker)
        return
    try:
        if storage.read(LOCK_PATH) == content:
            log.warning("breaking the stale table lock of %s (%.0fs old)", storage.root, age / 1e3)
            storage.delete(LOCK_PATH)
    except FileNotFoundError:
        pass
    finally:
        storage.delete(marker)
