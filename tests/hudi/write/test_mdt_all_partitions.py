"""Spark-written tables with a full metadata table take lakecore writes (issue 13).

Every corpus Hudi table whose metadata table has partitions beyond ``files`` (column_stats,
partition_stats, record_index, secondary indexes), copied, takes a lakecore insert, upsert,
delete, compaction (merge-on-read) and clean. The metadata table compacts every 3 delta
commits here (Hudi: 10), so its compaction and clean run over every partition during the
sequence. After each operation:

- hudi-rs (which lists files through the metadata table) reads the rows lakecore reads (and,
  before the clean, at every earlier write instant too);
- the ``files`` partition lists exactly the data files on storage;
- ``read_column_stats`` gives every live data file the stats of its footer (and the
  column_stats generator's own check: every live record equals the stats recomputed);
- every partition-stats record equals the range over its partition's live files (only
  bounds it after a replace commit, as Hudi's);
- the record index and secondary indexes hold exactly the table's live records.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lakecore_hudi.mdt import maintain
from lakecore_hudi.mdt.column_stats import read_column_stats
from lakecore_hudi.mdt.partition_spec import is_maintained
from lakecore_hudi.table_config import read_table_config

import lakecore
from lakecore.errors import LakecoreError, UnsupportedFeatureError, VersionNotFoundError
from lakecore.storage import open_storage
from lakecore.testing.faults import MUTATING
from tests.corpus import CORPUS
from tests.hudi.test_column_stats import MDT_TABLES, _check_row
from tests.hudi.write.helpers import copy_corpus_table, files_on_disk
from tests.hudi.write.mdt_table_checks import check_every_partition, new_keys, operations
from tests.reliability.faulty_ops import open_faulty

Row = dict[str, Any]


def _rows(table: pa.Table) -> list[Row]:
    data = table.drop_columns([c for c in table.column_names if c.startswith("_hoodie_")])
    return sorted(data.to_pylist(), key=lambda r: json.dumps(r, sort_keys=True, default=str))


def _checks(root: Path) -> dict[str, int]:
    """Every check of the module docstring; returns what each checked (for the counts)."""
    done = check_every_partition(root)
    if "column_stats" in done:
        done["column_stats_records"] = done["column_stats"]
        done["column_stats"] = _column_stats_match_footers(root)
    return done


def _column_stats_match_footers(root: Path) -> int:
    """``read_column_stats`` gives every live Parquet base file its record count and, for
    every column it indexes, the min, max and null count of the file's data (the footer's
    stats where sound); returns the number of files checked."""
    storage = open_storage(str(root))
    config = read_table_config(storage)
    paths = [
        f"{p}/{n}" if p else n
        for p, names in files_on_disk(root).items()
        for n in names
        if n.endswith(".parquet")
    ]
    checked = 0
    for path in sorted(paths):
        schema = pq.read_schema(root / path).remove_metadata()
        stats = read_column_stats(storage, config, [path], schema=schema)
        assert stats is not None
        row = stats.to_pylist()[0]
        assert row["record_count"] is not None, f"{path}: no column stats"
        known, unknown = _check_row(row, pq.read_table(root / path))
        assert known > 0 and unknown == 0, path
        checked += 1
    return checked


def _declared(name: str) -> tuple[str, ...]:
    storage = open_storage(str(CORPUS / "hudi" / name))
    return read_table_config(storage).metadata_partitions


FULL_TABLES = tuple(n for n in MDT_TABLES if set(_declared(n)) - {"files"})
"""Every corpus table whose metadata table has partitions beyond ``files`` (all six)."""

WRITABLE = (
    "cow_v9_timebasedkeygen_unixtimestamp",
    "cow_v9_txns_simple_overwrite",
    "mor_avro_v8_trips_8i3u1d",
    "mor_avro_v9_nonpartitioned_rollback",
    "mor_avro_v9_txns_nonpart_meta",
)
"""The tables lakecore writes: every partition of theirs is maintained."""

LANCE = ("mor_avro_v9_lance_nonhivestyle",)
"""The other one, with Lance base files: ``test_lance_base_files`` runs the same operations
and checks there (its Lance base files have no column stats, so ``_run_all``'s rule that every
check counts something does not hold for it)."""


def _time_travel_agrees(root: Path) -> int:
    """hudi-rs (listing through the metadata table) reads lakecore's rows at every completed
    write instant, Spark's and lakecore's; returns how many were compared."""
    from tests.hudi.write.helpers import hudi_rs

    table = lakecore.open(str(root))
    compared = 0
    for entry in table.history():
        version = str(entry.version)
        try:
            ours = _rows(table.scan(version=version).to_arrow())
        except VersionNotFoundError:
            continue  # not a write (a rollback, an index build)
        module = hudi_rs()
        options = module.HudiReadOptions().with_as_of_timestamp(version)
        batches = module.HudiTableBuilder.from_base_uri(str(root)).build().read(options)
        assert (_rows(pa.Table.from_batches(batches)) if batches else []) == ours, version
        compared += 1
    return compared


def _run_all(root: Path) -> list[str]:
    _checks(root)  # Spark's own metadata table, as found
    done = []
    for op, run in operations(lakecore.open(str(root))):
        if op == "clean":  # before it deletes the files of older instants
            assert _time_travel_agrees(root) >= 5
        run()
        counts = _checks(root)
        empty = [check for check, n in counts.items() if n == 0]
        assert not empty, f"{op}: nothing checked by {empty}"
        done.append(op)
    return done


def test_a_full_metadata_table_takes_every_operation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(maintain, "MAX_DELTA_COMMITS", 3)
    root = copy_corpus_table("mor_avro_v9_nonpartitioned_rollback", tmp_path)
    assert _declared(root.name) == ("column_stats", "files", "record_index")
    assert _run_all(root) == ["insert", "upsert", "delete", "compact", "clean"]
    timeline = root / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    assert [p for p in timeline.iterdir() if p.name.endswith(".commit")]  # it compacted
    assert [p for p in timeline.iterdir() if p.name.endswith(".clean")]  # and cleaned


def test_the_corpus_tables_are_all_covered() -> None:
    assert len(FULL_TABLES) == 6
    assert sorted(FULL_TABLES) == sorted([*WRITABLE, *LANCE])
    assert all(is_maintained(p) for n in WRITABLE for p in _declared(n))


@pytest.mark.slow
@pytest.mark.parametrize("name", WRITABLE)
def test_every_full_metadata_table_takes_every_operation(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(maintain, "MAX_DELTA_COMMITS", 3)
    root = copy_corpus_table(name, tmp_path)
    done = _run_all(root)
    merge_on_read = name.startswith("mor")
    assert done == ["insert", "upsert", "delete", *(["compact"] if merge_on_read else []), "clean"]
    timeline = root / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    assert [p for p in timeline.iterdir() if p.name.endswith(".commit")]  # it compacted


# ------------------------------------------------------------------------------- faults

SMALL = "mor_avro_v9_nonpartitioned_rollback"
FAULT_CASES = {
    "delta commit": (SMALL, [], "insert"),
    "metadata compaction": (SMALL, ["insert"], "upsert"),
    "metadata compaction, 5 partitions": (
        "mor_avro_v8_trips_8i3u1d",
        ["insert", "upsert"],
        "delete",
    ),
}
"""(table, operations run first, the operation faulted): an insert's delta commit writing
every partition; an upsert or delete whose delta commit comes after a metadata compaction and
clean of every partition (3 delta commits due)."""


def _pending_table_services(root: Path) -> list[str]:
    """The metadata compactions and cleans left pending (a next writer must finish them)."""
    timeline = root / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    names = [p.name for p in timeline.iterdir()]
    done = {n.split("_")[0].split(".")[0] for n in names if "_" in n.split(".")[0]}
    return sorted(
        n for n in names if (".compaction." in n or ".clean." in n) and n.split(".")[0] not in done
    )


def _state(root: Path) -> list[Row]:
    return _rows(lakecore.open(str(root)).to_arrow())


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(FAULT_CASES))
def test_faults_on_a_multi_partition_metadata_commit(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A storage fault at every metadata-table write of the operation (``before``: the call
    never lands; ``after``: it lands and its reply is lost): the error, if any, is a
    LakecoreError; the table reads as before or after; a next writer's insert lands; then
    every check of ``_checks`` holds (all partitions readable and right)."""
    monkeypatch.setattr(maintain, "MAX_DELTA_COMMITS", 3)
    table_name, first, name = FAULT_CASES[case]
    template = copy_corpus_table(table_name, tmp_path / "template")
    for op in first:
        dict(operations(lakecore.open(str(template))))[op]()
    before = _state(template)
    counting = tmp_path / "counting"
    shutil.copytree(template, counting)
    table, faulty = open_faulty(counting)
    dict(operations(table))[name]()
    calls = list(faulty.calls)
    after = _state(counting)
    chosen = [
        i
        for i, c in enumerate(calls)
        if c.method in MUTATING and c.path.startswith(".hoodie/metadata/")
    ]
    partitions = {c.path.split("/")[2] for c in calls if c.path.startswith(".hoodie/metadata/")}
    assert set(_declared(table_name)) <= partitions, partitions
    failures = []
    for n, index in enumerate(chosen):
        for mode in ("before", "after"):
            root = tmp_path / f"case{n}{mode}"
            shutil.copytree(template, root)
            table, faulty = open_faulty(root)
            faulty.arm(index, mode)
            where = f"call {index} {calls[index]} ({mode})"
            try:
                dict(operations(table))[name]()
            except LakecoreError:
                pass
            except BaseException as exc:  # a raw error is a failure
                failures.append(f"{where}: raw {type(exc).__name__}: {exc}")
                continue
            if _state(root) not in (before, after):
                failures.append(f"{where}: partial state")
                continue
            data = lakecore.open(str(root)).to_arrow()
            data = data.drop_columns([c for c in data.column_names if c.startswith("_hoodie_")])
            table = lakecore.open(str(root))
            keys = table.snapshot().properties["hoodie.table.recordkey.fields"].split(",")
            table.append(new_keys(new_keys(data.slice(2, 1), keys), keys))
            try:
                _checks(root)
            except AssertionError as exc:
                failures.append(f"{where}: {str(exc)[:300]}")
            services = _pending_table_services(root)
            if services:
                failures.append(f"{where}: metadata table services left pending: {services}")
    assert not failures, "\n".join(failures)
    assert len(chosen) >= 6, len(chosen)


@pytest.mark.parametrize("operation", ["insert", "compact", "clean"])
def test_an_index_lakecore_cannot_keep_is_refused_before_any_file(
    tmp_path: Path, operation: str
) -> None:
    """A partitioned record index (Hudi 1.1's ``isPartitioned``) is refused by name before
    any write, compaction or clean touches the table."""
    root = copy_corpus_table("mor_avro_v9_txns_nonpart_meta", tmp_path)
    path = root / ".hoodie" / ".index_defs" / "index.json"
    defs = json.loads(path.read_text())
    defs["indexDefinitions"]["record_index"]["indexOptions"]["isPartitioned"] = "true"
    path.write_text(json.dumps(defs))
    before = sorted((str(p), p.stat().st_size) for p in root.rglob("*"))
    with pytest.raises(UnsupportedFeatureError, match="partitioned") as caught:
        dict(operations(lakecore.open(str(root))))[operation]()
    assert caught.value.feature == "hudi-partitioned-record-index"
    assert sorted((str(p), p.stat().st_size) for p in root.rglob("*")) == before
