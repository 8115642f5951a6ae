"""Schema following: a target's own form of a source type is not a schema change.

Hudi (Avro) stores int8/int16 as int32 and a Lance fixed-size list as a list; before
``holds`` the engine compared the target's read-back types with the source's and refused a
source that did not change ("source version 0 changes the type of column ..."), even with
``history=False``.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import lakecore
from lakecore.errors import LakecoreError, MigrationError
from lakecore.migrate.schema import holds, schema_change

from .engines import read_with_engine, user_columns

HOLDS = [
    (pa.int32(), pa.int8()),
    (pa.int32(), pa.int16()),
    (pa.int64(), pa.uint32()),
    (pa.large_string(), pa.string()),
    (pa.list_(pa.float32()), pa.list_(pa.float32(), 4)),
    (pa.list_(pa.int32()), pa.large_list(pa.int8())),
    (pa.timestamp("us", "UTC"), pa.timestamp("ms", "UTC")),
    (pa.timestamp("ns"), pa.timestamp("us")),
    (pa.decimal128(12, 3), pa.decimal128(10, 2)),
    (pa.struct([("a", pa.int32())]), pa.struct([pa.field("a", pa.int8(), nullable=False)])),
    (pa.map_(pa.string(), pa.int64()), pa.map_(pa.string(), pa.int16())),
]
DOES_NOT_HOLD = [
    (pa.int8(), pa.int32()),
    (pa.int32(), pa.uint32()),
    (pa.uint64(), pa.int8()),
    (pa.string(), pa.binary()),
    (pa.int64(), pa.float64()),
    (pa.timestamp("us"), pa.timestamp("us", "UTC")),
    (pa.timestamp("ms", "UTC"), pa.timestamp("us", "UTC")),
    (pa.decimal128(10, 2), pa.decimal128(10, 3)),
    (pa.list_(pa.float32(), 4), pa.list_(pa.float32())),
    (pa.struct([pa.field("a", pa.int32(), nullable=False)]), pa.struct([("a", pa.int32())])),
    (pa.struct([("a", pa.int32())]), pa.struct([("b", pa.int32())])),
]


@pytest.mark.parametrize(("target", "source"), HOLDS, ids=str)
def test_holds(target: pa.DataType, source: pa.DataType) -> None:
    assert holds(target, source)


@pytest.mark.parametrize(("target", "source"), DOES_NOT_HOLD, ids=str)
def test_does_not_hold(target: pa.DataType, source: pa.DataType) -> None:
    assert not holds(target, source)


def test_counts() -> None:
    assert (len(HOLDS), len(DOES_NOT_HOLD)) == (11, 11)


def test_a_wider_target_form_is_no_change() -> None:
    target = pa.schema([("b", pa.int32()), ("v", pa.list_(pa.float32()))])
    source = pa.schema([("b", pa.int8()), ("v", pa.list_(pa.float32(), 2)), ("n", pa.string())])
    assert [f.name for f in schema_change(target, source, 3).added] == ["n"]


def test_a_widening_retype_is_to_be_replayed() -> None:
    change = schema_change(pa.schema([("b", pa.int8())]), pa.schema([("b", pa.int32())]), 3)
    assert change.added == ()
    assert [(f.name, f.type) for f in change.widened] == [("b", pa.int32())]


def test_a_retype_that_changes_kind_is_refused() -> None:
    for old, new in [(pa.string(), pa.int32()), (pa.int32(), pa.string())]:
        with pytest.raises(MigrationError, match="'b'"):
            schema_change(pa.schema([("b", old)]), pa.schema([("b", new)]), 3)


@pytest.mark.parametrize("to", ["delta", "hudi", "lance"])
def test_a_widened_source_column_is_replayed_with_history(tmp_path: Path, to: str) -> None:
    """A Delta source widening int -> long: the target widens too (its own schema evolution)
    and every target version reads, by the target's engine, the source's rows then."""
    schema = pa.schema([("id", pa.int64()), ("n", pa.int32())])
    src = tmp_path / "src"
    source = lakecore.create(str(src), schema)
    source.append(pa.table({"id": [1], "n": [7]}, schema=schema))
    with source.update_schema() as update:
        update.widen_type("n", pa.int64())
    source.append(pa.table({"id": [2], "n": [2**40]}))
    report = lakecore.migrate(str(src), str(tmp_path / "t"), to=to, history=True)
    assert lakecore.open(str(tmp_path / "t"), format=to).schema.field("n").type == pa.int64()
    if to == "delta":
        # delta-rs 1.6.6 refuses tables with the typeWidening feature the target now has.
        read = lakecore.open(str(tmp_path / "t")).to_arrow()
    else:
        read = read_with_engine(to, tmp_path / "t")
    rows = user_columns(read).sort_by("id")
    assert rows.select(["id", "n"]).to_pylist() == [{"id": 1, "n": 7}, {"id": 2, "n": 2**40}]
    assert len(report.versions) == len(source.history())


def test_a_widening_the_target_refuses_names_the_column(tmp_path: Path) -> None:
    """Hudi widens int -> long but not int -> decimal: MigrationError naming the column,
    after the versions before it landed."""
    schema = pa.schema([("id", pa.int64()), ("n", pa.int32())])
    src = tmp_path / "src"
    source = lakecore.create(str(src), schema)
    source.append(pa.table({"id": [1], "n": [7]}, schema=schema))
    with source.update_schema() as update:
        update.widen_type("n", pa.decimal128(20, 0))
    with pytest.raises(MigrationError, match="'n'"):
        lakecore.migrate(str(src), str(tmp_path / "t"), to="hudi", history=True)
    target = lakecore.open(str(tmp_path / "t"), format="hudi")
    assert target.schema.field("n").type == pa.int32()


def test_small_integers_migrate_to_hudi(tmp_path: Path) -> None:
    """Delta int8/int16 -> Hudi (Avro int): refused before as a type change of version 0."""
    schema = pa.schema([("id", pa.int64()), ("b", pa.int8()), ("s", pa.int16())])
    source = lakecore.create(str(tmp_path / "src"), schema)
    source.append(pa.table({"id": [1, 2], "b": [-128, 127], "s": [-3, 300]}, schema=schema))
    lakecore.migrate(str(tmp_path / "src"), str(tmp_path / "t"), to="hudi")
    rows = user_columns(read_with_engine("hudi", tmp_path / "t")).sort_by("id")
    assert rows.to_pylist() == [{"id": 1, "b": -128, "s": -3}, {"id": 2, "b": 127, "s": 300}]


def test_fixed_size_lists_migrate_to_hudi(tmp_path: Path) -> None:
    """Lance fixed-size list (a vector) -> Hudi list: refused before as a type change."""
    schema = pa.schema([("id", pa.int64()), ("v", pa.list_(pa.float32(), 2))])
    source = lakecore.create(str(tmp_path / "src"), schema, format="lance")
    source.append(pa.table({"id": [1], "v": [[0.5, 1.5]]}, schema=schema))
    lakecore.migrate(str(tmp_path / "src"), str(tmp_path / "t"), to="hudi")
    rows = user_columns(read_with_engine("hudi", tmp_path / "t"))
    assert rows.to_pylist() == [{"id": 1, "v": [0.5, 1.5]}]


@pytest.mark.parametrize("explicit", [False, True])
def test_partition_values_with_slashes_migrate_to_hudi_with_url_encoding(
    tmp_path: Path, explicit: bool
) -> None:
    """Delta escapes partition values in its paths; a Hudi migration target does so too by
    default (url_encode_partitions, Hudi's partitionpath.urlencode): '/' in a value migrates
    without target_properties, and hudi-rs reads the source's rows. Turned off, a value
    holding '/' is refused."""
    from tests.corpus import CORPUS

    src = CORPUS / "delta" / "gen__partitioned_special_chars"
    if not src.exists():
        pytest.fail(f"corpus table {src} is not available (set LAKECORE_CORPUS)")
    properties = {"url_encode_partitions": "true"} if explicit else None
    lakecore.migrate(str(src), str(tmp_path / "t"), to="hudi", target_properties=properties)
    got = user_columns(read_with_engine("hudi", tmp_path / "t"))
    want = lakecore.open(str(src)).to_arrow()
    assert got.num_rows == want.num_rows == 72
    columns = sorted(want.column_names)
    assert _as_text(got, columns) == _as_text(want, columns)
    assert (tmp_path / "t" / "a%2Fb").is_dir()

    off = {"url_encode_partitions": "false"}
    with pytest.raises(LakecoreError, match="/"):
        lakecore.migrate(str(src), str(tmp_path / "off"), to="hudi", target_properties=off)


def _as_text(table: pa.Table, columns: list[str]) -> list[str]:
    return sorted(map(str, table.select(columns).to_pylist()))
