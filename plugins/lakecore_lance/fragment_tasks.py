"""Cutting a read's fragments into thread tasks and running them, results in order."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import pyarrow as pa

from lakecore_lance.state import LanceScanState

THREADS = 8
"""Threads reading fragment groups (``in_order``): the round trips into pylance's runtime of
small files wait more than they compute, more so on a loaded machine."""
MIN_AHEAD = 4
AHEAD_ROWS = 40_000
"""Groups are submitted ahead while fewer than MIN_AHEAD groups or AHEAD_ROWS rows are
pending (``in_order``)."""
THREADED_ROWS = 10_000
"""Rows one thread task reads at least from local fragments (``groups``)..."""
GROUP_FRAGMENTS = 32
"""...or fragments (``groups``)."""


def groups(state: LanceScanState, paths: list[str], local: bool) -> list[list[str]]:
    """The fragments ``paths`` in order, cut into the units one thread task reads.

    Remote: one fragment each, so that the object-store fetches overlap. Local: consecutive
    fragments until they hold THREADED_ROWS rows (fragments whose manifest does not say count
    as that many) or number GROUP_FRAGMENTS: a task per 100-row fragment cost about as much
    in hand-offs as the read, while tasks of 100 such fragments left too few tasks to keep
    the threads busy.
    """
    if not local:
        return [[p] for p in paths]
    tasks: list[list[str]] = []
    current: list[str] = []
    rows = 0
    for path in paths:
        current.append(path)
        rows += state.physical_rows[path] or THREADED_ROWS
        if rows >= THREADED_ROWS or len(current) >= GROUP_FRAGMENTS:
            tasks.append(current)
            current, rows = [], 0
    if current:
        tasks.append(current)
    return tasks


def in_order(
    read: Callable[[list[str]], list[list[pa.RecordBatch]]],
    groups: list[list[str]],
    rows: Callable[[list[str]], int],
) -> Iterator[list[pa.RecordBatch]]:
    """The fragments' batches ``read(group)`` returns for each group, in order.

    Groups are read in up to THREADS threads (pylance releases the GIL) and submitted ahead
    of the one being yielded while fewer than MIN_AHEAD groups or AHEAD_ROWS rows (``rows``
    of each group) are pending: small fragments keep every thread busy (a window of a few
    groups left threads idle behind a slow one), large ones hold no more than before. A
    single group is read in the caller's thread.
    """
    if len(groups) <= 1:
        for group in groups:
            yield from read(group)
        return
    with ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="lakecore-lance") as pool:
        pending: deque[tuple[Future[list[list[pa.RecordBatch]]], int]] = deque()
        upcoming = iter(groups)
        held = 0

        def submit() -> bool:
            nonlocal held
            group = next(upcoming, None)
            if group is None:
                return False
            count = rows(group)
            pending.append((pool.submit(read, group), count))
            held += count
            return True

        while len(pending) < MIN_AHEAD or held < AHEAD_ROWS:
            if not submit():
                break
        while pending:
            future, count = pending.popleft()
            held -= count
            result = future.result()
            while len(pending) < MIN_AHEAD or held < AHEAD_ROWS:
                if not submit():
                    break
            yield from result
