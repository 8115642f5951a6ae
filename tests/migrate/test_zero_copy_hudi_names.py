"""Zero-copy Delta -> Hudi in place: how adopted files are named in the metadata table's
``files`` partition (``<name>_<commit>[_fg%3D<dir>]_hudiext``) and which names or creation
properties are refused before anything is written."""

from __future__ import annotations

from pathlib import Path

import pytest
from lakecore_hudi.listing import parse_external_name
from lakecore_hudi.mdt.files_records import external_file_name
from lakecore_hudi.write.adopt import name_refusal

import lakecore
from lakecore.errors import MigrationError
from tests.migrate.test_zero_copy_hudi import delta_files, delta_table, hudi_rows
from tests.migrate.test_zero_copy_hudi_attacks import delta_with_files, hudi_instants, rows

COMMIT = "20240101000000000"


@pytest.mark.parametrize(
    ("partition", "prefix", "name"),
    [
        ("", None, "a.parquet"),
        ("", None, "a_fg%3Dzz.parquet"),
        ("", None, "abc-0_0-1-1_20240101000000000.parquet"),
        ("p=1", None, "x_12.parquet"),
        ("p=1", "sub_12", "x.parquet"),
        ("p=1", "a/b c%", "x_fg%3Dy.parquet"),
    ],
)
def test_external_names_read_back_as_the_file(
    partition: str, prefix: str | None, name: str
) -> None:
    entry = external_file_name(name, COMMIT, prefix)
    found = parse_external_name(partition, entry, 7)
    file_id = f"{prefix}/{name}" if prefix else name
    assert found is not None
    assert found.info.path == (f"{partition}/{file_id}" if partition else file_id)
    assert (found.name.file_id, found.name.instant) == (file_id, COMMIT)
    path = found.info.path
    assert name_refusal(path, ["p"] if partition else []) is None


def test_a_name_whose_entry_reads_back_as_another_file_is_refused_before_the_commit(
    tmp_path: Path,
) -> None:
    """``x_1_fg%3Dy.parquet_<commit>_hudiext`` also parses as file ``x`` of commit 1 in
    directory ``y.parquet_<commit>``: the migration refuses the file, nothing is committed."""
    assert name_refusal("x_1_fg%3Dy.parquet", []) is not None
    root = tmp_path / "t"
    delta_with_files(root, ["x_1_fg%3Dy.parquet"])
    before = delta_files(root)
    with pytest.raises(MigrationError, match="reads back as"):
        lakecore.migrate(str(root), str(root), to="hudi", mode="metadata")
    assert hudi_instants(root) == [] and not (root / ".hoodie").exists()
    assert delta_files(root) == before


@pytest.mark.parametrize(
    "props",
    [
        {"hoodie.populate.meta.fields": "true"},
        {"hoodie.table.type": "MERGE_ON_READ"},
        {"table_version": "6", "metadata_enable": "false"},
    ],
    ids=["meta-fields-alias", "merge-on-read-alias", "version-6"],
)
def test_hudi_aliases_of_unfit_properties_are_refused_before_creating(
    props: dict[str, str], tmp_path: Path
) -> None:
    root = tmp_path / "t"
    delta_table(root)
    with pytest.raises(MigrationError, match="target_properties"):
        lakecore.migrate(str(root), str(root), to="hudi", target_properties=props)
    assert not (root / ".hoodie").exists()


def test_a_record_key_in_target_properties_is_still_taken(tmp_path: Path) -> None:
    root = tmp_path / "t"
    delta_table(root)
    lakecore.migrate(str(root), str(root), to="hudi", target_properties={"record_key": "id"})
    hudi = lakecore.open(str(root), format="hudi")
    assert hudi.snapshot().features.record_key == ("id",)
    assert rows(hudi.to_arrow().select(["id", "name", "n", "city"])) == hudi_rows(root)
