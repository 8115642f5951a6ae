"""How many new records go into one new file group: Hudi's insert split sizing.

Hudi's upsert partitioner spreads the inserts of one partition over new file groups of about
``hoodie.parquet.max.file.size`` bytes (120 MiB by default), each taking
``max file size / average record size`` records. The average record size comes from the
newest completed commits that wrote more than the small-file limit
(``hoodie.parquet.small.file.limit``, 100 MiB, times ``hoodie.record.size.estimation.threshold``,
1.0) — their total bytes written over records written — else from
``hoodie.copyonwrite.record.size.estimate`` (1024 bytes). The settings are read from the
table's ``hoodie.properties`` when present there. The commits' metadata comes from the state
(``HudiState.metadata``, parsed when the snapshot was loaded): a file is read only when the
state does not hold it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator

import pyarrow as pa

from lakecore.errors import CorruptTableError
from lakecore.storage import Storage
from lakecore_hudi.state import HudiState, commit_metadata
from lakecore_hudi.table_config import TableConfig

log = logging.getLogger(__name__)

MAX_FILE_SIZE = "hoodie.parquet.max.file.size"
SMALL_FILE_LIMIT = "hoodie.parquet.small.file.limit"
SIZE_THRESHOLD = "hoodie.record.size.estimation.threshold"
RECORD_SIZE_ESTIMATE = "hoodie.copyonwrite.record.size.estimate"

_DEFAULTS = {
    MAX_FILE_SIZE: 120 * 1024 * 1024,
    SMALL_FILE_LIMIT: 100 * 1024 * 1024,
    RECORD_SIZE_ESTIMATE: 1024,
}
#: How many of the newest commits are looked at for an average record size.
_COMMITS_LOOKED_AT = 10


def records_per_file(storage: Storage, state: HudiState) -> int:
    """How many inserted records one new file group takes (at least 1)."""
    config = state.config
    max_size = _setting(config, MAX_FILE_SIZE)
    return max(1, max_size // average_record_size(storage, state))


def average_record_size(storage: Storage, state: HudiState) -> int:
    """Bytes per record written by the newest commit large enough to tell, else the
    configured estimate (see the module docstring)."""
    config = state.config
    raw = config.get(SIZE_THRESHOLD)
    try:
        threshold = float(raw) if raw is not None else 1.0
    except ValueError:
        raise CorruptTableError(
            f"{SIZE_THRESHOLD}={raw!r} in hoodie.properties is not a number"
        ) from None
    # A small-file limit <= 0 disables small-file handling in Hudi: every commit then tells.
    enough = threshold * _setting(config, SMALL_FILE_LIMIT, positive=False)
    completed = state.timeline.completed_write_instants()
    for instant in reversed(completed[-_COMMITS_LOOKED_AT:]):
        meta = state.metadata.get(instant.timestamp)
        try:
            if meta is None:
                meta = commit_metadata(storage, state.timeline, instant)
        except (CorruptTableError, FileNotFoundError) as exc:
            log.debug("no record size from instant %s: %s", instant.timestamp, exc)
            continue
        stats = [s for group in meta.partition_to_write_stats.values() for s in group]
        written = sum(s.total_write_bytes for s in stats)
        records = sum(s.num_writes for s in stats)
        if written > enough and records > 0:
            return max(1, math.ceil(written / records))
    return _setting(config, RECORD_SIZE_ESTIMATE)


def split(rows: pa.Table, per_file: int) -> Iterator[pa.Table]:
    """``rows`` in as few runs of at most ``per_file`` rows as it takes, of even sizes."""
    if rows.num_rows <= per_file:
        yield rows
        return
    buckets = math.ceil(rows.num_rows / per_file)
    size = math.ceil(rows.num_rows / buckets)
    for start in range(0, rows.num_rows, size):
        yield rows.slice(start, size)


def _setting(config: TableConfig, key: str, positive: bool = True) -> int:
    raw = config.get(key)
    if raw is None:
        return _DEFAULTS[key]
    try:
        value = int(raw)
    except ValueError:
        raise CorruptTableError(f"{key}={raw!r} in hoodie.properties is not a number") from None
    if positive and value <= 0:
        raise CorruptTableError(f"{key}={raw!r} in hoodie.properties must be positive")
    return value
