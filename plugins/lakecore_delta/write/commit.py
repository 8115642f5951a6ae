"""Committing to the Delta log: a version's bytes, one put-if-absent per version, and Delta's
conflict checks (``DeltaCommitter`` in ``committer`` drives them)."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import (
    CommitConflictError,
    CommitStateUnknownError,
    ConstraintViolationError,
    LakecoreError,
)
from lakecore.expr import tree as ex
from lakecore.expr.evaluate import evaluate_predicate
from lakecore.expr.sql import parse_sql
from lakecore.model.actions import (
    Action,
    AddFiles,
    CommitInfo,
    CommitOutcome,
    Committed,
    Conflict,
    DeleteRows,
    RemoveFiles,
    SetProperties,
    SetSchema,
    SetTransaction,
)
from lakecore.model.schema import physical_name
from lakecore.planning.candidates import candidate_files, dml_predicate
from lakecore.storage import Storage
from lakecore_delta.commit_metadata import commit_timestamp
from lakecore_delta.file_index import index_actions
from lakecore_delta.log.commits import first_action, parse_actions
from lakecore_delta.log.files import LogFile, LogFileKind, commit_path
from lakecore_delta.log.schemas import partition_values_type
from lakecore_delta.partitions import typed_partition_values
from lakecore_delta.paths import decode_paths
from lakecore_delta.protocol import COLUMN_MAPPING_MODE
from lakecore_delta.scan import scan_context
from lakecore_delta.schema import schema_string
from lakecore_delta.state import DeltaState
from lakecore_delta.write.checkpoint_out import maybe_checkpoint
from lakecore_delta.write.features import protocol_for, required_features
from lakecore_delta.write.log_out import (
    commit_info_line,
    encode_lines,
    file_action_lines,
    now_ms,
    physical_names,
)

log = logging.getLogger(__name__)

PUT_ATTEMPTS = 3
"""Puts of one commit file whose failure left it absent, before the outcome is called unknown."""


def _new_metadata(state: DeltaState, actions: Sequence[Action]) -> dict[str, Any] | None:
    schema = next((a.schema for a in reversed(actions) if isinstance(a, SetSchema)), None)
    props = [a.properties for a in actions if isinstance(a, SetProperties)]
    if schema is None and not props:
        return None
    metadata = dict(state.metadata)
    configuration = dict(metadata.get("configuration") or {})
    for change in props:
        for k, v in change.items():
            if v is None:
                configuration.pop(k, None)
            else:
                configuration[k] = v
    metadata["configuration"] = configuration
    if schema is not None:
        metadata["schemaString"] = schema_string(schema)
    return metadata


def _check_append_only(state: DeltaState, actions: Sequence[Action]) -> None:
    if str(state.configuration.get("delta.appendOnly", "false")).lower() != "true":
        return
    for a in actions:
        if isinstance(a, DeleteRows) or (isinstance(a, RemoveFiles) and a.data_change):
            raise ConstraintViolationError(
                "the table is append-only (delta.appendOnly=true): rows cannot be deleted "
                "or updated"
            )


def commit_bytes(
    state: DeltaState,
    actions: Sequence[Action],
    info: CommitInfo,
    version: int,
    previous_ict: int = 0,
) -> bytes:
    """The bytes of commit ``version`` applying ``actions`` to ``state``.

    ``previous_ict`` is the in-commit timestamp of commit ``version - 1`` when that is not
    ``state``'s own (after a retry): in-commit timestamps must strictly increase. A commit
    given ``info.timestamp_ms`` records it as its in-commit timestamp.

    Raises:
        ConstraintViolationError: rows removed from an append-only table.
        UnsupportedFeatureError: ``info.timestamp_ms`` on a table without in-commit
            timestamps (after this commit's property changes).
        CommitError: ``info.timestamp_ms`` is not later than the previous commit's.
    """
    _check_append_only(state, actions)
    now = now_ms()
    metadata = _new_metadata(state, actions)
    configuration = (metadata or state.metadata).get("configuration") or {}
    schema = state.schema
    if metadata is not None and any(isinstance(a, SetSchema) for a in actions):
        schema = next(a.schema for a in reversed(actions) if isinstance(a, SetSchema))
    protocol = protocol_for(required_features(schema, configuration), state.protocol)
    ict = commit_timestamp(info, configuration, now, max(state.timestamp or 0, previous_ict))
    blind = all(isinstance(a, AddFiles | SetTransaction) for a in actions)
    lines: list[dict[str, Any]] = [
        commit_info_line(info, state.version, now, ict, blind and info.read_predicate is None)
    ]
    if protocol != _normalized(state.protocol):
        lines.append({"protocol": protocol})
    if metadata is not None:
        lines.append({"metaData": metadata})
    mapped = configuration.get(COLUMN_MAPPING_MODE, "none") != "none"
    lines.extend(
        file_action_lines(
            actions,
            physical_names(schema, state.partition_columns, mapped),
            now,
            [f for f in schema if f.name not in state.partition_columns],
        )
    )
    return encode_lines(lines)


def _normalized(protocol: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        k: protocol[k] for k in ("minReaderVersion", "minWriterVersion") if k in protocol
    }
    for k in ("readerFeatures", "writerFeatures"):
        if protocol.get(k) is not None:
            out[k] = sorted(protocol[k])
    return out


def put_commit(storage: Storage, version: int, payload: bytes) -> CommitOutcome:
    """Put ``payload`` as commit ``version`` unless it exists; a failed put is read back.

    A put can fail after its request landed (a timeout or reset once the PUT was sent), and a
    put answered "exists" may have met its own earlier, retried request (s3 retries). Either
    way the commit file is read back and compared with ``payload`` (which holds a unique
    ``txnId``): our bytes -> ``Committed``; another writer's -> ``Conflict`` (the caller checks
    it for conflicts and retries); absent -> the same put is tried again. That is safe: should
    the failed request land later, the retry's put-if-absent fails and the read-back finds our
    bytes, so the commit can never land twice.

    Raises:
        CommitStateUnknownError: the read-back failed too, or the file stayed absent through
            ``PUT_ATTEMPTS`` failed puts (a request still in flight could yet land).
    """
    path = commit_path(version)
    failure: OSError | None = None
    for _ in range(PUT_ATTEMPTS):
        try:
            storage.put_if_absent(path, payload)
        except FileExistsError:
            pass
        except OSError as exc:
            failure = exc
            log.warning("putting %s failed (%s); reading it back to see if it landed", path, exc)
        else:
            return Committed(version)
        landed = _read_back(storage, path, payload, failure)
        if landed == payload:
            log.info("commit %s landed although its put reported %s", version, failure)
            return Committed(version)
        if landed is not None:
            return Conflict(version)
    raise CommitStateUnknownError(
        f"commit {version} may or may not have landed: {PUT_ATTEMPTS} puts of {path} failed "
        f"(last: {failure}) and it is not there yet; {_look_for(payload)}"
    ) from failure


def _read_back(
    storage: Storage, path: str, payload: bytes, failure: OSError | None
) -> bytes | None:
    """The bytes at ``path`` (None when absent); ``CommitStateUnknownError`` if unreadable."""
    try:
        return storage.read(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CommitStateUnknownError(
            f"commit {path} may or may not have landed: the put failed ({failure or 'exists'}) "
            f"and reading it back failed too ({type(exc).__name__}: {exc}); {_look_for(payload)}"
        ) from exc


def _look_for(payload: bytes) -> str:
    """How the user can tell whether the commit landed: its ``txnId`` in the log."""
    first = json.loads(payload.split(b"\n", 1)[0])
    txn = (first.get("commitInfo") or {}).get("txnId")
    return f"the commit landed if the table's history holds txnId {txn}"


def after_commit(storage: Storage, version: int, configuration: Mapping[str, str] | None) -> None:
    """Run the post-commit hooks of landed commit ``version`` (the checkpoint every N commits).

    Must never raise: the commit stands whatever happens here, and the caller returns its
    version. A failure is logged as a warning (``configuration`` as for ``maybe_checkpoint``).
    """
    try:
        maybe_checkpoint(storage, version, configuration)
    except Exception as exc:  # any failure at all: a landed commit must not be reported failed
        log.warning(
            "post-commit checkpoint of version %s failed (the commit stands): %s", version, exc
        )


def in_commit_timestamp(storage: Storage, version: int) -> int:
    """The in-commit timestamp of commit ``version`` (0 when it has none)."""
    path = commit_path(version)
    f = LogFile(storage.head(path), LogFileKind.COMMIT, version)
    first = first_action(storage.read(path), f) or {}
    info = first.get("commitInfo") if isinstance(first.get("commitInfo"), dict) else {}
    return int((info or {}).get("inCommitTimestamp") or 0)


def _winner_actions(storage: Storage, winner: int) -> list[dict[str, Any]]:
    path = commit_path(winner)
    info = storage.head(path)
    return parse_actions(storage.read(path), LogFile(info, LogFileKind.COMMIT, winner))


def check_conflicts(
    storage: Storage,
    state: DeltaState,
    winner: int,
    actions: Sequence[Action],
    info: CommitInfo,
) -> None:
    """Raise ``CommitConflictError`` if commit ``winner`` invalidates this transaction.

    Like Delta's conflict checker: a metadata or protocol change, a concurrent delete of a
    file this transaction removes or rewrites, new files where this transaction read
    (when it read anything), or the same application transaction id, all conflict. Blind
    appends never conflict with appends.
    """
    theirs = _winner_actions(storage, winner)

    def conflict(why: str) -> CommitConflictError:
        return CommitConflictError(
            f"concurrent commit {winner} conflicts with this {info.operation}: {why}",
            winning_version=winner,
        )

    for a in theirs:
        if "metaData" in a or "protocol" in a:
            raise conflict("it changed the table metadata or protocol")
    our_apps = {a.app_id for a in actions if isinstance(a, SetTransaction)}
    their_apps = {a["txn"].get("appId") for a in theirs if isinstance(a.get("txn"), dict)}
    if our_apps & their_apps:
        raise conflict(f"application transaction {sorted(our_apps & their_apps)} committed twice")
    ours_removed = _our_removed_paths(actions)
    if ours_removed:
        their_removed = _decoded(
            [a["remove"]["path"] for a in theirs if isinstance(a.get("remove"), dict)], storage
        )
        both = ours_removed & their_removed
        if both:
            raise conflict(f"it also removed or rewrote {sorted(both)[:3]}")
    if info.read_predicate is not None or info.read_whole_table:
        added = [
            a["add"]
            for a in theirs
            if isinstance(a.get("add"), dict) and a["add"].get("dataChange", True)
        ]
        if added and (
            info.read_whole_table or _may_match(storage, state, added, info.read_predicate)
        ):
            raise conflict("it added rows where this transaction read")


def _may_match(
    storage: Storage, state: DeltaState, added: list[dict[str, Any]], predicate: str | None
) -> bool:
    """Whether rows of the added files could satisfy ``predicate``.

    The scan planner's question, asked of the added files' index rows (partition values,
    then min/max/null_count stats; a file without stats may match), with the tree the
    transaction's DML evaluated (``dml_predicate``). When the predicate no longer binds (the
    winner changed the schema) or the added files do not index, it is decided on partition
    values when it names partition columns only; otherwise any added file may match.
    """
    if predicate is None:
        return True
    try:
        planned: ex.Predicate | None = dml_predicate(predicate, state.schema)
    except LakecoreError:
        planned = None
    if planned is not None:
        index = _added_index(state, added)
        if index is not None:
            kept = candidate_files(index, planned, scan_context(storage, state))
            return bool(kept.num_rows > 0)
    return _may_match_partitions(state, added, predicate)


def _added_index(state: DeltaState, added: list[dict[str, Any]]) -> pa.Table | None:
    """The file index of the winner's add actions under ``state`` (None: they do not fit the
    add layout, so the caller falls back to a coarser answer)."""
    schema = state.adds.schema
    rows = [{name: add.get(name) for name in schema.names} for add in added]
    try:
        return index_actions(pa.Table.from_pylist(rows, schema=schema), state)
    except (pa.ArrowException, TypeError, ValueError, LakecoreError):
        return None


def _may_match_partitions(state: DeltaState, added: list[dict[str, Any]], predicate: str) -> bool:
    """Decided exactly when ``predicate`` names partition columns only (files in other
    partitions cannot match); otherwise any added file may match."""
    columns = set(ex.columns_of(parse_sql(predicate)))
    if not columns or not columns <= set(state.partition_columns):
        return True
    fields = state.partition_fields()
    raw = pa.array(
        [
            {
                physical_name(f): (add.get("partitionValues") or {}).get(physical_name(f))
                for f in fields
            }
            for add in added
        ],
        partition_values_type([physical_name(f) for f in fields]),
    )
    values = pa.Table.from_struct_array(typed_partition_values(raw, fields))
    truth = evaluate_predicate(predicate, values)
    # Unknown (null) counts as a possible match.
    return bool(pc.any(pc.fill_null(truth, True)).as_py())


def _our_removed_paths(actions: Sequence[Action]) -> set[str]:
    out: set[str] = set()
    for a in actions:
        if isinstance(a, RemoveFiles | DeleteRows):
            out.update(a.files.column("path").to_pylist())
    return out


def _decoded(paths: list[str], storage: Storage) -> set[str]:
    import pyarrow as pa

    if not paths:
        return set()
    return set(decode_paths(pa.array(paths, pa.string()), storage.root).to_pylist())
