"""The one-pass footer gathering (``lakecore.model.footer_leaves``, per-schema plans, raw
bounds) behind ``footers_stats_columns`` equals a straightforward per-file, per-value reference
exactly: corpus Hudi base files and generated files with nulls, NaN, all-null columns, missing
statistics, decimals of every physical encoding, timestamps of each unit, long strings, several
row groups, and files of different schemas interleaved (one plan each)."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lakecore_delta.write.stats_out import DELTA_STATS_RULES

from lakecore.model import files as fi
from lakecore.model.footer_leaves import gather_leaves
from lakecore.model.parquet_footer import LOGICAL, RAW, UTF8, bounds_mode
from lakecore.model.stats import StatsRules, exact_value, footers_stats_columns
from tests.corpus import CORPUS

UTC = dt.timezone.utc


# ------------------------------------------------------------------------------ reference


def _reference_leaf(metadata: pq.FileMetaData, index: int) -> tuple[Any, Any, Any]:
    """The module docstring's rules, read with pyarrow's logical ``min``/``max``, plainly."""
    nulls: int | None = 0
    low: Any = None
    high: Any = None
    low_known = high_known = True
    for g in range(metadata.num_row_groups):
        chunk = metadata.row_group(g).column(index)
        stats = chunk.statistics
        if stats is None:
            return None, None, None
        count = stats.null_count if stats.has_null_count else None
        nulls = None if nulls is None or count is None else nulls + count
        if not stats.has_min_max:
            all_null = count is not None and count == chunk.num_values
            low_known, high_known = low_known and all_null, high_known and all_null
            continue
        lo, hi = stats.min, stats.max
        if any(isinstance(v, float) and math.isnan(v) for v in (lo, hi)):
            low_known = high_known = False
            continue
        if getattr(stats, "is_max_value_exact", None) is False:
            high_known = False
        for bound, pick in ((lo, min), (hi, max)):
            known = low_known if pick is min else high_known
            current = low if pick is min else high
            if known:
                try:
                    current = bound if current is None else pick(current, bound)
                except TypeError:
                    current, known = None, False
            if pick is min:
                low, low_known = current, known
            else:
                high, high_known = current, known
    return nulls, low if low_known else None, high if high_known else None


def _reference(
    footers: list[pq.FileMetaData | None], fields: list[pa.Field], rules: StatsRules
) -> list[dict[str, Any]]:
    """One row per file: ``{"min": ..., "max": ..., "null_count": ...}`` built value by value
    (top-level scalar columns only; leaf found by name in the file's Arrow schema)."""
    rows = []
    for m in footers:
        lo: dict[str, Any] = {}
        hi: dict[str, Any] = {}
        nc: dict[str, Any] = {}
        for f in fields:
            index = None
            if m is not None:
                names = [m.schema.column(i).path for i in range(m.num_columns)]
                index = names.index(f.name) if f.name in names else None
            count, a, b = (
                (None, None, None) if m is None or index is None else _reference_leaf(m, index)
            )
            if (
                m is not None
                and index is not None
                and rules.nan_free_float_bounds
                and m.schema.column(index).physical_type in ("FLOAT", "DOUBLE")
                and not (m.created_by or "").startswith("parquet-mr")
            ):
                a = b = None
            nc[f.name] = count
            lo[f.name] = exact_value(a, f.type).to_pylist()[0]
            hi[f.name] = exact_value(b, f.type).to_pylist()[0]
        rows.append({fi.MIN: lo, fi.MAX: hi, fi.NULL_COUNT: nc})
    return rows


def _same(a: Any, b: Any) -> bool:
    """Equal, NaN equal to NaN (a float32 NaN never survives, but compare honestly)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def _check(footers: list[pq.FileMetaData | None], fields: list[pa.Field], rules: StatsRules) -> int:
    """Compare builder and reference; return how many non-null bounds were compared."""
    built = footers_stats_columns(footers, fields, rules)
    got = [
        {key: built[key][i].as_py() for key in (fi.MIN, fi.MAX, fi.NULL_COUNT)}
        for i in range(len(footers))
    ]
    want = _reference(footers, fields, rules)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert _same(g, w), (i, g, w)
    return sum(v is not None for row in want for key in (fi.MIN, fi.MAX) for v in row[key].values())


# ------------------------------------------------------------------------------ generated

NAN = float("nan")
COLUMNS: dict[str, tuple[pa.DataType, list[Any]]] = {
    "i8": (pa.int8(), [3, None, -128, 127]),
    "i32": (pa.int32(), [-(2**31), None, 7, 2**31 - 1]),
    "i64": (pa.int64(), [None, -(2**63), 2**63 - 1, 0]),
    "u32": (pa.uint32(), [0, 2**32 - 1, None, 5]),
    "u64": (pa.uint64(), [0, 2**64 - 1, None, 5]),
    "f32": (pa.float32(), [1.5, NAN, None, -2.0]),
    "f64": (pa.float64(), [NAN, -0.0, None, 1e300]),
    "f64n": (pa.float64(), [1.0, None, -1.0, 2.0]),
    "s": (pa.string(), ["é" * 40, "ü", None, "ÿ" * 300]),
    "bin": (pa.binary(), [b"\x00\xff", None, b"", b"\x7f" * 99]),
    "flag": (pa.bool_(), [True, None, False, True]),
    "d9": (pa.decimal128(9, 2), [Decimal("1.50"), None, Decimal("-9999999.99"), Decimal("0.01")]),
    "d18": (pa.decimal128(18, 3), [Decimal("1.500"), Decimal("-1.000"), None, Decimal("2.000")]),
    "d30": (pa.decimal128(30, 4), [Decimal("12345678901234567890.1234"), None, Decimal(1), None]),
    "day": (pa.date32(), [dt.date(1970, 1, 1), None, dt.date(2024, 2, 29), dt.date(1, 1, 1)]),
    "ts_s": (pa.timestamp("s"), [0, None, 1_700_000_000, -5]),
    "ts_ms": (pa.timestamp("ms", "UTC"), [0, 1_700_000_000_123, None, -5]),
    "ts_us": (pa.timestamp("us", "UTC"), [1_700_000_000_123_456, None, -1, 0]),
    "ts_ns": (pa.timestamp("ns"), [1_700_000_000_123_456_789, None, -1, 0]),
    "allnull": (pa.int64(), [None, None, None, None]),
}


def _table(seed: int) -> pa.Table:
    def shift(i: int, v: Any) -> Any:  # the first value differs per file (all in range)
        return v + seed if i == 0 and type(v) is int else v

    return pa.table(
        {k: pa.array([shift(i, v) for i, v in enumerate(vs)], t) for k, (t, vs) in COLUMNS.items()}
    )


def _generated(tmp: Path) -> list[pq.FileMetaData | None]:
    footers: list[pq.FileMetaData | None] = []
    for seed in range(8):
        table = _table(seed)
        options: dict[str, Any] = {}
        if seed == 1:  # every column all null: no bounds anywhere
            table = pa.table({k: pa.nulls(4, t) for k, (t, _) in COLUMNS.items()})
        if seed == 2:  # statistics for a few columns only
            options["write_statistics"] = ["i32", "s", "ts_us"]
        if seed == 3:  # another schema: columns reordered, some missing, one retyped
            table = table.select(["s", "f64", "i8", "ts_ns", "d9"]).append_column(
                "i32", pa.array([1, 2, None, 4], pa.int64())
            )
        if seed == 4:  # decimals stored as INT32/INT64
            options["store_decimal_as_integer"] = True
        if seed == 5:  # one row per row group
            options["row_group_size"] = 1
        if seed == 6:  # an empty file: no row groups of data
            table = table.slice(0, 0)
        path = tmp / f"f{seed}.parquet"
        pq.write_table(table, path, **options)
        footers.append(pq.read_metadata(path))
        if seed == 3:
            footers.append(None)  # a non-Parquet file between schemas
    return footers


@pytest.mark.parametrize("rules", [StatsRules(), DELTA_STATS_RULES], ids=["default", "delta"])
def test_generated_files_equal_the_reference(tmp_path: Path, rules: StatsRules) -> None:
    footers = _generated(tmp_path)
    fields = [pa.field(k, t) for k, (t, _) in COLUMNS.items()]
    compared = _check(footers, fields, rules)
    assert len(footers) == 9
    assert compared > 100  # not vacuous: most bounds are known


def test_fields_read_as_other_types(tmp_path: Path) -> None:
    """Raw bounds go through the same exact conversion: narrower, wider and other kinds."""
    footers = _generated(tmp_path)
    fields = [
        pa.field("i64", pa.int16()),
        pa.field("i32", pa.int8()),
        pa.field("f64n", pa.float32()),
        pa.field("s", pa.binary()),
        pa.field("bin", pa.string()),
        pa.field("flag", pa.int8()),
        pa.field("ts_us", pa.timestamp("s", "UTC")),
        pa.field("u32", pa.int32()),
        pa.field("i8", pa.float64()),
    ]
    assert _check(footers, fields, StatsRules()) > 20


def test_the_schema_plan_is_per_schema(tmp_path: Path) -> None:
    """Files alternating between two schemas read each column from its own leaf."""
    a = pa.table({"x": [1, 2], "y": ["a", "b"]})
    b = pa.table({"y": ["c", "d"], "x": [10, 20]})
    footers: list[pq.FileMetaData | None] = []
    for i in range(6):
        path = tmp_path / f"{i}.parquet"
        pq.write_table(a if i % 2 else b, path)
        footers.append(pq.read_metadata(path))
    got = gather_leaves(footers, [("x",), ("y",), ("z",)], nan_free_float_bounds=False)
    assert got.mins[0] == [10, 1] * 3 and got.maxs[1] == ["d", "b"] * 3
    assert got.null_counts[2] == [None] * 6


def test_bounds_modes(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    pq.write_table(_table(0), path, store_decimal_as_integer=True)
    schema = pq.read_metadata(path).schema
    modes = {schema.column(i).path: bounds_mode(schema.column(i)) for i in range(len(schema))}
    assert modes == {
        **{k: LOGICAL for k in COLUMNS},
        "i32": RAW,
        "i64": RAW,
        "f32": RAW,
        "f64": RAW,
        "f64n": RAW,
        "flag": RAW,
        "allnull": RAW,
        "s": UTF8,
    }


# ------------------------------------------------------------------------------ corpus


def test_corpus_hudi_base_files() -> None:
    hudi = CORPUS / "hudi"
    if not hudi.is_dir():
        pytest.fail(f"corpus not found at {hudi}; set LAKECORE_CORPUS")
    tables = files = compared = 0
    for root in sorted(hudi.iterdir()):
        paths = sorted(
            p for p in root.rglob("*.parquet") if ".hoodie" not in p.relative_to(root).parts
        )
        if not paths:
            continue
        schema = pq.read_schema(paths[-1]).remove_metadata()
        fields = [f for f in schema if not pa.types.is_nested(f.type)]
        footers: list[pq.FileMetaData | None] = [pq.read_metadata(p) for p in paths]
        for rules in (StatsRules(), DELTA_STATS_RULES):
            compared += _check(footers, fields, rules)
        tables, files = tables + 1, files + len(paths)
    assert (tables, files) == (17, 80)
    assert compared > 1000
