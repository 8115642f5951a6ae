"""Log compaction files over commits that update deletion vectors read like the commits.

A DV update commits ``remove`` of the file's old (path, DV) and ``add`` of the same path with
the new DV. A log compaction file ``<a>.<b>.compacted.json`` holds the reconciled actions of
commits a..b: per (path, DV unique id) the newest add or remove. Delta Kernel's compaction
writer (a checkpoint iterator with ``minFileRetentionTimestamp``) also drops tombstones older
than the retention period; where the range re-adds the path (a DV update, a restore), the
table is still well defined without that tombstone, because the protocol allows one live add
per path. Whatever the range, reading any version must give the rows of the same table read
without the compaction file, and the rows delta-rs reads.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from lakecore_delta.deletion_vectors import inline_descriptor

import lakecore

from .builders import BASE_TIME_MS, DeltaTableBuilder, commit_info, metadata, protocol
from .builders import field as schema_field

VERSIONS = 10  # commits 1..9 after the create commit 0
SEEDS = list(range(8))
DV_PROTOCOL = protocol(3, 7, ["deletionVectors"], ["deletionVectors"])


def _dv(deleted: set[int]) -> dict[str, Any]:
    d = inline_descriptor(sorted(deleted))
    return {
        "storageType": "i",
        "pathOrInlineDv": d.path_or_inline_dv,
        "sizeInBytes": d.size_in_bytes,
        "cardinality": d.cardinality,
    }


def _dv_id(action: dict[str, Any]) -> str | None:
    dv = action.get("deletionVector")
    if dv is None:
        return None
    offset = f"@{dv['offset']}" if dv.get("offset") is not None else ""
    return f"{dv['storageType']}{dv['pathOrInlineDv']}{offset}"


def _remove_of(add: dict[str, Any], when: int) -> dict[str, Any]:
    """The remove Delta writes for a live add: same path, partition values, size and DV."""
    remove = {
        "path": add["path"],
        "deletionTimestamp": when,
        "dataChange": True,
        "extendedFileMetadata": True,
        "partitionValues": add["partitionValues"],
        "size": add["size"],
    }
    if "deletionVector" in add:
        remove["deletionVector"] = add["deletionVector"]
    return {"remove": remove}


@dataclass
class History:
    """A table's commits (version -> actions) as written, and its live files per version."""

    builder: DeltaTableBuilder
    commits: dict[int, list[dict[str, Any]]] = field(default_factory=dict)


def _random_table(root: Path, seed: int) -> History:
    """Appends, DV updates (remove + add with a new DV), deletes of files, re-adds."""
    rng = random.Random(seed)
    builder = DeltaTableBuilder(root)
    history = History(builder)
    create = [
        DV_PROTOCOL,
        metadata([schema_field("id", "long")]),
    ]
    builder.commit(0, *create)
    history.commits[0] = create
    live: dict[str, tuple[dict[str, Any], set[int]]] = {}
    gone: dict[str, dict[str, Any]] = {}
    files = 0
    for version in range(1, VERSIONS):
        when = BASE_TIME_MS + version * 1000
        actions: list[dict[str, Any]] = []
        op = rng.choice(["append", "dv", "dv", "dv", "delete", "readd"]) if live else "append"
        if op == "readd" and not gone:
            op = "dv"
        if op == "append":
            name = f"part-{files}.parquet"
            ids = pa.array(range(files * 100, files * 100 + 10), pa.int64())
            add = builder.data_file(name, {"id": ids})["add"]
            files += 1
            live[name] = (add, set())
            actions.append({"add": add})
        elif op == "dv":
            for name in rng.sample(sorted(live), k=min(len(live), rng.choice([1, 2]))):
                add, deleted = live[name]
                # A DV update deletes at least one more row: a new DV, so a new (path, DV) key.
                kept = sorted(set(range(10)) - deleted)
                if not kept:
                    continue
                now_deleted = deleted | set(rng.sample(kept, k=min(len(kept), 2)))
                new_add = {**add, "deletionVector": _dv(now_deleted), "dataChange": True}
                pair = [_remove_of(add, when), {"add": new_add}]
                actions += pair if rng.random() < 0.5 else pair[::-1]  # order is not meaningful
                live[name] = (new_add, now_deleted)
        elif op == "delete":
            name = rng.choice(sorted(live))
            add, _ = live.pop(name)
            actions.append(_remove_of(add, when))
            gone[name] = {k: v for k, v in add.items() if k != "deletionVector"}
        else:  # a file comes back as it was first written (RESTORE), without a DV
            name = rng.choice(sorted(gone))
            add = gone.pop(name)
            live[name] = (add, set())
            actions.append({"add": add})
        actions.insert(0, commit_info("DELETE" if op in ("dv", "delete") else "WRITE"))
        builder.commit(version, *actions)
        history.commits[version] = actions
    return history


def compaction_actions(
    commits: dict[int, list[dict[str, Any]]], start: int, end: int, drop_tombstones: bool
) -> list[dict[str, Any]]:
    """Action reconciliation of commits ``start..end`` as a log compaction writer does it.

    Per (path, DV id) the newest add or remove; the newest protocol, metaData and txn per
    appId. ``drop_tombstones`` drops (as expired) the removes of paths the range also adds.
    """
    files: dict[tuple[str, str | None], dict[str, Any]] = {}
    others: dict[str, dict[str, Any]] = {}
    for version in range(start, end + 1):
        for action in commits[version]:
            ((kind, body),) = action.items()
            if kind in ("add", "remove"):
                files[(body["path"], _dv_id(body))] = action
            elif kind in ("protocol", "metaData"):
                others[kind] = action
            elif kind == "txn":
                others[f"txn:{body['appId']}"] = action
    added = {path for (path, _), a in files.items() if "add" in a}
    kept = [
        a
        for a in files.values()
        if "add" in a or not (drop_tombstones and a["remove"]["path"] in added)
    ]
    adds = [a for a in kept if "add" in a]
    removes = [a for a in kept if "remove" in a]
    return [*others.values(), *adds, *removes]  # the protocol's example order


def _compaction_path(builder: DeltaTableBuilder, start: int, end: int) -> Path:
    return builder.log / f"{start:020d}.{end:020d}.compacted.json"


def _write_compaction(builder: DeltaTableBuilder, start: int, end: int, actions: list[Any]) -> Path:
    path = _compaction_path(builder, start, end)
    path.write_text("".join(json.dumps(a, separators=(",", ":")) + "\n" for a in actions))
    return path


def _rows_at_every_version(uri: str) -> list[list[int]]:
    table = lakecore.open(uri)
    return [sorted(table.to_arrow(version=v).column("id").to_pylist()) for v in range(VERSIONS)]


def _ranges(seed: int) -> list[tuple[int, int]]:
    rng = random.Random(1000 + seed)
    pairs = [(a, b) for a in range(1, VERSIONS) for b in range(a + 1, VERSIONS)]
    return [(1, VERSIONS - 1), *rng.sample(pairs, 3)]


TOMBSTONES = {"kept": False, "expired": True}


@pytest.mark.parametrize("tombstones", sorted(TOMBSTONES))
@pytest.mark.parametrize("seed", SEEDS)
def test_compaction_reads_like_the_commits_at_every_version(
    tmp_path: Path, seed: int, tombstones: str
) -> None:
    history = _random_table(tmp_path / "t", seed)
    uri = history.builder.uri
    expected = _rows_at_every_version(uri)
    dv_updates = sum(
        1
        for actions in history.commits.values()
        for a in actions
        if "add" in a and "deletionVector" in a["add"]
    )
    assert dv_updates >= 2, "the seed must update deletion vectors"
    checked = 0
    for start, end in _ranges(seed):
        actions = compaction_actions(history.commits, start, end, TOMBSTONES[tombstones])
        path = _write_compaction(history.builder, start, end, actions)
        assert _rows_at_every_version(uri) == expected, (start, end, actions)
        path.unlink()
        checked += 1
    assert checked == 4


def test_dropped_tombstone_of_the_old_dv_does_not_bring_deleted_rows_back(
    tmp_path: Path,
) -> None:
    # Commit 1 adds f; commits 2 and 3 delete rows through DVs. The compaction of 2..3 was
    # written after the retention period: the tombstones of (f, none) and (f, dv1) are gone.
    builder = DeltaTableBuilder(tmp_path / "t")
    builder.commit(0, DV_PROTOCOL, metadata([schema_field("id", "long")]))
    add = builder.data_file("f.parquet", {"id": pa.array(range(10), pa.int64())})["add"]
    builder.commit(1, {"add": add})
    add1 = {**add, "deletionVector": _dv({1})}
    builder.commit(2, _remove_of(add, BASE_TIME_MS), {"add": add1})
    add2 = {**add, "deletionVector": _dv({1, 2})}
    builder.commit(3, _remove_of(add1, BASE_TIME_MS), {"add": add2})
    expected = _rows_at_every_version_of(builder.uri, 4)
    assert expected[3] == [0, *range(3, 10)]
    _write_compaction(builder, 2, 3, [{"add": add2}])
    assert _rows_at_every_version_of(builder.uri, 4) == expected
    # Also when the old add comes from a checkpoint.
    builder.checkpoint(1, [DV_PROTOCOL, metadata([schema_field("id", "long")]), {"add": add}])
    assert _rows_at_every_version_of(builder.uri, 4) == expected


def _rows_at_every_version_of(uri: str, versions: int) -> list[list[int]]:
    table = lakecore.open(uri)
    return [sorted(table.to_arrow(version=v).column("id").to_pylist()) for v in range(versions)]


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_compaction_reads_like_delta_rs(tmp_path: Path, seed: int) -> None:
    deltalake = pytest.importorskip("deltalake")
    history = _random_table(tmp_path / "t", seed)
    uri = history.builder.uri
    actions = compaction_actions(history.commits, 1, VERSIONS - 1, TOMBSTONES["expired"])
    _write_compaction(history.builder, 1, VERSIONS - 1, actions)
    ours = _rows_at_every_version(uri)
    theirs = []
    for version in range(VERSIONS):
        dt = deltalake.DeltaTable(uri, version=version)
        if version == 0:  # no data file yet: delta-rs has no rows (and no batches) to give
            theirs.append([])
            continue
        result = deltalake.QueryBuilder().register("t", dt).execute("select id from t")
        theirs.append(sorted(pa.table(result.read_all()).column("id").to_pylist()))
    assert ours == theirs
