"""Snapshot.features: the typed, format-neutral view of what a table uses (Delta protocol
versions and features, implied legacy features included; Hudi table version and type)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from lakecore_delta.protocol import table_features
from rich.console import Console

import lakecore
from lakecore.demo import HUDI_SHOWCASE, hudi_showcase
from lakecore.format import TableFeatures

from .corpus import CORPUS

SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string())])

DELTA_PROTOCOLS: list[tuple[dict[str, Any], TableFeatures]] = [
    (
        {"minReaderVersion": 1, "minWriterVersion": 2},
        TableFeatures(
            "1.2", frozenset(), frozenset({"appendOnly", "invariants"}), plain_data_files=True
        ),
    ),
    (
        {"minReaderVersion": 1, "minWriterVersion": 4},
        TableFeatures(
            "1.4",
            frozenset(),
            frozenset(
                {
                    "appendOnly",
                    "invariants",
                    "checkConstraints",
                    "changeDataFeed",
                    "generatedColumns",
                }
            ),
            plain_data_files=True,
        ),
    ),
    (
        {"minReaderVersion": 2, "minWriterVersion": 5},
        TableFeatures(
            "2.5",
            frozenset({"columnMapping"}),
            frozenset(
                {
                    "appendOnly",
                    "invariants",
                    "checkConstraints",
                    "changeDataFeed",
                    "generatedColumns",
                    "columnMapping",
                }
            ),
            plain_data_files=True,
        ),
    ),
    (
        {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["deletionVectors"],
            "writerFeatures": ["deletionVectors", "appendOnly"],
        },
        TableFeatures(
            "3.7",
            frozenset({"deletionVectors"}),
            frozenset({"deletionVectors", "appendOnly"}),
            merge_on_read=True,
            plain_data_files=True,
        ),
    ),
    (
        {"minReaderVersion": 3, "minWriterVersion": 7},
        TableFeatures("3.7", plain_data_files=True),
    ),
]


@pytest.mark.parametrize(("protocol", "expected"), DELTA_PROTOCOLS)
def test_delta_protocol_to_features(protocol: dict[str, Any], expected: TableFeatures) -> None:
    assert table_features(protocol) == expected


def test_delta_protocol_with_a_bad_version_is_corrupt() -> None:
    with pytest.raises(lakecore.CorruptTableError):
        table_features({"minReaderVersion": "x", "minWriterVersion": 2})


def test_delta_snapshot_features(tmp_path: Path) -> None:
    plain = lakecore.create(str(tmp_path / "a"), SCHEMA).snapshot().features
    assert plain == TableFeatures(
        "1.2", frozenset(), frozenset({"appendOnly", "invariants"}), plain_data_files=True
    )
    dv = lakecore.create(
        str(tmp_path / "b"), SCHEMA, properties={"delta.enableDeletionVectors": "true"}
    ).snapshot()
    assert "deletionVectors" in dv.features.reader_features & dv.features.writer_features
    assert dv.features.merge_on_read
    assert not hasattr(dv, "protocol")


@pytest.mark.parametrize(
    ("table_type", "version"),
    [("COPY_ON_WRITE", "8"), ("MERGE_ON_READ", "8"), ("MERGE_ON_READ", "6")],
)
def test_hudi_snapshot_features(tmp_path: Path, table_type: str, version: str) -> None:
    properties = {"record_key": "id", "table_type": table_type, "table_version": version}
    table = lakecore.create(str(tmp_path / "t"), SCHEMA, "hudi", ["part"], properties)
    table.append(pa.table({"id": [1], "part": ["a"]}))
    features = table.snapshot().features
    meta = tuple(table.snapshot().schema.names[:5])
    assert meta == (
        "_hoodie_commit_time",
        "_hoodie_commit_seqno",
        "_hoodie_record_key",
        "_hoodie_partition_path",
        "_hoodie_file_name",
    )
    assert features == TableFeatures(
        version,
        merge_on_read=table_type == "MERGE_ON_READ",
        system_columns=meta,
        record_key=("id",),
    )


def test_hudi_showcase_prints_the_table_type_from_features() -> None:
    if not (CORPUS / "hudi" / HUDI_SHOWCASE).is_dir():
        pytest.fail(f"corpus table {HUDI_SHOWCASE} is not available (set LAKECORE_CORPUS)")
    out = io.StringIO()
    hudi_showcase(Console(file=out, width=200), CORPUS)
    assert "table type merge-on-read version 8" in out.getvalue()
