"""Fixtures of the planner tests: the corpus location (never skipped when missing)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def corpus() -> Path:
    """``$LAKECORE_CORPUS`` or ``../shared/corpus``; fails (never skips) when it is missing."""
    env = os.environ.get("LAKECORE_CORPUS")
    root = Path(env) if env else REPO_ROOT.parent / "shared" / "corpus"
    if not (root / "delta").is_dir():
        pytest.fail(f"corpus not found at {root} (set LAKECORE_CORPUS)")
    return root
