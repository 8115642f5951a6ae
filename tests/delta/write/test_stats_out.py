"""Per-file stats JSON: exact counts, true bounds, and the same meaning for delta-rs."""

from __future__ import annotations

import datetime as dt
import json
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lakecore_delta.write.stats_out import STRING_PREFIX_LENGTH, stats_json

import lakecore
from lakecore.model.schema import physical_name

deltalake = pytest.importorskip("deltalake", reason="interop tests need deltalake")

UTC = dt.timezone.utc
SCHEMA = pa.schema(
    [
        ("i", pa.int64()),
        ("f", pa.float64()),
        ("s", pa.string()),
        ("d", pa.date32()),
        ("dec", pa.decimal128(38, 10)),
        ("ts", pa.timestamp("us", "UTC")),
        ("ntz", pa.timestamp("us")),
    ]
)
MS = dt.timedelta(milliseconds=1)

timestamps = st.datetimes(min_value=dt.datetime(1800, 1, 1), max_value=dt.datetime(2200, 1, 1))
columns = st.fixed_dictionaries(
    {
        "i": st.lists(st.none() | st.integers(-(2**63), 2**63 - 1), max_size=8),
        "f": st.lists(st.none() | st.floats(allow_nan=True, allow_infinity=True), max_size=8),
        "s": st.lists(st.none() | st.text(max_size=40), max_size=8),
        "d": st.lists(st.none() | st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31)), max_size=8),
        "dec": st.lists(
            st.none()
            | st.decimals(
                min_value=Decimal("-9999999999999999999999999999"),
                max_value=Decimal("9999999999999999999999999999"),
                places=10,
                allow_nan=False,
            ),
            max_size=8,
        ),
        "ts": st.lists(st.none() | timestamps.map(lambda t: t.replace(tzinfo=UTC)), max_size=8),
        "ntz": st.lists(st.none() | timestamps, max_size=8),
    }
)


def _equal_length(cols: dict[str, list[Any]]) -> pa.Table:
    n = min(len(v) for v in cols.values())
    return pa.table({k: pa.array(v[:n], SCHEMA.field(k).type) for k, v in cols.items()})


def _parse_stat(raw: Any, t: pa.DataType) -> Any:
    if pa.types.is_timestamp(t):
        value = dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
        return value
    if pa.types.is_date(t):
        return dt.date.fromisoformat(raw)
    return raw


def _key(v: Any, t: pa.DataType) -> Any:
    if pa.types.is_timestamp(t) and t.tz is not None:
        return v.astimezone(UTC)
    return v


@settings(max_examples=60, deadline=None)
@given(columns)
def test_stats_are_exact_counts_and_true_bounds(cols: dict[str, list[Any]]) -> None:
    table = _equal_length(cols)
    stats = json.loads(stats_json(table, list(SCHEMA)), parse_float=Decimal)
    assert stats["numRecords"] == table.num_rows
    for f in SCHEMA:
        values = table.column(f.name).to_pylist()
        present = [v for v in values if v is not None]
        assert stats["nullCount"][f.name] == len(values) - len(present)
        lo, hi = stats["minValues"].get(f.name), stats["maxValues"].get(f.name)
        if pa.types.is_floating(f.type):
            if any(math.isnan(v) for v in present):
                assert lo is None and hi is None  # NaN: no usable bounds
                continue
            present = [Decimal(repr(v)) if math.isfinite(v) else v for v in present]
        if not present:
            assert lo is None and hi is None
            continue
        keyed = [_key(v, f.type) for v in present]
        if lo is not None:
            lo = _parse_stat(lo, f.type)
            assert all(lo <= v for v in keyed), (f.name, lo, min(keyed))
        if hi is not None:
            hi = _parse_stat(hi, f.type)
            if pa.types.is_timestamp(f.type):
                # Delta keeps milliseconds: the max is the true max truncated to the millisecond.
                assert all(v < hi + MS for v in keyed), (f.name, hi, max(keyed))
                assert max(keyed) - hi < MS
            else:
                assert all(v <= hi for v in keyed), (f.name, hi, max(keyed))
        if pa.types.is_integer(f.type) or pa.types.is_date(f.type) or pa.types.is_decimal(f.type):
            assert (lo, hi) == (min(keyed), max(keyed))  # exact for exact types
        if pa.types.is_string(f.type):
            assert lo is not None and lo == min(keyed)[:STRING_PREFIX_LENGTH]
            assert (hi is None) == (len(max(keyed)) > STRING_PREFIX_LENGTH)


def _physical_paths(schema: pa.Schema) -> dict[str, str]:
    """Logical dotted path -> physical dotted path of every (nested) field."""
    out: dict[str, str] = {}

    def walk(f: pa.Field, logical: str, phys: str) -> None:
        out[logical] = phys
        if pa.types.is_struct(f.type):
            for child in f.type:
                walk(child, f"{logical}.{child.name}", f"{phys}.{physical_name(child)}")

    for f in schema:
        walk(f, f.name, physical_name(f))
    return out


def _to_physical_key(key: str, physical: dict[str, str]) -> str:
    kind, _, logical = key.partition(".")
    return f"{kind}.{physical[logical]}" if logical else key


def test_stats_of_nested_and_mapped_columns_match_delta_rs(tmp_path: Path) -> None:
    """delta-rs reads the same min/max/nullCount from lakecore's stats (mapped names too)."""
    schema = pa.schema(
        [
            ("id", pa.int32()),
            ("st", pa.struct([("a", pa.int64()), ("b", pa.struct([("c", pa.string())]))])),
            ("dec", pa.decimal128(38, 10)),
            ("ts", pa.timestamp("us", "UTC")),
            ("flag", pa.bool_()),
            ("l", pa.list_(pa.int64())),
        ]
    )
    data = pa.Table.from_pylist(
        [
            {
                "id": 1,
                "st": {"a": 10, "b": {"c": "x"}},
                "dec": Decimal("12345678901234567890123456.0123456789"),
                "ts": dt.datetime(2020, 1, 1, 0, 0, 0, 999_999, tzinfo=UTC),
                "flag": True,
                "l": [1],
            },
            {"id": -5, "st": None, "dec": Decimal("-1.5"), "ts": None, "flag": None, "l": None},
            {"id": None, "st": {"a": None, "b": None}, "dec": None, "ts": None, "flag": False},
        ],
        schema=schema,
    )
    expected = {
        "num_records": 3,
        "null_count.id": 1,
        "null_count.st.a": 2,
        "null_count.st.b.c": 2,
        "null_count.dec": 1,
        "null_count.ts": 2,
        "min.id": -5,
        "max.id": 1,
        "min.st.a": 10,
        "max.st.a": 10,
        "min.st.b.c": "x",
        "max.st.b.c": "x",
        "min.dec": Decimal("-1.5"),
        "max.dec": Decimal("12345678901234567890123456.0123456789"),
        "min.ts": dt.datetime(2020, 1, 1, 0, 0, 0, 999_000, tzinfo=UTC),
        "max.ts": dt.datetime(2020, 1, 1, 0, 0, 0, 999_000, tzinfo=UTC),
    }
    for mode in ("none", "name"):
        path = tmp_path / mode
        table = lakecore.create(str(path), schema, properties={"delta.columnMapping.mode": mode})
        table.append(data)
        theirs = pa.table(deltalake.DeltaTable(str(path)).get_add_actions(flatten=True))
        row = theirs.to_pylist()[0]
        # Stats are keyed by physical names: what delta-rs shows for mapped tables.
        physical = _physical_paths(lakecore.open(str(path)).snapshot().schema)
        got = {k: row.get(_to_physical_key(k, physical)) for k in expected}
        assert got == expected, mode
        if mode == "name":
            assert any(k.startswith("min.col-") for k in row)
        ours = lakecore.open(str(path)).snapshot().files().to_pylist()[0]
        assert ours["min"]["st"]["b"]["c"] == "x" and ours["max"]["id"] == 1, mode
        assert ours["null_count"]["st"]["a"] == 2 and ours["max"]["dec"] == expected["max.dec"]
