"""Schema evolution of Lance datasets (``Table.update_schema``): metadata-only changes as
pylance makes them; pylance reads every version identically."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

import lakecore
from lakecore.errors import CommitConflictError, SchemaError, UnsupportedFeatureError
from tests.lance.helpers import assert_same_as_pylance, lance

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def test_add_rename_drop_columns(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = lakecore.create(str(path), SCHEMA, format="lance")
    table.append(pa.table({"id": [1, 2], "name": ["a", "b"]}, schema=SCHEMA))
    with table.update_schema() as update:
        update.add_column("tags", pa.list_(pa.string()))
        update.add_column("st", pa.struct([("x", pa.int32())]))
    table.append(
        pa.table({"id": [3], "name": ["c"], "tags": [["t"]], "st": [{"x": 7}]}),
    )
    assert lance.dataset(str(path)).to_table().column("tags").to_pylist() == [None, None, ["t"]]
    with table.update_schema() as update:
        update.rename_column("name", "label")
        update.drop_column("st")
    assert table.snapshot().schema.names == ["id", "label", "tags"]
    table.append(pa.table({"id": [4], "label": ["d"], "tags": [["u", "v"]]}))
    with table.update_schema() as update:  # a dropped name comes back empty, not resurrected
        update.add_column("st", pa.int64())
    got = {r["id"]: r["st"] for r in lance.dataset(str(path)).to_table().to_pylist()}
    assert got == {1: None, 2: None, 3: None, 4: None}
    table.delete("id = 2")
    table.update({"label": "'z'"}, "id = 3")
    assert assert_same_as_pylance(path) == 9
    # pylance evolves the schema of a lakecore dataset; lakecore writes on top
    lance.dataset(str(path)).add_columns({"twice": "id * 2"})
    nulls = {"tags": pa.nulls(1, pa.list_(pa.string())), "st": pa.nulls(1, pa.int64())}
    table.append(pa.table({"id": [5], "label": ["e"], "twice": [10], **nulls}))
    assert assert_same_as_pylance(path) == 11


def test_bad_schema_changes(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = lakecore.create(str(path), SCHEMA, format="lance")
    version = table.version
    for change, error in [
        (lambda u: u.add_column("id", pa.int64()), SchemaError),
        (lambda u: u.add_column("x", pa.int64(), nullable=False), SchemaError),
        (lambda u: u.add_column("m", pa.map_(pa.string(), pa.int64())), SchemaError),
        (lambda u: u.rename_column("nope", "x"), SchemaError),
        (lambda u: u.rename_column("id", "name"), SchemaError),
        (lambda u: u.drop_column("nope"), SchemaError),
        (lambda u: u.drop_column("id").drop_column("name"), SchemaError),
        (lambda u: u.widen_type("id", pa.int64()), SchemaError),  # not wider
        (lambda u: u.widen_type("id", pa.int32()), SchemaError),
        (lambda u: u.widen_type("nope", pa.int64()), SchemaError),
        (
            lambda u: u.add_column("s", pa.struct([("x", pa.int8())])).widen_type("s", pa.int8()),
            UnsupportedFeatureError,
        ),
        (
            lambda u: u.rename_column("name", "n").widen_type("n", pa.large_string()),
            UnsupportedFeatureError,
        ),
    ]:
        with pytest.raises(error), table.update_schema() as update:
            change(update)
    assert table.version == version


def test_a_schema_change_never_rebases(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = lakecore.create(str(path), SCHEMA, format="lance")
    appending = table.transaction()
    appending.append(pa.table({"id": [1], "name": ["a"]}, schema=SCHEMA))
    with table.update_schema() as update:
        update.drop_column("name")
    with pytest.raises(CommitConflictError):
        appending.commit()  # its data files were written for the old schema
    assert lance.dataset(str(path)).to_table().num_rows == 0
    assert not (path / "data").exists() or not any((path / "data").iterdir())


def test_widen_types_rewrites_the_column(tmp_path: Path) -> None:
    path = tmp_path / "w"
    schema = pa.schema(
        [("id", pa.int32()), ("f", pa.float32()), ("d", pa.decimal128(5, 2)), ("s", pa.string())]
    )
    table = lakecore.create(str(path), schema, format="lance")
    data = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int32()),
            "f": pa.array([0.5, 1.5, None], pa.float32()),
            "d": pa.array([Decimal("1.25"), Decimal("-2.50"), None], pa.decimal128(5, 2)),
            "s": ["a", "b", "c"],
        }
    )
    table.append(data)
    table.append(data)
    table.delete("id = 2")
    before = lance.dataset(str(path)).to_table()
    with table.update_schema() as update:
        update.widen_type("id", pa.int64())
        update.widen_type("f", pa.float64())
        update.widen_type("d", pa.decimal128(10, 3))
        update.widen_type("s", pa.large_string())
    got = lance.dataset(str(path)).to_table()
    assert (
        got.schema.field("id").type == pa.int64()
        and got.schema.field("s").type == pa.large_string()
    )
    assert got.to_pylist() == before.cast(got.schema).to_pylist()
    assert all(len(f.data_files()) == 2 for f in lance.dataset(str(path)).get_fragments())
    table.append(pa.table({"id": [2**40], "f": [0.25], "d": [None], "s": ["z"]}))
    table.delete("id = 1")
    assert sorted(lance.dataset(str(path)).to_table().column("id").to_pylist()) == [3, 3, 2**40]
    assert assert_same_as_pylance(path) == 7
