"""The one stats module: typed min/max/null_count from Arrow data and from Parquet footers."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lakecore_delta.write.stats_out import DELTA_STATS_RULES, render_stats_json, stats_json

from lakecore.model import files as fi
from lakecore.model.schema import PHYSICAL_NAME
from lakecore.model.stats import (
    StatsRules,
    data_stats,
    exact_value,
    footer_stats,
    leaf_columns,
    stats_columns,
    stats_types,
    unknown_stats,
)

UTC = dt.timezone.utc
TABLE = pa.table(
    {
        "i": pa.array([3, None, -7, 12], pa.int32()),
        "s": ["b", "a" * 40, None, "zz"],
        "d": pa.array([Decimal("1.50"), None, Decimal("-2.25"), None], pa.decimal128(9, 2)),
        "ts": pa.array([0, 1_700_000_000_123_456, None, 5], pa.timestamp("us", "UTC")),
        "day": pa.array([1, 2, 3, None], pa.date32()),
        "st": pa.array(
            [{"a": 1, "b": None}, None, {"a": 5, "b": "q"}, {"a": None, "b": "r"}],
            pa.struct([("a", pa.int64()), ("b", pa.string())]),
        ),
        "flag": [True, None, False, True],
        "l": [[1], None, [], [2]],
    }
)
FIELDS = list(TABLE.schema)


def _row(stats: object) -> tuple[object, object, object]:
    return (
        stats.min.to_pylist()[0],  # type: ignore[attr-defined]
        stats.max.to_pylist()[0],  # type: ignore[attr-defined]
        stats.null_count.to_pylist()[0],  # type: ignore[attr-defined]
    )


def test_data_stats_are_typed_and_exact() -> None:
    lo, hi, nulls = _row(data_stats(TABLE, FIELDS))
    assert lo == {
        "i": -7,
        "s": "a" * 40,  # no truncation here: formats cut when they render
        "d": Decimal("-2.25"),
        "ts": dt.datetime(1970, 1, 1, tzinfo=UTC),
        "day": dt.date(1970, 1, 2),
        "st": {"a": 1, "b": "q"},
        "flag": False,  # booleans are bounded too (Delta's JSON leaves them out)
    }
    assert hi["ts"] == dt.datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=UTC)  # type: ignore[index]
    assert hi["s"] == "zz" and hi["st"] == {"a": 5, "b": "r"}  # type: ignore[index]
    # Every column has a null count (a null struct makes its children null); lists have no
    # bounds.
    assert nulls == {"i": 1, "s": 1, "d": 2, "ts": 1, "day": 1, "st": {"a": 2, "b": 2},
                     "flag": 1, "l": 1}  # fmt: skip
    lo_t, hi_t, null_t = stats_types(FIELDS)
    assert "flag" in lo_t.names and "l" not in hi_t.names and "l" in null_t.names


def test_footer_stats_equal_data_stats(tmp_path: Path) -> None:
    # Row groups of one row: bounds and null counts combine across them.
    pq.write_table(TABLE, tmp_path / "f.parquet", row_group_size=1)
    metadata = pq.ParquetFile(tmp_path / "f.parquet").metadata
    assert metadata.num_row_groups == 4
    from_footer = _row(footer_stats(metadata, FIELDS))
    from_data = _row(data_stats(TABLE, FIELDS))
    assert from_footer[:2] == from_data[:2]
    assert from_footer[2] == {**from_data[2], "l": None}  # type: ignore[dict-item]
    # ... and Delta renders both the same way (what spark.write and Table.append commit).
    rendered = [
        render_stats_json(4, *_row(s), FIELDS)
        for s in (footer_stats(metadata, FIELDS, DELTA_STATS_RULES), data_stats(TABLE, FIELDS))
    ]
    assert json.loads(rendered[0] or "") == json.loads(
        stats_json(TABLE.drop_columns(["l"]), FIELDS[:-1])
    )
    assert json.loads(rendered[0] or "")["maxValues"] == json.loads(rendered[1] or "")["maxValues"]


def test_nan_rules() -> None:
    table = pa.table(
        {"x": [1.0, float("nan"), 2.0], "y": pa.array([float("nan")], pa.float32()).take([0, 0, 0])}
    )
    lo, hi, nulls = _row(data_stats(table, list(table.schema)))
    assert (lo, hi, nulls) == ({"x": 1.0, "y": None}, {"x": 2.0, "y": None}, {"x": 0, "y": 0})
    lo, hi, _ = _row(data_stats(table, list(table.schema), StatsRules(nan_free_float_bounds=True)))
    assert lo == {"x": None, "y": None} and hi == {"x": None, "y": None}


def test_footer_float_bounds_need_a_writer_that_shows_nan(tmp_path: Path) -> None:
    table = pa.table({"x": [1.0, float("nan"), 2.0], "i": [1, 2, 3]})
    pq.write_table(table, tmp_path / "nan.parquet")
    metadata = pq.ParquetFile(tmp_path / "nan.parquet").metadata
    # pyarrow leaves NaN out of the bounds: fine for lakecore's planner, not for Delta.
    assert _row(footer_stats(metadata, list(table.schema)))[0] == {"x": 1.0, "i": 1}
    assert _row(footer_stats(metadata, list(table.schema), DELTA_STATS_RULES))[0] == {
        "x": None,
        "i": 1,
    }


def test_unknown_and_missing_stats(tmp_path: Path) -> None:
    table = pa.table({"i": pa.array([None, None, 4, 9], pa.int64()), "j": [1, 2, 3, 4]})
    pq.write_table(table, tmp_path / "f.parquet", row_group_size=2)
    metadata = pq.ParquetFile(tmp_path / "f.parquet").metadata
    fields = [*table.schema, pa.field("gone", pa.int64())]
    lo, hi, nulls = _row(footer_stats(metadata, fields))
    assert lo == {"i": 4, "j": 1, "gone": None} and hi == {"i": 9, "j": 4, "gone": None}
    assert nulls == {"i": 2, "j": 0, "gone": None}
    pq.write_table(table, tmp_path / "bare.parquet", write_statistics=False)
    bare = pq.ParquetFile(tmp_path / "bare.parquet").metadata
    assert _row(footer_stats(bare, fields)) == _row(unknown_stats(fields))
    assert _row(data_stats(table.select(["j"]), fields))[0] == {"i": None, "j": 1, "gone": None}


def test_footer_columns_by_physical_name(tmp_path: Path) -> None:
    pq.write_table(pa.table({"col-1": [5, 6]}), tmp_path / "f.parquet")
    metadata = pq.ParquetFile(tmp_path / "f.parquet").metadata
    field = pa.field("id", pa.int64(), metadata={PHYSICAL_NAME: b"col-1"})
    stats = footer_stats(
        metadata, [field], name_in_file=lambda f: f.metadata[PHYSICAL_NAME].decode()
    )
    assert _row(stats) == ({"id": 5}, {"id": 6}, {"id": 0})


def test_values_convert_only_exactly() -> None:
    assert exact_value(5, pa.int8()).to_pylist() == [5]
    assert exact_value(300, pa.int8()).to_pylist() == [None]  # overflow
    assert exact_value("5", pa.int64()).to_pylist() == [None]  # text is not a number
    assert exact_value(0.1, pa.float32()).to_pylist() == [None]  # would round
    ts = dt.datetime(2024, 1, 1, 0, 0, 0, 1, tzinfo=UTC)
    assert exact_value(ts, pa.timestamp("ms", "UTC")).to_pylist() == [None]
    assert exact_value(ts, pa.timestamp("us", "UTC")).to_pylist() == [ts]


def test_columns_of_many_files() -> None:
    files = [data_stats(TABLE.slice(i, 1), FIELDS) for i in range(4)]
    columns = stats_columns(files, FIELDS)
    assert [columns[k].type for k in (fi.MIN, fi.MAX, fi.NULL_COUNT)] == list(stats_types(FIELDS))
    assert pc_sum(columns[fi.NULL_COUNT], "i") == 1
    assert stats_columns([], FIELDS)[fi.MIN].type == stats_types(FIELDS)[0]


def pc_sum(column: pa.Array, name: str) -> int:
    return sum(v[name] for v in column.to_pylist())


def test_leaf_columns_follow_parquet_order() -> None:
    schema = pa.schema(
        [
            ("a", pa.int64()),
            ("l", pa.list_(pa.struct([("x", pa.int8()), ("y", pa.int8())]))),
            ("s", pa.struct([("m", pa.map_(pa.string(), pa.int8())), ("b", pa.string())])),
            ("c", pa.float64()),
        ]
    )
    assert leaf_columns(schema) == {("a",): 0, ("s", "b"): 5, ("c",): 6}


@pytest.mark.parametrize("rules", [StatsRules(), DELTA_STATS_RULES])
def test_all_null_columns_have_no_bounds(rules: StatsRules) -> None:
    table = pa.table({"i": pa.nulls(3, pa.int64()), "x": pa.nulls(3, pa.float64())})
    assert _row(data_stats(table, list(table.schema), rules)) == (
        {"i": None, "x": None},
        {"i": None, "x": None},
        {"i": 3, "x": 3},
    )
