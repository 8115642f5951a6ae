"""Which file slices a Hudi write must read: the scan planner's pruning, asked by DML.

DELETE, UPDATE and OVERWRITE ... WHERE read only the slices the planner keeps for their
predicate (partition values, then min/max/null_count stats of the file index; a slice without
stats, such as a slice with log files on a table without a metadata table, is always kept).

UPSERT and MERGE route rows by record key across ALL partitions (lakecore keeps a key unique in
the table, like Hudi's global index), so the source's partitions cannot prune: a key may have
to move out of another partition. What does prune is the key itself: a slice can hold a source
key only if its record-key columns' min/max cover that key, so the predicate is the source's
per-column key range. It is built only for the standard key generators (SIMPLE, COMPLEX,
NON_PARTITION), whose ``_hoodie_record_key`` is the text of the key columns; for any other the
slices are all read. The predicate is the one tree the row evaluator runs too
(``lakecore.expr``); parts the planner cannot reason about (functions, arithmetic) may match, so
they never make a slice be skipped.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from lakecore.expr import tree as ex
from lakecore.expr.binding import Where
from lakecore.planning.candidates import dml_predicate
from lakecore.planning.candidates import key_range as core_key_range
from lakecore.planning.scan import prune
from lakecore.snapshot import Snapshot
from lakecore_hudi.source import HudiSnapshotSource

_KEYED_BY_COLUMNS = frozenset({"SIMPLE", "COMPLEX", "NON_PARTITION"})


def candidate_slices(snapshot: Snapshot, where: Where | None) -> list[int]:
    """Indices (into the snapshot's latest file slices) of the slices that may hold rows
    matching ``where``; every slice when ``where`` is None (or the view is read-optimized).

    The result must be a superset of the slices holding a matching row: it is, because the
    planner only drops a slice when its partition values or stats prove no row can match.
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
    kept = prune(source.files(), predicate, source.scan_context()).files
    paths = set(kept.column("path").to_pylist())
    indexed = set(source.files().column("path").to_pylist())
    # A slice missing from the index (none today) is kept: pruning never saw it.
    return [i for i, s in enumerate(state.slices) if s.path in paths or s.path not in indexed]


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
    ``rows`` is empty; every slice when no key range can be trusted)."""
    if rows.num_rows == 0:
        return []
    predicate = key_range(rows, key_fields, keygen_type, snapshot.schema)
    if predicate is None:
        return candidate_slices(snapshot, None)
    return candidate_slices(snapshot, predicate)
