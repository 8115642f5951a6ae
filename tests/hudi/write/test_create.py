"""Creating Hudi tables: hoodie.properties for table versions 8 and 6, and the errors."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from lakecore_hudi.table_config import read_table_config

import lakecore
from lakecore.errors import SchemaError, TableExistsError
from lakecore.storage import open_storage
from tests.hudi.write.helpers import SCHEMA, create, hudi_rs

WITH_META = pa.schema([("id", pa.int64()), ("_hoodie_record_key", pa.string())])
WITH_STRUCT = pa.schema([("id", pa.int64()), ("s", pa.struct([("a", pa.int32())]))])


def _config(root: Path) -> dict[str, str]:
    return dict(read_table_config(open_storage(str(root))).raw)


def test_version_8_table(tmp_path: Path) -> None:
    root = tmp_path / "events"
    table = create(root, "MERGE_ON_READ")
    props = _config(root)
    assert props["hoodie.table.version"] == "8"
    assert props["hoodie.timeline.layout.version"] == "2"
    assert props["hoodie.table.type"] == "MERGE_ON_READ"
    assert props["hoodie.table.recordkey.fields"] == "id"
    assert props["hoodie.table.precombine.field"] == "ts"
    assert props["hoodie.table.partition.fields"] == "city"
    assert props["hoodie.table.keygenerator.type"] == "SIMPLE"
    assert props["hoodie.record.merge.mode"] == "EVENT_TIME_ORDERING"
    assert props["hoodie.datasource.write.hive_style_partitioning"] == "true"
    assert props["hoodie.table.name"] == "events"
    assert "hoodie.table.metadata.partitions" not in props
    schema = json.loads(props["hoodie.table.create.schema"])
    assert [f["name"] for f in schema["fields"]] == SCHEMA.names
    assert schema["name"] == "events_record" and schema["namespace"] == "hoodie.events"
    assert sorted(p.name for p in (root / ".hoodie").iterdir()) == ["hoodie.properties"]
    assert table.format == "hudi"
    assert lakecore.open(str(root)).to_arrow().num_rows == 0
    rs = hudi_rs().HudiTableBuilder.from_base_uri(str(root)).build()
    assert rs.get_schema().names == SCHEMA.names
    assert rs.read() == []


def test_version_6_table(tmp_path: Path) -> None:
    root = tmp_path / "t"
    create(root, version="6", partitioned=False)
    props = _config(root)
    assert props["hoodie.table.version"] == "6"
    assert props["hoodie.timeline.layout.version"] == "1"
    assert props["hoodie.table.keygenerator.class"].endswith("NonpartitionedKeyGenerator")


def test_several_key_fields_use_the_complex_keygen(tmp_path: Path) -> None:
    create(tmp_path / "t", record_key="id,name")
    assert _config(tmp_path / "t")["hoodie.table.keygenerator.type"] == "COMPLEX"


def test_existing_table(tmp_path: Path) -> None:
    create(tmp_path / "t")
    with pytest.raises(TableExistsError):
        create(tmp_path / "t")
    with pytest.raises(TableExistsError):
        lakecore.create(str(tmp_path / "t"), SCHEMA, "delta")


@pytest.mark.parametrize(
    ("schema", "properties", "partition_by"),
    [
        (SCHEMA, {"record_key": "missing"}, []),
        (SCHEMA, {"record_key": "id", "precombine_field": "missing"}, []),
        (SCHEMA, {"record_key": "id"}, ["missing"]),
        (WITH_META, {"record_key": "id"}, []),
        (pa.schema([("id", pa.uint64())]), {"record_key": "id"}, []),
        (WITH_STRUCT, {"record_key": "id"}, ["s"]),
    ],
    ids=["record-key", "precombine", "partition", "meta-field", "uint64", "nested-partition"],
)
def test_schema_errors(
    tmp_path: Path, schema: pa.Schema, properties: dict[str, str], partition_by: list[str]
) -> None:
    with pytest.raises(SchemaError):
        lakecore.create(str(tmp_path / "t"), schema, "hudi", partition_by, properties)
    assert not (tmp_path / "t" / ".hoodie" / "hoodie.properties").exists()


@pytest.mark.parametrize(
    "properties",
    [
        {"record_key": "id", "table_type": "BOTH"},
        {"record_key": "id", "table_version": "7"},
        {"record_key": "id", "hive_style_partitioning": "maybe"},
        {"record_key": "id", "colour": "blue"},
    ],
    # No record_key makes a keyless table (tests/hudi/test_keyless.py), no longer an error.
    ids=["table-type", "version", "hive-style", "unknown-option"],
)
def test_option_errors(tmp_path: Path, properties: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        lakecore.create(str(tmp_path / "t"), SCHEMA, "hudi", [], properties)
    assert not (tmp_path / "t" / ".hoodie" / "hoodie.properties").exists()
