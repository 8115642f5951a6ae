"""``partition_stats`` on commit takes the untouched files' ranges from ``column_stats``.

- ``hfile_range.read_prefixed_cells`` returns exactly the cells a full read returns for the
  same row prefixes (multi-block files lakecore writes, every HFile of the corpus metadata
  tables), reading only the blocks that hold them;
- ``stored_file_ranges.record_range`` reads every live ``column_stats`` record of the corpus
  back as the range the file itself gives (index versions 1 and 2), and version-1 records of
  every kind round-trip;
- lakecore writes into copies of the corpus tables compute, at every commit, exactly the
  partition-stats records the files give (the previous computation), most untouched files
  served by the metadata table;
- a one-row upsert into an 80-file partition opens the files it wrote, not every file of the
  partition (the attack test pins the count; here also after a metadata compaction, through
  the base HFile's block index).
"""

from __future__ import annotations

import datetime as dt
import glob
import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from lakecore_hudi.log.format import BlockType, read_log_blocks
from lakecore_hudi.mdt import column_stats_records as csr
from lakecore_hudi.mdt import partition_stats_records as psr
from lakecore_hudi.mdt.file_ranges import file_ranges
from lakecore_hudi.mdt.hfile import read_hfile
from lakecore_hudi.mdt.hfile_range import read_prefixed_cells
from lakecore_hudi.mdt.hfile_writer import write_hfile
from lakecore_hudi.mdt.stats_keys import column_stats_key
from lakecore_hudi.mdt.stats_values import ColumnRange, ValueKind
from lakecore_hudi.mdt.stats_wrappers import stats_payload
from lakecore_hudi.mdt.stored_file_ranges import record_range
from lakecore_hudi.table_config import read_table_config
from lakecore_hudi.timeline.active import load_timeline
from lakecore_hudi.view import data_files

import lakecore
from lakecore.storage import open_storage
from tests.hudi.write.helpers import CORPUS, copy_corpus_table, files_on_disk, upsert
from tests.hudi.write.mdt_table_checks import operations

from .mdt_stats_checks import exact, index_defs, live_records

V8_TRIPS = "mor_avro_v8_trips_8i3u1d"


def _cells(n: int) -> list[tuple[bytes, bytes]]:
    keys = sorted(
        column_stats_key(f"p={p}", f"file-{f}.parquet", f"c{c}")
        for p in range(4)
        for f in range(n)
        for c in range(3)
    )
    return [(k.encode(), f"value of {k}".encode() * 3) for k in keys]


@pytest.mark.parametrize("codec", ["GZ", "NONE"])
def test_a_prefix_read_equals_a_full_read_of_a_multi_block_hfile(codec: str) -> None:
    cells = _cells(40)
    data = write_hfile(cells, {"schema": b"{}"}, codec=codec, block_size=512)
    assert read_hfile(data, "f") == cells
    read: list[int] = []

    def reader(start: int, end: int) -> bytes:
        read.append(end - start)
        return data[start:end]

    rows = [r for r, _ in cells]
    prefixes = {r[:24] for r in rows} | {rows[0][:30], rows[-1], b"", b"zzz", rows[5][:3]}
    for prefix in sorted(prefixes):
        read.clear()
        found, info = read_prefixed_cells(reader, len(data), "f", [prefix])
        assert found == [c for c in cells if c[0].startswith(prefix)], prefix
        assert info[b"schema"] == b"{}"
        if len(prefix) >= 24:  # one (column, partition): a few blocks, not the file
            assert sum(read) < len(data) / 4, (prefix, sum(read), len(data))
    two = [rows[0][:24], rows[-1][:24]]
    found, _ = read_prefixed_cells(reader, len(data), "f", two)
    assert found == [c for c in cells if c[0].startswith(tuple(two))]
    empty = write_hfile([], {}, codec=codec)
    found, _ = read_prefixed_cells(lambda s, e: empty[s:e], len(empty), "e", [b"a"])
    assert found == []


def test_a_prefix_read_equals_a_full_read_of_every_corpus_metadata_hfile() -> None:
    rng = random.Random(7)
    checked = 0
    for path in sorted(glob.glob(str(CORPUS / "hudi/*/.hoodie/metadata/*/*"))):
        contents: list[bytes] = []
        raw = Path(path).read_bytes()
        if path.endswith(".hfile"):
            contents.append(raw)
        elif ".log." in path:
            blocks = read_log_blocks(raw, path, skip_corrupt=True)
            contents += [bytes(b.content) for b in blocks if b.block_type == BlockType.HFILE_DATA]
        for data in contents:
            cells = read_hfile(data, path)
            rows = [r for r, _ in cells] or [b"none"]

            def reader(start: int, end: int, data: bytes = data) -> bytes:
                return data[start:end]

            for _ in range(5):
                prefix = rng.choice(rows)[: rng.randint(0, 40)]
                found, _ = read_prefixed_cells(reader, len(data), path, [prefix])
                assert found == [c for c in cells if c[0].startswith(prefix)], (path, prefix)
                checked += 1
    assert checked >= 250  # 55 HFiles (base files and log blocks) in the corpus today


def test_every_corpus_column_stats_record_reads_back_as_its_file() -> None:
    tables = [p for p in sorted((CORPUS / "hudi").iterdir()) if _has_column_stats(p)]
    assert len(tables) == 6
    versions = set()
    checked = 0
    for root in tables:
        storage = open_storage(str(root))
        config = read_table_config(storage)
        completed = {i.timestamp for i in load_timeline(storage, config).completed()}
        columns = csr.columns_to_index(config, index_defs(storage), None)
        kinds = psr.schema_kinds(config, None, columns)
        paths = {
            f.info.path.rsplit("/", 1)[-1]: f.info.path for f in data_files(storage.list_all(""))
        }
        by_file: dict[str, dict[str, Any]] = {}
        for record in live_records(root, csr.PARTITION, csr.merge).values():
            payload = record["ColumnStatsMetadata"]
            by_file.setdefault(payload["fileName"], {})[payload["columnName"]] = payload
            versions.add(payload.get("valueType") is not None)
        for name, payloads in by_file.items():
            if name not in paths:
                continue  # cleaned file whose records Hudi keeps until compaction
            ranges = file_ranges(storage, paths[name], columns, completed.__contains__)
            assert sorted(payloads) == sorted(r.column for r in ranges), name
            for r in ranges:
                stored = record_range(payloads[r.column], kinds.get(r.column))
                assert stored is not None, (name, r.column)
                assert _comparable(stored) == _comparable(r), (root.name, name, r.column)
                checked += 1
    assert versions == {True, False}
    assert checked > 300


def _has_column_stats(root: Path) -> bool:
    props = (root / ".hoodie/hoodie.properties").read_text()
    return "column_stats" in props.split("hoodie.table.metadata.partitions=")[-1].split("\n")[0]


def _comparable(r: ColumnRange) -> Any:
    """A range for comparison. A version-1 range without bounds has no kind of its own
    (nothing is wrapped): its kind is then not compared; it never changes a record."""
    kind = None if r.min_value is None and r.max_value is None else r.kind
    bounds = exact((r.min_value, r.max_value))
    sizes = (r.total_size, r.total_uncompressed_size)
    return (r.name, r.column, *bounds, r.null_count, r.value_count, *sizes, kind)


UTC = dt.timezone.utc
V1_CASES = [
    (ValueKind("TIMESTAMP_MICROS"), dt.datetime(1969, 12, 31, 23, 59, 59, 1, tzinfo=UTC)),
    (ValueKind("TIMESTAMP_MILLIS"), dt.datetime(2024, 2, 29, 1, 2, 3, 4000, tzinfo=UTC)),
    (ValueKind("LOCAL_TIMESTAMP_MICROS"), dt.datetime(2030, 1, 1, 0, 0, 0, 7)),
    (ValueKind("TIME_MICROS"), dt.time(23, 59, 59, 999999)),
    (ValueKind("TIME_MILLIS"), dt.time(1, 2, 3, 4000)),
    (ValueKind("DATE"), dt.date(1969, 12, 31)),
    (ValueKind("DECIMAL", 15, 2), Decimal("-99999999.99")),
    (ValueKind("INT"), -(2**31)),
    (ValueKind("LONG"), 2**40),
    (ValueKind("DOUBLE"), -0.0),
    (ValueKind("FLOAT"), 1.5),
    (ValueKind("STRING"), "\U0001f600x"),
    (ValueKind("BYTES"), b"\x00\xff"),
    (ValueKind("BOOLEAN"), True),
]


@pytest.mark.parametrize(("kind", "value"), V1_CASES, ids=lambda v: str(v))
def test_version_1_records_read_back_as_the_range_they_were_written_from(
    kind: ValueKind, value: Any
) -> None:
    r = ColumnRange("f.parquet", "c", value, value, 1, 3, 10, 20, kind)
    payload = stats_payload(r, version2=False)
    back = record_range(payload, kind)
    assert back is not None
    assert stats_payload(back, version2=False) == payload
    assert back.kind == kind
    if kind.name != "DECIMAL":  # a version-1 decimal comes back at scale 15, equal in value
        assert exact(back.min_value) == exact(value)
    # An older file of a narrower type (INT under a LONG schema) keeps its own type.
    if kind == ValueKind("INT"):
        assert record_range(payload, ValueKind("LONG")) == back


def _compare_every_commit(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Make every partition-stats computation also run from the files alone and compare
    (``counts["comparing"]`` is 1 during that second run)."""
    real_stored = psr._stored_ranges
    real_commit = psr.commit_records
    counts = {"commits": 0, "stored": 0, "comparing": 0, "looking_up": 0}

    def stored(*args: Any) -> Any:
        if counts["comparing"]:
            return {}
        counts["looking_up"] = 1
        try:
            found = real_stored(*args)
        finally:
            counts["looking_up"] = 0
        counts["stored"] += len(found)
        return found

    def commit_records(ctx: Any) -> list[dict[str, Any]]:
        mine = real_commit(ctx)
        counts["comparing"] = 1
        try:
            files = real_commit(ctx)
        finally:
            counts["comparing"] = 0
        assert exact(mine) == exact(files), ctx.instant
        counts["commits"] += bool(mine)
        return mine

    monkeypatch.setattr(psr, "_stored_ranges", stored)
    monkeypatch.setattr(psr, "commit_records", commit_records)
    return counts


@pytest.mark.parametrize(
    "name",
    [
        V8_TRIPS,
        pytest.param("cow_v9_txns_simple_overwrite", marks=pytest.mark.slow),
        pytest.param("mor_avro_v9_lance_nonhivestyle", marks=pytest.mark.slow),
        pytest.param("cow_v9_timebasedkeygen_unixtimestamp", marks=pytest.mark.slow),
    ],
)
def test_every_commit_computes_what_the_files_give(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = copy_corpus_table(name, tmp_path)
    counts = _compare_every_commit(monkeypatch)
    done = []
    for op, run in operations(lakecore.open(str(root))):
        run()
        done.append(op)
    assert done[:3] == ["insert", "upsert", "delete"]
    assert counts["commits"] >= 3
    assert counts["stored"] > 0


def _many_files(tmp_path: Path) -> tuple[Path, pa.Table]:
    root = copy_corpus_table(V8_TRIPS, tmp_path)
    props = root / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text() + "hoodie.parquet.max.file.size=20000\n")
    data = lakecore.open(str(root)).to_arrow()
    data = data.drop_columns([c for c in data.column_names if c.startswith("_hoodie_")])
    many = pa.concat_tables([data.slice(0, 1)] * 1500)
    for column, values in (("uuid", [f"B{i:04d}" for i in range(1500)]), ("city", ["lima"] * 1500)):
        i = many.schema.get_field_index(column)
        many = many.set_column(i, many.schema.field(i), pa.array(values))
    lakecore.open(str(root)).append(many)
    assert len(files_on_disk(root)["city=lima"]) > 40
    return root, many


def _one_row(many: pa.Table, ts: int) -> pa.Table:
    row = many.slice(0, 1)
    i = row.schema.get_field_index("ts")
    return row.set_column(i, row.schema.field(i), pa.array([ts], row.schema.field(i).type))


@pytest.mark.slow
def test_one_row_upserts_across_a_metadata_compaction_open_only_their_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, many = _many_files(tmp_path)
    counts = _compare_every_commit(monkeypatch)
    table = lakecore.open(str(root))
    storage_type = type(table.storage)
    real_open, real_read = storage_type.open_input, storage_type.read
    opened: list[str] = []
    read: dict[str, int] = {}  # column_stats base HFile -> bytes the last lookup read

    def open_input(self: Any, path: str) -> Any:
        if not path.startswith(".hoodie") and not counts["comparing"]:
            opened.append(path)
        return real_open(self, path)

    def ranged_read(self: Any, path: str, start: int | None = None, end: int | None = None) -> Any:
        data = real_read(self, path, start, end)
        if counts["looking_up"] and "/column_stats/" in path and path.endswith(".hfile"):
            read[path] = read.get(path, 0) + len(data)
        return data

    monkeypatch.setattr(storage_type, "open_input", open_input)
    monkeypatch.setattr(storage_type, "read", ranged_read)
    per_upsert = []
    for n in range(12):  # past hoodie.metadata.compact.max.delta.commits (10)
        opened.clear()
        read.clear()
        upsert(lakecore.open(str(root)), _one_row(many, 2**50 + n))
        per_upsert.append(len(opened))
    monkeypatch.undo()
    assert max(per_upsert) < 10, per_upsert
    # The last lookups read the base HFiles of a metadata compaction: their trailer, block
    # index and the blocks of the touched partition's records (most of these small files:
    # ~80 of the table's ~90 files are in it), never the whole file.
    sizes = {path: (root / path).stat().st_size for path in read}
    assert any(size > 30_000 for size in sizes.values()), sizes
    for path, size in sizes.items():
        assert read[path] < size, (path, read[path], size)
    assert counts["stored"] > 40 * 12
