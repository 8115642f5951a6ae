"""Stats pruning, operator by operator and type by type, over hand-made file indexes."""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pytest

from lakecore.model import files as fi
from lakecore.planning import ScanContext, StatsPrecision, bind, parse_predicate
from lakecore.planning.pruning import like_prefix, prefix_successor
from lakecore.planning.scan import prune

UTC = dt.timezone.utc
NAN = float("nan")


def file_index(
    schema: pa.Schema, partitions: Sequence[str], files: list[dict[str, Any]]
) -> pa.Table:
    """A file index of ``files`` (dicts with partition/min/max/null_count/record_count)."""
    data = [f for f in schema if f.name not in partitions]
    stat_type = pa.struct([pa.field(f.name, f.type) for f in data])
    count_type = pa.struct([pa.field(f.name, pa.int64()) for f in data])
    part_type = pa.struct([schema.field(p) for p in partitions])
    return pa.table(
        {
            fi.PATH: [f"f{i}.parquet" for i in range(len(files))],
            fi.SIZE: pa.array([100] * len(files), pa.int64()),
            fi.RECORD_COUNT: pa.array([f.get("record_count") for f in files], pa.int64()),
            fi.PARTITION: pa.array([f.get("partition", {}) for f in files], part_type),
            fi.MIN: pa.array([f.get("min", {}) for f in files], stat_type),
            fi.MAX: pa.array([f.get("max", {}) for f in files], stat_type),
            fi.NULL_COUNT: pa.array([f.get("null_count", {}) for f in files], count_type),
        }
    )


def kept(
    where: str,
    schema: pa.Schema,
    files: pa.Table,
    partitions: Sequence[str] = (),
    precision: StatsPrecision | None = None,
) -> list[bool]:
    context = ScanContext(
        "test", "/t", schema, tuple(partitions), stats_precision=precision or StatsPrecision()
    )
    result = prune(files, bind(parse_predicate(where), schema), context)
    names = set(result.files.column(fi.PATH).to_pylist())
    return [p in names for p in files.column(fi.PATH).to_pylist()]


def stats(
    lo: Any, hi: Any, nulls: int | None, rows: int | None, column: str = "x"
) -> dict[str, Any]:
    return {
        "min": {column: lo},
        "max": {column: hi},
        "null_count": {column: nulls},
        "record_count": rows,
    }


# ------------------------------------------------------------------------------ integers

INT_SCHEMA = pa.schema([("x", pa.int64())])
INT_FILES = file_index(
    INT_SCHEMA,
    (),
    [
        stats(1, 5, 0, 10),  # f0: 1..5, no nulls
        stats(6, 10, 2, 10),  # f1: 6..10 and nulls
        stats(None, None, 10, 10),  # f2: only nulls
        stats(None, None, None, None),  # f3: no stats at all
        stats(5, 5, 0, 3),  # f4: only 5
    ],
)
T, F = True, False


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("x = 5", [T, F, F, T, T]),
        ("x != 5", [T, T, F, T, F]),
        ("x < 5", [T, F, F, T, F]),
        ("x <= 5", [T, F, F, T, T]),
        ("x > 5", [F, T, F, T, F]),
        ("x >= 6", [F, T, F, T, F]),
        ("5 > x", [T, F, F, T, F]),
        ("x = 0", [F, F, F, T, F]),
        ("x IN (3, 11)", [T, F, F, T, F]),
        ("x IN (5, NULL)", [T, F, F, T, T]),
        ("x IN (NULL)", [F, F, F, F, F]),
        ("x NOT IN (5)", [T, T, F, T, F]),
        ("x NOT IN (5, NULL)", [F, F, F, F, F]),
        ("x IS NULL", [F, T, T, T, F]),
        ("x IS NOT NULL", [T, T, F, T, T]),
        ("x BETWEEN 6 AND 7", [F, T, F, T, F]),
        ("x NOT BETWEEN 1 AND 5", [F, T, F, T, F]),
        ("NOT (x < 6)", [F, T, F, T, F]),
        ("NOT (x >= 6)", [T, F, F, T, T]),
        ("NOT (x != 5)", [T, F, F, T, T]),
        ("NOT NOT (x = 5)", [T, F, F, T, T]),
        ("x = NULL", [F, F, F, F, F]),
        ("NOT (x = NULL)", [F, F, F, F, F]),
        ("x < 2 OR x > 9", [T, T, F, T, F]),
        ("x > 3 AND x < 6", [T, F, F, T, T]),
        ("NOT (x > 3 AND x < 6)", [T, T, F, T, F]),
        ("NOT (x < 2 OR x IS NULL)", [T, T, F, T, T]),
        ("x IS NULL AND x > 7", [F, T, F, T, F]),
    ],
)
def test_integer_operators(where: str, expected: list[bool]) -> None:
    assert kept(where, INT_SCHEMA, INT_FILES) == expected


def test_long_in_lists_use_the_envelope() -> None:
    values = ", ".join(str(v) for v in [*range(100, 140), 3])
    # [3, 139] overlaps f1's [6, 10]: the envelope cannot tell that no value falls inside.
    assert kept(f"x IN ({values})", INT_SCHEMA, INT_FILES) == [T, T, F, T, F]
    far = ", ".join(str(v) for v in range(100, 140))
    assert kept(f"x IN ({far})", INT_SCHEMA, INT_FILES) == [F, F, F, T, F]
    assert kept(f"x NOT IN ({values}, 5)", INT_SCHEMA, INT_FILES) == [T, T, F, T, F]


def test_empty_files_are_pruned() -> None:
    files = file_index(INT_SCHEMA, (), [stats(None, None, 0, 0)])
    assert kept("x IS NULL OR x IS NOT NULL", INT_SCHEMA, files) == [F]


# ------------------------------------------------------------------------------ floats and NaN

FLOAT_SCHEMA = pa.schema([("f", pa.float64()), ("pf", pa.float64())])
FLOAT_FILES = file_index(
    FLOAT_SCHEMA,
    ("pf",),
    [
        {**stats(1.0, 2.0, 0, 5, "f"), "partition": {"pf": 1.0}},
        {**stats(NAN, NAN, 0, 5, "f"), "partition": {"pf": NAN}},
        {**stats(None, None, 0, 5, "f"), "partition": {"pf": None}},
    ],
)


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("f > 5", [F, T, T]),
        # NaN rows (which writers leave out of min/max) make NOT (f > 5) true.
        ("NOT (f > 5)", [T, T, T]),
        ("f != 1.5", [T, T, T]),
        ("f = 1.5", [T, T, T]),
        ("f = 3", [F, T, T]),
        ("f = CAST('NaN' AS DOUBLE)", [F, F, F]),
        ("f != CAST('NaN' AS DOUBLE)", [T, T, T]),
        ("f IN (3, CAST('NaN' AS DOUBLE))", [F, T, T]),
        ("pf = 1", [T, F, F]),
        ("pf != 1", [F, T, F]),
        ("NOT (pf = 1)", [F, T, F]),
        ("NOT (pf < 5)", [F, T, F]),
        ("pf IS NULL", [F, F, T]),
        ("pf IS NOT NULL", [T, T, F]),
        ("pf > 0", [T, F, F]),
    ],
)
def test_float_operators_and_nan(where: str, expected: list[bool]) -> None:
    assert kept(where, FLOAT_SCHEMA, FLOAT_FILES, ("pf",)) == expected


# ------------------------------------------------------------------------------ timestamps

TS_SCHEMA = pa.schema([("ts", pa.timestamp("us", tz="UTC")), ("ntz", pa.timestamp("us"))])
MS_FLOOR = dt.datetime(2024, 1, 1, 12, 0, 0, 123000, tzinfo=UTC)
TS_FILES = file_index(
    TS_SCHEMA,
    (),
    [
        {
            "min": {"ts": MS_FLOOR, "ntz": MS_FLOOR.replace(tzinfo=None)},
            "max": {"ts": MS_FLOOR, "ntz": MS_FLOOR.replace(tzinfo=None)},
            "null_count": {"ts": 0, "ntz": 0},
            "record_count": 1,
        }
    ],
)
DELTA_PRECISION = StatsPrecision(timestamp_truncation=dt.timedelta(milliseconds=1))


@pytest.mark.parametrize(
    ("where", "exact", "truncated"),
    [
        # The file's one value may be 12:00:00.123456: its stats say .123 (floored to ms).
        ("ts = TIMESTAMP '2024-01-01 12:00:00.123456+00:00'", F, T),
        ("ts > TIMESTAMP '2024-01-01 12:00:00.1235+00:00'", F, T),
        ("ts > TIMESTAMP '2024-01-01 12:00:00.124+00:00'", F, F),
        ("ts < TIMESTAMP '2024-01-01 12:00:00.123+00:00'", F, F),
        ("ts != TIMESTAMP '2024-01-01 12:00:00.123+00:00'", F, T),
        ("ts = '2024-01-01T14:00:00.123+02:00'", T, T),
        ("ntz = TIMESTAMP '2024-01-01 12:00:00.123999'", F, T),
        ("ntz >= TIMESTAMP '2024-01-01 12:00:00.124'", F, T),
    ],
)
def test_timestamp_stats_truncated_to_milliseconds(
    where: str, exact: bool, truncated: bool
) -> None:
    assert kept(where, TS_SCHEMA, TS_FILES) == [exact]
    assert kept(where, TS_SCHEMA, TS_FILES, precision=DELTA_PRECISION) == [truncated]


# ------------------------------------------------------------------------------ strings

STR_SCHEMA = pa.schema([("s", pa.string())])
SHORT = StatsPrecision(string_prefix_length=4)
STR_FILES = file_index(
    STR_SCHEMA,
    (),
    [
        stats("aa", "abcd", 0, 9, "s"),  # f0: max is 4 characters long: maybe a cut prefix
        stats("aa", "abc", 0, 9, "s"),  # f1: max is exact
        stats("abx", "aby", 0, 9, "s"),  # f2: all start with "ab"
        stats("abx", "abyy", 0, 9, "s"),  # f3: max maybe cut
    ],
)


@pytest.mark.parametrize(
    ("where", "exact", "truncated"),
    [
        ("s = 'abcdz'", [F, F, F, F], [T, F, F, F]),
        ("s > 'abce'", [F, F, T, T], [F, F, T, T]),
        ("s >= 'abcd'", [T, F, T, T], [T, F, T, T]),
        ("s > 'abcd'", [F, F, T, T], [T, F, T, T]),
        ("s = 'abd'", [F, F, F, F], [F, F, F, F]),
        ("s = 'abyyz'", [F, F, F, F], [F, F, F, T]),
        ("s LIKE 'abcdef%'", [F, F, F, F], [T, F, F, F]),
        ("s LIKE 'b%'", [F, F, F, F], [F, F, F, F]),
        ("s LIKE 'ab%'", [T, T, T, T], [T, T, T, T]),
        ("s LIKE '%x'", [T, T, T, T], [T, T, T, T]),
        ("s LIKE 'a_c%'", [T, T, T, T], [T, T, T, T]),
        ("s NOT LIKE 'ab%'", [T, T, F, F], [T, T, F, T]),
        ("s NOT LIKE 'ab'", [T, T, T, T], [T, T, T, T]),
        ("s IN ('zz', 'abcdq')", [F, F, F, F], [T, F, F, F]),
        ("s != 'abx'", [T, T, T, T], [T, T, T, T]),
    ],
)
def test_string_operators_and_truncated_max(
    where: str, exact: list[bool], truncated: list[bool]
) -> None:
    assert kept(where, STR_SCHEMA, STR_FILES) == exact
    assert kept(where, STR_SCHEMA, STR_FILES, precision=SHORT) == truncated


def test_like_prefix_and_successor() -> None:
    assert like_prefix("ab%") == ("ab", True)
    assert like_prefix("ab%c") == ("ab", False)
    assert like_prefix("a_b%") == ("a", False)
    assert like_prefix("a\\%b%") == ("a%b", True)
    assert like_prefix("abc") == ("abc", False)
    assert prefix_successor("ab") == "ac"
    assert prefix_successor("a\U0010ffff") == "b"
    assert prefix_successor("\U0010ffff") is None
    assert prefix_successor("a\ud7ff") == "a\ue000"


def test_like_prefix_of_the_largest_character() -> None:
    files = file_index(STR_SCHEMA, (), [stats("\U0010ffffa", "\U0010ffffz", 0, 1, "s")])
    assert kept("s LIKE '\U0010ffff%'", STR_SCHEMA, files) == [T]
    assert kept("s LIKE 'a%'", STR_SCHEMA, files) == [F]


# ------------------------------------------------------------------------------ other types

OTHER_SCHEMA = pa.schema(
    [("d", pa.decimal128(10, 2)), ("day", pa.date32()), ("flag", pa.bool_()), ("p", pa.string())]
)
OTHER_FILES = file_index(
    OTHER_SCHEMA,
    ("p",),
    [
        {
            "min": {"d": decimal.Decimal("1.00"), "day": dt.date(2024, 1, 1)},
            "max": {"d": decimal.Decimal("2.50"), "day": dt.date(2024, 1, 31)},
            "null_count": {"d": 0, "day": 0, "flag": 0},
            "record_count": 4,
            "partition": {"p": "eu"},
        },
        {
            "min": {"d": decimal.Decimal("3.00"), "day": dt.date(2024, 2, 1)},
            "max": {"d": decimal.Decimal("4.00"), "day": dt.date(2024, 2, 29)},
            "null_count": {"d": 1, "day": 0, "flag": 4},
            "record_count": 4,
            "partition": {"p": None},
        },
    ],
)


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("d > 2.5", [F, T]),
        ("d >= 2.5", [T, T]),
        ("d BETWEEN 2.6 AND 2.9", [F, F]),
        ("d = 3", [F, T]),
        ("day >= '2024-02-01'", [F, T]),
        ("day = DATE '2024-01-15'", [T, F]),
        ("day < TIMESTAMP '2024-01-01 00:00:00'", [F, F]),
        ("flag", [T, F]),  # booleans have no min/max: only all-null files are pruned
        ("NOT flag", [T, F]),
        ("p = 'eu'", [T, F]),
        ("p != 'eu'", [F, F]),  # NULL != 'eu' is NULL
        ("p IS NULL", [F, T]),
        ("p IS NULL OR d < 2", [T, T]),
        ("p LIKE 'e%'", [T, F]),
        ("p IN ('us', 'eu')", [T, F]),
        ("NOT (p IN ('us', 'eu'))", [F, F]),
    ],
)
def test_decimal_date_boolean_and_partition_operators(where: str, expected: list[bool]) -> None:
    assert kept(where, OTHER_SCHEMA, OTHER_FILES, ("p",)) == expected


def test_partition_stage_comes_first() -> None:
    context = ScanContext("test", "/t", OTHER_SCHEMA, ("p",))
    pred = bind(parse_predicate("p = 'eu' AND d > 3"), OTHER_SCHEMA)
    result = prune(OTHER_FILES, pred, context)
    assert (result.files_total, result.after_partitions, result.files.num_rows) == (2, 1, 0)


def test_index_without_stats_columns_keeps_everything() -> None:
    files = pa.table({fi.PATH: ["a", "b"], fi.SIZE: [1, 2], fi.RECORD_COUNT: [1, 1]})
    context = ScanContext("test", "/t", INT_SCHEMA)
    result = prune(files, bind(parse_predicate("x = 1"), INT_SCHEMA), context)
    assert result.files.num_rows == 2
