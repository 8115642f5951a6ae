"""Zero-copy migration in place (``target_uri == source_uri``): a Hudi table's Parquet base
files adopted as they are by a Delta log written beside ``.hoodie`` (``mode="metadata"``), the
others rewritten (``mode="auto"``), and the refusals. Delta's own engine (deltalake) reads the
target; hudi-rs must still read the Hudi table exactly as before."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lakecore
from lakecore.errors import (
    AmbiguousFormatError,
    MigrationError,
    TableExistsError,
    UnsupportedFeatureError,
)
from lakecore.migrate import state as st
from tests.migrate.engines import (
    canonical_rows,
    corpus,
    expected_digest,
    read_with_engine,
    source_tables,
    user_columns,
)
from tests.migrate.test_history import SCHEMA, rows

NEW_DIRS = ("_delta_log", st.STATE_DIR)
"""All an in-place migration to Delta may add to the Hudi table's root."""


def tree(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root``, by relative path."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def added_by_migration(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """Files the migration added or changed outside ``NEW_DIRS`` (must be none)."""
    changed = [p for p, h in after.items() if before.get(p) != h]
    gone = [p for p in before if p not in after and p.split("/", 1)[0] not in NEW_DIRS]
    assert gone == [], "the migration deleted source files"
    return [p for p in changed if p.split("/", 1)[0] not in NEW_DIRS]


def hudi_table(root: Path, partitioned: bool, table_type: str = "COPY_ON_WRITE") -> None:
    """A Hudi table keyed on ``id`` with two commits (an insert, an upsert)."""
    props = {"record_key": "id", "precombine_field": "ts", "table_type": table_type}
    t = lakecore.create(str(root), SCHEMA, "hudi", ["city"] if partitioned else [], props)
    t.append(rows((1, "a", 1, "x"), (2, "b", 1, "x"), (3, "c", 1, "y"), (4, "d", 1, "y")))
    t.upsert(rows((2, "B", 2, "x"), (5, "e", 2, "z")))


def sorted_rows(table: pa.Table) -> list[str]:
    return sorted(canonical_rows(user_columns(table).select(SCHEMA.names)))


def hudi_rs_rows(root: Path) -> list[str]:
    return sorted_rows(read_with_engine("hudi", root))


def delta_rows(root: Path) -> list[str]:
    data = read_with_engine("delta", root)
    return sorted_rows(data.cast(pa.schema([data.schema.field(n) for n in data.column_names])))


def lakecore_hudi_rows(root: Path) -> list[str]:
    return sorted_rows(lakecore.open(str(root), format="hudi").to_arrow())


def delta_log_adds(root: Path) -> list[dict[str, object]]:
    """Every ``add`` action of the Delta log at ``root``."""
    adds = []
    for commit in sorted((root / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                adds.append(action["add"])
    return adds


@pytest.mark.parametrize("partitioned", [True, False], ids=["partitioned", "unpartitioned"])
def test_metadata_in_place_adopts_every_base_file(partitioned: bool, tmp_path: Path) -> None:
    root = tmp_path / "t"
    hudi_table(root, partitioned)
    before, hudi_before = tree(root), hudi_rs_rows(root)
    index = lakecore.open(str(root)).snapshot().files()

    report = lakecore.migrate(str(root), str(root), to="delta", mode="metadata")

    after = tree(root)
    assert added_by_migration(before, after) == []
    assert any(p.startswith("_delta_log/") for p in after)
    assert report.files_adopted == index.num_rows >= 2
    assert (report.files_rewritten, report.units_rewritten, report.rows) == (0, 0, 0)
    assert delta_rows(root) == hudi_before == lakecore_hudi_rows(root)
    assert hudi_rs_rows(root) == hudi_before  # the Hudi table is read as before
    adds = delta_log_adds(root)
    assert sorted(str(a["path"]) for a in adds) == sorted(index.column("path").to_pylist())
    partitions = {str(a["path"]): a["partitionValues"] for a in adds}
    for row in index.to_pylist():
        assert partitions[row["path"]] == (
            {"city": row["partition"]["city"]} if partitioned else {}
        )
    assert all(json.loads(str(a["stats"]))["numRecords"] >= 1 for a in adds)
    delta = lakecore.open(str(root), format="delta")
    assert set(delta.snapshot().schema.names) == set(SCHEMA.names)  # no _hoodie_* column
    assert sorted_rows(delta.to_arrow()) == hudi_before


def test_a_root_with_two_formats_must_be_told_which(tmp_path: Path) -> None:
    root = tmp_path / "t"
    hudi_table(root, partitioned=True)
    with pytest.raises(TableExistsError):  # users cannot create a table over another one
        lakecore.create(str(root), SCHEMA, "delta")
    lakecore.migrate(str(root), str(root), to="delta", mode="metadata")
    with pytest.raises(AmbiguousFormatError) as caught:
        lakecore.open(str(root))
    assert set(caught.value.candidates) == {"delta", "hudi"}
    assert lakecore.open(str(root), format="delta").format == "delta"
    assert lakecore.open(str(root), format="hudi").format == "hudi"
    with pytest.raises(TableExistsError):
        lakecore.create(str(root), SCHEMA, "delta")


def test_incremental_run_adopts_new_base_files_and_removes_replaced_ones(tmp_path: Path) -> None:
    root = tmp_path / "t"
    hudi_table(root, partitioned=True)
    lakecore.migrate(str(root), str(root), to="delta", mode="metadata")
    delta_version = lakecore.open(str(root), format="delta").version
    hudi = lakecore.open(str(root), format="hudi")
    hudi.upsert(rows((3, "C", 3, "y"), (6, "f", 3, "y")))  # replaces the base file of 'y'
    before, hudi_before = tree(root), hudi_rs_rows(root)

    # A source at a root holding both formats is found without source_format.
    report = lakecore.migrate(str(root), str(root), to="delta", mode="metadata")

    assert added_by_migration(before, tree(root)) == []
    assert report.commits == 1 and report.versions_translated == 1
    assert report.files_adopted >= 1 and report.files_removed >= 1
    assert report.files_rewritten == 0
    delta = lakecore.open(str(root), format="delta")
    assert delta.version == delta_version + 1
    live = sorted(delta.snapshot().files().column("path").to_pylist())
    assert live == sorted(hudi.snapshot().files().column("path").to_pylist())
    assert delta_rows(root) == hudi_before == hudi_rs_rows(root)
    again = lakecore.migrate(str(root), str(root), to="delta", mode="metadata")
    assert (again.commits, again.files_adopted) == (0, 0)


def test_auto_adopts_base_only_slices_and_rewrites_slices_with_log_files(tmp_path: Path) -> None:
    root = tmp_path / "t"
    hudi_table(root, partitioned=False, table_type="MERGE_ON_READ")
    hudi = lakecore.open(str(root))
    hudi.append(rows((7, "g", 3, "w")))  # one more file group (inserts go to base files)
    hudi.delete("id = 1")  # a log file on the slice holding id 1
    index = hudi.snapshot().files()
    with_logs = pc.sum(pc.greater(pc.list_value_length(index.column("data_files")), 1)).as_py()
    assert 1 <= with_logs < index.num_rows
    before, hudi_before = tree(root), hudi_rs_rows(root)

    with pytest.raises(MigrationError, match=r"\.log\."):  # metadata mode names the log file
        lakecore.migrate(str(root), str(root), to="delta", mode="metadata")
    assert tree(root) == before  # refused before anything was written
    report = lakecore.migrate(str(root), str(root), to="delta", mode="auto")

    assert report.files_adopted == index.num_rows - with_logs
    assert report.units_rewritten == with_logs and report.files_rewritten >= 1
    written = [p for p in added_by_migration(before, tree(root))]
    assert len(written) == report.files_rewritten  # the rewritten units' own Delta files
    assert delta_rows(root) == hudi_before == lakecore_hudi_rows(root)
    assert hudi_rs_rows(root) == hudi_before


def test_hudi_rs_cannot_list_a_partitioned_table_holding_rewritten_delta_files(
    tmp_path: Path,
) -> None:
    """Pins a limit of in-place ``auto`` (docs/migration.md): rewritten units are Delta data
    files in the Hudi root; hudi-rs 0.5 parses every ``.parquet`` file in a partitioned
    table's folders (but ``.hoodie``, ``_delta_log``, ``metadata``) as a Hudi base file.
    lakecore's own Hudi reader skips them."""
    root = tmp_path / "t"
    hudi_table(root, partitioned=True, table_type="MERGE_ON_READ")
    lakecore.open(str(root)).delete("id = 1")
    hudi_before = lakecore_hudi_rows(root)
    report = lakecore.migrate(str(root), str(root), to="delta", mode="auto")
    assert report.units_rewritten >= 1
    assert delta_rows(root) == hudi_before == lakecore_hudi_rows(root)
    with pytest.raises(Exception, match="Failed to parse file name"):
        hudi_rs_rows(root)


def test_delta_vacuum_is_refused_on_the_shared_root(tmp_path: Path) -> None:
    root = tmp_path / "t"
    hudi_table(root, partitioned=True)
    hudi = lakecore.open(str(root))
    first = hudi.history()[-1].version
    lakecore.migrate(str(root), str(root), to="delta", mode="metadata")
    hudi.upsert(rows((3, "C", 3, "y")))
    lakecore.migrate(str(root), str(root), to="delta", mode="metadata")
    before = tree(root)
    delta = lakecore.open(str(root), format="delta")
    # Delta references only the latest base files: its vacuum would delete the older slices
    # Hudi's timeline still reads (and any file of a Hudi commit not migrated yet).
    with pytest.raises(UnsupportedFeatureError) as caught:
        delta.vacuum(retention_hours=0, dry_run=False, enforce_retention=False)
    assert caught.value.feature == "shared-table-root" and "hudi" in str(caught.value)
    assert tree(root) == before
    old = lakecore.open(str(root), format="hudi").to_arrow(version=first)
    assert sorted_rows(old) == sorted_rows(
        rows((1, "a", 1, "x"), (2, "b", 1, "x"), (3, "c", 1, "y"), (4, "d", 1, "y"))
    )


def test_an_aborted_delta_commit_keeps_the_adopted_files(tmp_path: Path) -> None:
    root = tmp_path / "t"
    hudi_table(root, partitioned=True)
    lakecore.migrate(str(root), str(root), to="delta", mode="metadata")
    delta = lakecore.open(str(root), format="delta")
    files = delta.snapshot().files()
    before = tree(root)
    with pytest.raises(RuntimeError), delta.transaction() as tx:
        tx.adopt_files(files.select(["path", "size", "record_count", "modification_time"]))
        tx.append(rows((9, "z", 1, "x")))
        raise RuntimeError("abort")
    assert tree(root) == before  # the appended file went, the adopted ones stayed


REFUSALS = [
    ("hudi", "delta", "metadata", "elsewhere", "migrate in place"),
    ("hudi", "delta", "rewrite", "in place", "mode='rewrite' would copy"),
    ("delta", "hudi", "metadata", "elsewhere", "migrate in place"),
    ("delta", "hudi", "rewrite", "in place", "mode='rewrite' would copy"),
    ("hudi", "hudi", "metadata", "in place", "already is a hudi table"),
    ("hudi", "lance", "metadata", "in place", "'adopt_files' is not declared"),
]


@pytest.mark.parametrize(
    ("source", "to", "mode", "where", "message"),
    REFUSALS,
    ids=[f"{s}-to-{t}-{m}-{w}" for s, t, m, w, _ in REFUSALS],
)
def test_refusals_write_nothing(
    source: str, to: str, mode: str, where: str, message: str, tmp_path: Path
) -> None:
    root = tmp_path / "t"
    if source == "hudi":
        hudi_table(root, partitioned=True)
    else:
        lakecore.create(str(root), SCHEMA, "delta").append(rows((1, "a", 1, "x")))
    target = root if where == "in place" else tmp_path / "elsewhere"
    before = tree(root)
    with pytest.raises(MigrationError, match=message):
        lakecore.migrate(str(root), str(target), to=to, mode=mode)
    assert tree(root) == before
    assert not (tmp_path / "elsewhere").exists()


def test_refusal_count() -> None:
    assert len(REFUSALS) == 6


HUDI_TABLES = source_tables("hudi")
# table -> what mode="metadata" does in place: every unit adopted, or the refusal's words.
METADATA_REFUSED = {
    "cow_v6_timebasedkeygen_nonhivestyle": "partition column 'ts_str'",
    "cow_v9_timebasedkeygen_unixtimestamp": "column 'ts_epoch' as int64",
    "mor_avro_v6_trips_8i1u": "log or column files",
    "mor_avro_v8_trips_8i3u1d": "log or column files",
    "mor_avro_v9_lance_nonhivestyle": "log or column files",
    "mor_parquet_v6_nonpartitioned": "log or column files",
    "mor_parquet_v6_simplekeygen_nonhivestyle": "log or column files",
}


@pytest.mark.parametrize("table", HUDI_TABLES, ids=[t.name for t in HUDI_TABLES])
def test_corpus_hudi_table_in_place(table: object, tmp_path: Path) -> None:
    """Every corpus Hudi table, copied: ``metadata`` adopts it whole or refuses as pinned;
    ``auto`` then migrates it, deltalake reads the corpus's rows and the copy's Hudi files
    are untouched."""
    from tests.migrate.engines import SourceTable

    assert isinstance(table, SourceTable)
    if table.skip_reason:
        pytest.skip(table.skip_reason)
    root = tmp_path / table.name
    shutil.copytree(table.path, root)
    before = tree(root)
    refusal = METADATA_REFUSED.get(table.name)
    if refusal is None:
        report = lakecore.migrate(str(root), str(root), to="delta", mode="metadata")
        assert report.files_rewritten == 0
    else:
        with pytest.raises(MigrationError, match=refusal):
            lakecore.migrate(str(root), str(root), to="delta", mode="metadata")
        assert tree(root) == before
        report = lakecore.migrate(str(root), str(root), to="delta", mode="auto")
        assert report.units_rewritten >= 1
    if refusal is None:
        assert added_by_migration(before, tree(root)) == []
    entry = table.latest_entry
    assert entry is not None
    data = user_columns(read_with_engine("delta", root))
    assert data.num_rows == entry["num_rows"]
    c = corpus()
    assert c.digest(data) == expected_digest(c, table)


def test_corpus_case_count() -> None:
    assert len(HUDI_TABLES) == 20
    assert set(METADATA_REFUSED) <= {t.name for t in HUDI_TABLES}
