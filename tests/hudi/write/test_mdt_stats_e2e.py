"""``column_stats`` and ``partition_stats`` after lakecore writes into Spark-written tables.

Copies of the corpus tables whose metadata tables hold the statistics partitions take a
lakecore insert, upsert, delete, compaction (MoR) and clean; after each, exactly:

- the live ``column_stats`` records equal the records the generator replays over the whole
  timeline (Hudi's instants and lakecore's), and equal the stats recomputed from every data
  file on storage (``assert_column_stats_match_files``);
- the live ``partition_stats`` records equal the replay (before any clean: a clean deletes the
  files older instants' records were computed from) and the ranges recomputed over each
  partition's latest slices (``assert_partition_stats_match_files``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lakecore_hudi.mdt import column_stats_records as csr
from lakecore_hudi.mdt import partition_stats_records as psr
from lakecore_hudi.table_config import read_table_config

import lakecore
from lakecore.storage import open_storage
from tests.hudi.write.helpers import copy_corpus_table
from tests.hudi.write.mdt_table_checks import operations

from .mdt_stats_checks import (
    assert_column_stats_match_files,
    assert_partition_stats_match_files,
    exact,
    live_records,
    replayed_records,
)

PAYLOAD = "ColumnStatsMetadata"


def _same(live: dict[str, Any], replay: dict[str, Any]) -> None:
    assert sorted(live) == sorted(replay)
    for key, record in live.items():
        assert exact(record[PAYLOAD]) == exact(replay[key][PAYLOAD]), key


def _check(root: Path, cleaned: bool) -> tuple[int, int]:
    partitions = read_table_config(open_storage(str(root))).metadata_partitions
    live = live_records(root, csr.PARTITION, csr.merge)
    _same(live, replayed_records(root, csr.commit_records, csr.merge))
    files = assert_column_stats_match_files(root)
    assert files == len(live)
    if psr.PARTITION not in partitions:
        return files, 0
    if not cleaned:
        live = live_records(root, psr.PARTITION, psr.merge)
        _same(live, replayed_records(root, psr.commit_records, psr.merge))
    return files, assert_partition_stats_match_files(root)


TABLES = [
    "mor_avro_v8_trips_8i3u1d",
    pytest.param("cow_v9_txns_simple_overwrite", marks=pytest.mark.slow),
    pytest.param("cow_v9_timebasedkeygen_unixtimestamp", marks=pytest.mark.slow),
    pytest.param("mor_avro_v9_txns_nonpart_meta", marks=pytest.mark.slow),
    pytest.param("mor_avro_v9_nonpartitioned_rollback", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("name", TABLES)
def test_statistics_partitions_follow_lakecore_writes(name: str, tmp_path: Path) -> None:
    root = copy_corpus_table(name, tmp_path)
    checked = [_check(root, cleaned=False)]
    done = []
    for op, run in operations(lakecore.open(str(root))):
        run()
        checked.append(_check(root, cleaned=op == "clean"))
        done.append(op)
    assert done[:3] == ["insert", "upsert", "delete"] and done[-1] == "clean"
    assert all(files > 0 for files, _ in checked)
    if name in ("mor_avro_v8_trips_8i3u1d", "cow_v9_txns_simple_overwrite"):
        # Every partition checked exactly once written by lakecore (the overwrite table's
        # partitions were last written by Hudi's insert-overwrite: bounds only until then).
        assert checked[-1][1] > 0
