"""Action reconciliation: checkpoint adds + later commit actions -> the live files of a version.

Per the protocol, a logical file is identified by (path, deletion vector unique id) and the
newest add or remove of that key wins. This is done with Arrow and numpy over all actions at
once: dictionary-encode the keys of the reversed action list, take each key's first
occurrence (= its newest action), keep the ones that are adds.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakecore_delta.log.checkpoint import _ADD_CHILDREN
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
    return pc.binary_join_element_wise(paths, dv_unique_id(dv), _SEP)


def commit_adds(actions: pa.Table) -> tuple[pa.Table, np.ndarray]:
    """Split commit actions: the add rows (as an adds table) and an is-add mask of file actions.

    Returns the adds and, for every add-or-remove row in log order, whether it is an add.
    """
    add = actions.column("add").combine_chunks()
    remove = actions.column("remove").combine_chunks()
    is_add = pc.is_valid(pc.struct_field(add, "path"))
    is_remove = pc.is_valid(pc.struct_field(remove, "path"))
    file_rows = pc.or_(is_add, is_remove)
    adds = pa.Table.from_arrays(
        [pc.struct_field(add, c).filter(is_add) for c in _ADD_CHILDREN], names=list(_ADD_CHILDREN)
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
    add = actions.column("add").combine_chunks()
    remove = actions.column("remove").combine_chunks()
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
    commit_keys = file_keys(decode_paths(paths.filter(file_rows), root), dvs.filter(file_rows))
    new_adds = new_adds.set_column(0, "path", decode_paths(new_adds.column("path"), root))
    cp_keys = file_keys(cp.column("path").combine_chunks(), cp.column("deletionVector"))
    return _last_wins(cp, new_adds, cp_keys, commit_keys, is_add)


def _last_wins(
    cp: pa.Table, new_adds: pa.Table, cp_keys: pa.Array, commit_keys: pa.Array, is_add: Any
) -> pa.Table:
    n_cp = cp.num_rows
    keys = pa.concat_arrays([cp_keys, commit_keys])
    total = len(keys)
    codes = pc.dictionary_encode(keys[::-1]).indices.to_numpy(zero_copy_only=False)
    _, first = np.unique(codes, return_index=True)
    last = np.sort(total - 1 - first)
    all_is_add = np.concatenate([np.ones(n_cp, dtype=bool), is_add])
    last = last[all_is_add[last]]
    add_rank = np.cumsum(is_add) - 1
    rows = np.where(last < n_cp, last, n_cp + add_rank[np.maximum(last - n_cp, 0)])
    common = pa.schema([cp.schema.field(name) for name in new_adds.column_names])
    combined = pa.concat_tables([cp, new_adds.cast(common)], promote_options="default")
    if len(rows) == combined.num_rows:  # nothing superseded: rows is 0..n-1 (sorted, unique)
        return combined
    return combined.take(pa.array(rows, pa.int64()))
