"""Session-12 attack review of the Lance plugin and of migration between formats.

Hostile manifests (paths out of the dataset, mis-numbered versions, deletion files naming rows
past their fragment), vacuum against unusual path spellings, pylance-written sources with every
kind of delete migrated with history to every target, a migration that stops at a corrupt
source version and resumes, and deterministic races between lakecore and pylance writers.
pylance is the reference reader and writer; deltalake and hudi-rs read the other targets.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lakecore
from lakecore.errors import CommitConflictError, CorruptTableError
from tests.lance.helpers import assert_same_as_pylance, lance, rewrite_manifest, sort_rows
from tests.migrate.test_history import engine_rows, sorted_rows, source_rows


def _dataset(path: Path, n: int = 10) -> None:
    """A pylance dataset of ``n`` rows (``id``, ``s``) in one fragment: version 1."""
    data = pa.table({"id": pa.array(range(n), pa.int64()), "s": [f"r{i}" for i in range(n)]})
    lance.write_dataset(data, str(path))


def _latest_manifest(path: Path) -> Path:
    """The newest manifest file (V2 naming: the first name in sorted order)."""
    return sorted((path / "_versions").glob("*.manifest"))[0]


def _edit_latest(path: Path, edit: Callable[[Any], None]) -> None:
    """Apply ``edit`` to the newest manifest. The inlined transaction section is dropped:
    ``rewrite_manifest`` re-frames the message alone, so its offset would point nowhere."""

    def apply(m: Any) -> None:
        m.ClearField("transaction_section")
        edit(m)

    rewrite_manifest(_latest_manifest(path), apply)


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


# --- data and transaction file paths out of the dataset ---------------------------------------

ESCAPES: dict[str, Callable[[Path], str]] = {
    # Each names a valid copy of the dataset's own data file lying OUTSIDE the dataset: if
    # lakecore followed the path, the read would succeed with its rows.
    "absolute": lambda outside: str(outside),
    "file-uri": lambda outside: f"file://{outside}",
    "file-localhost": lambda outside: f"file://localhost{outside}",
    "network-path": lambda outside: f"/{outside}",
    "dot-dot": lambda outside: f"../../{outside.name}",
    "dot-dot-nested": lambda outside: f"x/../../../{outside.name}",
}


@pytest.mark.parametrize("case", sorted(ESCAPES))
def test_data_file_paths_never_read_a_file_outside_the_dataset(tmp_path: Path, case: str) -> None:
    """A manifest naming a data file outside the dataset (absolute, ``file:``, ``//``,
    ``..``) reads no row from it: ``CorruptTableError``, and nothing outside changes. Holds."""
    path = tmp_path / "t"
    _dataset(path)
    (data_file,) = (path / "data").iterdir()
    outside = tmp_path / "outside.lance"
    shutil.copy(data_file, outside)
    _edit_latest(path, lambda m: setattr(m.fragments[0].files[0], "path", ESCAPES[case](outside)))
    before = outside.read_bytes()
    with pytest.raises(CorruptTableError):
        lakecore.open(str(path)).to_arrow()
    assert outside.read_bytes() == before


def test_escape_cases_ran() -> None:
    assert len(ESCAPES) == 6


def test_a_transaction_file_name_leading_out_of_the_dataset_is_corrupt(tmp_path: Path) -> None:
    """Fixed in f263e98; was: ``history()`` of a manifest whose ``transaction_file`` is
    ``../../x.txn`` raised ``InvalidArgumentError`` from the storage layer (as if the user had
    passed a bad argument) instead of ``CorruptTableError`` naming the manifest."""
    path = tmp_path / "t"
    _dataset(path)
    (tmp_path / "x.txn").write_bytes(b"")
    _edit_latest(path, lambda m: setattr(m, "transaction_file", "../../x.txn"))
    with pytest.raises(CorruptTableError, match=r"manifest.*x\.txn"):
        lakecore.open(str(path)).history()


def test_an_absolute_transaction_file_name_reads_nothing_outside(tmp_path: Path) -> None:
    """``transaction_file`` ``/abs/x.txn`` (a real transaction outside) is read under
    ``_transactions/`` only: the operation stays unknown. Holds."""
    path = tmp_path / "t"
    _dataset(path)
    (txn,) = (path / "_transactions").iterdir()
    outside = tmp_path / "elsewhere.txn"
    shutil.copy(txn, outside)
    _edit_latest(path, lambda m: setattr(m, "transaction_file", str(outside)))
    (entry,) = lakecore.open(str(path)).history()
    assert entry.operation is None


# --- vacuum against path spellings -------------------------------------------------------------

SPELLINGS = {"dot": "./{}", "dot-dot": "sub/../{}", "double-slash": "/{}"}


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_vacuum_keeps_data_files_the_latest_version_names_otherwise_spelt(
    tmp_path: Path, spelling: str
) -> None:
    """Fixed in fccd019; was: vacuum compared the manifest's raw ``data/{path}`` with the
    listing, so a kept version naming its file ``./x.lance`` (which lakecore reads as
    ``data/x.lance``) lost that file: the latest version became unreadable."""
    path = tmp_path / "t"
    _dataset(path)
    lance.dataset(str(path)).delete("id < 3")
    lance.write_dataset(pa.table({"id": [100], "s": ["n"]}), str(path), mode="append")

    def respell(m: Any) -> None:
        for fragment in m.fragments:
            for f in fragment.files:
                f.path = SPELLINGS[spelling].format(f.path)

    _edit_latest(path, respell)
    table = lakecore.open(str(path))
    want = sort_rows(table.to_arrow())
    assert want.num_rows == 8
    removed = table.vacuum(retention_hours=0, enforce_retention=False, dry_run=False)
    assert not [p for p in removed if p.startswith("data/")]
    assert sort_rows(lakecore.open(str(path)).to_arrow()).equals(want)


# --- deletion files naming rows past their fragment -------------------------------------------


def _corrupt_deletions(path: Path, offsets: list[int]) -> None:
    """Version 2 deletes ``id = 3``; its deletion file is then made to hold ``offsets``."""
    lance.dataset(str(path)).delete("id = 3")
    (f,) = (path / "_deletions").glob("*.arrow")
    table = pa.table({"row_id": pa.array(offsets, pa.uint32())})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    f.write_bytes(sink.getvalue().to_pybytes())


def _merge(t: Any) -> Any:
    source = pa.table({"id": pa.array([5, 50], pa.int64()), "s": ["m", "n"]})
    return t.merge(source, on="id").when_matched_update_all().when_not_matched_insert_all()


OPERATIONS: dict[str, Callable[[Any], Any]] = {
    "read": lambda t: t.to_arrow(),
    "delete": lambda t: t.delete("id = 5"),
    "update": lambda t: t.update({"s": "'u'"}, where="id = 5"),
    "merge": lambda t: _merge(t).execute(),
    "optimize": lambda t: t.optimize(),
    "changes": lambda t: t.changes(1, 2),
    "migrate": lambda t: lakecore.migrate(t.uri, t.uri + "_delta", to="delta", history=True),
}


@pytest.mark.parametrize("op", sorted(OPERATIONS))
def test_a_deletion_file_naming_rows_past_its_fragment_is_corrupt_everywhere(
    tmp_path: Path, op: str
) -> None:
    """Fixed in a5b377b; was: only reads checked the offsets. ``delete``, ``update``,
    ``merge`` and ``optimize`` committed on top of a deletion file naming row 100 of a 10-row
    fragment (optimize silently dropping the corrupt file, the others carrying it into the
    new one), and ``changes`` failed with ``InvalidArgumentError`` wrapping Arrow's
    ``ArrowIndexError``. Now every one raises ``CorruptTableError`` and commits nothing."""
    path = tmp_path / "t"
    _dataset(path)
    _corrupt_deletions(path, [3, 100])
    before = _tree(path)
    with pytest.raises(CorruptTableError, match="100"):
        OPERATIONS[op](lakecore.open(str(path)))
    assert _tree(path) == before


def test_deletion_offset_cases_ran() -> None:
    assert len(OPERATIONS) == 7


def test_out_of_range_deletions_never_drop_a_fragment_with_live_rows(tmp_path: Path) -> None:
    """Fixed in a5b377b; was: a deletion file holding 9 offsets past a 10-row fragment
    made ``delete("id = 5")`` count 10 deleted rows, so the writer dropped the fragment from
    the manifest: 9 live rows vanished in a successful commit."""
    path = tmp_path / "t"
    _dataset(path)
    _corrupt_deletions(path, list(range(100, 109)))
    with pytest.raises(CorruptTableError):
        lakecore.open(str(path)).delete("id = 5")
    assert [v["version"] for v in lance.dataset(str(path)).versions()] == [1, 2]


# --- two fragments sharing an id ---------------------------------------------------------------

DUPLICATE_ID_OPERATIONS: dict[str, Callable[[Any], Any]] = {
    "delete": lambda t: t.delete("id = 15"),
    "update": lambda t: t.update({"id": "id + 100"}, where="id = 15"),
    "merge": lambda t: _merge(t).execute(),
    "optimize": lambda t: t.optimize(),
    "append": lambda t: t.append(pa.table({"id": pa.array([99], pa.int64()), "s": ["x"]})),
    "add_column": lambda t: _add_column(t),
    "changes": lambda t: t.changes(1),
}


def _add_column(t: Any) -> None:
    with t.update_schema() as s:
        s.add_column("e", pa.string())


@pytest.mark.parametrize("op", sorted(DUPLICATE_ID_OPERATIONS))
def test_fragments_sharing_an_id_are_refused_by_whatever_matches_by_id(
    tmp_path: Path, op: str
) -> None:
    """Fixed in 18cd291; was: a manifest listing two fragments with id 0 (rows 0-9 and
    10-19; pylance and lakecore read all 20) took ``delete("id = 15")`` by replacing the
    first fragment with a marked copy of the second: rows 0-9 were gone and 10-19 doubled,
    in a successful commit (``update`` and ``optimize`` alike). Reads stay as pylance's."""
    path = tmp_path / "t"
    data = pa.table({"id": pa.array(range(20), pa.int64()), "s": ["r"] * 20})
    lance.write_dataset(data, str(path), max_rows_per_file=10)
    _edit_latest(path, lambda m: setattr(m.fragments[1], "id", 0))
    table = lakecore.open(str(path))
    assert sort_rows(table.to_arrow()).equals(sort_rows(lance.dataset(str(path)).to_table()))
    before = _tree(path)
    with pytest.raises(CorruptTableError, match=r"fragment ids \[0\]"):
        DUPLICATE_ID_OPERATIONS[op](table)
    assert _tree(path) == before


def test_duplicate_id_cases_ran() -> None:
    assert len(DUPLICATE_ID_OPERATIONS) == 7


# --- column names Lance refuses ------------------------------------------------------------------

DOTTED: dict[str, Callable[[Path], Any]] = {
    "create": lambda root: lakecore.create(
        str(root / "t"), pa.schema([("id", pa.int64()), ("a.b", pa.string())]), format="lance"
    ),
    "add_column": lambda root: _schema_change(root, lambda s: s.add_column("p.q", pa.string())),
    "rename_column": lambda root: _schema_change(root, lambda s: s.rename_column("s", "x.y")),
    "append_to_a_crafted_dataset": lambda root: _append_dotted(root),
    "migrate": lambda root: _migrate_dotted(root),
}


def _schema_change(root: Path, change: Callable[[Any], Any]) -> None:
    table = lakecore.create(
        str(root / "t"), pa.schema([("id", pa.int64()), ("s", pa.string())]), format="lance"
    )
    with table.update_schema() as s:
        change(s)


def _append_dotted(root: Path) -> None:
    _dataset(root / "t")
    _edit_latest(root / "t", lambda m: setattr(m.fields[1], "name", "a.b"))
    assert lakecore.open(str(root / "t")).to_arrow().column_names == ["id", "a.b"]
    lakecore.open(str(root / "t")).append(pa.table({"id": pa.array([2], pa.int64()), "a.b": ["y"]}))


def _migrate_dotted(root: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("a.b", pa.string())])
    props = {"delta.columnMapping.mode": "name"}
    src = lakecore.create(str(root / "delta"), schema, "delta", properties=props)
    src.append(pa.table({"id": pa.array([1], pa.int64()), "a.b": ["x"]}, schema=schema))
    lakecore.migrate(str(root / "delta"), str(root / "t"), to="lance")


@pytest.mark.parametrize("case", sorted(DOTTED))
def test_a_top_level_column_name_with_a_dot_is_a_schema_error(tmp_path: Path, case: str) -> None:
    """Fixed in 1f252a3; was: ``lakecore.create(..., format="lance")`` of a column ``a.b``
    (and ``add_column``/``rename_column`` to such a name) succeeded, and every append then
    failed with pylance's raw ``RuntimeError`` ("Top level field a.b cannot contain `.`"):
    no ``LakecoreError``, and a dataset that could never take a row. Now ``SchemaError``
    (``MigrationError`` naming the column for a migration), before anything is written."""
    from lakecore.errors import MigrationError, SchemaError

    error = MigrationError if case == "migrate" else SchemaError
    with pytest.raises(error, match=r"a\.b|p\.q|x\.y"):
        DOTTED[case](tmp_path)
    if case in ("create", "migrate"):
        assert not (tmp_path / "t").exists()
    else:  # nothing committed, no data file left behind
        assert lakecore.open(str(tmp_path / "t")).version == 1
        written = list((tmp_path / "t" / "data").glob("*"))
        assert len(written) == (1 if case == "append_to_a_crafted_dataset" else 0)


def test_dotted_cases_ran() -> None:
    assert len(DOTTED) == 5


def test_a_struct_repeating_a_field_name_is_a_schema_error(tmp_path: Path) -> None:
    """Fixed in f99e2f2; was: ``lakecore.create`` of a struct with two children named
    ``x`` wrote a dataset (as pylance's own writer does) that pylance cannot read back
    ("TakeExec requires the input plan to have a column named '_rowaddr'")."""
    from lakecore.errors import SchemaError

    struct = pa.struct([("x", pa.int64()), ("x", pa.string())])
    schema = pa.schema([("id", pa.int64()), ("s", struct)])
    with pytest.raises(SchemaError, match=r"'s'.*\['x'\]"):
        lakecore.create(str(tmp_path / "t"), schema, format="lance")
    assert not (tmp_path / "t").exists()


ODD_SCHEMAS = {
    "names-differing-in-case": pa.schema(
        [("id", pa.int64()), ("A", pa.string()), ("a", pa.int32())]
    ),
    "empty-struct": pa.schema([("id", pa.int64()), ("s", pa.struct([]))]),
    "null-type": pa.schema([("id", pa.int64()), ("n", pa.null())]),
    "dotted-nested-names": pa.schema(
        [
            ("id", pa.int64()),
            ("s", pa.struct([("x.y", pa.list_(pa.struct([("q.r", pa.string())])))])),
        ]
    ),
}


@pytest.mark.parametrize("case", sorted(ODD_SCHEMAS))
def test_odd_but_valid_schemas_read_back_in_pylance(tmp_path: Path, case: str) -> None:
    """Holds: schemas at the edge of what Lance takes, written by lakecore (create, append,
    delete), read by pylance as lakecore reads them at every version."""
    schema = ODD_SCHEMAS[case]
    table = lakecore.create(str(tmp_path / "t"), schema, format="lance")
    arrays = [pa.array([1, 2], pa.int64())] + [pa.nulls(2, f.type) for f in list(schema)[1:]]
    table.append(pa.Table.from_arrays(arrays, schema=schema))
    table.delete("id = 1")
    assert assert_same_as_pylance(tmp_path / "t") == 3


def test_odd_schema_cases_ran() -> None:
    assert len(ODD_SCHEMAS) == 4


# --- a manifest whose content names another version -------------------------------------------


def test_a_manifest_claiming_another_version_is_refused_by_writers(tmp_path: Path) -> None:
    """Fixed in 4d2f69c; was: the latest manifest (file name: version 3) saying it is
    version 1 made every lakecore write number its manifest 2, find that name taken, rebase
    and retry until the commit loop gave up after 256 attempts with a
    ``CommitConflictError`` blaming "other writers". Reads still follow the file names."""
    path = tmp_path / "t"
    _dataset(path, 2)
    lance.write_dataset(pa.table({"id": [3], "s": ["c"]}), str(path), mode="append")
    lance.write_dataset(pa.table({"id": [4], "s": ["d"]}), str(path), mode="append")
    _edit_latest(path, lambda m: setattr(m, "version", 1))
    table = lakecore.open(str(path))
    assert table.version == 3 and table.to_arrow().num_rows == 4
    before = _tree(path)
    with pytest.raises(CorruptTableError, match="version 1"):
        table.append(pa.table({"id": [9], "s": ["x"]}))
    assert _tree(path) == before


# --- migration of pylance-written sources, every delete kind, every version -------------------


def _pylance_source(path: Path) -> int:
    """A pylance dataset holding every delete Lance has; returns its number of versions.

    Two fragments (8,000 + 4,000 rows, nulls and a nested struct with a list); an Arrow
    deletion file (10 rows), a roaring-bitmap one (6,000 rows: pylance writes ``.bin`` from
    5,000), a delete of every row of the second fragment (dropped from the manifest), an
    append, a compaction, a restore of an older version, a ``merge_insert`` (matching live
    and deleted keys) and a last delete.
    """

    def rows(lo: int, hi: int, tag: str) -> pa.Table:
        return pa.table(
            {
                "id": pa.array(range(lo, hi), pa.int64()),
                "s": [f"{tag}{i}" if i % 7 else None for i in range(lo, hi)],
                "n": [{"x": i, "y": [i, None]} if i % 5 else None for i in range(lo, hi)],
            }
        )

    lance.write_dataset(rows(0, 12000, "a"), str(path), max_rows_per_file=8000)
    lance.dataset(str(path)).delete("id < 10")
    lance.dataset(str(path)).delete("id >= 10 and id < 6000")
    lance.dataset(str(path)).delete("id >= 8000")
    lance.write_dataset(rows(10000, 10005, "b"), str(path), mode="append")
    lance.dataset(str(path)).optimize.compact_files()
    lance.dataset(str(path)).checkout_version(3).restore()
    merge = lance.dataset(str(path)).merge_insert("id")
    merge.when_matched_update_all().when_not_matched_insert_all().execute(rows(5998, 6003, "m"))
    lance.dataset(str(path)).delete("id = 7999")
    return len(lance.dataset(str(path)).versions())


@pytest.mark.parametrize(
    "to",
    [
        "delta",
        pytest.param("hudi", marks=pytest.mark.slow),
        pytest.param("lance", marks=pytest.mark.slow),
    ],
)
def test_a_pylance_source_with_every_delete_kind_migrates_every_version(
    tmp_path: Path, to: str
) -> None:
    """Holds: each source version read by lakecore equals pylance's read, and the target
    engine's read of the target version holding it (deltalake, hudi-rs, pylance) equals it:
    no deleted row comes back after a compaction or a restore, none is lost."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    versions = _pylance_source(src)
    kinds = {p.suffix for p in (src / "_deletions").iterdir()}
    assert kinds == {".arrow", ".bin"}
    report = lakecore.migrate(str(src), str(dst), to=to, history=True)
    assert [sv for sv, _ in report.versions] == list(range(1, versions + 1))
    target = lakecore.open(str(dst), format=to)
    compared = 0
    for sv, tv in report.versions:
        want = source_rows(src, sv)
        assert sorted_rows(lance.dataset(str(src), version=sv).to_table()) == want, sv
        assert engine_rows(to, dst, tv) == want, (sv, tv)
        assert sorted_rows(target.to_arrow(version=tv)) == want, (sv, tv)
        compared += 1
    assert compared == versions == 10
    assert report.deletes_carried > 0


def test_a_migration_stopped_by_a_corrupt_source_version_resumes(tmp_path: Path) -> None:
    """Holds: a source whose last version's deletion file is corrupt stops ``migrate`` with
    ``CorruptTableError``; the target is absent or holds a prefix of source versions, each
    equal to the source's rows, and a re-run after the file is repaired carries the rest."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    _dataset(src)
    lance.write_dataset(
        pa.table({"id": pa.array(range(10, 20), pa.int64()), "s": ["x"] * 10}),
        str(src),
        mode="append",
    )
    lance.dataset(str(src)).delete("id = 15")
    lance.dataset(str(src)).delete("id = 2")  # version 4: the only one naming this file
    (last,) = [p for p in (src / "_deletions").iterdir() if p.name.startswith("0-")]
    good = last.read_bytes()
    _corrupt_deletions_file(last, [2, 50])
    with pytest.raises(CorruptTableError):
        lakecore.migrate(str(src), str(dst), to="delta", history=True)
    held = lakecore.open(str(dst), format="delta")
    assert held.version == 3  # source versions 1-3, one commit each, then the stop
    for entry in held.history():
        meta = entry.app_metadata or {}
        assert meta.get("lakecore.migration.source_version") == (
            None if entry.version == 0 else str(entry.version)
        )
        if entry.version:
            assert engine_rows("delta", dst, entry.version) == source_rows(src, entry.version)
    before = _tree(dst)
    with pytest.raises(CorruptTableError):
        lakecore.migrate(str(src), str(dst), to="delta", history=True)
    assert _tree(dst) == before
    last.write_bytes(good)
    report = lakecore.migrate(str(src), str(dst), to="delta", history=True)
    assert report.versions == ((4, 4),)
    assert engine_rows("delta", dst) == source_rows(src, 4)
    assert len(source_rows(src, 4)) == 18


def _corrupt_deletions_file(path: Path, offsets: list[int]) -> None:
    table = pa.table({"row_id": pa.array(offsets, pa.uint32())})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    path.write_bytes(sink.getvalue().to_pybytes())


# --- deterministic races: a pylance commit lands just before lakecore's -----------------------


def _three_small_fragments(path: Path) -> None:
    for lo in (0, 10, 20):
        data = pa.table({"id": pa.array(range(lo, lo + 10), pa.int64()), "s": ["r"] * 10})
        lance.write_dataset(data, str(path), mode="append" if lo else "create")


RACES: dict[str, tuple[Callable[[Any], Any], Callable[[str], Any]]] = {
    # lakecore's operation, then the pylance commit that lands first on the same fragments.
    "optimize-vs-delete": (lambda t: t.optimize(), lambda p: lance.dataset(p).delete("id = 4")),
    "delete-vs-compaction": (
        lambda t: t.delete("id = 4"),
        lambda p: lance.dataset(p).optimize.compact_files(),
    ),
    "update-vs-delete": (
        lambda t: t.update({"s": "'u'"}, where="id = 4"),
        lambda p: lance.dataset(p).delete("id = 4"),
    ),
    "merge-vs-append": (
        lambda t: _merge(t).execute(),
        lambda p: lance.write_dataset(
            pa.table({"id": pa.array([50], pa.int64()), "s": ["p"]}), p, mode="append"
        ),
    ),
}


@pytest.mark.parametrize("race", sorted(RACES))
def test_a_racing_pylance_commit_is_never_lost(
    tmp_path: Path, race: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Holds: a pylance commit landing between lakecore's read and its commit on the same
    fragments makes lakecore's commit a ``CommitConflictError``; the dataset is pylance's
    version, readable alike by both (no delete undone by a compaction, no key inserted
    twice)."""
    from lakecore_lance.write.committer import LanceCommitter

    path = tmp_path / "t"
    _three_small_fragments(path)
    ours, theirs = RACES[race]
    original = LanceCommitter.commit
    fired: list[bool] = []

    def commit(self: LanceCommitter, prepared: Any) -> Any:
        if not fired:
            fired.append(True)
            theirs(str(path))
        return original(self, prepared)

    monkeypatch.setattr(LanceCommitter, "commit", commit)
    table = lakecore.open(str(path))
    with pytest.raises(CommitConflictError):
        ours(table)
    assert fired
    monkeypatch.undo()
    want = sort_rows(lance.dataset(str(path)).to_table())
    assert sort_rows(lakecore.open(str(path)).to_arrow()).equals(want)
    # Row 4 is gone exactly when pylance's commit deleted it (lakecore's delete lost the race).
    assert (4 in want.column("id").to_pylist()) is (
        race in ("delete-vs-compaction", "merge-vs-append")
    )
    # Three appends and pylance's commit (a compaction reserves fragment ids first).
    assert assert_same_as_pylance(path) == (5 if race == "delete-vs-compaction" else 4)


def test_race_cases_ran() -> None:
    assert len(RACES) == 4


# --- incremental sync across a source cleanup ---------------------------------------------------


@pytest.mark.parametrize("to", ["delta", "hudi", "lance"])
def test_incremental_sync_across_a_source_cleanup_says_which_versions_it_missed(
    tmp_path: Path, to: str
) -> None:
    """Fixed in addeb9a; was: after pylance's ``cleanup_old_versions`` removed source versions
    the last run had not carried (3-6 here), the next ``history=True`` run carried version 7
    with the right rows but its report said nothing of the versions the target will never
    have. The rows were right throughout (deletes before, inside and after the gap hold)."""
    import datetime as dt

    src, dst = tmp_path / "src", tmp_path / "dst"
    _dataset(src)
    lance.dataset(str(src)).delete("id = 1")
    first = lakecore.migrate(str(src), str(dst), to=to, history=True)
    assert [sv for sv, _ in first.versions] == [1, 2] and first.notes == ()
    lance.dataset(str(src)).delete("id = 6")
    lance.dataset(str(src)).optimize.compact_files()  # versions 4 (reserve) and 5
    lance.dataset(str(src)).delete("id = 2")
    lance.write_dataset(pa.table({"id": [20, 21], "s": ["a", "b"]}), str(src), mode="append")
    lance.dataset(str(src)).cleanup_old_versions(older_than=dt.timedelta(0), delete_unverified=True)
    assert [v["version"] for v in lance.dataset(str(src)).versions()] == [7]
    second = lakecore.migrate(str(src), str(dst), to=to, history=True)
    assert [sv for sv, _ in second.versions] == [7]
    assert any("source versions 3-6" in n for n in second.notes), second.notes
    assert engine_rows(to, dst) == source_rows(src, 7)
    lance.dataset(str(src)).delete("id = 20")
    third = lakecore.migrate(str(src), str(dst), to=to, history=True)
    assert [sv for sv, _ in third.versions] == [8] and third.notes == ()
    assert engine_rows(to, dst) == source_rows(src, 8)


def test_a_delta_source_whose_first_readable_version_has_deletion_vectors(tmp_path: Path) -> None:
    """Holds: a Delta source whose commits 0-2 were cleaned up (checkpoint at 3) starts its
    history at a version whose files already carry deletion vectors; every carried version
    of the Lance target is the source's live rows (pylance reads them)."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    props = {"delta.enableDeletionVectors": "true", "delta.checkpointInterval": "3"}
    schema = pa.schema([("id", pa.int64()), ("s", pa.string())])
    t = lakecore.create(str(src), schema, "delta", properties=props)
    t.append(pa.table({"id": pa.array(range(10), pa.int64()), "s": ["a"] * 10}))
    for i in (3, 4, 9):  # versions 2-4, each a deletion vector; checkpoint at 3
        t.delete(f"id = {i}")
    for n in range(3):
        (src / "_delta_log" / f"{n:020d}.json").unlink()
    report = lakecore.migrate(str(src), str(dst), to="lance", history=True)
    assert [sv for sv, _ in report.versions] == [3, 4]
    for sv, tv in report.versions:
        assert engine_rows("lance", dst, tv) == source_rows(src, sv)
    assert len(engine_rows("lance", dst)) == 7 and report.deletes_carried >= 3


REINSERT_PAIRS = [
    ("hudi-mor", "lance"),
    pytest.param("hudi-mor", "delta", marks=pytest.mark.slow),
    pytest.param("hudi-cow", "lance", marks=pytest.mark.slow),
    pytest.param("delta", "lance", marks=pytest.mark.slow),
    pytest.param("delta", "hudi", marks=pytest.mark.slow),
]


@pytest.mark.parametrize(("kind", "to"), REINSERT_PAIRS)
def test_a_key_deleted_reinserted_and_deleted_again_at_every_version(
    tmp_path: Path, kind: str, to: str
) -> None:
    """Holds: a row deleted, written again under the same key, deleted again (and, in Hudi,
    written a third time) is present exactly at the target versions where the source has it
    (MoR log deletes followed by log upserts of the key; deletion vectors on a rewritten
    file)."""
    from tests.migrate.test_history import create_source, rows

    src, dst = tmp_path / "src", tmp_path / "dst"
    t = create_source(kind, src)
    hudi = kind.startswith("hudi")
    t.append(rows((1, "a", 1, "x"), (2, "b", 1, "x"), (3, "c", 1, "y")))
    t.delete("id = 2")
    again = rows((2, "again", 5, "x"))
    t.upsert(again) if hudi else t.append(again)
    t.delete("id = 3")
    t.delete("id = 2")
    if hudi:
        t.upsert(rows((2, "third", 9, "x")))
    report = lakecore.migrate(str(src), str(dst), to=to, history=True)
    assert len(report.versions) == 6  # every source version (Delta: its creation too)
    for sv, tv in report.versions:
        assert engine_rows(to, dst, tv) == source_rows(src, sv), (sv, tv)
    assert [r["id"] for r in engine_rows(to, dst)] == ([1, 2] if hudi else [1])


# --- storage faults at target calls, pairs test_migrate_faults leaves out ----------------------

FAULT_PAIRS = [("lance", "hudi"), ("hudi-cow", "lance"), ("lance", "lance")]


def _faults(kind: str, to: str, tmp: Path, stride: int | None) -> dict[str, int]:
    import tests.reliability.test_migrate_faults as mf

    # _faults_at_steps offsets its sampling by the pair's index in PAIRS.
    pairs = [*mf.PAIRS, *[p for p in FAULT_PAIRS if p not in mf.PAIRS]]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(mf, "PAIRS", pairs)
        return mf._faults_at_steps(kind, to, tmp, stride)


@pytest.mark.parametrize(("kind", "to"), FAULT_PAIRS[1:2], ids=["hudi-cow-to-lance"])
def test_a_fault_at_sampled_target_calls_of_more_pairs_leaves_a_restartable_target(
    kind: str, to: str, tmp_path: Path
) -> None:
    """Holds: as tests/reliability/test_migrate_faults.py, for a pair it does not run (every
    call of these three pairs in the slow variant)."""
    outcomes = _faults(kind, to, tmp_path, 24)
    assert any(o != "completed" for o in outcomes) and sum(outcomes.values()) >= 5
    assert "TableNotFoundError" not in outcomes, outcomes


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "to"), FAULT_PAIRS, ids=[f"{s}-to-{t}" for s, t in FAULT_PAIRS])
def test_a_fault_at_every_target_call_of_more_pairs_leaves_a_restartable_target(
    kind: str, to: str, tmp_path: Path
) -> None:
    outcomes = _faults(kind, to, tmp_path, None)
    assert sum(outcomes.values()) >= 100
    # A storage fault is a StorageError (retry), never "no table" (see the test above).
    assert "TableNotFoundError" not in outcomes, outcomes


def test_a_storage_fault_listing_versions_is_no_missing_dataset(tmp_path: Path) -> None:
    """Fixed in 3a4073c; was: ``Table.history`` of a Lance dataset checked it with
    ``detect``, which answers False on a storage fault, so a transient fault listing
    ``_versions/`` raised ``TableNotFoundError`` ("no Lance dataset"). A migration into Lance
    then ended in ``TableNotFoundError`` at 6 of the 181 target calls of the lance->lance
    fault sweep below (docs/migration.md: a storage fault is a ``StorageError``: retry)."""
    from lakecore.errors import StorageError
    from lakecore.storage import open_storage
    from lakecore.testing.faults import FaultyStorage

    path = tmp_path / "t"
    _dataset(path)
    faulty = FaultyStorage(open_storage(str(path)))
    table = lakecore.open(str(path), format="lance", storage=faulty)
    faulty.arm(0, match=lambda call: call.method == "list_from" and "_versions" in call.path)
    with pytest.raises(StorageError):
        table.history()
    assert faulty.faults
    faulty.arm(None)
    assert [e.version for e in table.history()] == [1]


@pytest.mark.parametrize("how", ["inside-through-a-link", "the-source-through-a-link"])
def test_a_target_reaching_the_source_through_a_symlink_is_refused(
    tmp_path: Path, how: str
) -> None:
    """Fixed in 6f95b2a; was: the nesting guard compared the roots as text, so
    ``<link to src>/inner`` migrated into a Delta table inside the source (a vacuum of a
    Delta or Hudi source deletes such files as unreferenced), and a target naming the source
    through a link was taken for another location (a Lance source then failed with a
    ``CommitConflictError`` blaming "another run")."""
    import os

    from lakecore.errors import MigrationError

    src = tmp_path / "src"
    _dataset(src)
    os.symlink(src, tmp_path / "link")
    target = tmp_path / "link" / "inner" if how == "inside-through-a-link" else tmp_path / "link"
    before = _tree(src)
    with pytest.raises(MigrationError, match=r"inside the source|under another name"):
        lakecore.migrate(str(src), str(target), to="delta")
    assert _tree(src) == before and not (src / "inner").exists()


# --- found outside the files this review owns (fixed by another member) ----------------------


def test_a_limit_returns_its_rows_when_a_deletion_count_understates(tmp_path: Path) -> None:
    """Fixed in 6b2fe0f (lakecore/planning, not by this review); was: a fragment whose
    manifest says 1 row is deleted while its deletion file holds 3 made
    ``scan().with_limit(9)`` return 7 rows of the 17 live ones: the scan kept only the
    prefix of files the index's counts said could hold 9 and never read on (pylance's
    ``to_table(limit=9)`` returns 7 too)."""
    path = tmp_path / "t"
    data = pa.table({"id": pa.array(range(20), pa.int64()), "s": ["r"] * 20})
    lance.write_dataset(data, str(path), max_rows_per_file=10)
    lance.dataset(str(path)).delete("id < 3")
    _edit_latest(path, lambda m: setattr(m.fragments[0].deletion_file, "num_deleted_rows", 1))
    table = lakecore.open(str(path))
    assert table.to_arrow().num_rows == 17
    try:
        got = table.scan().with_limit(9).to_arrow().num_rows
    except CorruptTableError:
        return
    assert got == 9


@pytest.mark.parametrize("to", ["delta", "hudi", "lance"])
def test_a_dropped_source_column_stops_history_and_leaves_the_target(
    tmp_path: Path, to: str
) -> None:
    """Holds: a pylance ``drop_columns`` at source version 3 stops a ``history=True`` run with
    ``MigrationError`` naming the column after versions 1-2 landed; re-runs (with or without
    history) refuse the same way and change nothing at the target."""
    from lakecore.errors import MigrationError

    src, dst = tmp_path / "src", tmp_path / "dst"
    data = {"id": pa.array(range(6), pa.int64()), "b": ["x"] * 6, "c": [1.0] * 6}
    lance.write_dataset(pa.table(data), str(src))
    lance.dataset(str(src)).delete("id = 1")
    lance.dataset(str(src)).drop_columns(["b"])
    with pytest.raises(MigrationError, match="'b'"):
        lakecore.migrate(str(src), str(dst), to=to, history=True)
    assert engine_rows(to, dst) == source_rows(src, 2)
    before = _tree(dst)
    for history in (False, True):
        with pytest.raises(MigrationError, match="'b'"):
            lakecore.migrate(str(src), str(dst), to=to, history=history)
    assert _tree(dst) == before


def test_two_migrations_racing_into_one_new_lance_target(tmp_path: Path) -> None:
    """Holds: two ``history=True`` runs started together into one new Lance location: each
    completes or fails with ``CommitConflictError``; a re-run then finds nothing to do, every
    source version is held once (pylance reads each as the source's rows)."""
    import threading

    from tests.migrate.test_history import build_source

    src, dst = tmp_path / "src", tmp_path / "dst"
    source = build_source("delta", src, add_column=False)  # one target commit per version
    outcomes: list[str] = []
    barrier = threading.Barrier(2)

    def run() -> None:
        barrier.wait()
        try:
            lakecore.migrate(str(src), str(dst), to="lance", history=True)
            outcomes.append("ok")
        except CommitConflictError:
            outcomes.append("conflict")
        except BaseException as exc:  # reported by the assertion below
            outcomes.append(repr(exc))

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) in (["conflict", "ok"], ["ok", "ok"]), outcomes
    again = lakecore.migrate(str(src), str(dst), to="lance", history=True)
    assert again.versions == ()
    versions = [e.version for e in reversed(source.history())]
    held = [e for e in lakecore.open(str(dst), format="lance").history() if e.app_metadata]
    assert len(held) == len(versions)
    for entry in held:
        sv = int(entry.app_metadata["lakecore.migration.source_version"])
        assert engine_rows("lance", dst, entry.version) == source_rows(src, sv)
