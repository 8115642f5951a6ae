"""Reading a checkpoint decodes only what replay needs: the add fields it uses, and the rows
of ``metaData`` up to the first batch that holds the action."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lakecore_delta.log import checkpoint as cp
from lakecore_delta.log import checkpoint_parquet as cpq

import lakecore
from lakecore.storage import open_storage

from .builders import DeltaTableBuilder, add, field, metadata, protocol

FIELDS = [field("id", "long"), field("p", "string")]


def _adds(n: int) -> list[dict[str, object]]:
    return [
        add(f"p=x/f{i}.parquet", partition_values={"p": "x"}, stats={"numRecords": i})
        for i in range(n)
    ]


def test_add_fields_replay_does_not_use_are_not_read(builder: DeltaTableBuilder) -> None:
    builder.init(FIELDS, partition_columns=["p"])
    (path,) = builder.checkpoint(0, [protocol(), metadata(FIELDS, ["p"]), *_adds(3)])
    storage = open_storage(builder.uri)
    relative = f"_delta_log/{path.name}"
    table = cpq.read_parquet(storage, relative, cp._ADD_READ)
    names = table.column("add").type.names
    assert "tags" not in names and "dataChange" not in names
    assert set(names) <= {c.split(".", 1)[1] for c in cp._ADD_READ}
    # The add struct keeps its own validity: the protocol and metaData rows are no adds.
    assert table.column("add").null_count == 2
    snap = lakecore.open(builder.uri).snapshot()
    assert snap.files().column("record_count").to_pylist() == [0, 1, 2]


@pytest.mark.parametrize("position", ["first", "middle", "last"])
def test_metadata_found_in_any_batch(
    builder: DeltaTableBuilder, monkeypatch: pytest.MonkeyPatch, position: str
) -> None:
    monkeypatch.setattr(cpq, "_FIRST_BATCH_ROWS", 2)
    builder.init(FIELDS, partition_columns=["p"])
    adds = _adds(7)
    at = {"first": 0, "middle": 4, "last": len(adds)}[position]
    actions = [protocol(), *adds[:at], metadata(FIELDS, ["p"]), *adds[at:]]
    builder.checkpoint(0, actions)
    builder.commit_path(0).unlink()
    snap = lakecore.open(builder.uri).snapshot()
    assert snap.partition_columns == ("p",)
    assert snap.files().num_rows == 7


def test_checkpoint_without_metadata_is_corrupt(builder: DeltaTableBuilder) -> None:
    builder.init(FIELDS)
    builder.checkpoint(0, [protocol(), *_adds(2)])
    builder.commit_path(0).unlink()
    with pytest.raises(lakecore.errors.CorruptTableError, match="metaData"):
        lakecore.open(builder.uri).snapshot()


def _split_row_groups(path: object, rows: int) -> int:
    table = pq.read_table(path)
    pq.write_table(table, path, row_group_size=rows)
    return int(pq.ParquetFile(path).num_row_groups)


def test_row_groups_read_on_threads_give_the_files_in_log_order(
    builder: DeltaTableBuilder,
) -> None:
    builder.init(FIELDS, partition_columns=["p"])
    (path,) = builder.checkpoint(0, [protocol(), metadata(FIELDS, ["p"]), *_adds(23)])
    whole = lakecore.open(builder.uri).snapshot().files()
    assert _split_row_groups(path, 3) == 9
    split = lakecore.open(builder.uri).snapshot().files()
    assert split.equals(whole)
    assert split.column("path").to_pylist() == [f"p=x/f{i}.parquet" for i in range(23)]


def test_invalid_utf8_in_a_later_row_group_is_corrupt(builder: DeltaTableBuilder) -> None:
    builder.init(FIELDS, partition_columns=["p"])
    (path,) = builder.checkpoint(0, [protocol(), metadata(FIELDS, ["p"]), *_adds(8)])
    builder.commit_path(0).unlink()
    table = pq.read_table(path)
    add_col = table.column("add").combine_chunks()
    paths = add_col.field("path")
    bad_values = [
        v if v is None or i < 8 else v[:-1] + "\xff" for i, v in enumerate(paths.to_pylist())
    ]
    raw = [
        None if v is None else v.encode("latin-1") if "\xff" in v else v.encode()
        for v in bad_values
    ]
    offsets, data = [0], b""
    for v in raw:
        data += v or b""
        offsets.append(len(data))
    bad = pa.Array.from_buffers(
        pa.string(),
        len(raw),
        [
            paths.buffers()[0],
            pa.py_buffer(pa.array(offsets, pa.int32()).buffers()[1]),
            pa.py_buffer(data),
        ],
        null_count=paths.null_count,
    )
    children = [bad if f.name == "path" else add_col.field(f.name) for f in add_col.type]
    fixed = pa.StructArray.from_arrays(children, fields=list(add_col.type), mask=add_col.is_null())
    table = table.set_column(table.column_names.index("add"), "add", fixed)
    pq.write_table(table, path, row_group_size=3)
    assert pq.ParquetFile(path).num_row_groups == 4
    with pytest.raises(lakecore.errors.CorruptTableError, match="checkpoint"):
        lakecore.open(builder.uri).snapshot()
