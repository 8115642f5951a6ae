"""Delta DML and restore stage neutral actions (typed stats, deleted positions, no Delta
``stats`` JSON); the log renders the stats JSON from them, and it still bounds the data.

After a deletion-vector delete and after a restore, each re-added file's stats JSON equals
what the log said before (or safely widens it: a string max that may be a prefix is left
out), says ``tightBounds: false`` where the file has a deletion vector, keeps ``numRecords``
the physical count; delta-rs reads and prunes with it.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from lakecore_delta.maintenance import restore_actions
from lakecore_delta.write.stats_out import index_bounds, string_prefix_length

import lakecore
from lakecore.model import files as fi
from lakecore.model.actions import POSITIONS, POSITIONS_TYPE, AddFiles, DeleteRows
from lakecore.storage import open_storage

from .helpers import canonical, commit_lines, delta_rs_rows

deltalake = pytest.importorskip("deltalake", reason="interop tests need deltalake")

UTC = dt.timezone.utc
SCHEMA = pa.schema(
    [
        ("i", pa.int64()),
        ("f", pa.float64()),
        ("s", pa.string()),
        ("t", pa.string()),
        ("ts", pa.timestamp("us", "UTC")),
        ("d", pa.date32()),
        ("dec", pa.decimal128(10, 2)),
        ("st", pa.struct([("a", pa.int32())])),
    ]
)
DVS = {"delta.enableDeletionVectors": "true"}
EXACT_32 = "z" * 32
"""A string max exactly as long as the prefix length: the index may not tell it from a cut
one, so it is not written back (a safe widening)."""


def _rows(ids: list[int]) -> pa.Table:
    n = len(ids)
    return pa.table(
        {
            "i": ids,
            "f": [float(i) / 4 for i in ids],
            "s": [f"v{i:03d}" for i in ids],
            "t": [EXACT_32 if k == n - 1 else f"t{i}" for k, i in enumerate(ids)],
            "ts": [dt.datetime(2024, 1, 1, 0, 0, 0, 123456 + i, tzinfo=UTC) for i in ids],
            "d": [dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in ids],
            "dec": [Decimal(i) / 100 for i in ids],
            "st": [{"a": i if i % 2 else None} for i in ids],
        },
        schema=SCHEMA,
    )


def _adds(root: Path, version: int) -> dict[str, dict[str, Any]]:
    return {
        line["add"]["path"]: line["add"] for line in commit_lines(root, version) if "add" in line
    }


def _stats(add: dict[str, Any]) -> dict[str, Any]:
    return dict(json.loads(add["stats"]))


def _assert_rerendered(new: dict[str, Any], old: dict[str, Any], *, dv: bool) -> None:
    """``new`` is ``old`` again (same numRecords, mins, null counts; the same maxima but
    the 32-character string one), with ``tightBounds: false`` iff the file has a DV."""
    assert new["numRecords"] == old["numRecords"]
    assert new.get("tightBounds") is (False if dv else None)
    assert new["minValues"] == old["minValues"]
    assert new["nullCount"] == old["nullCount"]
    assert old["maxValues"]["t"] == EXACT_32
    assert new["maxValues"] == {k: v for k, v in old["maxValues"].items() if k != "t"}


def _delta_rs_agrees(root: Path, predicate: str, expected: list[int]) -> None:
    """delta-rs reads lakecore's rows, and its stats-pruned scan keeps every match."""
    assert delta_rs_rows(root) == canonical(lakecore.open(str(root)).to_arrow())
    got = pa.table(deltalake.DeltaTable(str(root)).scan(predicate=predicate).read_all())
    assert sorted(got.column("i").to_pylist()) == expected


def test_dv_delete_stages_typed_rows_and_keeps_the_stats(tmp_path: Path) -> None:
    table = lakecore.create(str(tmp_path), SCHEMA, properties=DVS)
    table.append(_rows([1, 2, 3, 4, 5]))
    before = _adds(tmp_path, 1)
    (path,) = before

    snapshot = table.snapshot()
    with table.transaction() as tx:
        actions, info = table._format_writer(snapshot).delete("i IN (2, 4)")
        (dv,) = [a for a in actions if isinstance(a, DeleteRows)]
        assert not [a for a in actions if isinstance(a, AddFiles)]  # no rewrite
        tx.stage(actions, info)
    assert "stats" not in dv.files.column_names
    index = snapshot.files()
    for name in (fi.MIN, fi.MAX, fi.NULL_COUNT, fi.PARTITION):
        assert dv.files.schema.field(name).type == index.schema.field(name).type
    assert dv.files.schema.field(POSITIONS).type == POSITIONS_TYPE
    assert dv.files.column(POSITIONS).to_pylist() == [[1, 3]]
    assert dv.files.column(fi.RECORD_COUNT).to_pylist() == [5]  # physical
    row = dv.files.to_pylist()[0]
    # The log held milliseconds (.123 for .123461): the index max stays that, as the log said.
    assert row[fi.MAX]["ts"] == dt.datetime(2024, 1, 1, 0, 0, 0, 123000, tzinfo=UTC)
    assert row[fi.MAX]["t"] is None  # may be a prefix in the index: unknown now

    after = _adds(tmp_path, 2)
    assert "deletionVector" in after[path]
    _assert_rerendered(_stats(after[path]), _stats(before[path]), dv=True)
    _delta_rs_agrees(tmp_path, "i >= 3", [3, 5])

    # A second delete on the file: the DV grows, the stats are the same again.
    table.delete("i = 5")
    again = _adds(tmp_path, 3)
    _assert_rerendered(_stats(again[path]), _stats(before[path]), dv=True)
    assert again[path]["deletionVector"]["cardinality"] == 3
    _delta_rs_agrees(tmp_path, "i >= 3", [3])


def test_restore_re_adds_files_with_their_stats(tmp_path: Path) -> None:
    table = lakecore.create(str(tmp_path), SCHEMA, properties=DVS)
    table.append(_rows([1, 2, 3, 4]))  # v1: file A
    (path,) = original = _adds(tmp_path, 1)
    table.delete("i = 2")  # v2: A with a DV
    table.overwrite(_rows([50, 60]))  # v3: A gone
    storage = open_storage(str(tmp_path))

    for version, dv, expected in ((2, True, [1, 3, 4]), (1, False, [1, 2, 3, 4])):
        staged = restore_actions(storage, table.snapshot(), version)
        (add,) = [a for a in staged if isinstance(a, AddFiles)]
        assert "stats" not in add.files.column_names
        assert add.files.column(fi.PATH).to_pylist() == [path]
        assert not add.owned
        new_version = table.restore(version).version
        line = _adds(tmp_path, int(new_version))[path]
        assert ("deletionVector" in line) is dv
        _assert_rerendered(_stats(line), _stats(original[path]), dv=dv)
        assert sorted(table.to_arrow().column("i").to_pylist()) == expected
        _delta_rs_agrees(tmp_path, "i >= 2", [i for i in expected if i >= 2])
        add_actions = pa.table(deltalake.DeltaTable(str(tmp_path)).get_add_actions(flatten=True))
        bounds = add_actions.select(["min.i", "max.i", "num_records"]).to_pylist()
        assert bounds == [{"min.i": 1, "max.i": 4, "num_records": 4}]


def _patch_add(root: Path, version: int, change: Any) -> None:
    """Rewrite the add actions of commit ``version`` (as another writer could have)."""
    name = root / "_delta_log" / f"{version:020d}.json"
    lines = [json.loads(x) for x in name.read_text().splitlines() if x.strip()]
    for line in lines:
        if "add" in line:
            change(line["add"])
    name.write_text("\n".join(json.dumps(x) for x in lines) + "\n")


def test_a_cut_string_max_from_another_writer_is_not_written_back(tmp_path: Path) -> None:
    """A writer that cut a max to its 32-character prefix wrote no upper bound; the index
    reads such a max as a prefix, and re-rendering leaves it out rather than claim it."""
    schema = pa.schema([("i", pa.int64()), ("s", pa.string())])
    table = lakecore.create(str(tmp_path), schema, properties=DVS)
    long = "b" * 40
    table.append(pa.table({"i": [1, 2], "s": ["a", long]}, schema=schema))

    def cut(add: dict[str, Any]) -> None:
        stats = json.loads(add["stats"])
        stats["maxValues"]["s"] = long[:32]
        add["stats"] = json.dumps(stats)

    _patch_add(tmp_path, 1, cut)
    table.delete("i = 1")
    (line,) = _adds(tmp_path, 2).values()
    stats = _stats(line)
    assert "s" not in stats["maxValues"]
    assert stats["minValues"]["s"] == "a"
    assert stats["tightBounds"] is False
    predicate = f"s > '{long[:32]}'"
    assert lakecore.open(str(tmp_path)).scan(where=predicate).to_arrow().num_rows == 1
    _delta_rs_agrees(tmp_path, predicate, [2])


def test_a_dv_on_a_file_without_stats_records_its_physical_count(tmp_path: Path) -> None:
    """The protocol requires ``numRecords`` for a file with a DV: the delete read the file,
    so it writes the physical count even when the log had no stats for it."""
    schema = pa.schema([("i", pa.int64())])
    table = lakecore.create(str(tmp_path), schema, properties=DVS)
    table.append(pa.table({"i": [1, 2, 3]}, schema=schema))
    _patch_add(tmp_path, 1, lambda add: add.pop("stats"))
    table.delete("i = 3")
    (line,) = _adds(tmp_path, 2).values()
    assert _stats(line) == {
        "numRecords": 3,
        "tightBounds": False,
        "minValues": {},
        "maxValues": {},
        "nullCount": {},
    }
    _delta_rs_agrees(tmp_path, "i < 3", [1, 2])


def test_index_bounds_keeps_only_true_upper_bounds() -> None:
    """String maxima at least the prefix length long become unknown (nested ones too), a
    timestamp max with a sub-millisecond part is rounded up, everything else is kept."""
    ts = pa.timestamp("us", "UTC")
    max_type = pa.struct(
        [("s", pa.string()), ("ts", ts), ("i", pa.int64()), ("n", pa.struct([("s", pa.string())]))]
    )
    maxima = [
        {
            "s": "x" * 31,
            "ts": dt.datetime(2024, 1, 1, 0, 0, 0, 5000, tzinfo=UTC),
            "i": 7,
            "n": {"s": "y" * 32},
        },
        {
            "s": "x" * 32,
            "ts": dt.datetime(2024, 1, 1, 0, 0, 0, 5001, tzinfo=UTC),
            "i": None,
            "n": None,
        },
    ]
    files = pa.table({fi.PATH: ["a", "b"], fi.MAX: pa.array(maxima, max_type)})
    out = index_bounds(files, 32).column(fi.MAX).to_pylist()
    assert out == [
        {
            "s": "x" * 31,
            "ts": dt.datetime(2024, 1, 1, 0, 0, 0, 5000, tzinfo=UTC),
            "i": 7,
            "n": {"s": None},
        },
        {
            "s": None,
            "ts": dt.datetime(2024, 1, 1, 0, 0, 0, 6000, tzinfo=UTC),
            "i": None,
            "n": None,
        },
    ]
    assert index_bounds(files, 40).column(fi.MAX).to_pylist()[1]["s"] == "x" * 32
    assert string_prefix_length({"delta.dataSkippingStringPrefixLength": "8"}) == 8
    assert string_prefix_length({}) == 32


def test_restore_across_a_rename_brings_the_old_name_back_with_its_stats(tmp_path: Path) -> None:
    """As Delta Spark and delta-rs, a restore brings the version's schema back: the column
    renamed since has its old name again, and the restored files' stats (from the old
    version's index, keyed by that name) are written under the unchanged physical names.
    Before session 12 the current schema stayed (the column kept its new name)."""
    schema = pa.schema([("i", pa.int64()), ("s", pa.string())])
    props = {**DVS, "delta.columnMapping.mode": "name"}
    table = lakecore.create(str(tmp_path), schema, properties=props)
    table.append(pa.table({"i": [1, 2, 3], "s": ["a", "b", "c"]}, schema=schema))
    (path,) = original = _adds(tmp_path, 1)
    table.delete("i = 2")
    with table.update_schema() as update:
        update.rename_column("i", "k")
    table.overwrite(pa.table({"k": [9], "s": ["z"]}))
    version = table.restore(2).version
    line = _adds(tmp_path, int(version))[path]
    new, old = _stats(line), _stats(original[path])
    assert new == {**old, "tightBounds": False}
    reopened = lakecore.open(str(tmp_path))
    assert reopened.schema.names == ["i", "s"]
    assert sorted(reopened.to_arrow().column("i").to_pylist()) == [1, 3]
    assert reopened.scan(where="i >= 3").to_arrow().num_rows == 1
    assert delta_rs_rows(tmp_path) == canonical(reopened.to_arrow())
