"""lakecore writing into tables Hudi (Spark) wrote: hudi-rs and lakecore read the same result."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lakecore
from tests.hudi.write.helpers import copy_corpus_table, hudi_rs_table

WRITABLE = [
    "cow_v6_complexkeygen_hivestyle",
    "cow_v6_nonpartitioned",
    "cow_v6_simplekeygen_nonhivestyle",
    "cow_v6_timebasedkeygen_nonhivestyle",
    "mor_avro_v6_trips_8i1u",
    "mor_parquet_v6_nonpartitioned",
    "mor_parquet_v6_simplekeygen_nonhivestyle",
    "cow_v9_txns_nonpart_nometa",
    "mor_avro_v9_txns_nonpart_nometa",
    "cow_v6_simplekeygen_hivestyle_no_metafields",
    "cow_v8_simplekeygen_hivestyle_no_metafields",
    "mor_avro_v8_trips_8i3u1d",  # every metadata partition maintained (test_mdt_all_partitions)
    "mor_avro_v9_lance_nonhivestyle",  # Lance base files (test_lance_base_files)
]


def _data(table: pa.Table) -> list[dict[str, Any]]:
    keep = [
        c for c in table.column_names if not c.startswith("_hoodie_") or c == "_hoodie_record_key"
    ]
    rows = table.select(keep).to_pylist()
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


@pytest.mark.parametrize("name", WRITABLE)
def test_update_and_delete_in_a_hudi_written_table(tmp_path: Path, name: str) -> None:
    root = copy_corpus_table(name, tmp_path)
    table = lakecore.open(str(root))
    before = table.to_arrow()
    keys = list(table.snapshot().properties["hoodie.table.recordkey.fields"].split(","))
    properties = table.snapshot().properties
    precombine = properties.get("hoodie.table.precombine.field") or properties.get(
        "hoodie.table.ordering.fields"
    )
    data = before.drop_columns([c for c in before.column_names if c.startswith("_hoodie_")])
    changed = data.slice(0, 1)
    if precombine:  # win under event-time ordering
        i = changed.schema.get_field_index(precombine)
        bumped = pc.add(changed.column(precombine), pa.scalar(1000, changed.schema.field(i).type))
        changed = changed.set_column(i, changed.schema.field(i), bumped)
    table.merge(changed, on=keys).when_matched_update_all().execute()
    table.merge(data.slice(1, 1), on=keys).when_matched_delete().execute()

    # Tables without meta fields (virtual keys) have no key column: their key is the field.
    ident = "_hoodie_record_key" if "_hoodie_record_key" in before.column_names else keys[0]
    record_keys = before.column(ident).to_pylist()
    expected = [r for r in before.to_pylist() if r[ident] != record_keys[1]]
    expected = [
        {**r, **changed.to_pylist()[0]} if r[ident] == record_keys[0] else r for r in expected
    ]
    want = _data(pa.Table.from_pylist(expected, schema=before.schema))
    assert _data(lakecore.open(str(root)).to_arrow()) == want
    assert _data(hudi_rs_table(root)) == want
    if name.startswith("mor"):
        assert table.compact() is not None
        assert _data(lakecore.open(str(root)).to_arrow()) == want
        assert _data(hudi_rs_table(root)) == want
