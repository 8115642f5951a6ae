"""Shared helpers of the Hudi writer tests: tables in tmp dirs, and reading them two ways."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from lakecore_hudi.timeline.active import load_timeline
from lakecore_hudi.timeline.commit_metadata import encode_commit_metadata, parse_commit_metadata
from lakecore_hudi.write.writer import state_of

import lakecore
from lakecore.table import Table
from tests.corpus import CORPUS

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("ts", pa.int64()),
        pa.field("city", pa.string()),
    ]
)
Row = dict[str, Any]


def hudi_rs() -> Any:
    """The hudi-rs package (``hudi``); fails clearly if the tests' own package shadows it."""
    import hudi  # a test dependency: missing it must fail, not skip

    if not hasattr(hudi, "HudiTableBuilder"):
        pytest.fail(f"'import hudi' found {hudi.__file__}, not hudi-rs")
    return hudi


def create(
    root: Path,
    table_type: str = "COPY_ON_WRITE",
    version: str = "8",
    partitioned: bool = True,
    hive_style: bool = True,
    schema: pa.Schema = SCHEMA,
    **extra: str,
) -> Table:
    """A new empty table keyed on ``id``, ordered by ``ts``, partitioned by ``city``."""
    properties = {
        "record_key": "id",
        "precombine_field": "ts",
        "table_type": table_type,
        "table_version": version,
        "hive_style_partitioning": str(hive_style).lower(),
        **extra,
    }
    partition_by = ["city"] if partitioned else []
    return lakecore.create(str(root), schema, "hudi", partition_by, properties)


def rows(*items: tuple[int, str, int, str | None]) -> pa.Table:
    """Rows of ``SCHEMA`` from (id, name, ts, city) tuples."""
    return pa.Table.from_pylist(
        [{"id": i, "name": n, "ts": t, "city": c} for i, n, t, c in items], schema=SCHEMA
    )


def _sorted(table: pa.Table) -> list[Row]:
    data = table.drop_columns([c for c in table.column_names if c.startswith("_hoodie_")])
    return sorted(data.to_pylist(), key=lambda r: json.dumps(r, sort_keys=True, default=str))


def lakecore_rows(root: Path) -> list[Row]:
    """The table's rows as lakecore reads them (meta columns dropped), sorted."""
    return _sorted(lakecore.open(str(root)).to_arrow())


def hudi_rs_table(root: Path) -> pa.Table:
    """The table as hudi-rs reads it (snapshot query)."""
    table = hudi_rs().HudiTableBuilder.from_base_uri(str(root)).build()
    batches = table.read()
    if not batches:
        return pa.schema([]).empty_table()
    return pa.Table.from_batches(batches)


def hudi_rs_rows(root: Path) -> list[Row]:
    """The table's rows as hudi-rs reads them (meta columns dropped), sorted."""
    return _sorted(hudi_rs_table(root))


def expected_rows(model: dict[int, Row]) -> list[Row]:
    """A model (id -> row) as sorted rows."""
    return sorted(model.values(), key=lambda r: json.dumps(r, sort_keys=True, default=str))


def assert_reads(root: Path, model: dict[int, Row]) -> None:
    """lakecore and hudi-rs both read exactly ``model``'s rows, with the same record keys."""
    want = expected_rows(model)
    assert lakecore_rows(root) == want
    assert hudi_rs_rows(root) == want
    ours = lakecore.open(str(root)).to_arrow(columns=["_hoodie_record_key"]).column(0)
    theirs = hudi_rs_table(root)
    assert sorted(ours.to_pylist()) == sorted(str(i) for i in model)
    if model:
        assert sorted(theirs.column("_hoodie_record_key").to_pylist()) == sorted(
            str(i) for i in model
        )


def model_of(table: pa.Table) -> dict[int, Row]:
    """id -> row of ``table``."""
    return {r["id"]: r for r in table.to_pylist()}


def upsert(table: Table, data: pa.Table) -> int | str:
    """Commit ``HudiWriter.upsert(data)`` (Hudi's upsert: duplicate keys in ``data`` are
    combined by precombine value, unlike a MERGE)."""
    with table.transaction() as tx:
        writer = table._format_writer(tx.snapshot)
        tx.stage(*writer.upsert(data))  # type: ignore[attr-defined]
    assert tx.version is not None
    return tx.version


def copy_corpus_table(name: str, tmp_path: Path) -> Path:
    """A writable copy of corpus Hudi table ``name`` under ``tmp_path`` (fails clearly when
    the corpus is not available)."""
    source = CORPUS / "hudi" / name
    if not source.exists():
        pytest.fail(f"corpus table {name} is not available (set LAKECORE_CORPUS)")
    root = tmp_path / name
    shutil.copytree(source, root)
    for path in root.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)  # the corpus is read-only
    return root


def files_on_disk(root: Path) -> dict[str, dict[str, int]]:
    """partition -> data file name -> size, as storage holds them (``.hoodie`` and partition
    metadata files left out)."""
    out: dict[str, dict[str, int]] = {}
    for directory, _, names in os.walk(root):
        rel = os.path.relpath(directory, root)
        if rel.split(os.sep)[0] == ".hoodie":
            continue
        files = {n: (Path(directory) / n).stat().st_size for n in names}
        files.pop(".hoodie_partition_metadata", None)
        if files:
            out["" if rel == "." else rel] = files
    return out


def add_crafted_write_stat(table: Table, stat_path: str) -> None:
    """Rewrite the table's last completed commit so that it also lists a write stat naming
    ``stat_path`` (crafted metadata for path-escape tests; table version 8 encoding)."""
    timeline = load_timeline(table.storage, state_of(table.snapshot()).config)
    last = timeline.completed_write_instants()[-1]
    path = Path(table.storage.resolve(timeline.path_of(last)))
    meta = parse_commit_metadata(path.read_bytes(), str(path))
    (partition,) = meta.partition_to_write_stats
    first = meta.partition_to_write_stats[partition][0]
    crafted = type(first)(file_id=first.file_id, path=stat_path)
    stats = {partition: (*meta.partition_to_write_stats[partition], crafted)}
    bad = type(meta)(stats, meta.operation_type, meta.extra_metadata)
    path.write_bytes(encode_commit_metadata(bad, 8))
