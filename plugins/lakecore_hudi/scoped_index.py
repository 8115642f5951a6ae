"""The file index a scan plans with: statistics only for the partitions its predicate keeps.

Planning prunes in two stages (``lakecore.planning.scan.prune``): partition values first,
then statistics of the survivors. Statistics of a slice the first stage drops are never
looked at, so loading them is waste that grows with the table: the ``column_stats``
partition of a table with many partitions is read once per scan. This index runs the first
stage on the slices' partition values, then loads statistics (``column_stats`` records via
the HFile block index, or footers) for the kept partitions only (``file_index.build_file_index``
with ``partitions``); the other rows keep their partition values and null statistics, which
the planner's own first stage drops again.
"""

from __future__ import annotations

import pyarrow as pa

from lakecore.expr import tree as ex
from lakecore.planning.bounds import FileBounds
from lakecore.planning.pruning import may_be
from lakecore.planning.tasks import ScanContext
from lakecore.storage import Storage
from lakecore_hudi.file_index import build_file_index, indexed_slices
from lakecore_hudi.state import HudiState

__all__ = ["kept_partitions", "partition_index"]


def partition_index(storage: Storage, state: HudiState) -> pa.Table:
    """The file index without statistics (null): what the partition stage needs."""
    return build_file_index(storage, state, partitions=frozenset())


def kept_partitions(
    skeleton: pa.Table, state: HudiState, predicate: ex.Predicate, context: ScanContext
) -> frozenset[str] | None:
    """The partition paths of the slices whose partition values may satisfy ``predicate``
    (bound), as the planner's partition stage decides on ``skeleton`` (``partition_index``
    of ``state``); None when that stage keeps every slice (nothing to leave out)."""
    bounds = FileBounds(
        skeleton,
        context.schema,
        context.partition_columns,
        context.stats_precision,
        use_stats=False,
    )
    mask = may_be(predicate, True, bounds)
    slices = indexed_slices(state)
    if mask is True:
        return None
    if mask is False:
        return frozenset()
    flags = mask.to_pylist()
    kept = frozenset(s.partition_path for s, f in zip(slices, flags, strict=True) if f)
    if len(kept) == len({s.partition_path for s in slices}):
        return None
    return kept
