"""Writer processes released together at a barrier (the concurrency tests of every format).

A worker is Python source run with ``python -c``; its argv must carry its index ``w`` and the
barrier path. It must create ``<barrier>.ready.<w>``, wait for ``<barrier>.go``, do its work
and print its report as JSON on its last line of output.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def run_barrier_writers(
    worker: str,
    argvs: Sequence[Sequence[str]],
    barrier: Path,
    start_timeout: float = 120,
    run_timeout: float = 300,
) -> list[Any]:
    """Start one ``worker`` process per argv, release them together, return their reports.

    Fails the test when a worker dies before the start, does not start in ``start_timeout``
    seconds, or exits non-zero (its stderr is the message); every process is reaped.
    """
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", worker, *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for argv in argvs
    ]
    outputs: dict[int, tuple[str, str]] = {}
    try:
        deadline = time.monotonic() + start_timeout
        while not all(Path(f"{barrier}.ready.{w}").exists() for w in range(len(procs))):
            assert time.monotonic() < deadline, "writers did not start"
            assert all(p.poll() is None for p in procs), "a writer died before the start"
            time.sleep(0.01)
        Path(f"{barrier}.go").touch()
        for w, p in enumerate(procs):
            outputs[w] = p.communicate(timeout=run_timeout)
            assert p.returncode == 0, outputs[w][1]
        return [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs.values()]
    finally:
        for w, p in enumerate(procs):  # kill and reap the rest, closing their pipes
            if w not in outputs:
                if p.poll() is None:
                    p.kill()
                p.communicate()
