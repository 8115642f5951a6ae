"""Checkpoints lakecore writes in parts and with typed stats; delta-rs and lakecore read them."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lakecore_delta.state import load_state
from lakecore_delta.write.checkpoint_out import write_checkpoint

import lakecore

deltalake = pytest.importorskip("deltalake")
SCHEMA = pa.schema([("id", pa.int64()), ("d", pa.date32()), ("p", pa.string())])


def _table(tmp_path: Path, **props: str) -> lakecore.Table:
    t = lakecore.create(str(tmp_path / "t"), SCHEMA, partition_by=["p"], properties=props)
    for i in range(6):
        t.append(pa.table({"id": [i, i + 10], "d": [dt.date(2024, 1, 1 + i)] * 2, "p": ["a", "b"]}))
    return t


def _rows(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


def test_multi_part_checkpoint(tmp_path: Path) -> None:
    t = _table(tmp_path)
    state = load_state(t.storage)
    write_checkpoint(t.storage, state, part_rows=5)
    log = sorted(os.listdir(os.path.join(t.uri, "_delta_log")))
    parts = [n for n in log if ".checkpoint.0" in n]
    assert len(parts) == 3 and all(n.endswith(".0000000003.parquet") for n in parts)
    hint = json.loads(Path(t.uri, "_delta_log", "_last_checkpoint").read_text())
    assert hint["parts"] == 3 and hint["version"] == state.version
    for n in log:  # readers must rebuild from the parts alone
        if n.endswith(".json") and int(n[:20]) <= state.version:
            os.remove(os.path.join(t.uri, "_delta_log", n))
    assert _rows(lakecore.open(t.uri).to_arrow()) == [*range(6), *range(10, 16)]
    assert _rows(pa.table(deltalake.DeltaTable(t.uri).to_pyarrow_table())) == [
        *range(6),
        *range(10, 16),
    ]


def test_stats_as_struct(tmp_path: Path) -> None:
    t = _table(tmp_path, **{"delta.checkpoint.writeStatsAsStruct": "true"})
    version = t.checkpoint()
    cp = pq.read_table(os.path.join(t.uri, "_delta_log", f"{version:020d}.checkpoint.parquet"))
    adds = [a for a in cp.column("add").to_pylist() if a]
    assert all(a["stats_parsed"]["numRecords"] == 1 for a in adds)
    assert {a["partitionValues_parsed"]["p"] for a in adds} == {"a", "b"}
    assert isinstance(adds[0]["stats_parsed"]["minValues"]["d"], dt.date)
    assert _rows(lakecore.open(t.uri).to_arrow()) == [*range(6), *range(10, 16)]
    assert deltalake.DeltaTable(t.uri).to_pyarrow_table().num_rows == 12
