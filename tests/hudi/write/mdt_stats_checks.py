"""Checks of a Hudi table's ``column_stats`` / ``partition_stats`` metadata partitions, for the
generator tests and for end-to-end tests of tables lakecore writes.

- ``live_records``: the live records of a metadata partition (latest file slices, live log
  blocks, folded with a generator's ``merge``), as raw ``HoodieMetadataRecord`` dicts.
- ``replayed_records``: the records the generators compute for every data instant of the
  timeline, folded the same way: a table's metadata must equal it.
- ``assert_column_stats_match_files``: every live column-stats record describes a data file
  that exists, with the statistics recomputed from that file; every data file of a completed
  write has its records.
- ``assert_partition_stats_bound_files``: every partition-stats record bounds the live files
  of its partition and every partition column with live file stats has a record.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import fastavro
from lakecore_hudi.log.format import BlockType, read_log_blocks
from lakecore_hudi.mdt import column_stats_records as csr
from lakecore_hudi.mdt.column_stats import (
    METADATA_DIR,
    _block_records,
    _hfile_records,
    _live_blocks,
    _load_timeline,
    _metadata_config,
    _slice_files,
)
from lakecore_hudi.mdt.file_ranges import file_ranges
from lakecore_hudi.mdt.files_partition import is_init_instant
from lakecore_hudi.mdt.index_context import IndexContext
from lakecore_hudi.mdt.record_schema import metadata_record_schema
from lakecore_hudi.mdt.stats_values import NULL_KIND, java_order_key, standardize
from lakecore_hudi.options import ReadOptions
from lakecore_hudi.state import load_state
from lakecore_hudi.table_config import read_table_config
from lakecore_hudi.timeline.active import load_timeline
from lakecore_hudi.timeline.clean_metadata import parse_clean_metadata
from lakecore_hudi.timeline.commit_metadata import parse_commit_metadata
from lakecore_hudi.timeline.instants import COMMIT, DELTA_COMMIT, REPLACE_COMMIT
from lakecore_hudi.view import data_files, latest_slices

from lakecore.storage import Storage, open_storage

Record = dict[str, Any]
Merge = Callable[[Record | None, Record], Record | None]
Generator = Callable[[IndexContext], list[Record]]

PAYLOAD = "ColumnStatsMetadata"


def index_defs(storage: Storage) -> dict[str, Any]:
    """The parsed ``.hoodie/.index_defs/index.json`` ({} if absent)."""
    try:
        parsed: dict[str, Any] = json.loads(storage.read(".hoodie/.index_defs/index.json"))
    except FileNotFoundError:
        return {}
    return parsed


def live_records(root: Path | str, partition: str, merge: Merge) -> dict[str, Record]:
    """Key -> live record of metadata partition ``partition`` (folded with ``merge``; a
    tombstone is no live record).

    A log block counts when its metadata instant is completed and its data instant is a
    completed (or archived, or initialisation) instant, as Hudi's metadata reader decides.
    """
    storage = open_storage(str(root))
    mdt = _metadata_config(storage)
    assert mdt is not None, f"{root}: no metadata table"
    timeline = _load_timeline(storage, mdt)
    data = load_timeline(storage, read_table_config(storage))
    completed = {i.timestamp for i in data.completed()}
    first = min((i.timestamp for i in data.instants), default="")

    def valid(instant: str | None) -> bool:
        if instant is None:
            return False
        return is_init_instant(instant) or instant in completed or instant < first

    files = _slice_files(storage.list_dir(f"{METADATA_DIR}/{partition}"))
    out: dict[str, Record] = {}
    for s in latest_slices(files, timeline.visible, mdt.table_version >= 8):
        merged: dict[str, Record | None] = {}
        records = []
        if s.base_file is not None:
            path = s.base_file.path
            records.extend(_hfile_records(storage.read(path), path, None))
        logs = [(f.path, storage.read(f.path)) for f in s.log_files]
        for block in _live_blocks(logs, timeline):
            if valid(block.instant_time):
                records.extend(_block_records(block))
        for r in records:
            record = {**r.record, "key": r.key}
            merged[r.key] = merge(merged.get(r.key), record)
        out.update({k: v for k, v in merged.items() if _is_live(v)})
    return out


def _is_live(record: Record | None) -> bool:
    return record is not None and not record[PAYLOAD]["isDeleted"]


def instant_contexts(root: Path | str) -> list[IndexContext]:
    """An ``IndexContext`` for every completed write and clean of the data timeline, in
    order (the storage shows the whole table, later instants included)."""
    storage = open_storage(str(root))
    config = read_table_config(storage)
    timeline = load_timeline(storage, config)
    defs = index_defs(storage)
    out = []
    for instant in timeline.completed():
        data = timeline.read_details(storage, instant)
        path = timeline.path_of(instant)
        meta, cleaned, replaced = None, {}, {}
        if instant.action in (COMMIT, DELTA_COMMIT, REPLACE_COMMIT):
            meta = parse_commit_metadata(data, path, instant.action == REPLACE_COMMIT)
            replaced = {p: list(ids) for p, ids in meta.partition_to_replace_file_ids.items()}
        elif instant.action == "clean":
            clean = parse_clean_metadata(data, path)
            cleaned = {
                p: [f.rsplit("/", 1)[-1] for f in m.success_delete_files]
                for p, m in clean.partition_metadata.items()
            }
        else:
            continue
        out.append(
            IndexContext(
                storage=storage,
                config=config,
                instant=instant.timestamp,
                action=instant.action,
                meta=meta,
                cleaned=cleaned,
                replaced=replaced,
                table_version=config.table_version,
                index_defs=defs,
            )
        )
    return out


def replayed_records(root: Path | str, generate: Generator, merge: Merge) -> dict[str, Record]:
    """Key -> live record folded from ``generate`` over every data instant of the timeline.

    Files a clean deleted since cannot be read again: an instant whose records need one is
    replayed write stat by write stat, leaving out those whose files are gone (their records
    are tombstoned by the clean anyway). Partition stats read every file of a partition, so
    their replay after a clean leaves records out and fails the comparison: check them with
    ``assert_partition_stats_match_files`` instead.
    """
    merged: dict[str, Record | None] = {}
    for ctx in instant_contexts(root):
        for record in _generated(ctx, generate):
            merged[record["key"]] = merge(merged.get(record["key"]), record)
    return {k: v for k, v in merged.items() if _is_live(v)}


def _generated(ctx: IndexContext, generate: Generator) -> list[Record]:
    try:
        return generate(ctx)
    except FileNotFoundError:
        if ctx.meta is None:
            raise
    out: list[Record] = []
    for partition, stats in ctx.meta.partition_to_write_stats.items():
        for stat in stats:
            one = dataclasses.replace(ctx.meta, partition_to_write_stats={partition: [stat]})
            try:
                out.extend(generate(dataclasses.replace(ctx, meta=one)))
            except FileNotFoundError:
                continue  # cleaned since
    return out


def exact(value: Any) -> Any:
    """``value`` with every float replaced by its repr, so that comparisons tell -0.0 from
    0.0 (and NaN equals NaN) as Hudi's Java comparisons do."""
    if isinstance(value, float):
        return ("float", repr(value))
    if isinstance(value, dict):
        return {k: exact(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(exact(v) for v in value)
    return value


def comparable(record: Record) -> Record:
    """A record without the meta fields and payloads of other partitions (all must be null)."""
    others = {
        k: v
        for k, v in record.items()
        if k not in ("key", "type", PAYLOAD, "_hoodie_file_name") and v is not None
    }
    assert not others, f"{record['key']}: unexpected fields {others}"
    # exact: floats by repr, so -0.0 and 0.0 differ as they do to Hudi
    return {"key": record["key"], "type": record["type"], PAYLOAD: exact(record[PAYLOAD])}


@functools.lru_cache(maxsize=4)
def metadata_schema(table_version: int) -> Any:
    """The parsed ``HoodieMetadataRecord`` Avro schema of ``table_version``."""
    return fastavro.parse_schema(metadata_record_schema(table_version))


def avro_round_trip(record: Record, table_version: int, *, named: bool = False) -> Any:
    """``record`` written with the metadata record schema of ``table_version`` and read back
    (``named``: union values come back as ``(type name, value)`` like the generators write)."""
    schema = metadata_schema(table_version)
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, schema, record)
    buffer.seek(0)
    if not named:
        return fastavro.schemaless_reader(buffer, schema, None)
    return fastavro.schemaless_reader(
        buffer, schema, None, return_named_type=True, return_named_type_override=True
    )


def records_by_instant(root: Path, partition: str, log_glob: str) -> dict[str, dict[str, Record]]:
    """Instant -> key -> record of every HFile data block in metadata partition ``partition``'s
    log files matching ``log_glob``, as Hudi wrote them."""
    out: dict[str, dict[str, Record]] = {}
    for path in sorted((root / ".hoodie/metadata" / partition).glob(log_glob)):
        for block in read_log_blocks(path.read_bytes(), str(path)):
            if block.block_type == BlockType.HFILE_DATA and block.instant_time:
                records = out.setdefault(block.instant_time, {})
                records.update({r.key: {**r.record, "key": r.key} for r in _block_records(block)})
    return out


def assert_replay_equals_live(
    root: Path | str, partition: str, generate: Generator, merge: Merge
) -> int:
    """The records ``generate`` replays over the timeline equal the live records of metadata
    partition ``partition``, key by key (``comparable``); returns how many keys."""
    live = live_records(root, partition, merge)
    mine = replayed_records(root, generate, merge)
    assert sorted(mine) == sorted(live)
    for key, record in live.items():
        assert comparable(mine[key]) == comparable(record), key
    return len(live)


def assert_instants_equal_log_blocks(
    root: Path, partition: str, log_glob: str, generate: Generator
) -> tuple[int, int]:
    """Per data instant, the records ``generate`` makes equal those of the instant's HFile
    log blocks in metadata partition ``partition`` (``records_by_instant``); returns
    (instants, records) compared."""
    instants = records = 0
    written = records_by_instant(root, partition, log_glob)
    for ctx in instant_contexts(root):
        mine = {r["key"]: r for r in generate(ctx)}
        hudi = written.get(ctx.instant, {})
        assert sorted(mine) == sorted(hudi), (Path(root).name, ctx.instant)
        for key, record in hudi.items():
            assert comparable(mine[key]) == comparable(record)
        instants += 1
        records += len(mine)
    return instants, records


def _payload(record: Mapping[str, Any]) -> Any:
    return exact(dict(record[PAYLOAD]))


def assert_column_stats_match_files(root: Path | str) -> int:
    """Every live column-stats record names an existing data file and equals the stats
    recomputed from it (log files: over the blocks of completed instants); every data file
    written by a completed instant (Parquet base files and log files) has a record for each
    indexed column. Returns the number of records checked."""
    storage = open_storage(str(root))
    config = read_table_config(storage)
    timeline = load_timeline(storage, config)
    completed = {i.timestamp for i in timeline.completed()}
    live = live_records(root, csr.PARTITION, csr.merge)
    version2 = csr.index_version(index_defs(storage), csr.PARTITION, config.table_version) >= 2
    columns = csr.columns_to_index(config, index_defs(storage), None)
    by_file: dict[str, dict[str, Record]] = {}
    for record in live.values():
        payload = record[PAYLOAD]
        by_file.setdefault(payload["fileName"], {})[payload["columnName"]] = record
    on_disk = {f.info.path.rsplit("/", 1)[-1]: f for f in data_files(storage.list_all(""))}
    missing = sorted(set(by_file) - set(on_disk))
    assert not missing, f"{root}: live column stats for files not on storage: {missing}"
    checked = 0
    for name, f in sorted(on_disk.items()):
        if f.name.instant not in completed or name.endswith(".lance"):
            continue
        partition = f.partition_path
        ranges = file_ranges(storage, f.info.path, columns, completed.__contains__)
        expected = {r.column: csr.column_stats_record(partition, r, version2) for r in ranges}
        found = by_file.get(name, {})
        assert sorted(found) == sorted(expected), f"{root}: {name}: columns {sorted(found)}"
        for column, record in expected.items():
            assert found[column]["key"] == record["key"], (name, column)
            assert _payload(found[column]) == _payload(record), (name, column)
            checked += 1
    return checked


def live_slice_files(root: Path | str) -> dict[str, str]:
    """File name -> partition path of every file of the table's latest file slices."""
    storage = open_storage(str(root))
    state = load_state(storage, None, None, ReadOptions(metadata_enable=False))
    out = {}
    for s in state.slices:
        for info in ([s.base_file] if s.base_file is not None else []) + list(s.log_files):
            out[info.path.rsplit("/", 1)[-1]] = s.partition_path
    return out


def assert_partition_stats_bound_files(
    root: Path | str, partition_stats: Mapping[str, Record]
) -> int:
    """Every partition-stats record (``partition_stats``: key -> live record) bounds the live
    column stats of the files of its partition's latest slices, and every partition column
    with live file stats has a record; returns the number of (record, file) pairs checked.

    Not equality: Hudi's partition stats after a replace commit keep the replaced files'
    bounds until the partition is written again.
    """
    column_stats = live_records(root, csr.PARTITION, csr.merge)
    per_partition: dict[tuple[str, str], list[dict[str, Any]]] = {}
    live_files = live_slice_files(root)
    for record in column_stats.values():
        payload = record[PAYLOAD]
        partition = live_files.get(payload["fileName"])
        if partition is not None:
            per_partition.setdefault((partition, payload["columnName"]), []).append(payload)
    covered = {(r[PAYLOAD]["fileName"], r[PAYLOAD]["columnName"]) for r in partition_stats.values()}
    uncovered = sorted(set(per_partition) - covered)
    assert not uncovered, f"{root}: partitions' columns without partition stats: {uncovered}"
    checked = 0
    for record in partition_stats.values():
        payload = record[PAYLOAD]
        part = csr.range_of(payload)
        for file_payload in per_partition.get((payload["fileName"], payload["columnName"]), []):
            file_range = csr.range_of(file_payload)
            if part.kind is not None and part.kind != NULL_KIND:
                # Version 2 casts a partition's file bounds to the column's schema type.
                file_range = standardize(file_range, part.kind)
            low, high = file_range.min_value, file_range.max_value
            if low is not None:
                assert part.min_value is not None, payload
                assert java_order_key(part.min_value) <= java_order_key(low), payload
            if high is not None:
                assert part.max_value is not None, payload
                assert java_order_key(part.max_value) >= java_order_key(high), payload
            checked += 1
    return checked


def assert_partition_stats_match_files(root: Path | str) -> int:
    """Every live partition-stats record equals the range recomputed over the files of its
    partition's latest slices (footers, completed log blocks), and every partition column with
    such a range has a record. Where the last write of the partition was a replace commit,
    the record only has to bound the range (Hudi counts the replaced file groups too).
    Returns the number of records checked for equality."""
    from lakecore_hudi.mdt import partition_stats_records as psr
    from lakecore_hudi.mdt.stats_values import ColumnRange, combine, standardize

    storage = open_storage(str(root))
    config = read_table_config(storage)
    timeline = load_timeline(storage, config)
    completed = {i.timestamp for i in timeline.completed()}
    defs = index_defs(storage)
    columns = csr.columns_to_index(config, defs, None)
    version2 = csr.index_version(defs, psr.PARTITION, config.table_version) >= 2
    last_write: dict[str, IndexContext] = {}
    for ctx in instant_contexts(root):
        if ctx.meta is not None:
            for stat in ctx.meta.write_stats():
                last_write[stat.partition_path or ""] = ctx
    expected: dict[str, ColumnRange] = {}
    files = live_slice_files(root)
    paths = {f.info.path.rsplit("/", 1)[-1]: f.info.path for f in data_files(storage.list_all(""))}
    for name, partition in files.items():
        last = last_write.get(partition)
        targets = psr.schema_kinds(config, last.meta if last else None, columns) if version2 else {}
        for r in file_ranges(storage, paths[name], columns, completed.__contains__):
            key = psr.partition_stats_record(partition, r, version2)["key"]
            target = targets.get(r.column)
            expected[key] = combine(
                expected.get(key), standardize(r, target) if target else r, name=partition
            )
    live = live_records(root, psr.PARTITION, psr.merge)
    missing = sorted(set(expected) - set(live))
    assert not missing, f"{root}: partition stats missing for {missing}"
    equal = 0
    for key, record in live.items():
        payload = record[PAYLOAD]
        last = last_write.get(payload["fileName"])
        if (last is not None and last.action == REPLACE_COMMIT) or key not in expected:
            continue
        want = psr.partition_stats_record(payload["fileName"], expected[key], version2)
        assert exact(payload) == exact(want[PAYLOAD]), (root, key)
        equal += 1
    assert_partition_stats_bound_files(root, live)
    return equal
