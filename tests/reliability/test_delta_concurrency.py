"""Concurrent Delta writers (processes) racing appends, deletes and merges.

Each writer process runs a fixed schedule of operations, each in one transaction that also
records an application transaction ``(writer-<w>, <j>)``: a marker that names the operation in
the log. A writer reports every operation as acknowledged (with the version it returned) or
refused with ``CommitConflictError``. Then:

- every acknowledged operation is in the final log exactly once, at the version it returned,
  and no refused one is in it; every commit after the create is one acknowledged operation;
- replaying the acknowledged operations in version order (a serial order) on a model gives
  exactly the rows lakecore reads, and deltalake reads the same rows.
"""

from __future__ import annotations

import json
import textwrap
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lakecore
from tests.racing import run_barrier_writers

SCHEMA = pa.schema([("id", pa.int64()), ("worker", pa.int64()), ("val", pa.int64())])
Row = tuple[int, int, int]

WORKER = textwrap.dedent(
    """
    import json, os, sys, time
    import pyarrow as pa
    import lakecore
    from lakecore.model.merge import MergeClauses

    uri, options, worker, ops, writers, barrier = sys.argv[1:7]
    worker, ops, writers = int(worker), int(ops), int(writers)
    schema = pa.schema([("id", pa.int64()), ("worker", pa.int64()), ("val", pa.int64())])
    table = lakecore.open(uri, storage_options=json.loads(options) or None)
    open(f"{barrier}.ready.{worker}", "w").close()
    deadline = time.monotonic() + 120
    while not os.path.exists(f"{barrier}.go"):
        if time.monotonic() > deadline:
            sys.exit("no go signal")
        time.sleep(0.005)
    out = []
    for j in range(ops):
        kind = ("append", "delete", "merge")[(worker + j) % 3]
        other = (worker + 1) % writers
        op = {"j": j, "kind": kind}
        if kind == "append":
            op["rows"] = [[worker * 1000 + j * 10 + k, worker, j] for k in range(3)]
        elif kind == "delete":
            op["worker"], op["mod"] = other, j % 3
            op["where"] = f"worker = {other} AND id % 3 = {j % 3}"
        else:
            op["rows"] = [[other * 1000 + (j - 1) * 10, worker, 100 + j],
                          [worker * 1000 + j * 10 + 5, worker, 100 + j]]
        try:
            with table.transaction() as tx:
                if kind == "append":
                    tx.append(pa.Table.from_pylist(
                        [dict(zip(schema.names, r)) for r in op["rows"]], schema=schema))
                elif kind == "delete":
                    tx.delete(op["where"])
                else:
                    source = pa.Table.from_pylist(
                        [dict(zip(schema.names, r)) for r in op["rows"]], schema=schema)
                    clauses = MergeClauses(matched_update_all=True, insert_all=True)
                    writer = table._format_writer(tx.snapshot)
                    tx.stage(*writer.merge(source, ["id"], clauses))
                tx.set_app_transaction(f"writer-{worker}", j)
            op["version"] = tx.version
        except lakecore.CommitConflictError as exc:
            op["conflict"] = exc.winning_version
        out.append(op)
    print(json.dumps(out))
    """
)


def run_writers(
    uri: str, options: dict[str, Any], barrier: Path, writers: int, ops: int
) -> list[list[dict[str, Any]]]:
    """Start the writer processes, release them together, return each one's report."""
    settings = [str(ops), str(writers), str(barrier)]
    settings = [str(ops), str(writers), str(barrier)]
    argvs = [[uri, json.dumps(options), str(w), *settings] for w in range(writers)]
    reports: list[list[dict[str, Any]]] = run_barrier_writers(WORKER, argvs, barrier)
    return reports


def replay(reports: list[list[dict[str, Any]]]) -> list[Row]:
    """The rows after applying the acknowledged operations in version order, sorted.

    Delta has no key: an append is blind, so appending an id a merge inserted before (the
    merge of ``other``'s row ran before ``other`` appended it) leaves both rows; a merge
    updates every row with its id.
    """
    acked = sorted(
        (op for report in reports for op in report if "version" in op), key=lambda o: o["version"]
    )
    rows: list[Row] = []
    for op in acked:
        if op["kind"] == "append":
            rows.extend(tuple(r) for r in op["rows"])
        elif op["kind"] == "delete":
            rows = [r for r in rows if not (r[1] == op["worker"] and r[0] % 3 == op["mod"])]
        else:  # merge: matched rows take the source row, the others are inserted
            for source in (tuple(r) for r in op["rows"]):
                matched = any(r[0] == source[0] for r in rows)
                rows = [source if r[0] == source[0] else r for r in rows]
                if not matched:
                    rows.append(source)
    return sorted(rows)


def test_the_model_keeps_an_appended_id_a_merge_inserted_before() -> None:
    """A merge inserting id 30 (nobody had appended it yet), then the blind append of id 30:
    the table holds both rows (found by a slow race; a model keyed by id kept one)."""
    reports = [
        [{"j": 3, "kind": "append", "rows": [[30, 0, 3]], "version": 2}],
        [{"j": 4, "kind": "merge", "rows": [[30, 7, 104], [7045, 7, 104]], "version": 1}],
        [{"j": 5, "kind": "merge", "rows": [[7045, 1, 105]], "version": 3}],
    ]
    assert replay(reports) == [(30, 0, 3), (30, 7, 104), (7045, 1, 105)]


def markers_by_version(table: lakecore.Table) -> dict[int, list[tuple[str, int]]]:
    """The application-transaction markers each commit of the log holds."""
    out: dict[int, list[tuple[str, int]]] = {}
    storage = table.storage
    for version in range(1, int(table.version) + 1):
        raw = storage.read(f"_delta_log/{version:020d}.json").decode()
        actions = [json.loads(line) for line in raw.splitlines() if line.strip()]
        out[version] = [(a["txn"]["appId"], a["txn"]["version"]) for a in actions if "txn" in a]
    return out


def deltalake_rows(uri: str, options: dict[str, Any]) -> list[Row]:
    import deltalake

    storage_options = None
    if options:
        storage_options = {
            "AWS_ENDPOINT_URL": options["endpoint_url"],
            "AWS_ACCESS_KEY_ID": options["key"],
            "AWS_SECRET_ACCESS_KEY": options["secret"],
            "AWS_REGION": options["client_kwargs"]["region_name"],
            "AWS_ALLOW_HTTP": "true",
        }
    data = deltalake.DeltaTable(uri, storage_options=storage_options).to_pyarrow_table()
    return sorted(tuple(r.values()) for r in data.select(SCHEMA.names).to_pylist())


def check(uri: str, options: dict[str, Any], reports: list[list[dict[str, Any]]], ops: int) -> str:
    """Assert the outcome; return a one-line summary."""
    table = lakecore.open(uri, storage_options=options or None)
    markers = markers_by_version(table)
    acked = {
        (f"writer-{w}", op["j"]): op["version"]
        for w, report in enumerate(reports)
        for op in report
        if "version" in op
    }
    every = {(f"writer-{w}", op["j"]) for w, report in enumerate(reports) for op in report}
    refused = every - set(acked)
    assert all(len(report) == ops for report in reports)
    # Every commit after the create is exactly one acknowledged operation, at its version.
    assert sorted(markers) == list(range(1, len(acked) + 1))
    found = {m: v for v, ms in markers.items() for m in ms}
    assert all(len(ms) == 1 for ms in markers.values()), markers
    assert found == acked
    assert not refused & set(found)
    model = replay(reports)
    data = table.to_arrow()
    ours = sorted(tuple(r.values()) for r in data.select(SCHEMA.names).to_pylist())
    assert ours == model
    assert deltalake_rows(uri, options) == model
    kinds = {
        kind: sum(1 for r in reports for op in r if op["kind"] == kind and "version" in op)
        for kind in ("append", "delete", "merge")
    }
    assert kinds["append"] == sum(1 for r in reports for op in r if op["kind"] == "append")
    return f"{len(acked)} acknowledged {kinds}, {len(refused)} refused, {len(model)} rows"


def _race(uri: str, options: dict[str, Any], tmp_path: Path, writers: int, ops: int) -> str:
    lakecore.create(uri, SCHEMA, storage_options=options or None)
    started = time.monotonic()
    reports = run_writers(uri, options, tmp_path / "barrier", writers, ops)
    summary = check(uri, options, reports, ops)
    print(f"{writers} writers x {ops} ops in {time.monotonic() - started:.1f}s: {summary}")
    return summary


def test_writers_race_on_a_local_table(tmp_path: Path) -> None:
    _race(str(tmp_path / "t"), {}, tmp_path, writers=4, ops=12)


@pytest.mark.s3
@pytest.mark.parametrize("ops", [6, pytest.param(9, marks=pytest.mark.slow)])
def test_writers_race_on_an_s3_table(
    s3_uri: str, s3_storage_options: dict[str, Any], tmp_path: Path, ops: int
) -> None:
    """3 writers: 6 operations each by default (every kind twice: moto serves one request at a
    time), 9 under ``-m slow``."""
    _race(s3_uri, s3_storage_options, tmp_path, writers=3, ops=ops)


@pytest.mark.slow
@pytest.mark.parametrize("round_", range(5))
def test_many_writers_race_on_a_local_table(tmp_path: Path, round_: int) -> None:
    _race(str(tmp_path / "t"), {}, tmp_path, writers=8, ops=24)
