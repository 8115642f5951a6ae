"""The same predicate text gives the same rows in scan, delete, update, merge and constraints.

For Delta, Hudi copy-on-write and Hudi merge-on-read (with log files) tables built in
``tmp_path`` (several files, so pruning matters), each predicate of ``PREDICATES`` selects a
set of ids with ``scan(where=...)``; then, each on a fresh copy of the table:

- ``delete(where)`` removes exactly those ids;
- ``update(set={"tag": lit("hit")}, where)`` tags exactly those ids;
- a MERGE of every row with ``when_matched_update(..., condition=<predicate>)`` tags exactly
  those ids (the condition's bare names are the target's columns);
- ``add_constraint`` (Delta; Hudi has no CHECK constraints) refuses exactly when some row makes
  the predicate FALSE, naming as many rows as ``scan(where="NOT (...)")`` returns.

The default run takes every predicate with every verb on one format (the formats in turn, so
every format meets every verb); ``-m slow`` takes the other two formats of each predicate.
"""

from __future__ import annotations

import datetime as dt
import re
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lakecore
from lakecore.errors import ConstraintViolationError
from lakecore.expr.tree import lit

UTC = dt.timezone.utc
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("region", pa.string()),
        ("name", pa.string()),
        ("amount", pa.int32()),
        ("price", pa.decimal128(9, 2)),
        ("score", pa.float64()),
        ("flag", pa.bool_()),
        ("day", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("tag", pa.string()),
    ]
)
ROWS: list[dict[str, Any]] = [
    {"region": "eu", "name": "alice", "amount": 1, "price": "1.50", "score": 0.5, "flag": True},
    {"region": "us", "name": "bob", "amount": 2, "price": "2.00", "score": None, "flag": False},
    {"region": "eu", "name": "Bob", "amount": 3, "price": None, "score": float("nan")},
    {"region": None, "name": "it's", "amount": None, "price": "9.99", "score": 2.5, "flag": True},
    {"region": "apac", "name": "a\\b", "amount": 5, "price": "0.00", "score": -1.0},
    {"region": "eu", "name": "anna", "amount": 6, "price": "3.25", "score": 1.5, "flag": False},
    {"region": "us", "name": None, "amount": 7, "price": "4.00", "score": 0.0, "flag": None},
    {"region": "eu", "name": "zed", "amount": 4, "price": "2.50", "score": 3.0, "flag": True},
]
FILES = 3
PREDICATES = [
    'region = "eu"',
    "region = 'eu'",
    "ts >= TIMESTAMP '2024-01-02'",
    "day = DATE '2024-01-03'",
    "name LIKE 'a%'",
    "name NOT LIKE '%b%'",
    "name = 'it\\'s'",
    "name = 'a\\\\b'",
    "amount IN (1, 3, 5)",
    "amount NOT IN (1, 2)",
    "amount IN (7, NULL)",
    "amount BETWEEN 2 AND 4",
    "score IS NULL",
    "price IS NOT NULL AND price > 2",
    "amount * 2 + 1 > 6",
    "amount > 2.5",
    "price / 2 >= 1",
    "amount % 2 = 1",
    "CASE WHEN region = 'eu' THEN amount ELSE 0 END > 2",
    "upper(name) = 'BOB'",
    "coalesce(score, 0.0) < 1",
    "score < 1.0",
    "NOT (region = 'us') OR flag",
    "flag",
    "length(name) = 3 AND substring(name, 1, 1) = 'b'",
    "`region` = concat('e', 'u')",
]
VERBS = ("delete", "update", "merge", "constraint")
FORMATS = ("delta", "hudi-cow", "hudi-mor")
RAN: list[tuple[str, str, str, bool]] = []
"""(format, verb, predicate, slow) of every case that ran."""


def _cases() -> list[Any]:
    out = []
    for i, where in enumerate(PREDICATES):
        for verb in VERBS:
            for fmt in FORMATS:
                slow = fmt != FORMATS[i % len(FORMATS)]
                marks = [pytest.mark.slow] if slow else []
                out.append(
                    pytest.param(where, verb, fmt, slow, marks=marks, id=f"{where}-{verb}-{fmt}")
                )
    return out


CASES = _cases()


def rows() -> list[dict[str, Any]]:
    out = []
    for i, row in enumerate(ROWS):
        full = dict(row)
        full["id"] = i
        full["price"] = None if row.get("price") is None else Decimal(row["price"])
        full["day"] = dt.date(2024, 1, 1 + i % 4)
        full["ts"] = dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(hours=12 * i)
        full["tag"] = "-"
        out.append({f.name: full.get(f.name) for f in SCHEMA})
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One table per format, written in ``FILES`` appends; cases work on copies."""
    out = {}
    data = rows()
    for fmt in FORMATS:
        root = tmp_path_factory.mktemp(fmt) / "t"
        properties = {}
        if fmt.startswith("hudi"):
            kind = "MERGE_ON_READ" if fmt == "hudi-mor" else "COPY_ON_WRITE"
            properties = {"record_key": "id", "table_type": kind}
        table = lakecore.create(str(root), SCHEMA, fmt.split("-")[0], [], properties)
        size = -(-len(data) // FILES)
        for start in range(0, len(data), size):
            table.append(pa.Table.from_pylist(data[start : start + size], schema=SCHEMA))
        if fmt == "hudi-mor":  # log files in the slices: rows the DML must merge before it matches
            table.update({"tag": lit("-")}, where="id % 2 = 0")
        out[fmt] = root
    return out


def copy(built: dict[str, Path], fmt: str, tmp_path: Path) -> lakecore.Table:
    root = tmp_path / "copy"
    shutil.copytree(built[fmt], root)
    return lakecore.open(str(root))


def ids(table: lakecore.Table, where: str | None = None) -> set[int]:
    data = lakecore.open(table.uri).scan(where=where).to_arrow()
    return set(data.column("id").to_pylist())


def tagged(table: lakecore.Table) -> set[int]:
    data = lakecore.open(table.uri).to_arrow()
    return {r["id"] for r in data.to_pylist() if r["tag"] == "hit"}


@pytest.mark.parametrize(("where", "verb", "fmt", "slow"), CASES)
def test_same_rows(
    built: dict[str, Path], tmp_path: Path, where: str, verb: str, fmt: str, slow: bool
) -> None:
    table = copy(built, fmt, tmp_path)
    everything = ids(table)
    assert len(everything) == len(ROWS)
    selected = ids(table, where)
    if verb == "delete":
        table.delete(where)
        assert everything - ids(table) == selected
    elif verb == "update":
        table.update({"tag": lit("hit")}, where=where)
        assert tagged(table) == selected
    elif verb == "merge":
        source = lakecore.open(table.uri).to_arrow().select(["id", "tag"])
        (
            table.merge(source, on="id")
            .when_matched_update({"tag": "'hit'"}, condition=where)
            .execute()
        )
        assert tagged(table) == selected
    elif fmt == "delta":
        failing = len(ids(table, f"NOT ({where})"))
        if failing:
            with pytest.raises(ConstraintViolationError) as info:
                table.add_constraint("c", where)
            count = re.search(r"(\d+) existing row", str(info.value))
            assert count is not None and int(count.group(1)) == failing
        else:
            table.add_constraint("c", where)
            assert ids(table) == everything
    else:
        with pytest.raises(lakecore.UnsupportedFeatureError):
            table.add_constraint("c", where)
    RAN.append((fmt, verb, where, slow))


def test_every_default_case_ran() -> None:
    ran = [r[:3] for r in RAN if not r[3]]
    assert len(set(ran)) == len(ran) == len(PREDICATES) * len(VERBS) == 104
    assert {(fmt, verb) for fmt, verb, _ in ran} == {(f, v) for f in FORMATS for v in VERBS}
    assert {where for _, _, where in ran} == set(PREDICATES)


@pytest.mark.slow
def test_every_slow_case_ran() -> None:
    ran = [r[:3] for r in RAN if r[3]]
    assert len(set(ran)) == len(ran) == len(PREDICATES) * len(VERBS) * (len(FORMATS) - 1) == 208


def test_the_predicates_select_something_and_not_everything(built: dict[str, Path]) -> None:
    """Every predicate keeps some rows and drops others (else the suite proves little)."""
    table = lakecore.open(str(built["delta"]))
    sizes = {where: len(ids(table, where)) for where in PREDICATES}
    assert all(0 < n < len(ROWS) for n in sizes.values()), sizes
    assert sizes['region = "eu"'] == sizes["region = 'eu'"] == 4
    assert sizes["ts >= TIMESTAMP '2024-01-02'"] == len(ROWS) - 2


GENERATED = pa.schema(
    [
        ("id", pa.int64()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("name", pa.string()),
        pa.field("year", pa.int32(), metadata={"delta.generationExpression": "YEAR(ts)"}),
        pa.field(
            "label",
            pa.string(),
            metadata={"delta.generationExpression": 'concat(upper(name), "-", month(ts))'},
        ),
    ]
)


def test_generated_columns_and_constraints_use_the_one_front_end(tmp_path: Path) -> None:
    """Delta generated columns and CHECK constraints are Spark SQL: functions (YEAR, MONTH,
    CONCAT, UPPER), double-quoted strings, and the same rows as the scan."""
    table = lakecore.create(str(tmp_path / "t"), GENERATED, "delta")
    ts = pa.array([dt.datetime(2024, 3, 5, tzinfo=UTC), dt.datetime(2025, 11, 1, tzinfo=UTC)])
    table.append(pa.table({"id": [1, 2], "ts": ts, "name": ["ab", "cd"]}))
    data = sorted(lakecore.open(table.uri).to_arrow().to_pylist(), key=lambda r: r["id"])
    assert [(r["year"], r["label"]) for r in data] == [(2024, "AB-3"), (2025, "CD-11")]
    table.add_constraint("recent", 'year >= 2024 AND label LIKE "%-%"')
    old = pa.array([dt.datetime(2020, 1, 1, tzinfo=UTC)])
    with pytest.raises(ConstraintViolationError):
        table.append(pa.table({"id": [3], "ts": old, "name": ["ef"]}))
    scanned = lakecore.open(table.uri).scan(where='label = "CD-11"').to_arrow()
    assert scanned.column("id").to_pylist() == [2]
