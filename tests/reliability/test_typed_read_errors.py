"""Malformed metadata and unreachable locations raise typed errors, never raw exceptions.

Each case was seen raising a raw ``KeyError``/``TypeError``/``JSONDecodeError``/botocore error
(by hand or by the metadata fuzzer, ``test_fuzz_metadata.py``); each now raises a
``LakecoreError`` subclass naming the file or location: ``CorruptTableError`` for damaged
metadata, ``SchemaError`` for a schema that is malformed or does not fit the data,
``UnsupportedFeatureError`` for a storage scheme lakecore cannot open, ``StorageError`` for a
storage it cannot reach.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from lakecore_delta.deletion_vectors import DeletionVectorDescriptor
from lakecore_delta.log.checkpoint import read_checkpoint_actions, read_checkpoint_adds
from lakecore_delta.log.segment import Checkpoint, list_log
from lakecore_delta.schema import parse_schema_string
from lakecore_hudi.avro_schema import avro_to_arrow

import lakecore
from lakecore.errors import (
    CorruptTableError,
    LakecoreError,
    SchemaError,
    StorageError,
    UnsupportedFeatureError,
)

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("ts", pa.int64()),
        pa.field("city", pa.string()),
    ]
)


def _rows(ids: list[int], name: str = "n", ts: int = 1) -> pa.Table:
    return pa.table(
        {
            "id": ids,
            "name": [f"{name}{i}" for i in ids],
            "ts": [ts] * len(ids),
            "city": ["x"] * len(ids),
        },
        schema=SCHEMA,
    )


# ----------------------------------------------------------------------------- locations


@pytest.mark.parametrize("uri", ["foo://x", "foo://bucket/table", "nosuchscheme://a/b/c"])
@pytest.mark.parametrize("fmt", [None, "delta"])
def test_unknown_uri_schemes_are_unsupported(uri: str, fmt: str | None) -> None:
    with pytest.raises(UnsupportedFeatureError, match="unknown URI scheme") as info:
        lakecore.open(uri, format=fmt)
    assert uri in str(info.value)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("fmt", [None, "delta", "hudi"])
def test_unreachable_s3_endpoint_is_a_storage_error(fmt: str | None) -> None:
    options = {
        "endpoint_url": f"http://127.0.0.1:{_closed_port()}",
        "key": "k",
        "secret": "s",
        "config_kwargs": {"connect_timeout": 1, "retries": {"max_attempts": 1}},
    }
    started = time.monotonic()
    with pytest.raises(StorageError) as info:
        lakecore.open("s3://bucket/table", format=fmt, storage_options=options)
    assert "s3://bucket/table" in str(info.value)
    assert time.monotonic() - started < 60


def test_log_path_with_an_unknown_scheme_is_unsupported(tmp_path: Path) -> None:
    table = lakecore.create(str(tmp_path / "t"), SCHEMA, "delta")
    table.append(_rows([1]))
    add = {"path": "foo://elsewhere/x.parquet", "partitionValues": {}, "size": 1}
    add |= {"modificationTime": 1, "dataChange": True}
    (tmp_path / "t" / "_delta_log" / f"{2:020d}.json").write_text(json.dumps({"add": add}))
    with pytest.raises(UnsupportedFeatureError, match=re.escape("foo://elsewhere/x.parquet")):
        lakecore.open(str(tmp_path / "t")).to_arrow()


# ----------------------------------------------------------------------------- Hudi


def _mor_log_file(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "t"
    properties = {
        "record_key": "id",
        "precombine_field": "ts",
        "table_type": "MERGE_ON_READ",
        "table_version": "8",
    }
    table = lakecore.create(str(root), SCHEMA, "hudi", [], properties)
    table.append(_rows([1, 2, 3]))
    table.upsert(_rows([2], "u", ts=2))
    (log,) = [p for p in root.rglob("*") if p.is_file() and ".log." in p.name]
    return root, log


# Same-length edits of the SCHEMA header of a log block (the block framing stays valid).
HEADER_EDITS = [
    (b'"type":"record"', b'"type":"recorX"', CorruptTableError),  # top level not a record
    (b'"fields":[', b'"fields":{', CorruptTableError),  # not JSON
    (b'{"name":"id"', b'{"nome":"id"', CorruptTableError),  # a field without a name
    (b'"type":"long"', b'"type":"lonX"', SchemaError),  # an undefined type name
    (b'"type":"record"', b'"type":"array" ', CorruptTableError),  # an array without items
]


@pytest.mark.parametrize(("old", "new", "error"), HEADER_EDITS)
def test_malformed_log_block_schema_header_is_typed(
    tmp_path: Path, old: bytes, new: bytes, error: type[LakecoreError]
) -> None:
    root, log = _mor_log_file(tmp_path)
    data = log.read_bytes()
    assert len(old) == len(new) and old in data
    log.write_bytes(data.replace(old, new, 1))
    with pytest.raises(error) as info:
        lakecore.open(str(root)).to_arrow()
    if error is CorruptTableError:
        assert log.name in str(info.value)


def test_header_edit_cases_ran() -> None:
    assert len(HEADER_EDITS) == 5


def _record(fields: Any) -> dict[str, Any]:
    return {"type": "record", "name": "r", "fields": fields}


MALFORMED_AVRO: list[Any] = [
    _record([{"type": "int"}]),  # field without a name
    _record([{"name": "a"}]),  # field without a type
    _record("not a list"),
    _record([{"name": "a", "type": {"type": "array"}}]),  # no items
    _record([{"name": "a", "type": {"type": "map"}}]),  # no values
    _record([{"name": "a", "type": {"type": "bytes", "logicalType": "decimal", "precision": "x"}}]),
    _record([{"name": "a", "type": {"type": "fixed", "logicalType": "decimal", "precision": 5}}]),
    _record([{"name": 7, "type": "int"}]),
    _record([{"name": "a", "type": {"type": "record", "fields": []}}]),  # nested, no name
    _record([None]),
]


@pytest.mark.parametrize("schema", MALFORMED_AVRO)
def test_malformed_avro_schemas_are_typed(schema: Any) -> None:
    with pytest.raises(SchemaError):
        avro_to_arrow(schema)
    with pytest.raises(CorruptTableError, match=re.escape("the/commit.file")):
        avro_to_arrow(json.dumps(schema), "the/commit.file")


def test_malformed_avro_cases_ran() -> None:
    assert len(MALFORMED_AVRO) == 10


def test_hudi_writer_schema_that_does_not_fit_the_files_is_a_schema_error(
    tmp_path: Path,
) -> None:
    root = tmp_path / "t"
    properties = {"record_key": "id", "precombine_field": "ts", "table_version": "6"}
    lakecore.create(str(root), SCHEMA, "hudi", [], properties).append(_rows([1, 2]))
    (commit,) = [p for p in (root / ".hoodie").glob("*.commit")]
    meta = json.loads(commit.read_bytes())
    avro = json.loads(meta["extraMetadata"]["schema"])
    for f in avro["fields"]:
        if f["name"] == "name":
            f["type"] = "null"  # the files hold strings
    meta["extraMetadata"]["schema"] = json.dumps(avro)
    commit.write_text(json.dumps(meta))
    with pytest.raises(SchemaError, match="'name'"):
        lakecore.open(str(root)).to_arrow()


# ----------------------------------------------------------------------------- Delta


def _delta(tmp_path: Path, **props: str) -> Path:
    root = tmp_path / "t"
    table = lakecore.create(str(root), SCHEMA, "delta", ["city"], props or None)
    table.append(_rows([1, 2]))
    table.append(_rows([3]))
    return root


def test_invalid_utf8_in_a_commit_is_corrupt(tmp_path: Path) -> None:
    root = _delta(tmp_path)
    commit = root / "_delta_log" / f"{2:020d}.json"
    data = commit.read_bytes()
    commit.write_bytes(data.replace(b'"path":"', b'"path":"\xf2', 1))
    with pytest.raises(CorruptTableError, match=commit.name):
        lakecore.open(str(root)).to_arrow()


def _edit_metadata(root: Path, change: Callable[[dict[str, Any]], None]) -> None:
    first = root / "_delta_log" / f"{0:020d}.json"
    actions = [json.loads(line) for line in first.read_text().splitlines() if line.strip()]
    for action in actions:
        change(action)
    first.write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def _set(kind: str, key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(action: dict[str, Any]) -> None:
        if kind in action:
            action[kind][key] = value

    return change


ACTION_EDITS = {
    "readerFeatures-bool": _set("protocol", "readerFeatures", True),
    "writerFeatures-string": _set("protocol", "writerFeatures", "deletionVectors"),
    "configuration-list": _set("metaData", "configuration", ["a", "b"]),
    "configuration-values": _set("metaData", "configuration", {"a": {"b": 1}}),
    "partitionColumns-ints": _set("metaData", "partitionColumns", [1]),
}


@pytest.mark.parametrize("edit", sorted(ACTION_EDITS))
def test_ill_typed_protocol_and_metadata_fields_are_corrupt(tmp_path: Path, edit: str) -> None:
    root = _delta(tmp_path)
    _edit_metadata(root, ACTION_EDITS[edit])
    with pytest.raises(CorruptTableError, match=re.escape("00000000000000000000.json")):
        lakecore.open(str(root)).to_arrow()


MALFORMED_SCHEMA_STRINGS = [
    {"type": "struct", "fields": True},
    {"type": "struct", "fields": ["a"]},
    {"type": "struct", "fields": [{"name": "a", "type": ["long"]}]},
    {"type": "struct", "fields": [{"name": 5, "type": "long"}]},
    {"type": "struct", "fields": [{"name": "a", "type": {"type": "array"}}]},
    {"type": "struct", "fields": [{"name": "a", "type": {"type": "struct", "fields": 3}}]},
    {"type": "struct", "fields": [{"name": "a", "type": "decimal(0,0)"}]},
    {"type": "struct", "fields": [{"name": "a", "type": "decimal(99,0)"}]},
    {"type": "struct", "fields": [{"name": "a", "type": {"type": "map", "keyType": None}}]},
]


@pytest.mark.parametrize("schema", MALFORMED_SCHEMA_STRINGS)
def test_malformed_schema_strings_are_schema_errors(schema: dict[str, Any]) -> None:
    with pytest.raises(SchemaError):
        parse_schema_string(json.dumps(schema))


def test_malformed_schema_cases_ran() -> None:
    assert len(MALFORMED_SCHEMA_STRINGS) == 9


@pytest.mark.parametrize(
    ("storage_type", "path", "offset", "size", "cardinality"),
    [
        ("u", None, 1, 10, 1),
        ("i", 42, None, 10, 1),
        ("u", "ab^^^^^^^^^^^^^^^^^^^^", 1, None, 1),
        ("u", "ab^^^^^^^^^^^^^^^^^^^^", 1, 10, "1"),
        ("u", "ab^^^^^^^^^^^^^^^^^^^^", True, 10, 1),
    ],
)
def test_ill_typed_deletion_vector_fields_are_corrupt(
    storage_type: str, path: Any, offset: Any, size: Any, cardinality: Any
) -> None:
    with pytest.raises(CorruptTableError):
        DeletionVectorDescriptor(storage_type, path, offset, size, cardinality)


def test_deletion_vector_prefix_cannot_leave_the_table() -> None:
    dv = DeletionVectorDescriptor("u", "../../" + "0" * 20, 1, 10, 1)
    with pytest.raises(CorruptTableError, match="escapes the table root"):
        _ = dv.relative_path


def _rewrite_checkpoint(root: Path, change: Callable[[list[dict[str, Any]]], pa.Table]) -> None:
    (cp,) = (root / "_delta_log").glob("*.checkpoint.parquet")
    pq.write_table(change(pq.read_table(cp).to_pylist()), cp)


def _retype(column: str, value: Any) -> Callable[[list[dict[str, Any]]], pa.Table]:
    def change(rows: list[dict[str, Any]]) -> pa.Table:
        for row in rows:
            if row.get(column) is not None:
                row[column] = value
        return pa.Table.from_pylist(rows)

    return change


def _retype_add(key: str, value: Any) -> Callable[[list[dict[str, Any]]], pa.Table]:
    def change(rows: list[dict[str, Any]]) -> pa.Table:
        for row in rows:
            if row.get("add") is not None:
                row["add"][key] = value
        return pa.Table.from_pylist(rows)

    return change


CHECKPOINT_EDITS = {
    "metaData-int": _retype("metaData", 5),
    "protocol-string": _retype("protocol", "p"),
    "txn-without-appId": _retype("txn", {"version": 3}),
    "add-partitionValues-list": _retype_add("partitionValues", [["city", "x"]]),
    "add-deletionVector-int": _retype_add("deletionVector", 7),
}


@pytest.mark.parametrize("edit", sorted(CHECKPOINT_EDITS))
def test_ill_typed_checkpoint_columns_are_corrupt(tmp_path: Path, edit: str) -> None:
    root = _delta(tmp_path)
    table = lakecore.open(str(root))
    with table.transaction() as tx:
        tx.set_app_transaction("app", 1)
    table.checkpoint()
    _rewrite_checkpoint(root, CHECKPOINT_EDITS[edit])
    storage = table.storage
    (segment_cp,) = [f for f in list_log(storage, 0) if "checkpoint" in f.path]
    checkpoint = Checkpoint(segment_cp.version, (segment_cp,))
    with pytest.raises(CorruptTableError, match="checkpoint"):
        actions = read_checkpoint_actions(storage, checkpoint)
        read_checkpoint_adds(storage, actions, ["city"])


def test_null_typed_deletion_vectors_in_a_checkpoint_read_as_none(tmp_path: Path) -> None:
    root = _delta(tmp_path)
    table = lakecore.open(str(root))
    table.checkpoint()
    _rewrite_checkpoint(root, _retype_add("deletionVector", None))
    assert sorted(lakecore.open(str(root)).to_arrow().column("id").to_pylist()) == [1, 2, 3]


# pyarrow's JSON reader (26.0) crashes the process (SIGSEGV) on a block that starts with a
# top-level null; the cases run in a subprocess so that a crash fails its test, not the run.
# One subprocess reads every case of the module (starting one per case cost ~1 s each); after
# a crash the cases not read yet go to a new subprocess.
_READ_IN_SUBPROCESS = """
import json, sys
import lakecore
from lakecore.errors import LakecoreError
for root in sys.argv[1:]:
    try:
        table = lakecore.open(root)
        out = f"{table.to_arrow().num_rows} {table.snapshot().files().num_rows}"
    except LakecoreError as exc:
        out = f"{type(exc).__name__} {exc}"
    print(json.dumps([root, out]), flush=True)
"""


def _read_elsewhere(roots: list[Path]) -> dict[Path, str]:
    """What a fresh process reads from each of ``roots`` ("rows files", or the error class
    and message); a root whose read crashed the process maps to a "crashed" message."""
    outs: dict[Path, str] = {}
    pending = list(roots)
    while pending:
        done = subprocess.run(
            [sys.executable, "-c", _READ_IN_SUBPROCESS, *map(str, pending)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        for line in done.stdout.splitlines():
            root, out = json.loads(line)
            outs[Path(root)] = out
        pending = [r for r in pending if r not in outs]
        if done.returncode == 0:
            assert not pending, f"no answer for {pending}: {done.stderr[-2000:]}"
            break
        assert pending, f"the reader failed ({done.returncode}): {done.stderr[-2000:]}"
        crashed, *pending = pending
        outs[crashed] = f"the read crashed ({done.returncode}): {done.stderr[-2000:]}"
    return outs


NULL_FIRSTS = ["null", " null", "\n\nnull", "null,", "null{}"]
NULL_STATS = ["null", "  null", "\nnull"]


def _null_first(root: Path, first: str, version: int) -> None:
    commit = root / "_delta_log" / f"{version:020d}.json"
    commit.write_bytes(first.encode() + b"\n" + commit.read_bytes())


def _null_stats(root: Path, stats: str) -> None:
    commit = root / "_delta_log" / f"{1:020d}.json"
    actions = [json.loads(line) for line in commit.read_text().splitlines() if line.strip()]
    for action in actions:
        if "add" in action:
            action["add"]["stats"] = stats
    commit.write_text("\n".join(json.dumps(a) for a in actions) + "\n")


@pytest.fixture(scope="module")
def null_reads(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[Any, ...], str]:
    """What a fresh process reads from each null case, keyed by the case's parameters."""
    roots: dict[tuple[Any, ...], Path] = {}
    for first in NULL_FIRSTS:
        for version in (0, 1):
            roots["first", first, version] = root = _delta(tmp_path_factory.mktemp("null"))
            _null_first(root, first, version)
    for stats in NULL_STATS:
        roots["stats", stats] = root = _delta(tmp_path_factory.mktemp("null"))
        _null_stats(root, stats)
    outs = _read_elsewhere(list(roots.values()))
    return {key: outs[root] for key, root in roots.items()}


@pytest.mark.parametrize("version", [0, 1])
@pytest.mark.parametrize("first", NULL_FIRSTS)
def test_commit_starting_with_null_is_corrupt_not_a_crash(
    null_reads: dict[tuple[Any, ...], str], first: str, version: int
) -> None:
    out = null_reads["first", first, version]
    assert out.startswith("CorruptTableError") and f"{version:020d}.json" in out, out


@pytest.mark.parametrize("stats", NULL_STATS)
def test_stats_that_are_json_null_read_as_no_stats(
    null_reads: dict[tuple[Any, ...], str], stats: str
) -> None:
    assert null_reads["stats", stats].split() == ["3", "2"]


@pytest.mark.parametrize(
    ("version", "key", "value"),
    [
        ("8", "hoodie.timeline.path", '{"type":"record","name":"r","fields":[]}'),
        ("8", "hoodie.timeline.history.path", "x" * 300),
        ("6", "hoodie.archivelog.folder", "a b\\tc"),
    ],
)
def test_hudi_timeline_directory_that_is_no_name_is_corrupt(
    tmp_path: Path, version: str, key: str, value: str
) -> None:
    root = tmp_path / "t"
    properties = {"record_key": "id", "precombine_field": "ts", "table_version": version}
    lakecore.create(str(root), SCHEMA, "hudi", [], properties).append(_rows([1]))
    config = root / ".hoodie" / "hoodie.properties"
    config.write_text(config.read_text() + f"{key}={value}\n")
    with pytest.raises(CorruptTableError, match=re.escape(key)):
        table = lakecore.open(str(root))
        table.to_arrow()
        table.history()


def _invalid_utf8(text: str) -> pa.Array:
    """A string array whose one value is ``text`` with its first byte made invalid UTF-8."""
    data = b"\xe2" + text.encode()[1:]
    offsets = pa.py_buffer(np.array([0, len(data)], dtype=np.int32).tobytes())
    return pa.Array.from_buffers(pa.string(), 1, [None, offsets, pa.py_buffer(data)])


def test_invalid_utf8_in_a_checkpoint_is_corrupt(tmp_path: Path) -> None:
    root = _delta(tmp_path)
    table = lakecore.open(str(root))
    table.checkpoint()
    (cp,) = (root / "_delta_log").glob("*.checkpoint.parquet")
    data = pq.read_table(cp)
    add = data.column("add").combine_chunks()
    row = pc.index(pc.is_valid(add), True).as_py()
    paths = pc.struct_field(add, "path").to_pylist()
    broken = [
        _invalid_utf8(p) if i == row else pa.array([p], pa.string()) for i, p in enumerate(paths)
    ]
    fields = [add.type.field(i) for i in range(add.type.num_fields)]
    children = [
        pa.concat_arrays(broken) if f.name == "path" else pc.struct_field(add, f.name)
        for f in fields
    ]
    new_add = pa.StructArray.from_arrays(children, fields=fields, mask=pc.is_null(add))
    pq.write_table(data.set_column(data.column_names.index("add"), "add", new_add), cp)
    storage = table.storage
    (log_file,) = [f for f in list_log(storage, 0) if "checkpoint" in f.path]
    actions = read_checkpoint_actions(storage, Checkpoint(log_file.version, (log_file,)))
    with pytest.raises(CorruptTableError, match=re.escape(cp.name)):
        read_checkpoint_adds(storage, actions, ["city"])
    # Readers fall back to the commits the damaged checkpoint summarises.
    assert sorted(lakecore.open(str(root)).to_arrow().column("id").to_pylist()) == [1, 2, 3]
