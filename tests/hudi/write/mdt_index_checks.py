"""Checks of the record-level index partitions (``record_index``, ``secondary_index_*``)
against a table's records, and replays of a table's instants through the generators.

``assert_record_index_matches_table(root)`` / ``assert_secondary_index_matches_table(root)``
are for end-to-end tests: the live index must be exactly the table's live records (and sit in
the file groups Hudi's routing picks). ``replay_context(root, instant)`` builds the
``IndexContext`` a completed instant had while it was inflight (the timeline cut before it),
and ``hudi_records_at`` returns what Hudi wrote into an index partition for that instant.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import pyarrow as pa
from lakecore_hudi.keys import PARTITION_PATH, RECORD_KEY
from lakecore_hudi.log.delete_blocks import decode_delete_block
from lakecore_hudi.log.format import BlockType, read_log_blocks
from lakecore_hudi.mdt.column_stats import METADATA_DIR, _block_records
from lakecore_hudi.mdt.file_groups import file_group_id, file_group_index
from lakecore_hudi.mdt.index_context import IndexContext
from lakecore_hudi.mdt.record_index import (
    RECORD_INDEX,
    read_index_partition,
    record_location,
)
from lakecore_hudi.mdt.table import metadata_config, metadata_storage
from lakecore_hudi.options import ReadOptions
from lakecore_hudi.state import commit_metadata, load_state
from lakecore_hudi.table_config import read_table_config
from lakecore_hudi.timeline.active import load_timeline
from lakecore_hudi.write.changes import SliceRows

from lakecore.storage import FileInfo, Storage, open_storage
from tests.hudi.write.mdt_stats_checks import index_defs

_INSTANT = re.compile(r"^(\d{14,17})[._]")


class CutTimelineStorage:
    """A Storage showing the table as it was while ``instant`` was inflight: timeline files of
    later instants, and the completed file of ``instant`` itself, are not listed."""

    def __init__(self, base: Storage, instant: str) -> None:
        self._base = base
        self._instant = instant

    @property
    def root(self) -> str:
        return self._base.root

    def _visible(self, info: FileInfo) -> bool:
        if "/.hoodie/timeline/" not in f"/{info.path}" or "/metadata/" in info.path:
            return True
        name = info.path.rsplit("/", 1)[-1]
        match = _INSTANT.match(name)
        if match is None:
            return True
        ts = match.group(1)
        if ts > self._instant:
            return False
        # the instant's own completed file: "<ts>_<completion>.<action>"
        return not (ts == self._instant and name.startswith(f"{ts}_"))

    def list_dir(self, path: str) -> list[FileInfo]:
        return [i for i in self._base.list_dir(path) if self._visible(i)]

    def list_all(self, path: str = "") -> list[FileInfo]:
        return [i for i in self._base.list_all(path) if self._visible(i)]

    def list_from(self, path: str) -> Iterator[FileInfo]:
        return (i for i in self._base.list_from(path) if self._visible(i))

    def read(self, path: str, start: int | None = None, end: int | None = None) -> bytes:
        return self._base.read(path, start, end)

    def open_input(self, path: str) -> BinaryIO:
        return self._base.open_input(path)

    def head(self, path: str) -> FileInfo:
        return self._base.head(path)

    def exists(self, path: str) -> bool:
        return self._base.exists(path)

    def resolve(self, path: str) -> str:
        return self._base.resolve(path)

    def put(self, path: str, data: bytes) -> None:
        raise AssertionError(f"replay must not write ({path})")

    def put_if_absent(self, path: str, data: bytes) -> None:
        raise AssertionError(f"replay must not write ({path})")

    def delete(self, path: str) -> None:
        raise AssertionError(f"replay must not delete ({path})")


def replayable_instants(root: Path | str) -> list[tuple[str, str]]:
    """(timestamp, action) of the table's completed write instants, oldest first."""
    storage = open_storage(str(root))
    config = read_table_config(storage)
    timeline = load_timeline(storage, config)
    return [(i.timestamp, i.action) for i in timeline.completed_write_instants()]


def replay_context(root: Path | str, instant: str) -> IndexContext:
    """The IndexContext completed write ``instant`` of the table had while inflight."""
    storage = open_storage(str(root))
    config = read_table_config(storage)
    timeline = load_timeline(storage, config)
    found = [i for i in timeline.completed_write_instants() if i.timestamp == instant]
    assert found, f"{instant} is not a completed write of {root}"
    meta = commit_metadata(storage, timeline, found[0])
    mconfig = metadata_config(metadata_storage(storage))
    return IndexContext(
        storage=CutTimelineStorage(storage, instant),
        config=config,
        instant=instant,
        action=found[0].action,
        meta=meta,
        cleaned={},
        replaced=dict(meta.partition_to_replace_file_ids),
        table_version=(mconfig or config).table_version,
        index_defs=index_defs(storage),
    )


def hudi_records_at(root: Path | str, partition: str, instant: str) -> dict[str, Any]:
    """What Hudi's delta commit ``instant`` wrote into metadata partition ``partition``:
    key -> the record (key field set) or None for a DELETE-block entry."""
    storage = open_storage(str(root))
    out: dict[str, Any] = {}
    for info in storage.list_dir(f"{METADATA_DIR}/{partition}"):
        name = info.path.rsplit("/", 1)[-1]
        if ".log." not in name:
            continue
        for block in read_log_blocks(storage.read(info.path), info.path):
            if block.instant_time != instant:
                continue
            if block.block_type == BlockType.HFILE_DATA:
                for r in _block_records(block):
                    assert r.key not in out, f"{r.key} written twice at {instant}"
                    out[r.key] = {**r.record, "key": r.key}
            elif block.block_type == BlockType.DELETE:
                for key in decode_delete_block(block).column("record_key").to_pylist():
                    assert key not in out, f"{key} written twice at {instant}"
                    out[key] = None
    return out


def table_records(root: Path | str, columns: tuple[str, ...] = ()) -> pa.Table:
    """Every live record of the table's latest snapshot: key, partition path, ``_file_id``
    (the file group holding it) and ``columns``."""
    storage = open_storage(str(root))
    state = load_state(storage, None, None, ReadOptions())
    rows = SliceRows(storage, state)
    parts = []
    for i, s in enumerate(state.slices):
        found = rows.records(i).select([RECORD_KEY, PARTITION_PATH, *columns])
        ids = pa.array([s.file_id] * found.num_rows, pa.string())
        paths = pa.array([s.partition_path] * found.num_rows, pa.string())
        found = found.set_column(1, PARTITION_PATH, paths)
        parts.append(found.append_column("_file_id", ids))
    if not parts:
        return pa.table({RECORD_KEY: pa.array([], pa.string())})
    return pa.concat_tables(parts)


def file_group_count(root: Path | str, partition: str) -> int:
    """How many file groups metadata partition ``partition`` has on disk."""
    storage = open_storage(str(root))
    ids = set()
    for info in storage.list_dir(f"{METADATA_DIR}/{partition}"):
        match = re.search(r"-(\d{4})-0[_.]", info.path.rsplit("/", 1)[-1])
        if match:
            ids.add(int(match.group(1)))
    assert ids == set(range(len(ids))), f"{partition}: file groups {sorted(ids)}"
    return len(ids)


def assert_routed(root: Path | str, partition: str, entries: dict[str, Any], route: Any) -> int:
    """Every live entry sits in the file group ``route(key)`` hashes to; returns the count."""
    n = file_group_count(root, partition)
    for key, entry in entries.items():
        want = file_group_id(partition, file_group_index(route(key), n))
        assert entry.file_group == want, f"{partition}: {key!r} in {entry.file_group}, not {want}"
    return len(entries)


def holders(rows: pa.Table) -> dict[str, set[tuple[str, str]]]:
    """Record key -> every (partition path, file id) holding a live copy of it (Spark's
    ``insert`` operation may leave one key in two file groups)."""
    out: dict[str, set[tuple[str, str]]] = {}
    for key, path, file_id in zip(
        rows.column(RECORD_KEY).to_pylist(),
        rows.column(PARTITION_PATH).to_pylist(),
        rows.column("_file_id").to_pylist(),
        strict=True,
    ):
        out.setdefault(key, set()).add((path, file_id))
    return out


def assert_record_index_matches_table(root: Path | str) -> int:
    """The live ``record_index`` equals the table's records: the same keys, each pointing to
    the partition and file group holding it (one of them for a key the table holds twice),
    each entry in the file group Hudi's routing picks. Returns the number of keys."""
    from lakecore_hudi.mdt import record_index_records as ri

    storage = open_storage(str(root))
    config = read_table_config(storage)
    entries = read_index_partition(storage, config, RECORD_INDEX)
    assert entries is not None, f"{root}: no record_index partition"
    held = holders(table_records(root))
    indexed = {k: record_location(e.record) for k, e in entries.items()}
    assert sorted(indexed) == sorted(held), f"{root}: index keys differ from the table's"
    wrong = {k: (v, held[k]) for k, v in indexed.items() if v not in held[k]}
    assert not wrong, f"{root}: index locations differ from the table's: {wrong}"
    version = config.table_version
    assert_routed(root, RECORD_INDEX, entries, lambda k: ri.routing_key(k, version))
    return len(indexed)


def secondary_partitions(root: Path | str) -> list[str]:
    """The secondary index partitions the table's config lists."""
    config = read_table_config(open_storage(str(root)))
    return [p for p in config.metadata_partitions if p.startswith("secondary_index_")]


def assert_secondary_index_matches_table(root: Path | str) -> int:
    """Every secondary index of the table holds exactly the table's live (value, record key)
    pairs, each entry in the file group Hudi's routing picks. Returns the number of entries
    checked (over all indexes)."""
    from lakecore_hudi.mdt import secondary_index_records as si

    storage = open_storage(str(root))
    config = read_table_config(storage)
    defs = index_defs(storage)
    partitions = secondary_partitions(root)
    assert partitions, f"{root}: no secondary index"
    count = 0
    for partition in partitions:
        column = si.source_field(defs, partition)
        entries = read_index_partition(storage, config, partition)
        assert entries is not None, f"{root}: {partition} is not built"
        rows = table_records(root, (column,))
        keys = rows.column(RECORD_KEY).to_pylist()
        pairs = set(zip(si.render(rows.column(column)), keys, strict=True))
        assert {si.split_key(k) for k in entries} == pairs, f"{root}: {partition}"
        route = functools.partial(si.routing_key, table_version=config.table_version)
        count += assert_routed(root, partition, entries, route)
    return count
