"""Every corpus table lakecore reads migrates to each other format, and the TARGET format's own
engine (deltalake's ``scan()``, hudi-rs, pylance) returns the source's latest rows: the corpus
digest of the source's latest version (issue 12, first "Done when" item).

Each source is copied to ``tmp_path`` first and must be byte-identical after its migration.
Outcomes per (table, target) case:

- passed: the target engine's rows have the expected digest (and row count);
- refused: ``EXPECTED_REFUSALS`` lists it: ``MigrationError`` naming the column a target cannot
  hold, raised before anything is written (a refusal not listed there fails);
- skipped: the corpus gives no rows (``oracle_error``);
- known failure: ``KNOWN_FAILURES`` lists it with the bug it hits (xfail; a listed case that
  passes fails, so the list shrinks as bugs are fixed). A case in both lists is a legitimate
  refusal whose message does not meet ``EXPECTED_REFUSALS`` yet.

``test_xtable_*`` pin what Apache XTable gets wrong: a Delta table with deletion vectors
migrated to Hudi and back to Delta keeps exactly its live rows (deltalake reads them).

Normalisations: only Hudi's ``_hoodie_*`` meta columns are dropped from the target's rows
(not user data), and ``delta/gen__partitioned_special_chars`` is compared with its empty
partition string as NULL (the conformance override). The digest itself is independent of
integer width, list/fixed-size-list and large/plain forms, timestamp unit and decimal width,
which covers the type changes the formats make (Avro int for int8/int16, list for Lance's
fixed-size lists); no other normalisation was needed.

The whole matrix is ``slow``; the default run takes the hard tables of each source format
(``DEFAULT``: Delta deletion vectors, Hudi merge-on-read with log files and deletes, Lance
deletion files) to both other formats.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

import lakecore
from lakecore.errors import MigrationError

from .engines import (
    FORMATS,
    SourceTable,
    canonical_rows,
    corpus,
    expected_digest,
    read_with_engine,
    user_columns,
)
from .engines import source_tables as _source_tables

TABLES = {fmt: _source_tables(fmt) for fmt in FORMATS}
CASES = [(t, to) for fmt in FORMATS for t in TABLES[fmt] for to in FORMATS if to != fmt]

DEFAULT = {
    "delta/deltars__table-with-dv-small",  # deletion vectors
    "delta/golden__dv-partitioned-with-checkpoint",  # DVs, partitioned, checkpoint
    "hudi/mor_avro_v8_trips_8i3u1d",  # MoR: log files with updates and a delete, partitioned
    "hudi/mor_avro_v9_txns_nonpart_meta",  # MoR after compaction and clustering, table v9
    "lance/gen__many_fragments",  # deletion files on 5 fragments
    "lance/v0.7.5__with_deletions",  # a deletion file, v1 manifest naming
}

# (table, target) -> (column the error must name, what it must say). Types the target format
# cannot hold; the engine refuses them before writing anything.
EXPECTED_REFUSALS: dict[tuple[str, str], tuple[str, str]] = {
    # Lance datasets hold no map columns (pylance 14 writes none either).
    ("delta/golden__data-reader-map", "lance"): ("'a'", "cannot hold map"),
    ("delta/golden__parquet-all-types", "lance"): ("'map_of_prims'", "cannot hold map"),
    ("delta/golden__hive-deltatbl-map-types-correctly", "lance"): ("'c14'", "cannot hold map"),
    ("delta/deltars__spark-variant-checkpoint", "lance"): (
        "'map_of_variants'",
        "cannot hold map",
    ),
    ("delta/golden__spark-variant-checkpoint", "lance"): ("'map_of_variants'", "cannot hold map"),
    # Avro (Hudi's schema) map keys are strings only.
    ("delta/golden__data-reader-map", "hudi"): ("t_record.a", "map keys must be strings"),
    ("delta/golden__parquet-all-types", "hudi"): (
        "t_record.map_of_prims",
        "map keys must be strings",
    ),
    ("delta/golden__table-with-columnmapping-mode-name", "hudi"): (
        "t_record.array_of_map_of_arrays",
        "map keys must be strings",
    ),
    ("delta/golden__table-with-icebegCompatV2Enabled", "hudi"): (
        "t_record.array_of_map_of_arrays",
        "map keys must be strings",
    ),
    ("delta/deltars__delta-1.2.1-only-struct-stats", "lance"): ("'map'", "cannot hold map"),
    ("delta/deltars__delta-checkpoint-stats-optional", "lance"): ("'map'", "cannot hold map"),
    **{
        (f"hudi/{name}", "lance"): ("'mapField'", "cannot hold map")
        for name in (
            "cow_v6_complexkeygen_hivestyle",
            "cow_v6_nonpartitioned",
            "cow_v6_simplekeygen_hivestyle_no_metafields",
            "cow_v6_simplekeygen_nonhivestyle",
            "cow_v6_timebasedkeygen_nonhivestyle",
            "cow_v8_simplekeygen_hivestyle_no_metafields",
            "mor_parquet_v6_nonpartitioned",
            "mor_parquet_v6_simplekeygen_nonhivestyle",
            "mor_parquet_v6_simplekeygen_nonhivestyle_overwritetable",
        )
    },
    # A map inside a list: the error names the column, not the list's 'element'.
    ("delta/golden__table-with-columnmapping-mode-name", "lance"): (
        "'array_of_map_of_arrays'",
        "cannot hold map",
    ),
    ("delta/golden__table-with-icebegCompatV2Enabled", "lance"): (
        "'array_of_map_of_arrays'",
        "cannot hold map",
    ),
    # Avro names are [A-Za-z_][A-Za-z0-9_]* (Delta column mapping allows any name).
    ("delta/deltars__table_with_column_mapping", "hudi"): (
        "'Company Very Short'",
        "not a valid Avro name",
    ),
    # Delta has no fixed-size list type (Lance vector columns).
    ("lance/gen__nested_types", "delta"): ("'vec'", "has no Delta equivalent"),
    ("lance/v0.21.0__bad_index_fragment_bitmap", "delta"): ("'vector'", "has no Delta equivalent"),
    ("lance/v0.27.1__pq_in_schema", "delta"): ("'vec'", "has no Delta equivalent"),
}

NTZ_HUDI_RS = (
    "hudi-rs 0.5.0 panics ('not yet implemented', avro_to_arrow/schema.rs:173) on the "
    "timestamp-without-zone columns (Avro local-timestamp-micros) of the Hudi target"
)
# (table, target) -> the bug it hits (see the report of issue 12's corpus suite).
KNOWN_FAILURES: dict[tuple[str, str], str] = {
    ("delta/golden__data-reader-timestamp_ntz", "hudi"): NTZ_HUDI_RS,
    ("delta/golden__data-reader-timestamp_ntz-name-mode", "hudi"): NTZ_HUDI_RS,
}


def _id(case: tuple[SourceTable, str]) -> str:
    return f"{case[0].id}->{case[1]}"


def _outcome(table: SourceTable, to: str) -> str:
    if table.skip_reason:
        return "skipped"
    if (table.id, to) in KNOWN_FAILURES:
        return "known failure"
    if (table.id, to) in EXPECTED_REFUSALS:
        return "refused"
    return "passed"


def _tree_digest(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root``, by relative path."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _run_case(table: SourceTable, to: str, tmp_path: Path) -> None:
    reason = table.skip_reason
    if reason:
        pytest.skip(reason)
    source = tmp_path / "source"
    shutil.copytree(table.path, source)
    before = _tree_digest(source)
    target = tmp_path / "target"
    refusal = EXPECTED_REFUSALS.get((table.id, to))
    known = KNOWN_FAILURES.get((table.id, to))
    try:
        _check_case(table, to, source, target, refusal)
    except BaseException as exc:  # hudi-rs panics are BaseExceptions (pyo3 PanicException)
        if known is None or isinstance(exc, (KeyboardInterrupt, pytest.skip.Exception)):
            raise
        pytest.xfail(f"known failure: {known} ({type(exc).__name__}: {exc})")
    finally:
        assert _tree_digest(source) == before, "the migration changed its source"
    if known is not None:
        pytest.fail(f"{table.id} -> {to} passes now: remove it from KNOWN_FAILURES ({known})")


def _check_case(
    table: SourceTable, to: str, source: Path, target: Path, refusal: tuple[str, str] | None
) -> None:
    if refusal is not None:
        column, what = refusal
        with pytest.raises(MigrationError) as caught:
            lakecore.migrate(str(source), str(target), to=to)
        message = str(caught.value)
        assert column in message and what in message, message
        written = [p for p in target.rglob("*") if p.is_file()] if target.exists() else []
        assert written == [], f"a refused migration wrote {written}"
        return
    report = lakecore.migrate(str(source), str(target), to=to)
    entry = table.latest_entry
    assert entry is not None
    rows = user_columns(read_with_engine(to, target))
    assert rows.num_rows == entry["num_rows"]
    assert corpus().digest(rows) == expected_digest(corpus(), table)
    assert report.rows == rows.num_rows
    assert report.target_format == to and report.source_format == table.format


DEFAULT_CASES = [c for c in CASES if c[0].id in DEFAULT]


@pytest.mark.parametrize(("table", "to"), DEFAULT_CASES, ids=[_id(c) for c in DEFAULT_CASES])
def test_hard_tables_migrate(table: SourceTable, to: str, tmp_path: Path) -> None:
    """Default run: deletes of every kind survive a migration to each other format."""
    _run_case(table, to, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize(("table", "to"), CASES, ids=[_id(c) for c in CASES])
def test_corpus_table_migrates(table: SourceTable, to: str, tmp_path: Path) -> None:
    """The whole matrix: every corpus table of each format to each other format."""
    _run_case(table, to, tmp_path)


# pair -> (cases, passed, refused, skipped, known failures)
PAIR_COUNTS = {
    ("delta", "hudi"): (114, 90, 5, 17, 2),
    ("delta", "lance"): (114, 88, 9, 17, 0),
    ("hudi", "delta"): (20, 20, 0, 0, 0),
    ("hudi", "lance"): (20, 11, 9, 0, 0),
    ("lance", "delta"): (19, 14, 3, 2, 0),
    ("lance", "hudi"): (19, 17, 0, 2, 0),
}


def test_case_counts() -> None:
    """How many (table, target) cases run per pair and how each must end; the lists name
    only cases of the matrix, and the default run covers every pair."""
    assert len(CASES) == 306
    got: dict[tuple[str, str], list[int]] = {pair: [0, 0, 0, 0, 0] for pair in PAIR_COUNTS}
    slots = {"passed": 1, "refused": 2, "skipped": 3, "known failure": 4}
    for table, to in CASES:
        counts = got[(table.format, to)]
        counts[0] += 1
        counts[slots[_outcome(table, to)]] += 1
    assert {pair: tuple(c) for pair, c in got.items()} == PAIR_COUNTS
    ids = {(t.id, to) for t, to in CASES if not t.skip_reason}
    assert set(EXPECTED_REFUSALS) <= ids and set(KNOWN_FAILURES) <= ids
    default_pairs = {(t.format, to) for t, to in CASES if t.id in DEFAULT}
    assert default_pairs == set(PAIR_COUNTS)
    assert len(DEFAULT) == 6 and {t.id for t, _ in CASES} >= DEFAULT


@pytest.mark.parametrize("to", ["delta", "lance"])
def test_a_hudi_table_without_commits_migrates_as_an_empty_table(to: str, tmp_path: Path) -> None:
    """A Hudi table before its first instant has no version, only an empty snapshot: the
    target is an empty table of its user columns (before: TableNotFoundError), and a second
    run changes nothing."""
    table = next(t for t in TABLES["hudi"] if t.name == "cow_v8_empty")
    source = tmp_path / "source"
    shutil.copytree(table.path, source)
    target = tmp_path / "target"
    report = lakecore.migrate(str(source), str(target), to=to)
    assert (report.rows, report.commits, report.versions) == (0, 1, ())
    rows = read_with_engine(to, target)
    assert rows.num_rows == 0
    assert rows.schema.names == ["id", "name", "isActive"]
    again = lakecore.migrate(str(source), str(target), to=to)
    assert (again.commits, again.versions) == (0, ())
    assert lakecore.open(str(target)).version == lakecore.open(str(target)).history()[0].version


# ---------------------------------------------------------------------- the XTable pin


def _delta_rows(path: Path) -> list[str]:
    """deltalake's rows of the latest version (kernel scan: applies deletion vectors), as
    sorted canonical JSON (the corpus digest's rows)."""
    return sorted(canonical_rows(read_with_engine("delta", path)))


def _round_trip(source: Path, tmp_path: Path) -> tuple[Path, Path]:
    """``source`` (Delta) -> Hudi -> Delta; returns the two targets."""
    hudi_copy, back = tmp_path / "as_hudi", tmp_path / "back_to_delta"
    lakecore.migrate(str(source), str(hudi_copy), to="hudi")
    lakecore.migrate(str(hudi_copy), str(back), to="delta")
    return hudi_copy, back


def _deletion_vectors(path: Path) -> int:
    """How many rows of the lakecore file index carry a deletion (vector)."""
    files = lakecore.open(str(path)).snapshot().files()
    return files.num_rows - files.column("deletion").null_count


def test_xtable_corpus_table_with_deletion_vectors_round_trips(tmp_path: Path) -> None:
    table = next(t for t in TABLES["delta"] if t.name == "deltars__table-with-dv-small")
    source = tmp_path / "source"
    shutil.copytree(table.path, source)
    before = _tree_digest(source)
    assert _deletion_vectors(source) == 1
    live = _delta_rows(source)
    assert len(live) == 8  # 10 rows written, 2 deleted by the deletion vector
    hudi_copy, back = _round_trip(source, tmp_path)
    hudi_rows = user_columns(read_with_engine("hudi", hudi_copy))
    assert corpus().digest(hudi_rows) == expected_digest(corpus(), table)
    assert _delta_rows(back) == live
    assert corpus().digest(read_with_engine("delta", back)) == expected_digest(corpus(), table)
    assert _tree_digest(source) == before


@pytest.mark.parametrize("partitioned", [False, True], ids=["unpartitioned", "partitioned"])
def test_xtable_built_table_with_deletion_vectors_round_trips(
    partitioned: bool, tmp_path: Path
) -> None:
    """A table written here: two appends, a DELETE that leaves deletion vectors, an UPDATE (a
    DV plus a new file); the round trip keeps exactly the live rows and no deleted row comes
    back (partitioned: the Hudi intermediate is partitioned too, read by hudi-rs)."""
    import pyarrow as pa

    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("part", pa.string())])
    source = tmp_path / "source"
    built = lakecore.create(
        str(source),
        schema,
        partition_by=["part"] if partitioned else [],
        properties={"delta.enableDeletionVectors": "true"},
    )
    for start, prefix in ((0, "a"), (50, "b")):
        ids = range(start, start + 50)
        names = [f"{prefix}{i}" for i in ids]
        built.append(pa.table({"id": ids, "name": names, "part": [f"p{i % 3}" for i in ids]}))
    built.delete("id % 7 = 0")
    built.update({"name": "'updated'"}, "id = 8 OR id = 64")
    assert _deletion_vectors(source) >= 2
    import deltalake

    assert "deletionVectors" in (deltalake.DeltaTable(str(source)).protocol().reader_features or [])
    live = _delta_rows(source)
    assert len(live) == 100 - 15
    hudi_copy, back = _round_trip(source, tmp_path)
    assert sorted(canonical_rows(user_columns(read_with_engine("hudi", hudi_copy)))) == live
    assert _delta_rows(back) == live
    ids = read_with_engine("delta", back).column("id").to_pylist()
    assert sorted(ids) == [i for i in range(100) if i % 7]
