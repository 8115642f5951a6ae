"""Stats parsing gives one answer per value, however the values are chunked or surrounded.

Property tests over generated ``stats`` text (``stats_strategies``): Spark-like columns where
most values share one layout, and every irregularity writers produce.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lakecore_delta.stats import parse_stats

from .stats_strategies import ARROW_FIELDS, spark_like, stats_texts

_QUICK = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_MANY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def same(a: Any, b: Any) -> bool:
    """Equality where NaN equals NaN (parsed stats may hold NaN)."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) and type(a) is type(b)


def assert_same_tables(got: pa.Table, want: pa.Table) -> None:
    assert got.schema == want.schema
    assert got.num_rows == want.num_rows
    for name in want.column_names:
        for row, (x, y) in enumerate(
            zip(got.column(name).to_pylist(), want.column(name).to_pylist(), strict=True)
        ):
            assert same(x, y), (name, row, x, y)


@st.composite
def columns(draw: st.DrawFn) -> list[str | None]:
    if draw(st.booleans()):
        return spark_like(draw, draw(st.integers(1, 40)))
    return draw(st.lists(stats_texts(), min_size=1, max_size=20))


def check_independent(values: list[str | None], data: st.DataObject) -> None:
    cuts = sorted(data.draw(st.lists(st.integers(0, len(values)), max_size=4)))
    bounds = [0, *cuts, len(values)]
    chunks = [pa.array(values[a:b], pa.string()) for a, b in itertools.pairwise(bounds)]
    chunked = pa.chunked_array(chunks, pa.string())
    whole = parse_stats(pa.array(values, pa.string()), ARROW_FIELDS)
    assert_same_tables(parse_stats(chunked, ARROW_FIELDS), whole)
    # Zero-copy slices of one array (as replay hands over the add rows between other
    # actions) share its data buffer: their pieces are parsed joined.
    one = pa.array(values, pa.string())
    slices = pa.chunked_array([one.slice(a, b - a) for a, b in itertools.pairwise(bounds)])
    assert_same_tables(parse_stats(slices, ARROW_FIELDS), whole)
    assert whole.num_rows == len(values)
    # A value's stats depend on its own text only (fallbacks for bad neighbours included).
    alone = [parse_stats(pa.array([v], pa.string()), ARROW_FIELDS) for v in values]
    assert_same_tables(pa.concat_tables(alone), whole)


@_QUICK
@given(values=columns(), data=st.data())
def test_stats_depend_on_their_own_text_only(values: list[str | None], data: st.DataObject) -> None:
    check_independent(values, data)


@pytest.mark.slow
@_MANY
@given(values=columns(), data=st.data())
def test_stats_depend_on_their_own_text_only_many(
    values: list[str | None], data: st.DataObject
) -> None:
    check_independent(values, data)


def test_slices_of_one_buffer_are_parsed_as_one_piece(monkeypatch: pytest.MonkeyPatch) -> None:
    import lakecore_delta.stats_text as stats_module

    texts = [f'{{"numRecords":{i},"minValues":{{"id":{i}}}}}' for i in range(6)]
    one = pa.array([texts[0], None, texts[1], texts[2], None, texts[3], texts[4], texts[5]])
    slices = pa.chunked_array([one.slice(0, 1), one.slice(2, 2), one.slice(5, 3)])
    calls: list[int] = []
    original = stats_module._parse_pieces

    def counting(jobs: list[tuple[pa.Buffer, int]], schema: pa.Schema) -> pa.Table | None:
        calls.append(len(jobs))
        return original(jobs, schema)

    monkeypatch.setattr(stats_module, "_parse_pieces", counting)
    field = pa.field("id", pa.int64())
    got = parse_stats(slices, [field])
    assert calls == [1]
    assert got.column("numRecords").to_pylist() == list(range(6))
    assert [m["id"] for m in got.column("min").to_pylist()] == list(range(6))
