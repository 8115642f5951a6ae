"""``map_distinct``: a per-value render done once per distinct value, spread back by row."""

from __future__ import annotations

import pyarrow as pa

from lakecore.model.distinct_values import map_distinct


def test_each_distinct_value_is_rendered_once_and_every_row_gets_its_result() -> None:
    seen: list[list[str]] = []

    def render(distinct: pa.Array) -> pa.Array:
        seen.append(distinct.to_pylist())
        return pa.array([v.upper() for v in distinct.to_pylist()], pa.string())

    values = pa.chunked_array([["a", "b", None, "a"], [], ["b", "c"]], pa.string())
    got = map_distinct(values, render)
    assert got.to_pylist() == ["A", "B", None, "A", "B", "C"]
    assert got.num_chunks == 3
    assert len(seen) == 1 and sorted(seen[0]) == ["a", "b", "c"]


def test_no_rows_and_only_nulls() -> None:
    upper = lambda d: pa.array([v * 2 for v in d.to_pylist()], pa.int64())  # noqa: E731
    assert map_distinct(pa.chunked_array([], pa.int64()), upper).to_pylist() == []
    nulls = pa.chunked_array([[None, None]], pa.int64())
    assert map_distinct(nulls, upper).to_pylist() == [None, None]
