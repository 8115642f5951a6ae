"""Writing Spark-written tables whose metadata table lakecore maintains.

The corpus tables with a metadata table all have index partitions too (column_stats,
record_index, ...: ``test_mdt_all_partitions`` writes them whole). Reduced to their ``files``
partition (the other partitions' directories removed and
``hoodie.table.metadata.partitions=files``, what Spark writes with only the file listing
enabled), they take lakecore writes: after each, the files partition lists exactly the data
files on storage (read by lakecore) and hudi-rs, which lists through it, reads lakecore's rows.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from lakecore_hudi.java_properties import parse_properties
from lakecore_hudi.table_config_out import render_table_config

import lakecore
from tests.corpus import CORPUS
from tests.hudi.write.helpers import files_on_disk
from tests.hudi.write.test_mdt_maintain import mdt_listing

TABLES = [
    "mor_avro_v9_nonpartitioned_rollback",
    pytest.param("mor_avro_v8_trips_8i3u1d", marks=pytest.mark.slow),
    pytest.param("cow_v9_txns_simple_overwrite", marks=pytest.mark.slow),
]


def _files_only(name: str, tmp_path: Path) -> Path:
    root = tmp_path / name
    shutil.copytree(CORPUS / "hudi" / name, root)
    for path in root.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)  # the corpus is read-only
    for directory in (root / ".hoodie" / "metadata").iterdir():
        if directory.name not in (".hoodie", "files"):
            shutil.rmtree(directory)
    props_path = root / ".hoodie" / "hoodie.properties"
    props = parse_properties(props_path.read_text(encoding="latin-1"))
    props.pop("hoodie.table.checksum", None)
    props["hoodie.table.metadata.partitions"] = "files"
    props_path.write_bytes(render_table_config(props))
    return root


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    data = table.drop_columns([c for c in table.column_names if c.startswith("_hoodie_")])
    return sorted(data.to_pylist(), key=lambda r: json.dumps(r, sort_keys=True, default=str))


def _hudi_rs(root: Path) -> list[dict[str, Any]]:
    from tests.hudi.write.helpers import hudi_rs_table

    return _rows(hudi_rs_table(root))


@pytest.mark.parametrize("name", TABLES)
def test_spark_table_with_files_partition_takes_lakecore_writes(tmp_path: Path, name: str) -> None:
    root = _files_only(name, tmp_path)
    assert mdt_listing(root) == files_on_disk(root)  # Spark's own metadata table, as found
    table = lakecore.open(str(root))
    snapshot = table.snapshot()
    keys = snapshot.properties["hoodie.table.recordkey.fields"].split(",")
    ordering = snapshot.properties.get("hoodie.table.precombine.field") or snapshot.properties.get(
        "hoodie.table.ordering.fields"
    )
    data = table.to_arrow()
    data = data.drop_columns([c for c in data.column_names if c.startswith("_hoodie_")])
    changed = data.slice(0, 1)
    if ordering:  # win under event-time ordering
        i = changed.schema.get_field_index(ordering)
        bumped = pc.add(changed.column(i), pa.scalar(1000, changed.schema.field(i).type))
        changed = changed.set_column(i, changed.schema.field(i), bumped)
    steps = [
        lambda: table.merge(changed, on=keys).when_matched_update_all().execute(),
        lambda: table.merge(data.slice(1, 1), on=keys).when_matched_delete().execute(),
        lambda: table.compact() if name.startswith("mor") else None,
        lambda: table.clean(retain_commits=1),
    ]
    for step in steps:
        step()
        assert mdt_listing(root) == files_on_disk(root)
        assert _hudi_rs(root) == _rows(lakecore.open(str(root)).to_arrow())
    rows = _rows(lakecore.open(str(root)).to_arrow())
    assert 0 < len(rows) < data.num_rows  # the delete landed, the rest stayed
    assert changed.to_pylist()[0] in rows  # and the update
