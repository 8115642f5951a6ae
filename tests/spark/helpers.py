"""Helpers of the Spark tests: DataFrames to Arrow, and the corpus row digest."""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pyarrow as pa


def to_arrow(df: Any) -> pa.Table:
    """Collect a Spark DataFrame as an Arrow table.

    ``DataFrame.toArrow()`` (pyspark 4) casts the collected batches to the DataFrame's schema,
    which pyarrow refuses when a NOT NULL field sits under a nullable parent that is null
    (the variant tables: ``struct<metadata binary not null, value binary not null>`` inside a
    nullable list element). The batches themselves are right, so take them as they are then.
    """
    try:
        return df.toArrow()
    except pa.ArrowInvalid:
        batches = df._collect_as_arrow()
        return pa.Table.from_batches(batches) if batches else df.limit(0).toArrow()


@cache
def digest_module(corpus: Path) -> ModuleType:
    """The corpus ``digest.py`` (standalone module) loaded from ``corpus``."""
    spec = importlib.util.spec_from_file_location("lakecore_corpus_digest", corpus / "digest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def digest(corpus: Path, table: pa.Table) -> str:
    """The corpus row digest (order-independent) of ``table``."""
    return str(digest_module(corpus).table_digest(table))


def rows(corpus: Path, table: pa.Table) -> list[str]:
    """The rows of ``table`` as sorted canonical JSON strings."""
    return sorted(digest_module(corpus).canonical_rows(table))


DIGEST_MAX_ROWS = 100_000
"""Above this, rows are compared sorted (exact, vectorised) instead of by the Python digest."""


def same_rows(corpus: Path, got: pa.Table, expected: pa.Table) -> bool:
    """Whether two tables hold the same multiset of rows (column names and values).

    Small tables (and any with nested columns) compare by corpus digest; large flat ones
    compare exactly after casting ``got`` to ``expected``'s types and sorting both by every
    column (the digest's pure-Python canonical rows take seconds per million rows).
    """
    if got.num_rows != expected.num_rows or got.column_names != expected.column_names:
        return False
    flat = not any(pa.types.is_nested(f.type) for f in expected.schema)
    if expected.num_rows <= DIGEST_MAX_ROWS or not flat:
        return digest(corpus, got) == digest(corpus, expected)
    keys = [(name, "ascending") for name in expected.column_names]
    plain = pa.schema([pa.field(f.name, f.type) for f in expected.schema])
    left = got.cast(plain).sort_by(keys).combine_chunks()
    right = expected.cast(plain).sort_by(keys).combine_chunks()
    return bool(left.equals(right))
