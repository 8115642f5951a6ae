"""Per-value work done once per distinct value of a column.

Key and partition columns repeat few values over many rows, so rendering them in Python per
distinct value, then spreading the results back by Arrow, costs what the distinct values
cost, not the rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import TypeVar

import pyarrow as pa
import pyarrow.compute as pc

T = TypeVar("T", str, int)


def repeated(values: Iterable[T]) -> list[T]:
    """The values that occur more than once in ``values``, sorted (column names of data or
    a schema, a manifest's fragment ids: one pass, not a count per value)."""
    return sorted(v for v, times in Counter(values).items() if times > 1)


def map_distinct(
    values: pa.ChunkedArray, render: Callable[[pa.Array], pa.Array]
) -> pa.ChunkedArray:
    """``render``'s result for each value of ``values`` (null stays null).

    ``render`` receives the distinct non-null values once, as one array, and must return one
    result per value, in order; its results are spread back to every row by ``index_in``.
    """
    distinct = pc.unique(values).drop_null()
    results = render(distinct)
    return pa.chunked_array(
        [results.take(pc.index_in(c, value_set=distinct)) for c in values.chunks],
        results.type,
    )
