"""Reading checkpoints: classic, multi-part and V2 (JSON or Parquet top-level file + sidecars)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import CorruptTableError
from lakecore.storage import Storage
from lakecore.storage.paths import contained_path, is_absolute
from lakecore_delta.log.checkpoint_parquet import (
    map_row_groups,
    read_first_rows,
    read_parquet,
    read_whole,
)
from lakecore_delta.log.commits import find_last_action, parse_actions, parse_file_actions
from lakecore_delta.log.files import SIDECAR_DIR, LogFileKind
from lakecore_delta.log.schemas import DV_TYPE, partition_values_type
from lakecore_delta.log.segment import Checkpoint
from lakecore_delta.log.validate import file_action_problem

_ADD_CHILDREN = ("path", "partitionValues", "size", "modificationTime", "stats", "deletionVector")
_ADD_READ = tuple(f"add.{c}" for c in (*_ADD_CHILDREN, "stats_parsed"))
"""The parts of a checkpoint's add column replay needs: its other fields (``tags``,
``dataChange``, row tracking, clustering ...) are never decoded (they cost more than half the
time and memory of reading the whole column)."""


@dataclass(frozen=True, slots=True)
class CheckpointActions:
    """The non-file actions of a checkpoint (read first, for gating) and where its adds are."""

    checkpoint: Checkpoint
    protocol: dict[str, Any] | None
    metadata: dict[str, Any] | None
    txns: dict[str, int]
    add_sources: tuple[str, ...]
    """Parquet files holding the checkpoint's add actions (parts or sidecars)."""
    json_adds: pa.Table | None = None
    """Add actions inside a JSON V2 top-level file, already parsed."""


def read_checkpoint_actions(storage: Storage, checkpoint: Checkpoint) -> CheckpointActions:
    """Read the protocol, metadata and app transactions of ``checkpoint``.

    Raises ``CorruptTableError`` naming the file when a part is missing or unreadable.
    """
    top = checkpoint.files[0]
    if top.kind is LogFileKind.V2_CHECKPOINT and top.path.endswith(".json"):
        return _read_v2_json(storage, checkpoint)
    protocol = metadata = None
    txns: dict[str, int] = {}
    sidecars: list[str] = []
    for f in checkpoint.files:
        table = read_parquet(storage, f.path, ("protocol", "txn", "sidecar"))
        protocol = protocol or _first_struct(table, "protocol")
        if metadata is None:
            metadata = _first_struct(read_first_rows(storage, f.path, "metaData"), "metaData")
        txns.update(_txns(table))
        if "sidecar" in table.column_names:
            sidecars += _sidecar_paths(table.column("sidecar").to_pylist(), storage.root, f.path)
    sources = tuple(f.path for f in checkpoint.files) + tuple(sidecars)
    return CheckpointActions(checkpoint, protocol, metadata, txns, sources)


def _read_v2_json(storage: Storage, checkpoint: Checkpoint) -> CheckpointActions:
    top = checkpoint.files[0]
    raw = read_whole(storage, top.path)
    actions = parse_actions(raw, top)
    sidecars = _sidecar_paths(
        [a["sidecar"] for a in actions if "sidecar" in a], storage.root, top.path
    )
    txns = {
        a["txn"]["appId"]: int(a["txn"]["version"])
        for a in actions
        if isinstance(a.get("txn"), dict)
    }
    json_adds = None
    if any("add" in a for a in actions):
        pv = (find_last_action([raw], [top], "metaData") or {}).get("partitionColumns") or []
        json_adds = _adds_from_commit_table(parse_file_actions([raw], [top], pv), pv)
    return CheckpointActions(
        checkpoint,
        find_last_action([raw], [top], "protocol"),
        find_last_action([raw], [top], "metaData"),
        txns,
        tuple(sidecars),
        json_adds,
    )


def _adds_from_commit_table(table: pa.Table, physical_partition_columns: Sequence[str]) -> pa.Table:
    add = table.column("add")
    mask = pc.is_valid(add)
    return pa.Table.from_arrays(
        [pc.struct_field(add, c).filter(mask) for c in _ADD_CHILDREN], names=list(_ADD_CHILDREN)
    )


def read_checkpoint_adds(
    storage: Storage, actions: CheckpointActions, physical_partition_columns: Sequence[str]
) -> pa.Table:
    """Return the checkpoint's add actions as a table with the columns of ``_ADD_CHILDREN``.

    Partition values come back as a struct of strings by physical column name.
    """
    pieces: list[pa.Table] = []
    for p in actions.add_sources:
        pieces += map_row_groups(
            storage,
            p,
            _ADD_READ,
            partial(_adds_of, path=p, physical_partition_columns=physical_partition_columns),
        )
    if actions.json_adds is not None:
        pieces.append(actions.json_adds)
    pieces = [p for p in pieces if p.num_rows]
    if not pieces:
        return _empty_adds(physical_partition_columns)
    return pa.concat_tables(pieces, promote_options="permissive") if len(pieces) > 1 else pieces[0]


def _empty_adds(physical_partition_columns: Sequence[str]) -> pa.Table:
    return pa.schema(
        [
            ("path", pa.string()),
            ("partitionValues", partition_values_type(physical_partition_columns)),
            ("size", pa.int64()),
            ("modificationTime", pa.int64()),
            ("stats", pa.string()),
            ("deletionVector", DV_TYPE),
        ]
    ).empty_table()


def _adds_of(table: pa.Table, path: str, physical_partition_columns: Sequence[str]) -> pa.Table:
    if "add" not in table.column_names:
        return _empty_adds(physical_partition_columns)
    problem = file_action_problem(table)  # an add without a path would be skipped below
    if problem is not None:
        raise CorruptTableError(f"{path}: checkpoint holds {problem}")
    # Chunk by chunk, slicing around the few non-add rows: no copy of the (large) stats text.
    pieces = [
        _adds_of_chunk(run, path, physical_partition_columns)
        for chunk in table.column("add").chunks
        for run in add_runs(chunk)
    ]
    if not pieces:
        return _empty_adds(physical_partition_columns)
    return pa.concat_tables(pieces) if len(pieces) > 1 else pieces[0]


_MAX_SLICES = 64


def add_runs(chunk: pa.StructArray) -> list[pa.StructArray]:
    """The rows of ``chunk`` (an ``add`` column's chunk) that are add actions (a path is set),
    as zero-copy slices where that is cheap (few runs), else one filtered copy."""
    valid = pc.is_valid(pc.struct_field(chunk, "path"))
    invalid = len(chunk) - pc.sum(valid).as_py() if len(chunk) else 0
    if invalid == 0:
        return [chunk] if len(chunk) else []
    if invalid == len(chunk):
        return []
    if invalid > _MAX_SLICES:
        return [chunk.filter(valid)]
    keep = np.concatenate(([False], valid.to_numpy(zero_copy_only=False), [False]))
    edges = np.flatnonzero(np.diff(keep.astype(np.int8)))  # run starts and ends, alternating
    return [chunk.slice(int(a), int(b - a)) for a, b in zip(edges[::2], edges[1::2], strict=True)]


def _partition_strings(pmap: pa.MapArray, columns: Sequence[str]) -> list[pa.Array]:
    """Partition values by column from a map column; fast when every map has the same keys."""
    k, n = len(columns), len(pmap)
    offsets = pmap.offsets.to_numpy()
    start, entries = int(offsets[0]), int(offsets[-1] - offsets[0])
    if pmap.null_count == 0 and entries == n * k and bool(np.all(np.diff(offsets) == k)):
        keys, values = pmap.keys.slice(start, entries), pmap.items.slice(start, entries)
        out = []
        for i, column in enumerate(columns):
            idx = pa.array(np.arange(i, n * k, k)) if k > 1 else None
            col_keys = keys if idx is None else keys.take(idx)
            if not pc.all(pc.equal(col_keys, column)).as_py():
                break
            out.append(values if idx is None else values.take(idx))
        else:
            return out
    return [pc.map_lookup(pmap, pa.scalar(c), "first") for c in columns]


def _adds_of_chunk(
    add: pa.StructArray, path: str, physical_partition_columns: Sequence[str]
) -> pa.Table:
    """The add actions of one chunk in the ``_ADD_CHILDREN`` layout.

    Raises:
        CorruptTableError: an add field has a type the protocol does not give it (a
            ``partitionValues`` that is not a map, a ``deletionVector`` that is not a struct,
            a ``size`` that is not a number ...); names the checkpoint file.
    """
    try:
        return _adds_layout(add, path, physical_partition_columns)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, KeyError) as exc:
        raise CorruptTableError(f"{path}: unexpected add action layout: {exc}") from exc


def _adds_layout(
    add: pa.StructArray, path: str, physical_partition_columns: Sequence[str]
) -> pa.Table:
    n = len(add)
    if not pa.types.is_struct(add.type):
        raise CorruptTableError(f"{path}: the add column is {add.type}, not a struct")
    names = {add.type.field(i).name for i in range(add.type.num_fields)}

    def child(name: str, dtype: pa.DataType) -> pa.Array:
        # A column of nulls only may be written with Arrow's null type: read it as absent.
        if name not in names or pa.types.is_null(add.type.field(name).type):
            return pa.nulls(n, dtype)
        return pc.struct_field(add, name)

    pv_type = partition_values_type(physical_partition_columns)
    if "partitionValues" in names and not pa.types.is_map(add.type.field("partitionValues").type):
        raise CorruptTableError(
            f"{path}: add.partitionValues is {add.type.field('partitionValues').type}, not a map"
        )
    if physical_partition_columns and "partitionValues" in names:
        pvs = pa.StructArray.from_arrays(
            _partition_strings(pc.struct_field(add, "partitionValues"), physical_partition_columns),
            fields=list(pv_type),
        )
    else:
        pvs = pa.nulls(n, pv_type)
    dv = child("deletionVector", DV_TYPE)
    if not pa.types.is_struct(dv.type):
        raise CorruptTableError(f"{path}: add.deletionVector is {dv.type}, not a struct")
    if dv.type != DV_TYPE:
        dv = pa.StructArray.from_arrays(
            [pc.struct_field(dv, f.name).cast(f.type) for f in DV_TYPE],
            fields=list(DV_TYPE),
            mask=pc.is_null(dv),
        )
    try:
        table = pa.Table.from_arrays(
            [
                child("path", pa.string()),
                pvs,
                child("size", pa.int64()).cast(pa.int64()),
                child("modificationTime", pa.int64()).cast(pa.int64()),
                child("stats", pa.string()),
                dv,
            ],
            names=list(_ADD_CHILDREN),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise CorruptTableError(f"{path}: unexpected add action layout: {exc}") from exc
    if "stats_parsed" in names:
        # Writers may keep stats only as a struct (delta.checkpoint.writeStatsAsJson=false).
        table = table.append_column("stats_parsed", pc.struct_field(add, "stats_parsed"))
    return table


def _first_struct(table: pa.Table, name: str) -> dict[str, Any] | None:
    """The first non-null ``name`` action of ``table`` as the log's JSON would hold it.

    Parquet maps (``configuration``, ``format.options``) become objects by their Arrow type,
    so an empty map is ``{}`` (never ``[]``, which other readers refuse); absent optional
    fields (nulls) are left out, as the JSON log leaves them out. Raises
    ``CorruptTableError`` for a map with duplicate keys.
    """
    if name not in table.column_names:
        return None
    col = table.column(name)
    if pa.types.is_null(col.type):
        return None
    if not pa.types.is_struct(col.type):
        raise CorruptTableError(f"checkpoint {name} column is {col.type}, not a struct")
    col = col.filter(pc.is_valid(col))
    if not len(col):
        return None
    # By type, not by the Python value: an empty map and an empty list look the same.
    # (pyarrow's maps_as_pydicts would do this, but only from pyarrow 20.)
    row = _as_json(col.slice(0, 1).to_pylist()[0], col.type, name)
    return {k: v for k, v in row.items() if v is not None}


def _as_json(value: Any, t: pa.DataType, where: str) -> Any:
    """``value`` (from ``to_pylist`` of type ``t``) with every map as a dict, recursively."""
    if value is None:
        return None
    if pa.types.is_map(t):
        out: dict[Any, Any] = {}
        for key, item in value:
            if key in out:
                raise CorruptTableError(f"checkpoint {where} has the map key {key!r} twice")
            out[key] = _as_json(item, t.item_type, where)
        return out
    if pa.types.is_struct(t):
        return {
            t.field(i).name: _as_json(value.get(t.field(i).name), t.field(i).type, where)
            for i in range(t.num_fields)
        }
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return [_as_json(v, t.value_type, where) for v in value]
    return value


def _txns(table: pa.Table) -> dict[str, int]:
    if "txn" not in table.column_names:
        return {}
    col = table.column("txn")
    if pa.types.is_null(col.type):
        return {}
    if not pa.types.is_struct(col.type):
        raise CorruptTableError(f"checkpoint txn column is {col.type}, not a struct")
    out: dict[str, int] = {}
    for row in col.filter(pc.is_valid(col)).to_pylist():
        app, version = row.get("appId"), row.get("version")
        if not isinstance(app, str) or not isinstance(version, int) or isinstance(version, bool):
            raise CorruptTableError(
                f"checkpoint txn action {row!r} needs a string appId and an integer version"
            )
        out[app] = version
    return out


def _sidecar_paths(sidecars: Sequence[Any], root: str, source: str) -> list[str]:
    """The files ``sidecars`` (sidecar actions) name, checked as every log path is
    (``contained_path``): a relative one lives in ``_delta_log/_sidecars/`` and must stay in
    the table; an absolute one is a read-only reference. Raises ``CorruptTableError`` naming
    ``source`` for a path that escapes the root or names another machine."""
    out = []
    for s in sidecars:
        if not s or not s.get("path"):
            continue
        raw = str(s["path"])  # URI-encoded
        if is_absolute(raw):
            out.append(contained_path(unquote(raw), root, source=source, allow_outside=True))
        else:
            out.append(contained_path(f"{SIDECAR_DIR}/{unquote(raw)}", root, source=source))
    return out
