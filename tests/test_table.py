"""The Table facade: argument handling shared by every format."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakecore
from lakecore.arguments import to_epoch_ms
from lakecore.errors import SchemaError, VersionNotFoundError


def _tiny_delta(root: Path) -> Path:
    log = root / "_delta_log"
    log.mkdir(parents=True)
    pq.write_table(pa.table({"id": [1, 2, 3]}), root / "a.parquet")
    schema = {
        "type": "struct",
        "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}],
    }
    actions = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {
            "metaData": {
                "id": "t",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(schema),
                "partitionColumns": [],
                "configuration": {},
            }
        },
        {
            "add": {
                "path": "a.parquet",
                "partitionValues": {},
                "size": 1,
                "modificationTime": 0,
                "dataChange": True,
                "stats": '{"numRecords":3}',
            }
        },
    ]
    (log / f"{0:020d}.json").write_text("\n".join(json.dumps(a) for a in actions))
    return root


def test_to_epoch_ms_accepts_the_documented_forms() -> None:
    expected = 1_717_200_000_000
    assert to_epoch_ms(expected) == expected
    assert to_epoch_ms("2024-06-01T00:00:00Z") == expected
    assert to_epoch_ms("2024-06-01T02:00:00+02:00") == expected
    assert to_epoch_ms(dt.datetime(2024, 6, 1)) == expected  # naive = UTC
    assert to_epoch_ms(dt.date(2024, 6, 1)) == expected
    with pytest.raises(lakecore.VersionNotFoundError):
        to_epoch_ms("yesterday")
    with pytest.raises(lakecore.VersionNotFoundError):
        to_epoch_ms(True)


def test_table_basics(tmp_path: Path) -> None:
    table = lakecore.open(str(_tiny_delta(tmp_path / "t")))
    assert table.format == "delta"
    assert table.version == 0
    assert "delta" in repr(table)
    assert table.to_arrow(columns=["id"]).column("id").to_pylist() == [1, 2, 3]
    assert table.snapshot().files().num_rows == 1


def test_version_and_timestamp_are_exclusive(tmp_path: Path) -> None:
    table = lakecore.open(str(_tiny_delta(tmp_path / "t")))
    with pytest.raises(ValueError):
        table.snapshot(version=0, timestamp=0)


def test_unknown_column_is_a_schema_error(tmp_path: Path) -> None:
    table = lakecore.open(str(_tiny_delta(tmp_path / "t")))
    with pytest.raises(SchemaError, match="nope"):
        table.to_arrow(columns=["nope"])


def test_every_column_list_is_checked_by_one_rule(tmp_path: Path) -> None:
    snapshot = lakecore.open(str(_tiny_delta(tmp_path / "t"))).snapshot()
    name = snapshot.schema.names[0]
    for call in (snapshot.output_schema, snapshot.to_arrow, snapshot.scan):
        with pytest.raises(SchemaError, match=r"unknown column\(s\) \['nope'\]"):
            call(columns=["nope"])
        with pytest.raises(TypeError, match="not one string"):
            call(columns=name)  # type: ignore[arg-type]
    assert snapshot.output_schema([name]).names == [name]


def test_a_column_named_twice_is_read_once(tmp_path: Path) -> None:
    snapshot = lakecore.open(str(_tiny_delta(tmp_path / "t"))).snapshot()
    first, *rest = snapshot.schema.names
    twice = [first, *rest, first]
    scan = snapshot.scan(columns=twice)
    assert scan.columns == (first, *rest)
    assert snapshot.output_schema(twice).names == [first, *rest]
    assert scan.to_arrow().column_names == [first, *rest]


def test_missing_version_is_typed(tmp_path: Path) -> None:
    table = lakecore.open(str(_tiny_delta(tmp_path / "t")))
    with pytest.raises(VersionNotFoundError):
        table.snapshot(version=5)
    with pytest.raises(VersionNotFoundError):
        table.snapshot(version="latest")


@pytest.mark.parametrize("fmt", ["delta", "lance"])
def test_create_dated_in_the_past_takes_earlier_commits(tmp_path: Path, fmt: str) -> None:
    import pyarrow as pa

    import lakecore

    schema = pa.schema([("id", pa.int64())])
    t = lakecore.create(str(tmp_path / fmt), schema, format=fmt, timestamp_ms=1_600_000_000_000)
    assert t.snapshot().timestamp == 1_600_000_000_000
    with t.transaction(timestamp_ms=1_600_000_001_000) as tx:
        tx.append(pa.table({"id": [1]}))
    assert t.snapshot().timestamp == 1_600_000_001_000
    assert t.snapshot(timestamp=1_600_000_000_500).to_arrow().num_rows == 0
    assert t.snapshot(timestamp=1_600_000_001_000).to_arrow().num_rows == 1


def test_create_dated_needs_commit_timestamps(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import lakecore_delta.format as delta_format
    import pyarrow as pa

    import lakecore
    from lakecore.format import Capability

    monkeypatch.setattr(delta_format.DeltaFormat, "capabilities", frozenset({Capability.WRITE}))
    with pytest.raises(lakecore.UnsupportedFeatureError) as caught:
        lakecore.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]), timestamp_ms=1)
    assert caught.value.feature == "commit_timestamps"
    assert not (tmp_path / "t").exists()
