"""Log compaction files stand in for the commits they cover, with the same result."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from lakecore_delta.state import load_state

import lakecore
from lakecore.storage import FsspecStorage

SCHEMA = {
    "type": "struct",
    "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}],
}


def _add(name: str) -> dict[str, Any]:
    return {
        "add": {
            "path": name,
            "partitionValues": {},
            "size": 1,
            "modificationTime": 0,
            "dataChange": True,
            "stats": '{"numRecords":1}',
        }
    }


def _write(log: Path, name: str, actions: list[dict[str, Any]]) -> None:
    (log / name).write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def _table(root: Path) -> Path:
    log = root / "_delta_log"
    log.mkdir(parents=True)
    for i in range(4):
        pq.write_table(pa.table({"id": [i]}), root / f"f{i}.parquet")
    _write(
        log,
        f"{0:020d}.json",
        [
            {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
            {
                "metaData": {
                    "id": "t",
                    "format": {"provider": "parquet", "options": {}},
                    "schemaString": json.dumps(SCHEMA),
                    "partitionColumns": [],
                    "configuration": {},
                }
            },
            _add("f0.parquet"),
        ],
    )
    _write(log, f"{1:020d}.json", [_add("f1.parquet")])
    _write(
        log,
        f"{2:020d}.json",
        [{"remove": {"path": "f1.parquet", "dataChange": True}}, _add("f2.parquet")],
    )
    _write(log, f"{3:020d}.json", [_add("f3.parquet")])
    # The compaction of commits 1..3: their reconciled actions.
    _write(
        log,
        f"{1:020d}.{3:020d}.compacted.json",
        [
            {"remove": {"path": "f1.parquet", "dataChange": True}},
            _add("f2.parquet"),
            _add("f3.parquet"),
        ],
    )
    return root


class CountingStorage(FsspecStorage):
    def __init__(self, uri: str) -> None:
        super().__init__(uri)
        self.reads: list[str] = []

    def read(self, path: str, start: int | None = None, end: int | None = None) -> bytes:
        self.reads.append(path)
        return super().read(path, start, end)


def test_compaction_replaces_the_commits_it_covers(tmp_path: Path) -> None:
    root = _table(tmp_path / "t")
    storage = CountingStorage(str(root))
    state = load_state(storage)
    assert state.version == 3
    assert sorted(state.adds.column("path").to_pylist()) == [
        "f0.parquet",
        "f2.parquet",
        "f3.parquet",
    ]
    read_names = [p.rsplit("/", 1)[-1] for p in storage.reads]
    assert f"{1:020d}.{3:020d}.compacted.json" in read_names
    assert f"{2:020d}.json" not in read_names
    assert sorted(lakecore.open(str(root)).to_arrow().column("id").to_pylist()) == [0, 2, 3]


def test_compaction_beyond_the_version_is_not_used(tmp_path: Path) -> None:
    root = _table(tmp_path / "t")
    storage = CountingStorage(str(root))
    state = load_state(storage, 2)
    assert sorted(state.adds.column("path").to_pylist()) == ["f0.parquet", "f2.parquet"]
    assert not any(p.endswith("compacted.json") for p in storage.reads)
