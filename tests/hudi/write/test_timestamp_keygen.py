"""Writing tables with Hudi's timestamp-based key generator (``write/timestamp_keys.py``)."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from lakecore_hudi.java_properties import parse_properties
from lakecore_hudi.table_config import TableConfig
from lakecore_hudi.write import date_patterns as dp
from lakecore_hudi.write import timestamp_keys as tk

import lakecore
from lakecore.errors import ConstraintViolationError, UnsupportedFeatureError
from tests.corpus import CORPUS
from tests.hudi.write.helpers import copy_corpus_table, hudi_rs_table

TABLE = "cow_v6_timebasedkeygen_nonhivestyle"
CORPUS_TABLES = {TABLE: "ts_str", "cow_v9_timebasedkeygen_unixtimestamp": "ts_epoch"}


def _config(**props: str) -> TableConfig:
    base = {
        "hoodie.table.name": "t",
        "hoodie.table.type": "COPY_ON_WRITE",
        "hoodie.table.version": "6",
        "hoodie.table.recordkey.fields": "id",
        "hoodie.table.partition.fields": "p",
        "hoodie.table.keygenerator.class": "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
    }
    return TableConfig.from_properties({**base, **props})


def _paths(values: pa.Array, **props: str) -> list[Any]:
    return tk.partition_paths(pa.chunked_array([values]), "p", _config(**props)).to_pylist()


def _corpus_config(root: Path) -> TableConfig:
    text = (root / ".hoodie" / "hoodie.properties").read_text()
    return TableConfig.from_properties(parse_properties(text))


# --- pattern translation ----------------------------------------------------------------------


def test_patterns_split_into_fields_offsets_and_literals() -> None:
    got = dp.tokens("yyyy-MM-dd'T'HH:mm:ss.SSSZ")
    assert [t.text for t in got] == [
        "yyyy", "-", "MM", "-", "dd", "T", "HH", ":", "mm", ":", "ss", ".", "SSS", "Z",
    ]  # fmt: skip
    assert [t.kind for t in dp.tokens("'it''s' yyyy")] == ["literal", "literal", "y"]
    assert dp.tokens("'it''s'")[0].text == "it's"


@pytest.mark.parametrize("pattern", ["yyyy-MMM", "EEE yyyy", "yy/MM", "hh:mm a", "'open"])
def test_untranslated_patterns_are_refused_by_name(pattern: str) -> None:
    with pytest.raises(UnsupportedFeatureError) as caught:
        dp.tokens(pattern)
    assert repr(pattern) in str(caught.value) or "unterminated" in str(caught.value)


def test_formatting_every_field_and_offset() -> None:
    ms = pa.array([1_705_311_000_123, -1], pa.int64())  # 2024-01-15T09:30:00.123Z, 1969
    pattern = dp.tokens("yyyy/MM/dd HH:mm:ss.SSS Z|ZZ|X|XX|XXX")
    assert dp.format_millis(ms, "UTC", pattern).to_pylist() == [
        "2024/01/15 09:30:00.123 +0000|+00:00|Z|Z|Z",
        "1969/12/31 23:59:59.999 +0000|+00:00|Z|Z|Z",
    ]
    assert dp.format_millis(ms.slice(0, 1), "+05:30", pattern).to_pylist() == [
        "2024/01/15 15:00:00.123 +0530|+05:30|+0530|+0530|+05:30"
    ]
    assert dp.format_millis(ms.slice(0, 1), "America/New_York", pattern).to_pylist() == [
        "2024/01/15 04:30:00.123 -0500|-05:00|-05|-0500|-05:00"
    ]


# --- timestamp types --------------------------------------------------------------------------


def test_unix_timestamp_seconds_with_null_as_hudi_default() -> None:
    values = pa.array([1_705_311_000, None, 0], pa.int64())
    got = _paths(values, **{tk.TYPE_KEY: "UNIX_TIMESTAMP", tk.OUTPUT_FORMAT_KEY: "yyyy/MM/dd"})
    assert got == ["2024/01/15", "1970/01/01", "1970/01/01"]


def test_epoch_millis_micros_and_scalar_units() -> None:
    out = {tk.OUTPUT_FORMAT_KEY: "yyyyMMddHHmmssSSS"}
    millis = pa.array([1_705_311_000_123], pa.int64())
    assert _paths(millis, **out, **{tk.TYPE_KEY: "EPOCHMILLISECONDS"}) == ["20240115093000123"]
    micros = pa.array([1_705_311_000_123_999, -1], pa.int64())  # -1us truncates to 0 ms
    assert _paths(micros, **out, **{tk.TYPE_KEY: "EPOCHMICROSECONDS"}) == [
        "20240115093000123",
        "19700101000000000",
    ]
    hours = pa.array([24, 25], pa.int32())
    scalar = {tk.TYPE_KEY: "SCALAR", "hoodie.keygen.timebased.timestamp.scalar.time.unit": "hours"}
    assert _paths(hours, **out, **scalar) == ["19700102000000000", "19700102010000000"]
    assert _paths(pa.array([1.9, -1.9]), **out, **{tk.TYPE_KEY: "UNIX_TIMESTAMP"}) == [
        "19700101000001000",
        "19691231235959000",
    ]


def test_numbers_format_in_the_output_zone_and_the_common_zone_overrides() -> None:
    values = pa.array([1_705_311_000_000], pa.int64())
    base = {tk.TYPE_KEY: "EPOCHMILLISECONDS", tk.OUTPUT_FORMAT_KEY: "yyyy-MM-dd-HH"}
    zone = "hoodie.keygen.timebased.output.timezone"
    assert _paths(values, **base, **{zone: "Asia/Tokyo"}) == ["2024-01-15-18"]
    both = {zone: "Asia/Tokyo", "hoodie.keygen.timebased.timezone": "GMT-02:00"}
    assert _paths(values, **base, **both) == ["2024-01-15-07"]


def test_date_strings_keep_their_offset_unless_an_output_zone_is_set() -> None:
    values = pa.array(["2024-01-15T23:30:00.000+0200", "2024-01-15T23:30:00.000Z", None] * 2)
    base = {
        tk.TYPE_KEY: "DATE_STRING",
        tk.INPUT_FORMAT_KEY: "yyyy-MM-dd'T'HH:mm:ss.SSSZ",
        tk.OUTPUT_FORMAT_KEY: "yyyy/MM/dd/HH Z",
    }
    assert _paths(values, **base) == ["2024/01/15/23 +0200", "2024/01/15/23 +0000",
                                      "1970/01/01/00 +0000"] * 2  # fmt: skip
    utc = {"hoodie.keygen.timebased.output.timezone": "UTC"}
    assert _paths(values, **base, **utc)[:2] == ["2024/01/15/21 +0000", "2024/01/15/23 +0000"]
    tokyo = {"hoodie.keygen.timebased.input.timezone": "Asia/Tokyo"}  # no output zone
    assert _paths(values, **base, **tokyo)[:2] == ["2024/01/16/06 +0900", "2024/01/16/08 +0900"]


def test_date_strings_try_each_input_format_in_the_input_zone() -> None:
    values = pa.array(["2024-01-15 10", "15.01.2024"])
    props = {
        tk.TYPE_KEY: "MIXED",
        tk.INPUT_FORMAT_KEY: "yyyy-MM-dd HH;dd.MM.yyyy",
        "hoodie.keygen.timebased.input.dateformat.list.delimiter.regex": ";",
        "hoodie.keygen.timebased.input.timezone": "Asia/Tokyo",
        "hoodie.keygen.timebased.output.timezone": "UTC",
        tk.OUTPUT_FORMAT_KEY: "yyyyMMddHH",
    }
    assert _paths(values, **props) == ["2024011501", "2024011415"]
    with pytest.raises(ConstraintViolationError, match="15/01/2024"):
        _paths(pa.array(["15/01/2024"]), **props)


def test_hive_style_prefixes_the_field() -> None:
    props = {
        tk.TYPE_KEY: "UNIX_TIMESTAMP",
        tk.OUTPUT_FORMAT_KEY: "yyyy-MM-dd",
        "hoodie.datasource.write.hive_style_partitioning": "true",
    }
    assert _paths(pa.array([0], pa.int64()), **props) == ["p=1970-01-01"]


def test_settings_lakecore_cannot_apply_are_refused() -> None:
    out = {tk.OUTPUT_FORMAT_KEY: "yyyy"}
    with pytest.raises(UnsupportedFeatureError, match=r"timestamp\.type is not recorded"):
        _paths(pa.array([1], pa.int64()), **out, **{tk.INPUT_FORMAT_KEY: "yyyy"})
    with pytest.raises(UnsupportedFeatureError, match=r"timestamp\.type is not recorded"):
        _paths(pa.array(["2024"]), **out)
    with pytest.raises(UnsupportedFeatureError, match=r"output\.dateformat"):
        _paths(pa.array([1], pa.int64()), **{tk.TYPE_KEY: "UNIX_TIMESTAMP"})
    with pytest.raises(ConstraintViolationError, match="not an integer"):
        _paths(pa.array(["x"]), **out, **{tk.TYPE_KEY: "UNIX_TIMESTAMP"})


# --- corpus tables ----------------------------------------------------------------------------


def test_computed_paths_equal_the_paths_hudi_wrote() -> None:
    checked = 0
    for name, field in CORPUS_TABLES.items():
        root = CORPUS / "hudi" / name
        data = lakecore.open(str(root)).to_arrow()
        got = tk.partition_paths(data.column(field), field, _corpus_config(root))
        assert got.to_pylist() == data.column("_hoodie_partition_path").to_pylist()
        checked += data.num_rows
    assert checked == 10


def _copy(tmp_path: Path) -> Path:
    return copy_corpus_table(TABLE, tmp_path)


def _check_same(root: Path) -> pa.Table:
    """lakecore and hudi-rs read the same rows, one per key, each in its computed partition."""
    ours = lakecore.open(str(root)).to_arrow()
    theirs = hudi_rs_table(root)
    keys = ours.column("_hoodie_record_key").to_pylist()
    assert max(Counter(keys).values()) == 1
    columns = ["_hoodie_record_key", "_hoodie_partition_path", "ts_str", "longField", "name"]
    assert ours.select(columns).sort_by("_hoodie_record_key").to_pylist() == (
        theirs.select(columns).sort_by("_hoodie_record_key").to_pylist()
    )
    want = tk.partition_paths(ours.column("ts_str"), "ts_str", _corpus_config(root))
    assert want.to_pylist() == ours.column("_hoodie_partition_path").to_pylist()
    for path, file in zip(
        ours.column("_hoodie_partition_path").to_pylist(),
        ours.column("_hoodie_file_name").to_pylist(),
        strict=True,
    ):
        assert (root / path / file).is_file()
    return ours


def test_insert_upsert_delete_and_clean_on_a_hudi_written_table(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    table = lakecore.open(str(root))
    data = table.to_arrow()
    data = data.drop_columns([c for c in data.column_names if c.startswith("_hoodie_")])
    first = data.filter(pc.equal(data.column("id"), 1))

    def row(id_: int, ts: str, long_field: int, name: str) -> pa.Table:
        changed = {"id": id_, "ts_str": ts, "longField": long_field, "name": name}
        return pa.Table.from_pylist([{**first.to_pylist()[0], **changed}], schema=data.schema)

    # New keys: one into an existing partition, one into a new partition (another offset).
    table.append(
        pa.concat_tables(
            [
                row(10, "2023-04-01T12:59:00.000Z", 1, "into-existing"),
                row(11, "2023-05-06T01:02:03.004+0530", 2, "new-partition"),
            ]
        )
    )
    ours = _check_same(root)
    paths = {r["id"]: r["_hoodie_partition_path"] for r in ours.to_pylist()}
    assert paths[10] == "2023/04/01/12" and paths[11] == "2023/05/06/01"
    groups_before = {r["id"]: r["_hoodie_file_name"].split("_")[0] for r in ours.to_pylist()}

    # Upsert existing keys (same timestamps, so same partitions): same file groups, no duplicates.
    table.upsert(
        pa.concat_tables(
            [
                row(1, "2023-04-01T12:01:00.123Z", 9_999_999_999, "updated"),
                row(11, "2023-05-06T01:02:03.004+0530", 3, "updated-new"),
            ]
        )
    )
    ours = _check_same(root)
    after = {r["id"]: r for r in ours.to_pylist()}
    assert after[1]["name"] == "updated" and after[11]["name"] == "updated-new"
    for key in (1, 11):
        assert after[key]["_hoodie_file_name"].split("_")[0] == groups_before[key]
    assert ours.num_rows == 6

    table.delete("id = 2")
    ours = _check_same(root)
    assert sorted(ours.column("id").to_pylist()) == [1, 3, 4, 10, 11]

    assert lakecore.open(str(root)).clean(retain_commits=1)
    ours = _check_same(root)
    assert sorted(ours.column("id").to_pylist()) == [1, 3, 4, 10, 11]


def test_unparseable_values_leave_the_table_intact(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    table = lakecore.open(str(root))
    data = table.to_arrow().slice(0, 1)
    data = data.drop_columns([c for c in data.column_names if c.startswith("_hoodie_")])
    bad = data.set_column(
        data.schema.get_field_index("ts_str"), "ts_str", pa.array(["2023/04/01"], pa.string())
    )
    listing = sorted(str(p) for p in root.rglob("*"))
    with pytest.raises(ConstraintViolationError, match="2023/04/01"):
        table.append(bad)
    assert sorted(str(p) for p in root.rglob("*")) == listing


def test_an_unknown_timestamp_type_is_refused_before_any_file_is_written(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    config = root / ".hoodie" / "hoodie.properties"
    lines = config.read_text().splitlines()
    config.write_text("\n".join(x for x in lines if "input.dateformat" not in x) + "\n")
    table = lakecore.open(str(root))
    data = table.to_arrow().slice(0, 1)
    data = data.drop_columns([c for c in data.column_names if c.startswith("_hoodie_")])
    listing = sorted(str(p) for p in root.rglob("*"))
    with pytest.raises(UnsupportedFeatureError, match=r"timestamp\.type is not recorded") as caught:
        table.append(data.set_column(0, "id", pa.array([99], data.schema.field("id").type)))
    assert caught.value.feature == "hudi-keygen-timestamp-type"
    assert sorted(str(p) for p in root.rglob("*")) == listing


def test_a_created_unix_timestamp_table(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("t", pa.int64())])
    root = tmp_path / "t"
    props = {"record_key": "id", "table_version": "6"}
    lakecore.create(str(root), schema, "hudi", ["t"], props)
    config = root / ".hoodie" / "hoodie.properties"
    text = config.read_text().replace("SimpleKeyGenerator", "TimestampBasedKeyGenerator")
    config.write_text(f"{text}{tk.TYPE_KEY}=UNIX_TIMESTAMP\n{tk.OUTPUT_FORMAT_KEY}=yyyy/MM/dd\n")
    table = lakecore.open(str(root))
    # Hudi types a timestamp-keyed partition field as a string (as Spark wrote
    # cow_v9_timebasedkeygen_unixtimestamp): the values are epoch seconds as text.
    assert table.schema.field("t").type == pa.string()
    table.append(pa.table({"id": [1, 2, 3], "t": ["1705311000", "1705400000", None]}))
    table.upsert(pa.table({"id": [2], "t": ["1705400001"]}))
    ours = lakecore.open(str(root)).to_arrow().sort_by("id")
    assert ours.column("_hoodie_partition_path").to_pylist() == [
        "2024/01/15",
        "2024/01/16",
        "1970/01/01",
    ]
    assert ours.column("t").to_pylist() == ["1705311000", "1705400001", None]
    theirs = hudi_rs_table(root).sort_by("id")
    assert theirs.column("t").to_pylist() == ours.column("t").to_pylist()
    assert theirs.column("_hoodie_partition_path").to_pylist() == (
        ours.column("_hoodie_partition_path").to_pylist()
    )


def _custom_table(root: Path, partition_fields: str) -> None:
    schema = pa.schema(
        [pa.field("id", pa.int64(), nullable=False), ("city", pa.string()), ("t", pa.int64())]
    )
    props = {"record_key": "id", "table_version": "8", "hive_style_partitioning": "true"}
    lakecore.create(str(root), schema, "hudi", ["city", "t"], props)
    config = root / ".hoodie" / "hoodie.properties"
    lines = [
        x
        for x in config.read_text().splitlines()
        if not x.startswith(("hoodie.table.keygenerator.", "hoodie.table.partition.fields="))
    ]
    lines += [
        "hoodie.table.keygenerator.type=CUSTOM",
        f"hoodie.table.partition.fields={partition_fields}",
        f"{tk.TYPE_KEY}=UNIX_TIMESTAMP",
        f"{tk.OUTPUT_FORMAT_KEY}=yyyyMMdd",
    ]
    config.write_text("\n".join(lines) + "\n")


def test_a_custom_keygen_table_formats_its_timestamp_fields(tmp_path: Path) -> None:
    root = tmp_path / "c"
    _custom_table(root, "city:simple,t:TIMESTAMP")
    table = lakecore.open(str(root))
    data = {"id": [1, 2, 3], "city": ["x", None, "y"], "t": [1_705_311_000, 0, None]}
    schema = pa.schema([f for f in table.schema if not f.name.startswith("_hoodie_")])
    table.append(pa.table(data, schema))
    table.upsert(pa.table({"id": [1], "city": ["x"], "t": [1_705_311_000]}))
    table.delete("id = 3")
    ours = lakecore.open(str(root)).to_arrow().sort_by("id")
    assert ours.column("_hoodie_partition_path").to_pylist() == [
        "city=x/t=20240115",
        "city=__HIVE_DEFAULT_PARTITION__/t=19700101",
    ]
    assert ours.column("_hoodie_record_key").to_pylist() == ["1", "2"]
    # hudi-rs 0.5.0 refuses `field:TYPE` in hoodie.table.partition.fields (its schema lookup
    # takes the entry as a column name): it reads a copy that lists the bare names.
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    config = copy / ".hoodie" / "hoodie.properties"
    config.write_text(config.read_text().replace("city:simple,t:TIMESTAMP", "city,t"))
    theirs = hudi_rs_table(copy).sort_by("id")
    for column in ("id", "city", "t", "_hoodie_partition_path"):
        assert theirs.column(column).to_pylist() == ours.column(column).to_pylist()


def test_a_custom_keygen_table_without_field_types_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "c"
    _custom_table(root, "city,t")
    table = lakecore.open(str(root))
    listing = sorted(str(p) for p in root.rglob("*"))
    with pytest.raises(UnsupportedFeatureError, match="no SIMPLE or TIMESTAMP type") as caught:
        table.append(pa.table({"id": [1], "city": ["x"], "t": [0]}))
    assert caught.value.feature == "hudi-keygen-custom"
    assert sorted(str(p) for p in root.rglob("*")) == listing
