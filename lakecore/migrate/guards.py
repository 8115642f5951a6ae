"""What a migration run refuses, skips or must know before it writes: nested locations,
versions that are gone, history entries that are no version, version order."""

from __future__ import annotations

import os

from lakecore.errors import MigrationError, VersionNotFoundError
from lakecore.model.history import HistoryEntry
from lakecore.table import Table


def refuse_nested(source_root: str, target_root: str) -> None:
    """Raise ``MigrationError`` when one table would sit inside the other: a vacuum or clean of
    the outer one would delete the inner one's files as unreferenced. Local roots are compared
    with symbolic links resolved, so a link into the source (or to it) is no way around it."""
    a, b = source_root.rstrip("/") + "/", target_root.rstrip("/") + "/"
    if a != b and (a.startswith(b) or b.startswith(a)):
        inner, outer = ("source", "target") if a.startswith(b) else ("target", "source")
        raise MigrationError(
            f"the {inner} ({(a if inner == 'source' else b).rstrip('/')}) is inside the "
            f"{outer} ({(b if outer == 'target' else a).rstrip('/')}): maintenance of the outer "
            "table would delete the inner one's files; migrate into a location beside it"
        )
    real_a, real_b = _real(source_root), _real(target_root)
    if a == b or (real_a, real_b) == (a, b):
        return
    if real_a == real_b:
        raise MigrationError(
            f"the target {target_root} is the source {source_root} under another name "
            f"(both are {real_a.rstrip('/')}); to migrate in place, name it as the source"
        )
    refuse_nested(real_a, real_b)


def _real(root: str) -> str:
    """``root`` with symbolic links resolved when it is a local path, with a trailing ``/``."""
    if root.startswith("/"):
        return os.path.realpath(root).rstrip("/") + "/"
    return root.rstrip("/") + "/"


def missing_file(exc: BaseException) -> bool:
    """Whether ``exc`` comes from a data file that no longer exists (a vacuumed version)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, FileNotFoundError):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def versions_beyond_one(target: Table, entries: list[HistoryEntry]) -> bool:
    """Whether history ``entries`` name more than one version of ``target`` (history may list
    instants that are no version: Hudi rollbacks of commits a failed run left pending, which
    read as the write before them)."""
    found: set[str] = set()
    for entry in entries:
        try:
            found.add(str(target.snapshot(version=entry.version).version))
        except VersionNotFoundError:
            continue
        if len(found) > 1:
            return True
    return False


def after(version: int | str, last: str) -> bool:
    """Whether source ``version`` comes after the recorded ``last`` (ints numerically, Hudi
    instants as the fixed-width strings they are)."""
    if isinstance(version, int):
        return version > int(last)
    return str(version) > last


def missing_between(last: str, first: int | str) -> str | None:
    """The numbered source versions strictly between the recorded ``last`` and the ``first``
    pending one (``"3"``, ``"3-6"``); None when there are none or versions are not numbered
    (Hudi instants leave gaps by design)."""
    if not isinstance(first, int) or not last.isdigit() or first <= int(last) + 1:
        return None
    low, high = int(last) + 1, first - 1
    return str(low) if low == high else f"{low}-{high}"
