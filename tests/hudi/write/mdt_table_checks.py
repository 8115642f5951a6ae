"""Whole-table checks of a Hudi table's metadata table, and the write operations the
end-to-end metadata tests run through it.

- ``check_every_partition``: the rows, the ``files`` partition and every other partition the
  table config declares, each against the table (``mdt_stats_checks``, ``mdt_index_checks``).
- ``operations``: insert, upsert, delete, (compact on merge-on-read,) clean on a corpus table.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from lakecore_hudi.table_config import read_table_config

from lakecore.storage import open_storage
from lakecore.table import Table
from tests.hudi.write.helpers import files_on_disk, hudi_rs_rows, lakecore_rows
from tests.hudi.write.mdt_index_checks import (
    assert_record_index_matches_table,
    assert_secondary_index_matches_table,
)
from tests.hudi.write.mdt_stats_checks import (
    assert_column_stats_match_files,
    assert_partition_stats_match_files,
)
from tests.hudi.write.test_mdt_maintain import mdt_listing


def check_every_partition(root: Path) -> dict[str, int]:
    """hudi-rs and lakecore read the same rows, the ``files`` partition lists the files on
    disk, and every other metadata partition the table config declares matches the table;
    returns partition -> what its check counted (``files``: 1)."""
    assert hudi_rs_rows(root) == lakecore_rows(root)
    assert mdt_listing(root) == files_on_disk(root)
    partitions = read_table_config(open_storage(str(root))).metadata_partitions
    done = {"files": 1}
    if "column_stats" in partitions:
        done["column_stats"] = assert_column_stats_match_files(root)
    if "partition_stats" in partitions:
        done["partition_stats"] = assert_partition_stats_match_files(root)
    if "record_index" in partitions:
        done["record_index"] = assert_record_index_matches_table(root)
    if any(p.startswith("secondary_index_") for p in partitions):
        done["secondary_index"] = assert_secondary_index_matches_table(root)
    return done


def new_keys(data: pa.Table, keys: list[str]) -> pa.Table:
    """``data`` with every record key column changed so that no key exists yet."""
    for name in keys:
        i = data.schema.get_field_index(name)
        column = data.column(i)
        if pa.types.is_string(column.type):
            changed = pc.binary_join_element_wise(column, pa.scalar("-lakecore"), "")
        else:
            changed = pc.add(column, pa.scalar(10**6, column.type))
        data = data.set_column(i, data.schema.field(i), changed)
    return data


def operations(table: Table) -> list[tuple[str, Callable[[], Any]]]:
    """(name, run) of an insert of 2 new keys, an upsert of 1 row (winning under event-time
    ordering), a delete of 1 row, a compaction (merge-on-read only) and a clean."""
    snapshot = table.snapshot()
    keys = snapshot.properties["hoodie.table.recordkey.fields"].split(",")
    data = table.to_arrow()
    data = data.drop_columns([c for c in data.column_names if c.startswith("_hoodie_")])
    fresh = new_keys(data.slice(0, 2), keys)
    changed = data.slice(0, 1)
    ordering = snapshot.properties.get("hoodie.table.precombine.field") or (
        snapshot.properties.get("hoodie.table.ordering.fields")
    )
    if ordering:  # win under event-time ordering
        i = changed.schema.get_field_index(ordering)
        bumped = pc.add(changed.column(i), pa.scalar(1000, changed.schema.field(i).type))
        changed = changed.set_column(i, changed.schema.field(i), bumped)
    ops: list[tuple[str, Callable[[], Any]]] = [
        ("insert", lambda: table.append(fresh)),
        ("upsert", lambda: table.merge(changed, on=keys).when_matched_update_all().execute()),
        ("delete", lambda: table.merge(data.slice(1, 1), on=keys).when_matched_delete().execute()),
    ]
    if snapshot.properties.get("hoodie.table.type") == "MERGE_ON_READ":
        ops.append(("compact", table.compact))
    ops.append(("clean", lambda: table.clean(retain_commits=1)))
    return ops
