"""The lossless-cast rule of writes (``lakecore.model.data_input``) on types no table test holds."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pytest

from lakecore.errors import SchemaError
from lakecore.model.data_input import cast_lossless, is_lossless_cast

REFUSED = [
    # pyarrow's safe cast does not check int -> float16 (2049 becomes 2048).
    (pa.array([2049]), pa.float16()),
    # An instant with a zone has no single wall-clock time.
    (pa.array([0], pa.timestamp("us", "Asia/Kolkata")), pa.timestamp("us")),
    (pa.array([0], pa.timestamp("us", "UTC")), pa.timestamp("ns")),
    # Checked value by value through a wide decimal.
    (pa.array([10**9]), pa.decimal128(10, 2)),
    (pa.array([-(10**9)]), pa.decimal128(10, 2)),
]

TAKEN = [
    (pa.array([1, -2]), pa.decimal128(10, 2), [Decimal("1.00"), Decimal("-2.00")]),
    (pa.array([2**63 - 1]), pa.decimal128(38, 0), [Decimal(2**63 - 1)]),
    (pa.array([3]), pa.decimal256(60, 30), [Decimal("3." + "0" * 30)]),
    (pa.array([5], pa.timestamp("us")), pa.timestamp("us", "UTC"), None),
    (pa.array([5], pa.timestamp("s", "Asia/Kolkata")), pa.timestamp("us", "UTC"), None),
]


@pytest.mark.parametrize(("values", "target"), REFUSED)
def test_refused(values: pa.Array, target: pa.DataType) -> None:
    with pytest.raises(SchemaError):
        cast_lossless(values, target, "c")


@pytest.mark.parametrize(("values", "target", "expected"), TAKEN)
def test_taken(values: pa.Array, target: pa.DataType, expected: list[object] | None) -> None:
    assert is_lossless_cast(values.type, target)
    out = cast_lossless(values, target, "c")
    assert out.type == target
    if expected is not None:
        assert out.to_pylist() == expected


def test_case_lists_ran() -> None:
    assert (len(REFUSED), len(TAKEN)) == (5, 5)
