"""A completed Hudi replacecommit that does not say what it replaced is refused.

Hudi writers always write ``partitionToReplaceFileIds`` into a completed replacecommit (an
empty map when nothing was replaced). An emptied one read as "nothing replaced" brings the
replaced rows back (11 rows instead of 3); lakecore raises ``CorruptTableError`` when the
content is empty (hudi-rs refuses it too), when the key is missing or null (Java fails on
null), or when the map is empty while the requested / inflight plan names replaced groups.
An empty map with an empty plan is legal (an overwrite that replaced nothing).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from lakecore_hudi.timeline import avro_schemas
from lakecore_hudi.timeline.active import load_timeline
from lakecore_hudi.timeline.payload import AVRO_MAGIC, decode_payload, encode_avro
from lakecore_hudi.write.writer import state_of

import lakecore
from lakecore.errors import CorruptTableError
from tests.corpus import CORPUS

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("city", pa.string())])


def _rows(ids: list[int], cities: list[str]) -> pa.Table:
    return pa.table({"id": ids, "city": cities}, schema=SCHEMA)


def _rewrite(data: bytes, change: Callable[[dict[str, Any]], None]) -> bytes:
    record = decode_payload(data, "replacecommit")
    assert record is not None
    change(record)
    if data.startswith(AVRO_MAGIC):
        return encode_avro(avro_schemas.REPLACE_COMMIT_METADATA, record)
    return json.dumps(record).encode()


def _without_key(record: dict[str, Any]) -> None:
    record.pop("partitionToReplaceFileIds")


def _null(record: dict[str, Any]) -> None:
    record["partitionToReplaceFileIds"] = None


def _emptied_map(record: dict[str, Any]) -> None:
    record["partitionToReplaceFileIds"] = {}


# Mutations the completed metadata alone shows to be damaged.
MUTATIONS: dict[str, Callable[[bytes], bytes]] = {
    "empty": lambda data: b"",
    "whitespace": lambda data: b"\n  \n",
    "no-key": lambda data: _rewrite(data, _without_key),
    "null": lambda data: _rewrite(data, _null),
}
KINDS = [
    ("COPY_ON_WRITE", "8"),
    ("COPY_ON_WRITE", "6"),
    ("MERGE_ON_READ", "8"),
    ("MERGE_ON_READ", "6"),
]


def _overwritten(tmp_path: Path, table_type: str, version: str, where: str | None) -> Path:
    root = tmp_path / "t"
    properties = {
        "record_key": "id",
        "precombine_field": "id",
        "table_type": table_type,
        "table_version": version,
    }
    table = lakecore.create(str(root), SCHEMA, "hudi", ["city"], properties)
    table.append(_rows(list(range(8)), ["a", "b"] * 4))
    if where is None:
        table.overwrite(_rows([100, 101, 102], ["a"] * 3))
        assert table.to_arrow().num_rows == 3
    else:
        table.overwrite(_rows([100, 101, 102], ["a"] * 3), where=where)
        assert table.to_arrow().num_rows == 7
    return root


def _completed_replace(root: Path) -> Path:
    table = lakecore.open(str(root))
    timeline = load_timeline(table.storage, state_of(table.snapshot()).config)
    (replace,) = [i for i in timeline.completed() if i.action == "replacecommit"]
    return Path(table.storage.resolve(timeline.path_of(replace)))


@pytest.mark.parametrize("where", [None, "city = 'a'"], ids=["table", "partition"])
@pytest.mark.parametrize(("table_type", "version"), KINDS)
@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_replacecommit_without_replaced_groups_is_corrupt(
    tmp_path: Path, table_type: str, version: str, where: str | None, mutation: str
) -> None:
    root = _overwritten(tmp_path, table_type, version, where)
    path = _completed_replace(root)
    path.write_bytes(MUTATIONS[mutation](path.read_bytes()))
    with pytest.raises(CorruptTableError, match="replacecommit"):
        lakecore.open(str(root)).to_arrow()
    with pytest.raises(CorruptTableError, match="replacecommit"):
        lakecore.open(str(root)).append(_rows([7], ["b"]))


def test_replacecommit_cases_ran() -> None:
    assert len(MUTATIONS) * len(KINDS) * 2 == 32


def test_overwrite_of_an_empty_table_replaces_nothing_and_reads(tmp_path: Path) -> None:
    root = tmp_path / "t"
    properties = {"record_key": "id", "precombine_field": "id", "table_version": "8"}
    table = lakecore.create(str(root), SCHEMA, "hudi", ["city"], properties)
    table.overwrite(_rows([1, 2], ["a", "b"]))  # an empty plan and an empty replaced map
    assert sorted(lakecore.open(str(root)).to_arrow().column("id").to_pylist()) == [1, 2]


CLUSTERING_MUTATIONS = {**MUTATIONS, "empty-map": lambda data: _rewrite(data, _emptied_map)}


@pytest.mark.parametrize("mutation", sorted(CLUSTERING_MUTATIONS))
def test_clustering_replacecommit_emptied_is_corrupt(tmp_path: Path, mutation: str) -> None:
    """A clustering written by Hudi (Spark): its requested plan names the replaced groups, so
    an emptied map is damage too."""
    source = CORPUS / "hudi" / "cow_v9_txns_nonpart_nometa"
    root = tmp_path / "t"
    shutil.copytree(source, root)
    for f in root.rglob("*"):
        f.chmod(0o755 if f.is_dir() else 0o644)
    expected = lakecore.open(str(root)).to_arrow().num_rows
    (path,) = (root / ".hoodie" / "timeline").glob("*.replacecommit")
    path.write_bytes(CLUSTERING_MUTATIONS[mutation](path.read_bytes()))
    with pytest.raises(CorruptTableError, match="replacecommit"):
        lakecore.open(str(root)).to_arrow()
    assert expected > 0
