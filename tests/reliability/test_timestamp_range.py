"""Timestamps outside the nanosecond range, and finer than the table, read with the right value.

Spark, Hive and Impala write timestamps as Parquet INT96, which holds any year from 0001 to
9999; pyarrow decodes INT96 to nanoseconds by default, which wraps silently outside 1677-2262
(0001-01-01 came back as 1754-08-30). pyarrow and pandas write ``TIMESTAMP(NANOS)``, which a
microsecond table must read truncated (as delta-rs does), not fail with "would lose data".
Every case reads through ``Table.to_arrow`` and ``Table.scan().to_arrow``, for Delta and Hudi.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakecore
from lakecore.model.parquet_read import cast_column

from ..delta.builders import DeltaTableBuilder, field, struct

UTC = dt.timezone.utc
US_UTC = pa.timestamp("us", "UTC")
US = pa.timestamp("us")

# The extremes of the Delta/Spark timestamp range, and ordinary values around the epoch.
EXTREMES = [
    dt.datetime(1, 1, 1),
    dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
    dt.datetime(1, 1, 1, 0, 0, 0, 1),
    dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
    dt.datetime(2024, 2, 29, 12, 30, 45, 123456),
    None,
]


def _read_both(uri: str) -> list[dict[str, Any]]:
    """The rows via ``to_arrow`` and via ``scan().to_arrow`` (must agree), sorted by id."""
    table = lakecore.open(uri)
    whole = table.to_arrow()
    scanned = table.scan().to_arrow()
    assert whole.schema == scanned.schema
    rows = sorted(whole.to_pylist(), key=lambda r: r["id"])
    assert sorted(scanned.to_pylist(), key=lambda r: r["id"]) == rows
    return rows


def _utc(value: dt.datetime | None) -> dt.datetime | None:
    return None if value is None else value.replace(tzinfo=UTC)


def _delta_table(root: Path, data: pa.Table, **write: Any) -> str:
    """A Delta table (ts: timestamp, ntz: timestamp_ntz, s: struct<ts>) of one data file."""
    builder = DeltaTableBuilder(root)
    builder.init(
        [
            field("id", "long"),
            field("ts", "timestamp"),
            field("ntz", "timestamp_ntz"),
            field("s", struct(field("ts", "timestamp"))),
        ],
        proto={
            "protocol": {
                "minReaderVersion": 3,
                "minWriterVersion": 7,
                "readerFeatures": ["timestampNtz"],
                "writerFeatures": ["timestampNtz"],
            }
        },
    )
    pq.write_table(data, root / "part-0.parquet", **write)
    size = (root / "part-0.parquet").stat().st_size
    builder.commit(
        1,
        {
            "add": {
                "path": "part-0.parquet",
                "partitionValues": {},
                "size": size,
                "modificationTime": 0,
                "dataChange": True,
                "stats": f'{{"numRecords":{data.num_rows}}}',
            }
        },
    )
    return builder.uri


def _extremes() -> pa.Table:
    """The columns of ``_delta_table`` holding ``EXTREMES`` (microseconds)."""
    ts = pa.array(EXTREMES, US)
    return pa.table(
        {
            "id": pa.array(range(len(EXTREMES)), pa.int64()),
            "ts": ts.cast(US_UTC),
            "ntz": ts,
            "s": pa.StructArray.from_arrays([ts.cast(US_UTC)], ["ts"]),
        }
    )


def test_int96_file_holds_the_extremes() -> None:
    # The premise: pyarrow writes INT96 for these columns, and its default read wraps them.
    path = pa.BufferOutputStream()
    pq.write_table(_extremes(), path, use_deprecated_int96_timestamps=True)
    buf = path.getvalue()
    physical = pq.ParquetFile(pa.BufferReader(buf)).schema
    assert [physical.column(i).physical_type for i in (1, 2, 3)] == ["INT96"] * 3
    wrapped = pq.read_table(pa.BufferReader(buf)).column("ntz").to_pylist()[0]
    assert wrapped != EXTREMES[0]


def test_delta_int96_extremes_read_as_microseconds(tmp_path: Path) -> None:
    uri = _delta_table(tmp_path / "t", _extremes(), use_deprecated_int96_timestamps=True)
    rows = _read_both(uri)
    schema = lakecore.open(uri).to_arrow().schema
    assert (schema.field("ts").type, schema.field("ntz").type) == (US_UTC, US)
    assert [r["ts"] for r in rows] == [_utc(v) for v in EXTREMES]
    assert [r["ntz"] for r in rows] == EXTREMES
    assert [r["s"]["ts"] for r in rows] == [_utc(v) for v in EXTREMES]


def _nanos() -> tuple[pa.Table, list[int]]:
    """A TIMESTAMP(NANOS) file's columns, and the microseconds each must read as."""
    nanos = [-(2**63) + 1, -1001, -1, 0, 999, 1_700_000_000_123_456_789, 2**63 - 1]
    # Truncation toward zero, as delta-rs (DataFusion's cast) reads a nanosecond file.
    micros = [abs(n) // 1000 * (1 if n >= 0 else -1) for n in nanos]
    ns = pa.array(nanos, pa.int64())
    table = pa.table(
        {
            "id": pa.array(range(len(nanos)), pa.int64()),
            "ts": ns.cast(pa.timestamp("ns", "UTC")),
            "ntz": ns.cast(pa.timestamp("ns")),
            "s": pa.StructArray.from_arrays([ns.cast(pa.timestamp("ns", "UTC"))], ["ts"]),
        }
    )
    return table, micros


def test_delta_nanosecond_file_reads_truncated_to_microseconds(tmp_path: Path) -> None:
    data, micros = _nanos()
    uri = _delta_table(tmp_path / "t", data, coerce_timestamps=None)
    assert pq.read_schema(tmp_path / "t" / "part-0.parquet").field("ts").type.unit == "ns"
    rows = _read_both(uri)
    epoch = dt.datetime(1970, 1, 1)
    expected = [epoch + dt.timedelta(microseconds=m) for m in micros]
    assert [r["ntz"] for r in rows] == expected
    assert [r["ts"] for r in rows] == [_utc(v) for v in expected]
    assert [r["s"]["ts"] for r in rows] == [_utc(v) for v in expected]


def test_delta_nanosecond_file_reads_as_delta_rs_does(tmp_path: Path) -> None:
    deltalake = pytest.importorskip("deltalake")
    data, _ = _nanos()
    data = data.select(["id", "ts"])
    root = tmp_path / "t"
    builder = DeltaTableBuilder(root)
    builder.init([field("id", "long"), field("ts", "timestamp")])
    builder.commit(1, builder.data_file("part-0.parquet", data, stats=False))
    dt_table = deltalake.DeltaTable(str(root))
    theirs = pa.table(
        deltalake.QueryBuilder().register("t", dt_table).execute("select id, ts from t").read_all()
    )
    ours = lakecore.open(str(root)).to_arrow()
    assert sorted(ours.to_pylist(), key=lambda r: r["id"]) == sorted(
        theirs.cast(ours.schema).to_pylist(), key=lambda r: r["id"]
    )


def test_hudi_int96_extremes_read_as_microseconds(tmp_path: Path) -> None:
    root = tmp_path / "h"
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("ord", pa.int64()),
            pa.field("ts", US_UTC),
        ]
    )
    table = lakecore.create(
        str(root),
        schema,
        "hudi",
        [],
        {"record_key": "id", "precombine_field": "ord", "table_type": "COPY_ON_WRITE"},
    )
    ordinary = dt.datetime(2024, 1, 1, tzinfo=UTC)
    n = len(EXTREMES)
    table.append(
        pa.table({"id": list(range(n)), "ord": [1] * n, "ts": [ordinary] * n}, schema=schema)
    )
    base_files = sorted(root.glob("*.parquet"))
    assert len(base_files) == 1
    # Rewrite the base file as Spark would with spark.sql.parquet.outputTimestampType=INT96.
    written = pq.read_table(base_files[0])
    extremes = pa.array([_utc(v) for v in EXTREMES], US_UTC)
    order = written.column("id").to_pylist()
    rewritten = written.set_column(
        written.schema.get_field_index("ts"), "ts", extremes.take(pa.array(order))
    )
    pq.write_table(rewritten, base_files[0], use_deprecated_int96_timestamps=True)
    assert (
        pq.ParquetFile(base_files[0])
        .schema.column(written.schema.get_field_index("ts"))
        .physical_type
        == "INT96"
    )
    rows = _read_both(str(root))
    assert [r["ts"] for r in rows] == [_utc(v) for v in EXTREMES]


@pytest.mark.parametrize(
    ("source", "target"),
    [
        (pa.timestamp("ns"), pa.timestamp("us")),
        (pa.timestamp("ns", "UTC"), pa.timestamp("ms", "UTC")),
        (pa.timestamp("us"), pa.timestamp("s")),
        (pa.struct([("t", pa.timestamp("ns"))]), pa.struct([("t", pa.timestamp("us"))])),
        (pa.list_(pa.timestamp("ns")), pa.list_(pa.timestamp("us"))),
        (pa.map_(pa.string(), pa.timestamp("ns")), pa.map_(pa.string(), pa.timestamp("us"))),
    ],
)
def test_cast_column_truncates_finer_timestamps_toward_zero(
    source: pa.DataType, target: pa.DataType
) -> None:
    values = [-1_000_001, -1, 1, 1_000_001, None]

    def build(t: pa.DataType, vs: list[Any]) -> pa.Array:
        if pa.types.is_struct(t):
            return pa.array([None if v is None else {"t": v} for v in vs], t)
        if pa.types.is_list(t):
            return pa.array([None if v is None else [v] for v in vs], t)
        if pa.types.is_map(t):
            return pa.array([None if v is None else [("k", v)] for v in vs], t)
        return pa.array(vs, pa.int64()).cast(t)

    def leaf_unit(t: pa.DataType) -> str:
        while not pa.types.is_timestamp(t):
            t = (
                t.field(0).type
                if pa.types.is_struct(t)
                else (t.item_type if pa.types.is_map(t) else t.value_type)
            )
        return str(t.unit)

    factor = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}
    step = factor[leaf_unit(source)] // factor[leaf_unit(target)]
    expected = [None if v is None else int(v / step) for v in values]
    with pytest.raises(pa.ArrowInvalid):
        build(source, values).cast(target)  # the plain (safe) cast refuses
    out = cast_column(build(source, values), target)
    assert out.type == target
    assert out.to_pylist() == build(target, expected).to_pylist()
    chunked = cast_column(pa.chunked_array([build(source, values)] * 2), target)
    assert chunked.type == target and chunked.length() == 2 * len(values)


def test_cast_column_still_refuses_lossy_casts() -> None:
    with pytest.raises(pa.ArrowInvalid):
        cast_column(pa.array([2**40], pa.int64()), pa.int32())
    with pytest.raises(pa.ArrowInvalid):
        # Coarser to finer can overflow: still a safe cast.
        cast_column(pa.array([2**62], pa.int64()).cast(pa.timestamp("s")), pa.timestamp("ns"))
