"""HudiWriter: plans inserts, upserts, deletes, updates, merges and overwrites on a snapshot.

Each operation validates its input and plans its row changes first (nothing is written if
that fails), then runs the instant's life cycle up to inflight: rolls back failed writes,
takes a new instant time (``.requested``), names every file in the ``.inflight`` metadata,
writes the files, and returns ``[FormatPayload("hudi", PlannedInstant)]``. The Hudi Committer
(``committer``) completes the instant, or rolls it back when the transaction aborts. A failure
while writing files rolls the instant back at once.

Actions: CoW writes are ``commit``s, MoR writes ``deltacommit``s, overwrites (and deleting every
row) and ``replace_files`` ``replacecommit``s that list the replaced file groups.

A writer made with ``timestamp_ms`` takes that instant time (``CommitInfo.timestamp_ms``) for
its write instead of the clock's. Keyless tables (no record key fields) take appends,
overwrites, updates, deletes and ``replace_files``; upserts and merges are refused.
"""

from __future__ import annotations

import contextlib
import logging
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa

from lakecore.errors import InvalidArgumentError, SchemaError, UnsupportedFeatureError
from lakecore.expr.assign import SetValue, assignment_sql
from lakecore.expr.evaluate import evaluate_predicate
from lakecore.format import SchemaUpdate
from lakecore.format.writing import DataFileWriter
from lakecore.model import files as fi
from lakecore.model.actions import Action, CommitInfo, FormatPayload
from lakecore.model.data_input import to_arrow_table
from lakecore.model.merge import MergeClauses
from lakecore.model.metrics import WriteMetrics
from lakecore.planning.candidates import merge_read_predicate
from lakecore.planning.merge_eval import check_merge as check_merge_clauses
from lakecore.planning.merge_eval import merge_on, whole_table
from lakecore.snapshot import Snapshot
from lakecore.storage import Storage
from lakecore_hudi.keys import META_FIELDS, RECORD_KEY
from lakecore_hudi.mdt.index_gate import ensure_index_partitions_writable
from lakecore_hudi.names import parse_base_file_name
from lakecore_hudi.source import HudiSnapshotSource
from lakecore_hudi.state import HudiState, instant_text
from lakecore_hudi.timeline.commit_metadata import (
    CommitMetadata,
    WriteStat,
    encode_commit_metadata,
    stats_by_partition,
)
from lakecore_hudi.timeline.instants import INFLIGHT, REPLACE_COMMIT, make_instant
from lakecore_hudi.timeline.lifecycle import write_inflight
from lakecore_hudi.timeline.rewrite_plans import encode_requested_replace
from lakecore_hudi.write import heartbeat
from lakecore_hudi.write.apply import FileJob, plan_jobs, planned_stat, run_job
from lakecore_hudi.write.candidates import candidate_slices, slices_for_keys
from lakecore_hudi.write.changes import ChangeSet, SliceRows, plan_upsert
from lakecore_hudi.write.dml import check_assignments, plan_delete, plan_overwrite, plan_update
from lakecore_hudi.write.file_writer import HudiFileWriter
from lakecore_hudi.write.instant_metrics import instant_metrics
from lakecore_hudi.write.layout import ensure_writable, layout_for
from lakecore_hudi.write.merge import check_merge, merge_source, plan_merge
from lakecore_hudi.write.planned import FileGroup, PlannedInstant, start_instant
from lakecore_hudi.write.rollback import rollback_failed_writes, rollback_instant
from lakecore_hudi.write.rows_in import conform, dedupe, keyed
from lakecore_hudi.write.schema_update import HudiSchemaUpdate
from lakecore_hudi.write.sizing import records_per_file

FORMAT = "hudi"
REPLACE_FILES_OPERATION = "INSERT_OVERWRITE"
"""The operation type of a ``replace_files`` replacecommit: Hudi has no operation for
"publish these file groups, replace those"; INSERT_OVERWRITE is the one whose replacecommits
mean exactly that to its readers (new file groups in, listed file groups out)."""
log = logging.getLogger(__name__)


def source_of(snapshot: Snapshot) -> HudiSnapshotSource:
    """The Hudi source behind a lakecore Snapshot of a Hudi table; ``TypeError`` otherwise."""
    source = snapshot.source
    if not isinstance(source, HudiSnapshotSource):
        raise TypeError("not a Hudi snapshot")
    return source


def state_of(snapshot: Snapshot) -> HudiState:
    """The Hudi state behind a lakecore Snapshot of a Hudi table."""
    return source_of(snapshot).state


class HudiWriter:
    """Writes the files of one operation against ``snapshot`` and returns its planned instant."""

    def __init__(
        self, storage: Storage, snapshot: Snapshot, timestamp_ms: int | None = None
    ) -> None:
        self._storage = storage
        self._snapshot = snapshot
        # A commit replaying a given time takes that instant time (CommitInfo.timestamp_ms):
        # instant times are what Hudi's time travel compares.
        self._at = None if timestamp_ms is None else instant_text(timestamp_ms)
        self._state = state_of(snapshot)
        self._config = self._state.config
        ensure_writable(self._config)
        ensure_index_partitions_writable(storage, self._config, self._state.table_schema)
        self._rows = SliceRows(storage, self._state)
        self._layout = layout_for(self._config, self._state.table_schema, self._stored_key())
        self._alive: dict[str, contextlib.ExitStack] = {}

    # ---------------------------------------------------------------- operations

    def append(self, data: Any, schema_mode: str | None = None) -> tuple[list[Action], CommitInfo]:
        """Insert ``data`` into new file groups (keys are not looked up: Hudi's ``insert``)."""
        rows = self._keyed(data, schema_mode)
        changes = ChangeSet(inserts=[rows] if rows.num_rows else [])
        return self._write(changes, "INSERT", CommitInfo("INSERT", {"rows": rows.num_rows}))

    def upsert(self, data: Any) -> tuple[list[Action], CommitInfo]:
        """Insert or update ``data`` by record key (the batch is first reduced to one row per
        key: the greatest precombine value, the last row on ties)."""
        self._require_key("upsert")
        # Every column, as appends by default: a missing one would overwrite stored values
        # with nulls (Hudi's writers refuse such records too).
        rows = dedupe(self._keyed(data, None), self._layout)
        changes = plan_upsert(self._rows, rows, self._ordering(), self._slices_for_keys(rows))
        return self._write(changes, "UPSERT", CommitInfo("UPSERT", {"rows": rows.num_rows}))

    def delete(self, where: str | None) -> tuple[list[Action], CommitInfo]:
        if where is None:
            info = CommitInfo("DELETE", {"predicate": None}, read_whole_table=True)
            return self._replace(
                ChangeSet(), set(range(len(self._state.slices))), "DELETE_PARTITION", info, True
            )
        self._validate(where)
        changes = plan_delete(self._rows, where, candidate_slices(self._snapshot, where))
        info = CommitInfo("DELETE", {"predicate": where}, read_predicate=where)
        if changes.empty:
            return [], info  # nothing matched: no instant, as Delta commits nothing
        return self._write(changes, "DELETE", info)

    def overwrite(
        self, data: Any, where: str | None, schema_mode: str | None = None
    ) -> tuple[list[Action], CommitInfo]:
        if where is not None:
            self._validate(where)
        rows = self._keyed(data, schema_mode)
        candidates = candidate_slices(self._snapshot, where)
        changes, replaced = plan_overwrite(self._rows, self._layout, rows, where, candidates)
        n = rows.num_rows
        if where is None:
            info = CommitInfo("INSERT_OVERWRITE_TABLE", {}, read_whole_table=True)
            return self._replace(changes, replaced, "INSERT_OVERWRITE_TABLE", info, True, n)
        info = CommitInfo("INSERT_OVERWRITE", {"predicate": where}, read_predicate=where)
        return self._replace(changes, replaced, "INSERT_OVERWRITE", info, False, n)

    def update(
        self, set: Mapping[str, SetValue], where: str | None
    ) -> tuple[list[Action], CommitInfo]:
        self._validate(where)
        check_assignments(set, self._layout, self._state.table_schema.empty_table())
        candidates = candidate_slices(self._snapshot, where)
        changes = plan_update(self._rows, self._layout, set, where, candidates)
        rendered = {name: assignment_sql(value) for name, value in set.items()}
        info = CommitInfo("UPDATE", {"set": rendered, "predicate": where}, read_predicate=where)
        if changes.empty:
            return [], info
        return self._write(changes, "UPSERT", info)

    def merge(
        self, source: Any, on: Sequence[str], clauses: MergeClauses
    ) -> tuple[list[Action], CommitInfo]:
        self._require_key("merge")
        check_merge(on, clauses, self._layout)
        rows = merge_source(to_arrow_table(source), self._layout)
        keys = merge_on(on, clauses)
        check_merge_clauses(rows, self._layout.data_schema, keys, clauses)
        whole = whole_table(keys, clauses)
        # A not-matched-by-source clause looks at every record; else only the slices that
        # may hold one of the source's keys.
        candidates = list(range(len(self._state.slices))) if whole else self._slices_for_keys(rows)
        changes = plan_merge(self._rows, self._layout, rows, clauses, candidates)
        # What the merge read: the source's key range (the question its slices answered).
        read = None if whole else merge_read_predicate(rows, on, self._state.table_schema)
        info = CommitInfo("MERGE", {"on": list(on)}, read_predicate=read, read_whole_table=whole)
        return self._write(changes, "UPSERT", info)

    def schema_update(self) -> SchemaUpdate:
        """Add nullable columns or widen types (``schema_update.HudiSchemaUpdate``)."""
        return HudiSchemaUpdate(self._storage, self._layout, self._at)

    def add_constraint(self, name: str, sql: str) -> tuple[list[Action], CommitInfo]:
        raise UnsupportedFeatureError("constraints", "Hudi tables have no CHECK constraints")

    def drop_constraint(self, name: str) -> tuple[list[Action], CommitInfo]:
        raise UnsupportedFeatureError("constraints", "Hudi tables have no CHECK constraints")

    # ------------------------------------------------ distributed writes (lakecore.spark)

    def file_writer(self, mode: str, where: str | None) -> HudiFileWriter:
        """Claim the instant of an insert (``append``), an insert-overwrite (``overwrite``)
        or a ``replace`` (``replace_files``; a replacecommit) whose base files a
        ``HudiFileWriter`` writes elsewhere; its heartbeat beats until ``add_files``,
        ``replace_files`` or ``discard``. ``where`` is parsed and bound before anything is
        written."""
        if mode not in ("append", "overwrite", "replace"):
            raise ValueError(f"mode must be 'append', 'overwrite' or 'replace', not {mode!r}")
        if mode == "replace" and where is not None:
            raise ValueError("a 'replace' file writer takes no predicate (where=None)")
        self._validate(where)
        if mode == "append":
            action, operation = self._layout.write_action, "INSERT"
        elif mode == "replace":
            action, operation = REPLACE_COMMIT, REPLACE_FILES_OPERATION
        else:
            action = REPLACE_COMMIT
            operation = "INSERT_OVERWRITE_TABLE" if where is None else "INSERT_OVERWRITE"
        storage, config = self._storage, self._config
        rollback_failed_writes(storage, config)
        requested = encode_requested_replace(operation) if action == REPLACE_COMMIT else b""
        ts = self._start(action, requested)
        alive = contextlib.ExitStack()
        try:
            alive.enter_context(heartbeat.kept_alive(storage, config, ts))
            # Files are named as they are written (the rollback finds base files by instant).
            workload = CommitMetadata({}, operation)
            write_inflight(
                storage, config, action, ts, encode_commit_metadata(workload, config.table_version)
            )
        except BaseException:
            alive.close()
            self._rollback_quietly(ts, action)
            raise
        self._alive[ts] = alive
        options = dict(getattr(storage, "storage_options", None) or {})
        return HudiFileWriter(
            storage.root, self._layout, ts, action, operation, where, options, mode
        )

    def add_files(
        self, file_writer: DataFileWriter, files: pa.Table, mode: str, where: str | None
    ) -> tuple[list[Action], CommitInfo]:
        """The planned instant publishing ``files`` (new file groups); an overwrite replaces
        every file group, or with ``where`` those holding a matching record (their other
        records are written again into new file groups of the same instant)."""
        fw = _own(file_writer)
        try:
            stats = self._insert_stats(files)
            inserted = sum(s.num_inserts for s in stats)
            replaced: set[int] = set()
            if mode == "overwrite":
                kept, replaced = self._kept_on_overwrite(fw.instant, where)
                stats += kept
            metrics = self._metrics(stats, replaced, inserted)
        except BaseException:
            self.discard(fw)
            raise
        if mode == "append":
            info = CommitInfo("INSERT", {"rows": int(sum(s.num_writes for s in stats))})
        elif where is None:
            info = CommitInfo("INSERT_OVERWRITE_TABLE", {}, read_whole_table=True)
        else:
            info = CommitInfo("INSERT_OVERWRITE", {"predicate": where}, read_predicate=where)
        exclusive = mode == "overwrite" and where is None
        info = replace(info, metrics=metrics)
        return self._publish(fw, stats, self._groups_of(replaced), exclusive), info

    def replace_files(
        self, file_writer: DataFileWriter, files: pa.Table, removed: pa.Table
    ) -> tuple[list[Action], CommitInfo]:
        """The replacecommit publishing ``files`` (new file groups written by a
        ``file_writer("replace", None)``) and replacing the file groups of the file-index rows
        ``removed`` (matched by ``path``; their slices stop being read whole, base and log
        files alike). A concurrent write to a removed file group conflicts (Hudi's check of
        touched file groups).

        Raises:
            InvalidArgumentError: a removed path is not a live slice of this snapshot, or the
                file writer is not a ``replace`` one (the instant is rolled back first).
        """
        fw = _own(file_writer)
        try:
            if fw.mode != "replace":
                raise InvalidArgumentError(
                    f"replace_files needs a file_writer('replace'), not an {fw.mode!r} one"
                )
            replaced = self._slices_at(removed)
            stats = self._insert_stats(files)
            metrics = self._metrics(stats, replaced, sum(s.num_inserts for s in stats))
        except BaseException:
            self.discard(fw)
            raise
        info = CommitInfo(
            "REPLACE FILES",
            {"added": len(stats), "removed": len(replaced)},
            metrics=metrics,
        )
        return self._publish(fw, stats, self._groups_of(replaced), False), info

    def _slices_at(self, removed: pa.Table) -> set[int]:
        """The slices whose file-index ``path`` is among ``removed``'s paths.

        Raises:
            InvalidArgumentError: a path that is not a live slice of the snapshot.
        """
        if removed.num_rows == 0:
            return set()
        if fi.PATH not in removed.column_names:
            raise InvalidArgumentError(f"the removed files have no {fi.PATH!r} column")
        where = {s.path: i for i, s in enumerate(self._state.slices)}
        paths = [str(p) for p in removed.column(fi.PATH).to_pylist()]
        unknown = sorted({p for p in paths if p not in where})
        if unknown:
            raise InvalidArgumentError(
                f"{len(unknown)} removed file(s) are not live files of Hudi instant "
                f"{self._state.version}: {unknown[:5]}"
            )
        return {where[p] for p in paths}

    def _insert_stats(self, files: pa.Table) -> list[WriteStat]:
        """The write stats of new file groups' base files (``HudiFileWriter.write`` rows)."""
        if not files.num_rows:
            return []
        rows = files.select([fi.PATH, fi.SIZE, fi.RECORD_COUNT]).to_pylist()
        return [_insert_stat(row) for row in rows]

    def _groups_of(self, slices: set[int]) -> set[FileGroup]:
        return {
            (s.partition_path, s.file_id) for i, s in enumerate(self._state.slices) if i in slices
        }

    def _publish(
        self, fw: HudiFileWriter, stats: list[WriteStat], groups: set[FileGroup], exclusive: bool
    ) -> list[Action]:
        """Stop ``fw``'s heartbeat and plan its instant: ``stats`` written, ``groups``
        replaced (a replacecommit), conflicting on ``groups`` (on everything if exclusive)."""
        self._stop(fw.instant)
        planned = PlannedInstant(
            timestamp=fw.instant,
            action=fw.action,
            metadata=self._metadata(stats, fw.operation, fw.action, groups),
            files=tuple(s.path for s in stats if s.path),
            touched=frozenset(groups),
            exclusive=exclusive,
        )
        return [FormatPayload(FORMAT, planned)]

    def _metadata(
        self, stats: list[WriteStat], operation: str, action: str, groups: set[FileGroup]
    ) -> CommitMetadata:
        """The commit metadata of an instant writing ``stats`` and replacing ``groups``."""
        replace_ids: dict[str, list[str]] = defaultdict(list)
        for partition, file_id in sorted(groups):
            replace_ids[partition].append(file_id)
        return CommitMetadata(
            partition_to_write_stats=stats_by_partition(stats),
            operation_type=operation,
            extra_metadata={"schema": self._layout.data_avro_json()},
            partition_to_replace_file_ids=dict(replace_ids),
            replace=action == REPLACE_COMMIT,
        )

    def _kept_on_overwrite(
        self, instant: str, where: str | None
    ) -> tuple[list[WriteStat], set[int]]:
        """Slices an overwrite replaces, and the stats of the new file groups (of ``instant``)
        holding their records that do not match ``where`` (``dml.plan_overwrite``)."""
        layout, storage = self._layout, self._storage
        empty = self._keyed(layout.data_schema.empty_table())
        candidates = candidate_slices(self._snapshot, where)
        changes, replaced = plan_overwrite(self._rows, layout, empty, where, candidates)
        if not changes.inserts:
            return [], replaced
        per_file = records_per_file(storage, self._state)
        jobs = plan_jobs(storage, changes, self._rows.slices, layout, instant, per_file)
        return [run_job(storage, self._rows, j, layout, instant) for j in jobs], replaced

    def discard(self, file_writer: DataFileWriter) -> None:
        """Stop the instant's heartbeat and roll it back (its files are deleted)."""
        fw = _own(file_writer)
        self._stop(fw.instant)
        self._rollback_quietly(fw.instant, fw.action)

    def _stop(self, instant: str) -> None:
        alive = self._alive.pop(instant, None)
        if alive is not None:
            alive.close()

    # ---------------------------------------------------------------- planning helpers

    def _keyed(self, data: Any, schema_mode: str | None = "") -> pa.Table:
        """``data`` as keyed rows of the data schema. Appends and overwrites pass their
        ``schema_mode``: None (deltalake's default) -> every data column must be there
        (``SchemaError`` naming those missing); ``"merge"`` -> the data's new columns join
        the schema this writer writes with (nullable; checked as ``update_schema`` checks an
        added column), so the write's instant records the wider schema, as a Hudi writer
        evolving its schema on write does; ``"overwrite"`` is refused (capability
        ``schema_overwrite`` is not declared, so the core refuses first). Upserts pass None;
        the empty rows of an overwrite's kept records pass nothing (no check)."""
        if schema_mode == "overwrite":
            raise UnsupportedFeatureError(
                "schema_overwrite",
                "a hudi write cannot replace the table schema (schema_mode='overwrite')",
            )
        table = to_arrow_table(data)
        if schema_mode == "merge":
            self._merge_columns(table.schema)
        missing = [k for k in self._layout.key_fields if k not in table.column_names]
        if missing:
            raise SchemaError(f"the data has no record key column(s) {missing}")
        absent = [n for n in self._layout.data_schema.names if n not in table.column_names]
        if schema_mode is None and absent:
            raise SchemaError(
                f"the data has no column(s) {absent} of the table (deltalake refuses this too)"
            )
        return keyed(conform(table, self._layout.data_schema), self._layout)

    def _merge_columns(self, data: pa.Schema) -> None:
        """Widen this writer's layout by ``data``'s columns the table lacks (in the table's
        Avro form of their types); raises ``SchemaError`` as ``update_schema`` would."""
        have = set(self._layout.data_schema.names)
        new = [f for f in data if f.name not in have and f.name not in META_FIELDS]
        if not new:
            return
        update = HudiSchemaUpdate(self._storage, self._layout, self._at)
        for f in new:
            update.add_column(f.name, f.type)
        self._layout = replace(self._layout, data_schema=update.avro_form())

    def _require_key(self, verb: str) -> None:
        """Refuse ``verb`` (it finds records by their key) on a keyless table, before any IO."""
        if self._layout.keyless:
            raise UnsupportedFeatureError(
                "hudi-keyless-table",
                f"cannot {verb} into a keyless Hudi table (no hoodie.table.recordkey.fields: "
                "its record keys are generated); use append, overwrite, update or delete",
            )

    def _stored_key(self) -> str | None:
        """A record key of the table, when its encoding matters (one COMPLEX key field)."""
        config = self._config
        if config.keygen_type != "COMPLEX" or len(config.record_key_fields) != 1:
            return None
        for i in range(len(self._rows.slices)):
            keys = self._rows.columns(i, [RECORD_KEY]).column(0)
            if len(keys):
                return str(keys[0].as_py())
        return None

    def _slices_for_keys(self, rows: pa.Table) -> list[int]:
        """The slices that may hold one of ``rows``' record keys (the only ones looked up)."""
        fields = self._layout.key_fields
        return slices_for_keys(self._snapshot, rows, fields, self._config.keygen_type)

    def _ordering(self) -> str | None:
        event = self._config.record_merge_mode == "EVENT_TIME_ORDERING"
        return self._layout.precombine_field if event else None

    def _validate(self, where: str | None) -> None:
        # Parse and type-check before any IO: unknown columns and bad syntax fail here.
        if where is not None:
            evaluate_predicate(where, self._state.table_schema.empty_table())

    def _replace(
        self,
        changes: ChangeSet,
        replaced: set[int],
        operation: str,
        info: CommitInfo,
        exclusive: bool,
        inserted: int = 0,
    ) -> tuple[list[Action], CommitInfo]:
        groups = self._groups_of(replaced)
        return self._write(
            changes, operation, info, REPLACE_COMMIT, groups, exclusive, replaced, inserted
        )

    # ---------------------------------------------------------------- metrics

    def _metrics(
        self, stats: list[WriteStat], gone: set[int], inserted: int | None
    ) -> WriteMetrics:
        """The instant's metrics (``instant_metrics``)."""
        return instant_metrics(stats, self._rows.slices, gone, inserted, self._live_records)

    def _live_records(self, slices: Collection[int]) -> int:
        """Live records of ``slices``: the file index's count of a base-only slice, else
        the slice's keys read (merged with its log files). The index is the one of the
        slices' partitions only (cost grows with what the write touched, not the table)."""
        if not slices:
            return 0
        touched = frozenset(self._rows.slices[i].partition_path for i in slices)
        index = source_of(self._snapshot).files_of_partitions(touched)
        paths, records = index.column(fi.PATH), index.column(fi.RECORD_COUNT)
        counts = dict(zip(paths.to_pylist(), records.to_pylist(), strict=True))
        total = 0
        for i in slices:
            known = counts.get(self._rows.slices[i].path)
            total += known if known is not None else self._rows.columns(i, [RECORD_KEY]).num_rows
        return total

    # ---------------------------------------------------------------- the instant

    def _write(
        self,
        changes: ChangeSet,
        operation: str,
        info: CommitInfo,
        action: str | None = None,
        replaced: set[FileGroup] | None = None,
        exclusive: bool = False,
        replaced_slices: set[int] | None = None,
        inserted: int | None = None,
    ) -> tuple[list[Action], CommitInfo]:
        """Write ``changes`` as one instant; ``replaced_slices`` (their groups ``replaced``)
        go whole, and ``inserted``, when given, is how many of the new records are new rows
        (the rest are records of replaced slices written again: copied)."""
        action = action or self._layout.write_action
        rollback_failed_writes(self._storage, self._config)
        requested = encode_requested_replace(operation) if action == REPLACE_COMMIT else b""
        # Before the instant is claimed: a bad sizing setting must leave the timeline as is.
        per_file = records_per_file(self._storage, self._state) if changes.inserts else None
        ts = self._start(action, requested)
        jobs, stats = self._write_files(changes, operation, action, ts, per_file)
        metadata = self._metadata(stats, operation, action, set(replaced or ()))
        slices = self._rows.slices
        touched = {(slices[i].partition_path, slices[i].file_id) for i in changes.touched()}
        superseded = {
            j.slice_index for j in jobs if j.kind == "rewrite" and j.slice_index is not None
        }
        metrics = self._metrics(stats, superseded | (replaced_slices or set()), inserted)
        planned = PlannedInstant(
            timestamp=ts,
            action=action,
            metadata=metadata,
            files=tuple(j.path for j in jobs),
            touched=frozenset(touched | set(replaced or ())),
            exclusive=exclusive,
        )
        return [FormatPayload(FORMAT, planned)], replace(info, metrics=metrics)

    def _write_files(
        self, changes: ChangeSet, operation: str, action: str, ts: str, per_file: int | None
    ) -> tuple[list[FileJob], list[WriteStat]]:
        """Name the files in the inflight metadata, then write them; on any failure the
        instant is rolled back before the error propagates."""
        storage, config, layout = self._storage, self._config, self._layout
        slices = self._rows.slices
        try:
            # However long the files take, the heartbeat stays fresh: no other writer may
            # take this instant for failed and roll it back while it is being written.
            with heartbeat.kept_alive(storage, config, ts):
                jobs = plan_jobs(storage, changes, slices, layout, ts, per_file)
                planned = [planned_stat(j, slices, layout, ts) for j in jobs]
                workload = CommitMetadata(stats_by_partition(planned), operation)
                content = encode_commit_metadata(workload, config.table_version)
                write_inflight(storage, config, action, ts, content)
                return jobs, [run_job(storage, self._rows, job, layout, ts) for job in jobs]
        except BaseException:
            self._rollback_quietly(ts, action)
            raise

    def _start(self, action: str, requested: bytes) -> str:
        """Claim this write's instant (at the writer's fixed time, if it has one).

        Raises:
            CommitError: the fixed time is not later than every instant of the timeline.
        """
        return start_instant(self._storage, self._config, action, requested, at=self._at)

    def _rollback_quietly(self, ts: str, action: str) -> None:
        """Roll back this writer's instant after a failure while writing its files; a failed
        rollback is logged (the write's own error is the one to report; a later writer
        rolls the instant back once its heartbeat expires)."""
        config = self._config
        instant = make_instant(ts, action, INFLIGHT, config.timeline_layout_version)
        try:
            rollback_instant(self._storage, config, instant)
        except Exception as exc:  # keep the original error
            log.warning("could not roll back instant %s: %s", ts, exc)


def _own(file_writer: DataFileWriter) -> HudiFileWriter:
    if not isinstance(file_writer, HudiFileWriter):
        raise TypeError(f"not a Hudi file writer: {type(file_writer).__name__}")
    return file_writer


def _insert_stat(row: dict[str, Any]) -> WriteStat:
    """The write stat of a new file group's base file (``HudiFileWriter.write``'s row)."""
    path = str(row[fi.PATH])
    partition, _, name = path.rpartition("/")
    parsed = parse_base_file_name(name)
    if parsed is None:
        raise ValueError(f"{path} is not a Hudi base file name")
    count, size = int(row[fi.RECORD_COUNT]), int(row[fi.SIZE])
    return WriteStat(
        file_id=parsed.file_id,
        path=path,
        partition_path=partition,
        num_writes=count,
        num_inserts=count,
        total_write_bytes=size,
        file_size_in_bytes=size,
    )
