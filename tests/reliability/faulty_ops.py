"""Operations under storage faults: small base tables, the operations run on them, and the
observable state a reader sees (shared by the fault-injection and kill-at-any-step suites).

A *kind* is a table format and type: ``delta``, ``hudi-cow`` or ``hudi-mor``. Each kind has a
base table (a few commits, so there are files to delete, update, compact, clean, vacuum) and
named operations on it. ``state`` is what a reader observes: the rows (and, for Delta, the
version and table properties), so "before or after" compares exactly what users can see.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

import lakecore
from lakecore.storage import open_storage
from lakecore.table import Table
from lakecore.testing.faults import FaultyStorage
from tests.hudi.write.helpers import create as create_hudi
from tests.hudi.write.helpers import hudi_rs_table
from tests.hudi.write.helpers import rows as hudi_rows

KINDS = ("delta", "hudi-cow", "hudi-mor")

DELTA_SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.int64())])
CHECKPOINT_INTERVAL = 2
"""Delta base tables checkpoint every 2 commits: each operation's commit (version 4) is
followed by a post-commit checkpoint, so faults strike the post-commit hook too."""


def delta_rows(*ids: int) -> pa.Table:
    """Delta rows: ``id``, partition ``p`` (p0/p1), ``v = id``."""
    return pa.table(
        {"id": list(ids), "p": [f"p{i % 2}" for i in ids], "v": list(ids)}, schema=DELTA_SCHEMA
    )


def _hudi_row(i: int, name: str, ts: int = 1) -> tuple[int, str, int, str]:
    return (i, name, ts, "x" if i % 2 else "y")


def hudi_data(*ids: int, name: str = "r", ts: int = 1) -> pa.Table:
    """Hudi rows keyed on ``id``, ordered by ``ts``, partitioned by ``city`` (x/y)."""
    return hudi_rows(*(_hudi_row(i, f"{name}{i}", ts) for i in ids))


def build_base(kind: str, root: Path) -> None:
    """Create ``kind``'s base table at ``root`` (a few commits, files to act on)."""
    if kind == "delta":
        t = lakecore.create(
            str(root),
            DELTA_SCHEMA,
            partition_by=["p"],
            properties={"delta.checkpointInterval": str(CHECKPOINT_INTERVAL)},
        )
        t.append(delta_rows(1, 2))
        t.append(delta_rows(3, 4))
        t.delete("id = 4")  # version 3; a removed file for vacuum
        return
    table_type = "MERGE_ON_READ" if kind == "hudi-mor" else "COPY_ON_WRITE"
    t = create_hudi(root, table_type)
    t.append(hudi_data(1, 2, 3))
    t.upsert(hudi_data(1, name="u", ts=2))
    if kind == "hudi-mor":
        t.compact()  # a compacted slice (older slices for clean) ...
    t.upsert(hudi_data(3, name="w", ts=3))  # ... and log files to compact again


def _merge(t: Table) -> Any:
    source = delta_rows(1, 30)
    return t.merge(source, on="id").when_matched_update_all().when_not_matched_insert_all()


DELTA_OPS: dict[str, Callable[[Table], Any]] = {
    "append": lambda t: t.append(delta_rows(10, 11)),
    "overwrite": lambda t: t.overwrite(delta_rows(20, 21)),
    "delete": lambda t: t.delete("id = 2"),
    "update": lambda t: t.update({"v": "v + 100"}, "id = 1"),
    "merge": lambda t: _merge(t).execute(),
    "set_properties": lambda t: t.set_properties({"team": "core"}),
    "checkpoint": lambda t: t.checkpoint(),
    "vacuum": lambda t: t.vacuum(0, dry_run=False, enforce_retention=False),
    "optimize": lambda t: t.optimize(),
}

HUDI_OPS: dict[str, Callable[[Table], Any]] = {
    "append": lambda t: t.append(hudi_data(5, 6)),
    "upsert": lambda t: t.upsert(hudi_data(2, 7, name="v", ts=5)),
    "delete": lambda t: t.delete("id = 1"),
    "compact": lambda t: t.compact(),
    "clean": lambda t: t.clean(1),
}


def operations(kind: str) -> dict[str, Callable[[Table], Any]]:
    """The named operations of ``kind``."""
    return DELTA_OPS if kind == "delta" else HUDI_OPS


def _sorted_rows(table: pa.Table) -> tuple[str, ...]:
    data = table.drop_columns([c for c in table.column_names if c.startswith("_hoodie_")])
    return tuple(sorted(json.dumps(r, sort_keys=True) for r in data.to_pylist()))


@dataclass(frozen=True, slots=True)
class State:
    """What a reader observes: the rows, and for Delta the version and the properties."""

    rows: tuple[str, ...]
    version: int | None = None
    properties: tuple[tuple[str, str], ...] = ()


def state(kind: str, root: Path) -> State:
    """The state lakecore reads at ``root`` through a fresh, fault-free storage."""
    table = lakecore.open(str(root))
    snapshot = table.snapshot()
    rows = _sorted_rows(snapshot.to_arrow())
    if kind != "delta":
        return State(rows)
    props = tuple(sorted((k, v) for k, v in snapshot.properties.items() if k == "team"))
    return State(rows, int(snapshot.version), props)


def peer_rows(kind: str, root: Path) -> tuple[str, ...]:
    """The rows the reference reader (deltalake / hudi-rs) reads at ``root``."""
    if kind == "delta":
        import deltalake

        return _sorted_rows(deltalake.DeltaTable(str(root)).to_pyarrow_table())
    return _sorted_rows(hudi_rs_table(root))


def follow_up(kind: str) -> tuple[Callable[[Table], Any], pa.Table]:
    """A write a new writer makes after a fault (an append of fresh keys) and its rows."""
    data = delta_rows(900, 901) if kind == "delta" else hudi_data(900, 901)
    return (lambda t: t.append(data)), data


def with_rows(kind: str, before: State, data: pa.Table) -> tuple[str, ...]:
    """``before``'s rows plus ``data``'s rows, as ``state`` reports them."""
    return tuple(sorted(before.rows + _sorted_rows(data)))


def copy_table(template: Path, root: Path) -> None:
    """A fresh copy of the table at ``template``."""
    shutil.copytree(template, root)


def open_faulty(root: Path) -> tuple[Table, FaultyStorage]:
    """The table at ``root`` opened through a (disarmed) FaultyStorage."""
    faulty = FaultyStorage(open_storage(str(root)))
    table = lakecore.open(str(root), storage=faulty)
    faulty.reset()
    return table, faulty
