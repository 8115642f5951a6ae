"""Attack review of session 10's changes (review10).

- 30c1302 (+ ae60de1): Delta writes render partition values by Arrow casts
  (``write/partition_out.py``), DML keeps touched files' index rows as Arrow (``dml.py``,
  ``merge.py``: ``file_rows``, ``live_counts``, ``_index_rows``), ``plan_optimize`` groups by
  partition text. Pinned: every partition type's log text and Hive directory are what the
  Python rendering (the previous writer, ``tests/model/partition_text_reference``) gives; DML,
  restore and optimize re-render a file's partition values to the exact text of its add;
  rows, metrics and change data agree with the expected rows and with delta-rs; whole-file
  deletes count live rows of files lacking stats; a value the log cannot hold leaves no file.
- b7fd726/eeb596e (``paths.py``): the numpy byte gate and chunk-wise ``decode_paths`` decode
  every path exactly as decoding each one in Python does (odd spellings, multi-byte UTF-8,
  the gate's 1 MiB block boundary, sliced/chunked/large arrays), and reconcile the same.
- b773f3f (``log/commits.py``): commits parsed in place as memoryview pieces give the
  snapshot of a clean log (CRLF, CR, blank lines, no final newline, whitespace-only
  commits) and a bad line in a big (cut) commit names that commit.
- d7d22a3/4c1f2a9 (``stats_text.py`` ``_regrouped``) and 821ec6d (``deletion_column`` fast path):
  the file index is the same for every grouping of parsed pieces.

Bugs found, fixed in 775c118 and pinned as regressions (each docstring says what it was): an
empty-string partition value written as
``""`` (Spark writes null; delta-rs then reads ``''`` where lakecore reads null); a non-UTF-8
binary partition value refused with a message that does not name the column; and four
older bugs met on the way: ``create`` with column mapping drops ``delta.generationExpression``,
``create`` accepts decimal precision > 38, a deletion vector without ``storageType`` is
silently ignored (its deleted rows come back), and a raw NUL in a log path without a marker
passes the byte gate unchecked (InvalidArgumentError on read instead of CorruptTableError).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import random
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lakecore_delta import stats_text
from lakecore_delta.log import commits
from lakecore_delta.paths import _GATE_BLOCK, decode_paths

import lakecore
from lakecore.errors import CorruptTableError, InvalidArgumentError, SchemaError
from lakecore.storage.paths import contained_path, is_absolute
from tests.delta.builders import (
    DeltaTableBuilder,
    add,
    commit_info,
    field,
    metadata,
    protocol,
    remove,
)
from tests.model.partition_text_reference import partition_path, partition_text

UTC = dt.timezone.utc
DV_PROTOCOL = protocol(3, 7, ["deletionVectors"], ["deletionVectors"])


# ----------------------------------------------------------------------------- log helpers


def _actions(uri: str, version: int) -> list[dict[str, Any]]:
    text = (Path(uri) / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _file_actions(uri: str, version: int, kind: str) -> list[dict[str, Any]]:
    return [a[kind] for a in _actions(uri, version) if kind in a]


def _parquet_files(root: str) -> set[Path]:
    return set(Path(root).rglob("*.parquet"))


# ----------------------------------------------------------------------------- 30c1302: texts

_APPEND_CASES: list[tuple[str, pa.DataType, list[Any]]] = [
    ("bool", pa.bool_(), [True, False, None]),
    ("int8", pa.int8(), [-128, 0, 127, None]),
    ("int16", pa.int16(), [-32768, 5]),
    ("int32", pa.int32(), [-(2**31), 2**31 - 1]),
    ("int64", pa.int64(), [-(2**63), 2**63 - 1, None]),
    (
        "float32",
        pa.float32(),
        [0.1, 1.5, -0.0, math.nan, math.inf, 1e20, 1e-7, None],
    ),
    (
        "float64",
        pa.float64(),
        [0.1, 1.0, -0.0, 0.0, math.nan, -math.inf, math.inf, 1e20, 1e-7, 123456789.125, None],
    ),
    ("dec5_2", pa.decimal128(5, 2), [Decimal("1.50"), Decimal("-999.99"), Decimal("0.00"), None]),
    ("dec38_0", pa.decimal128(38, 0), [Decimal(10**37), Decimal(-5), None]),
    ("dec10_10", pa.decimal128(10, 10), [Decimal("1E-10"), Decimal("-0.5")]),
    (
        "string",
        pa.string(),
        [
            "a b",
            "x=y/z",
            "é",
            "%41",
            "a:b",
            "..",
            "#?*",
            "\n\t",
            "🎉",
            "__HIVE_DEFAULT_PARTITION__",
            None,
        ],
    ),
    ("large_string", pa.large_string(), ["big", None]),
    ("binary", pa.binary(), [b"\x01\x02", b"ab", None]),
    (
        "date",
        pa.date32(),
        [dt.date(1, 1, 1), dt.date(99, 3, 4), dt.date(1970, 1, 1), dt.date(9999, 12, 31), None],
    ),
    (
        "timestamp_ntz",
        pa.timestamp("us"),
        [
            dt.datetime(2024, 2, 3, 4, 5, 6, 7),
            dt.datetime(2024, 1, 1),
            dt.datetime(2024, 1, 1, 0, 0, 0, 500000),
            dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
            dt.datetime(1, 1, 1),
            None,
        ],
    ),
    (
        "timestamp_utc",
        pa.timestamp("us", "UTC"),
        [
            dt.datetime(2024, 2, 3, 4, 5, 6, 789, tzinfo=UTC),
            dt.datetime(1969, 12, 31, 23, 59, 59, 500000, tzinfo=UTC),
            None,
        ],
    ),
    (
        "timestamp_paris",
        pa.timestamp("us", "Europe/Paris"),
        [dt.datetime(2024, 7, 1, 12, tzinfo=UTC), dt.datetime(2024, 10, 27, 0, 30, tzinfo=UTC)],
    ),
    ("timestamp_offset", pa.timestamp("us", "+05:30"), [dt.datetime(2024, 7, 1, 12, tzinfo=UTC)]),
]


def _canonical_value(v: Any) -> Any:
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, dt.datetime) and v.tzinfo is not None:
        return v.astimezone(UTC)
    return v


def test_append_texts_and_directories_are_the_python_rendering(tmp_path: Path) -> None:
    """For every partition type the log's ``partitionValues`` text is ``partition_text`` of
    the value and the file's directory ``partition_path`` of it (what the writer before
    30c1302 wrote); the rows read back the same in lakecore and delta-rs."""
    ran = 0
    for name, t, values in _APPEND_CASES:
        uri = str(tmp_path / name)
        table = lakecore.create(uri, pa.schema([("i", pa.int64()), ("p", t)]), partition_by=["p"])
        data = pa.table({"i": pa.array(range(len(values)), pa.int64()), "p": pa.array(values, t)})
        table.append(data)
        typed = dict(zip(data.column("i").to_pylist(), data.column("p").to_pylist(), strict=True))
        adds = _file_actions(uri, 1, "add")
        assert len(adds) == len(values), name
        for a in adds:
            rows = pq.read_table(Path(uri) / unquote(a["path"])).column("i").to_pylist()
            (i,) = rows
            assert a["partitionValues"] == {"p": partition_text(typed[i])}, (name, typed[i])
            assert unquote(a["path"]).rsplit("/", 1)[0] == partition_path(["p"], [typed[i]]), name
        got = lakecore.open(uri).to_arrow().sort_by("i")
        expected = [_canonical_value(v) for v in data.column("p").to_pylist()]
        assert [_canonical_value(v) for v in got.column("p").to_pylist()] == expected, name
        query = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(uri))
        theirs = pa.table(query.execute("select i from t order by i").read_all())
        assert theirs.column("i").to_pylist() == list(range(len(values))), name
        ran += 1
    assert ran == len(_APPEND_CASES) == 18


# ----------------------------------------------------------------------------- 30c1302: DML

_PART_COLUMNS: list[tuple[str, pa.DataType, list[Any]]] = [
    ("b", pa.bool_(), [True, False, None]),
    ("i8", pa.int8(), [-128, 0, 127, None]),
    ("f", pa.float64(), [-0.0, 0.0, math.nan, math.inf, -math.inf, 1e20, 1e-7, None]),
    ("dec", pa.decimal128(7, 3), [Decimal("1.500"), Decimal("-9999.999"), Decimal("0.000"), None]),
    ("s", pa.string(), ["a b", "x=y/z", "é%41", "#?*:", None]),
    ("d", pa.date32(), [dt.date(1, 1, 1), dt.date(1970, 1, 1), dt.date(9999, 12, 31), None]),
    (
        "ts",
        pa.timestamp("us", "UTC"),
        [
            dt.datetime(2024, 2, 3, 4, 5, 6, 7, tzinfo=UTC),
            dt.datetime(1969, 12, 31, 23, 59, 59, 500000, tzinfo=UTC),
            None,
        ],
    ),
    (
        "ntz",
        pa.timestamp("us"),
        [dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 1, 0, 0, 0, 1), None],
    ),
]
_PARTS = [name for name, _, _ in _PART_COLUMNS]
_SCHEMA = pa.schema([("k", pa.int64()), *[(n, t) for n, t, _ in _PART_COLUMNS]])
_N = 24

_CONFIGS = {
    "plain": {},
    "dv": {"delta.enableDeletionVectors": "true"},
    "cdf": {"delta.enableChangeDataFeed": "true"},
    "cm-dv": {"delta.columnMapping.mode": "name", "delta.enableDeletionVectors": "true"},
}


def _row(k: int) -> dict[str, Any]:
    return {"k": k, **{n: values[k % len(values)] for n, _, values in _PART_COLUMNS}}


def _rows(ks: list[int], pattern: list[int] | None = None) -> pa.Table:
    """Rows ``ks`` with the partition values of rows ``pattern`` (default: their own)."""
    rows = [dict(_row(p), k=k) for k, p in zip(ks, pattern or ks, strict=True)]
    return pa.Table.from_pylist(rows, _SCHEMA)


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    """A row as (k, partition texts): texts compare NaN, -0.0 and instants exactly."""
    return (row["k"], *[partition_text(row[n]) for n in _PARTS])


def _lakecore_rows(uri: str) -> list[tuple[Any, ...]]:
    return sorted(map(_key, lakecore.open(uri).to_arrow().to_pylist()), key=repr)


def _delta_rs_rows(uri: str) -> list[tuple[Any, ...]]:
    query = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(uri))
    theirs = pa.table(query.execute("select * from t").read_all())
    theirs = theirs.select(_SCHEMA.names).cast(_SCHEMA)
    return sorted(map(_key, theirs.to_pylist()), key=repr)


def _base_rows() -> list[dict[str, Any]]:
    """Two rows per partition: k and k + 1000 (a deletion vector keeps the other)."""
    return [_row(k) for k in range(_N)] + [dict(_row(k), k=k + 1000) for k in range(_N)]


def _dml(table: lakecore.Table, op: str) -> tuple[Any, list[dict[str, Any]], dict[str, int]]:
    """Run ``op``; return its result, the rows expected after it and its expected counts."""
    base = _base_rows()
    if op == "delete":
        result = table.delete("k % 3 = 0 AND k < 1000")
        kept = [r for r in base if r["k"] % 3 or r["k"] >= 1000]
        return result, kept, {"rows_deleted": 8}
    if op == "update":
        result = table.update({"k": "k + 100"}, "k % 3 = 1 AND k < 1000")
        expected = [
            dict(r, k=r["k"] + 100) if r["k"] % 3 == 1 and r["k"] < 1000 else r for r in base
        ]
        return result, expected, {"rows_updated": 8}
    if op == "merge":
        source = _rows([0, 1, 50], [0, 1, 2])
        merge = table.merge(source, "target.k = source.k")
        merge = merge.when_matched_update({"k": "source.k + 100"}).when_not_matched_insert_all()
        result = merge.execute()
        expected = [dict(r, k=r["k"] + 100) if r["k"] in (0, 1) else r for r in base]
        return result, [*expected, dict(_row(2), k=50)], {"rows_updated": 2, "rows_inserted": 1}
    # Partition columns only: whole files go, no file is read (unless CDF needs the rows).
    result = table.delete("s IS NULL OR d = DATE '0001-01-01'")
    gone = {r["k"] for r in base if r["s"] is None or r["d"] == dt.date(1, 1, 1)}
    kept = [r for r in base if r["k"] not in gone]
    return result, kept, {"rows_deleted": len(gone)}


def _partition_texts_by_path(uri: str, upto: int) -> dict[str, dict[str, Any]]:
    """The ``partitionValues`` of every add of commits 1..``upto`` (later adds win)."""
    out: dict[str, dict[str, Any]] = {}
    for version in range(1, upto + 1):
        for a in _file_actions(uri, version, "add"):
            out[a["path"]] = a["partitionValues"]
    return out


@pytest.mark.parametrize("op", ["delete", "update", "merge", "delete-partition"])
@pytest.mark.parametrize("config", sorted(_CONFIGS))
def test_dml_over_every_partition_type(tmp_path: Path, config: str, op: str) -> None:
    """DML on a table partitioned by eight columns of every kind (NaN, +-inf, -0.0, year 1 and
    9999, decimals, escaped strings, instants before 1970, nulls): the rows and counts are
    the expected ones, delta-rs reads the same rows, every remove (and deletion-vector re-add)
    carries the exact text of its file's add, every new file the text of an existing
    partition, and change data is complete."""
    uri = str(tmp_path / "t")
    table = lakecore.create(uri, _SCHEMA, partition_by=_PARTS, properties=_CONFIGS[config])
    table.append(_rows([*range(_N), *range(1000, 1000 + _N)], [*range(_N), *range(_N)]))
    texts = _partition_texts_by_path(uri, 1)
    assert len(texts) == _N  # one file per partition: every combination differs
    known = {json.dumps(v, sort_keys=True) for v in texts.values()}

    result, expected, counts = _dml(lakecore.open(uri), op)
    assert result.version == 2
    for name, value in counts.items():
        assert getattr(result, name) == value, name
    want = sorted(map(_key, expected), key=repr)
    assert _lakecore_rows(uri) == want
    assert _delta_rs_rows(uri) == want

    removes = _file_actions(uri, 2, "remove")
    adds = _file_actions(uri, 2, "add")
    re_added = {a["path"] for a in adds if a["path"] in texts}  # deletion-vector re-adds
    assert bool(re_added) == (config in ("dv", "cm-dv") and op != "delete-partition")
    assert len([r for r in removes if r["path"] not in re_added]) == result.files_removed
    for r in removes:
        assert r["partitionValues"] == texts[r["path"]], r["path"]
    for a in adds:
        if a["path"] in re_added:
            assert a.get("deletionVector") and a["partitionValues"] == texts[a["path"]]
        else:
            assert json.dumps(a["partitionValues"], sort_keys=True) in known
    for c in _file_actions(uri, 2, "cdc"):
        assert json.dumps(c["partitionValues"], sort_keys=True) in known
    if config == "cdf":
        kinds = lakecore.open(uri).changes(2).column("_change_type").to_pylist()
        deleted = counts.get("rows_deleted", 0)
        updated = counts.get("rows_updated", 0)
        assert sorted(kinds) == sorted(
            ["delete"] * deleted
            + ["update_preimage", "update_postimage"] * updated
            + ["insert"] * counts.get("rows_inserted", 0)
        )
    info = _actions(uri, 2)[0]["commitInfo"]["operationMetrics"]
    if op.startswith("delete"):
        assert info["numDeletedRows"] == str(counts["rows_deleted"])


def test_restore_and_optimize_remove_with_the_add_texts(tmp_path: Path) -> None:
    """Restore re-adds and removes, optimize removes and compacts files of every partition
    type: each remove and re-add carries its add's exact text; rows and delta-rs agree."""
    uri = str(tmp_path / "t")
    table = lakecore.create(uri, _SCHEMA, partition_by=_PARTS)
    table.append(_rows(list(range(_N))))
    lakecore.open(uri).append(_rows([k + 100 for k in range(_N)], list(range(_N))))
    lakecore.open(uri).delete("k < 12")  # version 3: whole-file removes
    texts = _partition_texts_by_path(uri, 2)
    lakecore.open(uri).restore(2)  # version 4: re-adds what version 3 removed
    for kind in ("add", "remove"):
        for a in _file_actions(uri, 4, kind):
            assert a["partitionValues"] == texts[a["path"]], (kind, a["path"])
    assert len(_file_actions(uri, 4, "add")) == 12
    result = lakecore.open(uri).optimize()  # version 5: two small files per partition
    assert result.files_removed == 2 * _N and result.files_added == _N
    texts = _partition_texts_by_path(uri, 5)
    for r in _file_actions(uri, 5, "remove"):
        assert r["partitionValues"] == texts[r["path"]]
    new = [a["partitionValues"] for a in _file_actions(uri, 5, "add")]
    assert sorted(json.dumps(v, sort_keys=True) for v in new) == sorted(
        json.dumps(texts[a["path"]], sort_keys=True) for a in _file_actions(uri, 1, "add")
    )
    want = sorted(
        [*map(_key, (_row(k) for k in range(_N)))]
        + [_key(dict(_row(k), k=k + 100)) for k in range(_N)],
        key=repr,
    )
    assert _lakecore_rows(uri) == want
    assert _delta_rs_rows(uri) == want


_RS_COLUMNS: list[tuple[str, pa.DataType, list[Any]]] = [
    ("b", pa.bool_(), [True, False, None]),
    ("i", pa.int64(), [-(2**63), 0, None, 7]),
    ("f", pa.float64(), [1.5, -0.0, 1e20, None]),
    ("s", pa.string(), ["a b", "x=y/z", "é", None]),
    ("d", pa.date32(), [dt.date(1, 1, 1), dt.date(2024, 2, 29), None]),
    ("ts", pa.timestamp("us", "UTC"), [dt.datetime(2024, 1, 1, tzinfo=UTC), None]),
]


@pytest.mark.parametrize("cdf", [False, True], ids=["plain", "cdf"])
def test_lakecore_dml_on_partitions_delta_rs_wrote(tmp_path: Path, cdf: bool) -> None:
    """delta-rs spells partition values its own way (``2024-01-01 00:00:00`` timestamps,
    ``1e20`` floats); lakecore's removes and rewrites over them leave the rows delta-rs and
    lakecore both expect."""
    uri = str(tmp_path / "t")
    schema = pa.schema([("k", pa.int64()), *[(n, t) for n, t, _ in _RS_COLUMNS]])
    names = [n for n, _, _ in _RS_COLUMNS]

    def rows(ks: list[int]) -> pa.Table:
        out = [{"k": k, **{n: v[k % len(v)] for n, _, v in _RS_COLUMNS}} for k in ks]
        return pa.Table.from_pylist(out, schema)

    def texts(table: pa.Table) -> dict[int, tuple[Any, ...]]:
        out = {}
        for row in table.select(schema.names).cast(schema).to_pylist():
            out[row["k"]] = tuple(partition_text(row[n]) for n in names)
        return out

    configuration = {"delta.enableChangeDataFeed": "true"} if cdf else None
    deltalake.write_deltalake(
        uri, rows(list(range(12))), partition_by=names, configuration=configuration
    )
    deltalake.write_deltalake(uri, rows(list(range(12, 24))), mode="append")
    lakecore.open(uri).delete("k % 4 = 0")
    lakecore.open(uri).update({"k": "k + 100"}, "k % 4 = 1")
    merge = lakecore.open(uri).merge(rows([2, 99]), "target.k = source.k")
    merge.when_matched_delete().when_not_matched_insert_all().execute()
    original = texts(rows([*range(24), 99]))
    want = {(k + 100 if k % 4 == 1 else k): original[k] for k in range(24) if k % 4 and k != 2}
    want[99] = original[99]
    query = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(uri))
    theirs = pa.table(query.execute("select * from t").read_all())
    ours = lakecore.open(uri).to_arrow()
    assert ours.num_rows == theirs.num_rows == len(want) == 18
    assert texts(ours) == texts(theirs) == want


# ----------------------------------------------------------------------------- live counts


def _no_stats_table(root: Path, cdf: bool) -> DeltaTableBuilder:
    """A DV table of 9 files (3 + k rows each) in partitions a, b, c and null, several with
    no ``numRecords`` (no stats, ``{}``, an explicit null, stats without it)."""
    b = DeltaTableBuilder(root)
    conf = {"delta.enableDeletionVectors": "true"}
    if cdf:
        conf["delta.enableChangeDataFeed"] = "true"
    b.init([field("i", "long"), field("p", "string")], ["p"], conf, proto=DV_PROTOCOL)
    files: list[tuple[str | None, Any]] = [
        ("a", True),
        ("a", False),
        ("b", False),
        ("b", True),
        ("c", False),
        (None, False),
        ("a", '{"numRecords":null}'),
        ("a", "{}"),
        ("b", '{"minValues":{}}'),
    ]
    actions = []
    for k, (p, stats) in enumerate(files):
        where = f"p={p if p is not None else '__HIVE_DEFAULT_PARTITION__'}"
        rows = {"i": pa.array(range(k * 10, k * 10 + 3 + k), pa.int64())}
        actions.append(
            b.data_file(f"{where}/f{k}.parquet", rows, partition_values={"p": p}, stats=stats)
        )
    b.commit(1, *actions)
    return b


_WHOLE_FILE_CASES: dict[str, tuple[Callable[[str], Any], int, int, int]] = {
    # name: (op after a DV delete of every i % 10 = 1, rows deleted, files removed, left)
    "partition": (lambda uri: lakecore.open(uri).delete("p = 'a' or p = 'b'"), 41, 7, 13),
    "null-partition": (lambda uri: lakecore.open(uri).delete("p is null"), 7, 1, 47),
    "everything": (lambda uri: lakecore.open(uri).delete(), 54, 9, 0),
    "overwrite": (
        lambda uri: lakecore.open(uri).overwrite(
            pa.table({"i": pa.array([1], pa.int64()), "p": ["z"]})
        ),
        54,
        9,
        1,
    ),
}


@pytest.mark.parametrize("cdf", [False, True], ids=["plain", "cdf"])
@pytest.mark.parametrize("case", sorted(_WHOLE_FILE_CASES))
def test_whole_file_deletes_count_live_rows_of_files_without_stats(
    tmp_path: Path, case: str, cdf: bool
) -> None:
    """``live_counts``: record counts minus deletion-vector cardinality, the footer for files
    without ``numRecords``; rows_deleted, ``numDeletedRows`` and change data agree."""
    b = _no_stats_table(tmp_path / "t", cdf)
    first = lakecore.open(b.uri).delete("i % 10 = 1")  # one row of every file, by DV
    assert first.rows_deleted == 9
    op, deleted, removed, left = _WHOLE_FILE_CASES[case]
    result = op(b.uri)
    assert (result.rows_deleted, result.files_removed) == (deleted, removed)
    assert lakecore.open(b.uri).count() == left
    metrics = _actions(b.uri, 3)[0]["commitInfo"]["operationMetrics"]
    assert metrics["numDeletedRows"] == str(deleted)
    if cdf:
        kinds = lakecore.open(b.uri).changes(3).column("_change_type").to_pylist()
        assert kinds.count("delete") == deleted


# ----------------------------------------------------------------------------- failures

_YEAR_10000 = 2_932_897  # 10000-01-01 as days since 1970-01-01


@pytest.mark.parametrize("config", ["plain", "dv", "cdf"])
def test_a_merge_inserting_a_date_the_log_cannot_spell_writes_nothing(
    tmp_path: Path, config: str
) -> None:
    """The matched delete writes a deletion vector (or a rewrite) before the insert's
    partition value is refused: the abort removes it, the table stays at its version."""
    uri = str(tmp_path / "t")
    schema = pa.schema([("i", pa.int64()), ("p", pa.date32())])
    table = lakecore.create(uri, schema, partition_by=["p"], properties=_CONFIGS[config])
    days = pa.array([0, 0, 1], pa.int32()).cast(pa.date32())
    table.append(pa.table({"i": pa.array([1, 2, 3], pa.int64()), "p": days}))
    before = {p for p in Path(uri).rglob("*") if p.is_file()}
    source = pa.table(
        {
            "i": pa.array([1, 9], pa.int64()),
            "p": pa.array([0, _YEAR_10000], pa.int32()).cast(pa.date32()),
        }
    )
    merge = lakecore.open(uri).merge(source, "target.i = source.i")
    with pytest.raises(InvalidArgumentError, match=r"'p'.*outside years 0000\.\.9999"):
        merge.when_matched_delete().when_not_matched_insert_all().execute()
    assert {p for p in Path(uri).rglob("*") if p.is_file()} == before
    assert lakecore.open(uri).version == 1
    assert sorted(lakecore.open(uri).to_arrow().column("i").to_pylist()) == [1, 2, 3]


def _binary_table(uri: str) -> None:
    schema = pa.schema([("i", pa.int64()), ("p", pa.binary())])
    table = lakecore.create(uri, schema, partition_by=["p"])
    table.append(pa.table({"i": pa.array([0], pa.int64()), "p": pa.array([b"ok"])}))


def test_a_non_utf8_binary_partition_value_leaves_no_file(tmp_path: Path) -> None:
    """Bytes that are no UTF-8 text are refused before any file is written (the writer
    before 30c1302 left the data files of the other partitions behind)."""
    uri = str(tmp_path / "t")
    _binary_table(uri)
    before = _parquet_files(uri)
    data = pa.table({"i": pa.array([1, 2], pa.int64()), "p": pa.array([b"a", b"\xff\xfe"])})
    with pytest.raises(InvalidArgumentError):
        lakecore.open(uri).append(data)
    with pytest.raises(InvalidArgumentError):
        lakecore.open(uri).update({"p": b"\xff"}, "i = 0")
    assert _parquet_files(uri) == before
    assert lakecore.open(uri).version == 1


def test_a_non_utf8_binary_partition_value_is_refused_naming_the_column(tmp_path: Path) -> None:
    """Fixed in 775c118; was: partition_out.partition_texts renders binary through partition_text
    (bytes decoded with surrogateescape) and pa.array(..., pa.string()) raises a raw
    UnicodeEncodeError; the boundary wraps it as 'Transaction.append failed: UnicodeEncodeError
    ... surrogates not allowed', naming neither column nor value"""
    uri = str(tmp_path / "t")
    _binary_table(uri)
    data = pa.table({"i": pa.array([1], pa.int64()), "p": pa.array([b"\xff\xfe"])})
    with pytest.raises(InvalidArgumentError, match=r"partition column 'p'"):
        lakecore.open(uri).append(data)


def test_an_empty_string_partition_value_is_logged_as_null(tmp_path: Path) -> None:
    """Fixed in 775c118; was: partition_out.partition_texts casts an empty string to '' and log_out
    writes partitionValues {'p': ''}; the protocol reads '' as null (lakecore does) while
    delta-rs 1.6 reads '' back as '', so the two disagree on the row; Delta Spark writes null
    for an empty partition value (its directory is __HIVE_DEFAULT_PARTITION__, as lakecore's)"""
    uri = str(tmp_path / "t")
    table = lakecore.create(
        uri, pa.schema([("i", pa.int64()), ("p", pa.string())]), partition_by=["p"]
    )
    table.append(pa.table({"i": pa.array([1], pa.int64()), "p": [""]}))
    assert lakecore.open(uri).to_arrow().column("p").to_pylist() == [None]
    query = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(uri))
    theirs = pa.table(query.execute("select p from t").read_all())
    assert theirs.column("p").to_pylist() == [None]
    (a,) = _file_actions(uri, 1, "add")
    assert a["partitionValues"] == {"p": None}


# ----------------------------------------------------------------------------- older bugs met


def test_a_generated_column_survives_create_with_column_mapping(tmp_path: Path) -> None:
    """Fixed in 775c118; was: write/create.py with_column_mapping rebuilds each field's metadata
    from delta_metadata(f) (the 'delta.metadata' key) only: a 'delta.generationExpression' key
    given on the Arrow field is dropped, so the table has no generated column and an append
    without it raises SchemaError (without column mapping it works)"""
    schema = pa.schema(
        [
            ("i", pa.int64()),
            pa.field("g", pa.int64(), metadata={"delta.generationExpression": "i * 2"}),
        ]
    )
    uri = str(tmp_path / "t")
    table = lakecore.create(uri, schema, properties={"delta.columnMapping.mode": "name"})
    table.append(pa.table({"i": pa.array([1, 2], pa.int64())}))
    assert sorted(lakecore.open(uri).to_arrow().column("g").to_pylist()) == [2, 4]


def test_create_refuses_decimal_precision_over_38(tmp_path: Path) -> None:
    """Fixed in 775c118; was: schema.to_delta_type writes decimal(40,20) for an Arrow decimal256
    and create accepts it; the protocol caps precision at 38 and delta-rs cannot open the table
    ('precision must be in range 1..38'); check_storable should refuse it (SchemaError)"""
    schema = pa.schema([("i", pa.int64()), ("x", pa.decimal256(40, 20))])
    with pytest.raises(SchemaError, match="38"):
        lakecore.create(str(tmp_path / "t"), schema)


def test_a_deletion_vector_without_storage_type_is_refused(tmp_path: Path) -> None:
    """Fixed in 775c118; was: file_index.deletion_column masks the deletion column by storageType
    alone (and 821ec6d's fast path returns all-null when every storageType is null): an add
    whose deletionVector object has cardinality 2 but no storageType reads as a file without
    deletes, so rows it deletes come back; a DV object with fields but no storageType should
    raise CorruptTableError (validate.py checks no DV field)"""
    b = DeltaTableBuilder(tmp_path / "t")
    b.init([field("i", "long")], [], {"delta.enableDeletionVectors": "true"}, proto=DV_PROTOCOL)
    dv = {"pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", "sizeInBytes": 40}
    rows = {"i": pa.array([1, 2, 3], pa.int64())}
    b.commit(1, b.data_file("a.parquet", rows, deletion_vector={**dv, "cardinality": 2}))
    with pytest.raises(CorruptTableError, match=r"00000000000000000001\.json.*without storageType"):
        lakecore.open(b.uri).to_arrow()


def test_a_deletion_vector_without_storage_type_in_a_checkpoint_is_refused(
    tmp_path: Path,
) -> None:
    """The check is part of log validation, so a checkpoint's adds go through it too (an
    unreadable checkpoint falls back to JSON replay, which refuses the same add: see the
    test above) and the error names the checkpoint file."""
    b = DeltaTableBuilder(tmp_path / "t")
    configuration = {"delta.enableDeletionVectors": "true"}
    b.init([field("i", "long")], [], configuration, proto=DV_PROTOCOL)
    dv = {"pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", "sizeInBytes": 40}
    rows = {"i": pa.array([1, 2, 3], pa.int64())}
    plain = b.data_file("b.parquet", rows)
    orphan = b.data_file("a.parquet", rows, deletion_vector={**dv, "cardinality": 2})
    b.commit(1, plain, orphan)
    meta = metadata([field("i", "long")], [], configuration)
    b.checkpoint(1, [DV_PROTOCOL, meta, plain, orphan])
    b.last_checkpoint(1)
    for version in (0, 1):  # cleaned up: no JSON replay to fall back to
        b.commit_path(version).unlink()
    with pytest.raises(CorruptTableError, match=r"checkpoint.*without storageType"):
        lakecore.open(b.uri).to_arrow()


# ----------------------------------------------------------------------------- paths

_ROOT = "/data/t"
_PIECES = [
    "a", "b", ".", "/", "%", "%2E", "%2F", "%C3%A9", ":", "é", "日", "🎉", "=", " ", "file:",
    "s3://b/", "x.parquet", "..", "./", "//", "%25", "+", "%zz", "\\", "?", "#",
]  # fmt: skip


def _python_decoding(paths: list[str | None]) -> list[str | None] | str:
    """Every path decoded in Python (``unquote`` + ``contained_path``), as the flagged ones
    are; the error text of the first that fails."""
    where = f"{_ROOT}/_delta_log"
    out: list[str | None] = []
    try:
        for p in paths:
            if p is None:
                out.append(None)
            else:
                out.append(
                    contained_path(unquote(p), _ROOT, source=where, allow_outside=is_absolute(p))
                )
    except CorruptTableError as exc:
        return str(exc)
    return out


def _decoded(array: pa.Array | pa.ChunkedArray) -> list[str | None] | str:
    try:
        return list(decode_paths(array, _ROOT).to_pylist())
    except CorruptTableError as exc:
        return str(exc)


def _random_paths(rnd: random.Random) -> list[str | None]:
    paths: list[str | None] = []
    for _ in range(rnd.randint(1, 6)):
        r = rnd.random()
        if r < 0.05:
            paths.append(None)
        elif r < 0.08:
            paths.append("")
        else:
            paths.append("".join(rnd.choice(_PIECES) for _ in range(rnd.randint(1, 6))))
    if rnd.random() < 0.1:  # a multi-byte character just before the gate's block boundary
        paths.insert(0, "p" * (_GATE_BLOCK - rnd.randint(0, 8)) + "é/f.parquet")
    return paths


def _shaped(paths: list[str | None], shape: str, rnd: random.Random) -> pa.Array | pa.ChunkedArray:
    if shape == "large":
        return pa.array(paths, pa.large_string())
    if shape == "sliced":
        return pa.array(["x/../y", *paths, "./z"], pa.string()).slice(1, len(paths))
    if shape == "chunked":
        cut = sorted(rnd.sample(range(len(paths) + 1), min(2, len(paths) + 1)))
        parts = [paths[: cut[0]], paths[cut[0] : cut[-1]], paths[cut[-1] :]]
        return pa.chunked_array([pa.array(p, pa.string()) for p in parts], pa.string())
    return pa.array(paths, pa.string())


def _check_decoding(trials: int, seed: int) -> int:
    rnd = random.Random(seed)
    ran = 0
    for _ in range(trials):
        paths = _random_paths(rnd)
        shape = rnd.choice(["plain", "large", "sliced", "chunked"])
        assert _decoded(_shaped(paths, shape, rnd)) == _python_decoding(paths), (shape, paths)
        ran += 1
    return ran


def test_decode_paths_equals_decoding_every_path_in_python() -> None:
    """The byte gate only skips Python where Python would change nothing: random odd
    spellings (escapes, dot segments, URIs, multi-byte UTF-8 at the 1 MiB block boundary,
    empty and null) in plain, large, sliced and chunked arrays decode, or are refused with
    the message, exactly as decoding each path in Python."""
    assert _check_decoding(400, seed=10) == 400


@pytest.mark.slow
def test_decode_paths_equals_decoding_every_path_in_python_many() -> None:
    assert _check_decoding(5000, seed=11) == 5000


def _reconcile_table(root: Path, spelt: str, removed: str, checkpoint: bool) -> str:
    b = DeltaTableBuilder(root)
    b.init([field("i", "long")])
    adds = [add(spelt.replace("ROOT", str(root)), stats={"numRecords": 1}), add("keep.parquet")]
    b.commit(1, commit_info(), *adds)
    if checkpoint:
        b.checkpoint(1, [protocol(), metadata([field("i", "long")]), *adds])
        b.last_checkpoint(1)
    b.commit(2, commit_info(), remove(removed.replace("ROOT", str(root))))
    return b.uri


_SPELLINGS = [
    # (path in the add, path in the remove, live paths but keep.parquet)
    ("./a.parquet", "a.parquet", []),
    ("a.parquet", "./a.parquet", []),
    ("x//y.parquet", "x/y.parquet", []),
    ("d/./e/../f.parquet", "d/f.parquet", []),
    ("a%20b.parquet", "a b.parquet", []),
    ("%C3%A9/%E6%97%A5.parquet", "é/日.parquet", []),
    ("file://ROOT/g.parquet", "g.parquet", []),
    ("g.parquet/", "g.parquet", []),
    ("p=%252F/h.parquet", "p=%252F/h.parquet", []),
    ("p=%252F/h.parquet", "p=%2F/h.parquet", ["p=%2F/h.parquet"]),  # removes p=/h.parquet
    ("p=%252F/h.parquet", "p=/h.parquet", ["p=%2F/h.parquet"]),
    ("s3://bucket/o.parquet", "other.parquet", ["s3://bucket/o.parquet"]),
    ("a..b.parquet", "a..b.parquet", []),
    ("d/.hidden.parquet", "d/other.parquet", ["d/.hidden.parquet"]),
]


@pytest.mark.parametrize("checkpoint", [False, True], ids=["json", "checkpoint"])
def test_odd_spellings_reconcile(tmp_path: Path, checkpoint: bool) -> None:
    ran = 0
    for i, (spelt, removed, live) in enumerate(_SPELLINGS):
        uri = _reconcile_table(tmp_path / str(i), spelt, removed, checkpoint)
        paths = lakecore.open(uri).snapshot().files().column("path").to_pylist()
        assert sorted(paths) == sorted(["keep.parquet", *live]), (spelt, removed)
        ran += 1
    assert ran == len(_SPELLINGS) == 14


@pytest.mark.parametrize("checkpoint", [False, True], ids=["json", "checkpoint"])
@pytest.mark.parametrize("spelt", ["../e.parquet", "%2E%2E/x.parquet", "a/../../z.parquet", ""])
def test_odd_spellings_that_name_no_file_of_the_table_are_refused(
    tmp_path: Path, checkpoint: bool, spelt: str
) -> None:
    uri = _reconcile_table(tmp_path / "t", spelt, "keep.parquet", checkpoint)
    with pytest.raises(CorruptTableError, match=r"_delta_log.*file path"):
        lakecore.open(uri).snapshot().files()


@pytest.mark.parametrize("shift", [-2, -1, 0, 1])
@pytest.mark.parametrize("checkpoint", [False, True], ids=["json", "checkpoint"])
def test_a_dot_segment_at_the_gate_block_boundary_reconciles(
    tmp_path: Path, checkpoint: bool, shift: int
) -> None:
    """A checkpoint or commit whose path bytes reach 1 MiB: the ``./`` of a path spelt
    ``x/./y`` starts ``shift`` bytes from the block boundary, after a two-byte ``é``; a
    remove spelt ``x/y`` removes it (it would stay live if the gate missed the marker)."""
    b = DeltaTableBuilder(tmp_path / "t")
    b.init([field("i", "long")])
    fillers: list[str] = []
    size = 0
    while size < _GATE_BLOCK - 300:
        path = f"d{len(fillers):05d}/é日-{len(fillers)}.parquet"
        fillers.append(path)
        size += len(path.encode())
    stem = "x" * (_GATE_BLOCK + shift - size - 2) + "é"
    assert len((stem).encode()) + size == _GATE_BLOCK + shift
    adds = [add(p) for p in fillers] + [add(f"{stem}/./y.parquet")]
    b.commit(1, commit_info(), *adds)
    if checkpoint:
        b.checkpoint(1, [protocol(), metadata([field("i", "long")]), *adds])
        b.last_checkpoint(1)
    b.commit(2, commit_info(), remove(f"{stem}/y.parquet"), remove("d00000/é日-0.parquet"))
    paths = lakecore.open(b.uri).snapshot().files().column("path").to_pylist()
    assert len(paths) == len(fillers) - 1
    assert not any(p.endswith("y.parquet") for p in paths)


def test_a_nul_byte_in_a_plain_log_path_is_corruption(tmp_path: Path) -> None:
    """Fixed in 775c118; was: paths._may_need_decoding (and _MARKERS) flag '%', ':' and dot/slash
    pairs only: a raw NUL in a log path (JSON \\u0000) with no marker skips contained_path,
    whose NUL check raises CorruptTableError; the read then fails as InvalidArgumentError
    ('Scan.to_batches failed: ValueError: embedded null byte'), while './a\\x00b' or 'a%00b' are
    CorruptTableError (older than the byte gate; add 0x00 to the gate and markers)"""
    b = DeltaTableBuilder(tmp_path / "t")
    b.init([field("i", "long")])
    b.commit(1, commit_info(), add("a\x00b.parquet", stats={"numRecords": 1}))
    with pytest.raises(CorruptTableError, match="NUL"):
        lakecore.open(b.uri).snapshot().files()


# ----------------------------------------------------------------------------- commit pieces


def _add_lines(version: int, n: int) -> list[bytes]:
    lines = []
    for k in range(n):
        stats = {
            "numRecords": k,
            "minValues": {"i": k},
            "maxValues": {"i": k},
            "nullCount": {"i": 0},
        }
        lines.append(json.dumps(add(f"v{version}/f{k}.parquet", stats=stats)).encode())
    return lines


def _raw_log(root: Path, commits_bytes: list[bytes]) -> str:
    b = DeltaTableBuilder(root)
    b.init([field("i", "long")])
    for version, data in enumerate(commits_bytes, start=1):
        b.write_bytes(f"_delta_log/{version:020d}.json", data)
    return b.uri


_BIG = 400  # adds of a commit over the patched _OWN_PIECE; cut at the patched block size


def _clean(versions: list[tuple[int, int]]) -> list[bytes]:
    return [b"\n".join(_add_lines(v, n)) + b"\n" for v, n in versions]


_SPELT_COMMITS: dict[str, Callable[[], list[bytes]]] = {
    "crlf": lambda: [
        b"\r\n".join(_add_lines(1, _BIG)) + b"\r\n",
        b"\r\n".join(_add_lines(2, 5)) + b"\r\n",
        b"\n".join(_add_lines(3, _BIG)) + b"\n",
    ],
    "cr-only": lambda: [b"\r".join(_add_lines(1, _BIG)) + b"\r", *_clean([(2, 5), (3, _BIG)])],
    "blank-lines": lambda: [
        b"".join(line + b"\n\n  \n\t\r\n" for line in _add_lines(1, _BIG)),
        *_clean([(2, 5), (3, _BIG)]),
    ],
    "no-final-newline": lambda: [
        b"\n".join(_add_lines(1, _BIG)),
        b"\n".join(_add_lines(2, 5)),
        b"\n".join(_add_lines(3, _BIG)),
    ],
    "leading-blank": lambda: [
        b"\n" * 3000 + b"\n".join(_add_lines(1, _BIG)),
        *_clean([(2, 5), (3, _BIG)]),
    ],
}  # fmt: skip
_CLEAN_OF = {name: [(1, _BIG), (2, 5), (3, _BIG)] for name in _SPELT_COMMITS}


def _patch_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Big commits of a few KiB: parsed on their own, cut into many pieces."""
    monkeypatch.setattr(commits, "_OWN_PIECE", 4 << 10)
    monkeypatch.setattr(commits, "_BLOCK_SIZE", 9 << 10)


@pytest.mark.parametrize("spelling", sorted(_SPELT_COMMITS))
def test_commits_spelt_oddly_give_the_snapshot_of_the_clean_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    clean = lakecore.open(_raw_log(tmp_path / "clean", _clean(_CLEAN_OF[spelling])))
    expected = clean.snapshot().files().sort_by("path")
    assert expected.num_rows == 2 * _BIG + 5
    _patch_pieces(monkeypatch)
    chunks = _SPELT_COMMITS[spelling]()
    assert len(list(commits._json_pieces(chunks))) > 4  # cut in place, not joined
    got = lakecore.open(_raw_log(tmp_path / "odd", chunks)).snapshot().files().sort_by("path")
    assert got.equals(expected)


def test_a_whitespace_only_big_commit_adds_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _patch_pieces(monkeypatch)
    chunks = [b"\n" * 20_000, b" \r\n\t" * 5_000, *_clean([(3, 5)])]
    files = lakecore.open(_raw_log(tmp_path / "t", chunks)).snapshot().files()
    assert files.num_rows == 5


_BAD_LINES = {
    "first": lambda lines: [b"{bad", *lines],
    "middle": lambda lines: [*lines[:200], b'{"add":{"path":3}}', *lines[200:]],
    "last-no-newline": lambda lines: [*lines, b"{"],
    "null-line": lambda lines: [*lines[:97], b"null", *lines[97:]],
    "invalid-utf8": lambda lines: [
        *lines[:5],
        b'{"add":{"path":"\xff.parquet","size":1,"modificationTime":1,"dataChange":true,'
        b'"partitionValues":{}}}',
        *lines[5:],
    ],
    "wrong-type": lambda lines: [*lines[:300], b'{"add":{"path":"q","size":"x"}}', *lines[300:]],
}


@pytest.mark.parametrize("bad", sorted(_BAD_LINES))
def test_a_bad_line_in_a_big_commit_names_that_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bad: str
) -> None:
    """Commit 2 is big (cut in place into pieces) between small commits 1 and 3 (joined):
    the error names commit 2, not the run of commits."""
    _patch_pieces(monkeypatch)
    lines = _BAD_LINES[bad](_add_lines(2, _BIG))
    chunks = [*_clean([(1, 5)]), b"\n".join(lines), *_clean([(3, 5)])]
    uri = _raw_log(tmp_path / "t", chunks)
    with pytest.raises(CorruptTableError) as info:
        lakecore.open(uri).snapshot().files()
    message = str(info.value)
    assert f"{2:020d}.json" in message
    assert f"{1:020d}.json" not in message and f"{3:020d}.json" not in message


@pytest.mark.slow
@pytest.mark.parametrize("where", ["huge-line-first", "huge-line-last", "bad-line-in-a-cut"])
def test_commits_of_real_piece_sizes(tmp_path: Path, where: str) -> None:
    """The unpatched sizes: a 9 MB line (longer than a block), and a bad line deep in a 9 MB
    commit (cut at 8 MiB) naming that commit."""
    huge = json.dumps(commit_info(pad="x" * (9 << 20))).encode()
    lines = _add_lines(2, 3)
    if where == "huge-line-first":
        chunks = [*_clean([(1, 5)]), b"\n".join([huge, *lines]) + b"\n", *_clean([(3, 5)])]
        assert lakecore.open(_raw_log(tmp_path / "t", chunks)).snapshot().files().num_rows == 13
        return
    if where == "huge-line-last":
        chunks = [*_clean([(1, 5)]), b"\n".join([*lines, huge]), *_clean([(3, 5)])]
        assert lakecore.open(_raw_log(tmp_path / "t", chunks)).snapshot().files().num_rows == 13
        return
    many = _add_lines(2, 70_000)
    bad = [*many[:60_000], b'{"add":{"path":"q","size":"x"}}', *many[60_000:]]
    chunks = [*_clean([(1, 5)]), b"\n".join(bad), *_clean([(3, 5)])]
    assert len(chunks[1]) > 8 << 20
    with pytest.raises(CorruptTableError, match=f"{2:020d}.json"):
        lakecore.open(_raw_log(tmp_path / "t", chunks)).snapshot().files()


# ----------------------------------------------------------------------------- stats grouping


def _mixed_stats_log(root: Path) -> str:
    rnd = random.Random(3)
    b = DeltaTableBuilder(root)
    fields = [field("i", "long"), field("s", "string"), field("d", "date")]
    b.init(fields)
    for version in range(1, 31):
        actions: list[dict[str, Any]] = [commit_info()]
        for k in range(rnd.randint(1, 120)):
            r = rnd.random()
            a = add(f"v{version}/f{k}.parquet")
            if r < 0.1:
                a["add"]["stats"] = ["", "null", "{}"][k % 3]
            elif r < 0.15:
                a["add"]["stats"] = json.dumps({"numRecords": k, "minValues": {"i": "x"}})
            elif r < 0.2:
                a["add"]["stats"] = json.dumps({"numRecords": k, "minValues": {"d": "0000-01-01"}})
            elif r < 0.9:
                stats = {
                    "numRecords": k,
                    "minValues": {"i": k, "s": f"s{k}", "d": "2020-01-02"},
                    "maxValues": {"i": 2 * k, "s": f"t{k}é", "d": "2021-01-02"},
                    "nullCount": {"i": 0, "s": k % 3, "d": 1},
                }
                a["add"]["stats"] = json.dumps(stats)
            actions.append(a)
        if version > 1:
            actions.append(remove(f"v{version - 1}/f0.parquet"))
        b.commit(version, *actions)
    return b.uri


def test_the_file_index_is_the_same_for_every_grouping_of_stats_pieces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``_regrouped`` joins small parsed stats pieces: any grouping (none, every piece alone,
    runs of a few rows) and pieces of a few hundred bytes give the same index, fallbacks
    (unparsable stats) included."""
    uri = _mixed_stats_log(tmp_path / "t")
    expected = lakecore.open(uri).snapshot().files().sort_by("path")
    assert expected.num_rows > 500
    ran = 0
    for small, joined, piece in [(0, 1, 1 << 20), (1 << 30, 7, 300), (50, 100, 2_000), (1, 1, 64)]:
        monkeypatch.setattr(stats_text, "_SMALL_PIECE_ROWS", small)
        monkeypatch.setattr(stats_text, "_JOINED_ROWS", joined)
        monkeypatch.setattr(stats_text, "_PIECE_BYTES", piece)
        got = lakecore.open(uri).snapshot().files().sort_by("path")
        assert got.equals(expected), (small, joined, piece)
        ran += 1
    assert ran == 4


def test_deletion_column_chunk_by_chunk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """821ec6d: commits parsed one by one are chunks of their own; the chunks without any
    deletion vector take the all-null path, the one with a vector builds its descriptor."""
    monkeypatch.setattr(commits, "_OWN_PIECE", 0)
    b = DeltaTableBuilder(tmp_path / "t")
    b.init([field("i", "long")], [], {"delta.enableDeletionVectors": "true"}, proto=DV_PROTOCOL)
    dv = {
        "storageType": "u",
        "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^",
        "offset": 4,
        "sizeInBytes": 40,
        "cardinality": 6,
    }
    for version in range(1, 6):
        adds = [
            add(f"v{version}/f{k}.parquet", deletion_vector=dv if version == 3 and k == 1 else None)
            for k in range(3)
        ]
        b.commit(version, commit_info(), *adds)
    deletion = lakecore.open(b.uri).snapshot().files().sort_by("path").column("deletion")
    assert deletion.null_count == 14
    (value,) = [v for v in deletion.to_pylist() if v is not None]
    assert value == {"cardinality": 6, "descriptor": b"u|4|40|ab^-aqEH.-t@S}K{vb[*k^"}
