"""fill_hidden_nulls: invisible child slots of null structs become writable; visible values
and real violations stay."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakecore.model.hidden_nulls import fill_hidden_nulls

VARIANT = pa.struct(
    [pa.field("metadata", pa.binary(), nullable=False), pa.field("value", pa.binary(), False)]
)


def _variants(mask: list[bool]) -> pa.StructArray:
    n = len(mask)
    values = [None if m else b"x%d" % i for i, m in enumerate(mask)]
    return pa.StructArray.from_arrays(
        [pa.array(values, pa.binary()), pa.array(values, pa.binary())],
        fields=list(VARIANT),
        mask=pa.array(mask[:n]),
    )


def _round_trip(table: pa.Table) -> list[dict[str, object]]:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    sink.seek(0)
    rows: list[dict[str, object]] = pq.read_table(sink).to_pylist()
    return rows


def test_null_variants_at_every_depth_are_written_as_nulls() -> None:
    v = _variants([False, True, False])
    lists = pa.ListArray.from_arrays(pa.array([0, 2, 2, 3], pa.int32()), v)
    maps = pa.MapArray.from_arrays(pa.array([0, 1, 2, 3], pa.int32()), pa.array(["a", "b", "c"]), v)
    outer = pa.StructArray.from_arrays([v], names=["v"], mask=pa.array([False, False, True]))
    table = pa.table({"v": v, "l": lists, "m": maps, "s": outer})
    with pytest.raises(pa.ArrowInvalid, match="non-nullable"):
        _round_trip(table)
    fixed = fill_hidden_nulls(table)
    assert fixed.schema == table.schema
    assert _round_trip(fixed) == table.to_pylist()


def test_a_table_without_hidden_slots_is_returned_as_is() -> None:
    table = pa.table({"id": [1, 2], "v": _variants([False, False])})
    assert fill_hidden_nulls(table) is table or fill_hidden_nulls(table).equals(table)
    plain = pa.table({"id": [1]})
    assert fill_hidden_nulls(plain) is plain


def test_a_null_child_of_a_valid_struct_is_still_refused() -> None:
    broken = pa.StructArray.from_arrays(
        [pa.array([None], pa.binary()), pa.array([b"v"])], fields=list(VARIANT)
    )
    with pytest.raises(pa.ArrowInvalid, match="non-nullable"):
        _round_trip(fill_hidden_nulls(pa.table({"v": broken})))


@pytest.mark.parametrize(
    ("t", "neutral"),
    [
        (pa.string(), ""),
        (pa.int32(), 0),
        (pa.float64(), 0.0),
        (pa.bool_(), False),
        (pa.date32(), 0),
        (pa.timestamp("us"), 0),
    ],
)
def test_hidden_slots_of_each_kind_are_filled(t: pa.DataType, neutral: object) -> None:
    field = pa.field("c", t, nullable=False)
    child = pa.array([None, None], t)
    s = pa.StructArray.from_arrays([child], fields=[field], mask=pa.array([True, True]))
    fixed = fill_hidden_nulls(pa.table({"s": s}))
    assert fixed.column("s").chunk(0).field(0).null_count == 0
    assert _round_trip(fixed) == [{"s": None}, {"s": None}]
