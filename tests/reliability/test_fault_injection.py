"""A storage fault at every call of every write and maintenance operation.

For each operation of each kind (Delta; Hudi copy-on-write and merge-on-read) the operation is
first run through a counting ``FaultyStorage`` to learn its storage calls; then, on a fresh copy
of the same base table, once per call index with an ``OSError`` there (``before``: the call
never reaches the store) and, for calls that change the store, once more with the call landing
and its reply lost (``after``). Each time:

- the error, if any, is a ``LakecoreError`` (never a raw ``OSError``);
- the table re-opens and reads exactly the state before or exactly the state after the
  operation: ``CommitStorageError`` means before; success means after;
  ``CommitStateUnknownError``/``StorageError`` allow either;
- Delta: a fault once the commit file was put (a lost reply, the post-commit checkpoint) never
  turns the commit into a failure: the operation returns the committed version;
- a new writer then appends, and lakecore and the reference reader (deltalake / hudi-rs) read
  the same rows.

The default run faults every call that changes the store (both ways) and every
``READ_STRIDE``-th other call; ``-m slow`` faults every call.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import lakecore
from lakecore.errors import (
    CommitStateUnknownError,
    CommitStorageError,
    CorruptTableError,
    LakecoreError,
    StorageError,
)
from lakecore.table import Table
from lakecore.testing.faults import MUTATING, Call, FaultyStorage
from tests.reliability.faulty_ops import (
    KINDS,
    State,
    build_base,
    copy_table,
    delta_rows,
    follow_up,
    open_faulty,
    operations,
    peer_rows,
    state,
    with_rows,
)

CASES = [(kind, name) for kind in KINDS for name in operations(kind)]
EXPECTED_OPERATIONS = 9 + 5 + 5
"""Delta: 9 operations; Hudi CoW and MoR: 5 each."""
READ_ONLY = {("hudi-cow", "compact")}
"""Operations that only read: a copy-on-write table has no log files to compact."""
READ_STRIDE = 4
"""In the default run, one in this many calls that only read is faulted."""

TALLY: Counter[str] = Counter()
"""Outcomes over the whole module (printed by the last test, for docs/reliability.md)."""


def test_the_matrix_covers_every_operation() -> None:
    assert len(CASES) == EXPECTED_OPERATIONS


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One base table per kind, copied afresh for every case."""
    out = {}
    for kind in KINDS:
        root = tmp_path_factory.mktemp("template") / kind
        build_base(kind, root)
        out[kind] = root
    return out


def _commit_put(calls: list[Call]) -> int | None:
    """Index of the Delta commit's put (the put-if-absent of a ``_delta_log/*.json``)."""
    for i, c in enumerate(calls):
        if c.method == "put_if_absent" and c.path.startswith("_delta_log/"):
            return i
    return None


def _run(op: Callable[[Table], Any], table: Table) -> tuple[Any, BaseException | None]:
    try:
        return op(table), None
    except BaseException as exc:  # classified by the caller: raw errors are failures
        return None, exc


def _check_case(
    kind: str,
    op: Callable[[Table], Any],
    root: Path,
    index: int,
    mode: str,
    before: State,
    after: State,
    commit_put: int | None,
) -> tuple[str, list[str]]:
    """Run ``op`` with a fault at call ``index``; return its outcome and what went wrong."""
    table, faulty = open_faulty(root)
    faulty.arm(index, "after" if mode == "after" else "before")
    result, error = _run(op, table)
    problems: list[str] = []
    if not faulty.faults:
        problems.append("the fault never struck (the operation made fewer calls)")
    if error is not None and not isinstance(error, LakecoreError):
        return "raw", [f"raw {type(error).__name__}: {error}"]
    now = state(kind, root)
    outcome = "ok" if error is None else type(error).__name__
    if error is None and now != after:
        problems.append(f"returned {result!r} but the table is not in the after state: {now}")
    elif isinstance(error, CommitStorageError) and now != before:
        problems.append(f"{outcome} (nothing committed) but the table changed: {now}")
    elif now not in (before, after):
        problems.append(f"{outcome}: partial state {now}")
    if kind == "delta" and isinstance(error, CorruptTableError):
        problems.append(f"a storage fault reported as corruption: {error}")
    if kind == "delta" and commit_put is not None and index >= commit_put:
        # At the put: a lost reply is read back, a refused put is retried; after it: cleanup.
        if error is not None:
            problems.append(f"a fault at or after the commit put raised {error!r}")
        version = getattr(result, "version", result)  # a write's WriteResult
        if error is None and after.version is not None and version != after.version:
            problems.append(f"returned {version!r}, not the committed version {after.version}")
    # A new writer is not disturbed; the reference reader agrees.
    write, data = follow_up(kind)
    write(lakecore.open(str(root)))
    final = state(kind, root)
    if final.rows != with_rows(kind, now, data):
        problems.append("the next writer's append did not land as expected")
    if faulty.faults[0].method in MUTATING and peer_rows(kind, root) != final.rows:
        problems.append("the reference reader reads other rows than lakecore")
    return outcome, problems


def _plan(calls: list[Call], sample: bool) -> list[tuple[int, str]]:
    """(call index, mode) of each case: ``before`` at the chosen calls, ``after`` at writes."""
    reads = [i for i, c in enumerate(calls) if c.method not in MUTATING]
    writes = [i for i, c in enumerate(calls) if c.method in MUTATING]
    chosen = sorted(set(writes) | set(reads[::READ_STRIDE] if sample else reads))
    return [(i, "before") for i in chosen] + [(i, "after") for i in writes]


@pytest.mark.parametrize(("kind", "name"), CASES, ids=[f"{k}-{n}" for k, n in CASES])
def test_fault_at_sampled_storage_calls(
    kind: str, name: str, templates: dict[str, Path], tmp_path: Path
) -> None:
    calls, cases = _fault_at_calls(kind, name, templates[kind], tmp_path, sample=True)
    writes = sum(c.method in MUTATING for c in calls)
    assert cases == 2 * writes + -(-(len(calls) - writes) // READ_STRIDE)


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "name"), CASES, ids=[f"{k}-{n}" for k, n in CASES])
def test_fault_at_every_storage_call(
    kind: str, name: str, templates: dict[str, Path], tmp_path: Path
) -> None:
    calls, cases = _fault_at_calls(kind, name, templates[kind], tmp_path, sample=False)
    assert cases == len(calls) + sum(c.method in MUTATING for c in calls)


def _fault_at_calls(
    kind: str, name: str, template: Path, tmp_path: Path, sample: bool
) -> tuple[list[Call], int]:
    """Run ``kind``/``name`` with a fault at each planned call; return the calls and cases."""
    op = operations(kind)[name]
    before = state(kind, template)
    counting = tmp_path / "counting"
    copy_table(template, counting)
    table, faulty = open_faulty(counting)
    op(table)
    calls = list(faulty.calls)
    after = state(kind, counting)
    assert calls, f"{kind} {name} made no storage calls"
    changes = any(c.method in MUTATING for c in calls)
    assert changes == ((kind, name) not in READ_ONLY), f"{kind} {name}: {calls}"
    plan = _plan(calls, sample)
    commit_put = _commit_put(calls) if kind == "delta" else None
    outcomes: Counter[str] = Counter()
    failures = []
    for n, (index, mode) in enumerate(plan):
        root = tmp_path / f"case{n}"
        copy_table(template, root)
        outcome, problems = _check_case(kind, op, root, index, mode, before, after, commit_put)
        outcomes[outcome] += 1
        failures += [f"call {index} {calls[index]} ({mode}): {p}" for p in problems]
    TALLY.update({"cases": len(plan), **{f"outcome {k}": v for k, v in outcomes.items()}})
    TALLY["operations"] += 1
    print(f"{kind} {name}: {len(calls)} calls, {len(plan)} cases, {dict(outcomes)}")
    assert not failures, "\n".join(failures)
    assert sum(outcomes.values()) == len(plan)
    return calls, len(plan)


# ------------------------------------------------------------------ targeted cases


def _index_of_commit_put(template: Path, tmp_path: Path) -> int:
    """The index of an append's commit put, counted on a copy of ``template``."""
    probe = tmp_path / "probe"
    copy_table(template, probe)
    table, faulty = open_faulty(probe)
    table.append(delta_rows(10, 11))
    index = _commit_put(faulty.calls)
    assert index is not None
    return index


@pytest.mark.parametrize("mode", ["before", "after"])
def test_commit_put_and_everything_after_it_fail(
    mode: str, tmp_path: Path, templates: dict[str, Path]
) -> None:
    """The store goes away at the commit put: the read-back fails too, so the outcome is
    unknown; the table holds the before state (put never sent) or the after state (landed)."""
    index = _index_of_commit_put(templates["delta"], tmp_path)
    root = tmp_path / "t"
    copy_table(templates["delta"], root)
    before = state("delta", root)
    table, faulty = open_faulty(root)
    faulty.arm(index, "after" if mode == "after" else "before", persistent=True)
    with pytest.raises(CommitStateUnknownError) as caught:
        table.append(delta_rows(10, 11))
    assert "txnId" in str(caught.value)
    assert isinstance(caught.value.__cause__, OSError)
    now = state("delta", root)
    if mode == "before":
        assert now == before
    else:
        assert now.version == before.version + 1  # type: ignore[operator]
        assert now.rows == with_rows("delta", before, delta_rows(10, 11))


def test_a_failed_post_commit_checkpoint_is_a_warning(
    tmp_path: Path, templates: dict[str, Path], caplog: pytest.LogCaptureFixture
) -> None:
    """Version 4 is due for a checkpoint; its puts fail; the append still returns 4."""
    root = tmp_path / "t"
    copy_table(templates["delta"], root)
    table, faulty = open_faulty(root)
    probe_root = tmp_path / "probe"
    copy_table(templates["delta"], probe_root)
    probe, counting = open_faulty(probe_root)
    probe.append(delta_rows(10, 11))
    checkpoint_put = next(
        i for i, c in enumerate(counting.calls) if c.method == "put" and "checkpoint" in c.path
    )
    faulty.arm(checkpoint_put, persistent=True)
    with caplog.at_level(logging.WARNING):
        assert table.append(delta_rows(10, 11)).version == 4
    assert any("checkpoint of version 4 failed" in r.getMessage() for r in caplog.records)
    assert state("delta", root).version == 4
    assert not list((root / "_delta_log").glob("*4.checkpoint.parquet"))


def test_a_put_answered_exists_for_our_own_landed_request_is_our_commit(
    tmp_path: Path, templates: dict[str, Path]
) -> None:
    """An S3 client that retries a conditional PUT whose first try landed gets 412: the
    read-back finds our bytes, so the commit is ours (not a conflict to retry past)."""
    root = tmp_path / "t"
    copy_table(templates["delta"], root)
    before = state("delta", root)
    _, faulty = open_faulty(root)

    class RetryingStore(FaultyStorage):
        def put_if_absent(self, path: str, data: bytes) -> None:
            super().put_if_absent(path, data)
            if path.startswith("_delta_log/") and path.endswith(".json"):
                raise FileExistsError(path)  # the retried request met the landed one

    store = RetryingStore(faulty.inner)
    table = lakecore.open(str(root), storage=store)
    assert table.append(delta_rows(10, 11)).version == 4
    assert lakecore.open(str(root)).version == 4  # committed once, not again as version 5
    assert state("delta", root).rows == with_rows("delta", before, delta_rows(10, 11))


def test_module_figures() -> None:
    """Runs last: the figures for docs/reliability.md (asserts the matrix ran, when it did)."""
    print(f"fault injection: {dict(TALLY)}")
    if TALLY["operations"]:
        assert TALLY["operations"] % EXPECTED_OPERATIONS == 0


def test_open_and_create_take_a_ready_storage(tmp_path: Path) -> None:
    """``storage=`` is how a wrapper (here the FaultyStorage) is injected; it is used for
    every call, and it cannot be combined with ``storage_options``."""
    from lakecore.errors import InvalidArgumentError
    from lakecore.storage import open_storage

    root = tmp_path / "t"
    faulty = FaultyStorage(open_storage(str(root)))
    table = lakecore.create(str(root), delta_rows(1).schema, storage=faulty)
    assert table.storage is faulty
    assert [c.method for c in faulty.calls].count("put_if_absent") == 1  # commit 0
    faulty.reset()
    assert lakecore.open(str(root), storage=faulty).append(delta_rows(1)).version == 1
    assert any(c.path.endswith("00000000000000000001.json") for c in faulty.calls)
    with pytest.raises(InvalidArgumentError):
        lakecore.open(str(root), storage=faulty, storage_options={"anon": True})
    with pytest.raises(InvalidArgumentError):
        lakecore.open(str(root), storage=object())  # type: ignore[arg-type]


def test_a_fault_while_checking_a_winner_for_conflicts_commits_nothing(
    tmp_path: Path, templates: dict[str, Path]
) -> None:
    """Our commit lost version 4 to another writer; reading the winner fails: nothing of ours
    landed, so the error is CommitStorageError and the table holds the winner only."""

    def race(root: Path, fail_at: int | None) -> tuple[FaultyStorage, BaseException | None]:
        copy_table(templates["delta"], root)
        loser_table, faulty = open_faulty(root)
        loser = loser_table.transaction()
        loser.delete("id = 2")  # reads the table: conflicts with the winner's rows
        lakecore.open(str(root)).append(delta_rows(2))  # the winner takes version 4
        faulty.arm(fail_at)
        try:
            loser.commit()
        except BaseException as exc:
            return faulty, exc
        return faulty, None

    counting, error = race(tmp_path / "count", None)
    assert isinstance(error, lakecore.CommitConflictError)
    winner = f"_delta_log/{4:020d}.json"
    put = _commit_put(counting.calls)
    assert put is not None
    # After our put is answered "exists": the read-back of version 4, then the conflict check.
    reads = [i for i, c in enumerate(counting.calls) if i > put and c.path == winner]
    assert [counting.calls[i].method for i in reads[:3]] == ["read", "head", "read"]
    index = reads[1]
    root = tmp_path / "t"
    before = state("delta", templates["delta"])
    _, error = race(root, index)
    assert isinstance(error, CommitStorageError), error
    assert "nothing was committed" in str(error)
    now = state("delta", root)
    assert now.version == 4
    assert now.rows == with_rows("delta", before, delta_rows(2))


def test_a_format_commit_that_leaks_a_storage_fault_is_state_unknown(
    tmp_path: Path, templates: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The generic retry loop's safety net: any OSError out of a Committer's commit means the
    outcome is unknown (the format could not tell)."""
    from lakecore_delta.write.committer import DeltaCommitter

    def leaking(*args: object, **kwargs: object) -> object:
        raise ConnectionResetError("connection reset by peer")

    root = tmp_path / "t"
    copy_table(templates["delta"], root)
    table = lakecore.open(str(root))
    monkeypatch.setattr(DeltaCommitter, "commit", leaking)
    with pytest.raises(CommitStateUnknownError) as caught:
        table.append(delta_rows(10))
    assert isinstance(caught.value.__cause__, ConnectionResetError)
    assert "version 4" in str(caught.value)


@pytest.mark.s3
@pytest.mark.parametrize("mode", ["before", "after"])
def test_a_lost_reply_to_the_commit_put_on_s3_is_resolved(
    s3_uri: str, s3_storage_options: dict[str, Any], mode: str
) -> None:
    """On S3 (moto): the conditional PUT of the commit fails before it is sent, or lands and
    its reply is lost; either way the append returns its version and commits once."""
    from lakecore.storage import open_storage

    lakecore.create(s3_uri, delta_rows(1).schema, storage_options=s3_storage_options)
    table = lakecore.open(s3_uri, storage_options=s3_storage_options)
    assert table.append(delta_rows(1)).version == 1
    faulty = FaultyStorage(open_storage(s3_uri, s3_storage_options))
    table = lakecore.open(s3_uri, storage=faulty)
    faulty.arm(
        0,
        "after" if mode == "after" else "before",
        match=lambda c: c.method == "put_if_absent" and c.path.startswith("_delta_log/"),
    )
    assert table.append(delta_rows(2)).version == 2
    assert faulty.faults and faulty.faults[0].method == "put_if_absent"
    reread = lakecore.open(s3_uri, storage_options=s3_storage_options)
    assert reread.version == 2
    assert sorted(reread.to_arrow().column("id").to_pylist()) == [1, 2]


def test_a_data_file_the_store_cannot_open_is_a_storage_error_not_corruption(
    tmp_path: Path, templates: dict[str, Path]
) -> None:
    """A timeout opening a data file says so (StorageError; CommitStorageError in a write):
    calling it a corrupt table would send users to repair a healthy table."""
    root = tmp_path / "t"
    copy_table(templates["delta"], root)
    before = state("delta", root)
    table, faulty = open_faulty(root)

    def opens(call: Call) -> bool:
        return call.method == "open_input"

    faulty.arm(0, match=opens)
    with pytest.raises(StorageError) as caught:
        table.to_arrow()
    assert not isinstance(caught.value, CorruptTableError)
    assert "cannot open data file" in str(caught.value)
    faulty.arm(0, match=opens)
    with pytest.raises(CommitStorageError) as write_error:
        table.delete("id = 2")
    assert "nothing was committed" in str(write_error.value)
    assert state("delta", root) == before


def test_a_post_commit_checkpoint_that_fails_in_any_way_is_a_warning(
    tmp_path: Path,
    templates: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Not only storage faults: an engine error while writing the checkpoint (pyarrow raises
    NotImplementedError/TypeError for what it cannot write) leaves the landed commit standing."""
    from lakecore_delta.write import checkpoint_out

    def broken(*args: object, **kwargs: object) -> None:
        raise NotImplementedError("cannot write this type to Parquet")

    root = tmp_path / "t"
    copy_table(templates["delta"], root)
    monkeypatch.setattr(checkpoint_out, "write_checkpoint", broken)
    with caplog.at_level(logging.WARNING):
        assert lakecore.open(str(root)).append(delta_rows(10)).version == 4
    assert any("checkpoint of version 4 failed" in r.getMessage() for r in caplog.records)
    assert state("delta", root).version == 4
