"""Upserts, merges and keyed deletes locate file groups by key range and bloom filter (issue 13).

The table has many file groups whose key ranges all overlap (group ``g`` holds the ids
``g, g + GROUPS, g + 2 * GROUPS, ...``), so neither the id column's statistics nor the footers'
key ranges can prune: only the bloom filters can. A group counts as *read* when bytes before its
base file's footer (its data pages) were read, or anything out of its log files; footer reads
(the file index's statistics, the key lookup's range and filter) do not count. After each
write, lakecore and hudi-rs read the rows of a Python model.
"""

from __future__ import annotations

import collections
import os
import shutil
from pathlib import Path
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lakecore_hudi.write.candidates import keys_pinned_by, slices_for_keys

import lakecore
from lakecore.planning.candidates import dml_predicate
from lakecore.storage import Storage, open_storage
from lakecore.testing.faults import CountingStorage
from tests.hudi.write.archive_tables import set_properties
from tests.hudi.write.helpers import Row, assert_reads, create, model_of, rows, upsert

GROUPS = 8
COMPLEX = "org.apache.hudi.keygen.ComplexKeyGenerator"
PER_GROUP = 30


def _file_id(path: str) -> str:
    return os.path.basename(path).lstrip(".").split("_")[0]


class RangeStorage(CountingStorage):
    """A CountingStorage that also records which byte ranges of each file were read."""

    def __init__(self, inner: Storage) -> None:
        super().__init__(inner)
        self.ranges: dict[str, list[tuple[int, int]]] = collections.defaultdict(list)

    def open_input(self, path: str) -> BinaryIO:
        return _Ranged(super().open_input(path), self.ranges[path])  # type: ignore[return-value]

    def read(self, path: str, start: int | None = None, end: int | None = None) -> bytes:
        data = super().read(path, start, end)
        self.ranges[path].append((start or 0, len(data)))
        return data

    def reset(self) -> None:
        super().reset()
        self.ranges.clear()


class _Ranged:
    def __init__(self, f: BinaryIO, sink: list[tuple[int, int]]) -> None:
        self._f, self._sink = f, sink

    def read(self, n: int = -1) -> bytes:
        at = self._f.tell()
        data = self._f.read(n)
        self._sink.append((at, len(data)))
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._f, name)

    def __enter__(self) -> _Ranged:
        return self

    def __exit__(self, *exc: object) -> None:
        self._f.close()


def _data_end(root: Path, path: str) -> int:
    """Where the footer of Parquet file ``path`` starts (data pages lie before it)."""
    raw = (root / path).read_bytes()
    return len(raw) - 8 - int.from_bytes(raw[-8:-4], "little")


def groups_read(storage: RangeStorage, root: Path) -> set[str]:
    """File ids of the groups whose base-file data pages (not only the footer) or log files
    were read."""
    out = set()
    for path, spans in list(storage.ranges.items()):
        name = os.path.basename(path)
        if path.endswith(".parquet"):
            end = _data_end(root, path)
            if any(start < end and start + n > 4 for start, n in spans):
                out.add(_file_id(path))
        elif ".log." in name:
            out.add(_file_id(path))
    return out


def footers_looked_up(storage: RangeStorage, root: Path) -> int:
    """How many base files had their footer read."""
    return sum(
        1
        for path, spans in list(storage.ranges.items())
        if path.endswith(".parquet") and any(s >= _data_end(root, path) for s, _ in spans)
    )


def groups_of(root: Path) -> dict[int, str]:
    """id -> file id of the group holding it."""
    table = lakecore.open(str(root)).to_arrow(columns=["id", "_hoodie_file_name"])
    pairs = list(zip(*table.to_pydict().values(), strict=True))
    assert len({i for i, _ in pairs}) == len(pairs)
    return {i: _file_id(name) for i, name in pairs}


def group_of(root: Path, key: int) -> str:
    return groups_of(root)[key]


def _initial() -> list[pa.Table]:
    return [
        rows(*[(g + GROUPS * j, f"g{g}-{j}", 1, "c") for j in range(PER_GROUP)])
        for g in range(GROUPS)
    ]


@pytest.fixture(scope="module", params=["COPY_ON_WRITE", "MERGE_ON_READ"])
def template(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("groups") / "t"
    table = create(root, request.param, partitioned=False)
    for part in _initial():
        table.append(part)
    return root


@pytest.fixture
def table_copy(template: Path, tmp_path: Path) -> tuple[Path, RangeStorage, dict[int, Row]]:
    root = tmp_path / "t"
    shutil.copytree(template, root)
    model = model_of(pa.concat_tables(_initial()))
    return root, RangeStorage(open_storage(str(root))), model


def _open(root: Path, storage: RangeStorage) -> lakecore.Table:
    return lakecore.open(str(root), storage=storage)


def test_upsert_reads_only_the_groups_holding_its_keys(table_copy: tuple) -> None:  # type: ignore[type-arg]
    root, storage, model = table_copy
    hit = {3, 7 + GROUPS}  # groups 3 and 7
    want = {group_of(root, k) for k in hit}
    data = rows(
        (3, "u3", 2, "c"), (7 + GROUPS, "u19", 2, "c"), *[(1000 + i, "n", 1, "c") for i in range(3)]
    )
    table = _open(root, storage)
    assert lakecore.open(str(root)).snapshot().files().num_rows == GROUPS
    storage.reset()
    upsert(table, data)
    assert groups_read(storage, root) == want
    model.update(model_of(data))
    assert_reads(root, model)


def test_merge_reads_only_the_groups_holding_its_keys(table_copy: tuple) -> None:  # type: ignore[type-arg]
    root, storage, model = table_copy
    source = rows((5, "m5", 3, "c"), (2000, "new", 1, "c"))
    want = {group_of(root, 5)}
    table = _open(root, storage)
    storage.reset()
    table.merge(source, on="id").when_matched_update_all().when_not_matched_insert_all().execute()
    assert groups_read(storage, root) == want
    model.update(model_of(source))
    assert_reads(root, model)


def test_new_keys_only_read_no_group(table_copy: tuple) -> None:  # type: ignore[type-arg]
    root, storage, model = table_copy
    data = rows(*[(5000 + i, "n", 1, "c") for i in range(20)])
    table = _open(root, storage)
    storage.reset()
    upsert(table, data)
    assert groups_read(storage, root) == set()
    assert footers_looked_up(storage, root) == GROUPS
    model.update(model_of(data))
    assert_reads(root, model)


def test_delete_and_update_by_key_read_only_the_holders(table_copy: tuple) -> None:  # type: ignore[type-arg]
    root, storage, model = table_copy
    holder = groups_of(root)
    table = _open(root, storage)
    storage.reset()
    table.delete(f"id = 3 OR id IN (19, {19 + GROUPS}, 99999)")
    assert groups_read(storage, root) == {holder[3], holder[19]}
    for key in (3, 19, 19 + GROUPS):
        del model[key]
    # On MoR the delete wrote log files: those slices are always read from now on.
    logged = {_file_id(p.name) for p in root.iterdir() if ".log." in p.name}
    assert logged == (set() if not logged else {holder[3], holder[19]})
    storage.reset()
    _open(root, storage).update({"name": "'upd'"}, "id = 5 AND ts = 1")
    assert groups_read(storage, root) == {holder[5]} | logged
    model[5] = {**model[5], "name": "upd"}
    assert_reads(root, model)


def test_groups_without_a_filter_or_with_logs_are_always_read(table_copy: tuple) -> None:  # type: ignore[type-arg]
    root, storage, model = table_copy
    # Another writer's base file without bloom metadata (same rows; the file is rewritten).
    bare = group_of(root, 4)
    path = next(p for p in root.glob("*.parquet") if p.name.startswith(bare))
    pq.write_table(pq.read_table(path).replace_schema_metadata(None), path)
    assert b"org.apache.hudi.bloomfilter" not in (pq.read_metadata(path).metadata or {})
    first = rows((6, "u6", 2, "c"))
    upsert(_open(root, storage), first)
    model.update(model_of(first))
    mor = any(".log." in p.name for p in root.iterdir())
    storage.reset()
    second = rows((8, "u8", 2, "c"))
    upsert(_open(root, storage), second)
    model.update(model_of(second))
    # Group 6 got log files on MoR: its log records are covered by no filter.
    logged = {group_of(root, 6)} if mor else set()
    assert groups_read(storage, root) == {group_of(root, 8), bare} | logged
    assert_reads(root, model)


@pytest.mark.parametrize("template", ["COPY_ON_WRITE"], indirect=True)
def test_slices_for_keys_is_a_superset_of_the_holders(table_copy: tuple) -> None:  # type: ignore[type-arg]
    """Every key of the table, asked alone, is located in exactly its own group."""
    root, _, _ = table_copy
    snapshot = lakecore.open(str(root)).snapshot()
    state = snapshot.source.state  # type: ignore[attr-defined]
    holder = groups_of(root)
    checked = 0
    for key in range(0, GROUPS * PER_GROUP, 37):
        found = slices_for_keys(snapshot, rows((key, "x", 1, "c")), ["id"], "SIMPLE")
        assert [state.slices[i].file_id for i in found] == [holder[key]]
        checked += 1
    assert checked == len(range(0, GROUPS * PER_GROUP, 37)) == 7


@pytest.mark.parametrize("template", ["COPY_ON_WRITE"], indirect=True)
def test_only_predicates_pinning_the_key_to_literals_give_keys(table_copy: tuple) -> None:  # type: ignore[type-arg]
    root, _, _ = table_copy
    snapshot = lakecore.open(str(root)).snapshot()
    state = snapshot.source.state  # type: ignore[attr-defined]
    cases = {
        "id = 5": ["5"],
        "id = 5.0": ["5"],  # bound to the integer 5
        "id IN (2, 1, NULL)": ["1", "2"],
        "id = 1 OR id IN (3)": ["1", "3"],
        "id = 7 AND name = 'x'": ["7"],
        "id = 5.5": None,  # not a literal of the key's type: no key text to look up
        "id = 1 OR name = 'x'": None,
        "id > 5": None,
        "name = 'x'": None,
        "NOT id = 5": None,
    }
    for sql, want in cases.items():
        keys = keys_pinned_by(dml_predicate(sql, snapshot.schema), state, snapshot.schema)
        assert (None if keys is None else keys.to_pylist()) == want, sql
    assert len(cases) == 10


def test_one_complex_key_field_finds_either_rendering(tmp_path: Path) -> None:
    """COMPLEX over one field: lakecore's rows store the bare value (HUDI-7001 encoding);
    a merge and a delete by key must still find their groups."""
    root = tmp_path / "t"
    table = create(root, partitioned=False)
    for part in _initial()[:4]:
        table.append(part)
    set_properties(
        root,
        {"hoodie.table.keygenerator.class": COMPLEX, "hoodie.table.keygenerator.type": "COMPLEX"},
    )
    snapshot = lakecore.open(str(root)).snapshot()
    state = snapshot.source.state  # type: ignore[attr-defined]
    assert state.config.keygen_type == "COMPLEX"
    holder = groups_of(root)
    found = slices_for_keys(snapshot, rows((2, "x", 1, "c")), ["id"], "COMPLEX")
    assert [state.slices[i].file_id for i in found] == [holder[2]]
    keys = keys_pinned_by(dml_predicate("id = 2", snapshot.schema), state, snapshot.schema)
    assert keys is not None and keys.to_pylist() == ["2", "id:2"]
    model = model_of(pa.concat_tables(_initial()[:4]))
    source = rows((2, "m2", 3, "c"), (7000, "new", 1, "c"))
    lakecore.open(str(root)).merge(
        source, on="id"
    ).when_matched_update_all().when_not_matched_insert_all().execute()
    lakecore.open(str(root)).delete(f"id = {3 + GROUPS}")
    model.update(model_of(source))
    del model[3 + GROUPS]
    assert_reads(root, model)
