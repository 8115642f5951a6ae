"""End to end: lakecore writes keep ``record_index`` and the secondary indexes of Spark-written
corpus tables equal to the tables' records.

The writes go through the real machinery (``partition_spec.WIRED`` lists every partition
these tables have; the test checks it does). After every write (an upsert
changing the indexed value to one with ``$`` and ``\\``, an update, a delete, a compaction, a
clean, a re-insert of the deleted key, an overwrite of the whole table) the live record index
must be exactly the table's keys and locations and every secondary index exactly its
(value, key) pairs, each entry in the file group Hudi's routing picks (``mdt_index_checks``).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from lakecore_hudi.mdt import partition_spec

import lakecore
from tests.hudi.write.helpers import copy_corpus_table
from tests.hudi.write.mdt_index_checks import (
    assert_record_index_matches_table,
    assert_secondary_index_matches_table,
    secondary_partitions,
)


def _writes(root: Path, column: str) -> list[tuple[str, int, int]]:
    """Run the writes; after each, (what, record index keys, secondary index entries)."""
    table = lakecore.open(str(root))
    key = table.snapshot().properties["hoodie.table.recordkey.fields"]
    names = [f.name for f in table.schema if not f.name.startswith("_hoodie")]
    row = table.to_arrow(columns=names).slice(0, 1)
    target = row.column(key)[0].as_py()
    at = row.schema.get_field_index(column)
    changed = row.set_column(at, column, pa.array(["CHANGED$\\x"], row.schema.field(at).type))
    steps = [
        ("upsert", lambda t: t.upsert(changed)),
        ("update", lambda t: t.update({column: "'other'"}, where=f"{key} = '{target}'")),
        ("delete", lambda t: t.delete(f"{key} = '{target}'")),
        ("compact", lambda t: t.compact()),
        ("clean", lambda t: t.clean(retain_commits=1)),
        ("re-insert", lambda t: t.append(changed)),
        ("overwrite", lambda t: t.overwrite(t.to_arrow(columns=names).slice(0, 3))),
    ]
    out = []
    for what, step in steps:
        step(lakecore.open(str(root)))
        indexed = assert_record_index_matches_table(root)
        secondary = assert_secondary_index_matches_table(root) if secondary_partitions(root) else 0
        out.append((what, indexed, secondary))
    return out


def test_the_index_partitions_are_maintained() -> None:
    for partition in ("record_index", "secondary_index_rider_idx", "secondary_index_x"):
        assert partition_spec.is_maintained(partition), partition


def test_version_9_mor_with_two_secondary_indexes(tmp_path: Path) -> None:
    root = copy_corpus_table("mor_avro_v9_txns_nonpart_meta", tmp_path)
    assert assert_record_index_matches_table(root) == 14
    assert _writes(root, "merchant_name") == [
        ("upsert", 14, 28),
        ("update", 14, 28),
        ("delete", 13, 26),
        ("compact", 13, 26),
        ("clean", 13, 26),
        ("re-insert", 14, 28),
        ("overwrite", 3, 6),
    ]


def test_version_9_mor_with_lance_base_files(tmp_path: Path) -> None:
    """Record index only; its file groups' base files are Lance files (Spark's, lakecore's)."""
    root = copy_corpus_table("mor_avro_v9_lance_nonhivestyle", tmp_path)
    assert [what for what, _, _ in _writes(root, "event_type")] == [
        "upsert", "update", "delete", "compact", "clean", "re-insert", "overwrite"
    ]  # fmt: skip
    assert assert_record_index_matches_table(root) == 3


def test_version_8_mor_with_a_secondary_index(tmp_path: Path) -> None:
    root = copy_corpus_table("mor_avro_v8_trips_8i3u1d", tmp_path)
    assert _writes(root, "rider") == [
        ("upsert", 6, 6),
        ("update", 6, 6),
        ("delete", 5, 5),
        ("compact", 5, 5),
        ("clean", 5, 5),
        ("re-insert", 6, 6),
        ("overwrite", 3, 3),
    ]


@pytest.mark.slow
def test_indexes_survive_metadata_compactions(tmp_path: Path) -> None:
    """Enough writes for the metadata table to compact (every 10 delta commits): new keys,
    changed values and deletes folded into new base HFiles keep both indexes exact."""
    root = copy_corpus_table("mor_avro_v9_txns_nonpart_meta", tmp_path)
    timeline = root / ".hoodie/metadata/.hoodie/timeline"

    def compactions() -> int:
        return sum(1 for p in timeline.iterdir() if p.name.endswith(".commit"))

    before = compactions()
    names = [f.name for f in lakecore.open(str(root)).schema if not f.name.startswith("_hoodie")]
    rows = lakecore.open(str(root)).to_arrow(columns=names)
    for i in range(12):
        row = rows.slice(i, 1)
        at = row.schema.get_field_index("merchant_name")
        row = row.set_column(at, "merchant_name", pa.array([f"m{i}"]))
        if i % 4 == 0:  # a new key, deleted three writes later
            key = row.schema.get_field_index("txn_id")
            row = row.set_column(key, "txn_id", pa.array([f"X{i}"]))
        lakecore.open(str(root)).upsert(row)
        if i % 4 == 3:
            lakecore.open(str(root)).delete(f"txn_id = 'X{i - 3}'")
    assert compactions() > before
    assert assert_record_index_matches_table(root) == 14
    assert assert_secondary_index_matches_table(root) == 28


def test_the_checkers_catch_a_stale_index(tmp_path: Path) -> None:
    """The end-to-end checkers fail on an index that lost entries (a metadata log file
    removed), so their passing above means something."""
    root = copy_corpus_table("cow_v9_txns_simple_overwrite", tmp_path)
    logs = sorted((root / ".hoodie/metadata/record_index").glob(".record-index-*_2026*"))
    last = [p for p in logs if "20260403184001282" in p.name]
    assert last
    last[0].unlink()
    with pytest.raises(AssertionError, match="index keys differ"):
        assert_record_index_matches_table(root)
    root = copy_corpus_table("mor_avro_v8_trips_8i3u1d", tmp_path / "v8")
    deletes = sorted((root / ".hoodie/metadata/secondary_index_rider_idx").glob(".*_2025*"))
    assert len(deletes) == 2
    for path in deletes:  # the deletions of two deleted records
        path.unlink()
    index = root / ".hoodie/metadata/secondary_index_rider_idx"
    for path in index.glob("*_20251220210130942.hfile"):
        path.unlink()  # and the compaction that dropped them
    with pytest.raises(AssertionError, match="secondary_index_rider_idx"):
        assert_secondary_index_matches_table(root)
