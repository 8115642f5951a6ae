"""MERGE on Lance datasets: the rows equal pylance's ``merge_insert`` on the same data, and
pylance reads every version lakecore writes identically."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from lakecore_lance.write.fields import PRIMARY_KEY

import lakecore
from lakecore.errors import (
    CommitConflictError,
    ConstraintViolationError,
    SchemaError,
    UnsupportedFeatureError,
)
from tests.lance.helpers import assert_same_as_pylance, lance, sort_rows

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("n", pa.int64())])


def rows(ids: list[int], v: str) -> pa.Table:
    return pa.table({"id": ids, "v": [v] * len(ids), "n": ids}, schema=SCHEMA)


def twins(tmp_path: Path) -> tuple[Path, Path]:
    """The same three versions written by lakecore and by pylance (two fragments)."""
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    table = lakecore.create(str(ours), SCHEMA, format="lance")
    table.append(rows([1, 2, 3], "a"))
    table.append(rows([4, 5, 6], "b"))
    lance.write_dataset(rows([1, 2, 3], "a"), str(theirs))
    lance.write_dataset(rows([4, 5, 6], "b"), str(theirs), mode="append")
    return ours, theirs


def current(path: Path) -> list[dict[str, Any]]:
    rows_: list[dict[str, Any]] = sort_rows(lance.dataset(str(path)).to_table()).to_pylist()
    return rows_


def test_upsert_equals_pylance_merge_insert(tmp_path: Path) -> None:
    ours, theirs = twins(tmp_path)
    source = rows([2, 5, 9], "s")
    lakecore.open(str(ours)).merge(
        source, on="id"
    ).when_matched_update_all().when_not_matched_insert_all().execute()
    lance.dataset(str(theirs)).merge_insert(
        "id"
    ).when_matched_update_all().when_not_matched_insert_all().execute(source)
    assert current(ours) == current(theirs)
    assert assert_same_as_pylance(ours) == 4


def test_conditions_deletes_and_insert_only(tmp_path: Path) -> None:
    ours, theirs = twins(tmp_path)
    table = lakecore.open(str(ours))
    source = rows([1, 4, 7], "s")
    table.merge(source, on="id").when_matched_update_all("target.n > 1").execute()
    lance.dataset(str(theirs)).merge_insert("id").when_matched_update_all("target.n > 1").execute(
        source
    )
    assert current(ours) == current(theirs)
    # insert only: matched rows stay, unmatched source rows come in
    table.merge(rows([2, 8], "i"), on="id").when_not_matched_insert_all().execute()
    lance.dataset(str(theirs)).merge_insert("id").when_not_matched_insert_all().execute(
        rows([2, 8], "i")
    )
    assert current(ours) == current(theirs)
    # matched delete (Lance: merge_insert's when_not_matched_by_source has no counterpart; a
    # matched delete is delete-by-key)
    table.merge(rows([3, 5], "d"), on="id").when_matched_delete().execute()
    lance.dataset(str(theirs)).delete("id IN (3, 5)")
    assert current(ours) == current(theirs)
    table.merge(rows([1, 6], "x"), on="id").when_matched_update({"v": "s.v || t.v"}).execute()
    got = {r["id"]: r["v"] for r in current(ours)}
    assert got[1] == "xa" and got[6] == "xb" and got[4] == "s"
    assert assert_same_as_pylance(ours) == 7


def test_bad_merges_write_nothing(tmp_path: Path) -> None:
    ours, _ = twins(tmp_path)
    table = lakecore.open(str(ours))
    version = table.version
    dup = rows([1, 1], "d")
    with pytest.raises(ConstraintViolationError):
        table.merge(dup, on="id").when_matched_update_all().execute()
    with pytest.raises(SchemaError):
        table.merge(rows([1], "d"), on="nope").when_matched_update_all().execute()
    with pytest.raises(SchemaError):
        table.merge(rows([1], "d"), on="id").when_matched_update({"zz": "1"}).execute()
    assert table.version == version
    assert len(list((ours / "data").iterdir())) == 2


def test_upsert_by_the_primary_key(tmp_path: Path) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    table = lakecore.create(
        str(ours), SCHEMA, format="lance", properties={"lance.primary_key": "id"}
    )
    key = SCHEMA.field(0).with_metadata({PRIMARY_KEY: "true"}).with_nullable(False)
    keyed = SCHEMA.set(0, key)
    lance.write_dataset(rows([1, 2, 3], "a").cast(keyed), str(theirs))
    from tests.lance.test_write import manifest

    assert list(manifest(ours, 1).fields) == list(manifest(theirs, 1).fields)
    table.append(rows([1, 2, 3], "a"))
    table.upsert(rows([2, 7], "u"))
    lance.dataset(str(theirs)).merge_insert(
        "id"
    ).when_matched_update_all().when_not_matched_insert_all().execute(rows([2, 7], "u"))
    assert current(ours) == current(theirs)
    assert table.history()[0].operation == "update"  # Lance names it by its transaction
    assert assert_same_as_pylance(ours) == 3
    plain = lakecore.create(str(tmp_path / "plain"), SCHEMA, format="lance")
    with pytest.raises(UnsupportedFeatureError):
        plain.upsert(rows([1], "x"))
    with pytest.raises(SchemaError):
        lakecore.create(
            str(tmp_path / "bad"), SCHEMA, format="lance", properties={"lance.primary_key": "x"}
        )


def test_an_upsert_racing_an_append_conflicts(tmp_path: Path) -> None:
    path = tmp_path / "t"
    table = lakecore.create(
        str(path), SCHEMA, format="lance", properties={"lance.primary_key": "id"}
    )
    table.append(rows([1, 2, 3], "a"))
    table.append(rows([4, 5], "b"))

    def staged_upsert(data: pa.Table) -> lakecore.Transaction:
        tx = table.transaction()
        tx.stage(*table._format_writer(tx.snapshot).upsert(data))
        return tx

    first = staged_upsert(rows([1, 8], "u"))
    table.delete("id = 5")  # another fragment, no rows added: the upsert rebases past it
    first.commit()
    second = staged_upsert(rows([2, 9], "w"))
    table.append(rows([9], "x"))  # the key the upsert inserts: both landing would duplicate it
    with pytest.raises(CommitConflictError):
        second.commit()
    assert sorted(r["id"] for r in current(path)) == [1, 2, 3, 4, 8, 9]
    assert {r["id"]: r["v"] for r in current(path)}[9] == "x"
    assert assert_same_as_pylance(path) == 6
