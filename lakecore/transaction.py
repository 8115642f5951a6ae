"""Transactions: stage changes, commit once, retry past non-conflicting concurrent commits."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from types import TracebackType
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.arguments import check_schema_names
from lakecore.boundary import public_api
from lakecore.errors import (
    CommitConflictError,
    CommitError,
    CommitStateUnknownError,
    InvalidArgumentError,
    LakecoreError,
    SchemaError,
    UnsupportedFeatureError,
)
from lakecore.faults import storage_faults
from lakecore.format.capabilities import Capability
from lakecore.format.committer import Committer, Prepared
from lakecore.model.actions import (
    Action,
    AddFiles,
    CommitInfo,
    Committed,
    DeleteRows,
    RemoveFiles,
    SetSchema,
    SetTransaction,
    action_metrics,
)
from lakecore.model.distinct_values import repeated
from lakecore.model.files import PATH
from lakecore.model.metrics import WriteMetrics, WriteResult, file_metrics, record_count
from lakecore.snapshot import Snapshot

if TYPE_CHECKING:
    from lakecore.expr.assign import SetValue
    from lakecore.table import Table

log = logging.getLogger(__name__)
MAX_COMMIT_ATTEMPTS = 256

# Life cycle of a transaction: it stages while OPEN and ends once, in one of the others.
OPEN, COMMITTED, ABORTED = "open", "committed", "aborted"
UNKNOWN = "ended with an unknown outcome"


@public_api
class Transaction:
    """Stages changes against one snapshot and commits them as one version.

    Use as a context manager: the block's changes commit when it exits without an exception;
    otherwise the transaction is aborted, which deletes the files it wrote (and rolls back its
    pending Hudi instants). A commit that ends in ``CommitConflictError`` or
    ``CommitStorageError`` aborts the same way; after ``CommitStateUnknownError`` nothing is
    deleted (the commit may have landed: vacuum or a rollback deals with it later).

    Example:
        >>> with table.transaction() as tx:  # doctest: +SKIP
        ...     tx.append(batch)
        ...     tx.set_app_transaction("ingest-job", 42)
    """

    def __init__(
        self,
        table: Table,
        snapshot: Snapshot,
        app_metadata: Mapping[str, str] | None = None,
        timestamp_ms: int | None = None,
    ) -> None:
        self._table = table
        self._snapshot = snapshot
        self._actions: list[Action] = []
        self._operations: list[CommitInfo] = []
        self._state = OPEN
        self._committer: Committer | None = None
        self._app_metadata = {str(k): str(v) for k, v in (app_metadata or {}).items()}
        self._timestamp_ms = timestamp_ms
        self._started = time.monotonic()
        self._schema_replaced = False  # an overwrite with schema_mode="overwrite" is staged
        self._changed: list[pa.Array] = []  # paths of snapshot files the staged ops change
        self.version: int | str | None = None
        """The committed version, once committed."""
        self.result: WriteResult | None = None
        """The committed version and what the transaction wrote, once committed."""

    @property
    def snapshot(self) -> Snapshot:
        """The snapshot the transaction reads and writes against."""
        return self._snapshot

    def stage(self, actions: list[Action], info: CommitInfo) -> None:
        """Add already-planned actions (what ``append``/``delete``/... produce).

        ``info.metrics`` counts what they wrote; when None, the files and bytes of the
        neutral file actions are counted (``action_metrics``).
        """
        if self._state != OPEN:
            raise CommitError(f"the transaction is already {self._state}")
        if self._schema_replaced and info.operation != "SET TRANSACTION":
            raise _schema_replaced()
        if info.metrics is None:
            info = replace(info, metrics=action_metrics(actions))
        changed = _changed_paths(actions)
        twice = self._changed_before(changed)
        self._actions.extend(actions)
        self._operations.append(info)
        try:
            for action in actions:
                if isinstance(action, SetSchema):  # e.g. a schema_mode="merge" append's
                    check_schema_names(action.schema)
        except SchemaError:
            self._abort_quietly()  # its files are staged: the abort deletes them
            raise
        if twice is not None:
            # Each operation was planned against the snapshot's version of the file: together
            # they would keep its old rows twice or lose one's change (Delta committed that).
            self._abort_quietly()
            raise UnsupportedFeatureError(
                "overlapping-operations",
                f"two operations of this transaction change the same data file {twice!r}; "
                "each is planned against the snapshot, so commit them as separate "
                "transactions (this one is aborted)",
            )
        if len(changed):
            self._changed.append(changed)

    def _changed_before(self, changed: pa.Array) -> str | None:
        """A path of ``changed`` that an operation staged before also changes, else None."""
        if not len(changed) or not self._changed:
            return None
        before = pa.concat_arrays(self._changed)
        found = changed.filter(pc.is_in(changed, value_set=before))
        return str(found[0].as_py()) if len(found) else None

    @property
    def metrics(self) -> WriteMetrics:
        """What the staged operations wrote so far (their sum)."""
        return sum((i.metrics or WriteMetrics() for i in self._operations), WriteMetrics())

    @property
    def operation(self) -> str:
        """The operation the commit records (``"WRITE"``, ``"DELETE"``, ``"A + B"``, ...)."""
        return _merge_infos(self._operations).operation if self._operations else ""

    def elapsed(self) -> float:
        """Seconds since the transaction started."""
        return time.monotonic() - self._started

    def _writer(self) -> Any:
        if self._schema_replaced:  # before the write makes any file
            raise _schema_replaced()
        return self._table._format_writer(self._snapshot, self._timestamp_ms)

    # Staging writes data files: a storage fault there is a CommitStorageError (nothing is
    # committed before ``commit``), never a raw OSError.

    def append(self, data: Any, *, schema_mode: str | None = None) -> None:
        """Stage ``data`` (anything Arrow-like) as new rows (``schema_mode`` as
        ``Table.append``)."""
        self._require_schema_mode(schema_mode, "append", None)
        _check_data_names(data)
        with storage_faults("writing the appended rows"):
            self.stage(*self._writer().append(data, schema_mode))

    def overwrite(
        self, data: Any, where: str | None = None, *, schema_mode: str | None = None
    ) -> None:
        """Stage replacing the rows matching ``where`` (all rows if None) by ``data``
        (``schema_mode`` as ``Table.overwrite``)."""
        self._require_schema_mode(schema_mode, "overwrite", where)
        self._table._require(Capability.OVERWRITE)
        _check_data_names(data)
        replacing = schema_mode == "overwrite"
        if replacing and any(i.operation != "SET TRANSACTION" for i in self._operations):
            raise _schema_replaced()
        with storage_faults("writing the overwrite"):
            self.stage(*self._writer().overwrite(data, where, schema_mode))
        self._schema_replaced = replacing

    def _require_schema_mode(self, mode: str | None, operation: str, where: str | None) -> None:
        capability = schema_mode_capability(mode, operation, where)
        if capability is not None:
            self._table._require(capability)

    def delete(self, where: str | None = None) -> None:
        """Stage deleting the rows matching ``where`` (all rows if None)."""
        self._table._require(Capability.DELETE)
        with storage_faults("planning the delete"):
            self.stage(*self._writer().delete(where))

    def update(self, set: Mapping[str, SetValue], where: str | None = None) -> None:
        """Stage setting columns on the rows matching ``where`` (values as ``Table.update``
        takes them: SQL text, trees or Python literals). An empty ``set`` stages nothing
        (deltalake's ``update(updates={})`` commits nothing either); ``where`` is still
        checked (``PredicateError``/``SchemaError``)."""
        self._table._require(Capability.UPDATE)
        if isinstance(set, Mapping) and not set:
            if where is not None:
                from lakecore.expr.binding import bind, parse_predicate

                bind(parse_predicate(where), self.snapshot.schema)
            return
        with storage_faults("writing the update"):
            self.stage(*self._writer().update(set, where))

    def replace_files(
        self, data: Iterable[pa.Table], removed: pa.Table, exclusive: bool = False
    ) -> list[pa.Table]:
        """Stage writing each table of ``data`` as new data files and removing the file-index
        rows ``removed`` whole (capability ``replace_files``); returns, per table of ``data``,
        the rows of the files written for it (write layout, ``path`` first).

        ``exclusive``: the commit conflicts with any concurrent commit (a migration, whose
        bookkeeping must describe the whole table). What was written is removed when staging
        fails. Raises ``UnsupportedFeatureError`` for formats without ``replace_files``.
        """
        self._table._require(Capability.REPLACE_FILES)
        writer = self._writer()
        with storage_faults("writing the replacement files"):
            file_writer = writer.file_writer("replace", None)
            try:
                written = [file_writer.write(t, i) for i, t in enumerate(data)]
                files = (
                    pa.concat_tables(written, promote_options="permissive")
                    if written
                    else pa.table({PATH: pa.array([], pa.string())})
                )
                actions, info = writer.replace_files(file_writer, files, removed)
            except BaseException:
                writer.discard(file_writer)
                raise
        if exclusive:
            info = replace(info, read_whole_table=True)
        self.stage(actions, info)
        return written

    def adopt_files(self, files: pa.Table) -> None:
        """Stage publishing existing Parquet files as they are (capability ``adopt_files``):
        ``files`` are file-index rows (write layout: ``path`` relative to the table root,
        ``size``, ``record_count``, ``modification_time``, typed ``partition`` and stats) of
        files that must exist under the table root, e.g. another format's data files in a
        migration in place. The table never owns them: an abort leaves them where they are.

        Raises ``UnsupportedFeatureError`` for formats without ``adopt_files`` and
        ``InvalidArgumentError`` (naming the path) for a path that is absolute, leaves the root
        or is not a ``.parquet`` file, before anything is staged.
        """
        self._table._require(Capability.ADOPT_FILES)
        for path in files.column(PATH).to_pylist() if files.num_rows else []:
            parts = str(path).split("/")
            if "://" in path or path.startswith("/") or ".." in parts or "" in parts:
                raise InvalidArgumentError(
                    f"cannot adopt {path!r}: adopted files must lie under the table root "
                    "(a relative path)"
                )
            if not path.lower().endswith(".parquet"):
                raise InvalidArgumentError(f"cannot adopt {path!r}: it is not a .parquet file")
        adopted = file_metrics([files], []).with_rows(inserted=record_count(files))
        info = CommitInfo("ADOPT FILES", {"adoptedFiles": str(files.num_rows)}, metrics=adopted)
        self.stage([AddFiles(files, owned=False)], info)

    def set_app_transaction(self, app_id: str, version: int) -> None:
        """Record that ``app_id`` wrote its ``version`` in this commit (``txn`` action).

        ``UnsupportedFeatureError`` for formats without ``app_transactions``.
        """
        self._table._require(Capability.APP_TRANSACTIONS)
        self.stage([SetTransaction(app_id, int(version))], CommitInfo("SET TRANSACTION"))

    def commit(self) -> WriteResult:
        """Commit the staged changes; returns the new version and what was written
        (``WriteResult``; also kept as ``result``, the version as ``version``). With nothing
        staged nothing is committed: ``committed=False`` and the latest version.

        Retries after concurrent commits that do not conflict; raises ``CommitConflictError``
        naming the winning version otherwise, and on storage faults ``CommitStorageError``
        (nothing committed) or ``CommitStateUnknownError`` (the commit may have landed). On any
        error but ``CommitStateUnknownError`` nothing landed (the format refused the actions, a
        conflict, a storage fault, a malformed winner while rebasing), so the transaction is
        aborted before the error propagates.
        """
        if self._state != OPEN:
            raise CommitError(f"the transaction is already {self._state}")
        if not self._actions:
            return self._commit_nothing()
        self._state = UNKNOWN  # until the outcome is known: nothing may be deleted meanwhile
        committer = self._get_committer()
        info = _merge_infos(self._operations)
        if self._app_metadata or self._timestamp_ms is not None:
            info = replace(
                info,
                app_metadata={**info.app_metadata, **self._app_metadata},
                timestamp_ms=self._timestamp_ms,
            )
        info = replace(info, elapsed_ms=int(self.elapsed() * 1000))
        try:
            with storage_faults("preparing the commit"):
                prepared = committer.prepare(self._actions, info)
        except Exception:
            self._abort_quietly()  # nothing was attempted: the files can go
            raise
        try:
            self.version = commit_with_retries(committer, prepared)
        except CommitStateUnknownError:
            raise  # it may have landed: nothing may be deleted
        except Exception:
            # A conflict, a storage fault, or any other error out of rebase/prepare (a
            # malformed winner: CorruptTableError): nothing of this commit landed.
            self._abort_quietly()
            raise
        self._state = COMMITTED
        metrics = info.metrics or WriteMetrics()
        self.result = WriteResult.of(self.version, info.operation, metrics, self.elapsed())
        return self.result

    def _commit_nothing(self) -> WriteResult:
        """End a transaction that staged nothing (a delete that matched no row): no version
        on any format, as ``Table``'s writes."""
        self.result = self._nothing_committed()
        self._state = COMMITTED
        self.version = self.result.version
        return self.result

    def _nothing_committed(self) -> WriteResult:
        """The result of staging nothing: ``committed=False`` at the latest version."""
        with storage_faults("reading the latest version"):
            version = self._table._format.latest_version(self._table._storage)
        return WriteResult.of(
            version, self.operation, self.metrics, self.elapsed(), committed=False
        )

    def abort(self) -> None:
        """Drop the staged changes and delete what the transaction wrote.

        A no-op when the transaction already ended without committing (aborted, or its
        commit's outcome is unknown: then nothing is deleted).

        Raises:
            CommitError: the transaction has committed.
            CommitStorageError: the storage failed while deleting (what is left is orphaned;
                vacuum or a later writer's rollback removes it).
        """
        if self._state == COMMITTED:
            raise CommitError("the transaction is already committed")
        if self._state != OPEN:
            return
        self._state = ABORTED
        with storage_faults("aborting the transaction"):
            self._get_committer().abort(self._actions)

    def _abort_quietly(self) -> None:
        """Abort after a failure: a failed cleanup is logged, never raised (the failure is what
        the caller must see; vacuum or a later rollback removes what is left)."""
        self._state = ABORTED
        if not self._actions:
            return  # nothing was written
        try:
            self._get_committer().abort(self._actions)
        except Exception as exc:
            log.warning("could not clean up the aborted transaction: %s", exc)

    def _get_committer(self) -> Committer:
        if self._committer is None:
            fmt = self._table._writable_format()
            self._committer = fmt.committer(self._table.storage, self._snapshot)
        return self._committer

    def __enter__(self) -> Transaction:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._state != OPEN:
            return
        if exc_type is not None:
            self._abort_quietly()
        elif self._actions:
            self.commit()
        else:
            self._state = ABORTED  # nothing staged, nothing to clean up


def _check_data_names(data: Any) -> None:
    """Raise ``SchemaError`` when Arrow ``data`` repeats a column name, the same on every
    format (Lance's writer raised a translated ``KeyError``)."""
    schema = getattr(data, "schema", None)
    if not isinstance(schema, pa.Schema):
        return  # pandas and others: each writer converts and checks them
    twice = repeated(schema.names)
    if twice:
        raise SchemaError(f"column(s) {twice} appear more than once in the data")


def _changed_paths(actions: list[Action]) -> pa.Array:
    """The paths of the snapshot's files ``actions`` remove or delete rows from."""
    paths = [
        a.files.column(PATH).combine_chunks().cast(pa.string())
        for a in actions
        if isinstance(a, RemoveFiles | DeleteRows) and PATH in a.files.column_names
    ]
    return pa.concat_arrays(paths) if paths else pa.array([], pa.string())


def _schema_replaced() -> InvalidArgumentError:
    # Every write of a transaction is planned against its snapshot's schema: rows staged
    # before or after a schema overwrite would be read under a schema they were not written for.
    return InvalidArgumentError(
        "an overwrite with schema_mode='overwrite' must be the only write of its transaction"
    )


SCHEMA_MODES = {"merge": Capability.SCHEMA_MERGE, "overwrite": Capability.SCHEMA_OVERWRITE}
"""deltalake's ``schema_mode`` values and the capability each needs."""


def schema_mode_capability(
    mode: str | None, operation: str, where: str | None = None
) -> Capability | None:
    """The capability a write with ``schema_mode=mode`` needs (None for the default).

    Raises ``InvalidArgumentError`` for an unknown mode, ``"overwrite"`` with an append (as
    deltalake) or with ``where`` (the rows the overwrite keeps have the old schema).
    """
    if mode is None:
        return None
    if mode not in SCHEMA_MODES:
        raise InvalidArgumentError(
            f"schema_mode must be None, 'merge' or 'overwrite', not {mode!r}"
        )
    if mode == "overwrite" and operation != "overwrite":
        raise InvalidArgumentError(
            f"schema_mode='overwrite' replaces the schema: it takes an overwrite, not an "
            f"{operation} (use schema_mode='merge' to add columns)"
        )
    if mode == "overwrite" and where is not None:
        raise InvalidArgumentError(
            "schema_mode='overwrite' with where= would leave the rows outside it in the old "
            "schema; use schema_mode='merge' (adds columns) or overwrite every row"
        )
    return SCHEMA_MODES[mode]


def _merge_infos(infos: list[CommitInfo]) -> CommitInfo:
    real = [i for i in infos if i.operation != "SET TRANSACTION"] or infos
    metrics = sum((i.metrics or WriteMetrics() for i in infos), WriteMetrics())
    if len(real) == 1:
        return replace(real[0], metrics=metrics)
    predicates = [i.read_predicate for i in real if i.read_predicate]
    return CommitInfo(
        operation=" + ".join(i.operation for i in real) if real else "WRITE",
        parameters={"operations": [i.operation for i in real]},
        read_predicate=" OR ".join(f"({p})" for p in predicates) if predicates else None,
        read_whole_table=any(i.read_whole_table for i in real),
        metrics=metrics,
    )


def commit_with_retries(
    committer: Committer,
    prepared: Prepared,
    on_retry: Callable[[int | str], None] | None = None,
) -> int | str:
    """Commit ``prepared``, rebasing past concurrent commits that do not conflict.

    Never raises a raw ``OSError``. A Committer's ``commit`` resolves its own storage faults
    where it can (Delta reads the log entry back); one that still escapes it leaves the
    outcome unknown: ``CommitStateUnknownError``. A fault while rebasing onto a winner is
    ``CommitStorageError``: this transaction had not landed then. ``CommitConflictError``
    when a winner conflicts (raised by ``rebase``) or after ``MAX_COMMIT_ATTEMPTS`` lost races.
    """
    for attempt in range(MAX_COMMIT_ATTEMPTS):
        if attempt:
            # Jitter after a lost race: writers that keep colliding spread out instead of
            # racing for the next version in lockstep (a busy machine starved one otherwise).
            time.sleep(random.uniform(0, min(0.002 * attempt, 0.1)))
        try:
            outcome = committer.commit(prepared)
        except LakecoreError:
            raise
        except OSError as exc:
            raise CommitStateUnknownError(
                f"the storage raised {type(exc).__name__} while committing version "
                f"{prepared.version}: {exc}; the commit may or may not have landed: read the "
                "table's history before running the operation again"
            ) from exc
        if isinstance(outcome, Committed):
            return outcome.version
        winner = outcome.version
        log.info("version %s was taken by another writer; checking for conflicts", winner)
        with storage_faults(f"checking concurrent version {winner} for conflicts"):
            prepared = committer.rebase(prepared, winner)
        if on_retry:
            on_retry(winner)
    raise CommitConflictError(
        f"gave up after {MAX_COMMIT_ATTEMPTS} attempts: other writers keep committing first",
        winning_version=prepared.version,
    )
