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
from lakecore.storage import Storage
from lakecore_hudi.keys import COMMIT_TIME
from lakecore_hudi.options import ReadOptions
from lakecore_hudi.source import HudiSnapshotSource
from lakecore_hudi.state import load_state


def read_changes(storage: Storage, start: str, end: str | None) -> pa.Table:
    """Rows written by the completed instants ``start..end`` (inclusive; latest by default).

    Raises ``VersionNotFoundError`` for an ``end`` that is not a completed write and
    ``UnsupportedFeatureError`` for tables written without meta fields.
    """
    state = load_state(storage, end, None, ReadOptions())
    if state.table_schema.get_field_index(COMMIT_TIME) < 0:
        raise UnsupportedFeatureError(
            "no-meta-fields", "incremental reads need _hoodie_commit_time (populated meta fields)"
        )
    source = HudiSnapshotSource(storage, state)
    rows = pa.Table.from_batches(list(source.read(source.files(), None)), schema=state.schema)
    times = rows.column(COMMIT_TIME)
    keep = pc.and_(pc.greater_equal(times, start), pc.less_equal(times, state.version))
    changed = rows.filter(keep)
    instants = changed.column(COMMIT_TIME)
    changed = changed.append_column("_change_type", pa.array(["upsert"] * changed.num_rows))
    changed = changed.append_column("_commit_version", instants)
    stamps = pa.array([_epoch(t) for t in instants.to_pylist()], pa.timestamp("ms", tz="UTC"))
    return changed.append_column("_commit_timestamp", stamps)


def _epoch(instant: str | None) -> int | None:
    from lakecore_hudi.state import instant_epoch_ms

    return None if instant is None else instant_epoch_ms(instant)
