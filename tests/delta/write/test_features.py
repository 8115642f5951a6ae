"""Protocol selection at create: the smallest protocol for the schema and properties."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lakecore_delta.write import commit as commit_module
from lakecore_delta.write.writer import state_of

import lakecore

from .helpers import (
    canonical,
    commit_lines,
    data_files,
    delta_rs_rows,
    lakecore_rows,
    protocol_of,
)

deltalake = pytest.importorskip("deltalake", reason="interop tests need deltalake")

PLAIN = pa.schema([("id", pa.int64()), ("name", pa.string())])


def plain(i: int) -> pa.Table:
    """One row of ``PLAIN`` (every column: appends must carry them all)."""
    return pa.table({"id": [i], "name": pa.nulls(1, pa.string())})


LEGACY = ["appendOnly", "invariants"]

CASES: list[tuple[str, pa.Schema, dict[str, str], dict[str, Any]]] = [
    ("plain", PLAIN, {}, {"minReaderVersion": 1, "minWriterVersion": 2}),
    (
        "timestamp_ntz",
        pa.schema([("id", pa.int64()), ("at", pa.timestamp("us"))]),
        {},
        {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["timestampNtz"],
            "writerFeatures": [*LEGACY, "timestampNtz"],
        },
    ),
    (
        "timestamp_ntz nested in a list of structs",
        pa.schema([("id", pa.int64()), ("l", pa.list_(pa.struct([("at", pa.timestamp("us"))])))]),
        {},
        {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["timestampNtz"],
            "writerFeatures": [*LEGACY, "timestampNtz"],
        },
    ),
    (
        "change data feed",
        PLAIN,
        {"delta.enableChangeDataFeed": "true"},
        {"minReaderVersion": 1, "minWriterVersion": 4},
    ),
    (
        "check constraint",
        PLAIN,
        {"delta.constraints.positive": "id > 0"},
        {"minReaderVersion": 1, "minWriterVersion": 3},
    ),
    (
        "column mapping",
        PLAIN,
        {"delta.columnMapping.mode": "name"},
        {"minReaderVersion": 2, "minWriterVersion": 5},
    ),
    (
        "deletion vectors",
        PLAIN,
        {"delta.enableDeletionVectors": "true"},
        {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["deletionVectors"],
            "writerFeatures": [*LEGACY, "deletionVectors"],
        },
    ),
    (
        "in-commit timestamps",
        PLAIN,
        {"delta.enableInCommitTimestamps": "true"},
        {
            "minReaderVersion": 1,
            "minWriterVersion": 7,
            "writerFeatures": [*LEGACY, "inCommitTimestamp"],
        },
    ),
    (
        "change data feed and deletion vectors",
        PLAIN,
        {"delta.enableChangeDataFeed": "true", "delta.enableDeletionVectors": "true"},
        {
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": ["deletionVectors"],
            "writerFeatures": [*LEGACY, "changeDataFeed", "deletionVectors"],
        },
    ),
    (
        "false flags add nothing",
        PLAIN,
        {"delta.enableChangeDataFeed": "false", "delta.enableDeletionVectors": "FALSE"},
        {"minReaderVersion": 1, "minWriterVersion": 2},
    ),
]


def _normalized(protocol: dict[str, Any]) -> dict[str, Any]:
    return {k: sorted(v) if isinstance(v, list) else v for k, v in protocol.items()}


@pytest.mark.parametrize(
    "schema,properties,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_protocol_at_create(
    tmp_path: Path, schema: pa.Schema, properties: dict[str, str], expected: dict[str, Any]
) -> None:
    path = tmp_path / "t"
    table = lakecore.create(str(path), schema, properties=properties)
    assert _normalized(protocol_of(path)) == _normalized(expected)
    assert _normalized(state_of(table.snapshot()).protocol) == _normalized(expected)
    # A plain append keeps the protocol; delta-rs agrees on what it is.
    rows = pa.Table.from_pylist([{"id": 1}, {"id": 2}], schema=schema)
    assert table.append(rows).version == 1
    assert all("protocol" not in a for a in commit_lines(path, 1))
    theirs = deltalake.DeltaTable(str(path)).protocol()
    assert (theirs.min_reader_version, theirs.min_writer_version) == (
        expected["minReaderVersion"],
        expected["minWriterVersion"],
    )
    assert sorted(theirs.writer_features or []) == sorted(expected.get("writerFeatures", []))
    assert lakecore_rows(path) == delta_rs_rows(path) == canonical(rows)


def test_timestamp_ntz_round_trips_wall_clock(tmp_path: Path) -> None:
    path = tmp_path / "t"
    schema = pa.schema([("id", pa.int64()), ("at", pa.timestamp("us"))])
    table = lakecore.create(str(path), schema, partition_by=[])
    rows = pa.table(
        {"id": [1, 2], "at": [dt.datetime(1900, 1, 1, 0, 0, 0, 1), dt.datetime(2262, 4, 11)]},
        schema=schema,
    )
    table.append(rows)
    assert lakecore_rows(path) == delta_rs_rows(path) == canonical(rows)


def _mapped_table(path: Path, schema: pa.Schema, rows: list[dict[str, Any]]) -> pa.Table:
    table = lakecore.create(
        str(path), schema, partition_by=["p"], properties={"delta.columnMapping.mode": "name"}
    )
    data = pa.Table.from_pylist(rows, schema=schema)
    table.append(data)
    return data


def _all_physical(t: pa.DataType) -> bool:
    """Every field name inside ``t`` (struct fields, through lists and maps) is a ``col-`` name."""
    if pa.types.is_struct(t):
        return all(
            t.field(i).name.startswith("col-") and _all_physical(t.field(i).type)
            for i in range(t.num_fields)
        )
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _all_physical(t.value_type)
    if pa.types.is_map(t):
        return _all_physical(t.key_type) and _all_physical(t.item_type)
    return True


def _assert_physical_files(path: Path, count: int) -> None:
    files = sorted(data_files(path))
    assert len(files) == count
    for f in files:
        assert f.startswith("col-"), f  # the partition directory uses the physical name
        schema = pq.read_schema(path / f)
        assert schema.names and all(n.startswith("col-") for n in schema.names), schema.names
        assert all(_all_physical(field.type) for field in schema), schema


def test_column_mapping_writes_physical_names(tmp_path: Path) -> None:
    path = tmp_path / "t"
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("p", pa.string()),
            ("s", pa.struct([("inner name", pa.string()), ("n", pa.struct([("m", pa.int32())]))])),
        ]
    )
    rows = _mapped_table(
        path,
        schema,
        [
            {"id": 1, "p": "a", "s": {"inner name": "x", "n": {"m": 1}}},
            {"id": 2, "p": "b c", "s": None},
        ],
    )
    _assert_physical_files(path, 2)
    assert lakecore_rows(path) == delta_rs_rows(path) == canonical(rows)
    assert lakecore.open(str(path)).to_arrow().schema.names == schema.names


def test_column_mapping_reaches_structs_in_lists_and_maps(tmp_path: Path) -> None:
    path = tmp_path / "t"
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("p", pa.string()),
            ("l", pa.list_(pa.struct([("x", pa.int32())]))),
            ("m", pa.map_(pa.string(), pa.struct([("y", pa.string())]))),
        ]
    )
    rows = _mapped_table(
        path,
        schema,
        [{"id": 1, "p": "a", "l": [{"x": 1}, None], "m": [("k", {"y": "v"})]}, {"id": 2}],
    )
    _assert_physical_files(path, 2)
    assert lakecore_rows(path) == delta_rs_rows(path) == canonical(rows)


def _ict(path: Path, version: int) -> int:
    first = commit_lines(path, version)[0]
    assert "commitInfo" in first, f"commit {version} does not start with commitInfo"
    assert next(iter(first["commitInfo"])) == "inCommitTimestamp"
    value: int = first["commitInfo"]["inCommitTimestamp"]
    return value


def test_in_commit_timestamps_are_first_and_increasing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t"
    table = lakecore.create(str(path), PLAIN, properties={"delta.enableInCommitTimestamps": "true"})
    for i in range(3):
        table.append(plain(i))
    # The clock goes back an hour: the timestamps must still increase.
    real = commit_module.now_ms
    monkeypatch.setattr(commit_module, "now_ms", lambda: real() - 3_600_000)
    table.append(plain(3))
    table.delete()
    monkeypatch.undo()
    times = [_ict(path, v) for v in range(6)]
    assert times == sorted(times) and len(set(times)) == 6, times


def test_time_travel_by_in_commit_timestamp(tmp_path: Path) -> None:
    """File mtimes are scrambled; lakecore must go by the in-commit timestamps."""
    path = tmp_path / "t"
    table = lakecore.create(str(path), PLAIN, properties={"delta.enableInCommitTimestamps": "true"})
    for i in range(4):
        table.append(plain(i))
    times = [_ict(path, v) for v in range(5)]
    log = path / "_delta_log"
    for v in range(5):  # reversed, decades away from the commit times
        os.utime(log / f"{v:020d}.json", (1_000_000 + (10 - v) * 1000,) * 2)
    for v, t in enumerate(times):
        assert table.snapshot(timestamp=t).version == v
        ids = sorted(r["id"] for r in table.snapshot(timestamp=t).to_arrow().to_pylist())
        assert ids == list(range(v))
    assert table.snapshot(timestamp=times[4] + 10_000).version == 4
    with pytest.raises(lakecore.VersionNotFoundError):
        table.snapshot(timestamp=times[0] - 1)
    assert [h.timestamp for h in table.history()] == times[::-1]


def test_in_commit_timestamp_after_a_retry_exceeds_the_winner(tmp_path: Path) -> None:
    """The winner's clock ran ahead: the loser's retry must still commit a later time."""
    path = tmp_path / "t"
    table = lakecore.create(str(path), PLAIN, properties={"delta.enableInCommitTimestamps": "true"})
    table.append(plain(0))
    loser = table.transaction()
    loser.append(plain(1))
    real = commit_module.now_ms
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(commit_module, "now_ms", lambda: real() + 60_000)  # a writer ahead by 1 min
        table.append(plain(2))
    assert loser.commit().version == 3
    times = [_ict(path, v) for v in range(4)]
    assert times[3] > times[2], times


def test_protocol_cases_all_ran() -> None:
    assert len(CASES) == 10 and len({c[0] for c in CASES}) == 10
