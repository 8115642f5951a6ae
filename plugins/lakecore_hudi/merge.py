"""Merging a MoR file slice: base rows, then log blocks in order, by record key.

Records apply in ``_lakecore_log_seq`` order (the log scanner numbers every record). The merge
is sequential over *runs* of consecutive data records and of consecutive deletes (a run sees
the result of the earlier ones) and vectorised within a run (Arrow sort + run detection, no
per-record Python), so its cost grows with the number of data/delete alternations, not with
the number of records:

- data block: per key, the newer record wins (``COMMIT_TIME_ORDERING``), or the record with
  the greater ordering (precombine) value, ties going to the newer one
  (``EVENT_TIME_ORDERING``). A record with ``_hoodie_is_deleted = true`` is a delete.
- delete block: removes the current record of each key, except that under event-time
  ordering a delete whose ordering value is set and lower than the record's loses. A delete
  without an ordering value always wins ("hard" delete), like Hudi's log scanner: null here,
  which is how the log reader returns Hudi's natural-order marker ``IntWrapper(0)``; a real
  value 0 (e.g. ``LongWrapper(0)``) orders like any other.

Deleted keys stay as markers in the state (so a later, lower-ordered record cannot bring back
a record deleted by ordering value) and are dropped at the end.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakecore_hudi.conform import conform
from lakecore_hudi.keys import IS_DELETED, record_keys

SEQ = "_lakecore_log_seq"
_KEY = "__lakecore_key"
_ORD = "__lakecore_ord"
_SEQ = "__lakecore_seq"
_POS = "__lakecore_pos"
_DEL = "__lakecore_del"
_BORD = "__lakecore_base_ord"
"""The ordering value of the base row a state row's key started from (null: none)."""
_BPOS = "__lakecore_base_pos"
"""That base row's number (-1: none)."""


@dataclass(frozen=True, slots=True)
class MergeSpec:
    """How records of one table combine: key fields, ordering field, merge mode."""

    key_fields: tuple[str, ...]
    ordering_field: str | None
    event_time: bool

    @property
    def orders(self) -> bool:
        """Whether ordering values decide (event-time ordering with an ordering field)."""
        return self.event_time and self.ordering_field is not None


@dataclass(frozen=True, slots=True)
class Merged:
    """The live rows of a merge; ``positions``: each one's row number in the base rows
    followed by the log rows; ``repeated_base_keys``: the base rows repeated a key (then a
    data run deduplicated every key of the state, base rows included)."""

    rows: pa.Table
    positions: np.ndarray
    repeated_base_keys: bool


def merge_slice(
    base: pa.Table,
    log_data: pa.Table,
    log_deletes: pa.Table,
    spec: MergeSpec,
) -> pa.Table:
    """Return the live rows of a slice, in ``base``'s schema.

    ``base`` is the base file's rows (possibly empty) in the output schema; ``log_data`` holds
    the log records in the same columns plus ``_lakecore_log_seq`` (application order: a
    greater number applies later; equal numbers apply in row order, data before deletes);
    ``log_deletes`` has ``record_key``, ``ordering_value`` and ``_lakecore_log_seq``.

    Base rows keep their order (an updated row stays in place); rows of new keys follow, in
    the order of their winning records.
    """
    if log_data.num_rows == 0 and log_deletes.num_rows == 0:
        return base
    data_seqs = _seqs(log_data)
    if len(data_seqs) > 1 and not bool(np.all(data_seqs[1:] >= data_seqs[:-1])):
        log_data = log_data.take(pa.array(np.argsort(data_seqs, kind="stable")))
    return merge_sorted(base, log_data, log_deletes, spec).rows


def merge_sorted(
    base: pa.Table,
    log_data: pa.Table,
    log_deletes: pa.Table,
    spec: MergeSpec,
    groups: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> Merged:
    """``merge_slice`` for ``log_data`` already in seq order, with what ``Merged`` adds.

    With ``groups`` (the group number of each row of ``base``, ``log_data`` and
    ``log_deletes``) several slices merge at once: keys match within a group only.
    """
    schema = base.schema
    data_seqs = _seqs(log_data)
    rows = conform(log_data.drop_columns([SEQ]), schema)
    # The merge moves only these small helper tables (key, ordering value, seq, row number in
    # base + rows, deleted flag); the rows themselves are taken once, at the end.
    # Keys become int64 codes (one dictionary over all of them, times the group): every key
    # operation after this one hashes or compares integers, not strings.
    deleted_keys = log_deletes.column("record_key")
    base_codes, data_codes, delete_codes = _key_codes(
        [_keys(base, spec), _keys(rows, spec), deleted_keys], groups
    )
    log_deletes = log_deletes.set_column(
        log_deletes.schema.get_field_index("record_key"), "record_key", delete_codes
    )
    state = _helpers(base, spec, np.full(base.num_rows, -1, dtype=np.int64), 0, base_codes)
    logs = _helpers(rows, spec, data_seqs, base.num_rows, data_codes)
    state = state.append_column(_BORD, state.column(_ORD)).append_column(_BPOS, state.column(_POS))
    logs = _without_base(logs)
    distinct: bool | None = None  # whether the state's keys are distinct; known after a run
    repeated = False  # whether the base rows repeated a key
    for is_delete, low, high in _runs(data_seqs, _seqs(log_deletes)):
        if is_delete:
            state = _apply_delete_run(state, _between(log_deletes, low, high), spec)
            continue
        first = int(np.searchsorted(data_seqs, low, "left"))
        last = int(np.searchsorted(data_seqs, high, "right"))
        if distinct is None:
            keys = state.column(_KEY)
            distinct = pc.count_distinct(keys).as_py() == len(keys) if len(keys) else True
            repeated = not distinct
        state = _combine(state, logs.slice(first, last - first), spec, distinct=distinct)
        # A combine leaves one row per key it touched; untouched repeated base keys stay.
        distinct = distinct or not repeated
    if spec.orders:
        base_deleted = np.asarray(
            pc.fill_null(base.column(IS_DELETED), False).to_numpy(zero_copy_only=False)
            if IS_DELETED in base.column_names
            else np.zeros(base.num_rows, dtype=bool),
            dtype=bool,
        )
        state = _base_over_lower_log_records(state, base_deleted)
    live = state.filter(pc.invert(state.column(_DEL))).column(_POS)
    # One chunk first: take over a chunked table is ~2x slower than concatenating and taking.
    out = pa.concat_tables([base, rows], promote_options="none").combine_chunks().take(live)
    positions = live.to_numpy() if live.num_chunks else np.zeros(0, dtype=np.int64)
    rows = pa.Table.from_arrays(out.columns, schema=schema)
    return Merged(rows, positions, repeated_base_keys=repeated)


def _keys(rows: pa.Table, spec: MergeSpec) -> pa.ChunkedArray:
    if rows.num_rows == 0:
        return pa.chunked_array([], pa.string())
    return record_keys(rows, spec.key_fields)


def _key_codes(
    parts: list[pa.ChunkedArray],
    groups: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
) -> list[pa.Array]:
    """Each part's keys as int64 codes, equal exactly when key (and group) are equal; a null
    key stays null (it matches nothing)."""
    sizes = [len(p) for p in parts]
    chunks = [c.cast(pa.string()) for p in parts for c in p.chunks]
    if sum(sizes) == 0:
        return [pa.array([], pa.int64()) for _ in parts]
    encoded = pc.dictionary_encode(pa.concat_arrays(chunks))
    codes = encoded.indices.cast(pa.int64())
    if groups is not None:
        width = max(1, len(encoded.dictionary))
        offsets = np.concatenate(groups).astype(np.int64) * width
        codes = pc.add(codes, pa.array(offsets))
    out, start = [], 0
    for size in sizes:
        out.append(codes.slice(start, size))
        start += size
    return out


def _seqs(table: pa.Table) -> np.ndarray:
    if table.num_rows == 0:
        return np.zeros(0, dtype=np.int64)
    return np.asarray(table.column(SEQ).to_numpy(), dtype=np.int64)


def _runs(data_seqs: np.ndarray, delete_seqs: np.ndarray) -> list[tuple[bool, int, int]]:
    """(is_delete, first seq, last seq) of each maximal run of data or delete records."""
    seqs = np.concatenate([data_seqs, delete_seqs])
    kinds = np.concatenate([np.zeros(len(data_seqs), bool), np.ones(len(delete_seqs), bool)])
    if len(seqs) == 0:
        return []
    order = np.argsort(seqs, kind="stable")  # data before deletes of the same seq
    seqs, kinds = seqs[order], kinds[order]
    starts = np.flatnonzero(np.r_[True, kinds[1:] != kinds[:-1]])
    ends = np.r_[starts[1:], len(seqs)] - 1
    return [(bool(kinds[s]), int(seqs[s]), int(seqs[e])) for s, e in zip(starts, ends, strict=True)]


def _between(table: pa.Table, low: int, high: int) -> pa.Table:
    """The rows of ``table`` whose seq is in [low, high], in seq order (stable)."""
    seq = table.column(SEQ)
    if pc.min(seq).as_py() < low or pc.max(seq).as_py() > high:
        table = table.filter(pc.and_(pc.greater_equal(seq, low), pc.less_equal(seq, high)))
    seqs = _seqs(table)
    if len(seqs) < 2 or bool(np.all(seqs[1:] >= seqs[:-1])):
        return table  # the scanner hands records over in seq order
    return table.take(pa.array(np.argsort(seqs, kind="stable")))


def _helpers(
    rows: pa.Table, spec: MergeSpec, seqs: np.ndarray, first_row: int, keys: pa.Array
) -> pa.Table:
    """The merge's view of ``rows``: key code (``_key_codes``), ordering value, seq, row
    number (``first_row`` + i) and whether the record is a delete (``_hoodie_is_deleted``)."""
    n = rows.num_rows
    if spec.orders and spec.ordering_field in rows.column_names:
        order = rows.column(spec.ordering_field)
    else:
        order = pa.chunked_array([pa.nulls(n, pa.int64())])
    deleted = pa.chunked_array([np.zeros(n, dtype=bool)])
    if IS_DELETED in rows.column_names:
        deleted = pc.fill_null(rows.column(IS_DELETED), False)
    return pa.table(
        {
            _KEY: keys,
            _ORD: order,
            _SEQ: pa.chunked_array([seqs]),
            _POS: pa.chunked_array([np.arange(first_row, first_row + n, dtype=np.int64)]),
            _DEL: deleted,
        }
    )


def _without_base(table: pa.Table) -> pa.Table:
    """``table`` (helper columns) with no base row behind it (``_BORD`` null, ``_BPOS`` -1)."""
    n = table.num_rows
    nulls = pa.nulls(n, table.schema.field(_ORD).type)
    return table.append_column(_BORD, pa.chunked_array([nulls])).append_column(
        _BPOS, pa.chunked_array([np.full(n, -1, dtype=np.int64)])
    )


def _base_over_lower_log_records(state: pa.Table, base_deleted: np.ndarray) -> pa.Table:
    """Hudi's readers merge a key's log records first, then that one record with the base row
    by ordering value: after a hard delete (which resets the ordering) a later log record
    with a lower ordering value than the base row leaves the base row in place. Every other
    sequence gives the same winner both ways, since winners only grow in ordering value."""
    base_pos = state.column(_BPOS).combine_chunks()
    base_ord = state.column(_BORD)
    ours = state.column(_ORD)
    live = pc.invert(state.column(_DEL))
    from_log = pc.and_(pc.greater_equal(base_pos, 0), pc.not_equal(state.column(_POS), base_pos))
    lower = pc.or_kleene(pc.is_null(ours), pc.greater(base_ord, ours))
    back = pc.and_(pc.and_(from_log, pc.is_valid(base_ord)), pc.and_(lower, live))
    flags = pc.fill_null(back, False).combine_chunks().to_numpy(zero_copy_only=False)
    if not flags.any():
        return state
    positions = state.column(_POS).combine_chunks().to_numpy(zero_copy_only=False).copy()
    deleted = state.column(_DEL).combine_chunks().to_numpy(zero_copy_only=False).copy()
    picked = base_pos.to_numpy(zero_copy_only=False)[flags]
    positions[flags] = picked
    # A base row that is itself a delete marker (_hoodie_is_deleted) wins as a delete.
    deleted[flags] = base_deleted[picked]
    state = state.set_column(state.schema.get_field_index(_POS), _POS, pa.array(positions))
    return state.set_column(state.schema.get_field_index(_DEL), _DEL, pa.array(deleted))


def _combine(state: pa.Table, block: pa.Table, spec: MergeSpec, *, distinct: bool) -> pa.Table:
    """Apply a run of data records (``block``, newer than everything in ``state``);
    ``distinct`` says the state's keys are distinct (else one sort of both decides)."""
    if block.num_rows == 0:
        return state
    block = pa.Table.from_arrays(block.columns, schema=state.schema)
    if not distinct:
        # A base file with repeated keys. Hudi's readers merge a key's log records into one
        # copy only (the first base copy; later, the row the log records already made) and
        # return the other copies as they are, as do the keys the block does not touch.
        touched = pc.is_in(state.column(_KEY), value_set=block.column(_KEY).combine_chunks())
        touched = pc.fill_null(touched, False)
        candidates = state.filter(touched)
        order = pc.sort_indices(
            candidates, sort_keys=[(_KEY, "ascending"), (_SEQ, "descending"), (_POS, "ascending")]
        )
        first = _first_of_runs(candidates.column(_KEY).take(order).combine_chunks())
        chosen = pc.array_filter(order, first)
        others = pc.array_filter(order, pc.invert(first))
        merged = _overlay(candidates.take(chosen), _newest_per_key(block, spec), spec)
        parts = [state.filter(pc.invert(touched)), candidates.take(others), merged]
        return pa.concat_tables(parts, promote_options="none")
    return _overlay(state, _newest_per_key(block, spec), spec)


def _first_of_runs(sorted_keys: pa.Array) -> pa.Array:
    """Whether each value of ``sorted_keys`` starts a run of equal values."""
    n = len(sorted_keys)
    first = np.ones(n, dtype=bool)
    if n > 1:
        differs = pc.not_equal(sorted_keys.slice(1), sorted_keys.slice(0, n - 1))
        first[1:] = differs.to_numpy(zero_copy_only=False)
    return pa.array(first)


def _newest_per_key(block: pa.Table, spec: MergeSpec) -> pa.Table:
    """The record of ``block`` that wins for each key (records have distinct seqs)."""
    if spec.orders:  # then the last of the greatest ordering value (nulls lose)
        block = block.take(_sort_nulls_first(block, [_ORD, _SEQ]))
    keys = block.column(_KEY).combine_chunks()
    if pc.count_distinct(keys).as_py() == len(keys):
        return block
    # The last row of each key is the first of the reversed rows: index_in of a value finds
    # its first occurrence in the value set.
    backwards = keys[::-1]
    first = pc.index_in(backwards, value_set=backwards).to_numpy(zero_copy_only=False)
    last = np.flatnonzero(first == np.arange(len(keys)))
    return block.take(pa.array(len(keys) - 1 - last[::-1]))


def _overlay(state: pa.Table, winners: pa.Table, spec: MergeSpec) -> pa.Table:
    """``state`` (distinct keys) with ``winners`` (distinct keys, newer) applied by key.

    A winner replaces the state row of its key in place (unless event-time ordering keeps
    the state row: a greater ordering value, or a null one on the winner's side) or, for a new
    key, is appended; so the base file's row order is kept.
    """
    n_state = state.num_rows
    at = pc.index_in(state.column(_KEY), value_set=winners.column(_KEY).combine_chunks())
    matched = pc.is_valid(at)
    if spec.orders:
        theirs = winners.column(_ORD).take(at)
        ours = state.column(_ORD)
        # Kleene logic: a null comparison must not hide a decided side.
        newer = pc.or_kleene(
            pc.is_null(ours),
            pc.and_kleene(pc.is_valid(theirs), pc.greater_equal(theirs, ours)),
        )
        replace = pc.fill_null(pc.and_(matched, newer), False).to_numpy(zero_copy_only=False)
    else:
        replace = matched.to_numpy(zero_copy_only=False)
    positions = pc.fill_null(at, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    rows = np.arange(n_state, dtype=np.int64)
    rows[replace] = n_state + positions[replace]
    known = np.zeros(winners.num_rows, dtype=bool)
    known[positions[positions >= 0]] = True
    added = n_state + np.flatnonzero(~known)
    if not replace.any() and not len(added):
        return state
    both = pa.concat_tables([state, winners], promote_options="none")
    out = both.take(pa.array(np.concatenate([rows, added])))
    # A slot keeps the base row its key started from, whichever record now fills it.
    base_ord = pa.concat_arrays(
        [state.column(_BORD).combine_chunks(), pa.nulls(len(added), state.schema.field(_BORD).type)]
    )
    base_pos = np.concatenate(
        [state.column(_BPOS).to_numpy(), np.full(len(added), -1, dtype=np.int64)]
    )
    out = out.set_column(out.schema.get_field_index(_BORD), _BORD, base_ord)
    return out.set_column(out.schema.get_field_index(_BPOS), _BPOS, pa.array(base_pos))


_PER_KEY_NULL_PLACEMENT = int(pa.__version__.split(".")[0]) >= 25


def _sort_nulls_first(table: pa.Table, names: list[str]) -> pa.Array:
    """Ascending sort indices by ``names``, nulls first (a null ordering value, or a hard
    delete's marker, loses to any value). pyarrow 25 moved null placement into each key."""
    if _PER_KEY_NULL_PLACEMENT:
        return pc.sort_indices(table, sort_keys=[(n, "ascending", "at_start") for n in names])
    keys = [(n, "ascending") for n in names]
    return pc.sort_indices(table, sort_keys=keys, null_placement="at_start")


def _apply_delete_run(state: pa.Table, deletes: pa.Table, spec: MergeSpec) -> pa.Table:
    """Apply deletes (in order) that may name a key several times: one round per repeat."""
    while deletes.num_rows:
        keys = deletes.column("record_key").combine_chunks()
        first = pc.equal(pc.index_in(keys, value_set=keys), pa.array(np.arange(len(keys))))
        first = pc.fill_null(first, False)
        state = _apply_deletes(state, deletes.filter(first), spec)
        deletes = deletes.filter(pc.invert(first))
    return state


def _apply_deletes(state: pa.Table, deletes: pa.Table, spec: MergeSpec) -> pa.Table:
    """Apply deletes of distinct keys."""
    if deletes.num_rows == 0:
        return state
    keys = deletes.column("record_key").combine_chunks()
    delete_order = _delete_ordering(deletes.column("ordering_value").combine_chunks(), spec, state)
    if delete_order is not None:
        state = _with_tombstones(state, keys, delete_order)
    at = pc.index_in(state.column(_KEY), value_set=keys)
    hit = pc.is_valid(at)
    if not pc.any(hit).as_py():
        return state
    if delete_order is None:
        wins = hit
        new_order = None
    else:
        d = delete_order.take(at)
        hard = pc.is_null(d)
        wins = pc.and_(
            hit, pc.or_(hard, pc.fill_null(pc.greater_equal(d, state.column(_ORD)), True))
        )
        new_order = pc.if_else(hard, pa.nulls(len(d), d.type), d)
    wins = pc.fill_null(wins, False)
    marked = pc.or_(state.column(_DEL), wins)
    state = state.set_column(state.schema.get_field_index(_DEL), _DEL, marked)
    if new_order is not None:
        order = pc.if_else(wins, new_order.cast(state.schema.field(_ORD).type), state.column(_ORD))
        state = state.set_column(state.schema.get_field_index(_ORD), _ORD, order)
    return state


def _with_tombstones(state: pa.Table, keys: pa.Array, order: pa.Array) -> pa.Table:
    """``state`` plus a deleted row for each key it does not hold whose delete carries an
    ordering value: a later record of that key with a lower value loses to the delete (as in
    Hudi's readers, which keep deletes in the merged log records); the row is never output."""
    absent = pc.invert(pc.fill_null(pc.is_in(keys, value_set=state.column(_KEY)), False))
    hard = pc.is_null(order)
    keep = pc.and_(absent, pc.invert(hard))
    n = pc.sum(keep.cast(pa.int64())).as_py() or 0
    if not n:
        return state
    ordering = pc.array_filter(order, keep).cast(state.schema.field(_ORD).type)
    tombstones = pa.table(
        {
            _KEY: pc.array_filter(keys, keep).cast(state.schema.field(_KEY).type),
            _ORD: ordering,
            _SEQ: pa.array(np.full(n, -1, dtype=np.int64)),
            _POS: pa.array(np.full(n, -1, dtype=np.int64)),
            _DEL: pa.array(np.ones(n, dtype=bool)),
            _BORD: pa.nulls(n, state.schema.field(_BORD).type),
            _BPOS: pa.array(np.full(n, -1, dtype=np.int64)),
        },
        schema=state.schema,
    )
    return pa.concat_tables([state, tombstones], promote_options="none")


def _delete_ordering(values: pa.Array, spec: MergeSpec, state: pa.Table) -> pa.Array | None:
    """Delete ordering values typed like the state's, or None when ordering does not decide.

    A value that does not cast to the ordering column's type counts as absent, which makes
    the delete a hard one (Hudi's rule for deletes without an ordering value).
    """
    if not spec.orders:
        return None
    target = state.schema.field(_ORD).type
    try:
        return values.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.nulls(len(values), target)
