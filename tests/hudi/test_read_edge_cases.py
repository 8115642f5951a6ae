"""Read edge cases: archived instants stay visible; drop.partition.columns reads paths."""

from __future__ import annotations

import shutil
from pathlib import Path

import lakecore
from tests.corpus import CORPUS

TABLE = "cow_v6_complexkeygen_hivestyle"
FIRST = "20240418173213674"


def test_files_of_archived_commits_are_read(tmp_path: Path) -> None:
    root = tmp_path / TABLE
    shutil.copytree(CORPUS / "hudi" / TABLE, root)
    before = lakecore.open(str(root)).to_arrow()
    first_files = [p for p in root.rglob(f"*_{FIRST}.parquet")]
    assert first_files, "the fixture needs base files written by the first commit"
    # Archiving moves the first commit's instant files off the active timeline.
    for instant_file in (root / ".hoodie").glob(f"{FIRST}.*"):
        instant_file.unlink()
    table = lakecore.open(str(root))
    assert table.version != FIRST
    after = table.to_arrow()
    assert after.num_rows == before.num_rows
    assert after.sort_by("id").equals(before.sort_by("id"))
    paths = set(table.snapshot().files().column("path").to_pylist())
    assert any(p.endswith(f"_{FIRST}.parquet") for p in paths)


def test_partition_values_come_from_paths_with_drop_partition_columns(tmp_path: Path) -> None:
    """drop.partition.columns=true: partition columns read as the partition paths name them
    (here the files store the same values, so the rows are the table's rows)."""
    root = tmp_path / TABLE
    shutil.copytree(CORPUS / "hudi" / TABLE, root)
    props = root / ".hoodie" / "hoodie.properties"
    text = props.read_text().replace(
        "hoodie.datasource.write.drop.partition.columns=false",
        "hoodie.datasource.write.drop.partition.columns=true",
    )
    assert "drop.partition.columns=true" in text
    before = lakecore.open(str(CORPUS / "hudi" / TABLE)).to_arrow()
    props.write_text(text)
    after = lakecore.open(str(root)).to_arrow()
    assert after.num_rows == before.num_rows > 0
    assert after.sort_by("id").equals(before.sort_by("id"))


def test_history_lists_archived_instants_after_the_active_ones(tmp_path: Path) -> None:
    from tests.hudi.test_timeline import archived_commit_and_clean

    storage, _ = archived_commit_and_clean(tmp_path)
    entries = lakecore.open(storage.root).history()
    archived = [e for e in entries if e.info.get("archived")]
    assert [(e.version, e.operation) for e in archived] == [("002", "clean"), ("001", "commit")]
    assert entries[-len(archived) :] == archived
    assert len(lakecore.open(storage.root).history(limit=1)) == 1


def test_schema_from_a_base_file_footer_matches_the_commit_schema() -> None:
    """The last resort (no commit schema, no create schema) reads a base file's footer only."""
    from lakecore_hudi.options import ReadOptions
    from lakecore_hudi.state import _base_file_schema, load_state

    from lakecore.storage import open_storage

    checked = 0
    for name in ("cow_v6_nonpartitioned", "mor_avro_v9_lance_nonhivestyle"):
        storage = open_storage(str(CORPUS / "hudi" / name))
        state = load_state(storage, None, None, ReadOptions())
        found = _base_file_schema(storage, state.slices)
        assert found is not None
        data_columns = [f.name for f in state.table_schema if not f.name.startswith("_hoodie_")]
        assert found.names == data_columns
        checked += 1
    assert checked == 2
