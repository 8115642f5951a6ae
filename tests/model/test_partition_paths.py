"""Hive partition paths: typed values to ``col=value`` directories and back (one module).

``hive_texts`` is lakecore's one renderer of partition value texts (Delta's log and
directories use it); it is checked here against the expected texts of every type, the
four-digit year bounds, and the per-value Python reference rendering
(``tests/model/partition_text_reference.py``).
"""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakecore.errors import InvalidArgumentError, SchemaError, UnsupportedFeatureError
from lakecore.model.civil_days import DAY_US, YEAR_0_DAY, YEAR_10000_DAY
from lakecore.model.partition_paths import (
    HIVE_NULL,
    escape_path_name,
    hive_texts,
    parse_partition_path,
    parse_value,
    partition_segment,
    split_segment,
    unescape_path_name,
)
from tests.model.partition_text_reference import partition_text

UTC = dt.timezone.utc


def _texts(values: list[object], t: pa.DataType) -> list[str | None]:
    texts: list[str | None] = hive_texts(pa.array(values, t), "c").to_pylist()
    return texts


TYPED = [
    ("eu", pa.string(), "eu"),
    (HIVE_NULL, pa.string(), None),
    (HIVE_NULL, pa.int32(), None),
    ("-12", pa.int64(), -12),
    ("true", pa.bool_(), True),
    ("1.0E-5", pa.float64(), 1e-5),
    ("-0.0", pa.float64(), -0.0),
    ("Infinity", pa.float32(), float("inf")),
    ("123.450", pa.decimal128(10, 3), Decimal("123.450")),
    ("0001-01-01", pa.date32(), dt.date(1, 1, 1)),
    ("2024-01-02 03:04:05", pa.timestamp("us"), dt.datetime(2024, 1, 2, 3, 4, 5)),
    ("2024-01-02 03:04:05.5", pa.timestamp("us"), dt.datetime(2024, 1, 2, 3, 4, 5, 500000)),
    (
        "2024-01-02 03:04:05.000001",
        pa.timestamp("us", "UTC"),
        dt.datetime(2024, 1, 2, 3, 4, 5, 1, tzinfo=UTC),
    ),
]


def test_typed_case_count() -> None:
    assert len(TYPED) == 13


@pytest.mark.parametrize(("text", "t", "value"), TYPED)
def test_values_parse_typed(text: str, t: pa.DataType, value: object) -> None:
    got = parse_value(text, t)
    assert got == value and type(got) is type(value)


ROUND_TRIPS = [
    ("a/b=c%d", pa.string()),
    ("x y #?é\x01{[]^*'\"\\:", pa.string()),
    (None, pa.string()),
    (True, pa.bool_()),
    (-7, pa.int16()),
    (2.5, pa.float64()),
    (Decimal("-0.010"), pa.decimal128(5, 3)),
    (dt.date(1582, 10, 4), pa.date32()),
    (dt.datetime(2024, 7, 1, 12, 34, 56, 123456), pa.timestamp("us")),
    (dt.datetime(1900, 1, 1, tzinfo=UTC), pa.timestamp("us", "UTC")),
]


@pytest.mark.parametrize(("value", "t"), ROUND_TRIPS)
def test_render_then_parse_is_the_value(value: object, t: pa.DataType) -> None:
    field = pa.field("col=x/y", t)
    (text,) = hive_texts(pa.array([value], t), field.name).to_pylist()
    path = partition_segment(field.name, text)
    assert "/" not in path  # one directory level, whatever the value
    assert parse_partition_path(path, [field]) == {field.name: value}


def test_round_trip_count() -> None:
    assert len(ROUND_TRIPS) == 10


def test_hive_rendering() -> None:
    paris = dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=ZoneInfo("Europe/Paris"))
    assert _texts([paris], pa.timestamp("us", "Europe/Paris")) == ["2024-01-02 02:04:05.000000"]
    assert _texts([Decimal("1E+2")], pa.decimal128(5, 0)) == ["100"]
    assert _texts([False], pa.bool_()) == ["false"]
    assert partition_segment("a", "") == f"a={HIVE_NULL}"  # Spark writes "" as null
    assert partition_segment("a", "x/y", escape=False) == "a=x/y"  # Hudi, no URL encoding
    assert escape_path_name("a/b=c%d") == "a%2Fb%3Dc%25d"
    assert unescape_path_name("a%2Fb%3Dc%25d") == "a/b=c%d"
    assert split_segment(f"day={HIVE_NULL}") == ("day", None)
    with pytest.raises(ValueError):
        split_segment("no-equals-sign")


def test_timestamps_are_read_in_the_given_time_zone() -> None:
    ny = ZoneInfo("America/New_York")
    t = pa.timestamp("us", "UTC")
    assert parse_value("2024-07-01 08:00:00", t, ny) == dt.datetime(2024, 7, 1, 12, tzinfo=UTC)
    with pytest.raises(UnsupportedFeatureError, match="two instants"):
        parse_value("2024-11-03 01:30:00", t, ny)  # shown twice at the DST fall-back
    # Without a time zone the value is the wall clock, whatever the zone.
    assert parse_value("2024-11-03 01:30:00", pa.timestamp("us"), ny) == dt.datetime(
        2024, 11, 3, 1, 30
    )


def test_bad_values_and_paths_raise() -> None:
    with pytest.raises(ValueError):
        parse_value("yes", pa.bool_())
    with pytest.raises(ValueError):
        parse_value("2024-01-01T00:00:00", pa.timestamp("us"))
    with pytest.raises(ValueError, match="finer"):
        parse_value("2024-01-01 00:00:00.0000001", pa.timestamp("us"))
    with pytest.raises(SchemaError):
        parse_value("00", pa.binary())
    fields = [pa.field("region", pa.string()), pa.field("day", pa.date32())]
    assert parse_partition_path(f"day={HIVE_NULL}/region=x", fields) == {
        "region": "x",
        "day": None,
    }
    for bad in ("region=x", "region=x/day=2024-01-01/extra=1", "region=x/region=y", "x/y"):
        with pytest.raises(ValueError):
            parse_partition_path(bad, fields)


# ----------------------------------------------------------------------------- hive_texts


def _days(*days: int | None) -> pa.Array:
    return pa.array(days, pa.int32()).cast(pa.date32())


def _micros(t: pa.DataType, *micros: int | None) -> pa.Array:
    return pa.array(micros, pa.int64()).cast(t)


FIRST_US, END_US = YEAR_0_DAY * DAY_US, YEAR_10000_DAY * DAY_US
NAN, INF = float("nan"), float("inf")

HIVE_TEXTS: list[tuple[str, pa.Array | pa.ChunkedArray, list[str | None]]] = [
    ("bool", pa.array([True, False, None]), ["true", "false", None]),
    ("int8", pa.array([-128, 0, 127, None], pa.int8()), ["-128", "0", "127", None]),
    ("int64", pa.array([-(2**63), 2**63 - 1]), [str(-(2**63)), str(2**63 - 1)]),
    ("uint64", pa.array([2**64 - 1], pa.uint64()), [str(2**64 - 1)]),
    (
        "float64",  # Python's repr, not Arrow's cast ("1", "-0", "1e+20")
        pa.array([1.0, 100.0, 1e16, 1e20, 1e-5, 1e-7, -0.0, 0.1, NAN, INF, -INF, None]),
        [
            *("1.0", "100.0", "1e+16", "1e+20", "1e-05", "1e-07"),
            *("-0.0", "0.1", "nan", "inf", "-inf", None),
        ],
    ),
    ("float32", pa.array([1.5, 0.1], pa.float32()), ["1.5", "0.10000000149011612"]),
    (
        "decimal",
        pa.array([Decimal("1.50"), Decimal("-999.99"), Decimal("0.00"), None], pa.decimal128(5, 2)),
        ["1.50", "-999.99", "0.00", None],
    ),
    ("decimal38", pa.array([Decimal(10**38 - 1)], pa.decimal128(38, 0)), ["9" * 38]),
    ("decimal256", pa.array([Decimal("-1.00001")], pa.decimal256(40, 5)), ["-1.00001"]),
    ("string", pa.array(["a b", "", "x=y/z", "é", None]), ["a b", "", "x=y/z", "é", None]),
    ("large_string", pa.array(["big", ""], pa.large_string()), ["big", ""]),
    ("string_view", pa.array(["view"], pa.string_view()), ["view"]),
    ("binary", pa.array([b"\x01\x02", b"ab", b"", None]), ["\x01\x02", "ab", "", None]),
    ("large_binary", pa.array([b"\xc3\xa9"], pa.large_binary()), ["é"]),
    ("binary_view", pa.array([b"xy"], pa.binary_view()), ["xy"]),
    ("fixed_binary", pa.array([b"ab"], pa.binary(2)), ["ab"]),
    (
        "date32",
        _days(YEAR_0_DAY, -1, 0, YEAR_10000_DAY - 1, None),
        ["0000-01-01", "1969-12-31", "1970-01-01", "9999-12-31", None],
    ),
    ("date64", pa.array([dt.date(2024, 2, 29)], pa.date64()), ["2024-02-29"]),
    (
        "ts_s",
        pa.array([dt.datetime(2024, 1, 2, 3, 4, 5)], pa.timestamp("s")),
        ["2024-01-02 03:04:05.000000"],
    ),
    (
        "ts_ms_utc",
        pa.array([dt.datetime(2024, 1, 2, 3, 4, 5, 123000, tzinfo=UTC)], pa.timestamp("ms", "UTC")),
        ["2024-01-02 03:04:05.123000"],
    ),
    (
        "ts_ntz_bounds",
        _micros(pa.timestamp("us"), FIRST_US, FIRST_US + 1, -1, END_US - 1, None),
        [
            "0000-01-01 00:00:00.000000",
            "0000-01-01 00:00:00.000001",
            "1969-12-31 23:59:59.999999",
            "9999-12-31 23:59:59.999999",
            None,
        ],
    ),
    ("ts_ns_utc", _micros(pa.timestamp("ns", "UTC"), 1_000), ["1970-01-01 00:00:00.000001"]),
    (
        "ts_paris",  # instants in UTC, whatever the zone
        pa.array([dt.datetime(2024, 7, 1, 12, tzinfo=UTC)], pa.timestamp("us", "Europe/Paris")),
        ["2024-07-01 12:00:00.000000"],
    ),
    (
        "ts_offset",
        pa.array([dt.datetime(2024, 7, 1, 12, tzinfo=UTC)], pa.timestamp("us", "+05:30")),
        ["2024-07-01 12:00:00.000000"],
    ),
    (
        "dictionary_string",
        pa.array(["x", "y", "x", None]).dictionary_encode(),
        ["x", "y", "x", None],
    ),
    ("dictionary_date", _days(YEAR_0_DAY, YEAR_0_DAY).dictionary_encode(), ["0000-01-01"] * 2),
    ("chunked", pa.chunked_array([[1], [None, 2]], pa.int32()), ["1", None, "2"]),
    ("no_chunks", pa.chunked_array([], pa.date32()), []),
]


def test_hive_texts_of_every_type() -> None:
    ran = 0
    for case, values, expected in HIVE_TEXTS:
        got = hive_texts(values, "c")
        assert got.type == pa.string(), case
        assert got.to_pylist() == expected, case
        ran += 1
    assert ran == len(HIVE_TEXTS) == 28


REFERENCE_TYPES = [
    pa.bool_(),
    pa.int16(),
    pa.int64(),
    pa.float64(),
    pa.float32(),
    pa.decimal128(12, 4),
    pa.string(),
    pa.binary(),
    pa.date32(),
    pa.timestamp("us"),
    pa.timestamp("us", "UTC"),
    pa.timestamp("ms", "America/New_York"),
]


def _random_values(t: pa.DataType, rng: random.Random, n: int) -> pa.Array:
    """``n`` random values of type ``t`` that Python holds (years 1..9999), a tenth null."""
    first, end = dt.date(1, 1, 1).toordinal(), dt.date(9999, 12, 31).toordinal() + 1
    epoch = dt.date(1970, 1, 1).toordinal()
    if pa.types.is_boolean(t):
        raw: pa.Array = pa.array([rng.random() < 0.5 for _ in range(n)])
    elif pa.types.is_integer(t):
        bits = t.bit_width - 1
        raw = pa.array([rng.randrange(-(2**bits), 2**bits) for _ in range(n)], t)
    elif pa.types.is_floating(t):  # any bit pattern: subnormals, NaN, infinities
        raw = pa.array([rng.getrandbits(64) for _ in range(n)], pa.uint64())
        raw = raw.view(pa.float64()).cast(t, safe=False)
    elif pa.types.is_decimal(t):
        raw = pa.array([Decimal(rng.randrange(-(10**12), 10**12)).scaleb(-4) for _ in range(n)], t)
    elif pa.types.is_string(t) or pa.types.is_binary(t):
        texts = [
            "".join(rng.choice("aé=/%x€ \x00") for _ in range(rng.randrange(5))) for _ in range(n)
        ]
        raw = pa.array([s.encode() for s in texts] if pa.types.is_binary(t) else texts, t)
    else:
        days = [rng.randrange(first, end) - epoch for _ in range(n)]
        raw = pa.array(days, pa.int32()).cast(pa.date32())
        if pa.types.is_timestamp(t):
            step = 1_000 if t.unit == "ms" else 1
            micros = [d * DAY_US + rng.randrange(0, DAY_US, step) for d in days]
            raw = pa.array(micros, pa.int64()).cast(pa.timestamp("us", t.tz)).cast(t)
    nulls = pa.array([rng.random() < 0.1 for _ in range(n)])
    return pc.if_else(nulls, pa.scalar(None, t), raw)


def test_hive_texts_agree_with_the_python_reference() -> None:
    """On random values of every type Python holds, the column renderer gives the text the
    per-value reference rendering gives (floats of any bit pattern, dates of any day)."""
    rng = random.Random(11)
    ran = 0
    for t in REFERENCE_TYPES:
        values = _random_values(t, rng, 1_000)
        expected = [partition_text(v) for v in values.to_pylist()]
        assert hive_texts(values, "c").to_pylist() == expected, t
        ran += len(values)
    assert ran == 1_000 * len(REFERENCE_TYPES) == 12_000


OUTSIDE_YEARS = [
    ("date_year_-1", _days(YEAR_0_DAY - 1)),
    ("date_year_10000", _days(0, None, YEAR_10000_DAY)),
    ("date_min", _days(-(2**31))),
    ("ntz_year_-1", _micros(pa.timestamp("us"), FIRST_US - 1)),
    ("utc_year_10000", _micros(pa.timestamp("us", "UTC"), END_US)),
    ("paris_year_10000", _micros(pa.timestamp("us", "Europe/Paris"), END_US)),
    ("seconds_year_-1", pa.array([FIRST_US // 1_000_000 - 1], pa.int64()).cast(pa.timestamp("s"))),
    ("seconds_far", pa.array([10**17], pa.int64()).cast(pa.timestamp("s", "UTC"))),
    ("dictionary_date", _days(YEAR_10000_DAY).dictionary_encode()),
]


@pytest.mark.parametrize(("case", "values"), OUTSIDE_YEARS, ids=[c for c, _ in OUTSIDE_YEARS])
def test_dates_and_timestamps_outside_four_digit_years_are_refused(
    case: str, values: pa.Array
) -> None:
    with pytest.raises(InvalidArgumentError, match=r"partition column 'c'.*outside years 0000"):
        hive_texts(values, "c")


def test_outside_years_case_count() -> None:
    assert len(OUTSIDE_YEARS) == 9


def test_a_timestamp_finer_than_microseconds_is_refused() -> None:
    with pytest.raises(InvalidArgumentError, match=r"'c'.*finer than microseconds"):
        hive_texts(_micros(pa.timestamp("ns"), 1_000, 1_001), "c")


NOT_UTF8 = [b"\xff\xfe", b"ok\x80", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"]
"""A stray byte, a lone continuation, an overlong '/', a surrogate, a code point > U+10FFFF."""


@pytest.mark.parametrize("t", [pa.binary(), pa.large_binary()], ids=str)
def test_binary_that_is_not_utf8_is_refused_naming_the_column(t: pa.DataType) -> None:
    ran = 0
    for raw in NOT_UTF8:
        with pytest.raises(InvalidArgumentError, match=r"partition column 'p': binary value"):
            hive_texts(pa.array([b"fine", raw], t), "p")
        ran += 1
    assert ran == len(NOT_UTF8) == 5


@pytest.mark.parametrize(
    "t",
    [
        pa.time64("us"),
        pa.duration("us"),
        pa.null(),
        pa.struct([("a", pa.int32())]),
        pa.list_(pa.int32()),
    ],
    ids=str,
)
def test_a_type_without_partition_text_is_a_schema_error(t: pa.DataType) -> None:
    with pytest.raises(SchemaError, match="partition column 'c'"):
        hive_texts(pa.nulls(1, t), "c")


def test_null_and_empty_values_keep_their_texts_and_share_the_default_directory() -> None:
    """The renderer keeps "" and null apart (a format decides what an empty value means);
    as directory names both are ``__HIVE_DEFAULT_PARTITION__``."""
    assert _texts(["", None], pa.string()) == ["", None]
    assert _texts([b"", None], pa.binary()) == ["", None]
    assert hive_texts(pa.nulls(2, pa.date32()), "c").to_pylist() == [None, None]
    assert partition_segment("c", "") == partition_segment("c", None) == f"c={HIVE_NULL}"
