"""Row changes planned against a snapshot: which file groups get which updates and deletes.

Every DML operation (upsert, delete, update, merge) reduces to a ``ChangeSet``: per existing
file group (an index into the snapshot's latest file slices) the rows that replace records of
that group and the record keys removed from it, plus rows inserted into new file groups.
Keys are looked up across all partitions (a global index): a row whose partition value
changed is deleted from its old group and inserted into its new partition, so a key never
lives twice. The planners read only the candidate slices they are given (see ``candidates``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import CommitConflictError
from lakecore.storage import Storage
from lakecore_hudi.keys import PARTITION_PATH, RECORD_KEY
from lakecore_hudi.reader import SliceReader
from lakecore_hudi.state import HudiState
from lakecore_hudi.view import FileSlice
from lakecore_hudi.write.layout import layout_for
from lakecore_hudi.write.rows_in import KEY, PARTITION, record_keys

_ROW = "__lakecore_row"
_GROUP = "__lakecore_group"
_GROUP_PARTITION = "__lakecore_group_partition"
_ORDER = "__lakecore_order"
_INCOMING = "__lakecore_incoming"


@dataclass
class ChangeSet:
    """Planned row changes (built by the planners below, then written by ``apply``).

    ``updates[i]`` are keyed rows (data columns + ``KEY`` + ``PARTITION``) that replace the
    records of the same keys in slice ``i``; ``deletes[i]`` holds the ``_hoodie_record_key``
    and ``_hoodie_partition_path`` of records removed from slice ``i``; ``inserts`` are keyed
    rows for new file groups.
    """

    updates: dict[int, pa.Table] = field(default_factory=dict)
    deletes: dict[int, pa.Table] = field(default_factory=dict)
    inserts: list[pa.Table] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """True when the change set changes no record."""
        return not self.touched() and not any(t.num_rows for t in self.inserts)

    def touched(self) -> set[int]:
        """Indices of the slices this change set modifies."""
        return {i for i, t in self.updates.items() if t.num_rows} | {
            i for i, t in self.deletes.items() if t.num_rows
        }

    def add_deletes(self, index: int, keys: pa.Table) -> None:
        """Remove the records ``keys`` (``RECORD_KEY``, ``PARTITION_PATH``) from slice ``index``."""
        if keys.num_rows:
            previous = self.deletes.get(index)
            self.deletes[index] = keys if previous is None else pa.concat_tables([previous, keys])

    def add_updates(self, index: int, rows: pa.Table) -> None:
        """Replace the records of ``rows``' keys in slice ``index`` by ``rows``."""
        if rows.num_rows:
            previous = self.updates.get(index)
            self.updates[index] = rows if previous is None else pa.concat_tables([previous, rows])


class SliceRows:
    """Reads (and caches) the live records of a snapshot's latest file slices, merged.

    On a table without meta fields (``hoodie.populate.meta.fields=false``: Hudi's virtual
    keys) the files hold no ``_hoodie_record_key`` / ``_hoodie_partition_path`` values; both
    are derived here, as Hudi's key generator derives them on every read: the key rendered from
    the key fields exactly as new rows' keys are (``rows_in.record_keys``), the partition
    path that of the slice. Callers see the same columns on either kind of table.
    """

    def __init__(self, storage: Storage, state: HudiState) -> None:
        self.state = state
        self._storage = storage
        self.slices: tuple[FileSlice, ...] = state.slices
        self._reader = SliceReader(
            storage, state.table_schema, state.merge_spec, state.is_valid_instant, False
        )
        self._cache: dict[int, pa.Table] = {}
        self._virtual = not state.config.populate_meta_fields

    def records(self, index: int) -> pa.Table:
        """Every column (meta fields included) of the live records of slice ``index``."""
        if index not in self._cache:
            s = self.slices[index]
            base = s.base_file.path if s.base_file is not None else None
            logs = [f.path for f in s.log_files]
            try:
                found = self._reader.read(base, logs, self.state.table_schema.names)
            except FileNotFoundError as exc:
                gone = [p for p in logs if not self._storage.exists(p)]
                if not gone:
                    raise
                # Table version 6 names a log file after its slice, not its instant: a failed
                # concurrent writer's log was listed, then deleted by its rollback.
                raise CommitConflictError(
                    f"log file {gone[0]} of file group {s.file_id} vanished while it was read "
                    "(a concurrent writer's rollback removed it); run the operation again"
                ) from exc
            self._cache[index] = self._with_keys(index, found)
        return self._cache[index]

    def columns(self, index: int, names: Sequence[str]) -> pa.Table:
        """Columns ``names`` of the live records of slice ``index`` (a base file without log
        files is read for those columns only)."""
        s = self.slices[index]
        if index in self._cache or s.log_files or s.base_file is None:
            return self.records(index).select(list(names))
        if not self._virtual:
            return self._reader.read(s.base_file.path, [], list(names))
        stored = [n for n in names if n not in (RECORD_KEY, PARTITION_PATH)]
        read = list(dict.fromkeys(stored + list(self.state.config.record_key_fields)))
        found = self._reader.read(s.base_file.path, [], read)
        return self._with_keys(index, found).select(list(names))

    def _with_keys(self, index: int, found: pa.Table) -> pa.Table:
        """``found`` plus the derived key and partition path columns (virtual keys only)."""
        if not self._virtual:
            return found
        layout = layout_for(self.state.config, self.state.table_schema)
        path = pa.array([self.slices[index].partition_path] * found.num_rows, pa.string())
        keys = record_keys(found, layout)
        return found.append_column(RECORD_KEY, keys).append_column(PARTITION_PATH, path)


def key_index(rows: SliceRows, ordering: str | None, candidates: Sequence[int]) -> pa.Table:
    """(record key, slice index, partition path[, ordering value]) of every live record of
    the ``candidates`` slices."""
    names = [RECORD_KEY] + ([ordering] if ordering else [])
    parts = []
    for i in candidates:
        s = rows.slices[i]
        found = rows.columns(i, names)
        n = found.num_rows
        columns = {
            KEY: found.column(RECORD_KEY).cast(pa.string()),
            _GROUP: pa.array(np.full(n, i, dtype=np.int64)),
            _GROUP_PARTITION: pa.array([s.partition_path] * n, pa.string()),
        }
        if ordering:
            columns[_ORDER] = found.column(ordering)
        parts.append(pa.table(columns))
    if not parts:
        fields = [(KEY, pa.string()), (_GROUP, pa.int64()), (_GROUP_PARTITION, pa.string())]
        if ordering:
            fields.append((_ORDER, rows.state.table_schema.field(ordering).type))
        return pa.schema(fields).empty_table()
    return pa.concat_tables(parts)


def loses_on_order(incoming: pa.ChunkedArray, existing: pa.ChunkedArray) -> pa.Array:
    """Under event-time ordering, whether an incoming record loses to the existing one of its
    key: the existing value is set and the incoming one is null or lower (as the readers'
    merge decides; ties go to the newer record)."""
    lower = pc.fill_null(pc.less(incoming, existing), True)
    out = pc.and_(pc.is_valid(existing), lower)
    return out.combine_chunks() if isinstance(out, pa.ChunkedArray) else out


def plan_upsert(
    rows: SliceRows, data: pa.Table, ordering: str | None, candidates: Sequence[int]
) -> ChangeSet:
    """Route keyed, deduplicated ``data``: a row whose key lives in a slice of the same partition
    updates that slice; every other copy of the key is deleted; the rest are inserts.

    Only the ``candidates`` slices are looked up: they must include every slice that may hold
    one of ``data``'s keys (``slices_for_keys``), or a key could be written twice.

    With an ``ordering`` field (event-time ordering), a row whose ordering value is lower than
    an existing record's of its key is dropped, as Hudi's payload would ignore it.
    """
    changes = ChangeSet()
    if data.num_rows == 0:
        return changes
    index = key_index(rows, ordering, candidates)
    if ordering:
        data = _drop_stale(index, data, ordering)
    n = data.num_rows
    probe = pa.table(
        {
            KEY: data.column(KEY),
            PARTITION: data.column(PARTITION),
            _ROW: pa.array(np.arange(n, dtype=np.int64)),
        }
    )
    joined = probe.join(index.select([KEY, _GROUP, _GROUP_PARTITION]), KEY, join_type="inner")
    row = joined.column(_ROW).to_numpy()
    group = joined.column(_GROUP).to_numpy()
    same = pc.equal(joined.column(PARTITION), joined.column(_GROUP_PARTITION))
    same_np = same.to_numpy(zero_copy_only=False).astype(bool) if len(row) else np.zeros(0, bool)
    none = np.iinfo(np.int64).max
    target = np.full(n, none, dtype=np.int64)
    np.minimum.at(target, row[same_np], group[same_np])
    gone = group != target[row]
    for g in np.unique(target[target != none]):
        changes.add_updates(int(g), data.filter(pa.array(target == g)))
    inserts = data.filter(pa.array(target == none))
    if inserts.num_rows:
        changes.inserts.append(inserts)
    if gone.any():
        removed = joined.filter(pa.array(gone))
        for g in np.unique(group[gone]):
            keys = removed.filter(pc.equal(removed.column(_GROUP), int(g)))
            changes.add_deletes(int(g), _delete_keys(keys.column(KEY), rows.slices[int(g)]))
    return changes


def _drop_stale(index: pa.Table, data: pa.Table, ordering: str) -> pa.Table:
    probe = pa.table(
        {
            KEY: data.column(KEY),
            _ROW: pa.array(np.arange(data.num_rows, dtype=np.int64)),
            _INCOMING: data.column(ordering),
        }
    )
    joined = probe.join(index.select([KEY, _ORDER]), KEY, join_type="inner")
    if joined.num_rows == 0:
        return data
    existing = joined.column(_ORDER).cast(data.schema.field(ordering).type)
    lost = loses_on_order(joined.column(_INCOMING), existing)
    stale = np.unique(joined.column(_ROW).to_numpy()[lost.to_numpy(zero_copy_only=False)])
    keep = np.ones(data.num_rows, dtype=bool)
    keep[stale] = False
    return data.filter(pa.array(keep))


def _delete_keys(keys: pa.ChunkedArray | pa.Array, s: FileSlice) -> pa.Table:
    n = len(keys)
    return pa.table(
        {
            RECORD_KEY: keys.cast(pa.string()),
            PARTITION_PATH: pa.array([s.partition_path] * n, pa.string()),
        }
    )


def deletes_of(records: pa.Table) -> pa.Table:
    """The delete keys (``RECORD_KEY``, ``PARTITION_PATH``) of existing ``records``."""
    return records.select([RECORD_KEY, PARTITION_PATH])


def route_rewritten(
    changes: ChangeSet, index: int, before: pa.Table, after: pa.Table, slices: Sequence[FileSlice]
) -> None:
    """Record that records ``before`` of slice ``index`` become keyed rows ``after`` (same keys,
    same order): rows that stay in the slice's partition update it, the others move."""
    partition = slices[index].partition_path
    stays = pc.equal(after.column(PARTITION), partition)
    changes.add_updates(index, after.filter(stays))
    moved = pc.invert(stays)
    if pc.any(moved).as_py():
        changes.add_deletes(index, deletes_of(before.filter(moved)))
        changes.inserts.append(after.filter(moved))
