"""The metadata-table machinery against Spark-written metadata tables (mdt/record_codec,
mdt/file_group_fold, mdt/delta_commit routing): every record Hudi wrote re-encodes to the very
bytes Hudi wrote, delete blocks are Hudi's, every record sits in the file group the routing
picks, and folding the ``files`` partition's file groups gives the listing lakecore's reader
reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lakecore_hudi.log.delete_blocks import decode_delete_block
from lakecore_hudi.log.format import BlockType, read_log_blocks
from lakecore_hudi.mdt.column_stats import _block_records, _hfile_records, _load_timeline
from lakecore_hudi.mdt.delta_commit import merge_in_commit
from lakecore_hudi.mdt.file_group_fold import file_group_ids, fold_slice, partition_slices
from lakecore_hudi.mdt.file_groups import file_group_index, file_group_ordinal
from lakecore_hudi.mdt.files_partition import read_files_partition, valid_data_instants
from lakecore_hudi.mdt.files_records import ALL_PARTITIONS, partition_path
from lakecore_hudi.mdt.hfile import read_file_info, read_hfile
from lakecore_hudi.mdt.partition_spec import FILES, is_maintained
from lakecore_hudi.mdt.record_codec import delete_block, encode_record_cells, is_deletion
from lakecore_hudi.mdt.record_schema import metadata_record_schema_json
from lakecore_hudi.mdt.table import metadata_config, metadata_storage
from lakecore_hudi.table_config import read_table_config

from lakecore.storage import open_storage
from tests.corpus import CORPUS
from tests.hudi.test_column_stats import MDT_TABLES


def _mdt_files(name: str) -> list[Path]:
    root = CORPUS / "hudi" / name / ".hoodie" / "metadata"
    return sorted(
        f
        for part in root.iterdir()
        if part.is_dir() and not part.name.startswith(".")
        for f in part.iterdir()
        if f.name.endswith(".hfile") or ".log." in f.name
    )


def _version(name: str) -> int:
    storage = open_storage(str(CORPUS / "hudi" / name))
    mconfig = metadata_config(metadata_storage(storage))
    assert mconfig is not None
    return mconfig.table_version


def test_every_corpus_record_reencodes_to_hudis_bytes() -> None:
    cells = blocks = deletes = exact_files = 0
    for name in MDT_TABLES:
        version = _version(name)
        ours = metadata_record_schema_json(version)
        for path in _mdt_files(name):
            data = path.read_bytes()
            if path.name.endswith(".hfile"):
                schema = read_file_info(data, str(path))[b"schema"].decode()
                pieces = [(data, schema)] if schema == ours else []
            else:
                pieces = []
                for block in read_log_blocks(data, str(path)):
                    if block.block_type == BlockType.HFILE_DATA and block.schema == ours:
                        pieces.append((bytes(block.content), block.schema))
                    elif block.block_type == BlockType.DELETE:
                        keys = decode_delete_block(block).column("record_key").to_pylist()
                        if keys:  # Hudi's own: IntWrapper(0) ordering, partition = its name
                            assert block.instant_time is not None
                            ours_block = delete_block(
                                keys, path.parent.name, block.instant_time, version
                            )
                            (again,) = read_log_blocks(ours_block, "ours")
                            # Hudi's header is a HashMap of an enum: its order varies by JVM run
                            assert dict(again.header) == dict(block.header), path
                            assert bytes(again.content) == bytes(block.content), path
                            deletes += 1
            for content, _ in pieces:
                hudi = read_hfile(content, str(path))
                records = [
                    {**r.record, "key": r.key} for r in _hfile_records(content, str(path), None)
                ]
                again = encode_record_cells(records, version)
                if path.parent.name == "files":
                    # A file list is a java.util.HashMap: its order depends on the map's
                    # history (capacity), not only on its entries; the entries must agree.
                    decoded = _hfile_records(_as_hfile(again, content, path), str(path), None)
                    assert [(r.key, r.record) for r in decoded] == [
                        (r["key"], {**r, "key": ""}) for r in records
                    ], path
                    exact_files += sum(a == b for a, b in zip(again, hudi, strict=True))
                else:
                    assert again == hudi, path
                cells += len(hudi)
                blocks += 1
    # every partition type of the corpus: files, column_stats, partition_stats, record_index,
    # secondary indexes; deletes of record index and secondary index entries
    assert (blocks, deletes) == (230, 15), (blocks, deletes)
    assert cells > 1000 and exact_files > 50, (cells, exact_files)


def test_every_corpus_record_sits_in_the_file_group_routing_picks() -> None:
    checked: dict[str, int] = {}
    for name in MDT_TABLES:
        mdt = metadata_storage(open_storage(str(CORPUS / "hudi" / name)))
        for path in _mdt_files(name):
            partition = path.parent.name
            if partition.startswith("secondary_index_") and _version(name) >= 9:
                continue  # routed by the unescaped secondary key (the generator's routing_key)
            count = len(file_group_ids(mdt, partition))
            group = file_group_ordinal(path.name.lstrip(".").split("_")[0])
            for key in _keys(path):
                assert file_group_index(key, count) == group, (path, key)
                checked[partition.split("_index_")[0]] = checked.get(partition, 0) + 1
    assert set(checked) == {"files", "column_stats", "partition_stats", "record_index", "secondary"}


def _as_hfile(cells: list[tuple[bytes, bytes]], original: bytes, path: Path) -> bytes:
    from lakecore_hudi.mdt.hfile_writer import write_hfile

    schema = read_file_info(original, str(path)).get(b"schema")
    return write_hfile(cells, {"schema": schema} if schema else {})


def _keys(path: Path) -> list[str]:
    data = path.read_bytes()
    if path.name.endswith(".hfile"):
        return [r.key for r in _hfile_records(data, str(path), None)]
    keys: list[str] = []
    for block in read_log_blocks(data, str(path)):
        if block.block_type == BlockType.HFILE_DATA:
            keys.extend(r.key for r in _block_records(block))
        elif block.block_type == BlockType.DELETE:
            keys.extend(str(k) for k in decode_delete_block(block).column("record_key").to_pylist())
    return keys


@pytest.mark.parametrize("name", MDT_TABLES)
def test_folding_the_files_partition_gives_the_readers_listing(name: str) -> None:
    storage = open_storage(str(CORPUS / "hudi" / name))
    config = read_table_config(storage)
    mdt = metadata_storage(storage)
    mconfig = metadata_config(mdt)
    assert mconfig is not None
    completed, first = valid_data_instants(storage, config)

    def valid(instant: str) -> bool:
        return instant.startswith("00000000000000") or instant in completed or instant < first

    timeline = _load_timeline(storage, mconfig)
    (only,) = partition_slices(mdt, "files", timeline).values()
    fold = fold_slice(mdt, only, FILES, timeline, valid)
    records = {k: FILES.compacted(r) for k, r in fold.records.items()}
    listing: dict[str, dict[str, int]] = {
        k: {n: i["size"] for n, i in (r or {})["filesystemMetadata"].items()}
        for k, r in records.items()
    }
    partitions = listing.pop(ALL_PARTITIONS)
    expected = read_files_partition(storage, config)
    assert {partition_path(k): listing.get(k, {}) for k in partitions} == expected


def test_records_of_one_instant_combine_per_key_and_deletions_win() -> None:
    def files(key: str, **entries: Any) -> dict[str, Any]:
        return {"key": key, "type": 2, "filesystemMetadata": entries}

    live = {"size": 5, "isDeleted": False}
    bigger = {"size": 9, "isDeleted": False}
    gone = {"key": "k", "type": 5}
    assert is_deletion(gone) and not is_deletion(files("k"))
    state = merge_in_commit(FILES, [files("p", a=live), files("p", a=bigger, b=live), gone])
    assert state == {"p": files("p", a=bigger, b=live), "k": None}
    assert is_maintained("files") and not is_maintained("bloom_filters")
    assert not is_maintained("expr_index_x")


# Hudi's own metadata compactions in the corpus: (table, compaction instant).
COMPACTIONS = [
    ("mor_avro_v8_trips_8i3u1d", "20251220210130942"),
    ("mor_avro_v9_txns_nonpart_meta", "20260307162712050"),
]


@pytest.mark.parametrize(("name", "instant"), COMPACTIONS)
def test_compaction_replays_hudis_compaction(tmp_path: Path, name: str, instant: str) -> None:
    """With the metadata table cut back to what Hudi saw when it scheduled the compaction
    (instants completed after it pending, the compaction's own files gone), lakecore's
    compaction writes the base files Hudi wrote: the same file groups, the same records."""
    from lakecore_hudi.mdt.compaction import compact_metadata
    from lakecore_hudi.mdt.partition_spec import spec_for

    from tests.hudi.write.helpers import copy_corpus_table

    root = copy_corpus_table(name, tmp_path)
    meta = root / ".hoodie" / "metadata"
    hudi: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(meta.glob(f"*/*_{instant}.hfile")):
        file_id = path.name.split("_")[0]
        records = _hfile_records(path.read_bytes(), str(path), None)
        hudi[f"{path.parent.name}/{file_id}"] = [_comparable(r.key, r.record) for r in records]
        path.unlink()
    for path in (meta / ".hoodie" / "timeline").iterdir():
        stamp = path.name.partition(".")[0]
        if stamp.startswith(instant):
            path.unlink()  # the compaction itself
        elif "_" in stamp and stamp.split("_")[1] > instant:
            path.unlink()  # completed after the compaction began: still inflight then
    storage = open_storage(str(root))
    mdt = metadata_storage(storage)
    mconfig = metadata_config(mdt)
    assert mconfig is not None
    partitions = sorted({key.split("/")[0] for key in hudi})
    completed, first = valid_data_instants(storage, read_table_config(storage))

    def valid(data_instant: str) -> bool:
        if data_instant.startswith("00000000000000") or data_instant in completed:
            return True
        return first is not None and data_instant < first

    specs = [spec_for(p) for p in partitions]
    compact_metadata(storage, mdt, mconfig, specs, instant, valid)
    ours: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(meta.glob(f"*/*_{instant}.hfile")):
        file_id = path.name.split("_")[0]
        records = _hfile_records(path.read_bytes(), str(path), None)
        ours[f"{path.parent.name}/{file_id}"] = [_comparable(r.key, r.record) for r in records]
    assert sorted(ours) == sorted(hudi)
    for group in sorted(hudi):
        assert ours[group] == hudi[group], group
    assert len(hudi) >= 10 and sum(len(r) for r in hudi.values()) > 50


def _hudi_write_stats(mdt: Any) -> dict[str, dict[str, tuple[int, int]]]:
    """instant -> partition/file id -> (numWrites, numDeletes) of Hudi's delta commits, whose
    every write stat names one log file of the instant itself (prevCommit = the instant)."""
    from lakecore_hudi.timeline.active import load_timeline
    from lakecore_hudi.timeline.commit_metadata import parse_commit_metadata

    mconfig = metadata_config(mdt)
    timeline = load_timeline(mdt, mconfig)
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for instant in timeline.completed():
        if instant.action != "deltacommit" or instant.timestamp.startswith("00000000000000"):
            continue
        path = timeline.path_of(instant)
        meta = parse_commit_metadata(timeline.read_details(mdt, instant), path)
        for stat in meta.write_stats():
            if str(stat.path).endswith(".hfile"):
                continue  # an index initialised at this instant: its base files
            assert stat.prev_commit == instant.timestamp and stat.log_version == 1
            assert stat.log_files == (str(stat.path).rsplit("/", 1)[1],) and not stat.base_file
            key = f"{stat.partition_path}/{stat.file_id}"
            out.setdefault(instant.timestamp, {})[key] = (stat.num_writes, stat.num_deletes)
    return out


def _comparable(key: str, record: Any) -> dict[str, Any]:
    """A decoded record with its file name's write token (Spark task ids) left out."""
    out = {**record, "key": key}
    name = out.get("_hoodie_file_name")
    if name:
        file_id, _token, rest = name.split("_", 2)
        out["_hoodie_file_name"] = f"{file_id}_{rest}"
    files = out.get("filesystemMetadata")
    if isinstance(files, dict):
        out["filesystemMetadata"] = dict(sorted(files.items()))  # a HashMap: order aside
    return out


def test_delta_commits_replay_hudis_log_files(tmp_path: Path) -> None:
    """Every delta commit Hudi wrote to the corpus metadata tables (but initialisations),
    its records fed back through ``plan_log_writes``: lakecore writes a log file to exactly
    the file groups Hudi wrote, holding the same cells (file lists: the same entries) and
    deleting the same keys."""
    from lakecore_hudi.mdt.delta_commit import plan_log_writes
    from lakecore_hudi.mdt.partition_spec import spec_for

    commits = files = 0
    for name in MDT_TABLES:
        storage = open_storage(str(CORPUS / "hudi" / name))
        mdt = metadata_storage(storage)
        version = _version(name)
        hudi: dict[str, dict[str, tuple[list[tuple[bytes, bytes]], list[str]]]] = {}
        records: dict[str, dict[str, list[dict[str, Any]]]] = {}
        for path in _mdt_files(name):
            if path.name.endswith(".hfile") or "_000000000000000" in path.name:
                continue
            instant = path.name.split("_")[1].split(".")[0]
            file_id = path.name.lstrip(".").split("_")[0]
            cells: list[tuple[bytes, bytes]] = []
            gone: list[str] = []
            for block in read_log_blocks(path.read_bytes(), str(path)):
                if block.block_type == BlockType.HFILE_DATA:
                    content = bytes(block.content)
                    cells.extend(read_hfile(content, str(path)))
                    for r in _hfile_records(content, str(path), block.schema):
                        records.setdefault(instant, {}).setdefault(path.parent.name, []).append(
                            {**r.record, "key": r.key}
                        )
                elif block.block_type == BlockType.DELETE:
                    keys = decode_delete_block(block).column("record_key").to_pylist()
                    gone.extend(str(k) for k in keys)
                    for key in keys:
                        records.setdefault(instant, {}).setdefault(path.parent.name, []).append(
                            {"key": key, "type": 0}
                        )
            hudi.setdefault(instant, {})[f"{path.parent.name}/{file_id}"] = (cells, sorted(gone))
        stats = _hudi_write_stats(mdt)
        for instant, by_partition in sorted(records.items()):
            specs = {p: (spec_for(p), items) for p, items in by_partition.items()}
            writes = plan_log_writes(mdt, version, instant, specs)
            ours = {f"{w.partition}/{w.file_id}": w for w in writes}
            assert sorted(ours) == sorted(hudi[instant]), (name, instant)
            # Hudi's write stat of each log file counts what lakecore's does
            counts = {g: (w.writes, w.deletes) for g, w in ours.items()}
            assert counts == stats[instant], (name, instant)
            for group, write in ours.items():
                cells, gone = hudi[instant][group]
                our_cells: list[tuple[bytes, bytes]] = []
                our_gone: list[str] = []
                for block in read_log_blocks(write.content, write.path):
                    if block.block_type == BlockType.HFILE_DATA:
                        our_cells.extend(read_hfile(bytes(block.content), write.path))
                    else:
                        keys = decode_delete_block(block).column("record_key").to_pylist()
                        our_gone.extend(str(k) for k in keys)
                assert sorted(our_gone) == gone, (name, instant, group)
                assert [k for k, _ in our_cells] == [k for k, _ in cells], (name, instant, group)
                if not group.startswith("files/"):  # file lists: HashMap order aside
                    assert our_cells == cells, (name, instant, group)
                files += 1
            commits += 1
    assert (commits, files) == (34, 187)
