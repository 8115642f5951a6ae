"""Bad user input gets a typed error and leaves the table as it was (issue 9, item 11).

Covered here: values that an append would have to change to store (``'42'`` into a number,
``True`` into an integer, an integer that overflows), UPDATE assignments of the wrong type or
out of range, table property values Delta refuses, and timestamps that are not timestamps
(time travel and predicates). Each refusal is checked to leave every file of the table as it
was; each accepted lossless conversion is read back value for value. Delta and Hudi appends
follow the same rule (``lakecore.model.data_input.is_lossless_cast``).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lakecore

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("n", pa.int32()),
        ("big", pa.int64()),
        ("name", pa.string()),
        ("f", pa.float32()),
        ("x", pa.float64()),
        ("flag", pa.bool_()),
        ("day", pa.date32()),
        ("ts", pa.timestamp("us", "UTC")),
        ("price", pa.decimal128(9, 2)),
    ]
)
FORMATS = ("delta", "hudi")


def complete(data: Any, schema: pa.Schema = SCHEMA) -> pa.Table:
    """``data`` (a table or a dict of columns) with the schema's other columns as nulls:
    appends must carry every column (as deltalake asks)."""
    table = data if isinstance(data, pa.Table) else pa.table(dict(data))
    for f in schema:
        if f.name not in table.column_names:
            table = table.append_column(f.name, pa.nulls(table.num_rows, f.type))
    return table


def make_table(root: Path, fmt: str, schema: pa.Schema = SCHEMA, **props: str) -> lakecore.Table:
    properties = dict(props)
    if fmt == "hudi":
        properties.update(record_key="id", table_type="COPY_ON_WRITE")
    table = lakecore.create(str(root), schema, fmt, [], properties)
    table.append(complete({"id": [1, 2], "n": pa.array([10, 20], pa.int32())}, schema))
    return table


def files_of(root: Path) -> dict[str, int]:
    """Every file under the table root with its size: a refused write must change none."""
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*") if p.is_file()}


def user_rows(table: lakecore.Table) -> list[dict[str, Any]]:
    data = lakecore.open(table.uri).to_arrow()
    data = data.select([c for c in data.column_names if not c.startswith("_hoodie")])
    return sorted(data.to_pylist(), key=lambda r: r["id"])


def assert_refused(table: lakecore.Table, error: type[Exception], action: Any) -> None:
    """``action()`` raises ``error`` and the table's files and rows stay as they were."""
    root = Path(table.uri)
    before = (files_of(root), user_rows(table))
    with pytest.raises(error):
        action()
    assert (files_of(root), user_rows(table)) == before


# ----------------------------------------------------------------------------- appends

LOSSY: list[tuple[str, str, pa.Array]] = [
    ("text into int", "n", pa.array(["42"])),
    ("text into bigint", "id", pa.array(["42"])),
    ("bool into int", "n", pa.array([True])),
    ("int into bool", "flag", pa.array([1])),
    ("int into text", "name", pa.array([42])),
    ("double into float", "f", pa.array([1.5])),
    ("double into int", "n", pa.array([1.0])),
    ("text into date", "day", pa.array(["2024-01-01"])),
    ("text into timestamp", "ts", pa.array(["2024-01-01T00:00:00"])),
    ("date into timestamp", "ts", pa.array([dt.date(2024, 1, 1)])),
    ("int overflows int32", "n", pa.array([2**31])),
    ("uint64 overflows bigint", "id", pa.array([2**64 - 1], pa.uint64())),
    ("bigint overflows decimal(9,2)", "price", pa.array([10**7], pa.int64())),
    ("double into decimal", "price", pa.array([1.25])),
    ("decimal loses scale", "price", pa.array([Decimal("1.234")], pa.decimal128(9, 3))),
    ("decimal overflows precision", "price", pa.array([Decimal("12345678.9")])),
    ("ns timestamp loses digits", "ts", pa.array([1_000_000_001], pa.timestamp("ns", "UTC"))),
    ("int beyond double's exact range", "x", pa.array([2**53 + 1])),
    ("dictionary of text into int", "n", pa.array(["1"]).dictionary_encode()),
]

LOSSLESS: list[tuple[str, str, pa.Array, Any]] = [
    ("int8 widens to int32", "n", pa.array([7], pa.int8()), 7),
    ("int32 widens to bigint", "id", pa.array([7], pa.int32()), 7),
    ("bigint that fits int32", "n", pa.array([-(2**31)]), -(2**31)),
    ("float widens to double", "x", pa.array([1.5], pa.float32()), 1.5),
    ("int exact in double", "x", pa.array([2**53]), float(2**53)),
    ("int16 into decimal(9,2)", "price", pa.array([123], pa.int16()), Decimal("123.00")),
    ("bigint that fits decimal(9,2)", "price", pa.array([1], pa.int64()), Decimal("1.00")),
    (
        "decimal gains scale",
        "price",
        pa.array([Decimal("1.5")], pa.decimal128(3, 1)),
        Decimal("1.50"),
    ),
    ("large_string to string", "name", pa.array(["a"], pa.large_string()), "a"),
    ("dictionary of text", "name", pa.array(["a"]).dictionary_encode(), "a"),
    ("null type", "name", pa.nulls(1), None),
    (
        "ns timestamp without sub-us digits",
        "ts",
        pa.array([1_000_000_000], pa.timestamp("ns", "UTC")),
        dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=dt.timezone.utc),
    ),
    (
        "second timestamp",
        "ts",
        pa.array([60], pa.timestamp("s", "UTC")),
        dt.datetime(1970, 1, 1, 0, 1, tzinfo=dt.timezone.utc),
    ),
    ("date64 of whole days", "day", pa.array([86_400_000], pa.date64()), dt.date(1970, 1, 2)),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("column,values", [c[1:] for c in LOSSY], ids=[c[0] for c in LOSSY])
def test_append_refuses_a_cast_that_changes_values(
    tmp_path: Path, fmt: str, column: str, values: pa.Array
) -> None:
    table = make_table(tmp_path / "t", fmt)
    data = {"id": pa.array([3]), column: values} if column != "id" else {"id": values}
    assert_refused(table, lakecore.SchemaError, lambda: table.append(complete(data)))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(
    "column,values,expected", [c[1:] for c in LOSSLESS], ids=[c[0] for c in LOSSLESS]
)
def test_append_takes_a_lossless_cast(
    tmp_path: Path, fmt: str, column: str, values: pa.Array, expected: Any
) -> None:
    table = make_table(tmp_path / "t", fmt)
    data = {"id": pa.array([3]), column: values} if column != "id" else {"id": values}
    table.append(complete(data))
    row = next(r for r in user_rows(table) if r["id"] == (expected if column == "id" else 3))
    assert row[column] == expected


WRITES = [("delta", "overwrite"), ("hudi", "overwrite"), ("hudi", "upsert")]


@pytest.mark.parametrize("fmt,verb", WRITES, ids=[f"{f}-{v}" for f, v in WRITES])
@pytest.mark.parametrize("values", [pa.array(["42"]), pa.array([True])], ids=["text", "bool"])
def test_every_write_verb_refuses_a_value_changing_cast(
    tmp_path: Path, fmt: str, verb: str, values: pa.Array
) -> None:
    table = make_table(tmp_path / "t", fmt)
    data = complete({"id": [1], "n": values})
    assert_refused(table, lakecore.SchemaError, lambda: getattr(table, verb)(data))


NESTED = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("s", pa.struct([("a", pa.int64()), ("b", pa.string())])),
        ("tags", pa.list_(pa.int64())),
        ("attrs", pa.map_(pa.string(), pa.int64())),
    ]
)
NESTED_LOSSY: list[tuple[str, pa.Table]] = [
    (
        "struct field the table lacks",
        pa.table({"id": [3], "s": pa.array([{"a": 1, "b": "x", "c": 2}])}),
    ),
    ("text in a struct field", pa.table({"id": [3], "s": pa.array([{"a": "1"}])})),
    ("text list elements", pa.table({"id": [3], "tags": pa.array([["1"]])})),
    (
        "bool map values",
        pa.table({"id": [3], "attrs": pa.array([[("k", True)]], pa.map_(pa.string(), pa.bool_()))}),
    ),
]


@pytest.mark.parametrize("data", [c[1] for c in NESTED_LOSSY], ids=[c[0] for c in NESTED_LOSSY])
def test_delta_append_refuses_lossy_nested_casts(tmp_path: Path, data: pa.Table) -> None:
    table = lakecore.create(str(tmp_path / "t"), NESTED)
    table.append(complete({"id": [1]}, NESTED))
    assert_refused(table, lakecore.SchemaError, lambda: table.append(complete(data, NESTED)))


def test_delta_append_takes_lossless_nested_casts(tmp_path: Path) -> None:
    table = lakecore.create(str(tmp_path / "t"), NESTED)
    data = pa.table(
        {
            "id": [3],
            "s": pa.array([{"b": "x", "a": 1}], pa.struct([("b", pa.string()), ("a", pa.int8())])),
            "tags": pa.array([[1, 2]], pa.large_list(pa.int32())),
            "attrs": pa.array([[("k", 5)]], pa.map_(pa.string(), pa.int16())),
        }
    )
    table.append(data)
    assert user_rows(table) == [
        {"id": 3, "s": {"a": 1, "b": "x"}, "tags": [1, 2], "attrs": [("k", 5)]}
    ]


BAD_MERGES: list[tuple[str, pa.Table, dict[str, str] | None]] = [
    ("source text into int", pa.table({"id": [1, 9], "n": ["42", "43"]}), None),
    ("source bool into int", pa.table({"id": [1, 9], "n": [True, False]}), None),
    ("SET text into int", pa.table({"id": [1], "n": pa.array([5], pa.int32())}), {"n": "'abc'"}),
    ("SET unknown column", pa.table({"id": [1], "n": pa.array([5], pa.int32())}), {"nope": "1"}),
    (
        "SET result overflows int",
        pa.table({"id": [1], "n": pa.array([5], pa.int32())}),
        {"n": "source.n * 1000000000"},
    ),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(
    "source,assignments", [c[1:] for c in BAD_MERGES], ids=[c[0] for c in BAD_MERGES]
)
def test_merge_refuses_values_of_the_wrong_type(
    tmp_path: Path, fmt: str, source: pa.Table, assignments: dict[str, str] | None
) -> None:
    table = make_table(tmp_path / "t", fmt)

    def merge() -> None:
        builder = table.merge(source, on="id")
        if assignments is None:
            builder = builder.when_matched_update_all()
        else:
            builder = builder.when_matched_update(assignments)
        builder.when_not_matched_insert_all().execute()

    assert_refused(table, lakecore.SchemaError, merge)


# ----------------------------------------------------------------------------- updates

BAD_UPDATES: list[tuple[str, dict[str, str], type[Exception]]] = [
    ("text literal into int", {"n": "'abc'"}, lakecore.SchemaError),
    ("numeric text into int", {"n": "'42'"}, lakecore.SchemaError),
    ("bool into int", {"n": "true"}, lakecore.SchemaError),
    ("int into bool", {"flag": "1"}, lakecore.SchemaError),
    ("text into date", {"day": "'2024-01-01'"}, lakecore.SchemaError),
    ("text into timestamp", {"ts": "'garbage'"}, lakecore.SchemaError),
    ("literal overflows int", {"n": "3000000000"}, lakecore.SchemaError),
    ("result overflows int", {"n": "n * 1000000000"}, lakecore.SchemaError),
    ("literal beyond bigint", {"big": "9223372036854775808"}, lakecore.SchemaError),
    ("literal beyond 38 digits", {"x": "1" * 40}, lakecore.PredicateError),
    ("bigint arithmetic overflows", {"x": "id * 9223372036854775807"}, lakecore.PredicateError),
    ("garbage timestamp literal", {"ts": "TIMESTAMP 'garbage'"}, lakecore.PredicateError),
    ("garbage date literal", {"day": "DATE '2024-13-45'"}, lakecore.PredicateError),
    ("SQL that does not parse", {"n": "n +"}, lakecore.PredicateError),
    ("unknown function", {"n": "nosuchfunction(n)"}, lakecore.PredicateError),
    ("unknown column", {"nope": "1"}, lakecore.SchemaError),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(
    "assignments,error", [c[1:] for c in BAD_UPDATES], ids=[c[0] for c in BAD_UPDATES]
)
def test_update_refuses_values_of_the_wrong_type(
    tmp_path: Path, fmt: str, assignments: dict[str, str], error: type[Exception]
) -> None:
    table = make_table(tmp_path / "t", fmt)
    assert_refused(table, error, lambda: table.update(assignments))


GOOD_UPDATES: list[tuple[str, dict[str, str], str, Any]] = [
    ("bigint result that fits int", {"n": "n + 1"}, "n", 11),
    ("int into double", {"x": "n"}, "x", 10.0),
    ("number into text (SQL store assignment)", {"name": "n"}, "name", "10"),
    ("decimal literal into decimal column", {"price": "1.5"}, "price", Decimal("1.50")),
    ("double into float", {"f": "0.5e0"}, "f", 0.5),
    (
        "timestamp literal",
        {"ts": "TIMESTAMP '2024-01-01 00:00:00'"},
        "ts",
        dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc),
    ),
    ("null", {"name": "NULL"}, "name", None),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(
    "assignments,column,expected", [c[1:] for c in GOOD_UPDATES], ids=[c[0] for c in GOOD_UPDATES]
)
def test_update_takes_values_sql_can_assign(
    tmp_path: Path, fmt: str, assignments: dict[str, str], column: str, expected: Any
) -> None:
    table = make_table(tmp_path / "t", fmt)
    table.update(assignments, where="id = 1")
    assert user_rows(table)[0][column] == expected


# ----------------------------------------------------------------------------- properties

BAD_PROPERTIES: list[tuple[str, str]] = [
    ("delta.checkpointInterval", "abc"),
    ("delta.checkpointInterval", "-1"),
    ("delta.checkpointInterval", "1.5"),
    ("delta.checkpointInterval", " 10"),
    ("delta.logRetentionDuration", "garbage"),
    ("delta.logRetentionDuration", "interval 1 month"),
    ("delta.logRetentionDuration", "-1 days"),
    ("delta.logRetentionDuration", "30"),
    ("delta.deletedFileRetentionDuration", "1 fortnight"),
    ("delta.checkpointRetentionDuration", "interval"),
    ("delta.enableChangeDataFeed", "maybe"),
    ("delta.enableDeletionVectors", "1"),
    ("delta.appendOnly", "yes"),
    ("delta.checkpoint.writeStatsAsJson", "no"),
    ("delta.checkpoint.writeStatsAsStruct", ""),
    ("delta.columnMapping.mode", "bogus"),
    ("delta.isolationLevel", "ReadCommitted"),
    ("delta.dataSkippingNumIndexedCols", "-2"),
    ("delta.minWriterVersion", "8"),
    ("delta.targetFileSize", "big"),
    ("delta.feature.deletionVectors", "on"),
]


@pytest.mark.parametrize("key,value", BAD_PROPERTIES, ids=[f"{k}={v!r}" for k, v in BAD_PROPERTIES])
def test_create_refuses_an_invalid_property_value(tmp_path: Path, key: str, value: str) -> None:
    root = tmp_path / "t"
    with pytest.raises(lakecore.InvalidArgumentError, match=key.replace(".", r"\.")):
        lakecore.create(str(root), SCHEMA, properties={key: value})
    assert not root.exists() or files_of(root) == {}
    lakecore.create(str(root), SCHEMA)  # nothing was left behind to be in the way


@pytest.mark.parametrize("key,value", BAD_PROPERTIES, ids=[f"{k}={v!r}" for k, v in BAD_PROPERTIES])
def test_set_properties_refuses_an_invalid_value(tmp_path: Path, key: str, value: str) -> None:
    table = make_table(tmp_path / "t", "delta")
    version = table.version
    assert_refused(
        table,
        lakecore.InvalidArgumentError,
        lambda: table.set_properties({"lakecore.fine": "1", key: value}),
    )
    assert table.version == version and "lakecore.fine" not in table.snapshot().properties


GOOD_PROPERTIES: dict[str, str] = {
    "delta.checkpointInterval": "0",
    "delta.logRetentionDuration": "interval 30 days",
    "delta.deletedFileRetentionDuration": "1 week 12 hours",
    "delta.checkpointRetentionDuration": "INTERVAL 2 DAYS",
    "delta.enableChangeDataFeed": "TRUE",
    "delta.appendOnly": "false",
    "delta.checkpoint.writeStatsAsJson": "False",
    "delta.isolationLevel": "Serializable",
    "delta.targetFileSize": "128mb",
    "delta.dataSkippingNumIndexedCols": "-1",
    "delta.constraints.whatever": "n > 0",
    "some.other.key": "anything at all",
}


def test_valid_property_values_are_taken(tmp_path: Path) -> None:
    table = lakecore.create(str(tmp_path / "t"), SCHEMA, properties=GOOD_PROPERTIES)
    assert table.snapshot().properties == GOOD_PROPERTIES
    table.append(complete({"id": [1], "n": pa.array([1], pa.int32())}))
    other = make_table(tmp_path / "u", "delta")
    other.set_properties(dict(GOOD_PROPERTIES))
    assert other.snapshot().properties == GOOD_PROPERTIES
    other.set_properties({"delta.appendOnly": None})  # unsetting never needs a valid value


# ----------------------------------------------------------------------------- timestamps

BAD_TIMESTAMPS: list[Any] = [
    "not a time",
    "",
    "2024-13-01",
    "99999-01-01",
    "yesterday",
    float("nan"),
    float("inf"),
    True,
    object(),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("value", BAD_TIMESTAMPS, ids=[repr(v)[:20] for v in BAD_TIMESTAMPS])
def test_time_travel_to_a_garbage_timestamp(tmp_path: Path, fmt: str, value: Any) -> None:
    table = make_table(tmp_path / "t", fmt)
    with pytest.raises(lakecore.VersionNotFoundError):
        table.snapshot(timestamp=value)
    with pytest.raises(lakecore.VersionNotFoundError):
        table.scan(timestamp=value)


BAD_PREDICATES = [
    "ts > TIMESTAMP 'garbage'",
    "ts > 'garbage'",
    "ts > '2024-13-45'",
    "day = DATE '2024-02-30'",
    "day > 'not a date'",
    "ts BETWEEN 'a' AND 'b'",
    "ts > TIMESTAMP '99999-01-01'",
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("where", BAD_PREDICATES)
def test_garbage_timestamps_in_predicates(tmp_path: Path, fmt: str, where: str) -> None:
    table = make_table(tmp_path / "t", fmt)
    with pytest.raises(lakecore.PredicateError):
        table.scan(where).to_arrow()
    assert_refused(table, lakecore.PredicateError, lambda: table.delete(where))
    assert_refused(table, lakecore.PredicateError, lambda: table.update({"n": "1"}, where))


def test_case_lists_ran() -> None:
    """The data-driven lists above are what the parametrized tests run (STYLE 9)."""
    sizes = (
        len(LOSSY),
        len(LOSSLESS),
        len(WRITES),
        len(NESTED_LOSSY),
        len(BAD_MERGES),
        len(BAD_UPDATES),
        len(GOOD_UPDATES),
        len(BAD_PROPERTIES),
        len(GOOD_PROPERTIES),
        len(BAD_TIMESTAMPS),
        len(BAD_PREDICATES),
    )
    assert sizes == (19, 14, 3, 4, 5, 16, 7, 21, 12, 9, 7)
