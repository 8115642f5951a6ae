"""The lakecore command line over corpus tables and small tables built in tmp_path."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import shutil
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import Result
from typer.testing import CliRunner

import lakecore
from lakecore.cli import app
from lakecore.cli import render as cli_render
from lakecore.errors import (
    CorruptTableError,
    InvalidArgumentError,
    LakecoreError,
    PluginNotInstalledError,
    PredicateError,
    SchemaError,
    StorageError,
    TableNotFoundError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from tests.corpus import CORPUS

TABLE = str(CORPUS / "delta" / "golden__dv-partitioned-with-checkpoint")
HUDI = str(CORPUS / "hudi" / "mor_avro_v8_trips_8i3u1d")
LANCE = str(CORPUS / "lance" / "gen__many_fragments")


@pytest.fixture(autouse=True)
def _corpus() -> None:
    for table in (TABLE, HUDI, LANCE):
        if not Path(table).is_dir():
            pytest.fail(f"corpus table missing: {table}")


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(app, list(args), env=env)


def run_json(*args: str) -> Any:
    """Run with --json: exit code 0, stdout exactly one JSON document, nothing on stderr
    (progress is transient and only drawn on a terminal)."""
    result = run(*args, "--json")
    assert result.exit_code == 0, result.output
    assert result.stderr == "", result.stderr
    return json.loads(result.stdout)


def assert_one_line_error(result: Result, error: type[Exception]) -> str:
    """Exit code 1, no traceback, stderr one line naming the error class; returns the line."""
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit), result.exception  # nothing escaped
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: {error.__name__}: "), lines[0]
    return lines[0]


def utc(text: str) -> dt.datetime:
    moment = dt.datetime.fromisoformat(text)
    assert moment.utcoffset() == dt.timedelta(0), text
    return moment


SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string()), ("amount", pa.float64())])


def small_delta(root: Path, appends: int = 3) -> str:
    """A Delta table partitioned by region with one small file per append and region."""
    table = lakecore.create(str(root), SCHEMA, partition_by=["region"])
    for i in range(appends):
        ids = [3 * i, 3 * i + 1, 3 * i + 2]
        data = {"id": ids, "region": ["eu", "us", "eu"], "amount": [1.5 * x for x in ids]}
        table.append(pa.table(data, schema=SCHEMA))
        time.sleep(0.01)  # distinct commit times for time travel by timestamp
    return str(root)


# ------------------------------------------------------------------ program


def test_program_version() -> None:
    result = run("--version")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"lakecore {metadata.version('lakecore')}"


def test_main_entry_point_version(capsys: pytest.CaptureFixture[str]) -> None:
    from lakecore.cli import main

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("sys.argv", ["lakecore", "--version"])
        with pytest.raises(SystemExit) as exit_info:
            main()
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.startswith("lakecore ")


def test_every_command_is_there() -> None:
    result = run("--help")
    assert result.exit_code == 0
    commands = [
        "info", "schema", "properties", "history", "files", "head", "scan", "changes",
        "vacuum", "optimize", "compact", "clean", "checkpoint", "restore", "migrate",
    ]  # fmt: skip
    missing = [c for c in commands if f" {c} " not in result.stdout]
    assert not missing
    assert len(commands) == 15


# ------------------------------------------------------------------ reading


def test_info() -> None:
    result = run("info", TABLE)
    assert result.exit_code == 0, result.output
    assert "format=delta" in result.output and "version=15" in result.output
    assert "deletionVectors" in result.output and " UTC" in result.output


def test_info_time_travel() -> None:
    result = run("info", TABLE, "--as-of-version", "0")
    assert result.exit_code == 0, result.output
    assert "version=0" in result.output


def test_program_version_option_is_not_time_travel() -> None:
    """``--version`` is the program's; on a table command it is a usage error (exit 2)."""
    result = run("info", TABLE, "--version", "0")
    assert result.exit_code == 2
    assert "No such option" in result.output


def test_info_json() -> None:
    doc = run_json("info", TABLE)
    assert (doc["format"], doc["version"], doc["files"]) == ("delta", 15, 15)
    assert doc["partition_columns"] == ["part"]
    assert doc["reader_features"] == ["deletionVectors"] and doc["merge_on_read"] is True
    assert [f["name"] for f in doc["schema"]] == ["part", "col1", "col2"]
    snap = lakecore.open(TABLE).snapshot()
    assert doc["records"] == snap.to_arrow().num_rows
    assert doc["properties"] == snap.properties and len(doc["properties"]) == 1
    utc(doc["timestamp"])


def test_info_records_unknown_when_a_count_is() -> None:
    from lakecore.cli.reading import index_live_records

    files = pa.table({"record_count": [3, 4], "deletion": [None, {"cardinality": 1}]})
    assert index_live_records(files) == 6
    assert index_live_records(pa.table({"record_count": pa.array([3, None], pa.int64())})) is None


def test_time_travel_by_timestamp(tmp_path: Path) -> None:
    uri = small_delta(tmp_path / "t")
    at_one = run_json("info", uri, "--as-of-version", "1")
    assert at_one["version"] == 1
    moment = at_one["timestamp"]
    assert run_json("info", uri, "--as-of-timestamp", moment)["version"] == 1
    epoch_ms = int(utc(moment).timestamp() * 1000)
    assert run_json("files", uri, "--as-of-timestamp", str(epoch_ms))["version"] == 1
    rows = run_json("head", uri, "--as-of-timestamp", moment, "-n", "100")["rows"]
    assert len(rows) == 3  # version 1 holds the first append only
    scanned = run_json("scan", uri, "--as-of-version", "1", "--where", "region = 'eu'")
    assert sorted(r["id"] for r in scanned["rows"]) == [0, 2]


def test_time_travel_before_the_table_is_one_line(tmp_path: Path) -> None:
    uri = small_delta(tmp_path / "t", appends=1)
    result = run("info", uri, "--as-of-timestamp", "2001-01-01T00:00:00Z")
    assert_one_line_error(result, VersionNotFoundError)
    result = run("schema", uri, "--as-of-timestamp", "not a time")
    assert_one_line_error(result, VersionNotFoundError)


def test_schema() -> None:
    result = run("schema", TABLE)
    assert result.exit_code == 0, result.output
    assert "col2" in result.stdout and "string" in result.stdout
    doc = run_json("schema", HUDI)
    names = [f["name"] for f in doc["fields"]]
    assert "_hoodie_record_key" in names and all("type" in f for f in doc["fields"])
    assert doc["format"] == "hudi"


def test_properties(tmp_path: Path) -> None:
    uri = small_delta(tmp_path / "t", appends=1)
    lakecore.open(uri).set_properties({"delta.appendOnly": "false", "team": "[sales]"})
    result = run("properties", uri)
    assert result.exit_code == 0, result.output
    assert "[sales]" in result.stdout  # data is never taken for rich markup
    doc = run_json("properties", uri)
    assert doc["properties"]["team"] == "[sales]" and doc["version"] == 2


def test_history() -> None:
    result = run("history", TABLE, "--limit", "3")
    assert result.exit_code == 0, result.output
    assert "DELETE" in result.stdout and " UTC" in result.stdout
    doc = run_json("history", TABLE)
    versions = [e["version"] for e in doc["history"]]
    assert versions == list(range(15, -1, -1))  # every commit, newest first
    for entry in doc["history"]:
        utc(entry["timestamp"])
    assert len(run_json("history", TABLE, "--limit", "2")["history"]) == 2


def test_history_hudi_and_lance() -> None:
    hudi = run_json("history", HUDI)["history"]
    assert hudi and all(isinstance(e["version"], str) for e in hudi)
    oldest = hudi[-1]["version"]  # an instant: digits, still a Hudi version
    assert run_json("info", HUDI, "--as-of-version", oldest)["version"] == oldest
    lance = run_json("history", LANCE)["history"]
    assert [e["version"] for e in lance] == sorted((e["version"] for e in lance), reverse=True)


def test_files() -> None:
    result = run("files", TABLE)
    assert result.exit_code == 0, result.output
    assert "15 files" in result.stdout
    doc = run_json("files", TABLE)
    assert doc["total"] == 15 and len(doc["files"]) == 15  # --json: every file by default
    assert {"path", "size", "record_count", "partition"} <= set(doc["files"][0])
    deleted = [f["deletion"]["cardinality"] for f in doc["files"] if f.get("deletion")]
    assert deleted and all(n > 0 for n in deleted)
    assert len(run_json("files", TABLE, "--limit", "4")["files"]) == 4


def test_files_text_limit_defaults_to_20(tmp_path: Path) -> None:
    uri = small_delta(tmp_path / "t", appends=11)  # 22 files
    result = run("files", uri, env={"COLUMNS": "400"})  # wide: no path is folded
    assert result.exit_code == 0, result.output
    assert "22 files" in result.stdout
    assert result.stdout.count(".parquet") == 20
    assert len(run_json("files", uri)["files"]) == 22


def test_head() -> None:
    assert run("head", TABLE, "--rows", "3").exit_code == 0
    doc = run_json("head", TABLE, "-n", "3", "--columns", "part,col2")
    assert len(doc["rows"]) == 3 and set(doc["rows"][0]) == {"part", "col2"}
    repeated = run_json("head", TABLE, "-n", "2", "-c", "col1", "-c", "col2")
    assert [set(r) for r in repeated["rows"]] == [{"col1", "col2"}] * 2


def test_head_of_hudi_and_lance() -> None:
    hudi = run_json("head", HUDI, "-n", "2")["rows"]
    assert len(hudi) == 2 and "_hoodie_commit_time" in hudi[0]
    assert len(run_json("head", LANCE, "-n", "5")["rows"]) == 5


def test_head_reads_only_the_files_it_needs(tmp_path: Path) -> None:
    root = tmp_path / "t"
    uri = small_delta(root, appends=3)
    paths = [f["path"] for f in run_json("files", uri)["files"]]
    for path in paths[1:]:
        (root / path).unlink()  # only the first file of the index is left
    assert len(run_json("head", uri, "-n", "1")["rows"]) == 1
    # A full read needs the deleted files.
    assert "missing from storage" in assert_one_line_error(run("scan", uri), CorruptTableError)


def test_head_stops_reading_once_it_has_the_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    from lakecore.cli.reading import take_rows

    pulled: list[int] = []

    def batches() -> Any:
        for i in range(100):
            pulled.append(i)
            yield pa.record_batch({"x": [i, i]})

    got = take_rows(batches(), pa.schema([("x", pa.int64())]), 3)
    assert got.column("x").to_pylist() == [0, 0, 1]
    assert pulled == [0, 1]


def test_scan_where_columns() -> None:
    doc = run_json("scan", TABLE, "--where", "part = 1 AND col1 > 3", "--columns", "col1")
    expected = lakecore.open(TABLE).scan("part = 1 AND col1 > 3", columns=["col1"]).to_arrow()
    assert sorted(r["col1"] for r in doc["rows"]) == sorted(expected.column("col1").to_pylist())
    assert doc["rows"] and all(set(r) == {"col1"} for r in doc["rows"])
    assert len(run_json("scan", TABLE, "--limit", "2")["rows"]) == 2
    text = run("scan", TABLE, "-w", "part = 1 AND col1 > 3")
    assert text.exit_code == 0 and f"{len(doc['rows'])} rows" in text.stdout


def test_scan_explain() -> None:
    result = run("scan", TABLE, "--where", "part = 1", "--explain")
    assert result.exit_code == 0, result.output
    assert "after partition pruning" in result.stdout and "after stats pruning" in result.stdout
    plan = run_json("scan", TABLE, "--where", "part = 1", "--explain")["explain"]
    assert (plan["files_total"], plan["files_after_partition_pruning"]) == (15, 2)
    assert plan["files_pruned"] == 15 - plan["files_after_stats_pruning"]
    assert plan["predicate"] == "part = 1"


def test_bad_where_is_one_line() -> None:
    line = assert_one_line_error(run("scan", TABLE, "--where", "col1 ==="), PredicateError)
    assert "\x1b" not in line  # sqlglot's colour codes are stripped
    assert_one_line_error(run("scan", TABLE, "--where", "nosuch > 1"), SchemaError)
    assert_one_line_error(run("head", TABLE, "--columns", "nosuch"), SchemaError)


def test_changes_delta() -> None:
    doc = run_json("changes", TABLE, "3", "4")
    assert doc["total"] == len(doc["rows"]) > 0
    assert {r["_change_type"] for r in doc["rows"]} <= {"insert", "delete"}
    assert {r["_commit_version"] for r in doc["rows"]} <= {3, 4}
    for row in doc["rows"]:
        utc(row["_commit_timestamp"])
    text = run("changes", TABLE, "3", "4")
    assert text.exit_code == 0 and " UTC" in text.stdout and "+00:00" not in text.stdout


def test_changes_hudi() -> None:
    first = run_json("history", HUDI)["history"][-1]["version"]
    doc = run_json("changes", HUDI, first)
    assert doc["rows"] and "_change_type" in doc["rows"][0]
    assert len(run_json("changes", HUDI, first, "--limit", "1")["rows"]) == 1


def test_changes_include_meta_keeps_hudi_system_columns() -> None:
    first = run_json("history", HUDI)["history"][-1]["version"]
    plain = run_json("changes", HUDI, first)["rows"][0]
    assert not [c for c in plain if c.startswith("_hoodie_")]
    meta = run_json("changes", HUDI, first, "--include-meta")["rows"][0]
    assert "_hoodie_commit_time" in meta and "_hoodie_record_key" in meta
    assert meta["_change_type"] == plain["_change_type"]
    # A format without system columns accepts the flag and returns the same rows.
    delta = run_json("changes", TABLE, "3", "4", "--include-meta")
    assert delta["rows"] == run_json("changes", TABLE, "3", "4")["rows"]


def test_changes_of_missing_versions_is_one_line() -> None:
    assert_one_line_error(run("changes", LANCE, "99", "100"), VersionNotFoundError)


# ------------------------------------------------------------------ maintenance


def test_optimize_and_restore(tmp_path: Path) -> None:
    uri = small_delta(tmp_path / "t", appends=4)
    rows_before = lakecore.open(uri).to_arrow().sort_by("id")
    doc = run_json("optimize", uri)
    assert (doc["files_before"], doc["files_after"], doc["version"]) == (8, 2, 5)
    assert doc["committed"] is True
    assert lakecore.open(uri).to_arrow().sort_by("id").equals(rows_before)
    again = run("optimize", uri)
    assert again.exit_code == 0 and "nothing to do" in again.stdout

    restored = run("restore", uri, "1")
    assert restored.exit_code == 0, restored.output
    assert "holds the rows of version 1" in restored.stdout
    assert lakecore.open(uri).to_arrow().num_rows == 3
    doc = run_json("restore", uri, "4")
    assert (doc["restored"], doc["version"]) == (4, 7)
    assert lakecore.open(uri).to_arrow().num_rows == 12


def test_vacuum_dry_run_then_delete(tmp_path: Path) -> None:
    uri = small_delta(tmp_path / "t", appends=2)
    lakecore.open(uri).overwrite(pa.table({"id": [9], "region": ["eu"], "amount": [0.5]}))
    args = ("vacuum", uri, "--retention-hours", "0", "--no-enforce-retention")
    dry = run(*args, "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert "would delete 4 file(s)" in dry.stdout
    listed = [line.strip() for line in dry.stdout.splitlines()[1:]]
    assert len(listed) == 4 and all((tmp_path / "t" / p).exists() for p in listed)
    doc = run_json(*args)
    assert doc["dry_run"] is False and sorted(doc["files"]) == sorted(listed)
    assert not any((tmp_path / "t" / p).exists() for p in listed)
    assert lakecore.open(uri).to_arrow().column("id").to_pylist() == [9]


def test_vacuum_below_retention_is_refused(tmp_path: Path) -> None:
    from lakecore_delta.maintenance import RetentionError  # an InvalidArgumentError

    uri = small_delta(tmp_path / "t", appends=1)
    line = assert_one_line_error(run("vacuum", uri, "--retention-hours", "1"), RetentionError)
    assert "168" in line
    assert_one_line_error(run("vacuum", uri, "--retention-hours", "-1"), InvalidArgumentError)


def test_checkpoint(tmp_path: Path) -> None:
    uri = small_delta(tmp_path / "t", appends=2)
    result = run("checkpoint", uri)
    assert result.exit_code == 0, result.output
    assert "version 2" in result.stdout
    assert list((tmp_path / "t" / "_delta_log").glob("*2.checkpoint*.parquet"))


def test_lance_optimize_vacuum(tmp_path: Path) -> None:
    root = tmp_path / "l"
    shutil.copytree(LANCE, root)
    table = lakecore.open(str(root))
    before = table.to_arrow().num_rows
    table.create_tag("before")
    doc = run_json("optimize", str(root))
    assert doc["committed"] and doc["files_after"] < doc["files_before"]
    tagged = run_json("files", str(root), "--as-of-version", "before")  # a tag is a version
    assert tagged["total"] == doc["files_before"]
    dry = run_json(
        "vacuum", str(root), "--dry-run", "--retention-hours", "0", "--no-enforce-retention"
    )
    assert dry["files"] and all((root / p).exists() for p in dry["files"])
    assert lakecore.open(str(root)).to_arrow().num_rows == before


def _hudi_mor(root: Path) -> str:
    schema = pa.schema([("id", pa.int64()), ("ts", pa.int64()), ("city", pa.string())])
    properties = {"record_key": "id", "precombine_field": "ts", "table_type": "MERGE_ON_READ"}
    table = lakecore.create(str(root), schema, "hudi", ["city"], properties)
    table.append(pa.table({"id": [1, 2], "ts": [1, 1], "city": ["x", "x"]}, schema=schema))
    table.upsert(pa.table({"id": [1], "ts": [2], "city": ["x"]}, schema=schema))
    table.delete("id = 2")
    return str(root)


def test_hudi_compact_and_clean(tmp_path: Path) -> None:
    uri = _hudi_mor(tmp_path / "h")
    doc = run_json("compact", uri)
    assert doc["version"] is not None and doc["format"] == "hudi"
    again = run("compact", uri)
    assert again.exit_code == 0 and "nothing to do" in again.stdout
    cleaned = run("clean", uri, "--retain-commits", "1")
    assert cleaned.exit_code == 0, cleaned.output
    paths = [line.strip() for line in cleaned.stdout.splitlines()[1:]]
    assert paths and cleaned.stdout.startswith(f"clean: deleted {len(paths)} file(s)")
    assert not any((tmp_path / "h" / p).exists() for p in paths)
    assert lakecore.open(uri).to_arrow().column("id").to_pylist() == [1]


@pytest.mark.parametrize(
    ("command", "table"),
    [
        ("compact", TABLE),
        ("clean", TABLE),
        ("checkpoint", LANCE),
        ("optimize", HUDI),
        ("vacuum", HUDI),
        ("restore", HUDI),
    ],
)
def test_missing_capability_is_one_line(command: str, table: str) -> None:
    args = [command, table] + (["1"] if command == "restore" else [])
    line = assert_one_line_error(run(*args), UnsupportedFeatureError)
    assert "do not support" in line


# ------------------------------------------------------------------ errors


def test_errors_are_reported(tmp_path: Path) -> None:
    result = run("info", str(tmp_path / "missing"))
    assert result.exit_code != 0
    assert_one_line_error(result, TableNotFoundError)


def test_bad_storage_options_json() -> None:
    line = assert_one_line_error(
        run("info", TABLE, "--storage-options", "{not json"), InvalidArgumentError
    )
    assert "--storage-options" in line
    line = assert_one_line_error(
        run("files", TABLE, "--storage-options", "[1, 2]"), InvalidArgumentError
    )
    assert "JSON object" in line


def test_missing_plugin(tmp_path: Path) -> None:
    line = assert_one_line_error(run("info", TABLE, "--format", "iceberg"), PluginNotInstalledError)
    assert "iceberg" in line
    disabled = run("info", LANCE, "--format", "lance", env={"LAKECORE_DISABLED_PLUGINS": "lance"})
    assert_one_line_error(disabled, PluginNotInstalledError)


def test_unreachable_s3_is_one_line() -> None:
    pytest.importorskip("s3fs")
    options = {
        "endpoint_url": "http://127.0.0.1:9",  # discard port: nothing listens
        "key": "k",
        "secret": "s",
        "config_kwargs": {"retries": {"max_attempts": 1}, "connect_timeout": 1},
    }
    result = run("info", "s3://bucket/table", "--storage-options", json.dumps(options))
    line = assert_one_line_error(result, StorageError)
    assert "s3://bucket/table" in line


def test_usage_errors_keep_exit_code_2() -> None:
    assert run("info").exit_code == 2  # missing argument
    assert run("nosuch", TABLE).exit_code == 2
    assert run("head", TABLE, "--rows", "-1").exit_code == 2


def test_other_exceptions_are_one_line_unless_traceback_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*_: Any, **__: Any) -> None:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(lakecore, "open", broken)
    line = assert_one_line_error(run("info", TABLE), RuntimeError)
    assert line == "error: RuntimeError: boom second line"
    raised = run("info", TABLE, env={"LAKECORE_TRACEBACK": "1"})
    assert isinstance(raised.exception, RuntimeError)


@pytest.mark.s3
def test_s3_table(s3_uri: str, s3_storage_options: dict[str, Any]) -> None:
    table = lakecore.create(s3_uri, SCHEMA, storage_options=s3_storage_options)
    table.append(pa.table({"id": [1], "region": ["eu"], "amount": [1.0]}, schema=SCHEMA))
    options = json.dumps(s3_storage_options)
    doc = run_json("info", s3_uri, "--storage-options", options)
    assert (doc["format"], doc["version"], doc["records"]) == ("delta", 1, 1)
    rows = run_json("head", s3_uri, "--storage-options", options)["rows"]
    assert rows == [{"id": 1, "region": "eu", "amount": 1.0}]


# ------------------------------------------------------------------ rendering


def test_jsonable_values() -> None:
    aware = dt.datetime(2024, 1, 31, 13, 0, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    value = {
        "nan": float("nan"),
        "inf": [float("inf"), float("-inf")],
        "bytes": b"\x00\xff",
        "dec": decimal.Decimal("1.10"),
        "aware": aware,
        "naive": dt.datetime(2024, 1, 31, 12, 0),
        "date": dt.date(2024, 1, 31),
        "set": frozenset({"b", "a"}),
        1: None,
    }
    assert cli_render.jsonable(value) == {
        "nan": "NaN",
        "inf": ["Infinity", "-Infinity"],
        "bytes": "AP8=",
        "dec": "1.10",
        "aware": "2024-01-31T12:00:00+00:00",
        "naive": "2024-01-31T12:00:00",
        "date": "2024-01-31",
        "set": ["a", "b"],
        "1": None,
    }
    json.loads(cli_render.dumps(value))  # valid JSON: no NaN literal


def test_timestamps_for_people_and_machines() -> None:
    ms = 1_706_702_400_123  # 2024-01-31 12:00:00.123 UTC
    assert cli_render.iso_utc(ms) == "2024-01-31T12:00:00.123+00:00"
    assert cli_render.readable_utc(ms) == "2024-01-31 12:00:00 UTC"
    assert cli_render.iso_utc(None) is None and cli_render.readable_utc(None) == "-"
    assert cli_render.readable_size(1536) == "1.5 KiB" and cli_render.readable_size(12) == "12 B"


def test_one_line() -> None:
    error = LakecoreError("first\n  \x1b[4msecond\x1b[0m\n")
    assert cli_render.one_line(error) == "LakecoreError: first second"
    assert cli_render.one_line(LakecoreError()) == "LakecoreError"


# ------------------------------------------------------------------ migrate


def test_migrate_then_sync_again(tmp_path: Path) -> None:
    import lance

    target = str(tmp_path / "lance")
    result = run("migrate", TABLE, target, "--to", "lance", "--history")
    assert result.exit_code == 0, result.output
    assert "delta -> lance" in result.output and "deletes carried" in result.output
    expected = lakecore.open(TABLE).to_arrow()
    got = lance.dataset(target).to_table()
    key = [(c, "ascending") for c in expected.column_names]
    assert got.select(expected.column_names).sort_by(key).to_pylist() == (
        expected.sort_by(key).to_pylist()
    )
    again = run("migrate", TABLE, target, "--to", "lance", "--history")
    assert again.exit_code == 0, again.output
    assert "0 source version(s) in 0 commit(s)" in again.output


def test_migrate_json(tmp_path: Path) -> None:
    uri = small_delta(tmp_path / "d", appends=2)
    doc = run_json("migrate", uri, str(tmp_path / "l"), "--to", "lance")
    assert (doc["source_format"], doc["target_format"], doc["rows"]) == ("delta", "lance", 6)
    assert doc["versions_translated"] == 1
    bad = run("migrate", uri, str(tmp_path / "x"), "--to", "lance", "--target-properties", "{")
    assert_one_line_error(bad, InvalidArgumentError)


def test_migrate_error_is_one_line(tmp_path: Path) -> None:
    from lakecore.cli import main

    argv = ["lakecore", "migrate", TABLE, str(tmp_path / "t"), "--to", "hudi", "--mode", "metadata"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("sys.argv", argv)
        with pytest.raises(SystemExit) as exit_info:
            main()
    assert exit_info.value.code == 1
