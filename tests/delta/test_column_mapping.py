"""Column mapping: name mode (physical ``col-<uuid>`` names) and id mode (Parquet field ids)."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakecore
from lakecore.model.schema import field_id, physical_name

from .builders import DeltaTableBuilder, commit_info, field, metadata, protocol, struct

CM_PROTOCOL = protocol(2, 5)
CM_FEATURE_PROTOCOL = protocol(3, 7, ["columnMapping"], ["columnMapping"])

ID_PHYS = "col-1d5a7b2e-0000-4000-8000-000000000001"
S_PHYS = "col-1d5a7b2e-0000-4000-8000-000000000002"
X_PHYS = "col-1d5a7b2e-0000-4000-8000-000000000003"
Y_PHYS = "col-1d5a7b2e-0000-4000-8000-000000000004"
P_PHYS = "col-1d5a7b2e-0000-4000-8000-000000000005"


def cm(name: str, dtype: Any, fid: int, phys: str) -> dict[str, Any]:
    return field(
        name,
        dtype,
        metadata={"delta.columnMapping.id": fid, "delta.columnMapping.physicalName": phys},
    )


def schema_fields(
    id_name: str = "id", x_name: str = "x", extra: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    return [
        cm(id_name, "long", 1, ID_PHYS),
        cm("s", struct(cm(x_name, "integer", 3, X_PHYS), cm("y", "string", 4, Y_PHYS)), 2, S_PHYS),
        cm("p", "string", 5, P_PHYS),
        *(extra or []),
    ]


def cm_config(mode: str, max_id: int = 5) -> dict[str, str]:
    return {"delta.columnMapping.mode": mode, "delta.columnMapping.maxColumnId": str(max_id)}


def fid(n: int) -> dict[bytes, bytes]:
    return {b"PARQUET:field_id": str(n).encode()}


def physical_file(names: dict[str, str] | None = None, with_ids: bool = False) -> pa.Table:
    """Rows id=1,2 with s={x: 10*id, y: 'y<id>'} under physical (or given) column names."""
    n = {"id": ID_PHYS, "s": S_PHYS, "x": X_PHYS, "y": Y_PHYS, **(names or {})}

    def meta(k: int) -> dict[bytes, bytes] | None:
        return fid(k) if with_ids else None

    s_type = pa.struct(
        [
            pa.field(n["x"], pa.int32(), metadata=meta(3)),
            pa.field(n["y"], pa.string(), metadata=meta(4)),
        ]
    )
    schema = pa.schema(
        [
            pa.field(n["id"], pa.int64(), metadata=meta(1)),
            pa.field(n["s"], s_type, metadata=meta(2)),
        ]
    )
    return pa.table(
        {
            n["id"]: pa.array([1, 2], pa.int64()),
            n["s"]: pa.array([{n["x"]: 10, n["y"]: "y1"}, {n["x"]: 20, n["y"]: "y2"}], s_type),
        }
    ).cast(schema)


PHYSICAL_STATS = json.dumps(
    {
        "numRecords": 2,
        "minValues": {ID_PHYS: 1, S_PHYS: {X_PHYS: 10, Y_PHYS: "y1"}},
        "maxValues": {ID_PHYS: 2, S_PHYS: {X_PHYS: 20, Y_PHYS: "y2"}},
        "nullCount": {ID_PHYS: 0, S_PHYS: {X_PHYS: 0, Y_PHYS: 0}},
    }
)

EXPECTED = [
    {"id": 1, "s": {"x": 10, "y": "y1"}, "p": "A"},
    {"id": 2, "s": {"x": 20, "y": "y2"}, "p": "A"},
]


def mapped_table(builder: DeltaTableBuilder, mode: str, data: pa.Table, proto: dict) -> None:
    builder.commit(
        0,
        commit_info("CREATE TABLE"),
        proto,
        metadata(schema_fields(), ["p"], cm_config(mode)),
    )
    a = builder.data_file(
        "part-0.parquet", data, partition_values={P_PHYS: "A"}, stats=PHYSICAL_STATS
    )
    builder.commit(1, commit_info(), a)


def read(uri: str, version: int | None = None) -> list[dict[str, Any]]:
    return lakecore.open(uri).to_arrow(version=version).sort_by("id").to_pylist()


@pytest.mark.parametrize("proto", [CM_PROTOCOL, CM_FEATURE_PROTOCOL], ids=["v2-5", "features"])
def test_name_mode_reads_physical_columns(builder: DeltaTableBuilder, proto: dict) -> None:
    mapped_table(builder, "name", physical_file(), proto)
    snap = lakecore.open(builder.uri).snapshot()
    assert snap.schema.names == ["id", "s", "p"]
    assert physical_name(snap.schema.field("id")) == ID_PHYS
    assert field_id(snap.schema.field("s")) == 2
    assert snap.to_arrow().sort_by("id").to_pylist() == EXPECTED
    files = snap.files()
    assert files.column("partition").to_pylist() == [{"p": "A"}]
    assert files.column("min").to_pylist() == [{"id": 1, "s": {"x": 10, "y": "y1"}}]
    assert files.column("null_count").to_pylist() == [{"id": 0, "s": {"x": 0, "y": 0}}]
    assert snap.to_arrow(columns=["s"]).column("s").to_pylist()[0] == {"x": 10, "y": "y1"}


def test_id_mode_reads_by_field_id_not_by_name(builder: DeltaTableBuilder) -> None:
    # The file's column names are deliberately misleading: each carries the physical name of
    # another column. Only the field ids say which is which.
    misleading = physical_file(
        names={"id": S_PHYS + "-not", "s": ID_PHYS, "x": Y_PHYS, "y": X_PHYS}, with_ids=True
    )
    mapped_table(builder, "id", misleading, CM_FEATURE_PROTOCOL)
    assert read(builder.uri) == EXPECTED


def test_id_mode_with_plain_names(builder: DeltaTableBuilder) -> None:
    data = physical_file(names={"id": "a", "s": "b", "x": "c", "y": "d"}, with_ids=True)
    assert pq.read_schema(_write(builder, data)).field("b").type.field("c").metadata == fid(3)
    mapped_table(builder, "id", data, CM_PROTOCOL)
    assert read(builder.uri) == EXPECTED


def _write(builder: DeltaTableBuilder, data: pa.Table) -> str:
    path = builder.root / "probe.parquet"
    pq.write_table(data, path)
    return str(path)


@pytest.mark.parametrize("mode", ["name", "id"])
def test_renamed_columns_read_right(builder: DeltaTableBuilder, mode: str) -> None:
    mapped_table(builder, mode, physical_file(with_ids=mode == "id"), CM_FEATURE_PROTOCOL)
    # v2: rename id -> ident and s.x -> s.xx (physical names and ids unchanged)
    builder.commit(
        2,
        commit_info("RENAME COLUMN"),
        metadata(schema_fields(id_name="ident", x_name="xx"), ["p"], cm_config(mode)),
    )
    table = lakecore.open(builder.uri)
    assert read(builder.uri, 1) == EXPECTED
    renamed = table.to_arrow(version=2).sort_by("ident")
    assert renamed.schema.names == ["ident", "s", "p"]
    assert renamed.to_pylist() == [
        {"ident": 1, "s": {"xx": 10, "y": "y1"}, "p": "A"},
        {"ident": 2, "s": {"xx": 20, "y": "y2"}, "p": "A"},
    ]
    files = table.snapshot(2).files()
    assert files.column("max").to_pylist() == [{"ident": 2, "s": {"xx": 20, "y": "y2"}}]


@pytest.mark.parametrize("mode", ["name", "id"])
def test_dropped_and_readded_column_is_null_in_old_files(
    builder: DeltaTableBuilder, mode: str
) -> None:
    mapped_table(builder, mode, physical_file(with_ids=mode == "id"), CM_FEATURE_PROTOCOL)
    new_id = cm("id", "long", 6, "col-1d5a7b2e-0000-4000-8000-000000000006")
    fields = [new_id, *schema_fields()[1:]]
    builder.commit(2, commit_info("DROP+ADD COLUMN"), metadata(fields, ["p"], cm_config(mode, 6)))
    out = lakecore.open(builder.uri).to_arrow()
    assert out.column("id").to_pylist() == [None, None]
    assert sorted(r["x"] for r in out.column("s").to_pylist()) == [10, 20]


@pytest.mark.parametrize("mode", ["name", "id"])
def test_added_nested_field_is_null_in_old_files(builder: DeltaTableBuilder, mode: str) -> None:
    mapped_table(builder, mode, physical_file(with_ids=mode == "id"), CM_FEATURE_PROTOCOL)
    fields = schema_fields()
    fields[1] = cm(
        "s",
        struct(
            cm("x", "integer", 3, X_PHYS),
            cm("y", "string", 4, Y_PHYS),
            cm("z", "double", 6, "col-1d5a7b2e-0000-4000-8000-000000000006"),
        ),
        2,
        S_PHYS,
    )
    builder.commit(2, commit_info("ADD COLUMN"), metadata(fields, ["p"], cm_config(mode, 6)))
    out = lakecore.open(builder.uri).to_arrow().sort_by("id")
    assert out.column("s").to_pylist() == [
        {"x": 10, "y": "y1", "z": None},
        {"x": 20, "y": "y2", "z": None},
    ]


def test_table_upgraded_to_name_mode_reads_old_plain_files(builder: DeltaTableBuilder) -> None:
    """Columns of a table that enabled mapping later keep their names as physical names."""
    builder.init([field("id", "long"), field("v", "string")])
    old = builder.data_file("old.parquet", pa.table({"id": pa.array([1], pa.int64()), "v": ["a"]}))
    builder.commit(1, commit_info(), old)
    upgraded = [cm("id", "long", 1, "id"), cm("value", "string", 2, "v")]  # v renamed to value
    builder.commit(
        2,
        commit_info("SET TBLPROPERTIES"),
        CM_PROTOCOL,
        metadata(upgraded, (), cm_config("name", 2)),
    )
    assert lakecore.open(builder.uri).to_arrow().to_pylist() == [{"id": 1, "value": "a"}]


@pytest.mark.parametrize("mode", ["name", "id"])
def test_mapped_table_from_a_checkpoint(builder: DeltaTableBuilder, mode: str) -> None:
    mapped_table(builder, mode, physical_file(with_ids=mode == "id"), CM_FEATURE_PROTOCOL)
    a = builder.data_file(
        "part-0.parquet",
        physical_file(with_ids=mode == "id"),
        partition_values={P_PHYS: "A"},
        stats=PHYSICAL_STATS,
    )
    meta = metadata(schema_fields(), ["p"], cm_config(mode))
    builder.checkpoint(1, [CM_FEATURE_PROTOCOL, meta, a])
    builder.commit_path(0).unlink()
    builder.commit_path(1).unlink()
    snap = lakecore.open(builder.uri).snapshot()
    assert snap.to_arrow().sort_by("id").to_pylist() == EXPECTED
    assert snap.files().column("max").to_pylist() == [{"id": 2, "s": {"x": 20, "y": "y2"}}]


def test_id_mode_structs_inside_lists_and_maps(builder: DeltaTableBuilder) -> None:
    elem = struct(cm("k", "integer", 11, "col-k"), cm("n", "string", 12, "col-n"))
    fields = [
        cm("id", "long", 1, ID_PHYS),
        cm("l", {"type": "array", "elementType": elem, "containsNull": True}, 10, "col-l"),
        cm(
            "m",
            {"type": "map", "keyType": "string", "valueType": elem, "valueContainsNull": True},
            13,
            "col-m",
        ),
    ]
    builder.commit(0, commit_info(), CM_FEATURE_PROTOCOL, metadata(fields, (), cm_config("id", 13)))
    # File names swap k and n; only the field ids tell them apart.
    elem_type = pa.struct(
        [
            pa.field("col-n", pa.int32(), metadata=fid(11)),
            pa.field("col-k", pa.string(), metadata=fid(12)),
        ]
    )
    schema = pa.schema(
        [
            pa.field("x1", pa.int64(), metadata=fid(1)),
            pa.field("x2", pa.list_(elem_type), metadata=fid(10)),
            pa.field("x3", pa.map_(pa.string(), elem_type), metadata=fid(13)),
        ]
    )
    data = pa.table(
        {
            "x1": [1],
            "x2": [[{"col-n": 5, "col-k": "five"}]],
            "x3": [[("key", {"col-n": 6, "col-k": "six"})]],
        },
        schema=schema,
    )
    builder.commit(1, commit_info(), builder.data_file("a.parquet", data, stats=None))
    assert lakecore.open(builder.uri).to_arrow().to_pylist() == [
        {"id": 1, "l": [{"k": 5, "n": "five"}], "m": [("key", {"k": 6, "n": "six"})]}
    ]
