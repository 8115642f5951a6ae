"""Which file slices a Hudi write must read: the scan planner's pruning, asked by DML.

DELETE, UPDATE and OVERWRITE ... WHERE read only the slices the planner keeps for their
predicate (partition values, then min/max/null_count stats of the file index; a slice without
stats, such as a slice with log files on a table without a metadata table, is always kept).
A predicate naming a partition column prunes on the planner's partition-scoped index: only
the statistics of the partitions its partition values may satisfy are loaded.

UPSERT and MERGE route rows by record key across ALL partitions (lakecore keeps a key unique in
the table, like Hudi's global index), so the source's partitions cannot prune: a key may have
to move out of another partition. They locate the file groups that may hold the incoming keys
in order of cost, as Hudi's bloom index does:

1. key ranges, from the file index (no file read beyond what the index already holds): the
   source's range of each record-key column and of ``_hoodie_record_key`` against the slices'
   min/max statistics (the metadata table's ``column_stats`` when the table has one, else the
   base files' Parquet footers);
2. each remaining slice's base-file footer: ``hoodie_min_record_key``/``hoodie_max_record_key``,
   then the bloom filter (``lakecore_hudi.bloom_index``);
3. only the slices left are read (by the planners), and their keys joined exactly.

Stage 1 is built only for the standard key generators (SIMPLE, COMPLEX, NON_PARTITION), whose
``_hoodie_record_key`` is the text of the key columns; for any other every slice is kept.
Stage 2 needs the record keys themselves (see ``_keys_of``). A slice with log files, without a
base file or whose footer has no filter is always kept. The predicates are the one tree the
row evaluator runs too (``lakecore.expr``); parts the planner cannot reason about may match, so
they never make a slice be skipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import LakecoreError
from lakecore.expr import tree as ex
from lakecore.expr.binding import Where
from lakecore.planning.candidates import dml_predicate
from lakecore.planning.candidates import key_range as core_key_range
from lakecore.planning.scan import prune
from lakecore.snapshot import Snapshot
from lakecore_hudi.bloom_index import slices_holding
from lakecore_hudi.keys import RECORD_KEY
from lakecore_hudi.source import HudiSnapshotSource
from lakecore_hudi.state import HudiState
from lakecore_hudi.write.layout import layout_for
from lakecore_hudi.write.rows_in import KEY, record_keys

_KEYED_BY_COLUMNS = frozenset({"SIMPLE", "COMPLEX", "NON_PARTITION"})


def candidate_slices(snapshot: Snapshot, where: Where | None) -> list[int]:
    """Indices (into the snapshot's latest file slices) of the slices that may hold rows
    matching ``where``; every slice when ``where`` is None (or the view is read-optimized).

    The result must be a superset of the slices holding a matching row: it is, because the
    planner only drops a slice when its partition values or stats prove no row can match, and
    when ``where`` pins the record key to a few values (``keys_pinned_by``) the footers' key
    ranges and bloom filters drop only slices that hold none of those keys.
    """
    source = snapshot.source
    if not isinstance(source, HudiSnapshotSource):
        raise TypeError("not a Hudi snapshot")
    state = source.state
    every = list(range(len(state.slices)))
    if where is None or state.options.read_optimized:
        # Read-optimized indexes describe base files only: their stats miss the log records.
        return every
    predicate = dml_predicate(where, snapshot.schema)
    index = _index_for(source, predicate, snapshot.partition_columns)
    kept = prune(index, predicate, source.scan_context()).files
    paths = set(kept.column("path").to_pylist())
    indexed = set(index.column("path").to_pylist())
    # A slice missing from the index (none today) is kept: pruning never saw it.
    out = [i for i, s in enumerate(state.slices) if s.path in paths or s.path not in indexed]
    keys = keys_pinned_by(predicate, state, snapshot.schema)
    return out if keys is None else slices_holding(source.storage, state.slices, out, keys)


def _index_for(
    source: HudiSnapshotSource, predicate: ex.Predicate, partition_columns: Sequence[str]
) -> pa.Table:
    """The file index to prune ``predicate`` (bound) with: when it names a partition column,
    the index with the statistics of the partitions it may keep only (``files_for_predicate``,
    the scan planner's), so a DML of one partition reads that partition's ``column_stats``
    records or footers, not the table's; else the full index (no partition stage to skip
    loads, and the full index is what every other path of the write shares)."""
    if set(ex.columns_of(predicate)) & set(partition_columns):
        return source.files_for_predicate(predicate)
    return source.files()


def keys_pinned_by(predicate: ex.Predicate, state: HudiState, schema: pa.Schema) -> pa.Array | None:
    """The record keys a row matching ``predicate`` must have, when the predicate pins the one
    record-key column to literal values (``k = v``, ``k IN (...)``, ORs of those, or ANDs with
    one such conjunct) and the key text is exact (see ``_keys_of``); else None. A COMPLEX key
    over one field, or a table recording no key generator, yields both renderings (``k:v``
    and ``v``)."""
    fields = state.config.record_key_fields
    keygen = state.config.keygen_type
    if len(fields) != 1 or (keygen is not None and keygen not in _KEYED_BY_COLUMNS):
        return None
    field = fields[0]
    if field not in schema.names or not _exact_text(schema.field(field).type):
        return None
    values = _pinned(predicate, field)
    # Only literals whose text is the key's: an int for an integer column (not 5.0, which
    # equals 5 but renders otherwise), a str for a string column.
    kind = int if pa.types.is_integer(schema.field(field).type) else str
    if values is None or any(type(v) is not kind for v in values):
        return None
    text = [str(v) for v in sorted(values, key=str)]
    if keygen in (None, "COMPLEX"):
        # COMPLEX over one field: either rendering (HUDI-7001); no key generator recorded:
        # lakecore writes the bare value, other writers may have written either.
        text += [f"{field}:{t}" for t in text]
    return pa.array(text, pa.string())


def _pinned(predicate: ex.Predicate, field: str) -> set[Any] | None:
    """The values ``predicate`` allows column ``field`` to take (None: not pinned)."""
    if isinstance(predicate, ex.Comparison):
        match = predicate.op == "=" and predicate.column.name == field
        value = predicate.literal.value
        return {value} if match and value is not None else None
    if isinstance(predicate, ex.In) and isinstance(predicate.column, ex.Column):
        if predicate.column.name != field:
            return None
        # A NULL in the list never makes the predicate TRUE.
        return {v.value for v in predicate.values if v.value is not None}
    if isinstance(predicate, ex.Or):
        union: set[Any] = set()
        for operand in predicate.operands:
            part = _pinned(operand, field)
            if part is None:
                return None
            union |= part
        return union
    if isinstance(predicate, ex.And):
        parts = [p for p in (_pinned(o, field) for o in predicate.operands) if p is not None]
        return min(parts, key=len) if parts else None
    return None


def key_range(
    rows: pa.Table, key_fields: Sequence[str], keygen_type: str | None, schema: pa.Schema
) -> ex.Predicate | None:
    """A predicate every stored record sharing a record key with ``rows`` satisfies: the
    core ``key_range`` of the key columns (``rows`` typed as ``schema``'s columns), the one
    MERGE uses on every format. None when no such predicate can be trusted (another key
    generator, a key column missing, no key column with a range): then every slice is read.
    """
    if keygen_type not in _KEYED_BY_COLUMNS or not key_fields:
        return None
    if any(name not in rows.column_names for name in key_fields):
        return None
    return core_key_range(rows, key_fields, schema)


def slices_for_keys(
    snapshot: Snapshot, rows: pa.Table, key_fields: Sequence[str], keygen_type: str | None
) -> list[int]:
    """The slices that may hold a record whose key is one of ``rows``' keys (none when
    ``rows`` is empty): the planner's pruning by key ranges, then each remaining slice's
    base-file footer (key range, then bloom filter: ``bloom_index.slices_holding``).

    ``rows`` are either keyed rows (with ``rows_in.KEY``: an upsert) or a merge source (key
    columns only; their record keys are rendered here when that is exact, see ``_keys_of``).
    The result must be a superset of the slices holding one of the keys: each stage drops a
    slice only when its statistics, footer range or filter prove it holds none of them.
    """
    if rows.num_rows == 0:
        return []
    source = _source(snapshot)
    keys = _keys_of(source.state, rows, keygen_type)
    predicate = _and(
        key_range(rows, key_fields, keygen_type, snapshot.schema),
        _record_key_range(keys, snapshot.schema),
    )
    kept = candidate_slices(snapshot, predicate)
    if keys is None:
        return kept
    return slices_holding(source.storage, source.state.slices, kept, keys)


def _source(snapshot: Snapshot) -> HudiSnapshotSource:
    source = snapshot.source
    if not isinstance(source, HudiSnapshotSource):
        raise TypeError("not a Hudi snapshot")
    return source


def _keys_of(state: HudiState, rows: pa.Table, keygen_type: str | None) -> pa.Array | None:
    """The ``_hoodie_record_key`` values ``rows`` may match, or None when they cannot be known
    exactly (then no footer is consulted).

    Keyed rows carry them (``KEY``): an upsert matches stored keys by that text, so pruning by
    it is exact. A merge matches key *columns*; their rendered text is the stored key only for
    the standard key generators over string and integer columns (other types, such as floats
    or timestamps, may render differently in the writer that stored them). A COMPLEX key over
    one field is rendered both ways (``field:value`` and the bare value, HUDI-7001).
    """
    if KEY in rows.column_names:
        return rows.column(KEY).combine_chunks().cast(pa.string())
    config = state.config
    fields = config.record_key_fields
    if (keygen_type is not None and keygen_type not in _KEYED_BY_COLUMNS) or not fields:
        return None
    if any(
        f not in rows.column_names or not _exact_text(rows.schema.field(f).type) for f in fields
    ):
        return None
    valid = pc.is_valid(rows.column(fields[0]))
    for name in fields[1:]:
        valid = pc.and_(valid, pc.is_valid(rows.column(name)))
    complete = rows.filter(valid)
    try:
        rendered = record_keys(complete, layout_for(config, state.table_schema)).combine_chunks()
    except LakecoreError:
        return None  # e.g. an empty key value: nothing a footer can rule out
    if keygen_type not in (None, "COMPLEX") or len(fields) != 1:
        return rendered.cast(pa.string())
    # One field under COMPLEX (either rendering, HUDI-7001) or no key generator recorded
    # (lakecore writes the bare value, other writers may have written either): the text as
    # rendered, with the prefix added and with it removed (more keys only keep more slices).
    prefix = f"{fields[0]}:"
    text = rendered.cast(pa.string())
    stripped = pc.utf8_slice_codeunits(text.filter(pc.starts_with(text, prefix)), len(prefix))
    prefixed = pc.binary_join_element_wise(prefix, text, "")
    return pa.concat_arrays([text, prefixed, stripped])


def _exact_text(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_integer(t))


def _record_key_range(keys: pa.Array | None, schema: pa.Schema) -> ex.Predicate | None:
    """``_hoodie_record_key`` between the keys' min and max: prunes by the record-key column
    statistics of the file index (the metadata table's ``column_stats`` or the Parquet
    footers). None when the keys are unknown or hold a character whose order differs between
    UTF-8 bytes and Java's UTF-16 strings (U+E000 and above)."""
    if keys is None or RECORD_KEY not in schema.names:
        return None
    keys = pc.drop_null(keys)
    if len(keys) == 0 or pc.any(pc.match_substring_regex(keys, "[\ue000-\U0010ffff]")).as_py():
        return None
    bounds = pc.min_max(keys)
    column = ex.Column(RECORD_KEY)
    term = ex.and_(
        ex.Comparison(">=", column, ex.Literal(bounds["min"].as_py())),
        ex.Comparison("<=", column, ex.Literal(bounds["max"].as_py())),
    )
    try:
        return dml_predicate(term, schema)
    except LakecoreError:
        return None


def _and(*terms: ex.Predicate | None) -> ex.Predicate | None:
    present = [t for t in terms if t is not None]
    return ex.and_(*present) if present else None
