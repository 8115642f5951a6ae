"""merge_slices: many slices merged in one pass give exactly merge_slice's rows, slice by slice.

The slices reuse the same keys (a key in two slices is two records) and differ in how their
data and delete runs alternate, which is what the renumbering across slices must respect.
"""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from lakecore_hudi.merge import MergeSpec, merge_slice
from lakecore_hudi.merge_many import merge_slices

from tests.hudi.test_merge import COMMIT, EVENT, Data, Delete, Row, base_table, log_tables, slices

RAN: list[int] = []


def _check(cases: list[tuple[list[Row], list[Data | Delete], list[int]]], spec: MergeSpec) -> None:
    parts = []
    for base, ops, seqs in cases:
        data, deletes = log_tables(ops, seqs)
        parts.append((base_table(base), data, deletes))
    together = merge_slices(parts, spec)
    one_by_one = [merge_slice(*part, spec) for part in parts]
    assert len(together) == len(one_by_one)
    for got, want in zip(together, one_by_one, strict=True):
        assert got.schema == want.schema
        assert got.to_pylist() == want.to_pylist()  # same rows, same order
    RAN.append(len(cases))


@settings(max_examples=100, deadline=None)
@given(cases=st.lists(slices(), min_size=1, max_size=5), event_time=st.booleans())
def _slices_merged_together_equal_one_by_one(
    cases: list[tuple[list[Row], list[Data | Delete], list[int]]], event_time: bool
) -> None:
    _check(cases, EVENT if event_time else COMMIT)


def test_slices_merged_together_equal_one_by_one() -> None:
    RAN.clear()
    _slices_merged_together_equal_one_by_one()
    assert len(RAN) >= 100 and max(RAN) > 1


def test_runs_that_alternate_differently_per_slice() -> None:
    cases = [
        # data, delete, data
        ([("a", 1, 0, None)], [Data("a", 2, 1), Delete("a", 3), Data("a", 4, 2)], [0, 1, 2]),
        # delete first, then data
        ([("a", 1, 10, None)], [Delete("a", None), Data("a", 0, 11)], [0, 1]),
        # only data, same key as the others
        ([], [Data("a", 5, 20), Data("b", 1, 21)], [0, 0]),
        # nothing to apply
        ([("z", 1, 30, None)], [], []),
    ]
    for spec in (EVENT, COMMIT):
        _check(cases, spec)
    out = merge_slices(
        [(base_table(b), *log_tables(o, s)) for b, o, s in cases],
        EVENT,
    )
    # event-time: new keys follow in (ordering value, seq) order; after the hard delete the
    # re-insert (ordering 0) loses to the base row (1), as in Hudi's readers
    assert [t.column("v").to_pylist() for t in out] == [[2], [10], [21, 20], [30]]


def test_a_base_with_repeated_keys_merges_slice_by_slice() -> None:
    repeated = ([("a", 1, 0, None), ("a", 1, 1, None)], [], [])
    other = ([("b", 1, 2, None)], [Data("b", 2, 3)], [0])
    _check([repeated, other], EVENT)
    out = merge_slices([(base_table(b), *log_tables(o, s)) for b, o, s in (repeated, other)], EVENT)
    assert out[0].column("v").to_pylist() == [0, 1]  # untouched, as merge_slice leaves it
    assert pa.concat_tables(out).num_rows == 3
