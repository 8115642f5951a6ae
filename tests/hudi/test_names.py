"""Hudi base/log file names: parsing real corpus names, building, ordering."""

from __future__ import annotations

import pytest
from lakecore_hudi.names import (
    BaseFile,
    LogFile,
    base_file_name,
    is_base_file,
    is_log_file,
    log_file_name,
    log_file_sort_key,
    new_file_id,
    parse_base_file_name,
    parse_log_file_name,
    write_token,
)

from tests.corpus import CORPUS


def test_parse_base_file_name() -> None:
    name = "6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0_0-1112-3190_20251220210129235.parquet"
    parsed = parse_base_file_name(name)
    assert parsed == BaseFile(
        "6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0", "0-1112-3190", "20251220210129235", "parquet"
    )
    assert parsed.name == name
    assert parse_base_file_name(f"city=chennai/{name}") == parsed


def test_parse_log_file_name() -> None:
    name = ".8aa68f7e-afd6-4c94-b86c-8a886552e08d-0_20251220210130911.log.1_0-1139-3316"
    parsed = parse_log_file_name(name)
    assert parsed == LogFile(
        "8aa68f7e-afd6-4c94-b86c-8a886552e08d-0", "20251220210130911", "log", 1, "0-1139-3316"
    )
    assert parsed.name == name
    assert parse_log_file_name(f"a/b/{name}") == parsed


def test_metadata_table_and_cdc_log_names() -> None:
    mdt = parse_log_file_name(".files-0000-0_00000000000000000.log.1_0-0-0")
    assert mdt is not None
    assert (mdt.file_id, mdt.instant, mdt.version, mdt.write_token) == (
        "files-0000-0",
        "00000000000000000",
        1,
        "0-0-0",
    )
    cdc = parse_log_file_name(".abc-0_20240101000000000.log.2_1-2-3.cdc")
    assert cdc is not None and cdc.is_cdc and cdc.version == 2
    assert cdc.name == ".abc-0_20240101000000000.log.2_1-2-3.cdc"
    old = parse_log_file_name(".abc-0_20240101000000.log.3")
    assert old is not None and old.write_token is None and old.version == 3


@pytest.mark.parametrize(
    "name",
    [
        ".hoodie_partition_metadata",
        ".hoodie_partition_metadata.parquet",
        "hoodie.properties",
        "_SUCCESS",
        "part-00000.parquet",
        "20240101000000000.deltacommit",
        ".abc_notdigits.log.1_0-1-2",
        "abc_0-1-2_20240101.parquet.crc",
    ],
)
def test_non_hudi_names_return_none(name: str) -> None:
    assert parse_base_file_name(name) is None
    assert parse_log_file_name(name) is None
    assert not is_base_file(name) and not is_log_file(name)


def test_build_names_round_trip() -> None:
    fid = new_file_id()
    assert fid.endswith("-0") and len(fid) == 38
    token = write_token(0, 12, 34)
    assert token == "0-12-34"
    base = base_file_name(fid, token, "20240101000000000", ".parquet")
    assert parse_base_file_name(base) == BaseFile(fid, token, "20240101000000000", "parquet")
    log = log_file_name(fid, "20240101000000000", 2, token)
    assert parse_log_file_name(log) == LogFile(fid, "20240101000000000", "log", 2, token)
    with pytest.raises(ValueError):
        log_file_name(fid, "20240101000000000", 0, token)


def test_log_file_order_is_instant_then_version_then_token() -> None:
    names = [
        ".f-0_002.log.1_0-1-1",
        ".f-0_001.log.10_0-1-1",
        ".f-0_001.log.2_1-1-1",
        ".f-0_001.log.2_0-9-9",
        ".f-0_001.log.2",
        ".f-0_001.log.1_0-1-1.cdc",
        ".f-0_001.log.1_0-1-1",
    ]
    logs = [parse_log_file_name(n) for n in names]
    ordered = sorted((log for log in logs if log is not None), key=log_file_sort_key)
    assert [log.name for log in ordered] == [
        ".f-0_001.log.1_0-1-1",
        ".f-0_001.log.1_0-1-1.cdc",
        ".f-0_001.log.2",
        ".f-0_001.log.2_0-9-9",
        ".f-0_001.log.2_1-1-1",
        ".f-0_001.log.10_0-1-1",
        ".f-0_002.log.1_0-1-1",
    ]


def test_every_corpus_data_file_parses() -> None:
    hudi = CORPUS / "hudi"
    if not hudi.exists():
        pytest.fail(f"corpus not found at {CORPUS}; set LAKECORE_CORPUS")
    bases = logs = 0
    for path in hudi.rglob("*"):
        if not path.is_file() or ".hoodie" in path.relative_to(hudi).parts[1:2]:
            continue
        name = path.name
        if name.startswith(".hoodie_partition_metadata"):
            assert parse_base_file_name(name) is None and parse_log_file_name(name) is None
        elif name.startswith("."):
            log = parse_log_file_name(name)
            assert log is not None, name
            assert log.name == name
            logs += 1
        elif name.endswith((".parquet", ".lance")):
            base = parse_base_file_name(name)
            assert base is not None, name
            assert base.name == name
            bases += 1
    assert logs == 20
    assert bases == 84  # 80 parquet + 4 lance base files
    metadata_logs = [p for p in hudi.glob("*/.hoodie/metadata/*/.*.log.*")]
    assert len(metadata_logs) == 299
    assert all(parse_log_file_name(p.name) is not None for p in metadata_logs)
