"""What a migration target holds of its source, committed with each target version.

Each migration commit stores, in its own commit metadata (``CommitInfo.app_metadata``,
atomically with the commit), the source it translates, the last source version it holds and the
name of a *unit map*: a Parquet file under ``_lakecore_migration/`` in the target root listing
every source unit fingerprint the target holds and the target data files written for it. The map
is written before the commit and named only by it, so a migration killed before its commit
leaves an unreferenced map (removed by the next run) and never a wrong one. Formats ignore the
folder: Delta and Spark skip ``_``-prefixed paths, Hudi lists partitions and ``.hoodie``,
Lance its own folders.
"""

from __future__ import annotations

import io
import uuid
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from lakecore.errors import CorruptTableError, MigrationError
from lakecore.model import files as fi
from lakecore.model.history import HistoryEntry
from lakecore.storage import Storage

STATE_DIR = "_lakecore_migration"
KEY_SOURCE = "lakecore.migration.source"
KEY_SOURCE_FORMAT = "lakecore.migration.source_format"
KEY_SOURCE_VERSION = "lakecore.migration.source_version"
KEY_UNIT_MAP = "lakecore.migration.unit_map"

UNIT_MAP_SCHEMA = pa.schema(
    [
        pa.field("fingerprint", pa.binary(), nullable=False),
        pa.field("target_path", pa.string()),
    ]
)
"""One row per target file of a unit; a unit with no live rows has one row, path null."""


@dataclass(frozen=True, slots=True)
class MigrationState:
    """The last migration commit of a target: which source, up to which version."""

    source: str
    source_format: str
    source_version: str
    """``str`` of the source version (Delta/Lance int, Hudi instant)."""
    target_version: int | str
    unit_map: str
    """Path of the unit map, relative to the target root."""

    def app_metadata(self) -> dict[str, str]:
        """The commit metadata recording this state."""
        return {
            KEY_SOURCE: self.source,
            KEY_SOURCE_FORMAT: self.source_format,
            KEY_SOURCE_VERSION: self.source_version,
            KEY_UNIT_MAP: self.unit_map,
        }


def find_state(history: list[HistoryEntry]) -> MigrationState | None:
    """The state of the newest migration commit in ``history`` (newest first), if any."""
    for entry in history:
        meta = entry.app_metadata
        if KEY_SOURCE_VERSION in meta:
            try:
                return MigrationState(
                    source=meta[KEY_SOURCE],
                    source_format=meta[KEY_SOURCE_FORMAT],
                    source_version=meta[KEY_SOURCE_VERSION],
                    target_version=entry.version,
                    unit_map=meta[KEY_UNIT_MAP],
                )
            except KeyError as exc:
                raise CorruptTableError(
                    f"version {entry.version} of the target has incomplete migration metadata "
                    f"(missing {exc}); it was not written by lakecore.migrate"
                ) from exc
    return None


UNIT_MAP_SUFFIX = ".unitmap"
"""Unit maps are Parquet files, but not named ``.parquet``: readers that take every folder of
a partitioned table for a partition (hudi-rs 0.5) parse each ``.parquet`` file in it as a base
file and fail on a unit map, while they skip other files. (Maps named ``.parquet`` by earlier
runs are still read and removed.)"""


def new_unit_map_path() -> str:
    """A fresh unit-map name: never collides with another run's."""
    return f"{STATE_DIR}/units-{uuid.uuid4().hex}{UNIT_MAP_SUFFIX}"


def write_unit_map(storage: Storage, path: str, units: pa.Table) -> None:
    """Write ``units`` (``UNIT_MAP_SCHEMA``) at ``path``; it is referenced by no commit yet."""
    sink = io.BytesIO()
    pq.write_table(units.select(UNIT_MAP_SCHEMA.names).cast(UNIT_MAP_SCHEMA), sink)
    storage.put_if_absent(path, sink.getvalue())


def read_unit_map(storage: Storage, state: MigrationState) -> pa.Table:
    """The unit map of ``state``; raises ``MigrationError`` when it is missing or unreadable."""
    try:
        raw = storage.read(state.unit_map)
    except FileNotFoundError as exc:
        raise MigrationError(
            f"the target's migration state {state.unit_map} (version {state.target_version}) "
            "is missing; migrate into a new target"
        ) from exc
    try:
        return pq.read_table(io.BytesIO(raw)).cast(UNIT_MAP_SCHEMA)
    except (pa.ArrowInvalid, ValueError) as exc:
        raise MigrationError(
            f"the target's migration state {state.unit_map} does not decode: {exc}"
        ) from exc


def empty_unit_map() -> pa.Table:
    """The unit map of a target holding nothing yet."""
    return UNIT_MAP_SCHEMA.empty_table()


def remove_stale_maps(storage: Storage, keep: set[str]) -> int:
    """Delete unit maps other than ``keep`` (older states, runs killed before committing);
    returns how many. Only files of ``STATE_DIR`` directly are touched."""
    removed = 0
    try:
        listed = storage.list_dir(STATE_DIR)
    except FileNotFoundError:
        return 0
    for info in listed:
        name = info.path.rsplit("/", 1)[-1]
        path = f"{STATE_DIR}/{name}"
        ours = name.endswith((UNIT_MAP_SUFFIX, ".parquet"))
        if name.startswith("units-") and ours and path not in keep:
            storage.delete(path)
            removed += 1
    return removed


def unit_rows(keys: list[bytes], written: list[pa.Table], empty: list[bytes]) -> pa.Table:
    """Unit-map rows: one per file written for a unit, one null row per unit without rows."""
    fingerprints: list[bytes] = []
    paths: list[str | None] = []
    for key, files in zip(keys, written, strict=True):
        for path in files.column(fi.PATH).to_pylist():
            fingerprints.append(key)
            paths.append(path)
    for key in empty:
        fingerprints.append(key)
        paths.append(None)
    return pa.table(
        {
            "fingerprint": pa.array(fingerprints, pa.binary()),
            "target_path": pa.array(paths, pa.string()),
        },
        schema=UNIT_MAP_SCHEMA,
    )
