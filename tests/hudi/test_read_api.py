"""The public reading API on the corpus Hudi tables: open, versions, time travel, history,
incremental changes, options, scans, the file index, planned tasks and the CLI.

Expected answers come from ``expected/hudi/<table>.json`` (hudi-rs as the reference reader);
row digests use the corpus's own ``digest.py``.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import pickle
import shutil
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from lakecore_hudi.names import is_log_file
from typer.testing import CliRunner

import lakecore
from lakecore.cli import app
from lakecore.errors import UnsupportedFeatureError, VersionNotFoundError
from lakecore.planning import read_files
from tests.corpus import CORPUS

HUDI = CORPUS / "hudi"
NO_META = ("_hoodie_",)


def _load_expected() -> dict[str, dict[str, Any]]:
    folder = CORPUS / "expected" / "hudi"
    if not folder.is_dir():
        pytest.fail(f"corpus not found at {CORPUS}; set LAKECORE_CORPUS", pytrace=False)
    return {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}


def _load_digest() -> Callable[..., str]:
    spec = importlib.util.spec_from_file_location("hudi_corpus_digest", CORPUS / "digest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    digest: Callable[..., str] = module.table_digest
    return digest


EXPECTED = _load_expected()
table_digest = _load_digest()
NON_EMPTY = [name for name, e in EXPECTED.items() if e["latest_version"] is not None]
MOR = [name for name in NON_EMPTY if EXPECTED[name]["table_type"] == "MERGE_ON_READ"]


def open_table(name: str, **options: str) -> lakecore.Table:
    return lakecore.open(str(HUDI / name), options=options or None)


def no_meta_digest(table: pa.Table) -> str:
    return table_digest(table, drop_prefixes=NO_META)


def row_texts(table: pa.Table) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in table.to_pylist())


def epoch_ms(instant: str) -> int:
    moment = dt.datetime.strptime(instant[:14], "%Y%m%d%H%M%S").replace(tzinfo=dt.timezone.utc)
    return int(moment.timestamp()) * 1000 + int(instant[14:17])


def test_the_corpus_is_complete() -> None:
    assert len(EXPECTED) == 20
    assert len(NON_EMPTY) == 18
    assert len(MOR) == 9


# ------------------------------------------------------------------------ open and versions


def test_open_detects_hudi_and_reports_the_latest_instant() -> None:
    checked = 0
    for name, expected in EXPECTED.items():
        table = open_table(name)
        assert table.format == "hudi", name
        if expected["latest_version"] is None:
            # no completed commit: the version is "", as the empty snapshot's (issue 14)
            assert table.version == ""
            snapshot = table.snapshot()
            assert (snapshot.version, snapshot.to_arrow().num_rows) == ("", 0)
            assert table.snapshot(version="").to_arrow().num_rows == 0
            want = [f["name"] for f in expected["empty_snapshot"]["schema"]]
            assert snapshot.schema.names == want, name
        else:
            assert table.version == expected["latest_version"], name
            assert isinstance(table.version, str)
        checked += 1
    assert checked == 20


def test_every_expected_version_matches_its_digest() -> None:
    checked = with_rows_file = 0
    for name in NON_EMPTY:
        table = open_table(name)
        for instant, entry in EXPECTED[name]["versions"].items():
            snapshot = table.snapshot(version=instant)
            rows = snapshot.to_arrow()
            assert snapshot.version == instant
            assert snapshot.timestamp == epoch_ms(instant)
            assert rows.num_rows == entry["num_rows"], (name, instant)
            assert no_meta_digest(rows) == entry["digest_no_meta"], (name, instant)
            if entry.get("rows_file"):
                expected_rows = pq.read_table(CORPUS / "expected" / "hudi" / entry["rows_file"])
                assert no_meta_digest(expected_rows) == entry["digest_no_meta"]
                with_rows_file += 1
            checked += 1
    assert (checked, with_rows_file) == (76, 48)


def test_versions_may_be_given_as_integers() -> None:
    table = open_table("cow_v6_nonpartitioned")
    assert table.snapshot(version=20240418173550988).version == "20240418173550988"


@pytest.mark.parametrize("version", ["19990101000000000", "20240418173550989", "latest", ""])
def test_unknown_versions_raise_version_not_found(version: str) -> None:
    table = open_table("cow_v6_nonpartitioned")
    with pytest.raises(VersionNotFoundError, match="not a completed commit"):
        table.snapshot(version=version)


def test_timestamps_pick_the_newest_instant_at_or_before_them() -> None:
    checked = 0
    for name in ("mor_avro_v9_txns_nonpart_meta", "cow_v6_complexkeygen_hivestyle"):
        table = open_table(name)
        instants = sorted(i for i, e in EXPECTED[name]["versions"].items())
        for previous, instant in zip([None, *instants], instants, strict=False):
            ms = epoch_ms(instant)
            moment = dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc)
            iso_utc = moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
            iso_cet = moment.astimezone(dt.timezone(dt.timedelta(hours=1))).isoformat()
            for stamp in (ms, iso_utc, iso_cet, moment, ms + 1):
                assert table.snapshot(timestamp=stamp).version == instant, (name, stamp)
            if previous is None:
                with pytest.raises(VersionNotFoundError, match="no completed commit at or before"):
                    table.snapshot(timestamp=ms - 1)
            else:
                assert table.snapshot(timestamp=ms - 1).version == previous
            checked += 1
    assert checked == 14
    rows = open_table("cow_v6_complexkeygen_hivestyle").snapshot(timestamp="2030-01-01").to_arrow()
    latest = EXPECTED["cow_v6_complexkeygen_hivestyle"]["latest_version"]
    want = EXPECTED["cow_v6_complexkeygen_hivestyle"]["versions"][latest]["digest_no_meta"]
    assert no_meta_digest(rows) == want


# ---------------------------------------------------------------------------------- history


def test_history_lists_completed_instants_newest_first() -> None:
    checked = 0
    for name, expected in EXPECTED.items():
        completed = {
            (f["timestamp"], f["action"])
            for f in expected["timeline_files"]
            if f["state"] == "COMPLETED"
        }
        history = open_table(name).history()
        assert [(e.version, e.info["action"]) for e in history] == sorted(completed, reverse=True)
        assert all(e.timestamp == epoch_ms(str(e.version)) for e in history)
        assert all(e.operation for e in history), name
        checked += 1
    assert checked == 20


@pytest.mark.parametrize(
    ("name", "operations"),
    [
        ("cow_v6_nonpartitioned", ["upsert", "upsert"]),
        ("cow_v9_txns_simple_overwrite", ["insert_overwrite_table", "insert", "insert"]),
        ("mor_avro_v9_nonpartitioned_rollback", ["insert", "rollback", "insert"]),
        (
            "mor_avro_v8_trips_8i3u1d",
            [
                "upsert_prepped",
                "compact",
                "delete_prepped",
                "upsert_prepped",
                "delete_prepped",
                "upsert_prepped",
                "indexing",
                "upsert",
            ],
        ),
    ],
)
def test_history_operations(name: str, operations: list[str]) -> None:
    history = open_table(name).history()
    assert [e.operation for e in history] == operations
    assert [e.operation for e in open_table(name).history(limit=2)] == operations[:2]
    for entry in history:
        if entry.info["action"] in ("commit", "deltacommit", "replacecommit"):
            assert entry.info["files_written"] > 0, entry
        if str(entry.operation).startswith("delete"):
            assert entry.info["num_deletes"] > 0, entry


# ---------------------------------------------------------------------------------- changes


@pytest.mark.parametrize("name", ["mor_avro_v8_trips_8i3u1d", "mor_avro_v9_txns_nonpart_meta"])
def test_changes_are_the_live_records_written_in_the_range(name: str) -> None:
    table = open_table(name)
    instants = sorted(EXPECTED[name]["versions"])
    ranges = [(instants[0], instants[-1]), (instants[1], instants[3]), (instants[2], instants[2])]
    checked = 0
    for start, end in ranges:
        at_end = table.snapshot(version=end).to_arrow()
        times = at_end.column("_hoodie_commit_time")
        want = at_end.filter(pc.and_(pc.greater_equal(times, start), pc.less_equal(times, end)))
        changes = table.changes(start, end, include_meta=True)
        assert changes.column_names == [
            *at_end.column_names,
            "_change_type",
            "_commit_version",
            "_commit_timestamp",
        ]
        # The live records written in the range are the inserts and postimages (issue 14:
        # the feed also has deletes and preimages) whose key and commit time are live at end.
        keys = at_end.column("_hoodie_record_key").to_pylist()
        live = set(zip(times.to_pylist(), keys, strict=True))
        written = [
            r
            for r in changes.to_pylist()
            if r["_change_type"] in ("insert", "update_postimage")
            and (r["_hoodie_commit_time"], r["_hoodie_record_key"]) in live
        ]
        # _hoodie_file_name: as of the writing instant (a later compaction moves the record)
        same = [c for c in at_end.column_names if c != "_hoodie_file_name"]
        assert row_texts(pa.Table.from_pylist(written, changes.schema).select(same)) == row_texts(
            want.select(same)
        )
        assert set(changes.column("_change_type").to_pylist()) <= {
            "insert",
            "update_preimage",
            "update_postimage",
            "delete",
        }
        for row in written:
            assert row["_commit_version"] == row["_hoodie_commit_time"]
            assert int(row["_commit_timestamp"].timestamp() * 1000) == epoch_ms(
                row["_hoodie_commit_time"]
            )
        checked += 1
    assert checked == 3
    everything = table.changes(instants[0])  # to the latest instant
    inserts = pc.equal(everything.column("_change_type"), "insert")
    assert pc.sum(inserts.cast(pa.int64())).as_py() >= table.to_arrow().num_rows
    with pytest.raises(VersionNotFoundError):  # start after the end: refused, as Delta does
        table.changes(instants[-1] + "1")


def test_changes_of_a_table_without_meta_fields_are_unsupported() -> None:
    table = open_table("cow_v6_simplekeygen_hivestyle_no_metafields")
    with pytest.raises(UnsupportedFeatureError, match="_hoodie_commit_time"):
        table.changes("20240426205419518")


def test_changes_to_an_unknown_end_raise_version_not_found() -> None:
    with pytest.raises(VersionNotFoundError):
        open_table("mor_avro_v8_trips_8i3u1d").changes("20251220210108078", "20991231000000000")


# ---------------------------------------------------------------------------------- options


def test_drop_meta_fields_leaves_out_the_hoodie_columns() -> None:
    checked = 0
    for name in NON_EMPTY:
        latest = EXPECTED[name]["latest_version"]
        rows = open_table(name, drop_meta_fields="true").to_arrow()
        assert not [c for c in rows.column_names if c.startswith("_hoodie_")], name
        full = open_table(name).to_arrow()
        assert rows.column_names == [c for c in full.column_names if not c.startswith("_hoodie_")]
        assert no_meta_digest(rows) == EXPECTED[name]["versions"][latest]["digest_no_meta"]
        checked += 1
    assert checked == 18


def test_read_optimized_reads_base_files_only() -> None:
    checked = differs = 0
    for name in MOR:
        expected = EXPECTED[name]["read_optimized"]
        table = open_table(name, read_optimized="true")
        rows = table.to_arrow()
        assert rows.num_rows == expected["num_rows"], name
        assert no_meta_digest(rows) == expected["digest_no_meta"], name
        data_files = table.snapshot().files().column("data_files").to_pylist()
        assert all(not any(is_log_file(p) for p in files) for files in data_files)
        latest = EXPECTED[name]["latest_version"]
        differs += (
            expected["digest_no_meta"] != EXPECTED[name]["versions"][latest]["digest_no_meta"]
        )
        checked += 1
    assert (checked, differs) == (9, 5)


@pytest.mark.parametrize(
    "options",
    [{"no_such_option": "true"}, {"read_optimized": "maybe"}, {"hudi.drop_meta": "true"}],
)
def test_bad_options_raise_value_error(options: dict[str, str]) -> None:
    """At open, not at the first read (InvalidArgumentError is a ValueError)."""
    with pytest.raises(ValueError, match="option"):
        lakecore.open(str(HUDI / "cow_v6_nonpartitioned"), options=options)


def test_options_accept_the_hudi_prefix() -> None:
    table = lakecore.open(
        str(HUDI / "cow_v6_nonpartitioned"), options={"hudi.drop_meta_fields": "TRUE"}
    )
    assert "_hoodie_commit_time" not in table.snapshot().schema.names


# ------------------------------------------------------------------------------------ scans

SCANS: list[tuple[str, str, Callable[[dict[str, Any]], bool]]] = [
    ("mor_avro_v8_trips_8i3u1d", "city = 'san_francisco'", lambda r: r["city"] == "san_francisco"),
    ("mor_avro_v8_trips_8i3u1d", "fare > 30", lambda r: r["fare"] > 30),
    (
        "mor_avro_v8_trips_8i3u1d",
        "city = 'sao_paulo' AND fare = 0",
        lambda r: r["city"] == "sao_paulo" and r["fare"] == 0,
    ),
    (
        "mor_avro_v8_trips_8i3u1d",
        "rider IN ('rider-A', 'rider-G') OR city = 'chennai'",
        lambda r: r["rider"] in ("rider-A", "rider-G") or r["city"] == "chennai",
    ),
    ("mor_avro_v8_trips_8i3u1d", "fare > 1000", lambda r: False),
    (
        "mor_avro_v6_trips_8i1u",
        "city <> 'chennai' AND fare < 30",
        lambda r: r["city"] != "chennai" and r["fare"] < 30,
    ),
    ("mor_parquet_v6_simplekeygen_nonhivestyle", "byteField = 10", lambda r: r["byteField"] == 10),
    (
        "mor_parquet_v6_simplekeygen_nonhivestyle",
        "longField > 1500000000",
        lambda r: r["longField"] > 1_500_000_000,
    ),
    (
        "cow_v6_complexkeygen_hivestyle",
        "byteField = 10 AND shortField = 300",
        lambda r: r["byteField"] == 10 and r["shortField"] == 300,
    ),
    ("cow_v6_complexkeygen_hivestyle", "shortField = 100", lambda r: r["shortField"] == 100),
    (
        "cow_v6_complexkeygen_hivestyle",
        "id >= 2 AND isActive",
        lambda r: r["id"] >= 2 and r["isActive"],
    ),
    ("cow_v6_simplekeygen_nonhivestyle", "byteField <> 20", lambda r: r["byteField"] != 20),
    (
        "mor_avro_v9_txns_nonpart_meta",
        "currency = 'EUR' AND amount > 400",
        lambda r: r["currency"] == "EUR" and r["amount"] > Decimal(400),
    ),
    (
        "mor_avro_v9_txns_nonpart_meta",
        "txn_date = DATE '2024-01-15'",
        lambda r: r["txn_date"] == dt.date(2024, 1, 15),
    ),
]


def test_scans_return_exactly_the_matching_rows() -> None:
    checked = selective = 0
    for name, where, matches in SCANS:
        table = open_table(name)
        everything = table.to_arrow()
        want = [r for r in everything.to_pylist() if matches(r)]
        got = table.scan(where=where).to_arrow()
        assert got.schema == everything.schema
        assert row_texts(got) == row_texts(pa.Table.from_pylist(want, schema=everything.schema))
        selective += 0 < len(want) < everything.num_rows
        checked += 1
    assert (checked, selective) == (14, 13)


@pytest.mark.parametrize(
    ("name", "where", "counts"),
    [
        ("cow_v6_complexkeygen_hivestyle", "byteField = 10", (3, 1)),
        ("cow_v6_complexkeygen_hivestyle", "shortField = 100", (3, 2)),
        ("mor_avro_v8_trips_8i3u1d", "city = 'chennai'", (3, 1)),
        ("mor_avro_v8_trips_8i3u1d", "city IN ('chennai', 'sao_paulo')", (3, 2)),
        ("cow_v6_simplekeygen_nonhivestyle", "byteField = 30", (3, 1)),  # "30/..." paths
    ],
)
def test_explain_shows_partition_pruning(name: str, where: str, counts: tuple[int, int]) -> None:
    scan = open_table(name).scan(where=where)
    explain = scan.explain()
    assert (explain.files_total, explain.files_after_partition_pruning) == counts
    assert "after partition pruning" in str(explain)
    assert scan.files().num_rows == explain.files_after_stats_pruning <= counts[1]


def test_scan_columns_and_version() -> None:
    table = open_table("mor_avro_v8_trips_8i3u1d")
    first = sorted(EXPECTED["mor_avro_v8_trips_8i3u1d"]["versions"])[0]
    got = table.scan(where="fare > 20", columns=["uuid", "fare"], version=first).to_arrow()
    full = table.snapshot(version=first).to_arrow()
    want = full.filter(pc.greater(full.column("fare"), 20)).select(["uuid", "fare"])
    assert got.column_names == ["uuid", "fare"]
    assert row_texts(got) == row_texts(want)


# ------------------------------------------------------------------------------- file index


def test_files_has_one_row_per_file_slice() -> None:
    checked = 0
    for name, expected in EXPECTED.items():
        snapshot = open_table(name).snapshot()
        files = snapshot.files()
        assert {"path", "size", "data_files"} <= set(files.column_names), name
        assert files.num_rows == expected["num_files"], name
        paths = files.column("path").to_pylist()
        got = sorted(zip(paths, files.column("data_files").to_pylist(), strict=True))
        want = sorted(
            (
                s["base_file"] or s["log_files"][0],
                [b for b in [s["base_file"]] if b] + s["log_files"],
            )
            for s in expected["file_slices"]
        )
        assert got == want, name
        sizes = files.column("size").to_pylist()
        assert sizes == [(HUDI / name / p).stat().st_size for p in paths], name
        checked += 1
    assert checked == 20


def test_files_carry_typed_partition_values() -> None:
    files = open_table("cow_v6_complexkeygen_hivestyle").snapshot().files()
    assert files.schema.field("partition").type == pa.struct(
        [("byteField", pa.int32()), ("shortField", pa.int32())]
    )
    assert sorted(
        (v["byteField"], v["shortField"]) for v in files.column("partition").to_pylist()
    ) == [(10, 300), (20, 100), (30, 100)]
    plain = open_table("mor_parquet_v6_simplekeygen_nonhivestyle").snapshot().files()
    assert sorted(v["byteField"] for v in plain.column("partition").to_pylist()) == [10, 20, 30]
    unpartitioned = open_table("mor_avro_v9_txns_nonpart_meta").snapshot().files()
    assert "partition" not in unpartitioned.column_names


# ---------------------------------------------------------------------- tasks in other processes


def _read_pickled_tasks(
    table: lakecore.Table, where: str | None, columns: list[str] | None
) -> pa.Table:
    scan = table.scan(where=where, columns=columns)
    context = pickle.loads(pickle.dumps(scan.context))
    files = pickle.loads(pickle.dumps(scan.files()))
    residual = pickle.loads(pickle.dumps(scan.predicate))
    schema = scan.snapshot.output_schema(columns)
    batches = read_files(context, files, columns, residual)
    return pa.Table.from_batches(list(batches), schema=schema)


def test_pickled_tasks_of_mor_tables_read_like_to_arrow() -> None:
    checked = with_logs = 0
    for name in MOR:
        table = open_table(name)
        got = _read_pickled_tasks(table, None, None)
        assert row_texts(got) == row_texts(table.to_arrow()), name
        data_files = table.snapshot().files().column("data_files").to_pylist()
        with_logs += any(is_log_file(p) for files in data_files for p in files)
        checked += 1
    assert (checked, with_logs) == (9, 5)


def test_pickled_tasks_with_columns_predicates_and_options() -> None:
    table = open_table("mor_avro_v8_trips_8i3u1d")
    got = _read_pickled_tasks(table, "fare < 50", ["rider", "fare"])
    full = table.to_arrow()
    want = full.filter(pc.less(full.column("fare"), 50)).select(["rider", "fare"])
    assert row_texts(got) == row_texts(want)
    for options in ({"drop_meta_fields": "true"}, {"read_optimized": "true"}):
        table = open_table("mor_avro_v9_txns_nonpart_meta", **options)
        assert row_texts(_read_pickled_tasks(table, None, None)) == row_texts(table.to_arrow())
    nometa = open_table("mor_avro_v9_txns_nonpart_nometa")  # keys from the key fields
    assert row_texts(_read_pickled_tasks(nometa, None, None)) == row_texts(nometa.to_arrow())


# -------------------------------------------------------------------------------------- CLI


def test_cli_info_and_history() -> None:
    name = "mor_avro_v8_trips_8i3u1d"
    runner = CliRunner()
    info = runner.invoke(app, ["info", str(HUDI / name), "--json"])
    assert info.exit_code == 0, info.output
    described = json.loads(info.output)
    assert described["format"] == "hudi"
    assert described["version"] == EXPECTED[name]["latest_version"]
    assert described["files"] == 3 and described["partition_columns"] == ["city"]
    first = sorted(EXPECTED[name]["versions"])[0]
    old = runner.invoke(app, ["info", str(HUDI / name), "--as-of-version", first, "--json"])
    assert old.exit_code == 0 and json.loads(old.output)["version"] == first, old.output
    history = runner.invoke(app, ["history", str(HUDI / name), "--limit", "3"])
    assert history.exit_code == 0, history.output
    assert "compact" in history.output and "delete_prepped" in history.output


def test_cli_info_on_a_table_with_a_log_only_file_slice(tmp_path: Path) -> None:
    """A log-only slice's index row has the size of its first log file (the CLI sums sizes)."""
    root = tmp_path / "t"
    shutil.copytree(HUDI / "mor_avro_v8_trips_8i3u1d", root)
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    [log] = root.glob("city=sao_paulo/.*_20251220210130911.log.*")
    log_only = log.with_name(log.name.replace("8aa68f7e-afd6-4c94-b86c-8a886552e08d", "0" * 8))
    shutil.copyfile(log, log_only)
    # The file is added on storage only: list storage, not the metadata table's files.
    props = root / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text().replace("column_stats,files,", "column_stats,"))
    files = lakecore.open(str(root)).snapshot().files()
    row = files.filter(pc.equal(files.column("path"), f"city=sao_paulo/{log_only.name}"))
    assert row.column("size").to_pylist() == [log_only.stat().st_size]
    assert row.column("data_files").to_pylist() == [[f"city=sao_paulo/{log_only.name}"]]
    info = CliRunner().invoke(app, ["info", str(root), "--json"])
    assert info.exit_code == 0, info.output
    assert json.loads(info.output)["files"] == 4
