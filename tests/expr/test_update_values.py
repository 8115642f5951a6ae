"""``update(set=...)`` and ``when_matched_update`` take Python values, not only SQL text.

A ``str`` is SQL (also for a string column); ``lit(...)`` or any tree is used as is; any other
Python value is a literal that must convert to the column's type without changing
(``InvalidArgumentError`` otherwise, before anything is written).
"""

from __future__ import annotations

import datetime as dt
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lakecore
from lakecore.errors import InvalidArgumentError, PredicateError, SchemaError
from lakecore.expr.tree import col, lit

UTC = dt.timezone.utc
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("amount", pa.int32()),
        ("big", pa.int64()),
        ("x", pa.float64()),
        ("f", pa.float32()),
        ("price", pa.decimal128(9, 2)),
        ("name", pa.string()),
        ("other", pa.string()),
        ("flag", pa.bool_()),
        ("day", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("raw", pa.binary()),
    ]
)
FORMATS = ("delta", "hudi")


def make(root: Path, fmt: str) -> lakecore.Table:
    properties = {"record_key": "id", "table_type": "COPY_ON_WRITE"} if fmt == "hudi" else {}
    table = lakecore.create(str(root), SCHEMA, fmt, [], properties)
    table.append(
        pa.Table.from_pylist(
            [
                {"id": 1, "amount": 10, "name": "a", "other": "o1"},
                {"id": 2, "amount": 20, "name": "b", "other": "o2"},
            ],
            schema=SCHEMA,
        )
    )
    return table


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One ``make`` table per format, built once; cases work on copies."""
    out = {}
    for fmt in FORMATS:
        out[fmt] = tmp_path_factory.mktemp(fmt) / "t"
        make(out[fmt], fmt)
    return out


def fresh(made: dict[str, Path], fmt: str, tmp_path: Path) -> lakecore.Table:
    """A copy of the format's ``make`` table in ``tmp_path``."""
    shutil.copytree(made[fmt], tmp_path / "t")
    return lakecore.open(str(tmp_path / "t"))


def row(table: lakecore.Table, id_: int) -> dict[str, Any]:
    data = lakecore.open(table.uri).to_arrow().to_pylist()
    return next(r for r in data if r["id"] == id_)


GOOD: list[tuple[str, Any, Any]] = [
    ("amount", 5, 5),
    ("amount", None, None),
    ("amount", 7.0, 7),
    ("amount", Decimal("8.00"), 8),
    ("big", 2**40, 2**40),
    ("x", 2.5, 2.5),
    ("x", 3, 3.0),
    ("f", 0.5, 0.5),
    ("price", Decimal("1.5"), Decimal("1.50")),
    ("price", 12, Decimal("12.00")),
    ("price", 0.25, Decimal("0.25")),
    ("name", lit("eu"), "eu"),
    ("name", "'eu'", "eu"),
    ("name", '"eu"', "eu"),  # Spark SQL: double quotes are text
    ("name", "other", "o1"),  # a str is SQL: the column other
    ("name", col("other"), "o1"),
    ("name", "upper(name) || '!'", "A!"),
    ("flag", True, True),
    ("day", dt.date(2024, 2, 29), dt.date(2024, 2, 29)),
    ("ts", dt.datetime(2024, 1, 1, 12, tzinfo=UTC), dt.datetime(2024, 1, 1, 12, tzinfo=UTC)),
    ("ts", dt.datetime(2024, 1, 1, 12), dt.datetime(2024, 1, 1, 12, tzinfo=UTC)),
    ("ts", dt.date(2024, 1, 1), dt.datetime(2024, 1, 1, tzinfo=UTC)),
    ("raw", b"\x00\xff", b"\x00\xff"),
]
BAD: list[tuple[str, Any, type[Exception]]] = [
    ("amount", 2.5, InvalidArgumentError),
    ("amount", 2**31, InvalidArgumentError),
    ("amount", True, InvalidArgumentError),
    ("amount", lit("5"), InvalidArgumentError),
    ("f", 0.1, InvalidArgumentError),  # float32(0.1) != 0.1
    ("x", 2**53 + 1, InvalidArgumentError),
    ("price", Decimal("1.234"), InvalidArgumentError),
    ("price", 10**8, InvalidArgumentError),
    ("flag", 1, InvalidArgumentError),
    ("day", dt.datetime(2024, 1, 1, 12), InvalidArgumentError),
    ("name", 5, InvalidArgumentError),
    ("name", [1, 2], InvalidArgumentError),
    ("name", {"a": 1}, InvalidArgumentError),
    ("name", "nope", SchemaError),  # a str is SQL: an unknown column
    ("amount", "amount +", PredicateError),
    ("nope", 1, SchemaError),
]
RAN: list[str] = []


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("column", "value", "stored"), GOOD, ids=[repr(g[:2]) for g in GOOD])
def test_update_takes_python_values(
    made: dict[str, Path], tmp_path: Path, fmt: str, column: str, value: Any, stored: Any
) -> None:
    table = fresh(made, fmt, tmp_path)
    table.update({column: value}, where="id = 1")
    got = row(table, 1)[column]
    assert got == stored and type(got) is type(stored)
    assert row(table, 2)[column] == {"amount": 20, "name": "b"}.get(column)
    RAN.append("good")


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("column", "value", "error"), BAD, ids=[repr(b[:2]) for b in BAD])
def test_update_refuses_values_that_would_change(
    made: dict[str, Path], tmp_path: Path, fmt: str, column: str, value: Any, error: type[Exception]
) -> None:
    table = fresh(made, fmt, tmp_path)
    before = lakecore.open(table.uri).to_arrow()
    version = lakecore.open(table.uri).snapshot().version
    with pytest.raises(error):
        table.update({column: value}, where="id = 1")
    assert lakecore.open(table.uri).snapshot().version == version
    assert lakecore.open(table.uri).to_arrow().equals(before)
    RAN.append("bad")


@pytest.mark.parametrize("fmt", FORMATS)
def test_transaction_and_merge_take_python_values(tmp_path: Path, fmt: str) -> None:
    table = make(tmp_path / "t", fmt)
    with table.transaction() as tx:
        tx.update({"price": Decimal("2.50"), "day": dt.date(2024, 3, 1)}, where="id = 2")
    assert row(table, 2)["price"] == Decimal("2.50")
    assert row(table, 2)["day"] == dt.date(2024, 3, 1)
    source = pa.table({"id": pa.array([1], pa.int64()), "amount": pa.array([99], pa.int32())})
    (
        table.merge(source, on="id")
        .when_matched_update({"amount": 7, "name": lit("merged"), "big": "s.amount * 2"})
        .execute()
    )
    assert {k: row(table, 1)[k] for k in ("amount", "name", "big")} == {
        "amount": 7,
        "name": "merged",
        "big": 198,
    }
    with pytest.raises(InvalidArgumentError):
        table.merge(source, on="id").when_matched_update({"amount": 1.5}).execute()
    assert row(table, 1)["amount"] == 7
    RAN.append("tx+merge")


def test_every_case_ran() -> None:
    assert RAN.count("good") == len(GOOD) * len(FORMATS) == 46
    assert RAN.count("bad") == len(BAD) * len(FORMATS) == 32
    assert RAN.count("tx+merge") == 2
