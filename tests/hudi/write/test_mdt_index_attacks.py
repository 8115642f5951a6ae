"""Review attacks on the metadata-table index partitions lakecore maintains (issue 13):
``files``, ``column_stats``, ``partition_stats``, ``record_index``, ``secondary_index_*``.

Each attack runs lakecore writes on a copy of a Spark-written corpus table and then asks
whether a reader trusting the metadata table (hudi-rs listing through ``files``, Spark
locating keys through ``record_index`` / ``secondary_index_*``, data skipping through
``column_stats`` and lakecore's own planner) still sees exactly the table's rows. Bugs are
pinned as ``xfail(strict=True)`` with the precise fault in the reason (the owners remove the
marker once fixed); the other tests pin attacks that held. Also pinned: failed and dead
writers and cleans (typed errors, nothing left pending, metadata compaction not blocked),
the storage work a one-row write does (it must follow the file groups it touched), and one
partition-pruning fault found on the way that does not depend on the metadata table.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from lakecore_hudi.mdt import maintain
from lakecore_hudi.mdt import secondary_index_records as si
from lakecore_hudi.mdt.record_index import RECORD_INDEX, read_index_partition
from lakecore_hudi.table_config import read_table_config

import lakecore
from lakecore.storage import open_storage
from lakecore.table import Table
from tests.hudi.write.helpers import copy_corpus_table, files_on_disk, hudi_rs_table, upsert
from tests.hudi.write.mdt_index_checks import (
    assert_record_index_matches_table,
    assert_secondary_index_matches_table,
    table_records,
)
from tests.hudi.write.mdt_stats_checks import (
    assert_column_stats_match_files,
)
from tests.hudi.write.mdt_table_checks import check_every_partition
from tests.hudi.write.test_mdt_maintain import mdt_listing

V8_TRIPS = "mor_avro_v8_trips_8i3u1d"
"""MoR v8, partitioned by city; files, column_stats, partition_stats, record_index and
secondary_index_rider_idx (on ``rider``); key ``uuid``, ordering ``ts``."""
V9_ROLLBACK = "mor_avro_v9_nonpartitioned_rollback"
"""MoR v9, not partitioned; files, column_stats, record_index; key ``txn_id``."""
V9_TWO_SI = "mor_avro_v9_txns_nonpart_meta"
"""MoR v9, not partitioned; files, column_stats, record_index, two secondary indexes
(``merchant_name``, ``txn_date``); key ``txn_id``."""
V9_COW = "cow_v9_txns_simple_overwrite"
"""CoW v9, partitioned by region; files, column_stats, partition_stats, record_index."""


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    data = table.drop_columns([c for c in table.column_names if c.startswith("_hoodie_")])
    return sorted(data.to_pylist(), key=lambda r: json.dumps(r, sort_keys=True, default=str))


def _data(root: Path) -> pa.Table:
    table = lakecore.open(str(root)).to_arrow()
    return table.drop_columns([c for c in table.column_names if c.startswith("_hoodie_")])


def _set(table: pa.Table, column: str, values: list[Any]) -> pa.Table:
    i = table.schema.get_field_index(column)
    return table.set_column(i, table.schema.field(i), pa.array(values, table.schema.field(i).type))


def _checks(root: Path) -> dict[str, int]:
    """Every partition of the table's metadata table against the table (the helpers'
    checks); returns what each checked."""
    return check_every_partition(root)


def _secondary_pairs(root: Path, partition: str, column: str) -> tuple[set[Any], set[Any]]:
    """(the table's live (value, key) pairs, the index's) of secondary index ``partition``."""
    storage = open_storage(str(root))
    entries = read_index_partition(storage, read_table_config(storage), partition)
    assert entries is not None
    rows = table_records(root, (column,))
    keys = rows.column("_hoodie_record_key").to_pylist()
    table = set(zip(si.render(rows.column(column)), keys, strict=True))
    return table, {si.split_key(k) for k in entries}


def _indexed_keys(root: Path) -> set[str]:
    storage = open_storage(str(root))
    entries = read_index_partition(storage, read_table_config(storage), RECORD_INDEX)
    assert entries is not None
    return set(entries)


def _new_instants(root: Path, before: list[str]) -> set[str]:
    """The actions of the instants the data timeline gained since ``before`` (its file
    names); an instant still pending counts as ``pending``."""
    names = {p.name for p in (root / ".hoodie" / "timeline").iterdir()} - set(before)
    done = {n.split("_")[0] for n in names if "_" in n}
    actions = set()
    for name in names:
        if name.endswith((".requested", ".inflight")):
            actions.add(name.split(".")[1] if name.split(".")[0] in done else "pending")
        elif "_" in name:
            actions.add(name.rsplit(".", 1)[1])
    return actions


# ------------------------------------------------------------------ duplicate keys (insert)


def test_an_insert_repeating_a_key_indexes_every_value(tmp_path: Path) -> None:
    root = copy_corpus_table(V8_TRIPS, tmp_path)
    row = _set(_data(root).slice(1, 1), "uuid", ["new-key"])
    twice = pa.concat_tables([row, _set(row, "rider", ["rider-Z"])])
    lakecore.open(str(root)).append(twice)
    assert sorted(_data(root).filter(pc.equal(_data(root).column("uuid"), "new-key"))["rider"]
                  .to_pylist()) == ["rider-E", "rider-Z"]  # fmt: skip
    table, index = _secondary_pairs(root, "secondary_index_rider_idx", "rider")
    assert table - index == set()


@pytest.mark.xfail(
    strict=True,
    reason=(
        "record_index_records/secondary_index_records.commit_records emit a deletion for a "
        "key a touched file group loses even when another, untouched file group still holds "
        "it (a key an insert stored twice): deleting one copy removes the key from "
        "record_index and its (value, key) entry from the secondary index, while the table "
        "still holds the other copy (Spark's record-index upsert would then insert it again)"
    ),
)
def test_deleting_one_copy_of_a_twice_stored_key_keeps_it_indexed(tmp_path: Path) -> None:
    root = copy_corpus_table(V8_TRIPS, tmp_path)
    row = _data(root).slice(1, 1)
    key = row.column("uuid")[0].as_py()
    assert row.column("city")[0].as_py() == "san_francisco"
    lakecore.open(str(root)).append(_set(row, "city", ["chennai"]))  # insert: a second copy
    assert _checks(root)["record_index"] == 6
    lakecore.open(str(root)).delete(f"uuid = '{key}' AND city = 'chennai'")
    assert key in _data(root).column("uuid").to_pylist()  # the san_francisco copy lives
    assert key in _indexed_keys(root)
    table, index = _secondary_pairs(root, "secondary_index_rider_idx", "rider")
    assert table == index


@pytest.mark.parametrize(
    ("name", "key"),
    [("cow_v9_timebasedkeygen_unixtimestamp", "TXN-001"), (V9_ROLLBACK, "TXN-002")],
)
def test_an_upsert_of_a_key_spark_stored_twice_keeps_it_indexed(
    name: str, key: str, tmp_path: Path
) -> None:
    root = copy_corpus_table(name, tmp_path)
    data = _data(root)
    assert data.column("txn_id").to_pylist().count(key) == 2  # as Spark wrote the table
    assert _checks(root)["record_index"] > 0  # Spark's index holds the key
    row = data.filter(pc.equal(data.column("txn_id"), key)).slice(0, 1)
    upsert(lakecore.open(str(root)), _set(_set(row, "txn_ts", [2**50]), "merchant_name", ["U"]))
    after = _data(root)
    assert after.filter(pc.equal(after.column("txn_id"), key))["merchant_name"].to_pylist() == ["U"]
    assert key in _indexed_keys(root)
    assert_record_index_matches_table(root)


# ------------------------------------------------------- column stats vs lakecore's planner


def _supplementary_in_one_log(tmp_path: Path) -> Path:
    """V9_ROLLBACK with one upsert putting U+1F600 and U+FF61 into ``merchant_name`` of two
    rows of one file group (one log block)."""
    root = copy_corpus_table(V9_ROLLBACK, tmp_path)
    data = _data(root)
    both = data.filter(pc.is_in(data.column("txn_id"), pa.array(["TXN-001", "TXN-003"])))
    both = _set(both, "merchant_name", ["\U0001f600", "\uff61"])
    both = _set(both, "txn_ts", [v + 1000 for v in both.column("txn_ts").to_pylist()])
    upsert(lakecore.open(str(root)), both)
    return root


def test_scan_finds_a_supplementary_character_written_to_a_log(tmp_path: Path) -> None:
    root = _supplementary_in_one_log(tmp_path)
    table = lakecore.open(str(root))
    assert table.count("merchant_name = '\uff61'") == 1
    assert sorted(table.to_arrow(columns=["merchant_name"])["merchant_name"].to_pylist()) == [
        "Netflix",
        "Netflix",
        "\uff61",
        "\U0001f600",
    ]
    found = table.scan("merchant_name = '\U0001f600'", columns=["txn_id"]).to_arrow()
    assert found.column("txn_id").to_pylist() == ["TXN-001"]


def test_delete_by_a_supplementary_character_deletes_the_row(tmp_path: Path) -> None:
    root = _supplementary_in_one_log(tmp_path)
    result = lakecore.open(str(root)).delete("merchant_name = '\U0001f600'")
    assert "\U0001f600" not in _data(root).column("merchant_name").to_pylist()
    assert result.rows_deleted == 1


# ------------------------------------------------------------------------ untyped errors


@pytest.mark.parametrize("long", ["record key", "secondary index value"])
def test_an_unindexable_long_key_is_a_typed_error_before_any_file(
    long: str, tmp_path: Path
) -> None:
    from lakecore.errors import LakecoreError

    root = copy_corpus_table(V8_TRIPS, tmp_path)
    row = _set(_data(root).slice(0, 1), "uuid", ["long-value"])
    if long == "record key":
        row = _set(row, "uuid", ["\u00e9" * 20_000])  # 40000 UTF-8 bytes
    else:
        row = _set(row, "rider", ["r" * 40_000])
    before = files_on_disk(root)
    timeline = sorted(p.name for p in (root / ".hoodie" / "timeline").iterdir())
    with pytest.raises(LakecoreError):
        lakecore.open(str(root)).append(row)
    assert _new_instants(root, timeline) <= {"rollback"}  # a rollback, nothing pending
    assert files_on_disk(root) == before


# ----------------------------------------------------------------------- failed writers


class Crash(BaseException):
    """A writer dying mid-operation (not an error any code path handles)."""


def _clean_dies_in(step: str, root: Path, monkeypatch: pytest.MonkeyPatch) -> pa.Table:
    """Upsert one row and compact (so that a clean has files to delete), then run a clean
    that dies in ``lakecore_hudi.write.clean.<step>``; returns the rows before the upsert."""
    from lakecore_hudi.write import clean

    data = _data(root)
    upsert(lakecore.open(str(root)), _set(data.slice(0, 1), "txn_ts", [2**50]))
    lakecore.open(str(root)).compact()

    def crash(*args: Any, **kwargs: Any) -> None:
        raise Crash

    with monkeypatch.context() as patched:
        patched.setattr(clean, step, crash)
        with pytest.raises(Crash):
            lakecore.open(str(root)).clean(retain_commits=1)
    return data


@pytest.mark.parametrize("dies_in", ["record_clean", "complete"])
def test_a_clean_that_died_leaves_no_column_stats_of_deleted_files(
    dies_in: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = copy_corpus_table(V9_ROLLBACK, tmp_path)
    data = _clean_dies_in(dies_in, root, monkeypatch)
    lakecore.open(str(root)).append(_set(data.slice(0, 1), "txn_id", ["NEW"]))
    assert mdt_listing(root) == files_on_disk(root)  # the files partition is repaired
    assert assert_column_stats_match_files(root) > 0


def test_a_clean_that_died_does_not_stop_metadata_compaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(maintain, "MAX_DELTA_COMMITS", 3)
    root = copy_corpus_table(V9_ROLLBACK, tmp_path)
    data = _clean_dies_in("complete", root, monkeypatch)
    timeline = root / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    before = {p.name for p in timeline.iterdir() if p.name.endswith(".commit")}
    for i in range(7):  # 7 delta commits: two compactions due
        lakecore.open(str(root)).append(_set(data.slice(0, 1), "txn_id", [f"N{i}"]))
    after = {p.name for p in timeline.iterdir() if p.name.endswith(".commit")}
    assert after - before, "no metadata compaction after 7 delta commits (3 due)"


def test_a_clean_after_a_half_done_clean_tombstones_every_deleted_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = copy_corpus_table(V8_TRIPS, tmp_path)
    data = _data(root)
    for i in range(3):
        upsert(lakecore.open(str(root)), _set(data, "ts", [2**50 + i] * len(data)))
    lakecore.open(str(root)).compact()
    table = lakecore.open(str(root))
    storage_type = type(table.storage)
    real_delete = storage_type.delete
    deleted = []

    def delete(self: Any, path: str) -> None:
        if len(deleted) == 2:
            raise Crash
        real_delete(self, path)
        deleted.append(path)

    with monkeypatch.context() as patched:
        patched.setattr(storage_type, "delete", delete)
        with pytest.raises(Crash):
            table.clean(retain_commits=1)
    lakecore.open(str(root)).append(_set(data.slice(0, 1), "uuid", ["new-key"]))
    assert len(lakecore.open(str(root)).clean(retain_commits=1)) > 0
    assert assert_column_stats_match_files(root) > 0


def test_a_metadata_error_at_commit_leaves_the_table_as_it_was(tmp_path: Path) -> None:
    import shutil

    from lakecore.errors import CorruptTableError

    root = copy_corpus_table(V8_TRIPS, tmp_path)
    shutil.rmtree(root / ".hoodie" / "metadata" / "record_index")
    before = files_on_disk(root)
    timeline = sorted(p.name for p in (root / ".hoodie" / "timeline").iterdir())
    row = _set(_data(root).slice(0, 1), "uuid", ["new-key"])
    with pytest.raises(CorruptTableError, match="record_index"):
        lakecore.open(str(root)).append(row)
    assert _new_instants(root, timeline) <= {"rollback"}  # a rollback, nothing pending
    assert files_on_disk(root) == before


# ------------------------------------------------------------------------ attacks that held


def _moved(row: pa.Table, city: str, bump: int) -> pa.Table:
    return _set(_set(row, "city", [city]), "ts", [row.column("ts")[0].as_py() + bump])


def test_keys_moving_between_partitions_stay_indexed_once(tmp_path: Path) -> None:
    """Upserts (Hudi upsert, then MERGE) moving a key to another partition: lakecore keeps
    keys unique like the global record index, and every partition follows the move."""
    root = copy_corpus_table(V8_TRIPS, tmp_path)
    row = _data(root).slice(1, 1)
    key = row.column("uuid")[0].as_py()
    upsert(lakecore.open(str(root)), _moved(row, "chennai", 1000))
    assert _checks(root)["record_index"] == 6
    moved = _moved(row, "sao_paulo", 2000)
    merge = lakecore.open(str(root)).merge(moved, on=["uuid"]).when_matched_update_all()
    merge.when_not_matched_insert_all().execute()
    assert _checks(root)["record_index"] == 6
    data = _data(root)
    assert data.filter(pc.equal(data.column("uuid"), key))["city"].to_pylist() == ["sao_paulo"]


Step = tuple[str, Callable[[Table], Any]]


def _run(root: Path, steps: list[Step]) -> list[tuple[str, int, int]]:
    out = []
    for name, step in steps:
        step(lakecore.open(str(root)))
        done = _checks(root)
        out.append((name, done["record_index"], done.get("secondary_index", -1)))
    return out


def test_duplicates_missing_keys_and_null_index_values(tmp_path: Path) -> None:
    """An upsert batch repeating a new key (combined to one row), a delete of keys that do
    not exist, the indexed column set to NULL and back, every row of a partition deleted,
    then compaction and clean: every partition equals the table after each."""
    root = copy_corpus_table(V8_TRIPS, tmp_path)
    row = _set(_data(root).slice(1, 1), "uuid", ["new-key"])
    later = _set(_set(row, "ts", [row.column("ts")[0].as_py() + 5]), "rider", ["rider-Z"])
    steps: list[Step] = [
        ("upsert repeating a key", lambda t: upsert(t, pa.concat_tables([row, later]))),
        ("delete of no key", lambda t: t.delete("uuid = 'no-such-key'")),
        ("index value to null", lambda t: t.update({"rider": "NULL"}, where="uuid = 'new-key'")),
        ("and back", lambda t: t.update({"rider": "'back'"}, where="uuid = 'new-key'")),
        ("empty a partition", lambda t: t.delete("city = 'sao_paulo'")),
        ("compact", lambda t: t.compact()),
        ("clean", lambda t: t.clean(retain_commits=1)),
    ]
    assert _run(root, steps) == [
        ("upsert repeating a key", 7, 7),
        ("delete of no key", 7, 7),
        ("index value to null", 7, 7),
        ("and back", 7, 7),
        ("empty a partition", 6, 6),
        ("compact", 6, 6),
        ("clean", 6, 6),
    ]
    data = _data(root)
    assert data.filter(pc.equal(data.column("uuid"), "new-key"))["rider"].to_pylist() == ["back"]


def test_replace_commits_then_writes_on_a_partitioned_cow_table(tmp_path: Path) -> None:
    """CoW: every row of a partition deleted, the partition overwritten (replacecommit), an
    upsert after it, a key moved out, an overwrite creating a partition, a column added,
    a clean: every partition (partition_stats too) equals the table after each."""
    root = copy_corpus_table(V9_COW, tmp_path)
    data = _data(root)
    apac = data.filter(pc.equal(data.column("region"), "apac"))
    bumped = _set(apac, "txn_ts", [v + 10 for v in apac.column("txn_ts").to_pylist()])
    moved = _set(_set(apac.slice(0, 1), "region", ["us"]), "txn_ts", [1])
    moved = _set(moved, "txn_ts", [apac.column("txn_ts")[0].as_py() + 100])
    fresh = _set(_set(moved, "region", ["newregion"]), "txn_id", ["TXN-NEW"])
    extra = _set(moved, "txn_id", ["TXN-COL"]).append_column("extra", pa.array([7], pa.int32()))
    steps: list[Step] = [
        ("empty a partition", lambda t: t.delete("region = 'apac'")),
        ("overwrite it", lambda t: t.overwrite(apac, where="region = 'apac'")),
        ("upsert", lambda t: upsert(t, bumped)),
        ("move out", lambda t: upsert(t, moved)),
        ("new partition", lambda t: t.overwrite(fresh, where="region = 'newregion'")),
        ("add column", lambda t: t.append(extra, schema_mode="merge")),
        ("clean", lambda t: t.clean(retain_commits=1)),
    ]
    assert [(n, r) for n, r, _ in _run(root, steps)] == [
        ("empty a partition", 2),
        ("overwrite it", 3),
        ("upsert", 3),
        ("move out", 3),
        ("new partition", 4),
        ("add column", 5),
        ("clean", 5),
    ]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "every"), [(V9_TWO_SI, 10), (V8_TRIPS, 1)])
def test_delete_and_reinsert_across_metadata_compactions(
    name: str, every: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key inserted, deleted, re-inserted by upsert, deleted again, then inserts, an
    update, a delete, a data compaction and clean and a re-insert, with the metadata table
    compacting at Hudi's 10th delta commit (and, on the v8 table, after every one): the
    record index and secondary indexes never keep a deleted key nor lose a live one."""
    monkeypatch.setattr(maintain, "MAX_DELTA_COMMITS", every)
    root = copy_corpus_table(name, tmp_path)
    data = _data(root)
    key = "txn_id" if "txn_id" in data.column_names else "uuid"
    order = "txn_ts" if "txn_ts" in data.column_names else "ts"
    base = data.slice(0, 1)
    start = len(data)

    def row(k: str, o: int) -> pa.Table:
        return _set(_set(base, key, [k]), order, [o])

    steps: list[Step] = [
        ("insert", lambda t: t.append(row("K1", 1))),
        ("delete", lambda t: t.delete(f"{key} = 'K1'")),
        ("upsert back", lambda t: upsert(t, row("K1", 5))),
        ("delete again", lambda t: t.delete(f"{key} = 'K1'")),
        *[(f"insert {i}", lambda t, i=i: t.append(row(f"N{i}", i))) for i in range(7)],
        ("update", lambda t: upsert(t, row("N1", 100))),
        ("delete N2", lambda t: t.delete(f"{key} = 'N2'")),
        ("compact", lambda t: t.compact()),
        ("clean", lambda t: t.clean(retain_commits=1)),
        ("insert again", lambda t: t.append(row("K1", 7))),
    ]
    keys = [r for _, r, _ in _run(root, steps)]
    distinct = len(set(data.column(key).to_pylist()))
    assert keys == [distinct + n for n in (1, 0, 1, 0, 1, 2, 3, 4, 5, 6, 7, 7, 6, 6, 6, 7)]
    assert start == len(data)
    timeline = root / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    compactions = [p for p in timeline.iterdir() if p.name.endswith(".commit")]
    assert len(compactions) >= 2  # the corpus's own plus at least one of lakecore's


def _literal(value: Any, t: pa.DataType) -> str:
    if pa.types.is_string(t):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if pa.types.is_timestamp(t):
        return f"TIMESTAMP '{value.astimezone(dt.timezone.utc):%Y-%m-%d %H:%M:%S.%f}+00:00'"
    if pa.types.is_date(t):
        return f"DATE '{value.isoformat()}'"
    if pa.types.is_decimal(t):
        return f"CAST('{value}' AS DECIMAL({t.precision},{t.scale}))"
    if pa.types.is_boolean(t):
        return "true" if value else "false"
    return str(value)


def _skipping_misses(root: Path, key: str) -> tuple[int, list[tuple[str, Any, Any]]]:
    """Scan ``column = value`` (or ``IS NULL``) for every live row and column: the planner,
    pruning with the metadata table's column stats, must return the row. Returns (scans,
    misses)."""
    table = lakecore.open(str(root))
    data = _data(root)
    scans, misses = 0, []
    for row in data.to_pylist():
        for name in data.column_names:
            value = row[name]
            literal = _literal(value, data.schema.field(name).type) if value is not None else ""
            where = f"`{name}` = {literal}" if literal else f"`{name}` IS NULL"
            found = table.scan(where, columns=[key]).to_arrow().column(key).to_pylist()
            scans += 1
            if row[key] not in found:
                misses.append((name, value, row[key]))
    return scans, misses


def test_data_skipping_keeps_every_row_of_every_type(tmp_path: Path) -> None:
    """Rows with edge values of every indexed type (negative decimals, the largest
    decimal(15,2), pre-1970 and far-future timestamps and dates, the empty string, a
    5000-character string, non-ASCII, all-null columns) inserted (base files), then written
    over existing rows (log files), then compacted: after each, lakecore's planner, pruning
    with the column stats lakecore wrote, finds every row by every column's value."""
    root = copy_corpus_table(V9_ROLLBACK, tmp_path)
    base = _data(root).slice(0, 1)
    utc = dt.timezone.utc

    def row(**values: Any) -> pa.Table:
        out = base
        for name, value in values.items():
            out = _set(out, name, [value])
        return out

    edge = pa.concat_tables(
        [
            row(
                txn_id="A1",
                amount=Decimal("-0.01"),
                fee_amount=Decimal("-99999999.99"),
                txn_datetime=dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=utc),
                txn_date=dt.date(1969, 12, 31),
                merchant_name="",
                currency=None,
                txn_ts=-5,
            ),
            row(
                txn_id="A2",
                amount=Decimal("9999999999999.99"),
                txn_datetime=dt.datetime(2262, 1, 1, tzinfo=utc),
                txn_date=dt.date(9999, 12, 31),
                merchant_name="z" * 5000,
                currency=None,
                txn_ts=2**62,
            ),
            row(
                txn_id="A3",
                amount=None,
                fee_amount=None,
                txn_datetime=None,
                txn_date=None,
                merchant_name="\u00e9\u00ff",
                currency=None,
                is_international=None,
                txn_ts=3,
            ),
        ]
    )
    lakecore.open(str(root)).append(edge)
    over = _set(_set(edge.slice(0, 2), "txn_id", ["TXN-001", "TXN-003"]), "txn_ts", [2**62] * 2)
    upsert(lakecore.open(str(root)), over)  # one log block over a base file
    scans, misses = _skipping_misses(root, "txn_id")
    assert (scans, misses) == (84, [])
    lakecore.open(str(root)).compact()
    assert _skipping_misses(root, "txn_id") == (84, [])
    assert _checks(root)["record_index"] == 6


_WRITER = """
import random, sys
import pyarrow as pa
import lakecore
from lakecore.errors import CommitConflictError
from lakecore_hudi.mdt import maintain
from tests.hudi.write.helpers import upsert

maintain.MAX_DELTA_COMMITS = 3
root, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
rnd = random.Random(tag)
done = conflicts = 0
for i in range(n):
    t = lakecore.open(root)
    d = t.to_arrow()
    d = d.drop_columns([c for c in d.column_names if c.startswith("_hoodie_")])
    r = d.slice(rnd.randrange(len(d)), 1)
    kind = rnd.choice(["move", "insert", "delete", "compact"])
    try:
        if kind == "move":
            r = r.set_column(5, "city", pa.array([rnd.choice(["chennai", "sao_paulo", "lima"])]))
            r = r.set_column(0, "ts", pa.array([r.column("ts")[0].as_py() + 1000]))
            upsert(t, r.set_column(2, "rider", pa.array([f"{tag}{i}"])))
        elif kind == "insert":
            t.append(r.set_column(1, "uuid", pa.array([f"{tag}-{i}"])))
        elif kind == "delete" and len(d) > 4:
            t.delete(f"uuid = '{r.column('uuid')[0].as_py()}'")
        elif kind == "compact":
            t.compact()
        done += 1
    except CommitConflictError:
        conflicts += 1
print(done, conflicts)
"""


@pytest.mark.slow
def test_two_writer_processes_keep_every_partition(tmp_path: Path) -> None:
    """Two processes each run 15 random operations (moves between partitions, inserts,
    deletes, compactions; conflicts are CommitConflictError) on a table with every
    partition, the metadata table compacting every 3 delta commits: afterwards every
    partition equals the table, and every key lives once."""
    import subprocess
    import sys

    root = copy_corpus_table(V8_TRIPS, tmp_path)
    script = tmp_path / "writer.py"
    script.write_text(_WRITER)
    env = {"PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    writers = [
        subprocess.Popen(
            [sys.executable, str(script), str(root), tag, "15"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **env},
        )
        for tag in ("P", "Q")
    ]
    outcomes = [w.communicate(timeout=300) for w in writers]
    for w, (out, err) in zip(writers, outcomes, strict=True):
        assert w.returncode == 0, err[-2000:]
        done, conflicts = map(int, out.split())
        assert done + conflicts == 15
    done = _checks(root)
    keys = _data(root).column("uuid").to_pylist()
    assert len(keys) == len(set(keys)) == done["record_index"] == done["secondary_index"]


@pytest.mark.parametrize("at", ["write_inflight", "complete"])
def test_a_write_landing_while_a_clean_compacts_the_metadata_table(
    at: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A clean records its metadata delta commit without the table lock (it takes the lock
    only to claim its instant), so the metadata compaction that delta commit triggers can
    run while another writer commits. Simulated: the clean's metadata compaction pauses
    after writing its plan (or its base files) while a writer commits in full, whose own
    metadata maintenance (``recover_table_services``) sees the clean's compaction pending
    and takes it for a dead one. Every partition still equals the table afterwards (the
    rolled-back compaction's base files are gone; the writer's compaction covers them)."""
    from lakecore_hudi.mdt import compaction

    root = copy_corpus_table(V8_TRIPS, tmp_path)
    data = _data(root)
    upsert(lakecore.open(str(root)), _set(data, "ts", [2**50] * len(data)))
    lakecore.open(str(root)).compact()
    monkeypatch.setattr(maintain, "MAX_DELTA_COMMITS", 1)  # the clean's delta commit compacts
    real = getattr(compaction, at)
    landed = []

    def pause(*args: Any, **kwargs: Any) -> Any:
        if not landed:
            landed.append(True)
            lakecore.open(str(root)).append(_set(data.slice(0, 1), "uuid", ["writer"]))
        return real(*args, **kwargs)

    monkeypatch.setattr(compaction, at, pause)
    assert len(lakecore.open(str(root)).clean(retain_commits=1)) > 0
    assert landed
    assert _checks(root)["record_index"] == 7


def test_escaped_secondary_keys_and_values_stay_exact(tmp_path: Path) -> None:
    """Record keys holding ``$`` and ``\\`` and secondary index values holding ``$``,
    ``\\``, NUL, a supplementary character, the empty string and NULL (version 9: routed by
    the escaped value) inserted, then every value changed by an upsert (log files), then
    compacted: both secondary indexes and the record index equal the table after each."""
    root = copy_corpus_table(V9_TWO_SI, tmp_path)
    values = ["a$b", "\\", "\x00", "\U0001f600", "", None, "$", "\\$", "x\x00y"]
    rows = pa.concat_tables([_data(root).slice(0, 1)] * len(values))
    rows = _set(rows, "txn_id", [f"S{i}$" + ("\\" if i % 2 else "") for i in range(len(values))])
    lakecore.open(str(root)).append(_set(rows, "merchant_name", values))
    assert _checks(root)["secondary_index"] == 46
    changed = _set(_set(rows, "merchant_name", values[::-1]), "txn_ts", [2**50] * len(values))
    upsert(lakecore.open(str(root)), changed)
    assert _checks(root)["secondary_index"] == 46
    lakecore.open(str(root)).compact()
    assert _checks(root)["secondary_index"] == 46


def test_upserts_collapsing_a_key_stored_in_several_partitions(tmp_path: Path) -> None:
    """A key stored twice by inserts (two partitions, two rider values), upserted into a
    third partition, stored twice again, upserted back into its first partition, updated,
    compacted: every copy is collapsed into the upserted row and record_index / the
    secondary index follow each step (the fix of fd51ff1, and what it must not break)."""
    root = copy_corpus_table(V8_TRIPS, tmp_path)
    row = _data(root).slice(1, 1)
    key = row.column("uuid")[0].as_py()

    def copy_of(city: str, rider: str) -> pa.Table:
        return _set(_set(row, "city", [city]), "rider", [rider])

    def located() -> list[dict[str, Any]]:
        data = _data(root)
        return data.filter(pc.equal(data.column("uuid"), key)).select(["city", "rider"]).to_pylist()

    lakecore.open(str(root)).append(copy_of("chennai", "R2"))
    assert _checks(root)["secondary_index"] == 7  # two (value, key) pairs of one key
    upsert(lakecore.open(str(root)), _set(copy_of("lima", "R3"), "ts", [2**50]))
    assert located() == [{"city": "lima", "rider": "R3"}]
    assert _checks(root)["record_index"] == 6
    lakecore.open(str(root)).append(copy_of("chennai", "R4"))
    upsert(lakecore.open(str(root)), _set(copy_of("san_francisco", "R5"), "ts", [2**51]))
    assert located() == [{"city": "san_francisco", "rider": "R5"}]
    assert _checks(root)["record_index"] == 6
    lakecore.open(str(root)).update({"rider": "'R6'"}, where=f"uuid = '{key}'")
    lakecore.open(str(root)).compact()
    done = _checks(root)
    assert (done["record_index"], done["secondary_index"]) == (6, 6)


def test_a_one_row_upsert_does_not_list_the_whole_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = copy_corpus_table(V9_ROLLBACK, tmp_path)
    props = root / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text() + "hoodie.parquet.max.file.size=20000\n")
    data = _data(root)
    many = pa.concat_tables([data.slice(0, 1)] * 1500)
    lakecore.open(str(root)).append(_set(many, "txn_id", [f"B{i:04d}" for i in range(1500)]))
    groups = {n.split("_")[0] for n in files_on_disk(root)[""] if n.endswith(".parquet")}
    assert len(groups) > 40  # the table has many file groups
    table = lakecore.open(str(root))
    storage_type = type(table.storage)
    real = storage_type.list_dir
    listed: list[str] = []

    def list_dir(self: Any, path: str) -> Any:
        found = real(self, path)
        listed.extend(i.path for i in found if not i.path.startswith(".hoodie"))
        return found

    monkeypatch.setattr(storage_type, "list_dir", list_dir)
    upsert(table, _set(data.slice(0, 1), "txn_ts", [2**50]))
    monkeypatch.undo()
    assert _checks(root)["record_index"] == 1503
    assert len(listed) < 10, f"a one-row upsert listed {len(listed)} data files"


def test_a_one_row_upsert_does_not_read_every_footer_of_its_partition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = copy_corpus_table(V8_TRIPS, tmp_path)
    props = root / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text() + "hoodie.parquet.max.file.size=20000\n")
    many = pa.concat_tables([_data(root).slice(0, 1)] * 1500)
    many = _set(_set(many, "uuid", [f"B{i:04d}" for i in range(1500)]), "city", ["lima"] * 1500)
    lakecore.open(str(root)).append(many)
    assert len(files_on_disk(root)["city=lima"]) > 40  # one partition, many file groups
    table = lakecore.open(str(root))
    storage_type = type(table.storage)
    real = storage_type.open_input
    opened: list[str] = []

    def open_input(self: Any, path: str) -> Any:
        if not path.startswith(".hoodie"):
            opened.append(path)
        return real(self, path)

    monkeypatch.setattr(storage_type, "open_input", open_input)
    upsert(table, _set(many.slice(0, 1), "ts", [2**50]))
    monkeypatch.undo()
    assert _checks(root)["record_index"] == 1506
    assert len(opened) < 10, f"a one-row upsert opened {len(opened)} data files"


_KILLED = """
import os, sys
import pyarrow as pa
import lakecore
from lakecore_hudi.write import commit
from tests.hudi.write.helpers import upsert

def die(*args, **kwargs):
    os._exit(9)  # killed: no finally runs, the heartbeat file stays

commit.complete = die  # after the metadata delta commit, before the data instant completes
table = lakecore.open(sys.argv[1])
data = table.to_arrow()
data = data.drop_columns([c for c in data.column_names if c.startswith("_hoodie_")])
moved = data.slice(1, 1).set_column(5, "city", pa.array(["chennai"]))
moved = moved.set_column(0, "ts", pa.array([moved.column("ts")[0].as_py() + 1000]))
upsert(table, pa.concat_tables([moved, data.slice(2, 1).set_column(1, "uuid", pa.array(["k"]))]))
"""


@pytest.mark.slow
def test_a_writer_killed_after_its_metadata_delta_commit(tmp_path: Path) -> None:
    """A process killed (os._exit) after its metadata delta commit of an upsert moving a key
    and inserting one, before completing the data instant: while its heartbeat lives, the
    next write lands and every partition ignores the dead instant; once it expired, the
    next write rolls it back (data and metadata) and every partition equals the table."""
    import subprocess
    import sys
    import time

    root = copy_corpus_table(V8_TRIPS, tmp_path)
    props = root / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text() + "hoodie.client.heartbeat.interval_in_ms=500\n")
    before = _rows(lakecore.open(str(root)).to_arrow())
    script = tmp_path / "killed.py"
    script.write_text(_KILLED)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    run = subprocess.run([sys.executable, str(script), str(root)], env=env, timeout=300)
    assert run.returncode == 9
    assert _rows(lakecore.open(str(root)).to_arrow()) == before
    assert _rows(hudi_rs_table(root)) == before
    assert assert_record_index_matches_table(root) == 6
    assert assert_secondary_index_matches_table(root) == 6
    data = _data(root)
    sao_paulo = data.filter(pc.equal(data.column("city"), "sao_paulo"))
    upsert(lakecore.open(str(root)), _set(sao_paulo, "ts", [2**50]))  # heartbeat still alive
    assert assert_record_index_matches_table(root) == 6
    time.sleep(2)  # the dead writer's heartbeat expires (2 misses of 500 ms)
    lakecore.open(str(root)).append(_set(data.slice(0, 1), "uuid", ["after"]))
    timeline = [p.name for p in (root / ".hoodie" / "timeline").iterdir()]
    assert any(n.endswith(".rollback") for n in timeline)
    assert _checks(root)["record_index"] == 7


# ------------------------------------------------------------- outside the metadata table


@pytest.mark.parametrize("metadata", ["false", "true"])
def test_an_empty_string_partition_value_is_found_by_its_value(
    metadata: str, tmp_path: Path
) -> None:
    from tests.hudi.write.helpers import create, rows

    table = create(tmp_path / "t", "COPY_ON_WRITE", metadata_enable=metadata)
    table.append(rows((1, "a", 1, ""), (2, "b", 1, None), (3, "c", 1, "x")))
    table = lakecore.open(str(tmp_path / "t"))
    assert table.to_arrow(columns=["id", "city"]).sort_by("id").to_pylist() == [
        {"id": 1, "city": ""},
        {"id": 2, "city": None},
        {"id": 3, "city": "x"},
    ]
    assert table.count("city IS NULL") == 1
    assert table.scan("city = ''", columns=["id"]).to_arrow().column("id").to_pylist() == [1]
