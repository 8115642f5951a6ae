"""Property: a pruned scan returns exactly the rows a full read filtered in pyarrow returns.

Hypothesis draws small partitioned tables (several Parquet files, nulls, NaN, long strings,
sub-millisecond timestamps, decimals, dates) written as real Delta tables, by delta-rs or by
hand with the most degraded stats the protocol allows, and random predicates over them. For
each predicate, ``table.scan(where=pred).to_arrow()`` must hold the same multiset of rows as
``table.to_arrow().filter(pred)``. The SQL text of each predicate must also parse back to it.
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lakecore
from lakecore.expr import tree as ex
from lakecore.expr.arrow_filter import to_arrow_filter
from lakecore.planning import bind, parse_predicate
from lakecore.plugins import load_registry
from lakecore.storage import open_storage

from .tables import PARTITIONS, SCHEMA, write_with_deltalake, write_worst_case

UTC = dt.timezone.utc
NAN = float("nan")
BASE = dt.datetime(2024, 1, 1, tzinfo=UTC)
TIMES = [BASE + dt.timedelta(microseconds=us) for us in (-1, 0, 999, 1000, 1500, 1_000_000)]
POOLS: dict[str, list[Any]] = {
    "p": ["a", "b", "c"],
    "q": [1, 2],
    "i": [-5, -1, 0, 1, 2, 3, 7, 2**40],
    "s16": [-3, 0, 1, 2, 100],
    "f": [-1.5, -0.0, 0.0, 1.0, 2.5, NAN, float("inf"), float("-inf")],
    "f32": [-1.5, 0.0, 0.5, 1.0, NAN],
    "s": [
        *("", "a", "ab", "abc", "b", "zz", "a%b", "a_c", "\u00e9", "\U0001f600x"),
        *("a" * 31 + "z", "a" * 32, "a" * 32 + "b", "a" * 40, "b" * 33),
    ],
    "d": [decimal.Decimal(v) for v in ("-1.00", "0.00", "1.23", "5.00", "99.99")],
    "day": [dt.date(2023, 12, 31), dt.date(2024, 1, 1), dt.date(2024, 1, 2), dt.date(2024, 2, 29)],
    "ts": TIMES,
    "ntz": [t.replace(tzinfo=None) for t in TIMES],
    "b": [True, False],
}
COLUMNS = list(POOLS)
DELTA = load_registry().get("delta")
MAX_EXAMPLES = int(os.environ.get("LAKECORE_PROPERTY_EXAMPLES", "12"))
"""Tables per property test in the default run; raise it for a deeper run."""
SLOW_EXAMPLES = 100
"""Tables per property test under ``-m slow``."""
PREDICATES_PER_TABLE = 12


def column_values(name: str) -> st.SearchStrategy[Any]:
    """A value of column ``name`` for a row: mostly from its pool, sometimes null."""
    return st.one_of(st.none(), st.sampled_from(POOLS[name]), st.sampled_from(POOLS[name]))


@st.composite
def batches(draw: st.DrawFn) -> list[pa.Table]:
    """2 to 4 appends of 1 to 6 rows each."""
    out = []
    for _ in range(draw(st.integers(2, 4))):
        n = draw(st.integers(1, 6))
        rows = [{c: draw(column_values(c)) for c in COLUMNS} for _ in range(n)]
        out.append(pa.Table.from_pylist(rows, schema=SCHEMA))
    return out


@st.composite
def leaves(draw: st.DrawFn) -> ex.Predicate:
    name = draw(st.sampled_from(COLUMNS))
    column = ex.Column(name)
    pool = st.sampled_from(POOLS[name])
    kinds = ["cmp", "cmp", "in", "null", "between"] + (["like"] if name in ("p", "s") else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "cmp":
        op = draw(st.sampled_from(sorted(ex.COMPARISON_OPS)))
        value = draw(st.one_of(pool, pool, pool, st.none()))
        return ex.Comparison(op, column, ex.Literal(value))
    if kind == "in":
        values = draw(st.lists(st.one_of(pool, pool, st.none()), min_size=1, max_size=4))
        return ex.In(column, tuple(ex.Literal(v) for v in values))
    if kind == "null":
        return ex.IsNull(column)
    if kind == "between":
        return ex.Between(column, ex.Literal(draw(pool)), ex.Literal(draw(pool)))
    text = draw(pool)
    cut = draw(st.integers(0, len(text)))
    tail = draw(st.sampled_from(["%", "", "_%", "%a"]))
    return ex.Like(column, text[:cut].replace("%", "\\%").replace("_", "\\_") + tail)


def _extend(inner: st.SearchStrategy[ex.Predicate]) -> st.SearchStrategy[ex.Predicate]:
    operands = st.lists(inner, min_size=2, max_size=3)
    return st.one_of(
        st.builds(ex.Not, inner),
        operands.map(lambda ps: ex.and_(*ps)),
        operands.map(lambda ps: ex.or_(*ps)),
    )


PREDICATES = st.recursive(leaves(), _extend, max_leaves=6)
"""Random predicate trees: leaves over every column, NOT, AND, OR."""


def row_multiset(table: pa.Table) -> list[str]:
    """Rows as sorted text (NaN-safe: repr(nan) == repr(nan))."""
    return sorted(repr([(k, row[k]) for k in sorted(row)]) for row in table.to_pylist())


def check(root: Path, written: list[pa.Table], preds: list[ex.Predicate]) -> None:
    snapshot = DELTA.load_snapshot(open_storage(str(root)))
    full = snapshot.to_arrow()
    assert row_multiset(full) == row_multiset(pa.concat_tables(written))
    schema = snapshot.schema
    for pred in preds:
        bound = bind(pred, schema)
        assert str(bind(parse_predicate(str(bound)), schema)) == str(bound)
        expected = full.filter(to_arrow_filter(bound, schema))
        got = snapshot.scan(pred).to_arrow()
        assert row_multiset(got) == row_multiset(expected), f"where {bound}"


def _settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


PREDICATE_LISTS = st.lists(PREDICATES, min_size=PREDICATES_PER_TABLE, max_size=PREDICATES_PER_TABLE)
DROPPED_STATS = st.lists(st.sampled_from([*COLUMNS, "*"]), max_size=3)


def deltalake_case(data: list[pa.Table], preds: list[ex.Predicate]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "t"
        write_with_deltalake(root, data)
        check(root, data, preds)


def worst_case_stats_case(
    data: list[pa.Table], dropped: list[str], preds: list[ex.Predicate]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "t"
        write_worst_case(root, data, [d for d in dropped if d not in PARTITIONS])
        check(root, data, preds)


@_settings(MAX_EXAMPLES)
@given(data=batches(), preds=PREDICATE_LISTS)
def test_scan_matches_filtered_full_read_deltalake(
    data: list[pa.Table], preds: list[ex.Predicate]
) -> None:
    deltalake_case(data, preds)


@_settings(MAX_EXAMPLES)
@given(data=batches(), dropped=DROPPED_STATS, preds=PREDICATE_LISTS)
def test_scan_matches_filtered_full_read_worst_case_stats(
    data: list[pa.Table], dropped: list[str], preds: list[ex.Predicate]
) -> None:
    worst_case_stats_case(data, dropped, preds)


@pytest.mark.slow
@_settings(SLOW_EXAMPLES)
@given(data=batches(), preds=PREDICATE_LISTS)
def test_scan_matches_filtered_full_read_deltalake_long_run(
    data: list[pa.Table], preds: list[ex.Predicate]
) -> None:
    deltalake_case(data, preds)


@pytest.mark.slow
@_settings(SLOW_EXAMPLES)
@given(data=batches(), dropped=DROPPED_STATS, preds=PREDICATE_LISTS)
def test_scan_matches_filtered_full_read_worst_case_stats_long_run(
    data: list[pa.Table], dropped: list[str], preds: list[ex.Predicate]
) -> None:
    worst_case_stats_case(data, dropped, preds)


@pytest.mark.parametrize("writer", ["deltalake", "worst_case"])
def test_generated_tables_really_get_pruned(tmp_path: Path, writer: str) -> None:
    """The property tests' tables do prune: a selective predicate skips most files."""
    rows = [
        {**{c: POOLS[c][0] for c in COLUMNS}, "p": p, "i": i, "s": "a" * 40 + str(i)}
        for p in POOLS["p"]
        for i in (-5, 7)
    ]
    batches_ = [pa.Table.from_pylist([r], schema=SCHEMA) for r in rows]
    if writer == "deltalake":
        write_with_deltalake(tmp_path, batches_)
    else:
        write_worst_case(tmp_path, batches_, [])
    table = lakecore.open(str(tmp_path))
    for where, files in [
        ("p = 'a'", 2),
        ("i > 0", 3),
        ("p = 'b' AND i < 0", 1),
        ("s = 'zz'", 0),
        ("s LIKE 'b%'", 0),
        ("ts > TIMESTAMP '2024-01-01 00:00:00.001+00:00'", 0),
    ]:
        assert table.scan(where).explain().files_after_stats_pruning == files, where
