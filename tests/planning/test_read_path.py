"""The one read path: ``lakecore.planning.read_files`` and the formats' ``read_files`` /
``deleted_positions``; the typed, picklable ``ScanContext``; neutral deletes."""

from __future__ import annotations

import dataclasses
import json
import pickle
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from lakecore_delta.deletion_vectors import (
    DeletionVectorDescriptor,
    inline_descriptor,
    load_deletion_vector,
    uuid_descriptor,
)
from lakecore_delta.file_index import deletion_descriptor, deletion_value
from lakecore_delta.format import DeltaFormat
from lakecore_delta.scan import DeltaScanState
from lakecore_hudi.format import HudiFormat
from lakecore_hudi.scan import HudiScanState

import lakecore
from lakecore.errors import CorruptTableError, SchemaError
from lakecore.model import files as fi
from lakecore.planning import FileRows, ScanContext, bind, parse_predicate, read_files
from lakecore.planning.read import reading_columns
from lakecore.planning.tasks import RowPositions

DV_TABLES = ("golden__dv-partitioned-with-checkpoint", "deltars__table-with-dv-small")
MAPPED_TABLES = (
    "golden__table-with-columnmapping-mode-name",
    "golden__data-skipping-basic-stats-all-types-columnmapping-id",
    "deltars__table_with_column_mapping",
)
MOR_TABLES = ("mor_avro_v8_trips_8i3u1d", "mor_avro_v6_trips_8i1u", "mor_parquet_v6_nonpartitioned")


def _root(corpus: Path, name: str) -> str:
    hudi = name.startswith(("mor_", "cow_"))
    return str(corpus / ("hudi" if hudi else "delta") / name)


def _texts(table: pa.Table) -> list[str]:
    return sorted(json.dumps(r, default=str, sort_keys=True) for r in table.to_pylist())


def _executor_read(scan: lakecore.planning.Scan) -> pa.Table:
    """What a Spark executor does: unpickle the context, decode the IPC rows, read them."""
    sink = pa.BufferOutputStream()
    files = reading_columns(scan.files())
    with pa.ipc.new_stream(sink, files.schema) as writer:
        writer.write_table(files)
    payload = pickle.dumps((scan.context, sink.getvalue().to_pybytes(), scan.predicate))
    context, ipc, residual = pickle.loads(payload)
    shipped = pa.ipc.open_stream(ipc).read_all()
    schema = scan.snapshot.output_schema(scan.columns)
    return pa.Table.from_batches(list(read_files(context, shipped, scan.columns, residual)), schema)


# ------------------------------------------------------------ one path, three entry points


@pytest.mark.parametrize("name", DV_TABLES + MAPPED_TABLES + MOR_TABLES)
def test_snapshot_scan_and_executor_reads_agree(corpus: Path, name: str) -> None:
    table = lakecore.open(_root(corpus, name))
    snapshot = table.snapshot()
    expected = snapshot.to_arrow()
    assert expected.num_rows > 0
    scan = snapshot.scan()
    assert _texts(scan.to_arrow()) == _texts(expected)
    assert _texts(_executor_read(scan)) == _texts(expected)
    batches = list(snapshot.to_batches())
    assert sum(b.num_rows for b in batches) == expected.num_rows


def test_deletion_vectors_are_applied_on_every_entry_point(corpus: Path) -> None:
    table = lakecore.open(_root(corpus, "golden__dv-partitioned-with-checkpoint"))
    snapshot = table.snapshot()
    files = snapshot.files()
    assert files.column(fi.DELETION).null_count < files.num_rows  # some files have DVs
    live = fi.live_record_count(files)
    assert live < sum(files.column(fi.RECORD_COUNT).to_pylist())
    scan = snapshot.scan("col1 >= 0", ["col1"])
    assert snapshot.to_arrow().num_rows == live
    assert scan.to_arrow().num_rows == _executor_read(scan).num_rows
    assert _texts(_executor_read(scan)) == _texts(scan.to_arrow())


def test_unknown_columns_fail_at_the_call(corpus: Path) -> None:
    snapshot = lakecore.open(_root(corpus, "deltars__table-with-dv-small")).snapshot()
    with pytest.raises(SchemaError):
        snapshot.to_batches(["nope"])
    with pytest.raises(SchemaError):
        read_files(snapshot.source.scan_context(), snapshot.files(), ["nope"])


# ------------------------------------------------------------ the typed, picklable context


@pytest.mark.parametrize(
    ("name", "state_class"),
    [
        ("golden__dv-partitioned-with-checkpoint", DeltaScanState),
        ("golden__table-with-columnmapping-mode-name", DeltaScanState),
        ("mor_avro_v8_trips_8i3u1d", HudiScanState),
    ],
)
def test_context_is_typed_and_pickles(corpus: Path, name: str, state_class: type) -> None:
    context = lakecore.open(_root(corpus, name)).snapshot().source.scan_context()
    names = {f.name for f in dataclasses.fields(ScanContext)}
    assert "options" not in names
    state = context.state
    assert isinstance(state, state_class)
    assert dataclasses.is_dataclass(state) and not isinstance(state, type)
    assert type(state).__dataclass_params__.frozen  # type: ignore[attr-defined]
    for f in dataclasses.fields(state):
        assert not isinstance(getattr(state, f.name), dict), f"{f.name} is a dict, not typed"
    shipped = pickle.loads(pickle.dumps(context))
    assert shipped == context and shipped.state == context.state
    assert shipped.storage is None and context.storage is not None  # the live storage stays


def test_delta_state_names_the_column_mapping_mode(corpus: Path) -> None:
    modes = {
        name: lakecore.open(_root(corpus, name)).snapshot().source.scan_context().state
        for name in MAPPED_TABLES
    }
    assert modes == {
        "golden__table-with-columnmapping-mode-name": DeltaScanState("name"),
        "golden__data-skipping-basic-stats-all-types-columnmapping-id": DeltaScanState("id"),
        "deltars__table_with_column_mapping": DeltaScanState("name"),
    }


def test_a_format_refuses_a_state_of_another_format(corpus: Path) -> None:
    snapshot = lakecore.open(_root(corpus, "deltars__table-with-dv-small")).snapshot()
    context = dataclasses.replace(snapshot.source.scan_context(), state=None)
    with pytest.raises(TypeError, match="DeltaScanState"):
        list(read_files(context, snapshot.files()))


# ------------------------------------------------------------ neutral deletes


def test_deletion_column_is_neutral(corpus: Path) -> None:
    files = (
        lakecore.open(_root(corpus, "golden__dv-partitioned-with-checkpoint")).snapshot().files()
    )
    assert files.schema.field(fi.DELETION).type == fi.DELETION_TYPE


def test_delta_deleted_positions_match_the_deletion_vectors(corpus: Path) -> None:
    root = _root(corpus, "golden__dv-partitioned-with-checkpoint")
    snapshot = lakecore.open(root).snapshot()
    context = snapshot.source.scan_context()
    files = snapshot.files()
    positions = DeltaFormat().deleted_positions(context, files)
    assert len(positions) == files.num_rows
    checked = 0
    for i, (row, deleted) in enumerate(zip(files.to_pylist(), positions, strict=True)):
        if row[fi.DELETION] is None:
            assert deleted is None
            continue
        descriptor = deletion_descriptor(row[fi.DELETION])
        assert descriptor is not None and deleted is not None
        assert deleted.dtype == np.uint64 and len(deleted) == row[fi.DELETION]["cardinality"]
        assert np.array_equal(deleted, load_deletion_vector(descriptor, context.open_storage()))
        # The file's rows minus those positions are exactly what the read path returns.
        raw = pq.read_table(f"{root}/{row[fi.PATH]}")
        keep = np.ones(raw.num_rows, dtype=bool)
        keep[deleted.astype(np.int64)] = False
        read = pa.Table.from_batches(list(read_files(context, files.slice(i, 1), ["col1"])))
        assert read.column("col1").to_pylist() == raw.filter(pa.array(keep))["col1"].to_pylist()
        checked += 1
    assert checked == 2


def test_positions_a_delete_wrote_come_back(tmp_path: Path) -> None:
    properties = {"delta.enableDeletionVectors": "true"}
    schema = pa.schema([("id", pa.int64())])
    table = lakecore.create(str(tmp_path), schema, properties=properties)
    table.append(pa.table({"id": list(range(10))}, schema=schema))
    table.delete("id IN (2, 5, 9)")
    snapshot = table.snapshot()
    files = snapshot.files()
    assert files.num_rows == 1 and files.column(fi.DELETION).null_count == 0
    (positions,) = DeltaFormat().deleted_positions(snapshot.source.scan_context(), files)
    assert positions is not None and positions.tolist() == [2, 5, 9]
    assert sorted(snapshot.to_arrow().column("id").to_pylist()) == [0, 1, 3, 4, 6, 7, 8]


@pytest.mark.parametrize(
    "descriptor",
    [
        inline_descriptor([0, 3, 7]),
        uuid_descriptor(uuid.UUID(int=7), offset=1, size_in_bytes=30, cardinality=2, prefix="ab"),
        DeletionVectorDescriptor("p", "s3://b/dir|with|bars/dv.bin", 5, 40, 3),
    ],
)
def test_delta_descriptors_round_trip(descriptor: DeletionVectorDescriptor) -> None:
    value = deletion_value(descriptor)
    assert set(value) == {"cardinality", "descriptor"} and isinstance(value["descriptor"], bytes)
    assert pa.array([value], fi.DELETION_TYPE).to_pylist() == [value]
    assert deletion_descriptor(value) == descriptor


@pytest.mark.parametrize(
    "value",
    [
        {"cardinality": 1, "descriptor": b"u|1"},
        {"cardinality": 1, "descriptor": b"u|x|3|abc"},
        {"cardinality": 1, "descriptor": b"z|1|3|abc"},
        {"cardinality": None, "descriptor": b"i||3|abc"},
        {"cardinality": 1, "descriptor": None},
    ],
)
def test_malformed_delta_descriptors_are_corrupt(value: dict[str, object]) -> None:
    with pytest.raises(CorruptTableError):
        deletion_descriptor(value)


def test_hudi_has_no_position_deletes(corpus: Path) -> None:
    snapshot = lakecore.open(_root(corpus, "mor_avro_v8_trips_8i3u1d")).snapshot()
    context, files = snapshot.source.scan_context(), snapshot.files()
    assert (
        HudiFormat().deleted_positions(
            context, files.append_column(fi.DELETION, pa.nulls(files.num_rows, fi.DELETION_TYPE))
        )
        == [None] * files.num_rows
    )
    claimed = pa.array([{"cardinality": 1, "descriptor": b"x"}] * files.num_rows, fi.DELETION_TYPE)
    with pytest.raises(CorruptTableError):
        HudiFormat().deleted_positions(context, files.append_column(fi.DELETION, claimed))


# ------------------------------------------------------------ the shared reader on its own


class _Chunked:
    """A format whose units are ``n`` rows read in chunks of 3, deletes given per row."""

    name = "chunked"

    def __init__(self, deleted: list[list[int] | None]) -> None:
        self.deleted = deleted
        self.asked: list[int] = []

    def read_files(
        self, context: ScanContext, files: pa.Table, columns: Sequence[str]
    ) -> Iterator[FileRows]:
        for index, n in enumerate(files.column(fi.RECORD_COUNT).to_pylist()):
            base = 100 * files.column("unit").to_pylist()[index]
            for start in range(0, n, 3):
                ids = list(range(base + start, base + min(n, start + 3)))
                data = {"id": ids, "even": [i % 2 == 0 for i in ids]}
                batch = pa.RecordBatch.from_pydict(data, schema=context.schema)
                yield FileRows(index, start, batch.select(list(columns)))

    def deleted_positions(self, context: ScanContext, files: pa.Table) -> list[RowPositions | None]:
        self.asked.append(files.num_rows)
        units = files.column("unit").to_pylist()
        out = [self.deleted[u] for u in units]
        return [None if d is None else np.array(d, dtype=np.uint64) for d in out]


_SCHEMA = pa.schema([("id", pa.int64()), ("even", pa.bool_())])


def _index(counts: list[int], deleted: list[list[int] | None]) -> pa.Table:
    values = [None if d is None else {"cardinality": len(d), "descriptor": b"x"} for d in deleted]
    return pa.table(
        {
            fi.PATH: [f"u{i}" for i in range(len(counts))],
            fi.RECORD_COUNT: pa.array(counts, pa.int64()),
            "unit": list(range(len(counts))),
            fi.DELETION: pa.array(values, fi.DELETION_TYPE),
        }
    )


def _ids(context: ScanContext, fmt: _Chunked, files: pa.Table, **kw: object) -> list[int]:
    batches = read_files(context, files, table_format=fmt, **kw)  # type: ignore[arg-type]
    return [i for b in batches for i in b.column(0).to_pylist()]


def test_deletes_apply_across_chunks_then_residual_then_projection() -> None:
    deleted = [[0, 4, 6], None, [1]]
    context = ScanContext("chunked", "/t", _SCHEMA)
    fmt = _Chunked(deleted)
    files = _index([7, 2, 3], deleted)
    assert _ids(context, fmt, files) == [1, 2, 3, 5, 100, 101, 200, 202]
    odd = bind(parse_predicate("even = false"), _SCHEMA)
    assert _ids(context, fmt, files, columns=["id"], residual=odd) == [1, 3, 5, 101]
    batches = list(read_files(context, files, ["even"], odd, table_format=fmt))  # type: ignore[arg-type]
    assert all(b.schema.names == ["even"] for b in batches)


def test_rows_without_deletes_never_ask_the_format() -> None:
    context = ScanContext("chunked", "/t", _SCHEMA)
    fmt = _Chunked([None, None])
    assert _ids(context, fmt, _index([2, 2], [None, None])) == [0, 1, 100, 101]
    assert fmt.asked == []


def test_deleted_positions_past_the_data_are_corrupt() -> None:
    context = ScanContext("chunked", "/t", _SCHEMA)
    fmt = _Chunked([[1, 7]])
    with pytest.raises(CorruptTableError, match=r"u0.*row 7.*only 4 rows"):
        _ids(context, fmt, _index([4], [[1, 7]]))


# ------------------------------------------------------------ several data files per row


def test_a_hudi_slice_lists_its_base_then_its_logs(corpus: Path) -> None:
    root = _root(corpus, "mor_avro_v8_trips_8i3u1d")
    scan = lakecore.open(root).snapshot().scan()
    files = scan.files()
    assert files.schema.field(fi.DATA_FILES).type == fi.DATA_FILES_TYPE
    rows = files.select([fi.PATH, fi.DATA_FILES]).to_pylist()
    assert all(r[fi.DATA_FILES][0] == r[fi.PATH] for r in rows)
    assert any(len(r[fi.DATA_FILES]) > 1 for r in rows)  # a base file with log files
    tasks = scan.tasks()
    assert [t.data_files for t in tasks] == [
        tuple(f"{root}/{p}" for p in r[fi.DATA_FILES]) for r in rows
    ]


def test_the_hudi_reader_reads_the_listed_data_files(corpus: Path) -> None:
    """A row's ``data_files`` decide what is merged: without its logs, a slice reads as its
    base file does (read-optimized)."""
    name = "mor_avro_v8_trips_8i3u1d"
    snapshot = lakecore.open(_root(corpus, name)).snapshot()
    context, files = snapshot.source.scan_context(), snapshot.files()
    data = files.column(fi.DATA_FILES).to_pylist()
    merged = next(i for i, d in enumerate(data) if len(d) > 1)
    row = files.slice(merged, 1)
    base_only = row.set_column(
        row.column_names.index(fi.DATA_FILES),
        fi.DATA_FILES,
        pa.array([data[merged][:1]], fi.DATA_FILES_TYPE),
    )
    optimized = lakecore.open(_root(corpus, name), options={"read_optimized": "true"})
    ro_files = optimized.snapshot().files()
    ro_row = ro_files.filter(pc.equal(ro_files.column(fi.PATH), data[merged][0]))
    expected = pa.Table.from_batches(list(read_files(context, ro_row)), snapshot.schema)
    got = pa.Table.from_batches(list(read_files(context, base_only)), snapshot.schema)
    assert _texts(got) == _texts(expected)
    merged_rows = pa.Table.from_batches(list(read_files(context, row)), snapshot.schema)
    assert _texts(merged_rows) != _texts(got)  # the logs change the slice


@pytest.mark.parametrize("name", ["mor_avro_v8_trips_8i3u1d", "cow_v6_nonpartitioned"])
def test_hudi_rows_count_without_columns(corpus: Path, name: str) -> None:
    table = lakecore.open(_root(corpus, name))
    expected = table.to_arrow().num_rows
    assert expected > 0
    assert table.scan(columns=[]).to_arrow().num_rows == expected
    assert table.snapshot().to_arrow(columns=[]).num_rows == expected
