"""Reading checkpoint ``stats_parsed``: the typed struct stands for an add's stats text.

Where a checkpoint holds ``stats_parsed`` (``delta.checkpoint.writeStatsAsStruct``), the file
index takes the struct and never parses that add's JSON ``stats``; adds without a struct
(later commits, checkpoints without the column) keep the text. Both give the same index.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from lakecore_delta import file_index, stats
from lakecore_delta.state import load_state

import lakecore
from lakecore.model import files as fi

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("qty", pa.int32()),
        ("name", pa.string()),
        ("price", pa.float64()),
        ("amount", pa.decimal128(10, 2)),
        ("day", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("p", pa.string()),
    ]
)
STRUCT = {"delta.checkpoint.writeStatsAsStruct": "true"}
STATS = [fi.RECORD_COUNT, fi.MIN, fi.MAX, fi.NULL_COUNT]


def _batch(i: int) -> pa.Table:
    return pa.table(
        {
            "id": [i * 10, i * 10 + 1, None],
            "qty": [i, -i, 7],
            "name": [f"n{i}", None, "z" * 40],  # a long string: its max is left out
            "price": [1.5 * i, None, -2.0],
            "amount": [Decimal(f"{i}.25"), Decimal("-3.10"), None],
            "day": [dt.date(2024, 1, 1 + i), None, dt.date(1999, 12, 31)],
            "ts": [dt.datetime(2024, 5, 1, 12, i, tzinfo=dt.timezone.utc), None, None],
            "p": ["a" if i % 2 else "b"] * 3,
        },
        schema=SCHEMA,
    )


def _table(tmp_path: Path, name: str, appends: int, **props: str) -> lakecore.Table:
    t = lakecore.create(str(tmp_path / name), SCHEMA, partition_by=["p"], properties=props)
    for i in range(appends):
        t.append(_batch(i))
    return t


def _index(uri: str) -> pa.Table:
    return lakecore.open(uri).snapshot().files().sort_by(fi.PATH)


def _checkpoint_adds(t: lakecore.Table, version: int) -> pa.Table:
    return pq.read_table(os.path.join(t.uri, "_delta_log", f"{version:020d}.checkpoint.parquet"))


def test_struct_stats_give_the_index_of_the_text(tmp_path: Path) -> None:
    t = _table(tmp_path, "t", 5, **STRUCT)
    from_text = _index(t.uri)
    version = t.checkpoint()
    adds = pc.drop_null(_checkpoint_adds(t, version).column("add"))
    assert pc.struct_field(adds, "stats_parsed").null_count == 0
    t.append(_batch(9))  # one add after the checkpoint: text only
    from_struct = _index(t.uri)
    assert from_struct.num_rows == 6
    before = from_struct.filter(pc.is_in(from_struct.column(fi.PATH), from_text.column(fi.PATH)))
    assert before.select(STATS) == from_text.select(STATS)
    assert len(set(from_struct.column(fi.RECORD_COUNT).to_pylist())) == 1
    rows = t.scan(where="id >= 40 AND id < 50").to_arrow()
    assert sorted(rows.column("id").to_pylist()) == [40, 41]


def test_the_struct_is_taken_and_the_text_of_its_add_never_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = _table(tmp_path, "t", 3, **STRUCT)
    version = t.checkpoint()
    t.append(_batch(7))
    parsed_texts: list[int] = []
    real = stats.parse_stats

    def counting(text: pa.ChunkedArray, *args: object, **kwargs: object) -> pa.Table:
        parsed_texts.append(len(text) - text.null_count)
        return real(text, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(stats, "parse_stats", counting)
    index = _index(t.uri)
    assert index.num_rows == 4
    assert parsed_texts == [1]  # the commit after the checkpoint only
    assert version == 3


def test_struct_and_text_disagreeing_the_struct_wins_where_present(tmp_path: Path) -> None:
    t = _table(tmp_path, "t", 2, **STRUCT)
    version = t.checkpoint()
    path = os.path.join(t.uri, "_delta_log", f"{version:020d}.checkpoint.parquet")
    cp = pq.read_table(path)
    rows = cp.to_pylist()
    adds = [r["add"] for r in rows if r["add"]]
    adds[0]["stats_parsed"]["numRecords"] = 99  # the struct says 99, the text 3
    adds[1]["stats_parsed"] = None  # no struct: its text is read
    pq.write_table(pa.Table.from_pylist(rows, schema=cp.schema), path)
    index = lakecore.open(t.uri).snapshot().files()
    paths, records = index.column(fi.PATH).to_pylist(), index[fi.RECORD_COUNT].to_pylist()
    counts = dict(zip(paths, records, strict=True))
    assert counts == {adds[0]["path"]: 99, adds[1]["path"]: 3}
    # Planning without a predicate asks for record counts only: the same sources.
    records = file_index.build_file_index(load_state(t.storage), stats_columns=[])
    assert sorted(records.column(fi.RECORD_COUNT).to_pylist()) == [3, 99]


CORPUS = Path(os.environ.get("LAKECORE_CORPUS", Path(__file__).parents[3] / "shared" / "corpus"))
STRUCT_ONLY = CORPUS / "delta" / "deltars__delta-1.2.1-only-struct-stats"


def test_a_checkpoint_of_struct_only_stats_keeps_them(tmp_path: Path) -> None:
    """A table whose checkpoint holds stats only as structs (delta-rs, writeStatsAsJson=false):
    lakecore's next checkpoint renders them as text. Fixed in session 11; was: written as
    null, so every file of the table lost its statistics (record counts included)."""
    if not (STRUCT_ONLY / "_delta_log").is_dir():
        pytest.fail(f"corpus table {STRUCT_ONLY} is missing; set LAKECORE_CORPUS")
    root = tmp_path / "t"
    shutil.copytree(STRUCT_ONLY, root)
    table = lakecore.open(str(root))
    before = table.snapshot().files().sort_by(fi.PATH)
    assert before.column(fi.RECORD_COUNT).null_count == 0
    version = table.checkpoint()
    cp = pq.read_table(root / "_delta_log" / f"{version:020d}.checkpoint.parquet")
    adds = pc.drop_null(cp.column("add"))
    assert pc.struct_field(adds, "stats").null_count == 0
    after = _index(str(root))
    assert after.select(STATS) == before.select(STATS)
    deltalake = pytest.importorskip("deltalake")
    theirs = pa.table(deltalake.DeltaTable(str(root)).get_add_actions(flatten=True))
    assert theirs.column("num_records").null_count == 0
    assert theirs.column("min.integer").null_count == 0


def test_rendered_stats_of_a_file_with_a_deletion_vector_are_not_tight(tmp_path: Path) -> None:
    props = {**STRUCT, "delta.enableDeletionVectors": "true"}
    t = _table(tmp_path, "t", 2, **props)
    t.delete(where="id = 0")  # a deletion vector on the first file
    version = t.checkpoint()
    path = os.path.join(t.uri, "_delta_log", f"{version:020d}.checkpoint.parquet")
    cp = pq.read_table(path)
    rows = cp.to_pylist()
    for row in rows:  # as a writer with writeStatsAsJson=false leaves it: structs only
        if row["add"]:
            row["add"]["stats"] = None
            row["add"]["stats_parsed"].pop("tightBounds", None)
    pq.write_table(pa.Table.from_pylist(rows, schema=cp.schema), path)
    t.append(_batch(5))
    again = lakecore.open(t.uri).checkpoint()
    adds = pc.drop_null(_checkpoint_adds(t, again).column("add")).to_pylist()
    texts = {a["path"]: json.loads(a["stats"]) for a in adds}
    with_dv = {a["path"] for a in adds if a["deletionVector"]}
    assert len(with_dv) == 1 and len(texts) == 3
    assert all(texts[p].get("tightBounds") is False for p in with_dv)
    assert all("tightBounds" not in s for p, s in texts.items() if p not in with_dv)


def _with_child(array: pa.StructArray, path: list[str], child: pa.Array) -> pa.StructArray:
    """``array`` with the child at ``path`` replaced (nulls of every level kept)."""
    t = array.type
    children = []
    for i in range(t.num_fields):
        c = array.field(i)
        if t.field(i).name == path[0]:
            c = child if len(path) == 1 else _with_child(c, path[1:], child)
        children.append(c)
    names = [t.field(i).name for i in range(t.num_fields)]
    return pa.StructArray.from_arrays(children, names=names, mask=array.is_null())


def test_a_year_zero_bound_in_a_struct_is_left_unknown_in_the_text(tmp_path: Path) -> None:
    t = _table(tmp_path, "t", 2, **STRUCT)
    version = t.checkpoint()
    path = os.path.join(t.uri, "_delta_log", f"{version:020d}.checkpoint.parquet")
    cp = pq.read_table(path)
    add = cp.column("add").combine_chunks()
    add = _with_child(add, ["stats"], pa.nulls(len(add), pa.string()))
    year_zero = pa.array([-719_528] * len(add), pa.int32()).cast(pa.date32())  # 0000-01-01
    add = _with_child(add, ["stats_parsed", "minValues", "day"], year_zero)
    at = cp.schema.get_field_index("add")
    pq.write_table(cp.set_column(at, cp.schema.field(at), add), path)
    again = lakecore.open(t.uri).checkpoint()
    adds = pc.drop_null(_checkpoint_adds(t, again).column("add"))
    texts = [json.loads(s) for s in pc.struct_field(adds, "stats").to_pylist()]
    assert len(texts) == 2
    # The struct, which can hold it, keeps the bound.
    days = pc.struct_field(adds, ["stats_parsed", "minValues", "day"]).cast(pa.int32())
    assert days.to_pylist() == [-719_528] * 2
    assert all("day" not in s["minValues"] and "day" in s["maxValues"] for s in texts)
    assert all(s["numRecords"] == 3 and s["minValues"]["id"] >= 0 for s in texts)


def test_an_empty_struct_never_hides_the_text(tmp_path: Path) -> None:
    """A valid ``stats_parsed`` without ``numRecords`` (a writer's empty struct for a file it
    kept no struct stats of) beside a text: the text's stats stand. Fixed in session 11; was
    (found by the attack review): the empty struct won, the file lost its record count and
    bounds, and lakecore's next checkpoint wrote them as nulls."""
    t = _table(tmp_path, "t", 2, **STRUCT)
    want = _index(t.uri).select(STATS)
    version = t.checkpoint()
    path = os.path.join(t.uri, "_delta_log", f"{version:020d}.checkpoint.parquet")
    cp = pq.read_table(path)
    rows = cp.to_pylist()
    for row in rows:
        if row["add"]:
            row["add"]["stats_parsed"] = {k: None for k in row["add"]["stats_parsed"]}
    pq.write_table(pa.Table.from_pylist(rows, schema=cp.schema), path)
    assert _index(t.uri).select(STATS) == want
    again = lakecore.open(t.uri).checkpoint()
    adds = pc.drop_null(_checkpoint_adds(t, again).column("add"))
    counts = pc.struct_field(adds, ["stats_parsed", "numRecords"]).to_pylist()
    assert counts == [3, 3]
