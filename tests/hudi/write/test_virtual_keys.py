"""Writing Hudi tables without meta fields (``hoodie.populate.meta.fields=false``: virtual keys).

Such tables store no ``_hoodie_*`` columns; every reader derives record keys and partition
paths from the key and partition fields. After each lakecore write hudi-rs must read exactly
lakecore's rows, lakecore's rows must equal a model, and the files lakecore wrote must hold
the meta columns null but the file name, and no bloom filter, as the corpus tables' files
(written by Hudi 0.14 and 1.0 Spark) do.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lakecore_hudi.bloom import FILTER_KEY, MAX_KEY
from lakecore_hudi.keys import FILE_NAME, META_FIELDS
from lakecore_hudi.log.blocks import decode_data_block
from lakecore_hudi.log.format import BlockType, read_log_blocks
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.table_config_out import new_table_properties
from lakecore_hudi.write.layout import ensure_writable

import lakecore
from lakecore.errors import UnsupportedFeatureError
from tests.hudi.write.helpers import (
    copy_corpus_table,
    create,
    expected_rows,
    hudi_rs_rows,
    lakecore_rows,
    rows,
)

Row = dict[str, Any]
CORPUS_TABLES = [
    "cow_v6_simplekeygen_hivestyle_no_metafields",
    "cow_v8_simplekeygen_hivestyle_no_metafields",
]


def _key(row: Row) -> str:
    return json.dumps(row, sort_keys=True, default=str)


def _check(root: Path, model: dict[int, Row], before: set[Path]) -> set[Path]:
    """Both readers see the model's rows; new parquet files hold no meta values (but the
    file name) and no bloom filter. Returns the table's parquet files now."""
    want = sorted(model.values(), key=_key)
    assert sorted(_data(lakecore.open(str(root)).to_arrow()), key=_key) == want
    assert hudi_rs_rows(root) == lakecore_rows(root)
    files = {p for p in root.rglob("*.parquet") if ".hoodie" not in p.parts}
    for path in files - before:
        # As Hudi's Spark writer leaves them: meta columns null but the file name.
        stored = pq.read_table(path, columns=list(META_FIELDS))
        assert stored.column(FILE_NAME).to_pylist() == [path.name] * stored.num_rows
        for name in META_FIELDS[:-1]:
            assert stored.column(name).null_count == stored.num_rows, (path, name)
        footer = pq.read_metadata(path).metadata or {}
        assert FILTER_KEY.encode() not in footer and MAX_KEY.encode() not in footer, path
    return files


def _data(table: pa.Table) -> list[Row]:
    assert not [c for c in table.column_names if c.startswith("_hoodie_")]
    return table.to_pylist()


@pytest.mark.parametrize("name", CORPUS_TABLES)
def test_corpus_table_without_meta_fields_accepts_writes(tmp_path: Path, name: str) -> None:
    root = copy_corpus_table(name, tmp_path)
    table = lakecore.open(str(root))
    existing = table.to_arrow()
    model = {r["id"]: r for r in _data(existing)}
    assert sorted(model) == [1, 2, 3, 4]
    files = _check(root, model, set(root.rglob("*.parquet")))
    template = model[3]

    # insert: a new key into an existing and a new partition
    added = [{**template, "id": 10, "name": "Ten"}, {**template, "id": 11, "byteField": 40}]
    table.append(pa.Table.from_pylist(added, schema=existing.schema))
    model.update({r["id"]: r for r in added})
    files = _check(root, model, files)

    # upsert: an existing key (winning on the ordering field) and a new one
    newer = {**model[1], "name": "Alice2", "longField": model[1]["longField"] + 1}
    new = {**template, "id": 12, "name": "Twelve", "byteField": 20}
    table.upsert(pa.Table.from_pylist([newer, new], schema=existing.schema))
    model.update({1: newer, 12: new})
    files = _check(root, model, files)

    # an upsert losing on the ordering field changes nothing
    stale = {**model[1], "name": "stale", "longField": model[1]["longField"] - 10}
    table.upsert(pa.Table.from_pylist([stale], schema=existing.schema))
    files = _check(root, model, files)

    table.delete("id = 2 OR id = 11")
    del model[2], model[11]
    files = _check(root, model, files)

    table.update({"name": "'Carol2'"}, where="id = 3")
    model[3] = {**model[3], "name": "Carol2"}
    files = _check(root, model, files)

    assert table.clean(retain_commits=1)
    _check(root, model, files)


@pytest.mark.parametrize(
    ("table_type", "version", "metadata"),
    [
        ("COPY_ON_WRITE", "8", "false"),
        ("MERGE_ON_READ", "8", "true"),
        ("MERGE_ON_READ", "6", "false"),
        ("COPY_ON_WRITE", "9", "true"),
    ],
)
def test_created_table_without_meta_fields(
    tmp_path: Path, table_type: str, version: str, metadata: str
) -> None:
    root = tmp_path / "t"
    table = create(
        root, table_type, version, populate_meta_fields="false", metadata_enable=metadata
    )
    properties = (root / ".hoodie" / "hoodie.properties").read_text()
    assert "hoodie.populate.meta.fields=false" in properties
    model: dict[int, Row] = {}
    files = _check(root, model, set())

    first = rows((1, "a", 1, "x"), (2, "b", 1, "x"), (3, "c", 1, "y"))
    table.append(first)
    model.update({r["id"]: r for r in first.to_pylist()})
    files = _check(root, model, files)

    # existing keys (one moving to another partition, one with a lower ts: it loses under
    # event-time ordering, wins under the commit-time ordering of version 6 MoR tables)
    config = TableConfig.from_properties(table.snapshot().properties)
    event_time = config.record_merge_mode == "EVENT_TIME_ORDERING"
    assert event_time == (version != "6" or table_type == "COPY_ON_WRITE")
    changed = rows(
        (1, "a2", 2, "x"), (2, "b-moved", 2, "y"), (3, "stale", 0, "y"), (4, "d", 1, "z")
    )
    table.upsert(changed)
    for r in changed.to_pylist():
        if r["id"] != 3 or not event_time:
            model[r["id"]] = r
    files = _check(root, model, files)

    table.delete("id = 3")
    del model[3]
    files = _check(root, model, files)
    assert expected_rows(model) == lakecore_rows(root)

    if table_type == "MERGE_ON_READ":
        _check_log_blocks(root)
        assert table.compact() is not None
        files = _check(root, model, files)
        assert table.compact() is None
    assert table.clean(retain_commits=1)
    _check(root, model, files)


def test_virtual_keys_need_a_record_key(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="record_key"):
        lakecore.create(
            str(tmp_path / "t"),
            pa.schema([("a", pa.int64())]),
            "hudi",
            [],
            {"populate_meta_fields": "false"},
        )
    assert not (tmp_path / "t" / ".hoodie" / "hoodie.properties").exists()
    props = new_table_properties("t", "COPY_ON_WRITE", (), None, (), populate_meta_fields=False)
    with pytest.raises(UnsupportedFeatureError) as caught:
        ensure_writable(TableConfig.from_properties(props))
    assert caught.value.feature == "hudi-virtual-keys"
    keyed = new_table_properties("t", "COPY_ON_WRITE", ("a",), None, (), populate_meta_fields=False)
    ensure_writable(TableConfig.from_properties(keyed))  # keyed: writable


def _check_log_blocks(root: Path) -> None:
    """The changes went to log files whose data blocks leave every meta field null (as
    Hudi's append handle does without meta fields) and whose delete blocks name keys."""
    logs = [p for p in root.rglob(".*.log.*") if ".hoodie" not in p.parts]
    kinds: dict[BlockType, int] = {}
    for path in logs:
        data = path.read_bytes()
        for block in read_log_blocks(data, str(path)):
            kinds[block.block_type] = kinds.get(block.block_type, 0) + 1
            if block.block_type == BlockType.AVRO_DATA:
                records = decode_data_block(block)
                assert records.num_rows
                for name in META_FIELDS:
                    assert records.column(name).null_count == records.num_rows, (path, name)
    assert kinds.get(BlockType.AVRO_DATA) and kinds.get(BlockType.DELETE), kinds
