"""Running a function over many small items on a few threads, in contiguous chunks.

File reads of a batch of file slices (base files, log files) are many and small; one pool
task per file costs ~0.1 ms of bookkeeping, as much as reading a small file. A task per
contiguous chunk keeps that to a few tasks per batch. Only for work that releases the GIL
(file IO, Parquet decoding) or must overlap with other work; ``Storage`` is thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

__all__ = ["gather", "map_in_chunks", "submit_chunks"]

T = TypeVar("T")
R = TypeVar("R")


def submit_chunks(
    pool: ThreadPoolExecutor, fn: Callable[[T], R], items: Sequence[T], chunks: int
) -> list[Future[list[R]]]:
    """Submit ``fn`` over ``items`` as at most ``chunks`` tasks of contiguous items."""
    size = max(1, -(-len(items) // max(1, chunks)))
    parts = [items[i : i + size] for i in range(0, len(items), size)]
    return [pool.submit(_run, fn, part) for part in parts]


def gather(futures: Sequence[Future[list[R]]]) -> list[R]:
    """The results of ``submit_chunks``' tasks, in item order (raises the first failure)."""
    return [r for f in futures for r in f.result()]


def map_in_chunks(fn: Callable[[T], R], items: Sequence[T], workers: int) -> list[R]:
    """``[fn(x) for x in items]`` on ``workers`` threads (in this thread if it is one item)."""
    if len(items) < 2 or workers < 2:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(workers, thread_name_prefix="lakecore-hudi") as pool:
        return gather(submit_chunks(pool, fn, items, workers))


def _run(fn: Callable[[T], R], part: Sequence[T]) -> list[R]:
    return [fn(x) for x in part]
