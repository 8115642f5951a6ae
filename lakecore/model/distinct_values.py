"""Per-value work done once per distinct value of a column.

Key and partition columns repeat few values over many rows, so rendering them in Python per
distinct value, then spreading the results back by Arrow, costs what the distinct values
cost, not the rows.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc


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
