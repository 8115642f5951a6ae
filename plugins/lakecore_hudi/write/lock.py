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
* a lock file older than ``hoodie.write.lock.filesystem.expire`` minutes is stale: its holder
  is taken for dead and the lock is broken. Hudi judges the age by the file's modification
  time against its own wall clock; on S3 that time is the server's clock, so a client whose
  clock runs ahead would take every lock for stale. lakecore therefore breaks a lock only when
  BOTH hold: its modification time is older than the expiry (so Hudi writers agree), and the
  waiter has seen the same lock content for longer than the expiry on its own monotonic clock
  (so no clock skew can make a fresh lock look stale).
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
completes an instant or deletes a file, which narrows that to the stall of one storage call.
A holder whose hold reached the expiry does not delete the lock on release (a breaker may be
deleting it at the same moment and taking a fresh one): it leaves it to expire.
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

from lakecore.errors import CommitConflictError, CommitStorageError, CorruptTableError
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
READ_BACK_ATTEMPTS = 3
RELEASE_MARGIN_MS = 5_000
"""A hold this close to the expiry is not released by deleting (a breaker may be at work)."""


def observed_clock() -> float:
    """Seconds on this process's monotonic clock: what staleness is judged on (tests fake it)."""
    return time.monotonic()


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
    """A held table lock; ``release`` gives it up (never raising).

    ``taken_at`` is ``observed_clock()`` read before the lock file was created: no waiter can
    have seen the lock earlier, so no waiter breaks it before ``taken_at + expiry``.
    """

    def __init__(
        self, storage: Storage, content: bytes, expiry_ms: int, taken_at: float | None = None
    ) -> None:
        self._storage = storage
        self._content = content
        self._expiry_ms = expiry_ms
        self._taken_at = observed_clock() if taken_at is None else taken_at
        self._landed_at = observed_clock()
        self._created_ms: float | None = None
        self._released = False

    @property
    def token(self) -> str:
        """The lock content's token (what an operator finds in the lock file)."""
        return _token_of(self._content)

    def held_ms(self) -> float:
        """Milliseconds since the lock was taken, on ``observed_clock``."""
        return (observed_clock() - self._taken_at) * 1000

    def server_now_ms(self) -> float:
        """The store's current time in epoch ms, never ahead of it: the lock file's
        modification time (stamped by the store's clock when we created it) plus the time
        elapsed since, on this process's monotonic clock. Free of this client's wall clock.

        Raises:
            CommitConflictError: the lock was broken (its file is another writer's now).
            OSError: the lock file cannot be read (it is read once per lock).
        """
        if self._created_ms is None:
            try:
                created = self._storage.head(LOCK_PATH).modification_time
            except FileNotFoundError:
                created = None
            if created is None or not self.still_held():  # the mtime read may be another's
                raise CommitConflictError(
                    f"the table lock of {self._storage.root} was broken while held (token "
                    f"{self.token}); nothing was changed, run the operation again"
                )
            self._created_ms = created
        return self._created_ms + (observed_clock() - self._landed_at) * 1000

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
        """Delete the lock file if it is still ours and safely within its expiry.

        Must never raise: it runs after a commit has completed, and a failed release must
        not turn that success into a failure. Idempotent. A lock that is not ours is never
        deleted; a hold that reached ``expiry - RELEASE_MARGIN_MS`` is left to expire (a
        waiter may be breaking it right now and taking a fresh lock, which a read-then-delete
        could delete). A failing store is tried a few times, then the failure is logged.
        """
        if self._released:
            return
        self._released = True
        for attempt in range(RELEASE_ATTEMPTS):
            if self._expiry_ms and self.held_ms() >= self._expiry_ms - RELEASE_MARGIN_MS:
                log.warning(
                    "the table lock of %s was held for %.0fs, near its expiry: left to expire "
                    "(token %s)",
                    self._storage.root,
                    self.held_ms() / 1000,
                    self.token,
                )
                return
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


def _token_of(content: bytes) -> str:
    try:
        return str(json.loads(content).get("lakecoreToken", "?"))
    except (ValueError, AttributeError):
        return "?"


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
        CommitStorageError: the lock PUT failed and whether it landed cannot be told.
        CorruptTableError: see ``expire_ms``.
        OSError: the storage failed (nothing is held then).
    """
    expiry = expire_ms(config)
    if wait_ms is None:
        wait_ms = expiry + WAIT_MARGIN_MS
    content = _lock_content()
    deadline = time.monotonic() + wait_ms / 1000
    seen: dict[str, float] = {}
    delay = 0.005
    while True:
        taken_at = observed_clock()
        try:
            storage.put_if_absent(LOCK_PATH, content)
            return TableLock(storage, content, expiry, taken_at)
        except FileExistsError:
            pass
        except OSError as exc:
            # The PUT may have landed although its reply was lost: then the lock is ours.
            if _lock_landed(storage, content, exc):
                return TableLock(storage, content, expiry, taken_at)
            raise
        _break_if_stale(storage, expiry, seen)
        if time.monotonic() > deadline:
            raise CommitConflictError(
                f"could not take the table lock {storage.resolve(LOCK_PATH)} within "
                f"{wait_ms / 1000:.0f}s: another writer holds it ({_holder(storage)}); "
                "run the operation again"
            )
        time.sleep(random.uniform(delay / 2, delay))
        delay = min(delay * 2, MAX_POLL_S)


def _lock_landed(storage: Storage, content: bytes, fault: OSError) -> bool:
    """After a failed lock PUT: whether it landed (the lock is ours); False if it did not.

    The read-back is tried ``READ_BACK_ATTEMPTS`` times. If it never answers, the lock may be
    ours and would block every writer (forever with expiry 0): it is deleted if it holds our
    token (a failure there is logged with the token, so an operator can find the file).

    Raises:
        CommitStorageError: whether the lock was taken cannot be told (nothing else was done).
    """
    for attempt in range(READ_BACK_ATTEMPTS):
        try:
            return storage.read(LOCK_PATH) == content
        except FileNotFoundError:
            return False
        except OSError:
            time.sleep(0.01 * 2**attempt)
    token = _token_of(content)
    try:
        if storage.read(LOCK_PATH) == content:
            storage.delete(LOCK_PATH)
    except FileNotFoundError:
        pass
    except OSError as exc:
        log.warning(
            "taking the table lock %s failed and may have landed; if that file holds "
            "lakecoreToken %s, delete it (%s)",
            storage.resolve(LOCK_PATH),
            token,
            exc,
        )
    raise CommitStorageError(
        f"taking the table lock {storage.resolve(LOCK_PATH)} failed ({type(fault).__name__}: "
        f"{fault}) and it could not be read back; nothing was written. If the lock file holds "
        f"lakecoreToken {token}, it is a leftover of this attempt and may be deleted"
    ) from fault


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


def _break_if_stale(storage: Storage, expiry: int, seen: dict[str, float]) -> None:
    """Delete the lock file if it is stale (see the module docstring).

    ``seen`` maps what this waiter has looked at (a lock content's digest, a breaking marker)
    to when it first saw it on ``observed_clock``; the caller keeps it across polls.
    """
    if expiry == 0:
        return
    try:
        content = storage.read(LOCK_PATH)
        if not _stale(storage, LOCK_PATH, f"lock {_digest(content)}", expiry, seen):
            return
    except FileNotFoundError:
        return
    marker = f"{LOCK_PATH}.{_digest(content)}.breaking"
    try:
        storage.put_if_absent(marker, b"")
    except FileExistsError:
        # Another waiter is breaking this lock; if it died doing so, its marker ages out.
        with contextlib.suppress(FileNotFoundError):
            if _stale(storage, marker, f"marker {marker}", expiry, seen):
                storage.delete(marker)
        return
    try:
        if storage.read(LOCK_PATH) == content:
            log.warning("breaking the stale table lock of %s", storage.root)
            storage.delete(LOCK_PATH)
    except FileNotFoundError:
        pass
    finally:
        storage.delete(marker)


def _stale(storage: Storage, path: str, key: str, expiry: int, seen: dict[str, float]) -> bool:
    """Whether ``path`` (seen as ``key``) has been seen unchanged for longer than ``expiry``
    ms on this waiter's clock AND its modification time is older than ``expiry``.

    Raises:
        FileNotFoundError: ``path`` is gone.
    """
    first = seen.setdefault(key, observed_clock())
    if (observed_clock() - first) * 1000 <= expiry:
        return False
    return time.time() * 1000 - storage.head(path).modification_time > expiry
