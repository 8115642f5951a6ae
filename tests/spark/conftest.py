"""Fixtures of the Spark tests: ONE local SparkSession for the whole run, and the corpus."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
TEST_CONFIG = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
}


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A ``local[2]`` SparkSession shared by every Spark test, stopped at the end."""
    pytest.importorskip("pyspark", reason="needs pyspark (pip install 'lakecore[spark]')")
    if not os.environ.get("JAVA_HOME") and shutil.which("java") is None:
        pytest.skip("needs a Java runtime for Spark (java on PATH or JAVA_HOME)")
    import lakecore.spark

    session = lakecore.spark.session("local[2]", app_name="lakecore-tests", config=TEST_CONFIG)
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def corpus() -> Path:
    """``$LAKECORE_CORPUS`` or ``../shared/corpus``; fails (never skips) when it is missing."""
    env = os.environ.get("LAKECORE_CORPUS")
    root = Path(env) if env else REPO_ROOT.parent / "shared" / "corpus"
    if not (root / "delta").is_dir():
        pytest.fail(f"corpus not found at {root} (set LAKECORE_CORPUS)")
    return root
