"""Merging many file slices in one pass: the per-slice merge, with its fixed cost paid once.

A table of many small file groups (each with a few log records) would otherwise pay the
merge's ~30 Arrow calls per slice. Slices never share records, so they can merge together
when keys match within a slice only (``merge.merge_sorted``'s groups) and each slice's records keep
their own order. The one constraint across slices is the merge's walk over runs of data and
of delete records: records are renumbered so that the k-th run of every slice falls in the
k-th global run (data runs even, delete runs odd), so the walk takes as many steps as the
slice with the most alternations, not the sum over slices.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from lakecore_hudi.merge import SEQ, MergeSpec, merge_slice, merge_sorted

__all__ = ["merge_slices"]


def merge_slices(
    slices: Sequence[tuple[pa.Table, pa.Table, pa.Table]], spec: MergeSpec
) -> list[pa.Table]:
    """``merge.merge_slice`` of each ``(base, log_data, log_deletes)``, computed together.

    Every base must have the same schema (the slices' output schema). Returns the live rows
    of each slice, in order, exactly as ``merge_slice`` would.
    """
    if not slices:
        return []
    bases = [s[0] for s in slices]
    if all(s[1].num_rows == 0 and s[2].num_rows == 0 for s in slices):
        return bases
    base_groups = _repeat([b.num_rows for b in bases])
    data_groups = _repeat([s[1].num_rows for s in slices])
    delete_groups = _repeat([s[2].num_rows for s in slices])
    data = pa.concat_tables([s[1] for s in slices])
    deletes = pa.concat_tables([s[2] for s in slices], promote_options="permissive")
    data_seqs = _column(data, SEQ)
    delete_seqs = _column(deletes, SEQ)
    global_data, global_deletes = _aligned_seqs(data_groups, data_seqs, delete_groups, delete_seqs)
    order = np.argsort(global_data, kind="stable")
    data = _with_seq(data.take(pa.array(order)), global_data[order])
    data_groups = data_groups[order]
    deletes = _with_seq(deletes, global_deletes)
    base = pa.concat_tables(bases)
    result = merge_sorted(base, data, deletes, spec, (base_groups, data_groups, delete_groups))
    if result.repeated_base_keys:
        # Then every slice's base was deduplicated, also slices without data records, which
        # merge_slice leaves as they are: merge one by one instead (rare: Hudi inserts that
        # allow duplicates).
        return [merge_slice(*s, spec) for s in slices]
    merged, positions = result.rows, result.positions
    # Regroup the live rows by slice (stable: each slice keeps merge_slice's row order).
    group_of = np.concatenate([base_groups, data_groups])[positions]
    by_slice = np.argsort(group_of, kind="stable")
    if not np.array_equal(by_slice, np.arange(len(by_slice))):
        merged = merged.take(pa.array(by_slice))
    counts = np.bincount(group_of, minlength=len(slices))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    return [merged.slice(int(a), int(n)) for a, n in zip(starts, counts, strict=True)]


def _repeat(sizes: list[int]) -> np.ndarray:
    return np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)


def _column(table: pa.Table, name: str) -> np.ndarray:
    if table.num_rows == 0:
        return np.zeros(0, dtype=np.int64)
    return np.asarray(table.column(name).to_numpy(), dtype=np.int64)


def _with_seq(table: pa.Table, seqs: np.ndarray) -> pa.Table:
    index = table.schema.get_field_index(SEQ)
    return table.set_column(index, table.schema.field(index), pa.array(seqs, pa.int64()))


def _aligned_seqs(
    data_groups: np.ndarray,
    data_seqs: np.ndarray,
    delete_groups: np.ndarray,
    delete_seqs: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """New seqs (for data, for deletes): each slice's order kept, runs aligned by index."""
    groups = np.concatenate([data_groups, delete_groups])
    seqs = np.concatenate([data_seqs, delete_seqs])
    kinds = np.concatenate(
        [np.zeros(len(data_seqs), np.int64), np.ones(len(delete_seqs), np.int64)]
    )
    n = len(seqs)
    if n == 0:
        return data_seqs, delete_seqs
    # Within a slice: by seq, data before deletes of the same seq (merge_slice's rule).
    order = np.lexsort((kinds, seqs, groups))
    g, k = groups[order], kinds[order]
    new_group = np.r_[True, g[1:] != g[:-1]]
    run = np.cumsum(new_group | np.r_[True, k[1:] != k[:-1]])
    group_start = np.flatnonzero(new_group)
    which = np.cumsum(new_group) - 1
    run_in_slice = run - run[group_start][which]
    aligned = run_in_slice + k[group_start][which]  # data runs even, delete runs odd
    final = np.lexsort((np.arange(n), aligned))
    renumbered = np.empty(n, dtype=np.int64)
    renumbered[order[final]] = np.arange(n, dtype=np.int64)
    return renumbered[: len(data_seqs)], renumbered[len(data_seqs) :]
