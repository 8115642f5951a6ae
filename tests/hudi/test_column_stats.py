"""Column stats from the metadata table and from Parquet footers, checked against the data.

The corpus tables with a metadata table prove the decoding against reality: every statistic
read from ``column_stats`` must equal what the data file itself holds.
"""

from __future__ import annotations

import datetime as dt
import io
import shutil
import struct
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from lakecore_hudi.log.blocks import decode_data_block, encode_rollback_command_block
from lakecore_hudi.log.format import BlockType, HeaderKey, encode_log_block, read_log_blocks
from lakecore_hudi.mdt.column_stats import (
    load_column_stats,
    read_column_stats,
    stats_table,
    typed_array,
)
from lakecore_hudi.mdt.footer_stats import footer_stats
from lakecore_hudi.mdt.hfile import read_file_info, read_hfile
from lakecore_hudi.mdt.records import (
    ColumnStats,
    MetadataRecord,
    column_stats,
    decode_avro_block,
    decode_records,
    merge_column_stats,
    parse_schema,
    unwrap_stat_value,
)
from lakecore_hudi.table_config import read_table_config

from lakecore.errors import CorruptTableError, UnsupportedFeatureError
from lakecore.storage import open_storage
from tests.corpus import CORPUS

from .test_hfile import build_hfile

HUDI = CORPUS / "hudi"
MDT_TABLES = (
    "cow_v9_timebasedkeygen_unixtimestamp",
    "cow_v9_txns_simple_overwrite",
    "mor_avro_v8_trips_8i3u1d",
    "mor_avro_v9_lance_nonhivestyle",
    "mor_avro_v9_nonpartitioned_rollback",
    "mor_avro_v9_txns_nonpart_meta",
)
META = "mor_avro_v9_txns_nonpart_meta"
MDT_COL_STATS = ".hoodie/metadata/column_stats"


@pytest.fixture(scope="module")
def hudi() -> Path:
    if not HUDI.is_dir():
        pytest.fail(f"corpus not found at {HUDI}; set LAKECORE_CORPUS")
    return HUDI


def _data_files(root: Path, pattern: str) -> list[Path]:
    return sorted(p for p in root.rglob(pattern) if ".hoodie" not in p.relative_to(root).parts)


def _copy(root: Path, tmp_path: Path) -> Path:
    # copyfile, not copy2: the corpus files are read-only and the tests append to copies.
    return Path(shutil.copytree(root, tmp_path / root.name, copy_function=shutil.copyfile))


def _stats(root: Path) -> dict[str, dict[str, ColumnStats]]:
    storage = open_storage(str(root))
    stats = load_column_stats(storage, read_table_config(storage))
    assert stats is not None
    return stats


def _flat(row: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in row.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = value
    return out


def _leaves(data: pa.Table) -> pa.Table:
    while any(pa.types.is_struct(f.type) for f in data.schema):
        data = data.flatten()
    return data


def _check_row(row: dict[str, Any], data: pa.Table) -> tuple[int, int]:
    """Assert a stats row is sound for the data; return (columns equal to the data's own
    stats, columns with unknown bounds but a known null count)."""
    assert row["record_count"] == data.num_rows
    lows, highs, null_counts = (_flat(row[k]) for k in ("min", "max", "null_count"))
    known = unknown = 0
    data = _leaves(data)
    for name in data.column_names:
        column = data.column(name)
        nulls, low, high = null_counts.get(name), lows.get(name), highs.get(name)
        if nulls is None:
            assert low is None and high is None
            continue
        assert nulls == column.null_count, name
        extremes = pc.min_max(column).as_py()
        if low is None and high is None and extremes["min"] is not None:
            unknown += 1
            continue
        assert (low, high) == (extremes["min"], extremes["max"]), name
        known += 1
    return known, unknown


# --------------------------------------------------------------------------- corpus


def test_metadata_stats_equal_base_file_data(hudi: Path) -> None:
    files = known = unknown = 0
    for name in MDT_TABLES:
        root = hudi / name
        stats = _stats(root)
        # Hudi keeps no column stats for Lance base files: that table has no Parquet here.
        for path in _data_files(root, "*.parquet"):
            schema = pq.read_schema(path).remove_metadata()
            table = stats_table([path.name], stats, schema)
            assert table.schema.field("min").type == pa.struct(list(schema))
            row = table.to_pylist()[0]
            assert row["file_name"] == path.name
            k, u = _check_row(row, pq.read_table(path))
            files, known, unknown = files + 1, known + k, unknown + u
    assert (files, known, unknown) == (29, 413, 0)


def test_read_column_stats_for_a_whole_table(hudi: Path) -> None:
    root = hudi / META
    parquet = _data_files(root, "*.parquet")
    schema = pq.read_schema(parquet[0]).remove_metadata()
    storage = open_storage(str(root))
    config = read_table_config(storage)
    table = read_column_stats(
        storage, config, [str(p.relative_to(root)) for p in parquet], schema=schema
    )
    assert table is not None and table.num_rows == len(parquet) == 7
    known = sum(
        _check_row(r, pq.read_table(p))[0] for p, r in zip(parquet, table.to_pylist(), strict=True)
    )
    assert known == 7 * 15
    everything = read_column_stats(storage, config)
    assert everything is not None
    assert everything.column("file_name").to_pylist() == sorted(_stats(root))


def test_metadata_stats_equal_log_file_data(hudi: Path) -> None:
    files = 0
    for name in MDT_TABLES:
        root = hudi / name
        stats = _stats(root)
        for path in _data_files(root, ".*.log.*"):
            blocks = read_log_blocks(path.read_bytes(), str(path))
            parts = [decode_data_block(b) for b in blocks if b.block_type == BlockType.AVRO_DATA]
            data = pa.concat_tables(parts) if parts else None
            per_column = stats[path.name]
            for column, stat in per_column.items():
                values = data.column(column) if data is not None else pa.array([], pa.null())
                extremes = pc.min_max(values).as_py() if len(values) else {"min": None, "max": None}
                got = (stat.min_value, stat.max_value, stat.null_count, stat.value_count)
                want = (extremes["min"], extremes["max"], values.null_count, len(values))
                assert got == want, (path.name, column)
            files += 1
    assert files == 11


def test_tables_without_metadata_table(hudi: Path) -> None:
    tables = [p for p in sorted(hudi.iterdir()) if p.name not in MDT_TABLES]
    for root in tables:
        storage = open_storage(str(root))
        assert read_column_stats(storage, read_table_config(storage)) is None, root.name
    assert len(tables) == 14


def test_column_stats_partition_missing_or_inflight(hudi: Path) -> None:
    storage = open_storage(str(hudi / META))
    props = dict(read_table_config(storage).raw)
    assert read_column_stats(storage, props) is not None
    without = {**props, "hoodie.table.metadata.partitions": "files,record_index"}
    assert read_column_stats(storage, without) is None
    building = {**props, "hoodie.table.metadata.partitions.inflight": "column_stats"}
    assert read_column_stats(storage, building) is None


def test_unknown_files_get_unknown_stats(hudi: Path) -> None:
    root = hudi / META
    storage = open_storage(str(root))
    schema = pq.read_schema(_data_files(root, "*.parquet")[0]).remove_metadata()
    config = read_table_config(storage)
    table = read_column_stats(storage, config, ["x/nope.parquet"], schema=schema)
    assert table is not None
    row = table.to_pylist()[0]
    assert row["file_name"] == "nope.parquet" and row["record_count"] is None
    assert len(row["min"]) == len(schema) and set(row["min"].values()) == {None}


def test_footer_stats_equal_file_data(hudi: Path) -> None:
    files = known = unknown = 0
    for root in sorted(hudi.iterdir()):
        storage = open_storage(str(root))
        for path in _data_files(root, "*.parquet"):
            schema = pq.read_schema(path).remove_metadata()
            table = footer_stats(storage, [str(path.relative_to(root))], schema)
            row = table.to_pylist()[0]
            assert row["path"] == str(path.relative_to(root))
            k, u = _check_row(row, pq.read_table(path))
            files, known, unknown = files + 1, known + k, unknown + u
    # Every leaf has exact bounds, nested struct leaves included (cow_v6_complexkeygen_*).
    assert (files, known, unknown) == (80, 1475, 0)


def test_footer_and_metadata_stats_agree(hudi: Path) -> None:
    compared = 0
    for name in MDT_TABLES:
        root = hudi / name
        storage = open_storage(str(root))
        stats = _stats(root)
        for path in _data_files(root, "*.parquet"):
            schema = pq.read_schema(path).remove_metadata()
            [f] = footer_stats(storage, [str(path.relative_to(root))], schema).to_pylist()
            [m] = stats_table([path.name], stats, schema).to_pylist()
            assert f["record_count"] == m["record_count"]
            for kind in ("min", "max", "null_count"):
                for column, value in m[kind].items():
                    if value is not None:
                        assert f[kind][column] == value, (path.name, kind, column)
                        compared += 1
    assert compared == 413 * 3


# ------------------------------------------------------- metadata-table state changes


def _timeline(root: Path) -> Path:
    return root / ".hoodie/metadata/.hoodie/timeline"


def test_uncompleted_delta_commit_is_ignored(hudi: Path, tmp_path: Path) -> None:
    root = _copy(hudi / META, tmp_path)
    before = _stats(root)
    instant = "20260307162716477"
    [completed] = _timeline(root).glob(f"{instant}_*.deltacommit")
    completed.unlink()
    after = _stats(root)
    gone = {name for name in before if instant in name}
    assert gone and set(before) - set(after) == gone


def test_rollback_command_block_drops_its_target(hudi: Path, tmp_path: Path) -> None:
    root = _copy(hudi / META, tmp_path)
    before = _stats(root)
    target, rollback = "20260307162716477", "20260307162799999"
    for group in ("col-stats-0000-0", "col-stats-0001-0"):
        log = root / MDT_COL_STATS / f".{group}_{rollback}.log.1_0-1-1"
        log.write_bytes(encode_rollback_command_block(rollback, target))
    _complete(root, rollback)
    after = _stats(root)
    assert set(before) - set(after) == {name for name in before if target in name}


def test_pending_compaction_reads_the_same(hudi: Path, tmp_path: Path) -> None:
    """With the compaction undone, the base HFile is invisible and every log counts instead:
    the stats must not change (log files split wrongly between slices would double counts)."""
    for name, compaction in (
        ("mor_avro_v8_trips_8i3u1d", "20251220210130942"),
        (META, "20260307162712050"),
    ):
        root = _copy(hudi / name, tmp_path)
        before = _stats(root)
        [completed] = _timeline(root).glob(f"{compaction}_*.commit")
        completed.unlink()
        assert _stats(root) == before, name


def test_corrupt_metadata_hfile_names_the_file(hudi: Path, tmp_path: Path) -> None:
    root = _copy(hudi / META, tmp_path)
    [base] = (root / MDT_COL_STATS).glob("col-stats-0000-0_*.hfile")
    base.write_bytes(base.read_bytes()[:-100])
    storage = open_storage(str(root))
    with pytest.raises(CorruptTableError, match=base.name):
        read_column_stats(storage, read_table_config(storage))


def _complete(root: Path, instant: str) -> None:
    timeline = _timeline(root)
    (timeline / f"{instant}.deltacommit.requested").write_bytes(b"")
    (timeline / f"{instant}.deltacommit.inflight").write_bytes(b"")
    (timeline / f"{instant}_{int(instant) + 1}.deltacommit").write_bytes(b"")


def _base_records(root: Path) -> tuple[str, dict[tuple[str, str], MetadataRecord]]:
    [base] = (root / MDT_COL_STATS).glob("col-stats-0000-0_*.hfile")
    data = base.read_bytes()
    schema_json = read_file_info(data, base.name)[b"schema"].decode()
    records = decode_records(read_hfile(data, base.name), parse_schema(schema_json, ""), "")
    by_file = {}
    for r in records:
        s = r.record["ColumnStatsMetadata"]
        if s["fileName"].endswith(".parquet"):
            by_file[(s["fileName"], s["columnName"])] = r
    return schema_json, by_file


def _changed(record: MetadataRecord, **stats: Any) -> tuple[bytes, dict[str, Any]]:
    new = dict(record.record)
    new["ColumnStatsMetadata"] = {**new["ColumnStatsMetadata"], **stats}
    return record.key.encode(), new


def test_new_log_records_merge_like_hudi(
    hudi: Path, tmp_path: Path, *, pending: bool = False
) -> None:
    root = _copy(hudi / META, tmp_path)
    schema_json, records = _base_records(root)
    (deleted, merged, tight) = sorted(
        k for k in records if k[1] in ("txn_ts", "currency", "merchant_name")
    )[:3]
    long_wrapper = "org.apache.hudi.avro.model.LongWrapper"
    string_wrapper = "org.apache.hudi.avro.model.StringWrapper"
    updates = [
        _changed(records[deleted], isDeleted=True),
        _changed(
            records[merged],
            minValue=_wrapper_for(records[merged], -1, "A", long_wrapper, string_wrapper),
            maxValue=_wrapper_for(records[merged], 2**40, "zzz", long_wrapper, string_wrapper),
            valueCount=5,
            nullCount=2,
        ),
        _changed(
            records[tight],
            minValue=_wrapper_for(records[tight], 7, "M", long_wrapper, string_wrapper),
            maxValue=_wrapper_for(records[tight], 8, "N", long_wrapper, string_wrapper),
            valueCount=1,
            nullCount=0,
            isTightBound=True,
        ),
    ]
    parsed = parse_schema(schema_json, "")
    cells = []
    for key, record in sorted(updates, key=lambda u: u[0]):
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, record)
        cells.append((key, out.getvalue()))
    instant = "20260307162799999"
    header = {HeaderKey.INSTANT_TIME: instant, HeaderKey.SCHEMA: schema_json}
    block = encode_log_block(BlockType.HFILE_DATA, header, build_hfile(cells, codec="GZ"))
    (root / MDT_COL_STATS / f".col-stats-0000-0_{instant}.log.1_0-1-1").write_bytes(block)
    before = _stats(hudi / META)
    if pending:
        (_timeline(root) / f"{instant}.deltacommit.requested").write_bytes(b"")
        assert _stats(root) == before
        return
    _complete(root, instant)
    after = _stats(root)
    assert deleted[1] not in after[deleted[0]]
    old, new = before[merged[0]][merged[1]], after[merged[0]][merged[1]]
    low, high = (-1, 2**40) if merged[1] == "txn_ts" else ("A", "zzz")
    assert (new.min_value, new.max_value) == (low, high)
    assert old.value_count is not None and old.null_count is not None
    assert (new.value_count, new.null_count) == (old.value_count + 5, old.null_count + 2)
    got = after[tight[0]][tight[1]]
    expected = (7, 8) if tight[1] == "txn_ts" else ("M", "N")
    assert (got.min_value, got.max_value, got.value_count, got.is_tight_bound) == (
        *expected,
        1,
        True,
    )
    untouched = {k for k in records if k not in (deleted, merged, tight)}
    assert all(before[f][c] == after[f][c] for f, c in untouched)


def _wrapper_for(
    record: MetadataRecord, long_value: int, text: str, long_wrapper: str, string_wrapper: str
) -> tuple[str, dict[str, Any]]:
    if record.record["ColumnStatsMetadata"]["columnName"] == "txn_ts":
        return (long_wrapper, {"value": long_value})
    return (string_wrapper, {"value": text})


# ------------------------------------------------------------------ value decoding


def _wrapped(name: str, value: Any) -> tuple[str, dict[str, Any]]:
    return (f"org.apache.hudi.avro.model.{name}", {"value": value})


UTC = dt.timezone.utc


@pytest.mark.parametrize(
    ("wrapper", "raw", "value_type", "expected"),
    [
        ("IntWrapper", 5, None, 5),
        ("StringWrapper", "x", None, "x"),
        ("DateWrapper", 19737, None, dt.date(2024, 1, 15)),
        ("LocalDateWrapper", 0, None, dt.date(1970, 1, 1)),
        ("TimestampMicrosWrapper", 1_500_000, None, dt.datetime(1970, 1, 1, 0, 0, 1, 500000, UTC)),
        ("TimeMicrosWrapper", 3_600_000_001, None, dt.time(1, 0, 0, 1)),
        ("DecimalWrapper", Decimal("1.500000000000000"), None, Decimal("1.5")),
        ("DecimalWrapper", (150).to_bytes(2, "big"), None, Decimal("1.5E-13")),
        ("BytesWrapper", (-12345).to_bytes(3, "big", signed=True), (10, "9,2"), Decimal("-123.45")),
        ("IntWrapper", 19737, (12, None), dt.date(2024, 1, 15)),
        ("IntWrapper", 3_600_001, (13, None), dt.time(1, 0, 0, 1000)),
        ("LongWrapper", 1_000, (15, None), dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)),
        ("LongWrapper", 1_000, (16, None), dt.datetime(1970, 1, 1, 0, 0, 0, 1000, UTC)),
        ("LongWrapper", 1_999, (17, None), None),
        ("LongWrapper", 2_000, (17, None), dt.datetime(1970, 1, 1, 0, 0, 0, 2, UTC)),
        ("LongWrapper", 1_000, (19, None), dt.datetime(1970, 1, 1, 0, 0, 0, 1000)),
        ("StringWrapper", "6b1f-uuid", (11, None), "6b1f-uuid"),
        ("LongWrapper", 7, (4, None), 7),
        ("LongWrapper", 7, (0, None), 7),
    ],
)
def test_unwrap_stat_value(
    wrapper: str, raw: Any, value_type: tuple[int, str | None] | None, expected: Any
) -> None:
    info = (
        None
        if value_type is None
        else {"typeOrdinal": value_type[0], "additionalInfo": value_type[1]}
    )
    assert unwrap_stat_value(_wrapped(wrapper, raw), info) == expected


@pytest.mark.parametrize(
    ("wrapped", "info"),
    [
        (_wrapped("IntWrapper", 1), {"typeOrdinal": 99}),
        (_wrapped("BytesWrapper", b"\x01"), {"typeOrdinal": 10, "additionalInfo": None}),
        (_wrapped("MysteryWrapper", 1), None),
        (("org.apache.hudi.avro.model.ArrayWrapper", {"wrappedValues": []}), None),
        ({"value": 1}, None),
    ],
)
def test_unreadable_stat_values(wrapped: Any, info: Any) -> None:
    with pytest.raises(ValueError):
        unwrap_stat_value(wrapped, info)


def _cs(low: Any, high: Any, nulls: int | None, count: int | None, **flags: bool) -> ColumnStats:
    return ColumnStats(
        "f",
        "c",
        low,
        high,
        nulls,
        count,
        10,
        20,
        **{"is_deleted": False, "is_tight_bound": False, **flags},
    )


def test_merge_column_stats() -> None:
    merged = merge_column_stats(_cs(3, 9, 1, 10), _cs(None, 12, 2, 5))
    assert (merged.min_value, merged.max_value, merged.null_count, merged.value_count) == (
        3,
        12,
        3,
        15,
    )
    assert merge_column_stats(_cs(3, 9, 1, 10), _cs(5, 6, 0, 1, is_tight_bound=True)).min_value == 5
    assert merge_column_stats(_cs(3, 9, 1, 10), _cs(0, 0, 0, 0, is_deleted=True)).is_deleted
    assert merge_column_stats(_cs(0, 0, 0, 0, is_deleted=True), _cs(4, 4, 0, 1)).min_value == 4
    assert merge_column_stats(_cs(3, "z", None, 1), _cs("a", 9, 0, 1)).min_value is None
    assert merge_column_stats(None, _cs(1, 1, 0, 1)) == _cs(1, 1, 0, 1)


def test_column_stats_record_without_payload() -> None:
    record = MetadataRecord("k", 3, {"ColumnStatsMetadata": None})
    with pytest.raises(CorruptTableError, match=r"where\.hfile"):
        column_stats(record, "where.hfile")
    assert column_stats(MetadataRecord("k", 2, {}), "where.hfile") is None


def test_avro_data_block_of_metadata_records(hudi: Path) -> None:
    [base] = (hudi / META / MDT_COL_STATS).glob("col-stats-0000-0_*.hfile")
    data = base.read_bytes()
    schema = parse_schema(read_file_info(data, "b")[b"schema"], "b")
    records = decode_records(read_hfile(data, "b"), schema, "b")[:3]
    bodies = []
    for r in records:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, schema, {**r.record, "key": r.key})
        bodies.append(struct.pack(">i", len(out.getvalue())) + out.getvalue())
    content = struct.pack(">ii", 3, len(records)) + b"".join(bodies)
    decoded = decode_avro_block(content, schema, "a.log")
    assert [(d.key, d.type, d.record["ColumnStatsMetadata"]) for d in decoded] == [
        (r.key, r.type, r.record["ColumnStatsMetadata"]) for r in records
    ]
    with pytest.raises(CorruptTableError, match=r"a\.log"):
        decode_avro_block(content[:-3], schema, "a.log")
    with pytest.raises(UnsupportedFeatureError):
        decode_avro_block(struct.pack(">ii", 0, 0), schema, "a.log")


# ------------------------------------------------------------------ typing and footers


@pytest.mark.parametrize(
    ("values", "t", "expected"),
    [
        ([dt.datetime(2024, 1, 1, 0, 0, 0, 1500, UTC)], pa.timestamp("ms", "UTC"), [None]),
        (
            [dt.datetime(2024, 1, 1, tzinfo=UTC)],
            pa.timestamp("ms", "UTC"),
            [dt.datetime(2024, 1, 1, tzinfo=UTC)],
        ),
        ([1.5, 2.0], pa.int64(), [None, 2]),
        ([1, 2], pa.float64(), [1.0, 2.0]),
        ([Decimal("12.345")], pa.decimal128(9, 2), [None]),
        ([Decimal("12.340000000000000")], pa.decimal128(9, 2), [Decimal("12.34")]),
        ([500, 5], pa.int8(), [None, 5]),
        ([dt.datetime(2024, 1, 1, 1, tzinfo=UTC)], pa.date32(), [None]),
        ([dt.datetime(2024, 1, 1, tzinfo=UTC)], pa.date32(), [dt.date(2024, 1, 1)]),
        ([5], pa.string(), [None]),
        (["5"], pa.int64(), [None]),
        (["a", None], pa.string(), ["a", None]),
        ([None, None], pa.int32(), [None, None]),
    ],
)
def test_typed_array_is_exact_or_null(
    values: list[Any], t: pa.DataType, expected: list[Any]
) -> None:
    array = typed_array(values, t)
    assert array.type == t
    assert array.to_pylist() == expected


def test_footer_rules(tmp_path: Path) -> None:
    nan = float("nan")
    table = pa.table(
        {
            "id": pa.array([1, 2, 3, 4, 5, 6], pa.int64()),
            "x": pa.array([1.0, 2.0, nan, 0.5, 3.0, 4.0]),
            "n": pa.array([7, None, None, None, 9, None], pa.int32()),
            "s": pa.array([{"a": i, "b": str(i)} for i in range(6)]),
            "l": pa.array([[1]] * 6),
            "quiet": pa.array(["q"] * 6),
        }
    )
    pq.write_table(
        table,
        tmp_path / "f.parquet",
        row_group_size=2,
        write_statistics=["id", "x", "n", "s.a", "s.b", "l.list.element"],
    )
    (tmp_path / "g.lance").write_bytes(b"not parquet")
    (tmp_path / "bad.parquet").write_bytes(b"not parquet either")
    storage = open_storage(str(tmp_path))
    stats = footer_stats(storage, ["f.parquet", "g.lance"], table.schema)
    row, other = stats.to_pylist()
    assert row["record_count"] == 6
    # pyarrow leaves NaN out of float bounds; the planner assumes NaN may be there anyway.
    assert row["min"] == {"id": 1, "x": 0.5, "n": 7, "s": {"a": 0, "b": "0"}, "quiet": None}
    assert row["max"] == {"id": 6, "x": 4.0, "n": 9, "s": {"a": 5, "b": "5"}, "quiet": None}
    # The list column has a null count child (the core stats layout), unknown from a footer:
    # its leaf counts null elements, not null lists.
    assert row["null_count"] == {
        "id": 0,
        "x": 0,
        "n": 4,
        "s": {"a": 0, "b": 0},
        "l": None,
        "quiet": None,
    }
    assert other["record_count"] is None and set(_flat(other["min"]).values()) == {None}
    with pytest.raises(CorruptTableError, match=r"bad\.parquet"):
        footer_stats(storage, ["bad.parquet"], table.schema)
    with pytest.raises(FileNotFoundError):
        footer_stats(storage, ["missing.parquet"], table.schema)
