"""Action reconciliation: checkpoint adds + later commit actions -> the live files of a version.

Per the protocol, a logical file is identified by (path, deletion vector unique id): a remove
cancels the add of its exact key. The protocol also allows at most one live add per path (a
commit that adds a path with a new DV must remove the old (path, DV) key), so the newest add
of a path replaces every older add of that path. The second rule gives the same files as the
first on every valid log, and keeps them right where a log compaction file (or checkpoint)
has dropped the expired tombstone of the old key (Delta Kernel's compaction writer drops
tombstones older than the retention period): the file is not read twice, once without its DV.

A checkpoint's adds are taken as reconciled, as Delta Kernel and delta-rs take them (checking
would cost a hash of every path on each open): a path a damaged checkpoint holds twice is read
twice, at its version and after, unless a later commit adds or removes it.

This is done with Arrow and numpy over all actions at once: an add is live when it is the
last add of its path and no remove of its exact key comes after it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from lakecore_delta.log.checkpoint import _ADD_CHILDREN, add_runs
from lakecore_delta.paths import decode_paths

_SEP = "\x1f"


def dv_unique_id(dv: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The protocol's DV unique id (storageType + pathOrInlineDv [+ '@' + offset]); '' if none."""
    st = pc.fill_null(pc.struct_field(dv, "storageType"), "")
    pod = pc.fill_null(pc.struct_field(dv, "pathOrInlineDv"), "")
    offset = pc.struct_field(dv, "offset").cast(pa.string())
    at = pc.if_else(pc.is_valid(offset), pc.binary_join_element_wise("@", offset, ""), "")
    return pc.binary_join_element_wise(st, pod, at, "")


def file_keys(paths: pa.Array, dv: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Return the reconciliation key of each file action (decoded path + DV unique id)."""
    if isinstance(dv, pa.ChunkedArray):
        dv = dv.combine_chunks() if dv.num_chunks else pa.array([], dv.type)
    if isinstance(paths, pa.ChunkedArray):
        paths = paths.combine_chunks() if paths.num_chunks else pa.array([], pa.string())
    # The path's length first: a path and a DV id may both hold the separator, and without
    # it ("a\x1fb", "c") and ("a", "b\x1fc") would be one key.
    length = pc.cast(pc.binary_length(paths), pa.string())
    return pc.binary_join_element_wise(length, paths, dv_unique_id(dv), _SEP)


def commit_adds(actions: pa.Table) -> tuple[pa.Table, np.ndarray]:
    """Split commit actions: the add rows (as an adds table) and an is-add mask of file actions.

    Returns the adds and, for every add-or-remove row in log order, whether it is an add.
    """
    add, remove = actions.column("add"), actions.column("remove")
    is_add = pc.is_valid(pc.struct_field(add, "path"))
    is_remove = pc.is_valid(pc.struct_field(remove, "path"))
    file_rows = pc.or_(is_add, is_remove)
    # Chunk by chunk, as slices around the few other actions (commitInfo, protocol ...): no
    # copy of the (large) stats text while the parsed commits are still alive.
    runs = [run for chunk in add.chunks for run in add_runs(chunk)]
    adds = pa.Table.from_arrays(
        [
            pa.chunked_array([pc.struct_field(run, c) for run in runs], add.type.field(c).type)
            for c in _ADD_CHILDREN
        ],
        names=list(_ADD_CHILDREN),
    )
    return adds, is_add.filter(file_rows).to_numpy(zero_copy_only=False)


def reconcile(
    checkpoint_adds: pa.Table, actions: pa.Table, root: str, base_decoded: bool = False
) -> pa.Table:
    """Return the live add actions: ``checkpoint_adds`` then ``actions`` (commits, log order).

    Paths in the result are decoded and relative to ``root`` where possible.
    ``base_decoded`` says ``checkpoint_adds`` already are (a previous reconciled state).
    """
    cp = (
        checkpoint_adds
        if base_decoded
        else checkpoint_adds.set_column(
            0, "path", decode_paths(checkpoint_adds.column("path"), root)
        )
    )
    if actions.num_rows == 0:
        return cp
    new_adds, is_add = commit_adds(actions)
    add, remove = actions.column("add"), actions.column("remove")
    file_rows = pc.or_(
        pc.is_valid(pc.struct_field(add, "path")), pc.is_valid(pc.struct_field(remove, "path"))
    )
    if not pc.any(file_rows).as_py():
        return cp
    paths = pc.coalesce(pc.struct_field(add, "path"), pc.struct_field(remove, "path"))
    dvs = pc.if_else(
        pc.is_valid(pc.struct_field(add, "path")),
        pc.struct_field(add, "deletionVector"),
        pc.struct_field(remove, "deletionVector"),
    )
    commit_paths = _one_array(decode_paths(paths.filter(file_rows), root))
    # The adds' paths are among the file actions' paths, already decoded.
    new_adds = new_adds.set_column(0, "path", commit_paths.filter(pa.array(is_add)))
    cp_paths = _one_array(cp.column("path"))

    def keys() -> pa.Array:
        return pa.concat_arrays(
            [
                file_keys(cp_paths, cp.column("deletionVector")),
                file_keys(commit_paths, dvs.filter(file_rows)),
            ]
        )

    live = _live_rows(
        pa.concat_arrays([cp_paths.cast(pa.string()), commit_paths]),
        keys,
        np.concatenate([np.ones(cp.num_rows, dtype=bool), is_add]),
        cp.num_rows,
    )
    n_cp = cp.num_rows
    add_rank = np.cumsum(is_add) - 1
    rows = np.where(live < n_cp, live, n_cp + add_rank[np.maximum(live - n_cp, 0)])
    common = pa.schema([cp.schema.field(name) for name in new_adds.column_names])
    combined = pa.concat_tables([cp, new_adds.cast(common)], promote_options="default")
    if len(rows) == combined.num_rows:  # nothing superseded: rows is 0..n-1 (sorted, unique)
        return combined
    return combined.take(pa.array(rows, pa.int64()))


def _live_rows(
    paths: pa.Array, keys: Callable[[], pa.Array], is_add: npt.NDArray[np.bool_], n_base: int
) -> Any:
    """Indexes (ascending) of the live adds among actions in log order.

    The first ``n_base`` rows are the adds of a checkpoint (or of a reconciled state), taken
    as reconciled: one is live unless a later commit adds its path or removes its exact key.
    A commit's add is live when it is the last add of its path and no remove of its exact
    key (path + DV id, from ``keys``: built only when there are removes) comes after it.
    """
    rows = np.arange(len(paths), dtype=np.int64)
    path_codes = _codes(paths)
    commit_adds = rows[n_base:][is_add[n_base:]]
    added = np.zeros(int(path_codes.max()) + 1 if len(path_codes) else 0, dtype=bool)
    added[path_codes[commit_adds]] = True
    base_live = rows[:n_base][~added[path_codes[:n_base]]]
    last_adds = np.concatenate(
        [base_live, np.sort(_last_of_each(path_codes[commit_adds], commit_adds))]
    )
    remove_rows = rows[~is_add]
    if not len(remove_rows):
        return last_adds
    key_codes = _codes(keys())
    last_remove = np.full(int(key_codes.max()) + 1, -1, dtype=np.int64)
    removed_codes = key_codes[remove_rows]
    last_remove[np.unique(removed_codes)] = _last_of_each(removed_codes, remove_rows)
    return last_adds[last_remove[key_codes[last_adds]] < last_adds]


def _one_array(column: pa.ChunkedArray) -> pa.Array:
    if column.num_chunks == 1:
        return column.chunk(0)  # combine_chunks copies even a single chunk
    return column.combine_chunks() if column.num_chunks else pa.array([], column.type)


def _codes(values: pa.Array) -> npt.NDArray[np.int64]:
    indices = pc.dictionary_encode(values).indices
    return np.asarray(indices.to_numpy(zero_copy_only=False), dtype=np.int64)


def _last_of_each(codes: npt.NDArray[np.int64], rows: npt.NDArray[np.int64]) -> Any:
    """For each distinct code (in ``np.unique`` order), the last of ``rows`` (ascending) with it."""
    _, first_from_end = np.unique(codes[::-1], return_index=True)
    return rows[len(rows) - 1 - first_from_end]
