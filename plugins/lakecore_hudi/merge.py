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
  without an ordering value (null or the default 0) always wins ("hard" delete), like Hudi's
  log scanner.

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
_HELPERS = (_KEY, _ORD, _SEQ, _POS, _DEL)


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
    """
    schema = base.schema
    if log_data.num_rows == 0 and log_deletes.num_rows == 0:
        return base
    state = _with_helpers(base, spec, np.full(base.num_rows, -1, dtype=np.int64))
    for is_delete, low, high in _runs(_seqs(log_data), _seqs(log_deletes)):
        if is_delete:
            state = _apply_delete_run(state, _between(log_deletes, low, high), spec)
        else:
            rows = _between(log_data, low, high)
            block = conform(rows.drop_columns([SEQ]), schema)
            seqs = rows.column(SEQ).to_numpy().astype(np.int64)
            state = _combine(state, _with_helpers(block, spec, seqs), spec)
    live = state.filter(pc.invert(state.column(_DEL)))
    return pa.Table.from_arrays(live.drop_columns(list(_HELPERS)).columns, schema=schema)


def _seqs(table: pa.Table) -> np.ndarray:
    if table.num_rows == 0:
        return np.zeros(0, dtype=np.int64)
    return np.asarray(table.column(SEQ).to_numpy(), dtype=np.int64)


def _runs(data_seqs: np.ndarray, delete_seqs: np.ndarray) -> list[tuple[bool, int, int]]:
    """(is_delete, first seq, last seq) of each maximal run of data or delete records."""
    seqs = np.concatenate([data_seqs, delete_seqs])
    kinds = np.concatenate([np.zeros(len(data_seqs), bool), np.ones(len(delete_seqs), bool)])
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
    order = np.argsort(_seqs(table), kind="stable")
    return table.take(pa.array(order))


def _with_helpers(rows: pa.Table, spec: MergeSpec, seqs: np.ndarray) -> pa.Table:
    n = rows.num_rows
    keys = record_keys(rows, spec.key_fields) if n else pa.chunked_array([], pa.string())
    if spec.orders and spec.ordering_field in rows.column_names:
        order = rows.column(spec.ordering_field)
    else:
        order = pa.chunked_array([pa.nulls(n, pa.int64())])
    deleted = pa.chunked_array([np.zeros(n, dtype=bool)])
    if IS_DELETED in rows.column_names:
        deleted = pc.fill_null(rows.column(IS_DELETED), False)
    out = rows
    for name, values in (
        (_KEY, keys),
        (_ORD, order),
        (_SEQ, pa.chunked_array([seqs])),
        (_POS, pa.chunked_array([np.arange(n, dtype=np.int64)])),
        (_DEL, deleted),
    ):
        out = out.append_column(name, values)
    return out


def _combine(state: pa.Table, block: pa.Table, spec: MergeSpec) -> pa.Table:
    if block.num_rows == 0:
        return state
    if state.num_rows == 0 and block.num_rows <= 1:
        return block
    block = pa.Table.from_arrays(block.columns, schema=state.schema)
    both = pa.concat_tables([state, block], promote_options="none")
    # Nulls first: a null ordering value (or a hard delete's marker) loses to any value.
    names = [_KEY, _ORD, _SEQ, _POS] if spec.orders else [_KEY, _SEQ, _POS]
    order = _sort_nulls_first(both, names)
    sorted_keys = both.column(_KEY).take(order).combine_chunks()
    return both.take(_last_of_runs(order, sorted_keys))


_PER_KEY_NULL_PLACEMENT = int(pa.__version__.split(".")[0]) >= 25


def _sort_nulls_first(table: pa.Table, names: list[str]) -> pa.Array:
    """Ascending sort indices by ``names``, nulls first (a null ordering value, or a hard
    delete's marker, loses to any value). pyarrow 25 moved null placement into each key."""
    if _PER_KEY_NULL_PLACEMENT:
        return pc.sort_indices(table, sort_keys=[(n, "ascending", "at_start") for n in names])
    keys = [(n, "ascending") for n in names]
    return pc.sort_indices(table, sort_keys=keys, null_placement="at_start")


def _last_of_runs(order: pa.Array, sorted_keys: pa.Array) -> pa.Array:
    """Indices (into the unsorted table) of the last row of each run of equal keys."""
    n = len(sorted_keys)
    if n == 0:
        return order
    last = np.ones(n, dtype=bool)
    if n > 1:
        differs = pc.not_equal(sorted_keys.slice(0, n - 1), sorted_keys.slice(1))
        last[:-1] = differs.to_numpy(zero_copy_only=False)
    return pc.array_filter(order, pa.array(last))


def _apply_delete_run(state: pa.Table, deletes: pa.Table, spec: MergeSpec) -> pa.Table:
    """Apply deletes (in order) that may name a key several times: one round per repeat."""
    while deletes.num_rows and state.num_rows:
        keys = deletes.column("record_key").combine_chunks()
        first = pc.equal(pc.index_in(keys, value_set=keys), pa.array(np.arange(len(keys))))
        first = pc.fill_null(first, False)
        state = _apply_deletes(state, deletes.filter(first), spec)
        deletes = deletes.filter(pc.invert(first))
    return state


def _apply_deletes(state: pa.Table, deletes: pa.Table, spec: MergeSpec) -> pa.Table:
    """Apply deletes of distinct keys."""
    if state.num_rows == 0 or deletes.num_rows == 0:
        return state
    keys = deletes.column("record_key").combine_chunks()
    at = pc.index_in(state.column(_KEY), value_set=keys)
    hit = pc.is_valid(at)
    if not pc.any(hit).as_py():
        return state
    delete_order = _delete_ordering(deletes.column("ordering_value").combine_chunks(), spec, state)
    if delete_order is None:
        wins = hit
        new_order = None
    else:
        d = delete_order.take(at)
        hard = pc.or_(pc.is_null(d), _is_default(d))
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


def _is_default(values: pa.Array) -> pa.Array:
    """Hudi writes ordering value 0 for deletes that carry none."""
    if pa.types.is_integer(values.type) or pa.types.is_floating(values.type):
        return pc.fill_null(pc.equal(values, 0), False)
    return pa.array(np.zeros(len(values), dtype=bool))
