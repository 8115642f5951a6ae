"""TableFeatures of Hudi snapshots: ``system_columns`` (the ``_hoodie_*`` meta columns the
snapshot schema holds) and ``record_key`` (``hoodie.table.recordkey.fields``)."""

from __future__ import annotations

import pytest

import lakecore
from tests.corpus import CORPUS

META = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)
CASES = {
    "cow_v6_complexkeygen_hivestyle": ("id", "name"),
    "cow_v6_nonpartitioned": ("id",),
    "mor_avro_v8_trips_8i3u1d": ("uuid",),
}


@pytest.mark.parametrize(("name", "key"), sorted(CASES.items()))
def test_corpus_tables(name: str, key: tuple[str, ...]) -> None:
    root = CORPUS / "hudi" / name
    if not root.exists():
        pytest.fail(f"corpus table {name} is not available (set LAKECORE_CORPUS)")
    snapshot = lakecore.open(str(root)).snapshot()
    assert snapshot.features.record_key == key
    assert snapshot.features.system_columns == META
    assert list(snapshot.schema.names[:5]) == list(META)
    dropped = lakecore.open(str(root), options={"drop_meta_fields": "true"}).snapshot()
    assert dropped.features.system_columns == ()
    assert dropped.features.record_key == key
