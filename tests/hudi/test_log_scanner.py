"""Reading log records across files: validity, rollbacks, ordering, log compaction."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pytest
from lakecore_hudi.avro_schema import arrow_to_avro, avro_to_arrow
from lakecore_hudi.log.blocks import encode_avro_data_block, encode_rollback_command_block
from lakecore_hudi.log.delete_blocks import encode_delete_block
from lakecore_hudi.log.format import BlockType, HeaderKey, encode_log_block, read_log_blocks
from lakecore_hudi.log.scanner import SEQ_COLUMN, order_log_blocks, read_log_records
from lakecore_hudi.names import log_file_sort_key, parse_log_file_name

from lakecore.errors import CorruptTableError, UnsupportedFeatureError
from lakecore.storage import open_storage
from tests.corpus import CORPUS

SCHEMA = pa.schema([("key", pa.string()), ("v", pa.int64())])
AVRO = arrow_to_avro(SCHEMA, "t_record", "hoodie.t")


def _data(instant: str, *rows: tuple[str, int]) -> bytes:
    table = pa.Table.from_pylist([{"key": k, "v": v} for k, v in rows], schema=SCHEMA)
    return encode_avro_data_block(table, AVRO, instant)


def _delete(instant: str, *keys: str) -> bytes:
    table = pa.table({"record_key": list(keys), "partition_path": [""] * len(keys)})
    return encode_delete_block(table, instant)


def _all_valid(_: str) -> bool:
    return True


def _in_log_order(paths: list[str]) -> list[str]:
    def key(path: str) -> tuple[str, int, str, bool]:
        log = parse_log_file_name(path)
        assert log is not None, path
        return log_file_sort_key(log)

    return sorted(paths, key=key)


def test_corpus_file_groups() -> None:
    hudi = CORPUS / "hudi"
    if not hudi.exists():
        pytest.fail(f"corpus not found at {CORPUS}; set LAKECORE_CORPUS")
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in hudi.glob("*/**/.*.log.*"):
        if ".hoodie" in path.parts:
            continue
        table = path.relative_to(hudi).parts[0]
        log = parse_log_file_name(path.name)
        assert log is not None
        groups[(table, log.file_id)].append(str(path.relative_to(hudi / table)))
    totals = [0, 0]
    for (table, _), paths in sorted(groups.items()):
        ordered = _in_log_order(paths)
        storage = open_storage(str(hudi / table))
        first = read_log_blocks(storage.read(ordered[0]), ordered[0])[0]
        assert first.schema is not None
        records = read_log_records(storage, ordered, avro_to_arrow(first.schema), _all_valid)
        seqs = (
            records.data.column(SEQ_COLUMN).to_pylist()
            + records.deletes.column(SEQ_COLUMN).to_pylist()
        )
        assert sorted(seqs) == list(range(len(seqs)))
        totals[0] += records.data.num_rows
        totals[1] += records.deletes.num_rows
    assert len(groups) == 10
    assert totals == [14, 6]


def test_corpus_sao_paulo_delete_then_update() -> None:
    root = CORPUS / "hudi" / "mor_avro_v8_trips_8i3u1d"
    storage = open_storage(str(root))
    paths = _in_log_order(
        [str(p.relative_to(root)) for p in (root / "city=sao_paulo").glob(".*.log.*")]
    )
    reader = pa.schema([("uuid", pa.string()), ("fare", pa.float64())])
    records = read_log_records(storage, paths, reader, _all_valid)
    assert records.deletes.select(["record_key", SEQ_COLUMN]).to_pylist() == [
        {"record_key": "e3cf430c-889d-4015-bc98-59bdce1e530c", SEQ_COLUMN: 0}
    ]
    assert records.data.to_pylist() == [
        {"uuid": "7a84095f-737f-40bc-b62f-6b69664712d2", "fare": 0.0, SEQ_COLUMN: 1}
    ]
    as_of = read_log_records(storage, paths, reader, lambda i: i <= "20251220210125441")
    assert as_of.data.num_rows == 0 and as_of.deletes.num_rows == 1
    assert as_of.blocks_read == 2 and as_of.blocks_applied == 1


def test_validity_rollback_and_instant_grouping(tmp_path: Path) -> None:
    storage = open_storage(str(tmp_path))
    storage.put(
        "p/.f-0_001.log.1_0-1-1",
        _data("001", ("a", 1))
        + _data("002", ("a", 2))
        + encode_rollback_command_block("005", "002")
        + _data("001", ("b", 1)),
    )
    storage.put(
        "p/.f-0_001.log.2_0-1-1",
        _delete("003", "a") + _data("009", ("z", 9)) + _data("002", ("c", 2)),
    )
    records = read_log_records(
        storage,
        ["p/.f-0_001.log.1_0-1-1", "p/.f-0_001.log.2_0-1-1"],
        SCHEMA,
        lambda instant: instant != "009",
    )
    # instant 001's blocks stay together; 002's first block was rolled back, its later one counts
    assert records.data.to_pylist() == [
        {"key": "a", "v": 1, SEQ_COLUMN: 0},
        {"key": "b", "v": 1, SEQ_COLUMN: 1},
        {"key": "c", "v": 2, SEQ_COLUMN: 3},
    ]
    assert records.deletes.select(["record_key", SEQ_COLUMN]).to_pylist() == [
        {"record_key": "a", SEQ_COLUMN: 2}
    ]
    assert records.blocks_read == 7 and records.blocks_applied == 4


def test_log_compacted_blocks_replace_what_they_cover() -> None:
    compacted = encode_log_block(
        BlockType.AVRO_DATA,
        {HeaderKey.INSTANT_TIME: "004", HeaderKey.COMPACTED_BLOCK_TIMES: "001,002"},
        b"",
    )
    raw = _data("001", ("a", 1)) + _data("002", ("a", 2)) + _data("003", ("b", 3)) + compacted
    blocks = read_log_blocks(raw, "x")
    ordered = order_log_blocks(blocks, _all_valid)
    assert [b.instant_time for b in ordered] == ["004", "003"]


def test_refuses_blocks_it_cannot_apply(tmp_path: Path) -> None:
    storage = open_storage(str(tmp_path))
    partial = encode_log_block(
        BlockType.AVRO_DATA,
        {HeaderKey.INSTANT_TIME: "001", HeaderKey.IS_PARTIAL: "true"},
        b"",
    )
    storage.put("partial", partial)
    with pytest.raises(UnsupportedFeatureError, match="partial"):
        read_log_records(storage, ["partial"], SCHEMA, _all_valid)
    command = encode_log_block(BlockType.COMMAND, {HeaderKey.COMMAND_BLOCK_TYPE: "0"}, b"")
    storage.put("odd-command", command.replace(b"\x00\x00\x00\x010", b"\x00\x00\x00\x011"))
    with pytest.raises(CorruptTableError, match="unknown command block type"):
        read_log_records(storage, ["odd-command"], SCHEMA, _all_valid)


def test_corrupt_regions(tmp_path: Path) -> None:
    storage = open_storage(str(tmp_path))
    good = _data("001", ("a", 1))
    storage.put("torn", good[:-10] + _data("002", ("b", 2)))
    with pytest.raises(CorruptTableError, match="torn"):
        read_log_records(storage, ["torn"], SCHEMA, _all_valid)
    records = read_log_records(storage, ["torn"], SCHEMA, _all_valid, skip_corrupt=True)
    assert records.data.select(["key"]).to_pylist() == [{"key": "b"}]


def test_no_files_gives_empty_tables(tmp_path: Path) -> None:
    records = read_log_records(open_storage(str(tmp_path)), [], SCHEMA, _all_valid)
    assert records.data.schema.names == ["key", "v", SEQ_COLUMN]
    assert records.deletes.schema.names == [
        "record_key",
        "partition_path",
        "ordering_value",
        SEQ_COLUMN,
    ]
    assert records.data.num_rows == records.deletes.num_rows == 0
