"""Writing classic single-file checkpoints and ``_last_checkpoint``.

The checkpoint file is written before ``_last_checkpoint`` points at it, so a crash between
the two leaves a valid (older) hint; readers treat the hint as a hint only.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakecore.errors import LakecoreError
from lakecore.storage import Storage
from lakecore_delta.log.files import LAST_CHECKPOINT, LOG_DIR
from lakecore_delta.log.schemas import DV_TYPE
from lakecore_delta.state import DeltaState, load_state
from lakecore_delta.write.log_out import encode_path

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


def checkpoint_table(state: DeltaState) -> pa.Table:
    """The rows of the checkpoint of ``state``: protocol, metadata, txns, then every add."""
    adds = state.adds
    n = adds.num_rows
    paths = pa.array([encode_path(p) for p in adds.column("path").to_pylist()], pa.string())
    add = pa.StructArray.from_arrays(
        [
            paths,
            _partition_map(adds.column("partitionValues"), n),
            adds.column("size").combine_chunks(),
            adds.column("modificationTime").combine_chunks(),
            pa.array(np.zeros(n, dtype=bool)),
            adds.column("stats").combine_chunks().cast(pa.string()),
            adds.column("deletionVector").combine_chunks().cast(DV_TYPE),
        ],
        fields=list(ADD_TYPE),
    )
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
            "add": pa.nulls(2 + len(state.txns), ADD_TYPE),
            "metaData": pa.array([meta_row, None] + [None] * len(state.txns), METADATA_TYPE),
            "protocol": pa.array([None, state.protocol] + [None] * len(state.txns), PROTOCOL_TYPE),
        },
        schema=CHECKPOINT_SCHEMA,
    )
    body = pa.table(
        {
            "txn": pa.nulls(n, TXN_TYPE),
            "add": add,
            "metaData": pa.nulls(n, METADATA_TYPE),
            "protocol": pa.nulls(n, PROTOCOL_TYPE),
        },
        schema=CHECKPOINT_SCHEMA,
    )
    return pa.concat_tables([head, body])


def write_checkpoint(storage: Storage, state: DeltaState) -> None:
    """Write the checkpoint of ``state``, then point ``_last_checkpoint`` at it."""
    table = checkpoint_table(state)
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="snappy")
    storage.put(checkpoint_path(state.version), buf.getvalue())
    hint = {"version": state.version, "size": table.num_rows, "numOfAddFiles": state.adds.num_rows}
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
