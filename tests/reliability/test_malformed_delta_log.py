"""Malformed Delta log actions are ``CorruptTableError`` naming the file, never fewer rows.

The table has three data files (10 + 10 + 9 = 29 rows). Each case puts one malformed action
(an add without a path, a null add, a metaData without a schema, ...) into commit 2, or into
a checkpoint, and the read must refuse the table naming that file and what is wrong, instead
of reading 19 rows or reading partition values as nulls. Versions before the malformed
commit still read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lakecore
from lakecore.errors import CorruptTableError

from ..delta.builders import DeltaTableBuilder, field, metadata, protocol

ROWS = (10, 10, 9)
BROKEN = f"{2:020d}.json"
_ABSENT = object()  # a field left out of an action
_NULL = object()  # a field given as JSON null


def _table(root: Path) -> tuple[DeltaTableBuilder, list[dict[str, Any]]]:
    """Commit 0 creates (partitioned by p), commits 1..3 add one file each."""
    builder = DeltaTableBuilder(root)
    builder.init([field("id", "long"), field("p", "string")], ["p"])
    adds = []
    for version, n in enumerate(ROWS, start=1):
        ids = pa.array(range(version * 100, version * 100 + n), pa.int64())
        add = builder.data_file(
            f"p={version}/part-{version}.parquet", {"id": ids}, partition_values={"p": str(version)}
        )
        builder.commit(version, add)
        adds.append(add)
    return builder, adds


def _add_body(add: dict[str, Any], drop: str = "", **changes: Any) -> dict[str, Any]:
    body = {k: v for k, v in add["add"].items() if k != drop}
    body.update(changes)
    return body


# Lines replacing commit 2's add: (case id, JSON line built from the valid add, message part).
def _commit_cases() -> list[tuple[str, Any, str]]:
    def line(value: Any) -> Any:
        return lambda add: json.dumps(value(add) if callable(value) else value)

    meta = metadata([field("id", "long"), field("p", "string")], ["p"])["metaData"]

    def meta_without(name: str, value: Any = None) -> Any:
        def build(_: dict[str, Any]) -> str:
            body = {k: v for k, v in meta.items() if k != name}
            if value is not None:
                body[name] = None if value is _NULL else value
            return json.dumps({"metaData": body})

        return build

    proto = protocol()["protocol"]

    def proto_without(name: str, value: Any = None) -> Any:
        def build(_: dict[str, Any]) -> str:
            body = {k: v for k, v in proto.items() if k != name}
            if value is not None:
                body[name] = value
            return json.dumps({"protocol": body})

        return build

    return [
        ("add-null", line({"add": None}), "null add"),
        ("add-null-spaced", lambda _: ' {  "add" :  null }', "null add"),
        ("add-null-second-key", lambda _: '{"add":null,"other":1}', "null add"),
        ("add-empty", line({"add": {}}), "add action(s) without path"),
        ("add-no-path", line(lambda a: {"add": _add_body(a, "path")}), "without path"),
        ("add-null-path", line(lambda a: {"add": _add_body(a, path=None)}), "without path"),
        (
            "add-no-partition-values",
            line(lambda a: {"add": _add_body(a, "partitionValues")}),
            "without partitionValues",
        ),
        (
            "add-null-partition-values",
            line(lambda a: {"add": _add_body(a, partitionValues=None)}),
            "without partitionValues",
        ),
        ("add-no-size", line(lambda a: {"add": _add_body(a, "size")}), "without size"),
        ("add-null-size", line(lambda a: {"add": _add_body(a, size=None)}), "without size"),
        ("remove-null", line({"remove": None}), "null remove"),
        ("remove-empty", line({"remove": {}}), "remove action(s) without path"),
        (
            "remove-no-path",
            line({"remove": {"deletionTimestamp": 1, "dataChange": True}}),
            "remove action(s) without path",
        ),
        (
            "remove-null-path",
            line({"remove": {"path": None, "deletionTimestamp": 1, "dataChange": True}}),
            "remove action(s) without path",
        ),
        ("cdc-null", line({"cdc": None}), "null cdc"),
        (
            "cdc-no-path",
            line({"cdc": {"partitionValues": {}, "size": 1, "dataChange": False}}),
            "cdc action(s) without path",
        ),
        ("txn-null", line({"txn": None}), "null txn"),
        ("txn-no-version", line({"txn": {"appId": "app"}}), "txn action(s) without version"),
        ("txn-no-app-id", line({"txn": {"version": 3}}), "txn action(s) without appId"),
        ("line-null", lambda _: "null", "JSON null"),
        ("metadata-null", line({"metaData": None}), "metaData action is not an object"),
        ("metadata-empty", line({"metaData": {}}), "metaData action has no id"),
        ("metadata-no-id", meta_without("id"), "no id"),
        ("metadata-null-id", meta_without("id", _NULL), "no id"),
        ("metadata-no-partition-columns", meta_without("partitionColumns"), "no partitionColumns"),
        ("metadata-schema-not-string", meta_without("schemaString", 7), "schemaString is not"),
        (
            "metadata-partition-columns-not-list",
            meta_without("partitionColumns", "p"),
            "partitionColumns is not",
        ),
        ("protocol-null", line({"protocol": None}), "protocol action is not an object"),
        ("protocol-empty", line({"protocol": {}}), "no minReaderVersion"),
        ("protocol-no-reader", proto_without("minReaderVersion"), "no minReaderVersion"),
        ("protocol-no-writer", proto_without("minWriterVersion"), "no minWriterVersion"),
        (
            "protocol-reader-not-number",
            proto_without("minReaderVersion", "1"),
            "minReaderVersion is not",
        ),
    ]


COMMIT_CASES = _commit_cases()


def test_case_counts() -> None:
    assert len(COMMIT_CASES) == 32
    assert len({c[0] for c in COMMIT_CASES}) == len(COMMIT_CASES)
    assert len(CHECKPOINT_CASES) == 6


def test_the_well_formed_table_reads_29_rows(tmp_path: Path) -> None:
    builder, _ = _table(tmp_path / "t")
    table = lakecore.open(builder.uri)
    assert table.to_arrow().num_rows == sum(ROWS) == 29
    assert sorted(set(table.to_arrow().column("p").to_pylist())) == ["1", "2", "3"]


@pytest.mark.parametrize(
    ("case", "build", "message"), COMMIT_CASES, ids=[c[0] for c in COMMIT_CASES]
)
@pytest.mark.parametrize("position", ["alone", "among-valid-actions"])
def test_malformed_commit_action_is_corrupt(
    tmp_path: Path, case: str, build: Any, message: str, position: str
) -> None:
    builder, adds = _table(tmp_path / "t")
    bad = build(adds[1])
    if position == "alone":
        lines = [bad]
    else:  # a valid add kept, the malformed line between other valid actions
        lines = [json.dumps(adds[1]), bad, json.dumps({"commitInfo": {"operation": "WRITE"}})]
    builder.commit_path(2).write_text("\n".join(lines) + "\n")
    table = lakecore.open(builder.uri)
    with pytest.raises(CorruptTableError) as info:
        table.to_arrow()
    assert BROKEN in str(info.value) and message in str(info.value), str(info.value)
    with pytest.raises(CorruptTableError):
        lakecore.open(builder.uri).scan().to_arrow()
    # The versions before the malformed commit still read.
    assert table.to_arrow(version=1).num_rows == ROWS[0]


def _checkpoint_cases() -> list[tuple[str, Any, str]]:
    def with_add(**changes: Any) -> Any:
        def build(adds: list[dict[str, Any]]) -> list[dict[str, Any]]:
            body = {k: v for k, v in adds[1]["add"].items() if k not in changes}
            body.update({k: v for k, v in changes.items() if v is not _ABSENT})
            return [{"add": adds[0]["add"]}, {"add": body}]

        return build

    meta = metadata([field("id", "long"), field("p", "string")], ["p"])["metaData"]

    def with_meta(drop: str) -> Any:
        def build(adds: list[dict[str, Any]]) -> list[dict[str, Any]]:
            body = {k: v for k, v in meta.items() if k != drop}
            return [{"add": a["add"]} for a in adds[:2]] + [{"metaData": body}]

        return build

    return [
        ("add-null-path", with_add(path=None), "add action(s) without path"),
        ("add-no-path", with_add(path=_ABSENT), "add action(s) without path"),
        ("add-null-partition-values", with_add(partitionValues=None), "without partitionValues"),
        ("add-null-size", with_add(size=None), "without size"),
        ("metadata-no-partition-columns", with_meta("partitionColumns"), "no partitionColumns"),
        ("metadata-no-id", with_meta("id"), "no id"),
    ]


CHECKPOINT_CASES = _checkpoint_cases()


@pytest.mark.parametrize(
    ("case", "build", "message"), CHECKPOINT_CASES, ids=[c[0] for c in CHECKPOINT_CASES]
)
def test_malformed_checkpoint_action_is_corrupt(
    tmp_path: Path, case: str, build: Any, message: str
) -> None:
    builder, adds = _table(tmp_path / "t")
    actions = build(adds)
    base = [
        protocol(),
        *(
            []
            if any("metaData" in a for a in actions)
            else [metadata([field("id", "long"), field("p", "string")], ["p"])]
        ),
    ]
    (path,) = builder.checkpoint(2, [*base, *actions])
    builder.last_checkpoint(2)
    # The commits the checkpoint stands for are cleaned up: nothing to fall back to.
    for version in (0, 1, 2):
        builder.commit_path(version).unlink()
    with pytest.raises(CorruptTableError) as info:
        lakecore.open(builder.uri).to_arrow()
    assert path.name in str(info.value) and message in str(info.value), str(info.value)


def test_malformed_checkpoint_falls_back_to_the_commits(tmp_path: Path) -> None:
    # With the commits still there, the table reads from them (all 29 rows), not 19.
    builder, adds = _table(tmp_path / "t")
    broken = {k: v for k, v in adds[1]["add"].items() if k != "path"}
    builder.checkpoint(
        2,
        [
            protocol(),
            metadata([field("id", "long"), field("p", "string")], ["p"]),
            adds[0],
            {"add": broken},
        ],
    )
    builder.last_checkpoint(2)
    assert lakecore.open(builder.uri).to_arrow().num_rows == 29


def test_metadata_without_schema_string_reads_as_an_empty_schema(tmp_path: Path) -> None:
    # Delta before 1.0 wrote metaData without schemaString; Delta Spark reads an empty schema.
    builder = DeltaTableBuilder(tmp_path / "t")
    meta = metadata([field("id", "long")])
    del meta["metaData"]["schemaString"]
    builder.commit(0, protocol(), meta)
    table = lakecore.open(builder.uri).to_arrow()
    assert (table.num_rows, table.num_columns) == (0, 0)
