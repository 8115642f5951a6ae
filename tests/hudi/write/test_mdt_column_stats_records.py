"""``column_stats`` record generator: what it computes for the corpus tables' instants equals
what Hudi wrote in their metadata tables, key by key and field by field; records route to the
file group they sit in, round-trip through the Avro schema, and fold as Hudi folds them.

Fields lakecore does not reproduce: the ``_hoodie_file_name`` meta field of records in a
compacted base HFile (Hudi's compaction stamps it; the generator's records are log-block
records, where Hudi leaves every meta field null) - the comparisons below leave it out.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lakecore_hudi.log.format import BlockType, read_log_blocks
from lakecore_hudi.mdt import column_stats_records as csr
from lakecore_hudi.mdt.column_stats import _block_records, _hfile_records, _load_timeline
from lakecore_hudi.mdt.column_stats import _metadata_config as mdt_config
from lakecore_hudi.mdt.file_groups import file_group_index
from lakecore_hudi.mdt.file_ranges import _read_bounds, base_file_ranges, log_file_ranges
from lakecore_hudi.mdt.index_context import IndexContext
from lakecore_hudi.mdt.stats_keys import column_stats_key, partition_stats_key, xxh64
from lakecore_hudi.mdt.stats_values import (
    ColumnRange,
    ValueKind,
    java_order_key,
)
from lakecore_hudi.mdt.stats_wrappers import stats_payload, wrap
from lakecore_hudi.table_config import read_table_config

from lakecore.errors import UnsupportedFeatureError
from lakecore.storage import open_storage
from tests.corpus import CORPUS

from .mdt_stats_checks import (
    assert_column_stats_match_files,
    assert_instants_equal_log_blocks,
    assert_replay_equals_live,
    avro_round_trip,
    comparable,
    index_defs,
    instant_contexts,
)

HUDI = CORPUS / "hudi"
NS = "org.apache.hudi.avro.model."
PAYLOAD = "ColumnStatsMetadata"


def tables_with(partition: str) -> list[Path]:
    """Corpus Hudi tables whose ``hoodie.properties`` lists metadata partition ``partition``."""
    out = []
    for props in sorted(HUDI.glob("*/.hoodie/hoodie.properties")):
        for line in props.read_text().splitlines():
            key, _, value = line.partition("=")
            if key == "hoodie.table.metadata.partitions" and partition in value.split(","):
                out.append(props.parents[1])
    return out


TABLES = tables_with(csr.PARTITION)


def test_corpus_has_the_column_stats_tables() -> None:
    assert [t.name for t in TABLES] == [
        "cow_v9_timebasedkeygen_unixtimestamp",
        "cow_v9_txns_simple_overwrite",
        "mor_avro_v8_trips_8i3u1d",
        "mor_avro_v9_lance_nonhivestyle",
        "mor_avro_v9_nonpartitioned_rollback",
        "mor_avro_v9_txns_nonpart_meta",
    ]


@pytest.mark.parametrize("root", TABLES, ids=lambda p: p.name)
def test_records_equal_hudis_live_records(root: Path) -> None:
    assert assert_replay_equals_live(root, csr.PARTITION, csr.commit_records, csr.merge) >= 9


@pytest.mark.parametrize("root", TABLES, ids=lambda p: p.name)
def test_live_records_match_the_files(root: Path) -> None:
    assert assert_column_stats_match_files(root) >= 9


def test_every_instant_record_equals_hudis_log_block() -> None:
    """Per instant (not only the folded result): the records an instant generates are the
    records of that instant's metadata log blocks."""
    instants = 0
    for root in TABLES:
        found, _ = assert_instants_equal_log_blocks(
            root, csr.PARTITION, ".col-stats-*", csr.commit_records
        )
        instants += found
    assert instants == 34


def _file_group_records(root: Path, partition: str) -> dict[int, list[str]]:
    """File group ordinal -> keys of every record stored in it (base files and log blocks)."""
    out: dict[int, list[str]] = {}
    for path in sorted((root / ".hoodie/metadata" / partition).iterdir()):
        found = re.search(r"-(\d{4})-0_", path.name)
        if found is None:
            continue
        keys = out.setdefault(int(found.group(1)), [])
        data = path.read_bytes()
        if path.suffix == ".hfile":
            keys.extend(r.key for r in _hfile_records(data, str(path), None))
            continue
        for block in read_log_blocks(data, str(path)):
            if block.block_type == BlockType.HFILE_DATA:
                keys.extend(r.key for r in _block_records(block))
    return out


def test_routing_puts_each_record_in_its_file_group() -> None:
    checked = 0
    for root in TABLES:
        groups = _file_group_records(root, csr.PARTITION)
        assert sorted(groups) == [0, 1], root.name
        for ordinal, keys in groups.items():
            for key in keys:
                assert file_group_index(csr.routing_key(key, 9), len(groups)) == ordinal
                checked += 1
    assert checked == 737  # every record of every base HFile and log block


@pytest.mark.parametrize("root", TABLES, ids=lambda p: p.name)
def test_records_round_trip_through_the_avro_schema(root: Path) -> None:
    version = read_table_config(open_storage(str(root))).table_version
    records = [r for ctx in instant_contexts(root) for r in csr.commit_records(ctx)]
    assert records
    for record in records:
        back = avro_round_trip(record, version, named=True)
        assert comparable(back) == comparable(record)


def _mdt_compactions(root: Path) -> list[str]:
    return sorted(
        p.name.split("_")[0] for p in (root / ".hoodie/metadata/.hoodie/timeline").glob("*.commit")
    )


def test_merge_reproduces_hudis_metadata_compaction() -> None:
    """Folding the log blocks a metadata compaction covered with ``merge`` gives the records
    of the base HFile it wrote (the Hudi 1.0 and 1.1 tables that were compacted)."""
    compacted = 0
    for root in TABLES:
        storage = open_storage(str(root))
        mdt = mdt_config(storage)
        assert mdt is not None
        timeline = _load_timeline(storage, mdt)
        for instant in _mdt_compactions(root):
            for base in sorted((root / ".hoodie/metadata/column_stats").glob(f"*_{instant}.hfile")):
                group = base.name.split("_")[0]
                folded: dict[str, dict[str, Any] | None] = {}
                for log in sorted(base.parent.glob(f".{group}_*.log.*")):
                    for block in read_log_blocks(log.read_bytes(), str(log)):
                        stamp = block.instant_time or ""
                        done = timeline.visible.completion.get(stamp)
                        if (
                            block.block_type != BlockType.HFILE_DATA
                            or done is None
                            or done > instant
                        ):
                            continue
                        for r in _block_records(block):
                            folded[r.key] = csr.merge(folded.get(r.key), {**r.record, "key": r.key})
                expected = {k: v for k, v in folded.items() if v is not None}
                written = {
                    r.key: {**r.record, "key": r.key}
                    for r in _hfile_records(base.read_bytes(), str(base), None)
                }
                assert sorted(written) == sorted(expected)
                for key, record in written.items():
                    assert comparable(record) == comparable(expected[key])  # type: ignore[arg-type]
                compacted += 1
    assert compacted == 4


# ------------------------------------------------------------------------------ units


def _stats(**fields: Any) -> dict[str, Any]:
    base = {
        "fileName": "f1.parquet",
        "columnName": "c",
        "minValue": (NS + "IntWrapper", {"value": 5}),
        "maxValue": (NS + "IntWrapper", {"value": 9}),
        "valueCount": 4,
        "nullCount": 1,
        "totalSize": 10,
        "totalUncompressedSize": 12,
        "isDeleted": False,
        "isTightBound": False,
        "valueType": {"typeOrdinal": 3, "additionalInfo": None},
    }
    base.update(fields)
    return {"key": "k", "type": 3, PAYLOAD: base}


def test_merge_combines_appends_and_lets_tombstones_and_tight_bounds_win() -> None:
    older = _stats()
    newer = _stats(
        fileName="f2.log",
        minValue=(NS + "IntWrapper", {"value": 2}),
        maxValue=(NS + "IntWrapper", {"value": 7}),
        valueCount=3,
        nullCount=0,
        totalSize=0,
        totalUncompressedSize=0,
    )
    merged = csr.merge(older, newer)
    assert merged is not None
    assert merged[PAYLOAD] == {
        **newer[PAYLOAD],
        "minValue": (NS + "IntWrapper", {"value": 2}),
        "maxValue": (NS + "IntWrapper", {"value": 9}),
        "valueCount": 7,
        "nullCount": 1,
        "totalSize": 10,
        "totalUncompressedSize": 12,
    }
    tombstone = _stats(isDeleted=True, minValue=None, maxValue=None)
    assert csr.merge(older, tombstone) is None  # the key is deleted
    assert csr.merge(None, tombstone) == tombstone  # reaches the log block
    assert csr.merge(tombstone, newer) == newer
    assert csr.compacted(tombstone) is None
    assert csr.compacted(newer) == newer
    tight = _stats(isTightBound=True, valueCount=1)
    assert csr.merge(older, tight) == tight
    assert csr.merge(None, newer) == newer


def test_merge_orders_doubles_and_strings_as_java() -> None:
    zero = _stats(
        minValue=(NS + "DoubleWrapper", {"value": 0.0}),
        maxValue=(NS + "DoubleWrapper", {"value": 0.0}),
        valueType={"typeOrdinal": 6, "additionalInfo": None},
    )
    negative_zero = _stats(
        minValue=(NS + "DoubleWrapper", {"value": -0.0}),
        maxValue=(NS + "DoubleWrapper", {"value": -0.0}),
        valueType={"typeOrdinal": 6, "additionalInfo": None},
    )
    merged = csr.merge(zero, negative_zero)
    assert merged is not None
    assert str(merged[PAYLOAD]["minValue"][1]["value"]) == "-0.0"
    assert str(merged[PAYLOAD]["maxValue"][1]["value"]) == "0.0"
    # Java compares UTF-16 code units: U+FF5E sorts after the surrogates of U+1F600.
    assert java_order_key("\uff5e") > java_order_key("\U0001f600")
    assert "\uff5e" < "\U0001f600"


def test_clean_writes_tombstones_for_every_indexed_column() -> None:
    root = HUDI / "cow_v9_txns_simple_overwrite"
    ctx = instant_contexts(root)[0]
    clean = IndexContext(
        storage=ctx.storage,
        config=ctx.config,
        instant="20990101000000000",
        action="clean",
        meta=None,
        cleaned={"eu": ["a.parquet", "eu/.b.log.1_0-1-1"]},
        replaced={},
        table_version=9,
        index_defs=ctx.index_defs,
    )
    records = csr.commit_records(clean)
    assert len(records) == 2 * 16
    first = records[0]
    assert first["key"] == column_stats_key("eu", "a.parquet", "_hoodie_commit_time")
    assert first[PAYLOAD] == {
        "fileName": "a.parquet",
        "columnName": "_hoodie_commit_time",
        "minValue": None,
        "maxValue": None,
        "valueCount": -1,
        "nullCount": -1,
        "totalSize": -1,
        "totalUncompressedSize": -1,
        "isDeleted": True,
        "isTightBound": False,
        "valueType": {"typeOrdinal": 1, "additionalInfo": None},
    }
    assert {r[PAYLOAD]["fileName"] for r in records} == {"a.parquet", ".b.log.1_0-1-1"}
    v1 = dataclasses.replace(clean, table_version=8, index_defs={})
    assert "valueType" not in csr.commit_records(v1)[0][PAYLOAD]


def test_columns_to_index_without_an_index_definition() -> None:
    config = read_table_config(open_storage(str(HUDI / "cow_v9_txns_simple_overwrite")))
    fields = [pa.field(f"c{i}", pa.int32()) for i in range(40)]
    meta = pa.field("_hoodie_commit_time", pa.string())
    wide = [pa.field("d38", pa.decimal128(38, 10)), pa.field("d16", pa.decimal128(20, 16))]
    schema = pa.schema([meta, pa.field("s", pa.struct([("a", pa.int8())])), *wide, *fields])
    columns = csr.columns_to_index(config, {}, schema)
    assert columns[:3] == ["_hoodie_commit_time", "_hoodie_record_key", "_hoodie_partition_path"]
    assert columns[3:] == [f"c{i}" for i in range(32)]
    from_create = csr.columns_to_index(config, {}, None)
    assert from_create[3:] == [
        "txn_id",
        "account_id",
        "txn_ts",
        "txn_datetime",
        "txn_date",
        "amount",
        "currency",
        "txn_type",
        "merchant_name",
        "is_international",
        "fee_amount",
        "txn_metadata",
        "region",
    ]


def test_index_version_defaults_by_table_version() -> None:
    assert csr.index_version({}, "column_stats", 8) == 1
    assert csr.index_version({}, "column_stats", 9) == 2
    defs = {"indexDefinitions": {"column_stats": {"version": "V1"}}}
    assert csr.index_version(defs, "column_stats", 9) == 1


def test_unsupported_stats_indexes_are_refused() -> None:
    for table in TABLES:
        storage = open_storage(str(table))
        csr.ensure_supported(index_defs(storage), read_table_config(storage).table_version)
    cases = [
        ({"column_stats": {"version": "V3"}}, 9, "version 3"),
        ({"column_stats": {"version": "V2"}}, 8, "version 2 on a table of version 8"),
        ({"column_stats": {"indexFunction": "lower"}}, 9, "function 'lower'"),
    ]
    for defs, version, message in cases:
        with pytest.raises(UnsupportedFeatureError, match=message):
            csr.ensure_supported({"indexDefinitions": defs}, version)
    ctx = instant_contexts(HUDI / "mor_avro_v8_trips_8i3u1d")[0]
    bad = dataclasses.replace(ctx, index_defs={"column_stats": {"version": "V9"}})
    with pytest.raises(UnsupportedFeatureError, match="version 9"):
        csr.commit_records(bad)


def test_keys_use_hudis_hashes() -> None:
    assert xxh64(b"", 0) == 0xEF46DB3751D8E999
    assert xxh64(b"a", 0) == 0xD24EC4F1A98C6E5B
    # The 32-byte-stripe path: python-xxhash's documented example value.
    assert xxh64(b"Nobody inspects the spammish repetition", 0) == 0xFBCEA83C8A378BF1
    assert partition_stats_key("", "c") == column_stats_key("", "f", "c")[:24]
    assert column_stats_key("", "f", "c")[12:24] == "FXThHwelITM="  # "." as Hudi hashes it


def test_version_one_wrappers() -> None:
    utc = dt.timezone.utc
    assert wrap(Decimal("1.5"), ValueKind("DECIMAL", 10, 2), False) == (
        NS + "DecimalWrapper",
        {"value": Decimal("1.500000000000000")},
    )
    assert wrap(dt.date(1970, 1, 3), ValueKind("DATE"), False) == (NS + "DateWrapper", {"value": 2})
    stamp = dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=utc)
    # Hudi 1.0 keeps a footer's timestamp as its stored long (here milliseconds).
    assert wrap(stamp, ValueKind("TIMESTAMP_MILLIS"), False) == (
        NS + "LongWrapper",
        {"value": 1000},
    )
    assert wrap(dt.time(0, 0, 1), ValueKind("TIME_MILLIS"), False) == (
        NS + "IntWrapper",
        {"value": 1000},
    )
    # A version-1 range read back from the metadata table keeps its wrapper.
    assert wrap(stamp, None, False) == (NS + "TimestampMicrosWrapper", {"value": 1_000_000})
    assert wrap("x", None, False) == (NS + "StringWrapper", {"value": "x"})


def test_version_two_wrappers_hold_primitives() -> None:
    assert wrap(Decimal("-1.28"), ValueKind("DECIMAL", 10, 2), True) == (
        NS + "BytesWrapper",
        {"value": b"\x80"},  # BigInteger(-128).toByteArray()
    )
    assert wrap(Decimal("2.55"), ValueKind("DECIMAL", 10, 2), True) == (
        NS + "BytesWrapper",
        {"value": b"\x00\xff"},
    )
    local = dt.datetime(1970, 1, 1, 0, 0, 0, 2000)
    assert wrap(local, ValueKind("LOCAL_TIMESTAMP_MILLIS"), True) == (
        NS + "LongWrapper",
        {"value": 2},
    )
    assert wrap(dt.time(0, 0, 1), ValueKind("TIME_MILLIS"), True) == (
        NS + "IntWrapper",
        {"value": 1000},
    )
    payload = stats_payload(
        ColumnRange("f", "c", None, None, 0, 0, 0, 0, ValueKind("NULL")), version2=True
    )
    assert payload["valueType"] == {"typeOrdinal": 1, "additionalInfo": None}


def test_base_file_ranges_of_a_multi_row_group_file(tmp_path: Path) -> None:
    table = pa.table({"a": pa.array([3, None, 1, 7], pa.int64()), "s": ["b", "a", None, "c"]})
    pq.write_table(table, tmp_path / "f.parquet", row_group_size=2)
    ranges = base_file_ranges(open_storage(str(tmp_path)), "f.parquet", ["a", "s", "missing"])
    footer = pq.read_metadata(tmp_path / "f.parquet")
    sizes = [
        sum(footer.row_group(g).column(c).total_compressed_size for g in range(2)) for c in range(2)
    ]
    assert ranges == [
        ColumnRange(
            "f.parquet",
            "a",
            1,
            7,
            1,
            4,
            sizes[0],
            ranges[0].total_uncompressed_size,
            ValueKind("LONG"),
        ),
        ColumnRange(
            "f.parquet",
            "s",
            "a",
            "c",
            1,
            4,
            sizes[1],
            ranges[1].total_uncompressed_size,
            ValueKind("STRING"),
        ),
    ]


def test_float_bounds_read_as_parquet_mr_reads_them(tmp_path: Path) -> None:
    """Hudi reads footers with parquet-mr: a zero min is -0.0, a zero max +0.0, and a row
    group whose float bounds hold a NaN has none (the corpus compaction base files show the
    first: their footers say 0.0, Hudi's records -0.0)."""
    table = pa.table({"x": pa.array([0.0, 2.0, -3.0, -0.0], pa.float64())})
    pq.write_table(table, tmp_path / "f.parquet", row_group_size=2)
    (x,) = base_file_ranges(open_storage(str(tmp_path)), "f.parquet", ["x"])
    assert (repr(x.min_value), repr(x.max_value)) == ("-3.0", "2.0")
    pq.write_table(table.slice(0, 2), tmp_path / "g.parquet")
    (g,) = base_file_ranges(open_storage(str(tmp_path)), "g.parquet", ["x"])
    assert repr(g.min_value) == "-0.0"
    pq.write_table(table.slice(2, 2), tmp_path / "h.parquet")
    (h,) = base_file_ranges(open_storage(str(tmp_path)), "h.parquet", ["x"])
    assert repr(h.max_value) == "0.0"
    assert _read_bounds(math.nan, 1.0) is None
    assert _read_bounds("a", "b") == ("a", "b")


def test_non_parquet_base_files_are_refused(tmp_path: Path) -> None:
    (tmp_path / "f.orc").write_bytes(b"ORC")
    storage = open_storage(str(tmp_path))
    with pytest.raises(UnsupportedFeatureError, match=r"f\.orc"):
        base_file_ranges(storage, "f.orc", ["a"])
    (tmp_path / "f.lance").write_bytes(b"")
    assert base_file_ranges(storage, "f.lance", ["a"]) == []


def test_log_ranges_count_only_the_chosen_instants() -> None:
    root = HUDI / "mor_avro_v8_trips_8i3u1d"
    path = (
        "city=san_francisco/"
        ".036ded81-9ed4-479f-bcea-7145dfa0079b-0_20251220210123755.log.1_0-1022-2928"
    )
    storage = open_storage(str(root))
    (fare,) = log_file_ranges(storage, path, ["fare"], "20251220210123755".__eq__)
    assert (fare.value_count, fare.null_count, fare.total_size) == (1, 0, 0)
    (none,) = log_file_ranges(storage, path, ["fare"], lambda _: False)
    assert (none.min_value, none.value_count, none.kind) == (None, 0, ValueKind("NULL"))
