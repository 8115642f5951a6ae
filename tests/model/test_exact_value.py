"""``lakecore.model.stats.exact_value``: the fast paths for plain footer values (ints, strings,
doubles, booleans) give exactly what the general cast-and-compare path gives, without it."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakecore.model import exact_values, stats

INTEGERS = [pa.int8(), pa.int16(), pa.int32(), pa.int64()]
INTEGERS += [pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()]


def _general(value: Any, t: pa.DataType) -> pa.Array:
    """The general path: infer, cast, cast back and compare (nulls when inexact)."""
    try:
        array = pa.array([value])
        if exact_values.value_kind(array.type) != exact_values.value_kind(t):
            return pa.nulls(1, t)
        cast = array.cast(t)
        if not pc.all(pc.equal(cast.cast(array.type), array)).as_py():
            return pa.nulls(1, t)
        return cast
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError):
        return pa.nulls(1, t)


def _cases() -> list[tuple[Any, pa.DataType]]:
    edges: list[tuple[Any, pa.DataType]] = [
        (2**63, pa.int64()),
        (2**63, pa.uint64()),
        (2**63 - 1, pa.uint64()),
        (-(2**63), pa.int64()),
        (255, pa.uint8()),
        (256, pa.uint8()),
        (-129, pa.int8()),
        (5, pa.float64()),
        (1.5, pa.int64()),
        (5, pa.string()),
        (float("nan"), pa.float64()),
        (float("inf"), pa.float64()),
        (1.25, pa.float32()),
        ("", pa.string()),
        ("é", pa.large_string()),
        (True, pa.bool_()),
        (True, pa.int8()),
    ]
    rng = random.Random(7)
    for _ in range(1500):
        bits = rng.choice([7, 8, 15, 16, 31, 32, 63, 64, 65])
        edges.append((rng.randint(-(1 << bits), 1 << bits), rng.choice(INTEGERS)))
    return edges


def test_fast_paths_equal_the_general_path() -> None:
    cases = _cases()
    for value, t in cases:
        got, want = stats.exact_value(value, t), _general(value, t)
        assert got.type == want.type and got.to_pylist() == want.to_pylist(), (value, t)
    assert len(cases) == 1517


def test_plain_values_take_no_cast_and_compare(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: Any, **__: Any) -> Any:
        raise AssertionError("the general path ran")

    monkeypatch.setattr(stats.pc, "equal", refuse)
    assert stats.exact_value(5, pa.int32()).to_pylist() == [5]
    assert stats.exact_value(300, pa.int8()).to_pylist() == [None]
    assert stats.exact_value("a", pa.string()).to_pylist() == ["a"]
    assert stats.exact_value(0.5, pa.float64()).to_pylist() == [0.5]
    assert stats.exact_value(False, pa.bool_()).to_pylist() == [False]
