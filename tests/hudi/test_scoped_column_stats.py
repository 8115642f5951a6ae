"""A scan with a partition predicate reads the ``column_stats`` of its partitions only (issue 15).

- on every corpus table with a ``column_stats`` partition, the index built with the stats of
  one partition equals the full index on that partition's rows (stats, counts, every column),
  and the other rows carry no stats (nor record counts, which come from them);
- the planner's index for a partition predicate (``HudiSnapshotSource.files_for_predicate``)
  equals the full index on the rows the partition stage keeps, and the scan plans the same
  files and reads the same rows as one planned on the full index;
- on a lakecore-written table of 40 partitions whose metadata table was compacted into a
  many-block base HFile, a one-partition scan reads a fraction of the ``column_stats`` bytes
  a full load reads (block index, not the whole file).
"""

from __future__ import annotations

import functools
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from lakecore_hudi.file_index import build_file_index
from lakecore_hudi.mdt import maintain
from lakecore_hudi.mdt import table as mdt_table
from lakecore_hudi.mdt.hfile_range import read_prefixed_cells
from lakecore_hudi.mdt.hfile_writer import write_hfile
from lakecore_hudi.mdt.stats_keys import column_stats_key
from lakecore_hudi.source import HudiSnapshotSource

import lakecore
from lakecore.model import files as fi
from lakecore.storage import open_storage
from tests.hudi.test_column_stats import HUDI, MDT_TABLES
from tests.hudi.write.helpers import copy_corpus_table

STATS = (fi.MIN, fi.MAX, fi.NULL_COUNT)
V8_TRIPS = "mor_avro_v8_trips_8i3u1d"


def test_many_prefixes_read_the_blocks_and_cells_a_prefix_at_a_time_reads() -> None:
    keys = sorted(
        column_stats_key(f"p={p}", f"f{f}.parquet", f"c{c}")
        for p in range(30)
        for f in range(3)
        for c in range(4)
    )
    cells = [(k.encode(), k.encode() * 2) for k in keys]
    data = write_hfile(cells, {"schema": b"{}"}, block_size=1024)
    rng = random.Random(15)
    rows = [r for r, _ in cells]
    runs = 0
    for _ in range(40):
        prefixes = [rng.choice(rows)[: rng.choice([3, 12, 24, 40, 60])] for _ in range(25)]
        prefixes += [b"zzz", b"+", rng.choice(rows)[:24] + b"~"]  # past, before, between
        spans: set[tuple[int, int]] = set()
        one_by_one: set[tuple[bytes, bytes]] = set()
        for prefix in prefixes:

            def single(start: int, end: int, spans: set[tuple[int, int]] = spans) -> bytes:
                spans.add((start, end))
                return data[start:end]

            one_by_one.update(read_prefixed_cells(single, len(data), "f", [prefix])[0])
        together: list[tuple[int, int]] = []

        def many(start: int, end: int, together: list[tuple[int, int]] = together) -> bytes:
            together.append((start, end))
            return data[start:end]

        found, _ = read_prefixed_cells(many, len(data), "f", prefixes)
        assert found == sorted(one_by_one) == [c for c in cells if c[0].startswith(tuple(prefixes))]
        blocks = {b for s, e in spans for b in range(s, e)}
        assert {b for s, e in together for b in range(s, e)} == blocks
        runs += 1
    assert runs == 40


def _source(root: Path) -> HudiSnapshotSource:
    source = lakecore.open(str(root)).snapshot().source
    assert isinstance(source, HudiSnapshotSource)
    return source


def _known(index: pa.Table, column: str) -> int:
    """Rows with at least one known min of a top-level column."""
    mins = index.column(column).combine_chunks()
    known = [pc.invert(pc.is_null(mins.field(i))) for i in range(mins.type.num_fields)] or [
        pa.array([False] * index.num_rows)
    ]
    return int(pc.sum(functools.reduce(pc.or_, known)).as_py() or 0)


def test_one_partition_of_every_corpus_column_stats_table_equals_the_full_index() -> None:
    cases = known = 0
    for name in MDT_TABLES:
        root = HUDI / name
        storage = open_storage(str(root))
        state = _source(root).state
        full = build_file_index(storage, state)
        for partition in sorted({s.partition_path for s in state.slices}):
            scoped = build_file_index(storage, state, partitions=frozenset([partition]))
            inside = [i for i, s in enumerate(state.slices) if s.partition_path == partition]
            outside = pa.array([i for i in range(len(state.slices)) if i not in inside], pa.int64())
            assert scoped.take(inside).equals(full.take(inside)), (name, partition)
            others = scoped.take(outside)
            derived = [*STATS, fi.RECORD_COUNT]  # record counts come from the stats
            assert others.drop_columns(derived).equals(full.take(outside).drop_columns(derived))
            assert others.column(fi.RECORD_COUNT).null_count == others.num_rows
            assert _known(others, fi.MIN) == 0
            known += _known(full.take(inside), fi.MIN)
            cases += 1
    assert cases == 15  # 3 + 3 + 3 + 4 partitions, 2 non-partitioned tables
    assert known >= 9  # the equality compares real statistics, not nulls


@pytest.mark.parametrize(
    ("name", "where", "kept"),
    [
        (V8_TRIPS, "city = 'chennai'", 1),
        (V8_TRIPS, "city IN ('chennai', 'sao_paulo') AND fare > 30", 2),
        ("cow_v9_txns_simple_overwrite", "region <> 'eu'", 2),
        (V8_TRIPS, "fare > 30 OR city >= 'a'", None),
    ],
)
def test_the_planner_index_equals_the_full_index_on_kept_partitions(
    name: str, where: str, kept: int | None
) -> None:
    root = HUDI / name
    scan = lakecore.open(str(root)).scan(where)
    planned = scan.explain()
    source = _source(root)
    assert scan.predicate is not None
    scoped = source.files_for_predicate(scan.predicate)
    assert source.files_for_predicate(scan.predicate) is scoped  # memoised per snapshot
    full = source.files()
    if kept is None:
        assert source._scoped == {}  # the partition stage keeps all: the full index
        assert scoped is full
    else:
        assert len(source._scoped) == 1
        parts = next(iter(source._scoped))
        assert len(parts) == kept
        rows = [i for i, s in enumerate(source.state.slices) if s.partition_path in parts]
        assert scoped.take(rows).equals(full.take(rows))
        assert scoped.drop_columns(list(STATS)).num_rows == full.num_rows
    # Scan.files() is the scoped index's kept rows (stats whole), not a full index build.
    fresh = lakecore.open(str(root)).scan(where)
    fresh_source = fresh.snapshot.source
    assert isinstance(fresh_source, HudiSnapshotSource)
    kept_files = fresh.files()
    assert (fresh_source._files is None) == (kept is not None)
    # The same plan and rows as a scan on the full index (files() is cached now).
    again = lakecore.open(str(root)).snapshot()
    again.files()
    reference = again.scan(where)
    assert reference.explain() == planned
    assert kept_files.equals(reference.files())
    assert (
        scan.to_arrow()
        .sort_by("_hoodie_record_key")
        .equals(reference.to_arrow().sort_by("_hoodie_record_key"))
    )


def _partitions_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n: int) -> Path:
    """The trips table plus ``n`` one-row partitions, its metadata table compacted into base
    HFiles of ~4 KiB blocks (so the block index can leave most of them unread)."""
    root = copy_corpus_table(V8_TRIPS, tmp_path)
    data = lakecore.open(str(root)).to_arrow()
    data = data.drop_columns([c for c in data.column_names if c.startswith("_hoodie_")])
    rows = pa.concat_tables([data.slice(0, 1)] * n)
    for column, values in (
        ("uuid", [f"N{i:05d}" for i in range(n)]),
        ("city", [f"c{i:03d}" for i in range(n)]),
    ):
        i = rows.schema.get_field_index(column)
        rows = rows.set_column(i, rows.schema.field(i), pa.array(values))
    monkeypatch.setattr(maintain, "MAX_DELTA_COMMITS", 1)
    monkeypatch.setattr(mdt_table, "write_hfile", functools.partial(_small_blocks))
    lakecore.open(str(root)).append(rows)
    # lakecore compacts before completing the delta commit that triggered it, so that commit's
    # log stays in the latest slice: one more small write compacts it into the base HFile.
    lakecore.open(str(root)).append(rows.slice(0, 1))
    monkeypatch.undo()
    hfiles = list((root / ".hoodie/metadata/column_stats").glob("*.hfile"))
    assert hfiles, "the metadata table was not compacted"
    return root


def _latest_base_files(root: Path) -> list[Path]:
    """The newest base HFile of each ``column_stats`` file group."""
    newest: dict[str, Path] = {}
    for path in sorted((root / ".hoodie/metadata/column_stats").glob("*.hfile")):
        newest[path.name.split("_", 1)[0]] = path  # names end with the instant: sorted last
    return list(newest.values())


def _small_blocks(*args: Any, **kwargs: Any) -> bytes:
    from lakecore_hudi.mdt.hfile_writer import write_hfile

    return write_hfile(*args, **{**kwargs, "block_size": 4096})


def _column_stats_bytes(
    root: Path, monkeypatch: pytest.MonkeyPatch, where: str | None
) -> tuple[dict[str, int], pa.Table]:
    """Bytes a scan's planning read from ``column_stats`` base HFiles and log files."""
    table = lakecore.open(str(root))
    storage_type = type(table.storage)
    real_read = storage_type.read
    read = {"hfile": 0, "log": 0}

    def counting(self: Any, path: str, start: int | None = None, end: int | None = None) -> Any:
        data = real_read(self, path, start, end)
        if ".hoodie/metadata/column_stats/" in path:
            read["hfile" if path.endswith(".hfile") else "log"] += len(data)
        return data

    monkeypatch.setattr(storage_type, "read", counting)
    try:
        scan = table.scan(where)
        files = scan.reading_files()
    finally:
        monkeypatch.undo()
    return read, files


def test_a_one_partition_scan_reads_a_fraction_of_the_column_stats(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _partitions_table(tmp_path, monkeypatch, 200)
    base = sum(p.stat().st_size for p in _latest_base_files(root))
    whole, _ = _column_stats_bytes(root, monkeypatch, "fare > 0")  # no partition predicate
    one, files = _column_stats_bytes(root, monkeypatch, "city = 'c007' AND fare > 0")
    assert files.num_rows == 1
    assert whole["hfile"] == base
    # Two ~105 KB files: their 4 KiB trailers, block indexes and a block or two each.
    assert one["hfile"] < base / 4, (one, whole)
    assert one["log"] == whole["log"] > 0  # log files are read whole, as before
    print(f"column_stats bytes read: one partition {one}, whole partition {whole}")
    # The stats of the planned partition are the full index's.
    source = _source(root)
    scan = lakecore.open(str(root)).scan("city = 'c007'")
    assert scan.predicate is not None
    scoped = source.files_for_predicate(scan.predicate)
    full = source.files()
    rows = [i for i, s in enumerate(source.state.slices) if s.partition_path == "city=c007"]
    assert len(rows) == 1
    assert scoped.take(rows).equals(full.take(rows))
    assert _known(full.take(rows), fi.MIN) == 1


def test_one_partition_of_corpus_tables_without_column_stats_reads_its_footers_only() -> None:
    cases = opened = 0
    for root in sorted(p for p in HUDI.iterdir() if p.name not in MDT_TABLES):
        try:
            state = _source(root).state
        except lakecore.LakecoreError:
            continue  # the corpus holds tables lakecore refuses (tested elsewhere)
        partitions = sorted({s.partition_path for s in state.slices})
        if len(partitions) < 2:
            continue
        storage = open_storage(str(root))
        full = build_file_index(storage, state)
        first = partitions[0]
        read: list[str] = []
        real = storage.open_input

        def opening(path: str, real: Any = real, read: list[str] = read) -> Any:
            read.append(path)
            return real(path)

        storage.open_input = opening  # type: ignore[method-assign]
        scoped = build_file_index(storage, state, partitions=frozenset([first]))
        inside = [i for i, s in enumerate(state.slices) if s.partition_path == first]
        assert scoped.take(inside).equals(full.take(inside)), root.name
        assert all(p.startswith(first + "/") for p in read), (root.name, read)
        cases += 1
        opened += bool(read)
    assert cases >= 5
    assert opened >= 3  # footers were read, of the one partition only
