"""Partition values out: the log's string form and Hive-style directory names.

Both come from ``lakecore.model.partition_paths`` (the one Hive path module): Delta's
``partitionValues`` strings are the Hive text of each value (``partition_text``), and data
files go under Hive-escaped ``col=value`` directories (``partition_path``).
"""

from __future__ import annotations

from typing import Any

from lakecore.model.partition_paths import HIVE_NULL, partition_path, partition_text

__all__ = ["HIVE_NULL", "log_value", "partition_dir"]


def log_value(value: Any) -> str | None:
    """A typed partition value as the Delta log writes it (None stays None)."""
    return partition_text(value)


def partition_dir(columns: list[str], values: list[Any]) -> str:
    """``col=value/...`` for one partition (physical column names, typed values)."""
    return partition_path(columns, values)
