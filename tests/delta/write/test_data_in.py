"""Bad input: the right error class, and nothing committed (no commit file, no data file)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lakecore

from .helpers import (
    LOG,
    canonical,
    commit_versions,
    data_files,
    delta_rs_rows,
    lakecore_rows,
    log_names,
)

SCHEMA = pa.schema(
    [
        ("id", pa.int64(), False),
        ("name", pa.string()),
        ("small", pa.int8()),
        ("price", pa.decimal128(9, 2)),
        ("ts", pa.timestamp("us", "UTC")),
        (
            "s",
            pa.struct([pa.field("req", pa.int32(), nullable=False), pa.field("opt", pa.string())]),
        ),
        (
            "deep",
            pa.struct(
                [pa.field("inner", pa.struct([pa.field("leaf", pa.string(), nullable=False)]))]
            ),
        ),
        ("tags", pa.list_(pa.field("element", pa.string(), nullable=False))),
        ("attrs", pa.map_(pa.string(), pa.field("value", pa.int64(), nullable=False))),
    ]
)
GOOD = pa.Table.from_pylist(
    [
        {"id": 1, "name": "a", "s": {"req": 1, "opt": None}},
        {"id": 2, "deep": {"inner": {"leaf": "x"}}, "tags": ["a"], "attrs": [("k", 1)]},
        {"id": 3, "deep": {"inner": None}, "tags": [], "attrs": []},
    ],
    schema=SCHEMA,
)


@pytest.fixture
def table(tmp_path: Path) -> Iterator[lakecore.Table]:
    t = lakecore.create(str(tmp_path / "t"), SCHEMA)
    assert t.append(GOOD).version == 1
    yield t


def assert_nothing_written(table: lakecore.Table, action: Callable[[], Any], error: type) -> None:
    """``action`` raises ``error`` and leaves log, data files and rows as they were."""
    path = Path(table.uri)
    before = (table.version, log_names(path), data_files(path), lakecore_rows(path))
    with pytest.raises(error):
        action()
    after = (table.version, log_names(path), data_files(path), lakecore_rows(path))
    assert after == before


BAD_DATA: list[tuple[str, pa.Table | Any, type]] = [
    ("unknown column", pa.table({"id": [3], "nope": [1]}), lakecore.SchemaError),
    ("string into int64", pa.table({"id": ["x"]}), lakecore.SchemaError),
    ("int overflows int8", pa.table({"id": [3], "small": [300]}), lakecore.SchemaError),
    ("float loses digits into int64", pa.table({"id": [1.5]}), lakecore.SchemaError),
    (
        "decimal with too much scale",
        pa.table({"id": [3], "price": pa.array([1.234]).cast(pa.decimal128(9, 3))}),
        lakecore.SchemaError,
    ),
    (
        "ns timestamp with sub-us digits",
        pa.table({"id": [3], "ts": pa.array([1_000_000_000_000_000_001], pa.timestamp("ns"))}),
        lakecore.SchemaError,
    ),
    (
        "duplicate column names",
        pa.Table.from_arrays([pa.array([3]), pa.array([4])], names=["id", "id"]),
        lakecore.SchemaError,
    ),
    ("not arrow-like", [1, 2, 3], lakecore.SchemaError),
    ("null in NOT NULL", pa.table({"id": pa.array([3, None], pa.int64())}), None),
    ("NOT NULL column missing", pa.table({"name": ["a"]}), None),
    (
        "null in NOT NULL struct child",
        pa.table({"id": [3], "s": pa.array([{"req": None, "opt": "x"}], SCHEMA.field("s").type)}),
        None,
    ),
    (
        "null in NOT NULL grandchild",
        pa.table(
            {
                "id": [3, 4],
                "deep": pa.array(
                    [{"inner": {"leaf": "ok"}}, {"inner": {"leaf": None}}],
                    SCHEMA.field("deep").type,
                ),
            }
        ),
        None,
    ),
    (
        "null list element where containsNull is false",
        pa.table({"id": [3, 4], "tags": pa.array([None, ["a", None]], pa.list_(pa.string()))}),
        None,
    ),
    (
        "null map value where valueContainsNull is false",
        pa.table(
            {
                "id": [3, 4, 5],
                "attrs": pa.array(
                    [None, [("a", 1)], [("b", None)]], pa.map_(pa.string(), pa.int64())
                ),
            }
        ),
        None,
    ),
    (
        "null in NOT NULL child, second chunk",
        pa.Table.from_batches(
            [
                pa.record_batch(
                    {"id": [i], "s": pa.array([{"req": r}], pa.struct([("req", pa.int32())]))}
                )
                for i, r in ((3, 1), (4, None))
            ]
        ),
        None,
    ),
]


@pytest.mark.parametrize("data,error", [c[1:] for c in BAD_DATA], ids=[c[0] for c in BAD_DATA])
def test_bad_append_commits_nothing(table: lakecore.Table, data: Any, error: type | None) -> None:
    # The constraint cases append some columns only: schema_mode="merge" lets them reach the
    # NOT NULL checks (by default a missing column is a SchemaError, as in deltalake).
    mode = None if error else "merge"
    assert_nothing_written(
        table,
        lambda: table.append(data, schema_mode=mode),
        error or lakecore.ConstraintViolationError,
    )


@pytest.mark.parametrize(
    "data,error", [c[1:] for c in BAD_DATA[:3]], ids=[c[0] for c in BAD_DATA[:3]]
)
def test_bad_overwrite_commits_nothing(
    table: lakecore.Table, data: Any, error: type | None
) -> None:
    assert_nothing_written(table, lambda: table.overwrite(data), error)


def test_bad_input_in_a_transaction_drops_the_whole_transaction(table: lakecore.Table) -> None:
    def run() -> None:
        with table.transaction() as tx:
            tx.append(pa.table({"id": [10]}))
            tx.append(pa.table({"id": ["x"]}))

    path = Path(table.uri)
    before = (table.version, log_names(path), lakecore_rows(path))
    with pytest.raises(lakecore.SchemaError):
        run()
    assert (table.version, log_names(path), lakecore_rows(path)) == before


def test_null_struct_with_not_null_child_is_allowed(table: lakecore.Table) -> None:
    """NOT NULL on a child binds only where the parent struct is present."""
    new = [
        {"id": 5, "s": None, "deep": {"inner": None}, "tags": None, "attrs": None},
        {"id": 6, "s": {"req": 7, "opt": None}, "deep": None},
    ]
    assert table.append(pa.Table.from_pylist(new, schema=SCHEMA)).version == 2
    expected = canonical(pa.Table.from_pylist(GOOD.to_pylist() + new, schema=SCHEMA))
    assert lakecore_rows(table.uri) == delta_rs_rows(table.uri, scan=True) == expected


def test_accepted_inputs(table: lakecore.Table) -> None:
    """Batches, readers, dicts, reordered columns and safe casts are all fine (some columns
    only: with schema_mode="merge" the others are written as nulls)."""
    batch = pa.record_batch({"name": ["b"], "id": pa.array([10], pa.int32())})
    assert table.append(batch, schema_mode="merge").version == 2
    reader = pa.RecordBatchReader.from_batches(batch.schema, [batch])
    assert table.append(reader, schema_mode="merge").version == 3
    assert table.append({"id": [11], "small": [-128]}, schema_mode="merge").version == 4
    with pytest.raises(lakecore.SchemaError, match="'small'"):
        table.append(batch)  # by default every column must be there
    ids = sorted(r["id"] for r in lakecore.open(table.uri).to_arrow().to_pylist())
    assert ids == [1, 2, 3, 10, 10, 11]


@pytest.fixture
def append_only(tmp_path: Path) -> lakecore.Table:
    t = lakecore.create(str(tmp_path / "t"), SCHEMA, properties={"delta.appendOnly": "true"})
    t.append(GOOD)
    return t


def test_delete_on_append_only_table(append_only: lakecore.Table) -> None:
    t = append_only
    assert_nothing_written(t, t.delete, lakecore.ConstraintViolationError)
    path = Path(t.uri)
    before = (t.version, log_names(path), lakecore_rows(path))
    with pytest.raises(lakecore.ConstraintViolationError):
        t.overwrite(GOOD)
    assert (t.version, log_names(path), lakecore_rows(path)) == before
    assert t.append(GOOD).version == 2  # appends stay allowed


def test_overwrite_on_append_only_table_writes_no_data_file(append_only: lakecore.Table) -> None:
    assert_nothing_written(
        append_only, lambda: append_only.overwrite(GOOD), lakecore.ConstraintViolationError
    )


def test_create_where_a_table_exists(tmp_path: Path) -> None:
    path = tmp_path / "t"
    lakecore.create(str(path), SCHEMA)
    first = (path / LOG / f"{0:020d}.json").read_bytes()
    with pytest.raises(lakecore.TableExistsError):
        lakecore.create(str(path), pa.schema([("other", pa.string())]))
    assert (path / LOG / f"{0:020d}.json").read_bytes() == first
    assert commit_versions(path) == [0]


@pytest.mark.parametrize(
    "partition_by,properties,error",
    [
        (["missing"], {}, lakecore.SchemaError),
        (["s"], {}, lakecore.SchemaError),  # a struct cannot be a partition column
        ([], {"delta.columnMapping.mode": "bogus"}, lakecore.InvalidArgumentError),
    ],
    ids=["unknown column", "nested column", "bad column mapping mode"],
)
def test_create_with_bad_arguments(
    tmp_path: Path, partition_by: list[str], properties: dict[str, str], error: type
) -> None:
    path = tmp_path / "t"
    with pytest.raises(error):
        lakecore.create(str(path), SCHEMA, partition_by=partition_by, properties=properties)
    assert not (path / LOG).exists() or commit_versions(path) == []


def _hand_commit(path: Path, version: int, *actions: dict[str, Any]) -> None:
    lines = [{"commitInfo": {"timestamp": 1, "operation": "HAND EDIT"}}, *actions]
    text = "\n".join(json.dumps(a) for a in lines) + "\n"
    (path / LOG / f"{version:020d}.json").write_text(text)


@pytest.mark.parametrize(
    "protocol,feature",
    [
        (
            {
                "minReaderVersion": 1,
                "minWriterVersion": 7,
                "writerFeatures": ["appendOnly", "invariants", "fancyNewWriterFeature"],
            },
            "fancyNewWriterFeature",
        ),
        ({"minReaderVersion": 1, "minWriterVersion": 8}, "writerVersion:8"),
        ({"minReaderVersion": 1, "minWriterVersion": 6}, "identityColumns"),
    ],
    ids=["unknown writer feature", "writer version 8", "writer version 6"],
)
def test_unknown_writer_feature_blocks_every_write(
    table: lakecore.Table, protocol: dict[str, Any], feature: str
) -> None:
    path = Path(table.uri)
    _hand_commit(path, 2, {"protocol": protocol})
    expected = canonical(GOOD)
    assert lakecore_rows(path) == expected  # reading is still fine

    def in_transaction() -> None:
        with table.transaction() as tx:
            tx.append(GOOD)

    writes: list[Callable[[], Any]] = [
        lambda: table.append(GOOD),
        lambda: table.overwrite(GOOD),
        table.delete,
        in_transaction,
    ]
    for write in writes:
        before = (log_names(path), data_files(path))
        with pytest.raises(lakecore.UnsupportedFeatureError) as info:
            write()
        assert info.value.feature == feature
        assert (log_names(path), data_files(path)) == before
    assert table.version == 2


def test_bad_data_cases_all_ran() -> None:
    """The data-driven list above is what the parametrized test runs (STYLE 9)."""
    assert len(BAD_DATA) == 15
    assert len({c[0] for c in BAD_DATA}) == len(BAD_DATA)
