"""Partition values from partition paths (planner pruning) and record keys as Hudi renders them."""

from __future__ import annotations

import pyarrow as pa
import pytest
from lakecore_hudi.keys import EMPTY_KEY, NULL_KEY, record_keys
from lakecore_hudi.partitions import (
    DEFAULT_PARTITION,
    partition_struct,
    prunable_partition_columns,
)
from lakecore_hudi.table_config import TableConfig, read_table_config

import lakecore
from lakecore.errors import SchemaError
from lakecore.storage import open_storage
from tests.corpus import CORPUS

HUDI = CORPUS / "hudi"

SCHEMA = pa.schema(
    [
        ("city", pa.string()),
        ("year", pa.int32()),
        ("day", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("tags", pa.list_(pa.string())),
    ]
)


def config(partition_fields: str, **extra: str) -> TableConfig:
    props = {
        "hoodie.table.name": "t",
        "hoodie.table.type": "COPY_ON_WRITE",
        "hoodie.table.version": "6",
        "hoodie.table.partition.fields": partition_fields,
        "hoodie.table.recordkey.fields": "id",
    }
    props.update({k.replace("__", "."): v for k, v in extra.items()})
    return TableConfig.from_properties(props)


TIMESTAMP_KEYGEN = "org.apache.hudi.keygen.TimestampBasedKeyGenerator"
HIVE = {"hoodie__datasource__write__hive_style_partitioning": "true"}
URL = {"hoodie__datasource__write__partitionpath__urlencode": "true"}


# -------------------------------------------------------------------- prunable partition columns


@pytest.mark.parametrize(
    ("fields", "extra", "prunable"),
    [
        ("city", {}, ("city",)),
        ("city,year", {"hoodie__table__keygenerator__type": "COMPLEX"}, ("city", "year")),
        ("day", {}, ("day",)),
        ("", {}, ()),
        ("ts", {}, ()),  # timestamps do not read back from path text
        ("tags", {}, ()),
        ("missing", {}, ()),
        ("city,tags", {}, ()),  # all or nothing
        ("city", {"hoodie__table__keygenerator__type": "TIMESTAMP"}, ()),
        (
            "city",
            {"hoodie__table__keygenerator__class": TIMESTAMP_KEYGEN},
            (),
        ),
        ("city:SIMPLE", {"hoodie__table__keygenerator__type": "CUSTOM"}, ()),
    ],
)
def test_prunable_partition_columns(
    fields: str, extra: dict[str, str], prunable: tuple[str, ...]
) -> None:
    assert prunable_partition_columns(config(fields, **extra), SCHEMA) == prunable


# ------------------------------------------------------------------------- partition values


def values(
    paths: list[str], columns: tuple[str, ...], **extra: str
) -> list[dict[str, object]] | None:
    struct = partition_struct(paths, columns, SCHEMA, config(",".join(columns), **extra))
    return None if struct is None else struct.to_pylist()


def test_plain_and_hive_style_paths() -> None:
    assert values(["chennai", "sao_paulo"], ("city",)) == [
        {"city": "chennai"},
        {"city": "sao_paulo"},
    ]
    assert values(["city=chennai/year=2024"], ("city", "year"), **HIVE) == [
        {"city": "chennai", "year": 2024}
    ]
    struct = partition_struct(["2024/2024-01-05"], ("year", "day"), SCHEMA, config("year,day"))
    assert struct is not None
    assert struct.type == pa.struct([("year", pa.int32()), ("day", pa.date32())])


def test_default_partition_is_null_and_url_encoding_is_undone() -> None:
    assert values([f"city={DEFAULT_PARTITION}"], ("city",), **HIVE) == [{"city": None}]
    assert values(["city=san%20francisco%2FCA"], ("city",), **HIVE, **URL) == [
        {"city": "san francisco/CA"}
    ]
    # without the urlencode property the text is taken as written
    assert values(["city=san%20francisco"], ("city",), **HIVE) == [{"city": "san%20francisco"}]


@pytest.mark.parametrize(
    ("paths", "columns", "hive"),
    [
        (["chennai/2024"], ("city",), False),  # more segments than columns
        (["chennai"], ("city", "year"), False),  # fewer
        ([""], ("city",), False),  # the unpartitioned path
        (["town=chennai"], ("city",), True),  # another column's name
        (["chennai"], ("city",), True),  # not key=value
        (["twenty"], ("year",), False),  # not an int
    ],
)
def test_paths_that_do_not_fit_give_no_values(
    paths: list[str], columns: tuple[str, ...], hive: bool
) -> None:
    assert values(paths, columns, **(HIVE if hive else {})) is None


def test_no_partition_columns_give_no_struct() -> None:
    assert partition_struct(["a"], (), SCHEMA, config("")) is None


def test_corpus_partition_values_match_the_rows() -> None:
    """In every partitioned corpus table whose rows carry ``_hoodie_partition_path``, each
    row's partition columns equal the values the file index derived from its path."""
    checked = rows_checked = 0
    for root in sorted(HUDI.iterdir()):
        snapshot = lakecore.open(str(root)).snapshot()
        files = snapshot.files()
        if "partition" not in files.column_names or "_hoodie_partition_path" not in (
            snapshot.schema.names
        ):
            continue
        by_path = {
            path.rpartition("/")[0]: value
            for path, value in zip(
                files.column("path").to_pylist(),
                files.column("partition").to_pylist(),
                strict=True,
            )
        }
        for row in snapshot.to_arrow().to_pylist():
            expected = by_path[row["_hoodie_partition_path"]]
            assert {k: row[k] for k in expected} == expected, root.name
            rows_checked += 1
        checked += 1
    assert (checked, rows_checked) == (8, 44)


# ------------------------------------------------------------------------------ record keys


def test_the_meta_column_is_the_key_when_it_is_complete() -> None:
    table = pa.table({"_hoodie_record_key": ["k1", "k2"], "id": [1, 2]})
    assert record_keys(table, ("id",)).to_pylist() == ["k1", "k2"]
    partial = pa.table({"_hoodie_record_key": ["k1", None], "id": [1, 2]})
    assert record_keys(partial, ("id",)).to_pylist() == ["1", "2"]


def test_single_field_keys_render_their_value() -> None:
    table = pa.table(
        {
            "i": pa.array([1, None, -3], pa.int64()),
            "s": pa.array(["a", "", None]),
            "b": pa.array([True, False, None]),
        }
    )
    assert record_keys(table, ("i",)).to_pylist() == ["1", NULL_KEY, "-3"]
    assert record_keys(table, ("s",)).to_pylist() == ["a", EMPTY_KEY, NULL_KEY]
    assert record_keys(table, ("b",)).to_pylist() == ["true", "false", NULL_KEY]


def test_composite_keys_render_name_value_pairs() -> None:
    table = pa.table({"id": [1, 2], "name": ["Alice", None]})
    assert record_keys(table, ("id", "name")).to_pylist() == [
        "id:1,name:Alice",
        f"id:2,name:{NULL_KEY}",
    ]
    assert record_keys(table.slice(0, 0), ("id", "name")).to_pylist() == []


def test_keys_need_the_meta_column_or_the_key_fields() -> None:
    table = pa.table({"id": [1]})
    with pytest.raises(SchemaError, match="no record key fields"):
        record_keys(table, ())
    with pytest.raises(SchemaError, match="not columns"):
        record_keys(table, ("id", "other"))


def test_rendered_keys_match_what_hudi_wrote_in_the_corpus() -> None:
    """Tables without meta fields are merged on keys rendered from the key fields; they must
    equal Hudi's own ``_hoodie_record_key`` (checked on the tables that have it)."""
    checked = 0
    for root in sorted(HUDI.iterdir()):
        table = lakecore.open(str(root))
        rows = table.snapshot().to_arrow()
        if rows.num_rows == 0 or "_hoodie_record_key" not in rows.column_names:
            continue
        fields = read_table_config(open_storage(str(root))).record_key_fields
        rendered = record_keys(rows.drop_columns(["_hoodie_record_key"]), fields)
        assert rendered.to_pylist() == rows.column("_hoodie_record_key").to_pylist(), root.name
        checked += 1
    assert checked == 16
