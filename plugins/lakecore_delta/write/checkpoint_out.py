"""Writing classic single-file checkpoints and ``_last_checkpoint``.

The checkpoint file is written before ``_last_checkpoint`` points at it, so a crash between
the two leaves a valid (older) hint; readers treat the hint as a hint only.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakecore.errors import LakecoreError
from lakecore.model.schema import physical_name
from lakecore.storage import Storage
from lakecore_delta.log.files import LAST_CHECKPOINT, LOG_DIR
from lakecore_delta.log.schemas import DV_TYPE
from lakecore_delta.partitions import typed_partition_values
from lakecore_delta.state import DeltaState, load_state
from lakecore_delta.stats import add_stats, stats_from_struct
from lakecore_delta.write.log_out import encode_path, python_safe_bounds
from lakecore_delta.write.stats_out import render_stats_json

log = logging.getLogger(__name__)
CHECKPOINT_INTERVAL = "delta.checkpointInterval"
DEFAULT_INTERVAL = 10

_MAP = pa.map_(pa.string(), pa.string())
PROTOCOL_TYPE = pa.struct(
    [
        ("minReaderVersion", pa.int32()),
        ("minWriterVersion", pa.int32()),
        ("readerFeatures", pa.list_(pa.string())),
        ("writerFeatures", pa.list_(pa.string())),
    ]
)
METADATA_TYPE = pa.struct(
    [
        ("id", pa.string()),
        ("name", pa.string()),
        ("description", pa.string()),
        ("format", pa.struct([("provider", pa.string()), ("options", _MAP)])),
        ("schemaString", pa.string()),
        ("partitionColumns", pa.list_(pa.string())),
        ("configuration", _MAP),
        ("createdTime", pa.int64()),
    ]
)
TXN_TYPE = pa.struct([("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())])
ADD_TYPE = pa.struct(
    [
        ("path", pa.string()),
        ("partitionValues", _MAP),
        ("size", pa.int64()),
        ("modificationTime", pa.int64()),
        ("dataChange", pa.bool_()),
        ("stats", pa.string()),
        ("deletionVector", DV_TYPE),
    ]
)
CHECKPOINT_SCHEMA = pa.schema(
    [("txn", TXN_TYPE), ("add", ADD_TYPE), ("metaData", METADATA_TYPE), ("protocol", PROTOCOL_TYPE)]
)


def checkpoint_path(version: int) -> str:
    """The classic single-file checkpoint of ``version``."""
    return f"{LOG_DIR}/{version:020d}.checkpoint.parquet"


def _map_of(values: dict[str, Any] | None) -> list[tuple[str, str]]:
    return [(k, v) for k, v in (values or {}).items()]


def _partition_map(pvs: pa.Array | pa.ChunkedArray, n: int) -> pa.Array:
    if isinstance(pvs, pa.ChunkedArray):
        pvs = pvs.combine_chunks() if pvs.num_chunks else pa.nulls(0, pvs.type)
    k = pvs.type.num_fields
    if k == 0:
        return pa.MapArray.from_arrays(
            pa.array(np.zeros(n + 1, np.int32)),
            pa.array([], pa.string()),
            pa.array([], pa.string()),
        )
    names = [pvs.type.field(i).name for i in range(k)]
    children = [pc.struct_field(pvs, [i]) for i in range(k)]
    order = np.arange(n * k).reshape(k, n).T.ravel()  # interleave: row-major entries
    items = pa.concat_arrays(children).take(pa.array(order))
    keys = pa.array(np.tile(np.array(names, dtype=object), n).tolist(), pa.string())
    offsets = pa.array(np.arange(0, n * k + 1, k, dtype=np.int32))
    return pa.MapArray.from_arrays(offsets, keys, items)


def _stats_text(adds: pa.Table, fields: list[pa.Field]) -> pa.Array:
    """The adds' ``stats`` JSON: as the log holds it, and rendered from ``stats_parsed`` for
    adds that have only the struct (a checkpoint written with
    ``delta.checkpoint.writeStatsAsJson=false``), so that no add loses its statistics when the
    table's next checkpoint keeps them as text only."""
    text = adds.column("stats").combine_chunks().cast(pa.string())
    if "stats_parsed" not in adds.column_names:
        return text
    parsed = adds.column("stats_parsed").combine_chunks()
    missing = pc.and_(pc.is_null(text), pc.is_valid(parsed))
    if not pc.any(missing).as_py():
        return text
    rows = pa.array(np.flatnonzero(missing.to_numpy(zero_copy_only=False)))
    only = parsed.take(rows)
    typed = python_safe_bounds(stats_from_struct(only, fields)).to_pylist()
    tight: list[Any] = [None] * len(only)
    if only.type.get_field_index("tightBounds") >= 0:
        tight = pc.struct_field(only, "tightBounds").to_pylist()
    # Bounds of a file with a deletion vector may describe deleted rows: never claim them tight.
    vectors = pc.is_valid(
        pc.struct_field(adds.column("deletionVector").combine_chunks().take(rows), "storageType")
    )
    tight = [False if dv else t for t, dv in zip(tight, vectors.to_pylist(), strict=True)]
    rendered = [
        render_stats_json(s["numRecords"], s["min"], s["max"], s["null_count"], fields, t)
        for s, t in zip(typed, tight, strict=True)
    ]
    return pc.replace_with_mask(text, missing, pa.array(rendered, pa.string()))


def checkpoint_table(state: DeltaState) -> pa.Table:
    """The rows of the checkpoint of ``state``: protocol, metadata, txns, then every add."""
    adds = state.adds
    n = adds.num_rows
    paths = pa.array([encode_path(p) for p in adds.column("path").to_pylist()], pa.string())
    children = [
        paths,
        _partition_map(adds.column("partitionValues"), n),
        adds.column("size").combine_chunks(),
        adds.column("modificationTime").combine_chunks(),
        pa.array(np.zeros(n, dtype=bool)),
        _stats_text(adds, state.data_fields()),
        adds.column("deletionVector").combine_chunks().cast(DV_TYPE),
    ]
    fields = list(ADD_TYPE)
    if _enabled(state, WRITE_STATS_AS_STRUCT):
        for name, array in parsed_columns(state):
            children.append(array)
            fields.append(pa.field(name, array.type))
    add = pa.StructArray.from_arrays(children, fields=fields)
    schema = pa.schema([*(f for f in CHECKPOINT_SCHEMA if f.name != "add"), ("add", add.type)])
    schema = pa.schema([schema.field(n) for n in CHECKPOINT_SCHEMA.names])
    meta = dict(state.metadata)
    meta_row = {
        "id": meta.get("id"),
        "name": meta.get("name"),
        "description": meta.get("description"),
        "format": {
            "provider": (meta.get("format") or {}).get("provider", "parquet"),
            "options": _map_of((meta.get("format") or {}).get("options")),
        },
        "schemaString": meta.get("schemaString"),
        "partitionColumns": list(meta.get("partitionColumns") or []),
        "configuration": _map_of(meta.get("configuration")),
        "createdTime": meta.get("createdTime"),
    }
    head = pa.table(
        {
            "txn": pa.array(
                [None, None]
                + [{"appId": a, "version": v, "lastUpdated": None} for a, v in state.txns.items()],
                TXN_TYPE,
            ),
            "add": pa.nulls(2 + len(state.txns), add.type),
            "metaData": pa.array([meta_row, None] + [None] * len(state.txns), METADATA_TYPE),
            "protocol": pa.array([None, state.protocol] + [None] * len(state.txns), PROTOCOL_TYPE),
        },
        schema=schema,
    )
    body = pa.table(
        {
            "txn": pa.nulls(n, TXN_TYPE),
            "add": add,
            "metaData": pa.nulls(n, METADATA_TYPE),
            "protocol": pa.nulls(n, PROTOCOL_TYPE),
        },
        schema=schema,
    )
    return pa.concat_tables([head, body])


WRITE_STATS_AS_STRUCT = "delta.checkpoint.writeStatsAsStruct"
MULTIPART_ROWS = 1_000_000
"""Checkpoints with more rows than this are written in parts of at most this many rows."""


def _enabled(state: DeltaState, key: str) -> bool:
    return str(state.configuration.get(key, "false")).lower() == "true"


def parsed_columns(state: DeltaState) -> list[tuple[str, pa.Array]]:
    """``stats_parsed`` and ``partitionValues_parsed`` of the adds (physical names, typed)."""
    adds = state.adds
    out: list[tuple[str, pa.Array]] = []
    fields = state.data_fields()
    stats = add_stats(adds, fields)
    parts = {
        "numRecords": stats.column("numRecords").combine_chunks(),
        "minValues": _physical(stats.column("min").combine_chunks(), fields),
        "maxValues": _physical(stats.column("max").combine_chunks(), fields),
        "nullCount": _physical(stats.column("null_count").combine_chunks(), fields),
    }
    out.append(("stats_parsed", pa.StructArray.from_arrays(list(parts.values()), list(parts))))
    part_fields = state.partition_fields()
    if part_fields:
        typed = typed_partition_values(adds.column("partitionValues"), part_fields)
        out.append(("partitionValues_parsed", _physical(typed, part_fields)))
    return out


def _physical(array: pa.Array, fields: Sequence[pa.Field]) -> pa.Array:
    """A struct of values by logical column name (``fields``) renamed to physical names, at
    every depth (the protocol names ``stats_parsed`` columns physically, nested ones too)."""
    t = array.type
    if not pa.types.is_struct(t) or t.num_fields == 0:
        return array
    by_name = {f.name: f for f in fields}
    names, children = [], []
    for i in range(t.num_fields):
        child, field = pc.struct_field(array, [i]), by_name.get(t.field(i).name)
        if field is not None and pa.types.is_struct(field.type):
            child = _physical(child, list(field.type))
        names.append(physical_name(field) if field is not None else t.field(i).name)
        children.append(child)
    return pa.StructArray.from_arrays(
        children, names=names, mask=array.is_null() if array.null_count else None
    )


def _parts(table: pa.Table, version: int, part_rows: int) -> list[tuple[str, pa.Table]]:
    if table.num_rows <= part_rows:
        return [(checkpoint_path(version), table)]
    count = -(-table.num_rows // part_rows)
    return [
        (
            f"{LOG_DIR}/{version:020d}.checkpoint.{i + 1:010d}.{count:010d}.parquet",
            table.slice(i * part_rows, part_rows),
        )
        for i in range(count)
    ]


def write_checkpoint(storage: Storage, state: DeltaState, part_rows: int = MULTIPART_ROWS) -> None:
    """Write the checkpoint of ``state`` (in parts above ``part_rows`` rows), then point
    ``_last_checkpoint`` at it. Every part is written before the hint."""
    table = checkpoint_table(state)
    parts = _parts(table, state.version, part_rows)
    for path, part in parts:
        buf = io.BytesIO()
        pq.write_table(part, buf, compression="snappy")
        storage.put(path, buf.getvalue())
    hint: dict[str, int] = {
        "version": state.version,
        "size": table.num_rows,
        "numOfAddFiles": state.adds.num_rows,
    }
    if len(parts) > 1:
        hint["parts"] = len(parts)
    storage.put(LAST_CHECKPOINT, json.dumps(hint).encode())


def _due(configuration: Mapping[str, str], version: int) -> bool:
    interval = int(configuration.get(CHECKPOINT_INTERVAL, DEFAULT_INTERVAL))
    return interval > 0 and version > 0 and version % interval == 0


def maybe_checkpoint(
    storage: Storage, version: int, configuration: Mapping[str, str] | None = None
) -> bool:
    """Checkpoint ``version`` when the table's interval says so; never fails the commit.

    ``configuration`` is the table configuration as of ``version`` when the caller knows it
    (the committing transaction does, unless it changed properties): commits that are not due
    then cost no log replay. Tables with the v2Checkpoint feature are not checkpointed by
    lakecore (checkpoints are optional; it writes only the classic kind).
    """
    try:
        if configuration is not None and not _due(configuration, version):
            return False
        state = load_state(storage, version)
        if not _due(state.configuration, version):
            return False
        if "v2Checkpoint" in (state.protocol.get("writerFeatures") or ()):
            return False
        write_checkpoint(storage, state)
        return True
    except (LakecoreError, OSError, ValueError) as exc:
        log.warning("checkpoint of version %s failed (the commit stands): %s", version, exc)
        return False
