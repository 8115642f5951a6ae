"""benchmarks/delta_snapshot.py runs each tool after each of the others about equally often.

On the benchmark machine what ran just before a measured process changes its cost (the kernel
zeroing fresh memory pages costs several times more after delta-rs exits than after a Python
process), so a fixed rotation compared slots instead of tools (issue 15, session 9).
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    sys.path.insert(0, str(BENCH))  # the script imports delta_log_synth from its folder
    try:
        spec = importlib.util.spec_from_file_location("delta_snapshot", BENCH / "delta_snapshot.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["delta_snapshot"] = module  # dataclasses look their module up
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


@pytest.mark.parametrize("n_tools", [3, 4])
@pytest.mark.parametrize("repetitions", [1, 2, 3, 5, 9, 12])
def test_predecessors_balanced(bench: ModuleType, n_tools: int, repetitions: int) -> None:
    tools = (*bench.TOOLS, bench.BASELINE)[:n_tools]
    orders = bench.run_orders(tools, repetitions)
    assert len(orders) == repetitions
    assert all(sorted(order) == sorted(tools) for order in orders)
    sequence = [t for order in orders for t in order]
    pairs = Counter(itertools.pairwise(sequence))
    assert not [p for p in pairs if p[0] == p[1]], "a tool ran right after itself"
    if repetitions >= n_tools - 1:  # enough runs for every tool to follow every other
        for tool in tools:
            after = [pairs[(other, tool)] for other in tools if other != tool]
            assert max(after) - min(after) <= 1, (tool, after, orders)


def test_old_rotation_was_unbalanced(bench: ModuleType) -> None:
    """The check above fails for the rotation the benchmark used before (it can fail)."""
    tools = (*bench.TOOLS, bench.BASELINE)
    rotation = [tools[r % 4 :] + tools[: r % 4] for r in range(9)]
    sequence = [t for order in rotation for t in order]
    pairs = Counter(itertools.pairwise(sequence))
    assert pairs[("delta-rs", "lakecore")] == 7  # of lakecore's 9 runs
    assert pairs[("floor", "lakecore")] == 0
    assert bench.run_orders(tools, 9) != rotation
