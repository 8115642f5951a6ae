"""A Table replays only newer commits on top of its last snapshot; results equal a fresh load."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from lakecore_delta.state import load_state

import lakecore
from lakecore.storage import FsspecStorage


class CountingStorage(FsspecStorage):
    def __init__(self, uri: str) -> None:
        super().__init__(uri)
        self.reads: list[str] = []

    def read(self, path: str, start: int | None = None, end: int | None = None) -> bytes:
        self.reads.append(path)
        return super().read(path, start, end)


def _same(a: lakecore.Snapshot, b: lakecore.Snapshot) -> None:
    assert a.version == b.version
    assert a.schema == b.schema
    assert a.files().sort_by("path").equals(b.files().sort_by("path"))
    key = [(n, "ascending") for n in a.schema.names]
    assert a.to_arrow().sort_by(key).equals(b.to_arrow().sort_by(key))


def test_incremental_equals_fresh_across_writes(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    reader = lakecore.create(uri, schema, partition_by=["p"])
    writer = lakecore.open(uri)
    for step in range(25):  # crosses the checkpoints at 10 and 20
        # After step 12 the table has a column "note" these rows leave null.
        rows = pa.table({"id": [step, step + 100], "p": ["a", "b"]})
        writer.append(rows, schema_mode="merge" if step > 12 else None)
        if step % 7 == 3:
            writer.delete(f"id = {step}")
        if step == 12:
            with writer.update_schema() as s:
                s.add_column("note", pa.string())
        _same(reader.snapshot(), lakecore.open(uri).snapshot())


def test_only_new_commits_are_read(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    table = lakecore.create(uri, pa.schema([("id", pa.int64())]))
    for i in range(5):
        table.append(pa.table({"id": [i]}))
    storage = CountingStorage(uri)
    base = load_state(storage)
    table.append(pa.table({"id": [99]}))
    storage.reads.clear()
    state = load_state(storage, previous=base)
    assert state.version == base.version + 1
    # The _last_checkpoint hint, then only the one new commit: no checkpoint, no old commits.
    read = [p.rsplit("/", 1)[-1] for p in storage.reads]
    assert [r for r in read if r != "_last_checkpoint"] == [f"{state.version:020d}.json"]
    assert sorted(state.adds.column("path").to_pylist()) == sorted(
        load_state(storage).adds.column("path").to_pylist()
    )
