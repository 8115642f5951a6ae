"""``partition_stats`` record generator: what it computes for the corpus tables' instants
equals what Hudi wrote in their metadata tables, key by key and field by field (the
``_hoodie_file_name`` that Hudi's compaction stamps on base-file records aside); records route
to their file group, round-trip through the Avro schema and fold as Hudi folds them."""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from lakecore_hudi.log.format import BlockType, read_log_blocks
from lakecore_hudi.mdt import partition_stats_records as psr
from lakecore_hudi.mdt.column_stats import _block_records, _hfile_records, _load_timeline
from lakecore_hudi.mdt.column_stats import _metadata_config as mdt_config
from lakecore_hudi.mdt.file_groups import file_group_index
from lakecore_hudi.mdt.stats_keys import partition_stats_key
from lakecore_hudi.mdt.stats_values import (
    NULL_KIND,
    ColumnRange,
    ValueKind,
    combine,
    standardize,
)
from lakecore_hudi.table_config import read_table_config
from lakecore_hudi.timeline.commit_metadata import CommitMetadata

from lakecore.errors import SchemaError
from lakecore.storage import open_storage

from .mdt_stats_checks import (
    assert_instants_equal_log_blocks,
    assert_partition_stats_bound_files,
    assert_partition_stats_match_files,
    assert_replay_equals_live,
    avro_round_trip,
    comparable,
    instant_contexts,
    live_records,
)
from .test_mdt_column_stats_records import HUDI, PAYLOAD, tables_with

TABLES = tables_with(psr.PARTITION)


def test_corpus_has_the_partition_stats_tables() -> None:
    assert [t.name for t in TABLES] == [
        "cow_v9_timebasedkeygen_unixtimestamp",
        "cow_v9_txns_simple_overwrite",
        "mor_avro_v8_trips_8i3u1d",
        "mor_avro_v9_lance_nonhivestyle",
    ]


@pytest.mark.parametrize("root", TABLES, ids=lambda p: p.name)
def test_records_equal_hudis_live_records(root: Path) -> None:
    assert assert_replay_equals_live(root, psr.PARTITION, psr.commit_records, psr.merge) >= 9


def test_every_instant_record_equals_hudis_log_block() -> None:
    """Per instant: a CoW update drops the file version it replaces, a compaction the slice it
    compacts, a log append adds to its slice, an insert-overwrite still counts the file
    groups it replaces, Lance base files count for nothing."""
    instants = records = 0
    for root in TABLES:
        found = assert_instants_equal_log_blocks(
            root, psr.PARTITION, ".partition-stats-*", psr.commit_records
        )
        instants, records = instants + found[0], records + found[1]
    assert (instants, records) == (20, 332)


def test_insert_overwrite_counts_the_replaced_file_groups_as_hudi_does() -> None:
    root = HUDI / "cow_v9_txns_simple_overwrite"
    ctx = instant_contexts(root)[-1]
    assert ctx.action == "replacecommit" and ctx.replaced["us"]
    records = {r["key"]: r[PAYLOAD] for r in psr.commit_records(ctx)}
    us = records[partition_stats_key("us", "txn_id")]
    # 2 rows of the first insert + 1 of the second (both replaced) + 1 the overwrite wrote.
    assert (us["valueCount"], us["isTightBound"]) == (4, True)


def test_routing_puts_each_record_in_its_file_group() -> None:
    checked = 0
    for root in TABLES:
        directory = root / ".hoodie/metadata" / psr.PARTITION
        keys = [
            r.key
            for path in sorted(directory.glob(".partition-stats-0000-0_*"))
            for block in read_log_blocks(path.read_bytes(), str(path))
            if block.block_type == BlockType.HFILE_DATA
            for r in _block_records(block)
        ]
        groups = {p.name.split("_")[0].lstrip(".") for p in directory.glob("*partition-stats-*")}
        assert groups == {"partition-stats-0000-0"}
        for key in keys:
            assert file_group_index(psr.routing_key(key, 9), len(groups)) == 0
            checked += 1
    assert checked == 332


@pytest.mark.parametrize("root", TABLES, ids=lambda p: p.name)
def test_records_round_trip_through_the_avro_schema(root: Path) -> None:
    version = read_table_config(open_storage(str(root))).table_version
    records = [r for ctx in instant_contexts(root) for r in psr.commit_records(ctx)]
    assert records
    for record in records:
        back = avro_round_trip(record, version, named=True)
        assert comparable(back) == comparable(record)


def test_merge_reproduces_hudis_metadata_compaction() -> None:
    root = HUDI / "mor_avro_v8_trips_8i3u1d"
    storage = open_storage(str(root))
    mdt = mdt_config(storage)
    assert mdt is not None
    timeline = _load_timeline(storage, mdt)
    directory = root / ".hoodie/metadata" / psr.PARTITION
    (base,) = sorted(directory.glob("*.hfile"))
    compaction = base.name.rsplit("_", 1)[1].split(".")[0]
    folded: dict[str, dict[str, Any] | None] = {}
    for log in sorted(directory.glob(".partition-stats-0000-0_*")):
        for block in read_log_blocks(log.read_bytes(), str(log)):
            done = timeline.visible.completion.get(block.instant_time or "")
            if block.block_type != BlockType.HFILE_DATA or done is None or done > compaction:
                continue
            for r in _block_records(block):
                folded[r.key] = psr.merge(folded.get(r.key), {**r.record, "key": r.key})
    written = {
        r.key: {**r.record, "key": r.key}
        for r in _hfile_records(base.read_bytes(), str(base), None)
    }
    assert sorted(written) == sorted(k for k, v in folded.items() if v is not None)
    for key, record in written.items():
        expected = folded[key]
        assert expected is not None
        assert comparable(record) == comparable(expected)
    assert len(written) == 27


@pytest.mark.parametrize("root", TABLES, ids=lambda p: p.name)
def test_live_records_bound_the_partitions_files(root: Path) -> None:
    live = live_records(root, psr.PARTITION, psr.merge)
    assert assert_partition_stats_bound_files(root, live) >= len(live)


def test_live_records_equal_the_partitions_latest_files() -> None:
    """The end-to-end checker on Hudi's own tables: equality wherever the partition's last
    write was not a replace commit (all partitions of the overwritten table were)."""
    checked = [assert_partition_stats_match_files(root) for root in TABLES]
    assert checked == [48, 0, 27, 9]


def test_ranges_of_different_types_combine_only_when_hudi_could() -> None:
    def r(kind: ValueKind, low: Any, high: Any) -> ColumnRange:
        return ColumnRange("f", "c", low, high, 0, 1, 1, 1, kind)

    widened = combine(r(ValueKind("INT"), 1, 5), r(ValueKind("LONG"), 3, 2**40), name="p")
    assert (widened.kind, widened.min_value, widened.max_value) == (ValueKind("LONG"), 1, 2**40)
    assert combine(r(NULL_KIND, None, None), r(ValueKind("STRING"), "a", "b")).kind == ValueKind(
        "STRING"
    )
    decimals = combine(
        r(ValueKind("DECIMAL", 5, 2), Decimal("1.50"), Decimal("2.00")),
        r(ValueKind("DECIMAL", 10, 4), Decimal("0.0001"), Decimal("1.0000")),
    )
    assert decimals.kind == ValueKind("DECIMAL", 10, 4)
    assert decimals.min_value == Decimal("0.0001")
    # A lakecore write that stored a long column as text would mix them: refused by name.
    with pytest.raises(SchemaError, match=r"'c'.*LONG and STRING"):
        combine(r(ValueKind("LONG"), 1, 2), r(ValueKind("STRING"), "1", "2"), name="2024/01/15")


def test_version_two_casts_file_bounds_to_the_writer_schema_type() -> None:
    """Hudi 1.1 casts every file's bounds to the type the commit's writer schema gives the
    column (``getColumnRangeInPartition``): the corpus table's upserts wrote ts_epoch as text
    under a string writer schema, and its partition stats say STRING; a partition mixing long
    and text files combines under either schema."""
    ctx = instant_contexts(HUDI / "cow_v9_timebasedkeygen_unixtimestamp")[2]
    assert ctx.meta is not None
    kinds = psr.schema_kinds(ctx.config, ctx.meta, ["_hoodie_commit_time", "ts_epoch", "amount"])
    assert kinds == {
        "_hoodie_commit_time": ValueKind("STRING"),
        "ts_epoch": ValueKind("STRING"),
        "amount": ValueKind("DECIMAL", 15, 2),
    }
    long_file = ColumnRange("a", "ts_epoch", 17, 20, 0, 2, 1, 1, ValueKind("LONG"))
    text_file = ColumnRange("b", "ts_epoch", "100", "3", 0, 2, 1, 1, ValueKind("STRING"))
    as_long = [standardize(r, ValueKind("LONG")) for r in (long_file, text_file)]
    both = combine(as_long[0], as_long[1], name="p")
    # Hudi casts each bound on its own: the text file's min "100" and max "3" become 100 and
    # 3, so the partition's range ignores it (unsound, but what Hudi writes).
    assert (both.min_value, both.max_value, both.kind) == (17, 20, ValueKind("LONG"))
    as_text = [standardize(r, ValueKind("STRING")) for r in (long_file, text_file)]
    both = combine(as_text[0], as_text[1], name="p")
    assert (both.min_value, both.max_value) == ("100", "3")
    with pytest.raises(SchemaError, match=r"'ts_epoch'.*STRING bound does not cast to LONG"):
        standardize(dataclasses.replace(text_file, min_value="x"), ValueKind("LONG"))


def test_delete_partition_writes_tombstones_and_clean_nothing() -> None:
    ctx = instant_contexts(HUDI / "cow_v9_txns_simple_overwrite")[-1]
    assert ctx.meta is not None
    dropped = dataclasses.replace(
        ctx.meta,
        operation_type="DELETE_PARTITION",
        partition_to_replace_file_ids={"apac": ("f2076acb-430a-4060-b14d-8ed7663b5cbd-0",)},
        partition_to_write_stats={},
    )
    records = psr.commit_records(dataclasses.replace(ctx, meta=dropped))
    assert len(records) == 16
    assert records[0]["key"] == partition_stats_key("apac", "_hoodie_commit_time")
    assert records[0][PAYLOAD] == {
        "fileName": "",
        "columnName": "_hoodie_commit_time",
        "minValue": None,
        "maxValue": None,
        "valueCount": -1,
        "nullCount": -1,
        "totalSize": -1,
        "totalUncompressedSize": -1,
        "isDeleted": True,
        "isTightBound": True,
        "valueType": {"typeOrdinal": 1, "additionalInfo": None},
    }
    clean = dataclasses.replace(ctx, action="clean", meta=None, cleaned={"us": ["x.parquet"]})
    assert psr.commit_records(clean) == []
    empty = dataclasses.replace(ctx, meta=CommitMetadata())
    assert psr.commit_records(empty) == []
