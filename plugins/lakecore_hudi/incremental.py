"""Incremental reads: the records that commits ``start..end`` wrote (Hudi incremental query).

A record is in the result when its latest version at ``end`` was written by an instant in
``[start, end]`` (its ``_hoodie_commit_time``), as Hudi's incremental queries return. Deletes
are not returned: Hudi keeps no trace of them outside CDC logging, which lakecore does not
read yet. Change columns follow lakecore's convention: ``_change_type`` (always
``"upsert"``), ``_commit_version`` (the instant) and ``_commit_timestamp``.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from lakecore.errors import UnsupportedFeatureError
from lakecore.expr import tree as ex
from lakecore.storage import Storage
from lakecore_hudi.keys import COMMIT_TIME
from lakecore_hudi.state import instant_epoch_ms


def read_changes(storage: Storage, start: str, end: str | None) -> pa.Table:
    """Rows written by the completed instants ``start..end`` (inclusive; latest by default).

    The commit-time range is a scan predicate, so the planner skips file slices whose
    ``_hoodie_commit_time`` statistics lie outside it.

    Raises ``VersionNotFoundError`` for an ``end`` that is not a completed write and
    ``UnsupportedFeatureError`` for tables written without meta fields.
    """
    from lakecore_hudi.format import HudiFormat

    snapshot = HudiFormat().load_snapshot(storage, version=end)
    if snapshot.schema.get_field_index(COMMIT_TIME) < 0:
        raise UnsupportedFeatureError(
            "no-meta-fields", "incremental reads need _hoodie_commit_time (populated meta fields)"
        )
    upto = str(snapshot.version)
    changed = snapshot.scan(where=ex.col(COMMIT_TIME).between(start, upto)).to_arrow()
    instants = changed.column(COMMIT_TIME)
    changed = changed.append_column("_change_type", pa.array(["upsert"] * changed.num_rows))
    changed = changed.append_column("_commit_version", instants)
    return changed.append_column("_commit_timestamp", _epochs(instants))


def _epochs(instants: pa.ChunkedArray) -> pa.Array:
    """Instant texts -> UTC timestamps (converted once per distinct instant)."""
    distinct = pc.unique(instants)
    stamps = pa.array(
        [instant_epoch_ms(t) if t is not None else None for t in distinct.to_pylist()],
        pa.int64(),
    )
    at = pc.index_in(instants, value_set=distinct)
    return stamps.take(at).cast(pa.timestamp("ms", tz="UTC"))
