"""``files``-partition records: Hudi's records re-encode identically, the reader lists what
is on storage for every corpus metadata table, folding follows Hudi's payload."""

from __future__ import annotations

from lakecore_hudi.log.format import BlockType, read_log_blocks
from lakecore_hudi.mdt import hfile
from lakecore_hudi.mdt.files_partition import read_files_partition
from lakecore_hudi.mdt.files_records import (
    FileListing,
    encode_cells,
    external_file_name,
    fold_listing,
    listing_records,
    schema_json,
)
from lakecore_hudi.mdt.records import decode_records, parse_schema
from lakecore_hudi.table_config import read_table_config

from lakecore.storage import open_storage
from tests.corpus import CORPUS
from tests.hudi.write.helpers import files_on_disk

HUDI = CORPUS / "hudi"


def test_hudi_files_records_reencode_identically() -> None:
    """The records of Hudi 1.0's log blocks (the schema lakecore writes) encode to the same
    cells: keys blanked, map entries in Java HashMap order."""
    checked = 0
    for path in sorted(HUDI.glob("*/.hoodie/metadata/files/.files-*")):
        for block in read_log_blocks(path.read_bytes(), str(path)):
            if block.block_type != BlockType.HFILE_DATA or block.schema != schema_json():
                continue
            cells = hfile.read_hfile(bytes(block.content), str(path))
            records = decode_records(cells, parse_schema(block.schema, str(path)), str(path))
            mine = encode_cells(
                {"key": r.key, "type": r.type, "filesystemMetadata": r.record["filesystemMetadata"]}
                for r in records
            )
            assert mine == cells, path
            checked += 1
    assert checked == 7


def test_reader_lists_the_corpus_tables_files() -> None:
    tables = sorted(p.parents[1] for p in HUDI.glob("*/.hoodie/metadata"))
    for root in tables:
        storage = open_storage(str(root))
        listing = read_files_partition(storage, read_table_config(storage))
        assert listing == files_on_disk(root), root.name
    assert len(tables) == 6


def test_fold_follows_hudis_payload() -> None:
    first = listing_records(FileListing({"a": {"f1": 10, ".log1": 5}, "": {"r1": 1}}))
    second = listing_records(
        FileListing({"a": {".log1": 7}}, deleted={"a": ["f1"]}, deleted_partitions=[""])
    )
    folded = fold_listing(first + second)
    assert folded == {"__all_partitions__": {"a": 0}, "a": {".log1": 7}, ".": {"r1": 1}}


def test_external_file_names() -> None:
    assert external_file_name("part-0.parquet", "20240101000000") == (
        "part-0.parquet_20240101000000_hudiext"
    )
    assert external_file_name("f.parquet", "1", "bucket-0/sub") == (
        "f.parquet_1_fg%3Dbucket-0%2Fsub_hudiext"
    )


def test_hudi_files_base_files_rebuild_byte_for_byte() -> None:
    """Every ``files``-partition base HFile Hudi 1.1 wrote (initialisation and compaction)
    is rebuilt identically from its records: schema, bloom filter meta block, file info."""
    from lakecore_hudi.mdt.table import files_hfile

    rebuilt = 0
    for path in sorted(HUDI.glob("*/.hoodie/metadata/files/*.hfile")):
        data = path.read_bytes()
        if hfile.read_trailer(data, str(path)).minor_version != 0:
            continue  # HBase's writer (Hudi 1.0)
        info = hfile.read_file_info(data, str(path))
        schema = parse_schema(info[b"schema"], str(path))
        records = decode_records(hfile.read_hfile(data, str(path)), schema, str(path))
        created = int.from_bytes(info[b"hfile.CREATE_TIME_TS"], "big")
        mine = files_hfile([{**r.record, "key": r.key} for r in records], 9, created)
        assert mine == data, path
        rebuilt += 1
    assert rebuilt == 6
