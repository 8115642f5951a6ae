"""Checkpoint add extraction: zero-copy runs around non-add rows, partition-map fast path."""

from __future__ import annotations

import pyarrow as pa
import pytest
from lakecore_delta.log.checkpoint import _adds_of, _partition_strings, add_runs

MAP = pa.map_(pa.string(), pa.string())


def _add_struct(paths: list[str | None], pvs: list[list[tuple[str, str | None]]]) -> pa.StructArray:
    # Rows without a path are other actions: their add struct is null, as checkpoints write it.
    return pa.StructArray.from_arrays(
        [pa.array(paths, pa.string()), pa.array(pvs, MAP)],
        names=["path", "partitionValues"],
        mask=pa.array([p is None for p in paths]),
    )


@pytest.mark.parametrize(
    "paths",
    [
        ["a", "b", "c"],
        [None, "a", None, "b", "c", None],
        [None, None],
        ["a"] + [None] * 100 + ["b"],  # many non-add rows: filtered instead of sliced
    ],
)
def testadd_runs_keep_exactly_the_adds_in_order(paths: list[str | None]) -> None:
    chunk = _add_struct(paths, [[] for _ in paths])
    runs = add_runs(chunk)
    got = [p for run in runs for p in run.field("path").to_pylist()]
    assert got == [p for p in paths if p is not None]


def test_partition_fast_path_and_fallback_agree() -> None:
    uniform = pa.array([[("x", "1"), ("y", "a")], [("x", "2"), ("y", None)]], MAP)
    assert [c.to_pylist() for c in _partition_strings(uniform, ["x", "y"])] == [
        ["1", "2"],
        ["a", None],
    ]
    # Keys in another order in one row, and a missing key: the general path answers.
    mixed = pa.array([[("y", "a"), ("x", "1")], [("x", "2")]], MAP)
    assert [c.to_pylist() for c in _partition_strings(mixed, ["x", "y"])] == [
        ["1", "2"],
        ["a", None],
    ]
    # A slice of a map array (offsets not starting at zero).
    sliced = pa.array([[("x", "0")], [("x", "1")], [("x", "2")]], MAP).slice(1, 2)
    assert _partition_strings(sliced, ["x"])[0].to_pylist() == ["1", "2"]


def test_adds_of_reads_chunks_and_skips_non_adds() -> None:
    chunk1 = _add_struct(["a", None], [[("p", "1")], []])
    chunk2 = _add_struct([None, "b"], [[], [("p", "2")]])
    table = pa.table({"add": pa.chunked_array([chunk1, chunk2])})
    adds = _adds_of(table, "cp.parquet", ["p"])
    assert adds.column("path").to_pylist() == ["a", "b"]
    assert adds.column("partitionValues").to_pylist() == [{"p": "1"}, {"p": "2"}]
    assert adds.column("stats").null_count == 2
