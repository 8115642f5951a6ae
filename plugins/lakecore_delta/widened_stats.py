"""Stats that type widening made imprecise, dropped from the file index.

A column widened from float to double keeps, in files written before the change, min/max
written for the float type: Spark writes the shortest text that reads back as the same float
(``3.4``), which read as a double is a different number (``3.4`` < ``float32(3.4)`` =
``3.4000000953674316``). Such a max is not an upper bound of the file's values, and files
written before and after the change cannot be told apart in the index, so those columns' min
and max become unknown (null), as the file index layout demands of what is not known. Every
other widening the protocol allows (integers, integer to double or decimal, decimal scale and
precision, date to timestamp_ntz) reads old stats exactly.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from lakecore_delta.schema import delta_metadata

TYPE_CHANGES = "delta.typeChanges"


def widened_from_float(field: pa.Field) -> bool:
    """Whether top-level ``field`` was ever widened from ``float``."""
    changes = delta_metadata(field).get(TYPE_CHANGES) or []
    return any(
        isinstance(c, dict) and c.get("fromType") == "float" and not c.get("fieldPath")
        for c in changes
    )


def drop_imprecise_bounds(stats: pa.Table, fields: Sequence[pa.Field]) -> pa.Table:
    """``stats`` (``parse_stats`` shape) with min/max of float-widened columns set to null."""
    names = {f.name for f in fields if widened_from_float(f)}
    if not names:
        return stats
    for kind in ("min", "max"):
        column = stats.column(kind).combine_chunks()
        children = [
            pa.nulls(len(column), f.type) if f.name in names else pc.struct_field(column, [i])
            for i, f in enumerate(column.type)
        ]
        rebuilt = pa.StructArray.from_arrays(children, fields=list(column.type))
        stats = stats.set_column(stats.schema.get_field_index(kind), kind, rebuilt)
    return stats
