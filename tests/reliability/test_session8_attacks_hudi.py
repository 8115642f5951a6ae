"""Attacks on the Hudi read path changes of session 8: the file index's statistics from base
file footers (``lakecore_hudi.file_index`` through ``lakecore.model.footers``), time travel to
non-write instants (``lakecore_hudi.as_of_instant``) and creates under the table lock.

A scan with a predicate must return exactly the rows of a full read filtered in Arrow (a
skipped file that holds a matching row is silent data loss); failures must be typed.
Passing tests are attacks that held; ``xfail(strict=True)`` tests pin bugs found.
"""

from __future__ import annotations

import datetime as dt
import threading
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakecore
from lakecore.errors import (
    CommitConflictError,
    CorruptTableError,
    LakecoreError,
    TableExistsError,
    VersionNotFoundError,
)
from lakecore.expr.arrow_filter import to_arrow_filter
from lakecore.expr.binding import bind, parse_predicate
from tests.hudi.write.helpers import SCHEMA, create, hudi_rs, rows

T0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
D = Decimal
TYPES = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("ts", pa.int64()),
        ("f", pa.float64()),
        ("s", pa.string()),
        ("d", pa.decimal128(10, 2)),
        ("t", pa.timestamp("us", tz="UTC")),
        ("n", pa.int32()),
        ("p", pa.string()),
    ]
)
# (id, f, s, d, t, n, p): each batch is one insert, so several base files per partition.
BATCHES: list[list[tuple[Any, ...]]] = [
    [(1, 1.0, "a", D("1.00"), T0, 5, "x"), (2, float("nan"), "", D("-1.50"), None, None, "x")],
    [(3, -0.0, "\U0001f600", D("0.00"), T0 + dt.timedelta(days=1), -1, "y")],
    [(4, 0.0, "\uffff", None, T0, 0, "y")],
    [(5, None, None, D("99.99"), T0 - dt.timedelta(microseconds=1), None, "")],
    [
        (6, float("inf"), "zz", D("-0.01"), T0, 2**31 - 1, ""),
        (9, float("nan"), "b", D("1"), T0, 3, ""),
    ],
    [(7, -float("inf"), "a\U0010ffff", D("1.00"), T0, -(2**31), "z")],
    [
        (8, 2.5, "\ud7ff", D("1.01"), T0, 7, "z"),
        (10, float("nan"), "\U0001f600", D("1"), T0, 7, "z"),
    ],
    [(11, float("nan"), None, None, None, None, "x")],  # a file of NaN and nulls only
]
PREDICATES = [
    "f = 0.0",
    "f = -0.0",
    "f > 0",
    "f < 0",
    "f >= 0",
    "f <= -0.0",
    "f != 1.0",
    "f <> 2.5",
    "NOT (f = 1.0)",
    "NOT (f < 3)",
    "NOT (f > 0 AND f < 3)",
    "f IS NULL",
    "f IS NOT NULL",
    "f > 1e308",
    "f >= 2.5",
    "f = 'NaN'",
    "f > 'NaN'",
    "f < 'NaN'",
    "f != 'NaN'",
    "f IN (1.0, 2.5)",
    "f NOT IN (1.0, 2.5)",
    "s = ''",
    "s > 'z'",
    "s < 'a'",
    "s >= '\U0001f600'",
    "s > '\uffff'",
    "s < '\U0001f600'",
    "s = '\uffff'",
    "s LIKE 'a%'",
    "s IS NULL",
    "s != 'a'",
    "s > ''",
    "s <= ''",
    "NOT (s >= 'a')",
    "d = 1.00",
    "d = 1",
    "d > 1.005",
    "d < 0",
    "d = -0.01",
    "d IS NULL",
    "d BETWEEN 0 AND 1",
    "NOT (d BETWEEN 0 AND 1)",
    "t = TIMESTAMP '2024-01-01 00:00:00'",
    "t < TIMESTAMP '2024-01-01'",
    "t > TIMESTAMP '2024-01-01'",
    "t >= TIMESTAMP '2023-12-31 23:59:59.999999'",
    "t IS NULL",
    "n = 2147483647",
    "n < -2147483647",
    "n > 2147483646",
    "n = 0",
    "n IS NULL",
    "NOT (n IS NULL)",
    "p = ''",
    "p = 'x'",
    "p != 'x'",
    "p > ''",
    "p IS NULL",
    "p = 'x' OR f > 2",
    "p = 'y' AND s > 'a'",
    "COALESCE(n, 0) = 0",
    "id = 9",
    "id > 9",
]


def _typed_table(root: Path, table_type: str) -> lakecore.Table:
    properties = {
        "record_key": "id",
        "precombine_field": "ts",
        "table_type": table_type,
        "table_version": "8",
    }
    table = lakecore.create(str(root), TYPES, "hudi", ["p"], properties)
    for batch in BATCHES:
        table.append(
            pa.Table.from_pylist(
                [
                    dict(zip(["id", "f", "s", "d", "t", "n", "p"], r, strict=True)) | {"ts": 1}
                    for r in batch
                ],
                schema=TYPES,
            )
        )
    if table_type == "MERGE_ON_READ":
        # Log files: a NaN upserted over a file whose footer stats say 1.0 .. 1.0.
        table.upsert(
            pa.Table.from_pylist(
                [{"id": 1, "ts": 2, "f": float("nan"), "s": "\U0001f600", "p": "x"}], schema=TYPES
            )
        )
    return lakecore.open(str(root))


def _check_predicates(table: lakecore.Table) -> int:
    full = table.to_arrow()
    assert full.num_rows == sum(map(len, BATCHES))
    files = table.scan().explain().files_total
    assert files >= 6
    pruned_somewhere = 0
    for text in PREDICATES:
        scan = table.scan(text)
        got = sorted(scan.to_arrow().column("id").to_pylist())
        expected = full.filter(
            to_arrow_filter(bind(parse_predicate(text), full.schema), full.schema)
        )
        assert got == sorted(expected.column("id").to_pylist()), text
        pruned_somewhere += scan.explain().files_after_stats_pruning < files
    return pruned_somewhere


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_pruning_by_footer_statistics_never_skips_a_matching_row(
    tmp_path: Path, table_type: str
) -> None:
    pruned = _check_predicates(_typed_table(tmp_path / "t", table_type))
    assert pruned > 20  # the attack reached the statistics, not only the row filter


# --- footer statistics pyarrow cannot turn into Python values -----------------------------


def _one_file_table(root: Path, schema: pa.Schema, data: dict[str, Any]) -> lakecore.Table:
    properties = {
        "record_key": "id",
        "precombine_field": "ts",
        "table_type": "COPY_ON_WRITE",
        "table_version": "8",
    }
    table = lakecore.create(str(root), schema, "hudi", [], properties)
    table.append(pa.table(data, schema=schema))
    return lakecore.open(str(root))


FAR = 20_000 * 365 * 86_400 * 10**6  # microseconds: a timestamp in the year ~21970


@pytest.mark.parametrize("column", ["t", "d"])
def test_a_timestamp_after_year_9999_reads(tmp_path: Path, column: str) -> None:
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            ("ts", pa.int64()),
            ("t", pa.timestamp("us")),
            ("d", pa.date32()),
        ]
    )
    data: dict[str, Any] = {"id": [1, 2], "ts": [1, 1], "t": [0, 0], "d": [0, 0]}
    data[column] = [0, FAR] if column == "t" else [0, 5_000_000]
    table = _one_file_table(tmp_path / "t", schema, data)
    assert table.to_arrow().num_rows == 2
    assert table.scan("id = 2").to_arrow().num_rows == 1


def test_invalid_utf8_string_statistics_are_a_typed_error(tmp_path: Path) -> None:
    """Held (typed): see the next test for which type."""
    root = tmp_path / "t"
    _invalid_utf8_table(root)
    with pytest.raises(LakecoreError):
        lakecore.open(str(root)).scan("id = 1").to_arrow()


def test_invalid_utf8_string_statistics_are_corrupt_table_errors(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _invalid_utf8_table(root)
    with pytest.raises(CorruptTableError):
        lakecore.open(str(root)).scan("id = 1").to_arrow()


def _invalid_utf8_table(root: Path) -> None:
    schema = pa.schema(
        [pa.field("id", pa.int64(), nullable=False), ("ts", pa.int64()), ("s", pa.string())]
    )
    _one_file_table(root, schema, {"id": [1, 2], "ts": [1, 1], "s": ["a", "b"]})
    (base,) = [p for p in root.rglob("*.parquet") if ".hoodie" not in p.relative_to(root).parts]
    table = pq.read_table(base)
    bad = pa.array([b"a", b"\x9f\x9f"], pa.binary()).view(pa.string())  # not validated
    pq.write_table(
        table.set_column(table.column_names.index("s"), table.schema.field("s"), bad), base
    )


# --- time travel to instants that write nothing --------------------------------------------


def _crashed_then_rolled_back(root: Path, clean: bool) -> lakecore.Table:
    """append w1, a writer dies mid-upsert, append w2 (the crash is live: left alone), the
    crash ages, append w3 (rolls it back: a rollback instant), two upserts, and a clean when
    ``clean`` (which makes the versions whose files it deletes unreadable)."""
    from tests.hudi.write.test_failures import _plan_without_commit, _stop_heartbeat

    table = create(root, "COPY_ON_WRITE", "8")
    table.append(rows((1, "a", 1, "x"), (2, "b", 1, "y")))
    crashed = _plan_without_commit(table, "upsert", rows((1, "lost", 9, "x"), (3, "lost", 9, "z")))
    table.append(rows((4, "d", 1, "y")))
    _stop_heartbeat(root, crashed.timestamp)
    table.append(rows((5, "e", 1, "x")))
    table.upsert(rows((1, "f", 2, "x")))
    table.upsert(rows((1, "g", 3, "x")))
    if clean:
        assert table.clean(retain_commits=1)
    return lakecore.open(str(root))


def test_non_write_instants_read_as_the_write_before_and_as_hudi_rs(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = _crashed_then_rolled_back(root, clean=False)
    history = table.history()
    actions = [str(e.info["action"]) for e in history]
    assert "rollback" in actions
    writes = sorted(
        str(e.version) for e in history if e.info["action"] in ("commit", "deltacommit")
    )
    module = hudi_rs()
    checked = 0
    for entry in history:
        version = str(entry.version)
        snapshot = table.snapshot(version=version)
        before = [w for w in writes if w <= version][-1]
        assert snapshot.version == before
        ours = snapshot.to_arrow()
        assert "lost" not in ours.column("name").to_pylist()
        options = module.HudiReadOptions().with_as_of_timestamp(version)
        theirs = pa.Table.from_batches(
            module.HudiTableBuilder.from_base_uri(str(root)).build().read(options)
        )
        for column in ("_hoodie_record_key", "_hoodie_commit_time", "name"):
            assert sorted(ours.column(column).to_pylist()) == sorted(
                theirs.column(column).to_pylist()
            ), (version, entry.info["action"])
        checked += 1
    assert checked == len(history) >= 6


@pytest.mark.parametrize(
    "version",
    ["", " ", "0", "1", "abc", "99999999999999999", "../hoodie.properties", "20240101"],
)
def test_versions_that_name_no_instant_are_refused(tmp_path: Path, version: str) -> None:
    table = create(tmp_path / "t", "COPY_ON_WRITE", "8")
    table.append(rows((1, "a", 1, "x")))
    table.upsert(rows((1, "b", 2, "x")))
    assert table.clean(retain_commits=1)
    with pytest.raises(VersionNotFoundError):
        lakecore.open(str(tmp_path / "t")).snapshot(version=version)


def test_the_rolled_back_instant_and_instants_around_a_clean_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = _crashed_then_rolled_back(root, clean=True)
    instants = {str(e.version) for e in table.history()}
    for entry in table.history():
        if entry.info["action"] != "clean":
            continue
        for near in (str(int(str(entry.version)) - 1), str(int(str(entry.version)) + 1)):
            if near not in instants:
                with pytest.raises(VersionNotFoundError):
                    table.snapshot(version=near)
    rollback = next(e for e in table.history() if e.info["action"] == "rollback")
    # The rolled-back write's timestamp names no completed instant any more.
    from lakecore_hudi.timeline.active import load_timeline
    from lakecore_hudi.timeline.rollback_metadata import parse_rollback_metadata
    from lakecore_hudi.write.writer import state_of

    timeline = load_timeline(table.storage, state_of(table.snapshot()).config)
    (done,) = [i for i in timeline.completed() if i.timestamp == str(rollback.version)]
    meta = parse_rollback_metadata(timeline.read_details(table.storage, done), "rb")
    (rolled_back,) = meta.commits_rollback
    with pytest.raises(VersionNotFoundError):
        table.snapshot(version=rolled_back)


# --- creates racing under the table lock ----------------------------------------------------


@pytest.mark.parametrize("metadata_enable", ["true", "false"])
def test_racing_creates_leave_one_readable_table(tmp_path: Path, metadata_enable: str) -> None:
    """Four threads create the same table at once, then each appends its own row: exactly one
    create wins, the others get TableExistsError or CommitConflictError (never corrupt), and
    the table reads every appended row in lakecore and hudi-rs."""
    root = tmp_path / "t"
    properties = {"record_key": "id", "table_version": "8", "metadata_enable": metadata_enable}
    start = threading.Barrier(4)
    outcomes: list[str] = []

    def creator(i: int) -> None:
        start.wait()
        try:
            lakecore.create(str(root), SCHEMA, "hudi", ["city"], properties)
            outcomes.append("created")
        except (TableExistsError, CommitConflictError) as exc:
            outcomes.append(type(exc).__name__)
        except BaseException as exc:  # anything else is the bug this attack looks for
            outcomes.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=creator, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert outcomes.count("created") == 1, outcomes
    assert all(o in ("created", "TableExistsError", "CommitConflictError") for o in outcomes)
    table = lakecore.open(str(root))
    for i in range(3):
        table.append(rows((i, f"n{i}", 1, "x" if i % 2 else "y")))
    assert sorted(lakecore.open(str(root)).to_arrow().column("id").to_pylist()) == [0, 1, 2]
    theirs = pa.Table.from_batches(
        hudi_rs().HudiTableBuilder.from_base_uri(str(root)).build().read()
    )
    assert sorted(theirs.column("id").to_pylist()) == [0, 1, 2]


# --- migration: partition values from footer statistics -------------------------------------

PARTITION_TYPES: list[tuple[str, pa.DataType, list[Any]]] = [
    ("int32", pa.int32(), [7, 8]),
    ("decimal", pa.decimal128(9, 2), [D("1.20"), D("1.30")]),
    ("date", pa.date32(), [dt.date(2024, 2, 29), dt.date(2024, 3, 1)]),
    ("beyond-bmp", pa.string(), ["\U0001f600", "\uffff"]),
]
SLOW_PARTITION_TYPES: list[tuple[str, pa.DataType, list[Any]]] = [
    ("bool", pa.bool_(), [True, False]),
    ("int64", pa.int64(), [-1, 0]),
    ("string", pa.string(), ["b", "a"]),
]


def _rows_of(table: pa.Table, names: list[str]) -> list[str]:
    import json

    return sorted(
        json.dumps(r, default=str, sort_keys=True) for r in table.select(names).to_pylist()
    )


def _migrate_partitioned(root: Path, kind: pa.DataType, values: list[Any], tamper: bool) -> None:
    """A Hudi table partitioned by a ``kind`` column, migrated in place (zero-copy) to Delta;
    with ``tamper``, one base file is rewritten holding another partition's value in one row
    (its footer statistics then span two values): adopting it would change that row's value
    (Delta takes partition values from the log), so the migration must refuse it."""
    import deltalake

    from lakecore.errors import MigrationError

    schema = pa.schema(
        [pa.field("id", pa.int64(), nullable=False), ("q", pa.int32()), ("part", kind)]
    )
    properties = {"record_key": "id", "table_type": "COPY_ON_WRITE"}
    table = lakecore.create(str(root), schema, "hudi", ["part"], properties)
    n = 3 * len(values)
    table.append(
        pa.table(
            {
                "id": range(n),
                "q": pa.array(range(n), pa.int32()),
                "part": pa.array([values[i // 3] for i in range(n)], kind),
            },
            schema=schema,
        )
    )
    if tamper:
        base = min(p for p in root.rglob("*.parquet") if ".hoodie" not in p.relative_to(root).parts)
        data = pq.read_table(base)
        held = data.column("part").to_pylist()
        other = next(v for v in values if v != held[0])
        data = data.set_column(
            data.column_names.index("part"),
            data.schema.field("part"),
            pa.array([held[0], other, *held[2:]], kind),
        )
        pq.write_table(data.replace_schema_metadata(pq.read_metadata(base).metadata), base)
    source = lakecore.open(str(root), format="hudi").to_arrow()
    names = ["id", "q", "part"]
    if tamper:
        with pytest.raises(MigrationError, match="cannot be adopted"):
            lakecore.migrate(str(root), str(root), to="delta", mode="metadata")
        assert not lakecore.is_table(str(root), format="delta")  # nothing was written
        return
    report = lakecore.migrate(str(root), str(root), to="delta", mode="metadata")
    assert report.files_adopted == len(values) and report.files_rewritten == 0
    target = lakecore.open(str(root), format="delta").to_arrow()
    assert _rows_of(target, names) == _rows_of(source, names)
    theirs = pa.table(deltalake.DeltaTable(str(root)).to_pyarrow_table())
    assert _rows_of(theirs, names) == _rows_of(source, names)


@pytest.mark.parametrize("tamper", [False, True], ids=["clean", "tampered"])
@pytest.mark.parametrize(
    ("name", "kind", "values"), PARTITION_TYPES, ids=[p[0] for p in PARTITION_TYPES]
)
def test_zero_copy_migration_adopts_only_files_holding_their_partition_value(
    tmp_path: Path, name: str, kind: pa.DataType, values: list[Any], tamper: bool
) -> None:
    _migrate_partitioned(tmp_path / "t", kind, values, tamper)


@pytest.mark.slow
@pytest.mark.parametrize("tamper", [False, True], ids=["clean", "tampered"])
@pytest.mark.parametrize(
    ("name", "kind", "values"), SLOW_PARTITION_TYPES, ids=[p[0] for p in SLOW_PARTITION_TYPES]
)
def test_zero_copy_migration_partition_values_slow(
    tmp_path: Path, name: str, kind: pa.DataType, values: list[Any], tamper: bool
) -> None:
    _migrate_partitioned(tmp_path / "t", kind, values, tamper)


def test_pruning_after_an_added_and_widened_column(tmp_path: Path) -> None:
    """Old base files lack the added column and hold the narrower type (float32 0.1 is
    0.10000000149... as a double): their footer statistics must prune as the rows read."""
    root = tmp_path / "t"
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            ("a", pa.int32()),
            ("f", pa.float32()),
            ("ts", pa.int64()),
        ]
    )
    properties = {"record_key": "id", "precombine_field": "ts", "table_type": "COPY_ON_WRITE"}
    table = lakecore.create(str(root), schema, "hudi", [], properties)
    table.append(
        pa.table({"id": [1, 2], "a": [1, 2], "f": [0.1, 0.5], "ts": [1, 1]}, schema=schema)
    )
    with table.update_schema() as update:
        update.add_column("score", pa.float64())
        update.widen_type("f", pa.float64()).widen_type("a", pa.int64())
    table.append(pa.table({"id": [3], "a": [2**40], "f": [0.25], "ts": [1], "score": [1.5]}))
    table = lakecore.open(str(root))
    full = table.to_arrow()
    checked = 0
    for text in [
        "a = 1",
        "a > 2147483647",
        "score IS NULL",
        "score IS NOT NULL",
        "score > 1",
        "NOT (score > 1)",
        "f > 0.1",
        "f = 0.1",
        "f < 0.2",
        "f <= 0.10000000149011612",
        "f = 0.10000000149011612",
    ]:
        got = sorted(table.scan(text).to_arrow().column("id").to_pylist())
        expected = full.filter(
            to_arrow_filter(bind(parse_predicate(text), full.schema), full.schema)
        )
        assert got == sorted(expected.column("id").to_pylist()), text
        checked += 1
    assert checked == 11


# --- base files damaged or gone under the footer reader -------------------------------------


def _two_partitions(root: Path) -> Path:
    """A two-partition CoW table; returns one base file."""
    schema = pa.schema(
        [pa.field("id", pa.int64(), nullable=False), ("ts", pa.int64()), ("p", pa.string())]
    )
    properties = {"record_key": "id", "precombine_field": "ts", "table_type": "COPY_ON_WRITE"}
    table = lakecore.create(str(root), schema, "hudi", ["p"], properties)
    table.append(pa.table({"id": [1, 2], "ts": [1, 1], "p": ["x", "y"]}, schema=schema))
    return min(p for p in root.rglob("*.parquet") if ".hoodie" not in p.relative_to(root).parts)


@pytest.mark.parametrize("damage", ["missing", "truncated", "empty", "directory", "text"])
def test_a_damaged_base_file_is_corrupt_table_error(tmp_path: Path, damage: str) -> None:
    root = tmp_path / "t"
    base = _two_partitions(root)
    if damage == "missing":
        base.unlink()
    elif damage == "truncated":
        base.write_bytes(base.read_bytes()[:-100])
    elif damage == "empty":
        base.write_bytes(b"")
    elif damage == "directory":
        base.unlink()
        base.mkdir()
    else:
        base.write_bytes(b"PAR1 this is not Parquet " * 100)
    for read in (
        lambda: lakecore.open(str(root)).scan("id = 1").to_arrow(),
        lambda: lakecore.open(str(root)).to_arrow(),
        lambda: lakecore.open(str(root)).snapshot().files(),
    ):
        with pytest.raises(CorruptTableError):
            read()


def test_a_base_file_gone_between_listing_and_footer_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lakecore.model.footers as footers_module

    root = tmp_path / "t"
    _two_partitions(root)
    real = footers_module.open_input

    def gone(storage: Any, path: str, what: str = "file") -> Any:
        if path.endswith(".parquet") and ".hoodie" not in path:
            raise FileNotFoundError(path)
        return real(storage, path, what)

    monkeypatch.setattr(footers_module, "open_input", gone)
    with pytest.raises(CorruptTableError, match="missing"):
        lakecore.open(str(root)).scan("id = 1").to_arrow()
    with pytest.raises(CorruptTableError, match="missing"):
        lakecore.open(str(root)).snapshot().files()
