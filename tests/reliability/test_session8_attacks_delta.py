"""Attacks on the Delta read path changes of session 8: checkpoint add row groups read on
threads (``lakecore_delta.log.checkpoint_parquet.map_row_groups``) and replay handing add
rows on as slices with reconciliation keys built only when there are removes
(``lakecore_delta.log.replay``).

Threaded reads must equal a single-threaded read (``_ROW_GROUP_THREADS = 1`` takes the whole-
file path) on good and damaged checkpoints, and fail only with typed errors; replay must give
the files of a model of the protocol's reconciliation and of delta-rs (``deltalake``).
Passing tests are attacks that held; ``xfail(strict=True)`` tests pin bugs found.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lakecore_delta.log import checkpoint_parquet as cpq

import lakecore
from lakecore.errors import CorruptTableError, SchemaError
from tests.delta.builders import (
    DeltaTableBuilder,
    add,
    commit_info,
    encode_path,
    field,
    inline_dv,
    metadata,
    protocol,
    remove,
    txn,
    uuid_dv,
)

FIELDS = [field("id", "long"), field("p", "string")]
DV_PROTOCOL = protocol(3, 7, ["deletionVectors"], ["deletionVectors"])
V2_PROTOCOL = protocol(3, 7, ["v2Checkpoint"], ["v2Checkpoint"])


def _adds(n: int, start: int = 0) -> list[dict[str, Any]]:
    return [
        add(
            f"p=x/f{i}.parquet",
            size=1000 + i,
            partition_values={"p": "x"},
            stats={"numRecords": i, "minValues": {"id": i}, "maxValues": {"id": i}},
        )
        for i in range(start, start + n)
    ]


def _files(uri: str, threads: int, monkeypatch: pytest.MonkeyPatch) -> pa.Table | str:
    """The snapshot's files read with ``threads`` row-group readers; the error type's name
    when it fails with a typed error (other errors propagate)."""
    monkeypatch.setattr(cpq, "_ROW_GROUP_THREADS", threads)
    try:
        return lakecore.open(uri).snapshot().files()
    except (CorruptTableError, SchemaError) as exc:
        return type(exc).__name__


def _deltalake_files(uri: str, version: int | None = None) -> set[tuple[str, int]]:
    table = (
        deltalake.DeltaTable(uri) if version is None else deltalake.DeltaTable(uri, version=version)
    )
    actions = pa.table(table.get_add_actions(flatten=True))
    return set(
        zip(
            [unquote(p) for p in actions.column("path").to_pylist()],
            actions.column("size_bytes").to_pylist(),
            strict=True,
        )
    )


def _ours(files: pa.Table) -> set[tuple[str, int]]:
    return set(zip(files.column("path").to_pylist(), files.column("size").to_pylist(), strict=True))


def _rewrite(path: Path, rows_per_group: int, compression: str = "snappy") -> int:
    pq.write_table(
        pq.read_table(path), path, row_group_size=rows_per_group, compression=compression
    )
    return int(pq.ParquetFile(path).num_row_groups)


def _checkpoint_table(root: Path, rows_per_group: int, compression: str = "snappy") -> Path:
    """A table whose only log entry is a checkpoint of 40 adds, with row groups that hold only
    protocol/metaData/txn/remove rows between add rows."""
    builder = DeltaTableBuilder(root)
    builder.init(FIELDS, partition_columns=["p"])
    removes = [remove(f"p=x/old{i}.parquet") for i in range(7)]
    actions = [
        protocol(),
        metadata(FIELDS, ["p"]),
        *_adds(10),
        txn("app", 3),
        *removes,
        *_adds(25, start=10),
        *removes[:3],
        *_adds(5, start=35),
    ]
    (path,) = builder.checkpoint(0, actions)
    builder.commit_path(0).unlink()
    builder.last_checkpoint(0)
    _rewrite(path, rows_per_group, compression)
    return path


# --- checkpoint row groups on threads ------------------------------------------------------


@pytest.mark.parametrize("rows_per_group", [1, 2, 3, 7, 100])
def test_threaded_checkpoint_equals_single_thread_and_delta_rs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rows_per_group: int
) -> None:
    _checkpoint_table(tmp_path / "t", rows_per_group)
    threaded = _files(str(tmp_path / "t"), 4, monkeypatch)
    single = _files(str(tmp_path / "t"), 1, monkeypatch)
    assert isinstance(threaded, pa.Table) and isinstance(single, pa.Table)
    assert threaded.equals(single)
    assert threaded.column("path").to_pylist() == [f"p=x/f{i}.parquet" for i in range(40)]
    assert _ours(threaded) == _deltalake_files(str(tmp_path / "t"))


def _replace(path: Path, data: bytes) -> None:
    """Write ``data`` as a new file renamed over ``path``: the checkpoint reader memory-maps
    local files, and truncating a mapped file in place makes a read still running in
    pyarrow's IO threads (an earlier failed read's prefetch) die of SIGBUS."""
    temp = path.with_name(path.name + ".tmp")
    temp.write_bytes(data)
    os.replace(temp, path)


def _fuzz_checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, cases: int) -> int:
    """Damage bytes of a many-row-group checkpoint's data pages (footer kept): the threaded
    and single-threaded reads give the same files or both a typed error."""
    rng = random.Random(seed)
    ran = 0
    for compression in ("none", "snappy"):
        root = tmp_path / compression
        path = _checkpoint_table(root, 3, compression)
        good = path.read_bytes()
        data_end = len(good) - 8 - int.from_bytes(good[-8:-4], "little")
        for _ in range(cases):
            data = bytearray(good)
            for _ in range(rng.randint(1, 3)):
                data[rng.randrange(4, data_end)] = rng.randrange(256)
            _replace(path, bytes(data))
            threaded = _files(str(root), 4, monkeypatch)
            single = _files(str(root), 1, monkeypatch)
            if isinstance(threaded, str) or isinstance(single, str):
                assert threaded == single
            else:
                assert threaded.equals(single)
            ran += 1
    return ran


def test_damaged_checkpoint_pages_read_alike_on_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _fuzz_checkpoint(tmp_path, monkeypatch, seed=8, cases=25) == 50


@pytest.mark.slow
def test_damaged_checkpoint_pages_read_alike_on_threads_slow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _fuzz_checkpoint(tmp_path, monkeypatch, seed=88, cases=400) == 800


def test_a_truncated_row_group_is_corrupt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The last row group's pages lose their second half (the footer still points there)."""
    path = _checkpoint_table(tmp_path / "t", 3, "none")
    meta = pq.ParquetFile(path).metadata
    last = meta.row_group(meta.num_row_groups - 1)
    starts = [
        min(
            x
            for x in (last.column(c).dictionary_page_offset, last.column(c).data_page_offset)
            if x is not None
        )
        for c in range(last.num_columns)
    ]
    start, end = (
        min(starts),
        max(s + last.column(c).total_compressed_size for c, s in enumerate(starts)),
    )
    good = path.read_bytes()
    middle = (start + end) // 2
    _replace(path, good[:middle] + b"\x00" * (end - middle) + good[end:])
    assert _files(str(tmp_path / "t"), 4, monkeypatch) == "CorruptTableError"
    assert _files(str(tmp_path / "t"), 1, monkeypatch) == "CorruptTableError"


@pytest.mark.parametrize("parts", [2, 3])
def test_multi_part_checkpoints_of_many_row_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parts: int
) -> None:
    root = tmp_path / "t"
    builder = DeltaTableBuilder(root)
    builder.init(FIELDS, partition_columns=["p"])
    actions = [protocol(), metadata(FIELDS, ["p"]), *_adds(30), remove("p=x/gone.parquet")]
    for path in builder.checkpoint(0, actions, parts=parts):
        assert _rewrite(path, 2) > 3
    builder.commit_path(0).unlink()
    builder.last_checkpoint(0, parts=parts)
    builder.commit(1, commit_info(), remove("p=x/f3.parquet"), *_adds(2, start=30))
    threaded = _files(str(root), 4, monkeypatch)
    single = _files(str(root), 1, monkeypatch)
    assert isinstance(threaded, pa.Table) and isinstance(single, pa.Table)
    assert threaded.equals(single)
    expected = {(f"p=x/f{i}.parquet", 1000 + i) for i in range(32) if i != 3}
    assert _ours(threaded) == expected == _deltalake_files(str(root))


def test_v2_checkpoint_sidecars_of_many_row_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "t"
    builder = DeltaTableBuilder(root)
    builder.init(FIELDS, partition_columns=["p"], proto=V2_PROTOCOL)
    sidecars = [
        _adds(12),
        [*_adds(9, start=12), remove("p=x/old.parquet")],
        [remove("p=x/x.parquet")],
    ]
    builder.v2_checkpoint(0, [V2_PROTOCOL, metadata(FIELDS, ["p"])], sidecars, top="parquet")
    for path in sorted((builder.log / "_sidecars").iterdir()):
        _rewrite(path, 2)
    builder.commit_path(0).unlink()
    threaded = _files(str(root), 4, monkeypatch)
    single = _files(str(root), 1, monkeypatch)
    assert isinstance(threaded, pa.Table) and isinstance(single, pa.Table)
    assert threaded.equals(single)
    assert _ours(threaded) == {(f"p=x/f{i}.parquet", 1000 + i) for i in range(21)}


def test_a_damaged_sidecar_is_corrupt_on_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "t"
    builder = DeltaTableBuilder(root)
    builder.init(FIELDS, partition_columns=["p"], proto=V2_PROTOCOL)
    builder.v2_checkpoint(0, [V2_PROTOCOL, metadata(FIELDS, ["p"])], [_adds(12)], top="json")
    (sidecar,) = (builder.log / "_sidecars").iterdir()
    _rewrite(sidecar, 2, "none")
    builder.commit_path(0).unlink()
    # The add.path pages of the last row group become 0xff bytes (damage to columns replay
    # does not read, such as add.tags, is rightly not noticed).
    meta = pq.ParquetFile(sidecar).metadata
    last = meta.row_group(meta.num_row_groups - 1)
    (chunk,) = [
        last.column(c)
        for c in range(last.num_columns)
        if last.column(c).path_in_schema == "add.path"
    ]
    start, n = chunk.data_page_offset, chunk.total_compressed_size
    raw = sidecar.read_bytes()
    _replace(sidecar, raw[:start] + b"\xff" * n + raw[start + n :])
    assert _files(str(root), 4, monkeypatch) == "CorruptTableError"
    assert _files(str(root), 1, monkeypatch) == "CorruptTableError"


# --- replay: adds and removes of the same paths, with and without DVs ---------------------

NAMES = [
    "a.parquet",
    "b c.parquet",
    "d%e.parquet",
    "f\u00e9.parquet",
    "g#h.parquet",
    "dir/i.parquet",
    "j\U0001f600.parquet",
]


def _remove_of(body: dict[str, Any], data_change: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"path": body["path"], "deletionTimestamp": 1, "dataChange": data_change}
    if "deletionVector" in body:
        out["deletionVector"] = body["deletionVector"]
    return {"remove": out}


def _random_log(root: Path, seed: int, versions: int) -> dict[int, set[tuple[str, int]]]:
    """Appends, DV updates (remove + add in either order), deletes, re-adds (with or without a
    DV), stale removes of keys no longer live, and checkpoints (classic or multi-part, with
    tombstones, row groups of 1-3 rows, actions shuffled) interleaved; every add has its own
    size, so (path, size) names it. Returns the live (path, size) per version."""
    rng = random.Random(seed)
    builder = DeltaTableBuilder(root)
    builder.init([field("id", "long")], proto=DV_PROTOCOL)
    meta = metadata([field("id", "long")])
    live: dict[str, dict[str, Any]] = {}
    dead: dict[str, list[dict[str, Any]]] = {}
    size = iter(range(1001, 10**6))
    model: dict[int, set[tuple[str, int]]] = {0: set()}

    def dv() -> dict[str, Any]:
        k = rng.randrange(1000)
        return rng.choice(
            [inline_dv(f"dv{k:05d}", k + 1), uuid_dv(f"u{k:05d}", rng.choice([1, 7]), k + 1)]
        )

    for version in range(1, versions):
        actions: list[dict[str, Any]] = []
        used: set[str] = set()
        for _ in range(rng.randint(1, 3)):
            op = rng.choice(["append", "dv", "dv", "delete", "readd", "stale"])
            free = [n for n in NAMES if n not in live and n not in used and n not in dead]
            alive = [n for n in live if n not in used]
            gone = [n for n in dead if n not in live and n not in used]
            if op == "append" and free:
                n = rng.choice(free)
                live[n] = add(
                    encode_path(n), size=next(size), deletion_vector=rng.choice([None, dv()])
                )["add"]
                actions.append({"add": live[n]})
            elif op == "dv" and alive:
                n = rng.choice(alive)
                old = live[n]
                live[n] = {**old, "deletionVector": dv(), "size": next(size)}
                pair = [_remove_of(old), {"add": live[n]}]
                actions += pair if rng.random() < 0.5 else pair[::-1]
                dead.setdefault(n, []).append(old)
            elif op == "delete" and alive:
                n = rng.choice(alive)
                old = live.pop(n)
                actions.append(_remove_of(old))
                dead.setdefault(n, []).append(old)
            elif op == "readd" and gone:
                n = rng.choice(gone)
                live[n] = add(
                    encode_path(n), size=next(size), deletion_vector=rng.choice([None, dv()])
                )["add"]
                actions.append({"add": live[n]})
            elif op == "stale" and [n for n in dead if n not in used]:
                n = rng.choice([n for n in dead if n not in used])
                old = rng.choice(dead[n])
                if n in live and live[n].get("deletionVector") == old.get("deletionVector"):
                    continue
                actions.append(_remove_of(old))
            else:
                continue
            used.add(n)
        builder.commit(version, commit_info(), *actions)
        model[version] = {(unquote(a["path"]), a["size"]) for a in live.values()}
        if rng.random() < 0.3:
            tombstones = [_remove_of(o, False) for olds in dead.values() for o in olds]
            state = [DV_PROTOCOL, meta, *({"add": a} for a in live.values()), *tombstones]
            rng.shuffle(state)
            parts = rng.choice([None, 2, 3])
            for path in builder.checkpoint(version, state, parts=parts):
                _rewrite(path, rng.choice([1, 2, 3]))
            builder.last_checkpoint(version, **({"parts": parts} if parts else {}))
    return model


def _replay_seeds(tmp_path: Path, seeds: range, versions: int) -> int:
    compared = 0
    for seed in seeds:
        root = tmp_path / f"s{seed}"
        model = _random_log(root, seed, versions)
        table = lakecore.open(str(root))
        for version in range(versions):
            ours = _ours(table.snapshot(version).files())
            assert ours == model[version] == _deltalake_files(str(root), version), (seed, version)
            compared += 1
    return compared


def test_replay_matches_model_and_delta_rs(tmp_path: Path) -> None:
    assert _replay_seeds(tmp_path, range(5), versions=12) == 5 * 12


@pytest.mark.slow
def test_replay_matches_model_and_delta_rs_slow(tmp_path: Path) -> None:
    assert _replay_seeds(tmp_path, range(100, 180), versions=16) == 80 * 16


def _table(root: Path, *commits: list[dict[str, Any]]) -> str:
    builder = DeltaTableBuilder(root)
    builder.init([field("id", "long")], proto=DV_PROTOCOL)
    for version, actions in enumerate(commits, start=1):
        builder.commit(version, commit_info(), *actions)
    return builder.uri


# A DV whose unique id ends in the key separator (0x1f) of replay.file_keys: storage type
# 'p' takes any absolute path. Data file "a.parquet<0x1f>p/dv/x" (URL-encoded in the log)
# then has the key of data file "a.parquet" with that DV.
_ODD_DV = {"storageType": "p", "pathOrInlineDv": "/dv/x\x1f", "sizeInBytes": 2, "cardinality": 1}
_COLLISIONS: dict[str, Callable[[], list[list[dict[str, Any]]]]] = {
    "remove-without-dv-drops-other-file": lambda: [
        [add("a.parquet%1Fp/dv/x", size=1), add("a.parquet", size=2, deletion_vector=_ODD_DV)],
        [remove("a.parquet%1Fp/dv/x")],
    ],
    "remove-with-dv-drops-other-file": lambda: [
        [add("a.parquet%1Fp/dv/x", size=1), add("a.parquet", size=2, deletion_vector=_ODD_DV)],
        [remove("a.parquet", deletion_vector=_ODD_DV)],
    ],
}


@pytest.mark.parametrize("case", sorted(_COLLISIONS))
def test_reconciliation_keys_do_not_collide(tmp_path: Path, case: str) -> None:
    uri = _table(tmp_path / "t", *_COLLISIONS[case]())
    ours = _ours(lakecore.open(uri).snapshot().files())
    assert ours == _deltalake_files(uri)
    assert len(ours) == 1


def test_stale_removes_and_readds_across_a_checkpoint(tmp_path: Path) -> None:
    """Held: a remove of a key replaced before the checkpoint, after it, cancels nothing; a
    file removed in the checkpoint's tombstones and added again after it is live."""
    root = tmp_path / "t"
    builder = DeltaTableBuilder(root)
    builder.init([field("id", "long")], proto=DV_PROTOCOL)
    d1, d2 = inline_dv("one", 1), inline_dv("two", 2)
    a0 = add("a.parquet", size=1)
    a1 = add("a.parquet", size=2, deletion_vector=d1)
    b0 = add("b.parquet", size=3)
    builder.commit(1, commit_info(), a0, b0)
    builder.commit(2, commit_info(), remove("a.parquet"), a1, remove("b.parquet"))
    (path,) = builder.checkpoint(
        2,
        [
            DV_PROTOCOL,
            metadata([field("id", "long")]),
            a1,
            remove("a.parquet"),
            remove("b.parquet"),
        ],
    )
    _rewrite(path, 1)
    builder.last_checkpoint(2)
    builder.commit(
        3, commit_info(), remove("a.parquet"), add("b.parquet", size=4, deletion_vector=d2)
    )
    builder.commit(4, commit_info(), remove("a.parquet", deletion_vector=d2))
    uri = builder.uri
    for version, expected in {
        2: {("a.parquet", 2)},
        3: {("a.parquet", 2), ("b.parquet", 4)},
        4: {("a.parquet", 2), ("b.parquet", 4)},
    }.items():
        assert _ours(lakecore.open(uri).snapshot(version).files()) == expected
        assert _deltalake_files(uri, version) == expected


# --- noticed beside the session's changes ---------------------------------------------------


@pytest.mark.parametrize("column", ["t", "d"])
def test_a_delta_append_of_a_timestamp_after_year_9999(tmp_path: Path, column: str) -> None:
    schema = pa.schema([("id", pa.int64()), ("t", pa.timestamp("us")), ("d", pa.date32())])
    table = lakecore.create(str(tmp_path / "t"), schema)
    data: dict[str, Any] = {"id": [1, 2], "t": [0, 0], "d": [0, 0]}
    data[column] = [0, 20_000 * 365 * 86_400 * 10**6] if column == "t" else [0, 5_000_000]
    table.append(pa.table(data, schema=schema))
    assert lakecore.open(str(tmp_path / "t")).scan("id = 2").to_arrow().num_rows == 1
    # The bound Python cannot hold is left out of the stats (optional in Delta), the rest kept.
    theirs = deltalake.DeltaTable(str(tmp_path / "t"))
    (stats,) = pa.table(theirs.get_add_actions(flatten=True)).to_pylist()
    assert stats[f"null_count.{column}"] == 0 and stats["max.id"] == 2
    assert stats[f"min.{column}"] is not None and stats[f"max.{column}"] is None
    read = theirs.to_pyarrow_table().sort_by("id")
    raw = read.column(column).combine_chunks()
    assert raw.view(pa.int64() if column == "t" else pa.int32()).to_pylist() == data[column]


@pytest.mark.parametrize("others", [0, 1, 63, 64, 65, 150])
def test_commit_adds_around_other_actions_read_as_delta_rs(tmp_path: Path, others: int) -> None:
    """One commit of 200 adds with ``others`` non-add rows spread between them (replay keeps
    add runs as slices up to 64 gaps, a filtered copy past that): the files and their stats
    are delta-rs's."""
    root = tmp_path / "t"
    builder = DeltaTableBuilder(root)
    builder.init([field("id", "long")])
    noise = [txn("app", 1), remove("gone.parquet"), commit_info()]
    every = max(1, 200 // others) if others else 0
    actions: list[dict[str, Any]] = []
    spread = 0
    for i in range(200):
        stats = {"numRecords": i, "minValues": {"id": i}, "maxValues": {"id": 2 * i}}
        actions.append(add(f"f{i}.parquet", size=1000 + i, stats={**stats, "nullCount": {"id": 0}}))
        if others and i % every == 0 and spread < others:
            actions.append(noise[spread % 3])
            spread += 1
    while spread < others:
        actions.append(noise[spread % 3])
        spread += 1
    builder.commit(1, commit_info(), *actions)
    builder.commit(2, commit_info(), remove("f5.parquet"), remove("gone.parquet"))
    files = lakecore.open(builder.uri).snapshot().files()
    ours = sorted(
        zip(
            files.column("path").to_pylist(),
            files.column("size").to_pylist(),
            files.column("record_count").to_pylist(),
            [m["id"] for m in files.column("min").to_pylist()],
            [m["id"] for m in files.column("max").to_pylist()],
            strict=True,
        )
    )
    theirs = pa.table(deltalake.DeltaTable(builder.uri).get_add_actions(flatten=True))
    expected = sorted(
        zip(
            [unquote(p) for p in theirs.column("path").to_pylist()],
            theirs.column("size_bytes").to_pylist(),
            theirs.column("num_records").to_pylist(),
            theirs.column("min.id").to_pylist(),
            theirs.column("max.id").to_pylist(),
            strict=True,
        )
    )
    assert ours == expected and len(ours) == 199


def test_a_path_twice_in_a_checkpoint_reads_alike_with_or_without_later_commits(
    tmp_path: Path,
) -> None:
    builder = DeltaTableBuilder(tmp_path / "t")
    builder.init([field("id", "long")])
    first = builder.data_file("a.parquet", {"id": pa.array([1, 2], pa.int64())})
    second = builder.data_file("b.parquet", {"id": pa.array([3], pa.int64())})
    builder.commit(1, commit_info(), first, second)
    builder.checkpoint(1, [protocol(), metadata([field("id", "long")]), first, second, first])
    builder.last_checkpoint(1)
    alone = sorted(lakecore.open(builder.uri).to_arrow().column("id").to_pylist())
    builder.commit(
        2, commit_info(), builder.data_file("c.parquet", {"id": pa.array([4], pa.int64())})
    )
    table = lakecore.open(builder.uri)
    at_1 = sorted(table.to_arrow(version=1).column("id").to_pylist())
    at_2 = sorted(table.to_arrow().column("id").to_pylist())
    assert alone == at_1 == [i for i in at_2 if i != 4]


def test_threaded_row_groups_of_a_remote_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Held: on a store that is not local the checkpoint's bytes are read once and shared by
    the row-group threads (fsspec's memory filesystem)."""
    import uuid

    import fsspec

    root = tmp_path / "t"
    _checkpoint_table(root, 3)
    local = lakecore.open(str(root)).snapshot().files()
    memory = fsspec.filesystem("memory")
    name = f"attack-{uuid.uuid4().hex}"
    try:
        for path in root.rglob("*"):
            if path.is_file():
                memory.pipe(f"/{name}/{path.relative_to(root)}", path.read_bytes())
        for threads in (4, 1):
            monkeypatch.setattr(cpq, "_ROW_GROUP_THREADS", threads)
            assert lakecore.open(f"memory://{name}").snapshot().files().equals(local)
    finally:
        memory.rm(f"/{name}", recursive=True)
