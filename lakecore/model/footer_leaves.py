"""Which Parquet leaf holds each column, decided once per file schema, and one pass over many
footers gathering each column's ``(null_count, min, max)`` into plain lists.

A file index over many footers (a Hudi table without a metadata table, a migration's adoption
check) reads the same few schemas thousands of times. ``gather_leaves`` therefore works out the
leaf of every wanted column (and whether it is a float leaf) once per distinct file schema,
and per file only reads each leaf's row-group statistics (``summarize_chunks``): the one part
that must touch every footer. Typed Arrow columns are built from the gathered lists afterwards,
once per column for all files (``lakecore.model.stats.footers_stats_columns``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from lakecore.model.parquet_footer import (
    LOGICAL,
    bounds_mode,
    summarize_chunk,
    summarize_chunks,
)

PARQUET_JAVA = "parquet-mr"
"""How parquet-java (Spark's and Hudi's Parquet writer) names itself in ``created_by``: it
orders NaN above every value, so a NaN shows in the max and the footer tells a NaN apart."""

_ARROW_SCHEMA = b"ARROW:schema"

Path = tuple[str, ...]


def leaf_columns(schema: pa.Schema) -> dict[Path, int]:
    """Parquet leaf column index of every primitive reachable through structs only.

    Leaves are numbered depth-first, as Parquet orders them; lists and maps take their leaves'
    numbers but are not entered (no bounds are kept for them). Paths are the names in the file.
    """
    out: dict[Path, int] = {}
    counter = 0

    def walk(fields: Sequence[pa.Field], prefix: Path) -> None:
        nonlocal counter
        for f in fields:
            path = (*prefix, f.name)
            if pa.types.is_struct(f.type):
                walk(list(f.type), path)
            elif pa.types.is_nested(f.type):
                counter += _count_leaves(f.type)
            else:
                out[path] = counter
                counter += 1

    walk(list(schema), ())
    return out


def _count_leaves(t: pa.DataType) -> int:
    if pa.types.is_struct(t):
        return sum(_count_leaves(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return _count_leaves(t.key_type) + _count_leaves(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _count_leaves(t.value_type)
    return 1


@dataclass(frozen=True, slots=True)
class Gathered:
    """Per wanted column (in the order asked), one value per footer (None: unknown)."""

    null_counts: list[list[int | None]]
    mins: list[list[Any]]
    maxs: list[list[Any]]


@dataclass(frozen=True, slots=True)
class _Plan:
    """For one file schema: per wanted column, its leaf index (None: not in the file), whether
    that leaf is FLOAT/DOUBLE, how to read its bounds (``bounds_mode``) and its physical type
    (each chunk's is checked against it)."""

    leaves: list[int | None]
    floating: list[bool]
    modes: list[int]
    physical: list[str]


class _Plans:
    """Plans by file schema. Two footers share a plan when their Parquet schemas are equal and
    their ``ARROW:schema`` entries are (the two things the Arrow schema, and so the leaf
    numbering, derives from); equality is checked in C++, most recent plan first."""

    def __init__(self, wanted: Sequence[Path]) -> None:
        self._wanted = list(wanted)
        self._plans: list[tuple[pq.ParquetSchema, bytes | None, _Plan]] = []

    def of(self, metadata: pq.FileMetaData) -> _Plan:
        schema = metadata.schema
        kv = metadata.metadata
        arrow = kv.get(_ARROW_SCHEMA) if kv else None
        for i, (known, known_arrow, plan) in enumerate(self._plans):
            if known_arrow == arrow and known.equals(schema):
                if i:
                    self._plans.insert(0, self._plans.pop(i))
                return plan
        leaves = leaf_columns(schema.to_arrow_schema())
        indexes = [leaves.get(path) for path in self._wanted]
        floating = [
            i is not None and schema.column(i).physical_type in ("FLOAT", "DOUBLE") for i in indexes
        ]
        modes = [bounds_mode(schema.column(i)) if i is not None else LOGICAL for i in indexes]
        physical = [schema.column(i).physical_type if i is not None else "" for i in indexes]
        plan = _Plan(indexes, floating, modes, physical)
        self._plans.insert(0, (schema, arrow, plan))
        return plan


def gather_leaves(
    footers: Sequence[pq.FileMetaData | None],
    wanted: Sequence[Path],
    nan_free_float_bounds: bool,
) -> Gathered:
    """Each wanted column's ``(null_count, min, max)`` in every footer, as ``summarize_leaf``
    gives them (paths are names in the file, through structs; a column not in the file and a
    ``None`` footer give unknowns). With ``nan_free_float_bounds``, float leaves of files not
    written by parquet-java keep no bounds (``lakecore.model.stats.footer_leaf``)."""
    k = len(wanted)
    nulls: list[list[int | None]] = [[] for _ in range(k)]
    mins: list[list[Any]] = [[] for _ in range(k)]
    maxs: list[list[Any]] = [[] for _ in range(k)]
    plans = _Plans(wanted)
    for metadata in footers:  # the per-file part: read each leaf's row-group statistics
        if metadata is None:
            for j in range(k):
                nulls[j].append(None)
                mins[j].append(None)
                maxs[j].append(None)
            continue
        plan = plans.of(metadata)
        groups = [metadata.row_group(g) for g in range(metadata.num_row_groups)]
        only = groups[0] if len(groups) == 1 else None
        refuse_floats = nan_free_float_bounds and not (metadata.created_by or "").startswith(
            PARQUET_JAVA
        )
        for j, index in enumerate(plan.leaves):
            if index is None:
                count, lo, hi = None, None, None
            elif only is not None:
                count, lo, hi = summarize_chunk(
                    only.column(index), plan.modes[j], physical=plan.physical[j]
                )
            else:
                chunks = [g.column(index) for g in groups]
                count, lo, hi = summarize_chunks(chunks, plan.modes[j], physical=plan.physical[j])
            if refuse_floats and plan.floating[j]:
                lo = hi = None
            nulls[j].append(count)
            mins[j].append(lo)
            maxs[j].append(hi)
    return Gathered(nulls, mins, maxs)
