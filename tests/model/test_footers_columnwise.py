"""Column-wise footer stats over many files equal the per-file ``footer_stats`` exactly."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lakecore_delta.write.stats_out import DELTA_STATS_RULES

from lakecore.model import files as fi
from lakecore.model.stats import (
    StatsRules,
    exact_value,
    exact_values,
    footer_stats,
    footers_stats_columns,
    stats_columns,
    unknown_stats,
)
from tests.corpus import CORPUS

UTC = dt.timezone.utc
INNER = pa.struct(
    [("a", pa.int32()), ("b", pa.string()), ("deep", pa.struct([("c", pa.float64())]))]
)
TYPES = {
    "i8": pa.int8(),
    "i16": pa.int16(),
    "i32": pa.int32(),
    "i64": pa.int64(),
    "u32": pa.uint32(),
    "f32": pa.float32(),
    "f64": pa.float64(),
    "s": pa.string(),
    "bin": pa.binary(),
    "d": pa.decimal128(9, 2),
    "dbig": pa.decimal128(30, 4),
    "day": pa.date32(),
    "ts": pa.timestamp("us", "UTC"),
    "tsn": pa.timestamp("ns"),
    "ms": pa.timestamp("ms"),
    "flag": pa.bool_(),
    "st": INNER,
    "l": pa.list_(pa.int64()),
    "m": pa.map_(pa.string(), pa.int64()),
}


def _file(seed: int) -> pa.Table:
    n = 5
    nan = float("nan")
    rows = {
        "i8": [seed - 3, None, 120, -128, 0],
        "i16": [seed * 100, -5, None, 7, 8],
        "i32": [seed, None, -(2**31), 2**31 - 1, 1],
        "i64": [seed * 10**12, -(2**63), 2**63 - 1, None, 0],
        "u32": [seed, 2**32 - 1, 0, None, 9],
        "f32": [1.5 * seed, nan if seed % 2 else 0.25, None, -3.0, 2.0],
        "f64": [nan if seed % 3 == 0 else 1e300, -0.0, None, 2.5 * seed, -1e-300],
        "s": [f"k{seed}", "", None, "zz" * seed, "é"],
        "bin": [b"\x00\xff", None, b"a" * seed, b"", b"\x7f"],
        "d": [Decimal("1.50"), None, Decimal(f"-{seed}.25"), Decimal("9999999.99"), None],
        "dbig": [Decimal("12345678901234567890.1234"), None, Decimal(seed), None, Decimal("-1")],
        "day": [dt.date(1970, 1, 1), None, dt.date(2024, 2, 29), dt.date(1, 1, 1 + seed), None],
        "ts": [0, 1_700_000_000_123_456 + seed, None, -5, 1],
        "tsn": [seed, None, 1_700_000_000_123_456_789, -1, 0],
        "ms": [seed * 1000, None, 0, 1, 2],
        "flag": [True, None, bool(seed % 2), True, True],
        "st": [
            {"a": seed, "b": None, "deep": {"c": nan}},
            None,
            {"a": 5, "b": "q", "deep": None},
            {"a": None, "b": "r", "deep": {"c": -1.0}},
            {"a": 1, "b": "s", "deep": {"c": float(seed)}},
        ],
        "l": [[1, 2], None, [], [seed], [None]],
        "m": [[("a", 1)], None, [], [("b", seed)], [("c", None)]],
    }
    assert all(len(v) == n for v in rows.values())
    return pa.table({k: pa.array(v, TYPES[k]) for k, v in rows.items()})


def _generated(tmp_path: Path) -> list[pq.FileMetaData | None]:
    footers: list[pq.FileMetaData | None] = []
    for seed in range(1, 7):
        path = tmp_path / f"f{seed}.parquet"
        table = _file(seed)
        if seed == 4:  # all-null columns, no bounds
            table = pa.table({k: pa.nulls(5, TYPES[k]) for k in TYPES})
        if seed == 5:  # a file missing columns (schema evolution)
            table = table.drop_columns(["d", "st", "flag"])
        pq.write_table(
            table,
            path,
            row_group_size=2,  # several row groups to combine
            write_statistics=seed != 6 or ["i32", "s"],  # file 6: most columns without stats
        )
        footers.append(pq.read_metadata(path))
    footers.insert(2, None)  # a non-Parquet file
    return footers


def _per_file(
    footers: list[pq.FileMetaData | None], fields: list[pa.Field], rules: StatsRules
) -> dict[str, pa.Array]:
    """The per-file path the column-wise one replaces (one struct row per file, concatenated)."""
    stats = [
        footer_stats(m, fields, rules) if m is not None else unknown_stats(fields) for m in footers
    ]
    return stats_columns(stats, fields)


@pytest.mark.parametrize("rules", [StatsRules(), DELTA_STATS_RULES], ids=["default", "delta"])
def test_generated_files_every_type(tmp_path: Path, rules: StatsRules) -> None:
    footers = _generated(tmp_path)
    fields = [pa.field(k, t) for k, t in TYPES.items()]
    old = _per_file(footers, fields, rules)
    new = footers_stats_columns(footers, fields, rules)
    for key in (fi.MIN, fi.MAX, fi.NULL_COUNT):
        assert new[key].type == old[key].type, key
        assert new[key].equals(old[key]), key
        assert new[key].to_pylist() == old[key].to_pylist() or key != fi.NULL_COUNT
    # The comparison is not vacuous: some bounds are known, some refused.
    lo = new[fi.MIN].to_pylist()
    assert len(lo) == 7
    assert lo[0]["i32"] == -(2**31) and lo[0]["d"] == Decimal("-1.25") and lo[2]["s"] is None
    assert {r["tsn"] for r in lo[:2]} != {None}


def test_fields_read_as_other_types(tmp_path: Path) -> None:
    """Inexact conversions (narrower ints, float32 from doubles, strings as binary) match too."""
    footers = _generated(tmp_path)
    fields = [
        pa.field("i64", pa.int16()),
        pa.field("u32", pa.int32()),
        pa.field("f64", pa.float32()),
        pa.field("s", pa.binary()),
        pa.field("bin", pa.string()),
        pa.field("d", pa.decimal128(5, 1)),
        pa.field("ts", pa.timestamp("s", "UTC")),
        pa.field("day", pa.timestamp("us")),
        pa.field("i32", pa.float64()),
    ]
    old = _per_file(footers, fields, StatsRules())
    new = footers_stats_columns(footers, fields)
    for key in (fi.MIN, fi.MAX, fi.NULL_COUNT):
        assert new[key].equals(old[key]), key


def test_corpus_hudi_base_files() -> None:
    hudi = CORPUS / "hudi"
    if not hudi.is_dir():
        pytest.fail(f"corpus not found at {hudi}; set LAKECORE_CORPUS")
    tables = files = 0
    for root in sorted(hudi.iterdir()):
        paths = sorted(
            p for p in root.rglob("*.parquet") if ".hoodie" not in p.relative_to(root).parts
        )
        if not paths:
            continue
        schema = pq.read_schema(paths[-1]).remove_metadata()
        footers: list[pq.FileMetaData | None] = [pq.read_metadata(p) for p in paths]
        for rules in (StatsRules(), DELTA_STATS_RULES):
            old = _per_file(footers, list(schema), rules)
            new = footers_stats_columns(footers, list(schema), rules)
            for key in (fi.MIN, fi.MAX, fi.NULL_COUNT):
                assert new[key].equals(old[key]), (root.name, key)
        tables, files = tables + 1, files + len(paths)
    assert (tables, files) == (17, 80)


def test_no_files() -> None:
    fields = [pa.field("x", pa.int64()), pa.field("st", INNER)]
    new = footers_stats_columns([], fields)
    old = stats_columns([], fields)
    assert all(new[k].equals(old[k]) and len(new[k]) == 0 for k in old)


@pytest.mark.parametrize(
    ("values", "t"),
    [
        ([1, None, 300, -(2**70), 2**64 - 1, 5], pa.int8()),
        ([1, 2**63, None], pa.uint64()),
        ([1.5, float("nan"), None, 1e300], pa.float64()),
        ([1.5, 1e300, 0.1], pa.float32()),
        ([Decimal("1.25"), Decimal("123456.5"), None, Decimal("1.255")], pa.decimal128(7, 2)),
        (["a", b"b", 3, None, True], pa.string()),
        ([True, 1, None], pa.bool_()),
        (
            [dt.datetime(2024, 1, 1, tzinfo=UTC), dt.datetime(2024, 1, 1, 0, 0, 0, 5, tzinfo=UTC)],
            pa.timestamp("ms", "UTC"),
        ),
        ([dt.date(2024, 1, 1), None], pa.date32()),
        ([1, 2], pa.float64()),
        ([None, None], pa.int32()),
    ],
)
def test_exact_values_equal_exact_value(values: list[object], t: pa.DataType) -> None:
    got = exact_values(values, t)
    want = pa.concat_arrays([exact_value(v, t) for v in values])
    assert got.type == t and got.equals(want), (got, want)
