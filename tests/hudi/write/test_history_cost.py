"""Costs that must not grow with a Hudi table's history (issue 15: "the cost of an operation
grows with what it touches, not with the table"): an insert reads each commit metadata file at
most once."""

from __future__ import annotations

import collections
from pathlib import Path

import pyarrow as pa
import pytest

import lakecore
from lakecore.storage import open_storage
from lakecore.testing.faults import CountingStorage
from tests.hudi.write.helpers import SCHEMA, create

_COMMIT_FILES = (".commit", ".deltacommit", ".replacecommit")


def _rows(start: int, n: int = 3) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {"id": ids, "name": [f"n{i}" for i in ids], "ts": [1] * n, "city": ["x"] * n},
        schema=SCHEMA,
    )


def _commit_reads(counting: CountingStorage) -> collections.Counter[str]:
    return collections.Counter(
        c.path
        for c in counting.calls
        if c.method in ("read", "open_input") and c.path.endswith(_COMMIT_FILES)
    )


@pytest.mark.parametrize(
    ("table_type", "mdt"), [("COPY_ON_WRITE", "false"), ("MERGE_ON_READ", "true")]
)
def test_an_insert_reads_each_commit_metadata_file_once(
    tmp_path: Path, table_type: str, mdt: str
) -> None:
    """Loading the snapshot parses the commit metadata of the visible writes; insert sizing
    (the average record size of the newest commits) takes it from there instead of reading
    up to 10 of those files again."""
    create(tmp_path, table_type, **{"hoodie.metadata.enable": mdt})
    for k in range(6):
        lakecore.open(str(tmp_path)).append(_rows(10 * k))
    counting = CountingStorage(open_storage(str(tmp_path)))
    lakecore.open(str(tmp_path), storage=counting).append(_rows(100))
    reads = _commit_reads(counting)
    assert len(reads) >= 6, reads  # the snapshot did read the metadata of the 6 writes
    assert max(reads.values()) == 1, reads
    assert lakecore.open(str(tmp_path)).snapshot().to_arrow().num_rows == 21


def _table_of_writes(root: Path, table_type: str, n: int) -> list[str]:
    """A table (no metadata table; fewer writes than archiving keeps) with ``n`` writes to
    one partition, each inserting two rows; returns the instants."""
    create(root, table_type, **{"hoodie.metadata.enable": "false"})
    versions = []
    for k in range(n):
        t = lakecore.open(str(root))
        t.append(_rows(10 * k, 2))
        versions.append(t.version)
    return versions


def _change_feed_reads(root: Path, start: str, end: str) -> tuple[int, int]:
    """Storage reads and listings of the change feed ``start..end``."""
    counting = CountingStorage(open_storage(str(root)))
    changes = lakecore.open(str(root), storage=counting).changes(start, end)
    assert set(changes.column("_change_type").to_pylist()) == {"insert"}
    reads = sum(1 for c in counting.calls if c.method in ("read", "open_input", "head"))
    lists = sum(1 for c in counting.calls if c.method.startswith("list"))
    return reads, lists


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_the_change_feed_reads_grow_linearly_with_the_instants(
    tmp_path: Path, table_type: str
) -> None:
    """Each instant of the range is read from the table state loaded once (timeline, commit
    metadata, listing), not by loading the table again at every instant: the feed of the
    first 2N writes reads at most twice what the feed of the first N reads, plus a constant
    (loading the table at an instant reads the metadata of every write before it: loaded per
    instant, that made the feed quadratic)."""
    n = 6
    versions = _table_of_writes(tmp_path, table_type, 4 * n)
    _, lists_1 = _change_feed_reads(tmp_path, versions[0], versions[0])
    reads_n, lists_n = _change_feed_reads(tmp_path, versions[0], versions[n - 1])
    reads_2n, lists_2n = _change_feed_reads(tmp_path, versions[0], versions[2 * n - 1])
    reads_4n, lists_4n = _change_feed_reads(tmp_path, versions[0], versions[4 * n - 1])
    assert reads_2n <= 2 * reads_n + 8, (reads_n, reads_2n)
    assert reads_4n <= 2 * reads_2n + 8, (reads_2n, reads_4n)
    # One listing of the timeline and one of the data files, whatever the range.
    assert lists_1 == lists_n == lists_2n == lists_4n, (lists_1, lists_n, lists_2n, lists_4n)
