"""The Committer contract and the core's generic commit loop (``commit_with_retries``).

A scripted Committer drives the loop through every path: landing, rebasing past winners that
do not conflict, a winner that conflicts, storage faults in commit (unknown outcome) and in
rebase (nothing landed), and giving up. The plugins' Committers are checked against the
protocol, and Delta's abort against paths it must never delete.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pytest
from lakecore_delta.deletion_vectors import (
    DeletionVectorDescriptor,
    inline_descriptor,
    uuid_descriptor,
)
from lakecore_delta.file_index import deletion_value
from lakecore_delta.write.committer import DeltaCommitter, owned_files
from lakecore_hudi.timeline.active import load_timeline
from lakecore_hudi.write.committer import HudiCommitter
from lakecore_hudi.write.writer import state_of

import lakecore
from lakecore import transaction
from lakecore.errors import (
    CommitConflictError,
    CommitError,
    CommitStateUnknownError,
    CommitStorageError,
)
from lakecore.format.committer import Committer, Prepared
from lakecore.format.writing import WritableFormat
from lakecore.model import files as fi
from lakecore.model.actions import (
    Action,
    AddFiles,
    CommitInfo,
    CommitOutcome,
    Committed,
    Conflict,
    DeleteRows,
)
from lakecore.transaction import commit_with_retries
from tests.hudi.write.helpers import create as create_hudi
from tests.hudi.write.helpers import rows as hudi_rows

INFO = CommitInfo("WRITE")


class Scripted:
    """A Committer whose commit outcomes and rebase answers follow a script."""

    def __init__(
        self,
        outcomes: Sequence[CommitOutcome | BaseException],
        conflicting: set[int | str] = frozenset(),  # type: ignore[assignment]
        rebase_fault: BaseException | None = None,
    ) -> None:
        self.outcomes = list(outcomes)
        self.conflicting = conflicting
        self.rebase_fault = rebase_fault
        self.attempts: list[int | str] = []
        self.aborted: list[Sequence[Action]] = []

    def prepare(self, actions: Sequence[Action], info: CommitInfo) -> Prepared:
        return Prepared(1, tuple(actions), info, b"v1")

    def commit(self, prepared: Prepared) -> CommitOutcome:
        self.attempts.append(prepared.version)
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def rebase(self, prepared: Prepared, winner: int | str) -> Prepared:
        if self.rebase_fault is not None:
            raise self.rebase_fault
        if winner in self.conflicting:
            raise CommitConflictError(f"{winner} conflicts", winning_version=winner)
        return Prepared(int(winner) + 1, prepared.actions, prepared.info, b"next")

    def abort(self, actions: Sequence[Action]) -> None:
        self.aborted.append(actions)


def _prepared(committer: Scripted) -> Prepared:
    return committer.prepare([], INFO)


def test_the_scripted_committer_and_the_plugins_follow_the_protocol(tmp_path: Path) -> None:
    assert isinstance(Scripted([]), Committer)
    delta = lakecore.create(str(tmp_path / "d"), pa.schema([("id", pa.int64())]))
    hudi = create_hudi(tmp_path / "h")
    checked = 0
    for table, cls in ((delta, DeltaCommitter), (hudi, HudiCommitter)):
        fmt = table._writable_format()
        assert isinstance(fmt, WritableFormat)
        committer = fmt.committer(table.storage, table.snapshot())
        assert isinstance(committer, cls)
        assert isinstance(committer, Committer)
        checked += 1
    assert checked == 2


def test_a_first_attempt_that_lands_returns_its_version() -> None:
    committer = Scripted([Committed(1)])
    assert commit_with_retries(committer, _prepared(committer)) == 1
    assert committer.attempts == [1]


def test_winners_that_do_not_conflict_are_rebased_past() -> None:
    committer = Scripted([Conflict(1), Conflict(2), Committed(3)])
    seen: list[int | str] = []
    assert commit_with_retries(committer, _prepared(committer), seen.append) == 3
    assert committer.attempts == [1, 2, 3]
    assert seen == [1, 2]


def test_a_conflicting_winner_raises_from_rebase() -> None:
    committer = Scripted([Conflict(1), Conflict(2)], conflicting={2})
    with pytest.raises(CommitConflictError) as caught:
        commit_with_retries(committer, _prepared(committer))
    assert caught.value.winning_version == 2
    assert committer.attempts == [1, 2]


def test_a_storage_fault_out_of_commit_is_state_unknown() -> None:
    committer = Scripted([Conflict(1), TimeoutError("reply lost")])
    with pytest.raises(CommitStateUnknownError, match="version 2") as caught:
        commit_with_retries(committer, _prepared(committer))
    assert isinstance(caught.value.__cause__, TimeoutError)


def test_a_storage_fault_while_rebasing_is_a_commit_storage_error() -> None:
    committer = Scripted([Conflict(1)], rebase_fault=ConnectionResetError("reset"))
    with pytest.raises(CommitStorageError, match="nothing was committed"):
        commit_with_retries(committer, _prepared(committer))


def test_typed_errors_out_of_commit_pass_through() -> None:
    committer = Scripted([CommitStorageError("before the put")])
    with pytest.raises(CommitStorageError, match="before the put"):
        commit_with_retries(committer, _prepared(committer))


def test_the_loop_gives_up_after_the_attempt_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transaction, "MAX_COMMIT_ATTEMPTS", 5)
    monkeypatch.setattr(transaction.time, "sleep", lambda seconds: None)
    committer = Scripted([Conflict(v) for v in range(1, 6)])
    with pytest.raises(CommitConflictError, match="gave up after 5 attempts") as caught:
        commit_with_retries(committer, _prepared(committer))
    assert committer.attempts == [1, 2, 3, 4, 5]
    assert caught.value.winning_version == 6


# ------------------------------------------------------------------ Delta's abort: own files only


def _index(
    paths: list[str], deletion: list[DeletionVectorDescriptor | None] | None = None
) -> pa.Table:
    values = [None if d is None else deletion_value(d) for d in deletion or [None] * len(paths)]
    return pa.table(
        {
            "path": pa.array(paths, pa.string()),
            "deletion": pa.array(values, fi.DELETION_TYPE),
        }
    )


def test_delta_abort_deletes_only_owned_files_inside_the_table() -> None:
    root = "file:///data/t"
    descriptor = uuid_descriptor(uuid.uuid4(), offset=1, size_in_bytes=10, cardinality=1)
    actions: list[Action] = [
        AddFiles(_index(["p=1/a.parquet", "../escape.parquet", "_delta_log/00.json"]), owned=True),
        AddFiles(_index(["old.parquet"])),  # not owned (a restore re-adding a file)
        AddFiles(_index(["file:///data/t/b.parquet", "file:///elsewhere/c.parquet"]), owned=True),
        DeleteRows(_index(["d.parquet"], [descriptor]), owned=True),
        DeleteRows(_index(["e.parquet"], [inline_descriptor([0])]), owned=True),
    ]
    paths = owned_files(actions, root)
    # Not the escaping, log or foreign paths, nor the data file a DeleteRows names, nor
    # anything of the action that is not owned, nor an inline DV.
    assert descriptor.relative_path is not None
    assert paths == sorted(["b.parquet", "p=1/a.parquet", descriptor.relative_path])


# ------------------------------------------------------------------ Transaction states


def test_explicit_abort_ends_the_transaction(tmp_path: Path) -> None:
    table = lakecore.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]))
    tx = table.transaction()
    tx.append(pa.table({"id": [1]}))
    tx.abort()
    tx.abort()  # a second abort does nothing
    with pytest.raises(CommitError, match="aborted"):
        tx.append(pa.table({"id": [2]}))
    with pytest.raises(CommitError, match="aborted"):
        tx.commit()
    done = table.transaction()
    done.append(pa.table({"id": [3]}))
    done.commit()
    with pytest.raises(CommitError, match="committed"):
        done.abort()
    assert lakecore.open(str(tmp_path / "t")).to_arrow().column("id").to_pylist() == [3]


def test_hudi_prepare_refuses_foreign_actions_and_abort_rolls_back(tmp_path: Path) -> None:
    from lakecore.model.actions import SetProperties

    table = create_hudi(tmp_path / "t")
    table.append(hudi_rows((1, "a", 1, "x")))
    tx = table.transaction()
    tx.append(hudi_rows((2, "b", 1, "x")))
    tx.stage([SetProperties({"k": "v"})], CommitInfo("SET PROPERTIES"))
    with pytest.raises(lakecore.UnsupportedFeatureError, match="SetProperties"):
        tx.commit()
    config = state_of(table.snapshot()).config
    assert load_timeline(table.storage, config).pending() == ()
    assert lakecore.open(str(tmp_path / "t")).to_arrow().column("id").to_pylist() == [1]


def test_a_failed_cleanup_keeps_the_original_error_and_explicit_abort_types_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def unreachable(self: DeltaCommitter, actions: Sequence[Action]) -> None:
        raise ConnectionResetError("connection reset by peer")

    monkeypatch.setattr(DeltaCommitter, "abort", unreachable)
    table = lakecore.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]))
    with pytest.raises(RuntimeError, match="boom"), table.transaction() as tx:
        tx.append(pa.table({"id": [1]}))
        raise RuntimeError("boom")
    assert "could not clean up the aborted transaction" in caplog.text
    explicit = table.transaction()
    explicit.append(pa.table({"id": [2]}))
    with pytest.raises(CommitStorageError, match="aborting the transaction"):
        explicit.abort()
    assert lakecore.open(str(tmp_path / "t")).to_arrow().num_rows == 0


def test_hudi_prepare_of_nothing_is_an_invalid_argument(tmp_path: Path) -> None:
    table = create_hudi(tmp_path / "t")
    table.append(hudi_rows((1, "a", 1, "x")))
    with pytest.raises(lakecore.InvalidArgumentError, match="nothing to commit"):
        HudiCommitter(table.storage, table.snapshot()).prepare([], INFO)
