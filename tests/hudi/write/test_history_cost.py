"""Costs that must not grow with a Hudi table's history (issue 15: "the cost of an operation
grows with what it touches, not with the table"): an insert reads each commit metadata file at
most once, the change feed's reads grow linearly with its instants, and a table version 6
archiving writes and reads what it archives, not the whole archive."""

from __future__ import annotations

import collections
from pathlib import Path

import pyarrow as pa
import pytest
from lakecore_hudi.table_config import read_table_config
from lakecore_hudi.timeline.archived import load_archived_timeline

import lakecore
from lakecore.storage import Storage, open_storage
from lakecore.testing.faults import CountingStorage
from tests.hudi.write.archive_tables import (
    active_commits,
    archived_commit_times,
    archiving_table,
    hudi_rs_rows_as_of,
)
from tests.hudi.write.helpers import SCHEMA, create, hudi_rs_rows, lakecore_rows, rows

_COMMIT_FILES = (".commit", ".deltacommit", ".replacecommit")
ARCHIVED = ".hoodie/archived/"


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


class _RecordingStorage(CountingStorage):
    """Also records the bytes each put writes, by path."""

    def __init__(self, inner: Storage) -> None:
        super().__init__(inner)
        self.written: collections.Counter[str] = collections.Counter()

    def put(self, path: str, data: bytes) -> None:
        super().put(path, data)
        self.written[path] += len(data)

    def put_if_absent(self, path: str, data: bytes) -> None:
        super().put_if_absent(path, data)
        self.written[path] += len(data)


def test_v6_archivings_write_what_they_archive_not_the_archive(tmp_path: Path) -> None:
    """Table version 6's archive log: each archiving writes a new ``.commits_.archive.N``
    file with the instants it moves (Hudi's roll-over where storage cannot append) instead of
    rewriting the archive with its old bytes first, and reads at most the latest file (to
    skip records an interrupted archiving already wrote): bytes written and read per
    archiving stay flat as the archive grows. lakecore, an independent decoder and hudi-rs
    read the archived instants across all the files."""
    root = tmp_path / "t"
    archiving_table(root, "6")
    recording = _RecordingStorage(open_storage(str(root)))
    written: list[int] = []
    read: list[int] = []
    versions: list[str] = []
    for i in range(14):
        recording.written.clear()
        recording.bytes.clear()
        table = lakecore.open(str(root), storage=recording)
        table.upsert(rows((i % 5, f"n{i}", i, "x")))
        versions.append(str(lakecore.open(str(root)).version))
        out = sum(n for p, n in recording.written.items() if p.startswith(ARCHIVED))
        if out:
            written.append(out)
            read.append(sum(n for p, n in recording.bytes.items() if p.startswith(ARCHIVED)))
    names = sorted(p.name for p in (root / ARCHIVED).iterdir())
    assert len(written) == len(names) == 6, (written, names)
    assert names == sorted(f".commits_.archive.{k}_1-0-1" for k in range(1, 7))
    # The same 2 commits (6 state files) per archiving: the same bytes, give or take digits.
    assert max(written) <= 1.1 * min(written), written
    assert read[0] == 0 and max(read) <= 1.1 * min(written), read
    archived = [v for v in versions if v not in active_commits(root)]
    assert len(archived) == 12
    assert archived_commit_times(root, "6") == archived
    storage = open_storage(str(root))
    ours = load_archived_timeline(storage, read_table_config(storage))
    assert [a.timestamp for a in ours if a.action == "commit"] == archived
    history = [str(e.version) for e in lakecore.open(str(root)).history()]
    assert sorted(history) == versions
    oldest = lakecore.open(str(root)).snapshot(version=archived[0]).to_arrow()
    assert oldest.column("name").to_pylist() == ["n0"]
    assert hudi_rs_rows_as_of(root, archived[0]) == [{"id": 0, "name": "n0", "ts": 0, "city": "x"}]
    assert lakecore_rows(root) == hudi_rs_rows(root)
