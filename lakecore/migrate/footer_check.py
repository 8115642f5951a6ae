"""What a Parquet file's own footer says against adopting it into another format's table.

A zero-copy migration (``lakecore.migrate.adopt``) publishes a source file as it is, so the
file must store every target column under its name with the target's type, and a partition
column it holds only with its unit's partition value. Only the footer is read for that
(through the run's ``Footers`` memo), and the data pages of a partition column only when the
footer's statistics do not settle which values it holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakecore.errors import CorruptTableError
from lakecore.model.footers import Footers
from lakecore.model.parquet_footer import summarize_leaf
from lakecore.model.schema import physical_name
from lakecore.storage import Storage

__all__ = ["footer_refusal", "same_type"]


def footer_refusal(
    storage: Storage,
    footers: Footers,
    path: str,
    partition: Mapping[str, Any],
    schema: pa.Schema,
    partitions: Sequence[str],
) -> str | None:
    """Why the Parquet file at ``path`` (of a unit with ``partition`` values) cannot be
    adopted under the target ``schema`` partitioned by ``partitions``; None when it can.

    An unreadable footer or partition column is a refusal, not an error.
    """
    try:
        footer = footers.get(path)
        stored = footer.schema.to_arrow_schema()
        held = _partition_values(storage, path, footer, stored, partitions, partition)
    except (OSError, pa.ArrowInvalid, CorruptTableError) as exc:
        return f"its Parquet footer cannot be read ({exc})"
    for f in schema:
        stored_as = physical_name(f)
        if stored_as != f.name:
            return (
                f"it stores column {f.name!r} as {stored_as!r} (column mapping); the "
                "target reads columns by name"
            )
        if f.name not in stored.names:
            cased = [n for n in stored.names if n.lower() == f.name.lower()]
            if cased:
                # Spark and lakecore's Delta reader match such a column by name case-
                # insensitively, readers of the target by exact name (nulls).
                return (
                    f"it stores column {f.name!r} as {cased[0]!r} (another case); the "
                    "target reads columns by their exact name"
                )
            continue  # a column added later: readers of the target read it as null
        kind = stored.field(f.name).type
        if not same_type(kind, f.type):
            return f"it stores column {f.name!r} as {kind}, not the target's {f.type}"
    for name, values in held.items():
        want = partition.get(name)
        if values != {want} and not (_is_nan(want) and all(map(_is_nan, values))):
            return (
                f"it stores partition column {name!r} with values {sorted(map(str, values))}"
                f" other than its partition value {want!r}"
            )
    return None


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and value != value


def same_type(stored: pa.DataType, wanted: pa.DataType) -> bool:
    """Whether a file column of type ``stored`` reads as ``wanted`` with no cast: equal types,
    where list element names and nullability do not count (Parquet writers name list items
    ``element``, ``item`` or ``array``) but struct field names do (readers match them);
    string and binary types stored alike in Parquet (plain, large, view) are the same."""
    if pa.types.is_struct(stored) and pa.types.is_struct(wanted):
        inner = [stored.field(i) for i in range(stored.num_fields)]
        outer = [wanted.field(i) for i in range(wanted.num_fields)]
        return [f.name for f in inner] == [f.name for f in outer] and all(
            same_type(a.type, b.type) for a, b in zip(inner, outer, strict=True)
        )
    if pa.types.is_map(stored) and pa.types.is_map(wanted):
        return same_type(stored.key_type, wanted.key_type) and same_type(
            stored.item_type, wanted.item_type
        )
    lists = (pa.types.is_list, pa.types.is_large_list)
    if any(t(stored) for t in lists) and any(t(wanted) for t in lists):
        same_kind = pa.types.is_list(stored) == pa.types.is_list(wanted)
        return same_kind and same_type(stored.value_type, wanted.value_type)
    for kinds in _SAME_IN_PARQUET:
        if any(k(stored) for k in kinds) and any(k(wanted) for k in kinds):
            return True
    return bool(stored.equals(wanted))


_SAME_IN_PARQUET = (
    (pa.types.is_string, pa.types.is_large_string, pa.types.is_string_view),
    (pa.types.is_binary, pa.types.is_large_binary, pa.types.is_binary_view),
)
"""Arrow types a Parquet file stores alike (UTF-8 / plain BYTE_ARRAY): which one pyarrow
gives back depends only on the writer's ``ARROW:schema`` hint (delta-rs writes views)."""


def _partition_values(
    storage: Storage,
    path: str,
    footer: pq.FileMetaData,
    stored: pa.Schema,
    partitions: Sequence[str],
    partition: Mapping[str, Any],
) -> dict[str, set[Any]]:
    """The distinct values the file at ``path`` (``footer``, Arrow schema ``stored``) stores
    in each partition column it holds: ``{value}`` when the footer's statistics show every
    row holds the unit's partition value, else read from the file's data pages."""
    names = [c for c in partitions if c in stored.names]
    known = {n: {partition[n]} for n in names if _only_value(footer, n, partition.get(n))}
    unread = [n for n in names if n not in known]
    if unread:
        with storage.open_input(path) as handle:
            table = pq.ParquetFile(handle, metadata=footer).read(columns=unread)
        known.update({n: set(pc.unique(table.column(n)).to_pylist()) for n in unread})
    return {n: known[n] for n in names}


def _only_value(footer: pq.FileMetaData, name: str, want: Any) -> bool:
    """Whether the footer's sound statistics show that top-level column ``name`` holds
    ``want`` in every row (a value of the same Python type, no nulls, at least one row).
    Never for floats: writers such as pyarrow leave NaN out of min/max."""
    if want is None or isinstance(want, float) or footer.num_rows == 0:
        return False
    leaves = [i for i in range(footer.num_columns) if footer.schema.column(i).path == name]
    if len(leaves) != 1:
        return False
    s = summarize_leaf(footer, leaves[0])
    return bool(
        s.null_count == 0
        and type(s.min) is type(want)
        and type(s.max) is type(want)
        and s.min == want
        and s.max == want
    )
