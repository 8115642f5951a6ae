"""Review attacks on the issue-13 Hudi writer (schema evolution, insert sizing, table version 9,
bloom filters, archiving, the storage path guard).

Bugs the review found were pinned here as ``xfail(strict=True)`` tests and have since been
fixed (markers removed): a commit archived while concurrent with a pending writer escaped its
conflict check (CoW lost update); a reader racing archiving got ``CorruptTableError``; v6 took
an old clean for the start of the timeline and hid files of archived commits; ``add_column``
took meta field names and case-only duplicates; ``small.file.limit=0`` was refused and a
malformed size threshold went unnamed; ``resolve`` let ``file:../x`` out of the root. The other
tests pin attacks that held. A new bug found here is added as a strict xfail.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lakecore_hudi import state as hudi_state
from lakecore_hudi.bloom import filter_from_footer
from lakecore_hudi.write import compaction
from lakecore_hudi.write.archive import archive_table

import lakecore
from lakecore.errors import CommitConflictError, CorruptTableError, SchemaError
from lakecore.storage import open_storage
from lakecore.table import Table
from lakecore.transaction import Transaction
from tests.hudi.write.archive_tables import archiving_table, set_properties
from tests.hudi.write.helpers import (
    SCHEMA,
    create,
    expected_rows,
    hudi_rs_rows,
    hudi_rs_table,
    lakecore_rows,
    model_of,
    rows,
)


def _upsert(table: Table, tx: Transaction, data: pa.Table) -> None:
    tx.stage(*table._format_writer(tx.snapshot).upsert(data))  # type: ignore[attr-defined]


def _data(table: pa.Table) -> list[dict[str, Any]]:
    keep = [c for c in table.column_names if not c.startswith("_hoodie_")]
    return sorted(
        table.select(keep).to_pylist(), key=lambda r: json.dumps(r, sort_keys=True, default=str)
    )


# ----------------------------------------------------------------------------- archiving


@pytest.mark.parametrize("version", ["8", "6"])
def test_archiving_never_hides_a_concurrent_commit_from_the_conflict_check(
    tmp_path: Path, version: str
) -> None:
    root = tmp_path / "t"
    archiving_table(root, version)  # keep.max.commits=3, keep.min.commits=2
    first = rows((1, "a", 1, "x"), (3, "c", 1, "x"), (2, "b", 1, "y"))
    lakecore.open(str(root)).append(first)
    model = model_of(first)
    t = lakecore.open(str(root))
    # x1 and x2 claim their instants before w; all three plan on the same snapshot.
    x1, x2, w = t.transaction(), t.transaction(), t.transaction()
    _upsert(t, x1, rows((1, "X1", 2, "x")))  # file group of partition x
    _upsert(t, x2, rows((2, "X2", 2, "y")))  # file group of partition y
    _upsert(t, w, rows((3, "W", 2, "x")))  # the same file group as x1
    x1.commit()
    x2.commit()
    model.update(model_of(rows((1, "X1", 2, "x"), (2, "X2", 2, "y"))))
    # Three more commits: archiving (after each) may now move x1 out of the active timeline
    # (w bounds it only at x2, "the last completed commit before the earliest pending write").
    for i in range(3):
        extra = rows((10 + i, "e", 1, f"z{i}"))
        lakecore.open(str(root)).append(extra)
        model.update(model_of(extra))
    try:
        w.commit()  # must conflict with x1 (both rewrote partition x's file group)
        model.update(model_of(rows((3, "W", 2, "x"))))
    except CommitConflictError:
        pass
    # Either w conflicted, or it carried x1's update over: x1's row is never lost.
    assert lakecore_rows(root) == expected_rows(model)
    assert hudi_rs_rows(root) == expected_rows(model)


@pytest.mark.parametrize("version", ["8", "6"])
def test_a_reader_racing_archiving_reads_the_table(
    tmp_path: Path, version: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "t"
    archiving_table(root, version, **{"hoodie.archive.automatic": "false"})
    for i in range(6):
        lakecore.open(str(root)).upsert(rows((i, "n", i, "x")))
    want = lakecore_rows(root)
    real = hudi_state.load_timeline
    archived: list[object] = []

    def listed_then_archived(storage: Any, config: Any) -> Any:
        timeline = real(storage, config)
        monkeypatch.setattr(hudi_state, "load_timeline", real)
        archived.append(archive_table(lakecore.open(str(root))).archived)
        return timeline

    monkeypatch.setattr(hudi_state, "load_timeline", listed_then_archived)
    got = lakecore_rows(root)
    assert archived and archived[0], "the race did not archive anything"
    assert got == want


def test_v6_files_of_archived_commits_after_an_old_clean_stay_visible(tmp_path: Path) -> None:
    root = tmp_path / "t"
    archiving_table(root, "6")  # keep 2..3 commits; cleans kept up to 3 by their own count

    def table() -> Table:
        return lakecore.open(str(root))

    table().append(rows((1, "a", 1, "x")))
    table().upsert(rows((1, "b", 2, "x")))
    assert table().clean(retain_commits=1)  # an early clean stays on the active timeline
    table().append(rows((2, "never touched again", 1, "y")))  # a file group of its own
    for i in range(3, 6):
        table().upsert(rows((1, f"v{i}", i, "x")))
    assert table().clean(retain_commits=1)  # moves the clean bound: the y commit archives
    for i in range(6, 8):
        table().upsert(rows((1, f"v{i}", i, "x")))
    model = model_of(rows((1, "v7", 7, "x"), (2, "never touched again", 1, "y")))
    assert hudi_rs_rows(root) == expected_rows(model)
    assert lakecore_rows(root) == expected_rows(model)
    table().upsert(rows((2, "updated", 9, "y")))
    model.update(model_of(rows((2, "updated", 9, "y"))))
    assert hudi_rs_rows(root) == expected_rows(model)  # one record per key


# ----------------------------------------------------------------------------- schema evolution


def test_adding_a_meta_field_column_is_refused(tmp_path: Path) -> None:
    t = create(tmp_path)
    t.append(rows((1, "a", 1, "x")))
    with pytest.raises(SchemaError), t.update_schema() as u:
        u.add_column("_hoodie_record_key", pa.string())


def test_a_column_differing_only_in_case_is_refused_or_read_alike(tmp_path: Path) -> None:
    t = create(tmp_path)
    t.append(rows((1, "a", 1, "x")))
    try:
        with t.update_schema() as u:
            u.add_column("ID", pa.string())
    except SchemaError:
        return
    assert _data(lakecore.open(str(tmp_path)).to_arrow()) == _data(hudi_rs_table(tmp_path))


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_widened_precombine_field_orders_and_compacts(tmp_path: Path, table_type: str) -> None:
    # Held: int -> double on the ordering field; old (int) and new (double) values compare.
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("v", pa.string()),
            pa.field("ts", pa.int32()),
        ]
    )
    props = {"record_key": "id", "precombine_field": "ts", "table_type": table_type}
    t = lakecore.create(str(tmp_path), schema, "hudi", [], props)
    t.append(pa.table({"id": [1, 2], "v": ["a", "b"], "ts": [5, 5]}, schema=schema))
    with t.update_schema() as u:
        u.widen_type("ts", pa.float64())
    t = lakecore.open(str(tmp_path))
    t.upsert(pa.table({"id": [1, 2], "v": ["lower", "higher"], "ts": [4.5, 5.5]}))
    want = [{"id": 1, "v": "a", "ts": 5.0}, {"id": 2, "v": "higher", "ts": 5.5}]
    assert _data(lakecore.open(str(tmp_path)).to_arrow()) == want
    assert _data(hudi_rs_table(tmp_path)) == want
    if table_type == "MERGE_ON_READ":
        assert lakecore.open(str(tmp_path)).compact() is not None
        assert _data(lakecore.open(str(tmp_path)).to_arrow()) == want
        assert _data(hudi_rs_table(tmp_path)) == want


@pytest.mark.parametrize("version", ["8", "6"])
def test_a_compaction_planned_before_a_schema_change_conflicts(
    tmp_path: Path, version: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Held: a compaction (old schema) completing after an ALTER_SCHEMA would record the old
    # schema last and hide the added column; it conflicts and is rolled back instead.
    create(tmp_path, "MERGE_ON_READ", version=version)
    lakecore.open(str(tmp_path)).append(rows((1, "a", 1, "x"), (2, "b", 1, "y")))
    lakecore.open(str(tmp_path)).upsert(rows((1, "a2", 2, "x")))
    real = compaction._compact_slice
    changed: list[bool] = []

    def schema_changes_meanwhile(*args: Any, **kwargs: Any) -> Any:
        if not changed:
            changed.append(True)
            with lakecore.open(str(tmp_path)).update_schema() as u:
                u.add_column("extra", pa.string())
        return real(*args, **kwargs)

    monkeypatch.setattr(compaction, "_compact_slice", schema_changes_meanwhile)
    with pytest.raises(CommitConflictError):
        lakecore.open(str(tmp_path)).compact()
    monkeypatch.setattr(compaction, "_compact_slice", real)
    assert changed
    want = [
        {"id": 1, "name": "a2", "ts": 2, "city": "x", "extra": None},
        {"id": 2, "name": "b", "ts": 1, "city": "y", "extra": None},
    ]
    assert _data(lakecore.open(str(tmp_path)).to_arrow()) == want
    assert _data(hudi_rs_table(tmp_path)) == want
    assert lakecore.open(str(tmp_path)).compact() is not None  # the next one folds the logs
    assert "extra" in lakecore.open(str(tmp_path)).schema.names
    assert _data(hudi_rs_table(tmp_path)) == want


# ----------------------------------------------------------------------------- insert sizing


def test_small_file_limit_zero_is_accepted(tmp_path: Path) -> None:
    create(tmp_path)
    set_properties(tmp_path, {"hoodie.parquet.small.file.limit": "0"})
    lakecore.open(str(tmp_path)).append(rows((1, "a", 1, "x"), (2, "b", 1, "x")))
    assert lakecore.open(str(tmp_path)).count() == 2


def test_malformed_size_threshold_names_the_property(tmp_path: Path) -> None:
    create(tmp_path)
    set_properties(tmp_path, {"hoodie.record.size.estimation.threshold": "abc"})
    with pytest.raises(CorruptTableError, match=r"hoodie\.record\.size\.estimation\.threshold"):
        lakecore.open(str(tmp_path)).append(rows((1, "a", 1, "x")))


# ----------------------------------------------------------------------------- bloom filters


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_upserts_find_non_ascii_keys_across_sized_file_groups(
    tmp_path: Path, table_type: str
) -> None:
    # Held: keys whose Java (UTF-16) order differs from UTF-8 order, spread over several file
    # groups by a small max file size, are each found by the bloom/range pruning.
    keys = ["a", "\uf000", "\U0001f600", "\uffff", "é", "\u4e2d", "z", "\U00010000x", "\ue000"]
    keys += [" ", "a,b", "k:v"]
    schema = pa.schema(
        [
            pa.field("k", pa.string(), nullable=False),
            pa.field("v", pa.string()),
            pa.field("ts", pa.int64()),
        ]
    )
    props = {"record_key": "k", "precombine_field": "ts", "table_type": table_type}
    lakecore.create(str(tmp_path), schema, "hudi", [], props)
    set_properties(tmp_path, {"hoodie.parquet.max.file.size": "3000"})
    n = len(keys)
    lakecore.open(str(tmp_path)).append(
        pa.table({"k": keys, "v": ["old"] * n, "ts": [1] * n}, schema=schema)
    )
    assert len(list(tmp_path.rglob("*.parquet"))) > 3
    lakecore.open(str(tmp_path)).upsert(pa.table({"k": keys, "v": ["new"] * n, "ts": [2] * n}))
    want = sorted((k, "new") for k in keys)
    got = lakecore.open(str(tmp_path)).to_arrow(columns=["k", "v"]).to_pylist()
    assert sorted((r["k"], r["v"]) for r in got) == want
    theirs = hudi_rs_table(tmp_path).select(["k", "v"]).to_pylist()
    assert sorted((r["k"], r["v"]) for r in theirs) == want


def test_bloom_filter_of_a_file_with_more_keys_than_its_max_entries(tmp_path: Path) -> None:
    # Held: a dynamic filter past 100,000 entries still has no false negative.
    create(tmp_path, partitioned=False)
    set_properties(tmp_path, {"hoodie.parquet.max.file.size": str(2**31)})
    n = 120_000
    data = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "name": ["a"] * n,
            "ts": [1] * n,
            "city": ["x"] * n,
        },
        schema=SCHEMA,
    )
    lakecore.open(str(tmp_path)).append(data)
    (path,) = tmp_path.rglob("*.parquet")
    metadata = pq.read_metadata(path).metadata
    assert metadata is not None
    bloom = filter_from_footer(metadata, str(path))
    assert bloom is not None
    assert bool(bloom.might_contain(pa.array([str(i) for i in range(n)])).all())


# ----------------------------------------------------------------------------- path guard


@pytest.mark.parametrize("path", ["file:../x", "file:%2e%2e/x", "file:a/../../x"])
def test_resolve_never_leaves_the_root_through_a_relative_file_uri(
    tmp_path: Path, path: str
) -> None:
    storage = open_storage(str(tmp_path / "t"))
    try:
        resolved = storage.resolve(path)
    except lakecore.errors.InvalidArgumentError:
        return
    assert Path(resolved).resolve().is_relative_to((tmp_path / "t").resolve())
