"""The file index planning needs: only the stats a predicate names, where the format can.

Converting per-file stats is most of the cost of a file index on big tables (Delta keeps
them as JSON text per file), and a scan only prunes on the columns its predicate names; a
scan without a predicate, or reading for Spark, needs no stats at all. A snapshot source
that can build its index with the stats of some columns only implements
``PartialStatsSource``; planning then asks it for exactly those, and every other source
gives its full ``files()``.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import pyarrow as pa

from lakecore.expr import tree as ex

if TYPE_CHECKING:
    from lakecore.snapshot import Snapshot


@runtime_checkable
class PartialStatsSource(Protocol):
    """A snapshot source that can leave the stats of unnamed columns out of its index."""

    def files_with_stats(self, columns: Collection[str]) -> pa.Table:
        """Return the file index (``files()``'s rows, in its order, every non-stats column
        the same) whose ``min``/``max``/``null_count`` structs hold at least the stats of
        the top-level columns ``columns`` (others may be left out: planning reads a column
        absent from the structs as "unknown"). Must be cheap to repeat."""
        ...


@runtime_checkable
class PredicateScopedSource(Protocol):
    """A snapshot source that can leave out the stats of files the partition stage drops."""

    def files_for_predicate(self, predicate: ex.Predicate) -> pa.Table:
        """Return the file index (``files()``'s rows, in its order, every other column the
        same) whose stats and record counts are those of ``files()`` on every row whose
        partition values may satisfy ``predicate`` (bound); other rows' may be null (the
        partition stage drops those rows). Must raise as ``files()`` does."""
        ...


def stats_columns(predicate: ex.Predicate | None, snapshot: Snapshot) -> frozenset[str] | None:
    """The top-level data columns whose stats pruning ``predicate`` can use (None: all of
    them, for a name that is not a top-level column)."""
    if predicate is None:
        return frozenset()
    partitions = set(snapshot.partition_columns)
    names = set(snapshot.schema.names)
    wanted = [c for c in ex.columns_of(predicate) if c not in partitions]
    if any(c not in names for c in wanted):
        return None
    return frozenset(wanted)


def planning_index(snapshot: Snapshot, predicate: ex.Predicate | None) -> tuple[pa.Table, bool]:
    """The file index to prune with ``predicate`` (bound), and whether the rows it keeps
    carry every column's stats (pruning it then gives ``snapshot.files()``'s pruned rows).

    The snapshot's rows with the stats of the predicate's columns at least: all of
    ``snapshot.files()`` (True) when the source cannot leave stats out. A predicate-scoped
    index (True) leaves out only stats of rows the partition stage drops.
    """
    source = snapshot.source
    if predicate is not None and isinstance(source, PredicateScopedSource):
        return source.files_for_predicate(predicate), True
    columns = stats_columns(predicate, snapshot)
    if columns is None or not isinstance(source, PartialStatsSource):
        return snapshot.files(), True
    return source.files_with_stats(columns), False
