"""Issue 13's done-when, literally: EVERY corpus Hudi table (copied to a temp dir) accepts a
lakecore insert, upsert, delete, compaction (merge-on-read) and clean; after each, hudi-rs
reads the rows lakecore reads, both equal a model of the operations, and a table with a
metadata table lists exactly storage's data files in its ``files`` partition.

The deeper per-partition checks (column stats, partition stats, record and secondary
indexes) live in ``test_mdt_all_partitions.py`` and ``test_lance_base_files.py``; this suite
is the breadth check over the whole corpus (20 tables).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lakecore
from tests.corpus import CORPUS
from tests.hudi.write.helpers import copy_corpus_table, files_on_disk, hudi_rs_table, upsert
from tests.hudi.write.test_mdt_maintain import mdt_listing

TABLES = sorted(p.name for p in (CORPUS / "hudi").iterdir() if (p / ".hoodie").is_dir())

Row = dict[str, Any]


def test_the_whole_corpus_is_covered() -> None:
    assert len(TABLES) == 20, TABLES


def _fields(properties: dict[str, str], name: str) -> list[str]:
    value = properties.get(name) or ""
    return [f.split(":")[0] for f in value.split(",") if f]


def _data(table: pa.Table) -> list[Row]:
    keep = [c for c in table.column_names if not c.startswith("_hoodie_")]
    rows = table.select(keep).to_pylist()
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def _new_value(column: pa.ChunkedArray, t: pa.DataType, seed: Any) -> Any:
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return f"{seed if seed is not None else 'k'}-lakecore"
    if pa.types.is_integer(t):
        top = pc.max(column).as_py() if len(column) else 0
        return (top or 0) + 1000
    raise AssertionError(f"no new key value for type {t}")


def _first_value(t: pa.DataType) -> Any:
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "a"
    if pa.types.is_integer(t):
        return 1
    if pa.types.is_floating(t):
        return 1.0
    if pa.types.is_boolean(t):
        return True
    return None


def _changed(row: Row, schema: pa.Schema, fixed: set[str], ordering: str | None) -> Row:
    """``row`` with its ordering field raised (wins under event-time ordering) and its first
    other string or integer column changed."""
    out = dict(row)
    if ordering and out.get(ordering) is not None:
        out[ordering] = out[ordering] + 1000
    for field in schema:
        if field.name in fixed or field.name == ordering or field.name.startswith("_hoodie_"):
            continue
        if pa.types.is_string(field.type) and out[field.name] is not None:
            out[field.name] = out[field.name] + "-u"
            return out
        if pa.types.is_integer(field.type) and out[field.name] is not None:
            out[field.name] = out[field.name] + 1
            return out
    return out


def _check(root: Path, model: list[Row]) -> None:
    want = sorted(model, key=lambda r: json.dumps(r, sort_keys=True, default=str))
    ours = _data(lakecore.open(str(root)).to_arrow())
    assert ours == want
    assert _data(hudi_rs_table(root)) == want
    listing = mdt_listing(root)
    if listing is not None:
        assert listing == files_on_disk(root)


@pytest.mark.parametrize("name", TABLES)
def test_every_operation_on_every_corpus_table(tmp_path: Path, name: str) -> None:
    root = copy_corpus_table(name, tmp_path)
    table = lakecore.open(str(root))
    properties = table.snapshot().properties
    keys = _fields(properties, "hoodie.table.recordkey.fields")
    partition_fields = _fields(properties, "hoodie.table.partition.fields")
    ordering = (
        properties.get("hoodie.table.precombine.field")
        or properties.get("hoodie.table.ordering.fields")
        or None
    )
    before = table.to_arrow()
    data = before.drop_columns([c for c in before.column_names if c.startswith("_hoodie_")])
    schema = data.schema

    def key_of(row: Row) -> tuple[Any, ...]:
        return tuple(row[k] for k in keys)

    # A multiset: some corpus tables store a key twice (Hudi inserts, non-global indexes).
    model = data.to_pylist()
    counts: dict[tuple[Any, ...], int] = {}
    for r in model:
        counts[key_of(r)] = counts.get(key_of(r), 0) + 1

    # insert: a new key (row 0 with new key values, or a row built from the schema)
    if data.num_rows:
        base = data.to_pylist()[0]
        new = dict(base)
        for k in keys:
            new[k] = _new_value(data.column(k), schema.field(k).type, base[k])
    else:
        new = {f.name: _first_value(f.type) for f in schema}
    inserted = pa.Table.from_pylist([new], schema=schema)
    table.append(inserted)
    model.append(new)
    _check(root, model)

    # upsert: the new row changed (its ordering value raised so it wins)
    fixed = set(keys) | set(partition_fields)
    updated = _changed(new, schema, fixed, ordering)
    upsert(lakecore.open(str(root)), pa.Table.from_pylist([updated], schema=schema))
    model = [updated if key_of(r) == key_of(new) else r for r in model]
    _check(root, model)

    # delete: an original row whose key is stored once when there is one, else the new row
    once = [r for r in data.to_pylist() if counts[key_of(r)] == 1]
    doomed = once[-1] if once else updated
    lakecore.open(str(root)).merge(
        pa.Table.from_pylist([doomed], schema=schema), on=keys
    ).when_matched_delete().execute()
    model = [r for r in model if key_of(r) != key_of(doomed)]
    _check(root, model)

    if properties.get("hoodie.table.type") == "MERGE_ON_READ":
        lakecore.open(str(root)).compact()
        _check(root, model)

    lakecore.open(str(root)).clean(retain_commits=1)
    _check(root, model)
