"""hoodie.properties: parsing, validation, checksum, rendering, and the corpus tables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lakecore_hudi.java_properties import parse_properties
from lakecore_hudi.table_config import (
    BACKUP_PROPERTIES_PATH,
    PROPERTIES_PATH,
    TableConfig,
    read_table_config,
    table_checksum,
)
from lakecore_hudi.table_config_out import new_table_properties, render_table_config

from lakecore.errors import CorruptTableError, TableNotFoundError, UnsupportedFeatureError
from lakecore.storage import Storage, open_storage
from tests.corpus import CORPUS

HUDI_TABLES = sorted(p.name for p in (CORPUS / "hudi").iterdir()) if CORPUS.exists() else []


def _expected(table: str) -> dict[str, object]:
    loaded: dict[str, object] = json.loads(
        (CORPUS / "expected" / "hudi" / f"{table}.json").read_text()
    )
    return loaded


def _storage(tmp_path: Path, text: str | None = None, backup: str | None = None) -> Storage:
    storage = open_storage(str(tmp_path))
    if text is not None:
        storage.put(PROPERTIES_PATH, text.encode("latin-1"))
    if backup is not None:
        storage.put(BACKUP_PROPERTIES_PATH, backup.encode("latin-1"))
    return storage


def _props_text(**overrides: str) -> str:
    props = {"hoodie.table.name": "t", "hoodie.table.type": "COPY_ON_WRITE"}
    props["hoodie.table.version"] = "6"
    props.update({k.replace("_", "."): v for k, v in overrides.items()})
    return render_table_config(props).decode("ascii")


# ---------------------------------------------------------------- corpus


def test_corpus_tables_parse_to_expected_properties() -> None:
    if not HUDI_TABLES:
        pytest.fail(f"corpus not found at {CORPUS}; set LAKECORE_CORPUS")
    ran = 0
    for table in HUDI_TABLES:
        config = read_table_config(open_storage(str(CORPUS / "hudi" / table)))
        expected = _expected(table)
        raw = {k: v for k, v in config.raw.items() if k != "hoodie.table.create.schema"}
        assert raw == expected["hoodie_properties"], table
        assert config.table_type == expected["table_type"], table
        assert str(config.table_version) == expected["table_version"], table
        assert list(config.partition_fields) == expected["partition_columns"], table
        assert config.source_file == PROPERTIES_PATH
        if config.create_schema is not None:
            assert json.loads(config.create_schema)["type"] == "record"
        ran += 1
    assert ran == 20


def test_corpus_accessors() -> None:
    v6 = read_table_config(open_storage(str(CORPUS / "hudi" / "cow_v6_complexkeygen_hivestyle")))
    assert v6.record_key_fields == ("id", "name")
    assert v6.partition_fields == ("byteField", "shortField")
    assert v6.precombine_field == "longField"
    assert v6.keygen_type == "COMPLEX"
    assert v6.hive_style_partitioning and not v6.url_encode_partitions
    assert v6.timeline_layout_version == 1
    assert (v6.timeline_dir, v6.archive_dir) == (".hoodie", ".hoodie/archived")
    assert v6.populate_meta_fields and v6.base_file_format == "PARQUET"
    v8 = read_table_config(open_storage(str(CORPUS / "hudi" / "mor_avro_v8_trips_8i3u1d")))
    assert v8.table_type == "MERGE_ON_READ" and v8.table_version == 8
    assert (v8.timeline_dir, v8.archive_dir) == (".hoodie/timeline", ".hoodie/timeline/history")
    assert v8.timeline_layout_version == 2 and v8.record_merge_mode == "EVENT_TIME_ORDERING"
    assert "files" in v8.metadata_partitions and v8.metadata_partitions_inflight == ()
    assert v8.log_file_format == "HOODIE_LOG"
    lance = read_table_config(open_storage(str(CORPUS / "hudi" / "mor_avro_v9_lance_nonhivestyle")))
    assert lance.base_file_format == "LANCE" and lance.precombine_field == "event_ts"
    assert not lance.hive_style_partitioning
    nometa = CORPUS / "hudi" / "cow_v8_simplekeygen_hivestyle_no_metafields"
    assert not read_table_config(open_storage(str(nometa))).populate_meta_fields


def test_checksum_matches_hudi() -> None:
    props = {"hoodie.table.name": "v8_trips_8i3u1d", "hoodie.database.name": "default"}
    assert table_checksum(props) == 1197752875
    # without a database Hudi checksums ".<name>"
    assert table_checksum({"hoodie.table.name": "x"}) != table_checksum(
        {"hoodie.table.name": "x", "hoodie.database.name": "default"}
    )


# ---------------------------------------------------------------- Java properties syntax


def test_java_properties_syntax() -> None:
    text = (
        "# comment\n! also a comment\n\n"
        "  a.key = spaced value  \n"
        "colon:value\\:with\\=escapes\n"
        "space\\ key value\n"
        "unicode=caf\\u00e9\n"
        "multi=one,\\\n    two\n"
        "tabs=\\tx\\n\n"
        "empty=\n"
        "bare\n"
        "dup=1\ndup=2\n"
        "backslash=c\\\\\\\\d\n"
    )
    props = parse_properties(text)
    assert props == {
        "a.key": "spaced value  ",
        "colon": "value:with=escapes",
        "space key": "value",
        "unicode": "café",
        "multi": "one,two",
        "tabs": "\tx\n",
        "empty": "",
        "bare": "",
        "dup": "2",
        "backslash": "c\\\\d",
    }


def test_render_round_trips_and_adds_checksum() -> None:
    props = {
        "hoodie.table.name": "tbl",
        "hoodie.table.type": "MERGE_ON_READ",
        "hoodie.table.version": "8",
        "hoodie.table.create.schema": '{"type":"record","name":"r","fields":[]}',
        "odd key": " leading space, #hash, !bang, =eq, \\ and é and 😀",
        "hoodie.table.checksum": "1",
    }
    data = render_table_config(props, comment="written by lakecore")
    data.decode("ascii")  # Java properties are ASCII with \\u escapes
    assert b'{"type"\\:"record"' in data  # ':' escaped the way Hudi writes it
    parsed = parse_properties(data.decode("latin-1"))
    assert parsed["hoodie.table.checksum"] == str(table_checksum(props))
    assert {k: v for k, v in parsed.items() if k != "hoodie.table.checksum"} == {
        k: v for k, v in props.items() if k != "hoodie.table.checksum"
    }


def test_render_requires_name() -> None:
    with pytest.raises(ValueError):
        render_table_config({"hoodie.table.type": "COPY_ON_WRITE"})


# ---------------------------------------------------------------- read_table_config errors


def test_missing_table(tmp_path: Path) -> None:
    with pytest.raises(TableNotFoundError):
        read_table_config(_storage(tmp_path))


def test_backup_used_when_main_missing_or_damaged(tmp_path: Path) -> None:
    config = read_table_config(_storage(tmp_path, backup=_props_text()))
    assert config.table_name == "t" and config.source_file == BACKUP_PROPERTIES_PATH
    damaged = _props_text().replace("hoodie.table.name=t", "hoodie.table.name=u")
    config = read_table_config(_storage(tmp_path, damaged, backup=_props_text()))
    assert config.table_name == "t" and config.source_file == BACKUP_PROPERTIES_PATH


def test_bad_checksum_without_backup_is_corrupt(tmp_path: Path) -> None:
    damaged = _props_text().replace("hoodie.table.name=t", "hoodie.table.name=u")
    with pytest.raises(CorruptTableError, match=r"hoodie\.properties"):
        read_table_config(_storage(tmp_path, damaged))


def test_no_checksum_is_accepted(tmp_path: Path) -> None:
    text = "hoodie.table.name=t\nhoodie.table.type=MERGE_ON_READ\nhoodie.table.version=5\n"
    config = read_table_config(_storage(tmp_path, text))
    assert config.table_version == 5 and config.timeline_layout_version == 1


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("hoodie.table.type=COPY_ON_WRITE\nhoodie.table.version=6\n", "hoodie.table.name"),
        ("hoodie.table.name=t\nhoodie.table.version=6\n", "hoodie.table.type"),
        ("hoodie.table.name=t\nhoodie.table.type=BOTH\nhoodie.table.version=6\n", "BOTH"),
        ("hoodie.table.name=t\nhoodie.table.type=COPY_ON_WRITE\nhoodie.table.version=x\n", "'x'"),
        ("hoodie.table.name=t\nhoodie.table.type=COPY_ON_WRITE\nbad=\\u12\n", "properties"),
    ],
)
def test_malformed_properties_are_corrupt(tmp_path: Path, text: str, needle: str) -> None:
    with pytest.raises(CorruptTableError, match=r"hoodie\.properties") as info:
        read_table_config(_storage(tmp_path, text))
    assert needle in str(info.value)


def test_bad_layout_version_is_corrupt(tmp_path: Path) -> None:
    config = read_table_config(_storage(tmp_path, _props_text(hoodie_timeline_layout_version="z")))
    with pytest.raises(CorruptTableError, match="layout"):
        _ = config.timeline_layout_version


@pytest.mark.parametrize("version", ["4", "7", "10"])
def test_unsupported_versions(tmp_path: Path, version: str) -> None:
    with pytest.raises(UnsupportedFeatureError, match=f"version {version}") as info:
        read_table_config(_storage(tmp_path, _props_text(hoodie_table_version=version)))
    assert info.value.feature == f"hudi-table-version-{version}"


def test_missing_version_is_unsupported(tmp_path: Path) -> None:
    text = "hoodie.table.name=t\nhoodie.table.type=COPY_ON_WRITE\n"
    with pytest.raises(UnsupportedFeatureError):
        read_table_config(_storage(tmp_path, text))


def test_custom_keygen_partition_types_are_stripped() -> None:
    config = TableConfig.from_properties(
        {
            "hoodie.table.name": "t",
            "hoodie.table.type": "COPY_ON_WRITE",
            "hoodie.table.version": "8",
            "hoodie.table.partition.fields": "region:SIMPLE,day:TIMESTAMP",
            "hoodie.table.keygenerator.class": "org.apache.hudi.keygen.CustomAvroKeyGenerator",
        }
    )
    assert config.partition_fields == ("region", "day")
    assert config.partition_fields_with_types == ("region:SIMPLE", "day:TIMESTAMP")
    assert config.keygen_type == "CUSTOM"


# ---------------------------------------------------------------- new tables


def test_new_table_properties_v8_match_hudi_1_0() -> None:
    props = new_table_properties(
        "v8_trips_8i3u1d", "MERGE_ON_READ", ["uuid"], "ts", ["city"],
        hive_style=True, database_name="default",
    )  # fmt: skip
    expected = _expected("mor_avro_v8_trips_8i3u1d")["hoodie_properties"]
    assert isinstance(expected, dict)
    rendered = parse_properties(render_table_config(props).decode("ascii"))
    for key, value in rendered.items():
        assert expected.get(key) == value, key
    config = TableConfig.from_properties(rendered)
    assert config.timeline_dir == ".hoodie/timeline" and config.keygen_type == "SIMPLE"


def test_new_table_properties_v6_match_hudi_0_15() -> None:
    props = new_table_properties(
        "v6_nonpartitioned", "COPY_ON_WRITE", ["id"], "longField", [],
        table_version=6, hive_style=True, database_name="default",
    )  # fmt: skip
    expected = _expected("cow_v6_nonpartitioned")["hoodie_properties"]
    assert isinstance(expected, dict)
    rendered = parse_properties(render_table_config(props).decode("ascii"))
    assert rendered == expected


def test_new_table_properties_options() -> None:
    props = new_table_properties(
        "t", "COPY_ON_WRITE", ["a", "b"], None, ["p"], base_file_format="lance",
        create_schema_json='{"type":"record"}', populate_meta_fields=False,
    )  # fmt: skip
    config = TableConfig.from_properties(props)
    assert config.keygen_type == "COMPLEX" and config.base_file_format == "LANCE"
    assert not config.populate_meta_fields and config.record_merge_mode == "COMMIT_TIME_ORDERING"
    assert config.create_schema == '{"type":"record"}'
    with pytest.raises(ValueError):
        new_table_properties("t", "COPY_ON_WRITE", ["a"], None, [], table_version=7)
