"""Schema evolution of Lance datasets (``Table.update_schema``): metadata-only changes as
pylance makes them; pylance reads every version identically."""

from __future__ import annotations

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
    table.append(pa.table({"id": [5], "label": ["e"], "twice": [10]}))
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
        (lambda u: u.widen_type("id", pa.int64()), UnsupportedFeatureError),
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
