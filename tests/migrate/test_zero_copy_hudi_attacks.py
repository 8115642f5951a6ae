"""Attacks on the zero-copy Delta -> Hudi migration in place (``lakecore.migrate(uri, uri,
to="hudi", mode="metadata")``): Delta tables built to break it (partition values that escape,
file names that look like Hudi's, paths outside the root, storage faults, Delta maintenance
between runs, writes to the adopted Hudi table).

Each ``xfail(strict=True)`` test pins a confirmed bug (its reason says what and where); the
others are attacks that held. The oracle is deltalake's rows (or lakecore's Delta reader's,
where deltalake agrees) against lakecore's Hudi reader, plus: no Delta file changed, no data
file written, every failure a ``LakecoreError``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import io
import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake.schema import PrimitiveType

import lakecore
from lakecore.errors import (
    AmbiguousFormatError,
    LakecoreError,
    MigrationError,
    UnsupportedFeatureError,
)
from tests.migrate.engines import canonical_rows
from tests.migrate.test_zero_copy_hudi import (
    batch,
    data_files,
    delta_files,
    delta_rows,
    delta_table,
    hudi_rows,
)


def rows(table: pa.Table) -> list[str]:
    return sorted(canonical_rows(table))


def hudi_instants(root: Path) -> list[str]:
    """Completed Hudi instants (timeline file names) of the table at ``root``."""
    timeline = root / ".hoodie" / "timeline"
    if not timeline.exists():
        return []
    return sorted(p.name for p in timeline.iterdir() if p.name.count(".") == 1)


def pending_instants(root: Path) -> list[str]:
    from lakecore_hudi.table_config import read_table_config
    from lakecore_hudi.timeline.active import load_timeline

    storage = lakecore.open(str(root), format="hudi").storage
    return [i.timestamp for i in load_timeline(storage, read_table_config(storage)).pending()]


def every_version_reads_as_delta(root: Path, report: lakecore.MigrationReport) -> None:
    for source, target in report.versions:
        assert hudi_rows(root, str(target)) == delta_rows(root, int(source)), (source, target)


def delta_with_files(root: Path, names: list[str]) -> list[str]:
    """An unpartitioned Delta table (lakecore) whose second version adds one two-row Parquet
    file at each table-relative path of ``names``; returns lakecore's Delta rows."""
    schema = pa.schema([("id", pa.int64())])
    table = lakecore.create(str(root), schema, "delta", [])
    table.append(pa.table({"id": pa.array([-1], pa.int64())}))
    items = []
    for i, path in enumerate(names):
        sink = io.BytesIO()
        pq.write_table(pa.table({"id": pa.array([10 * i, 10 * i + 1], pa.int64())}), sink)
        table.storage.put(path, sink.getvalue())
        items.append(
            {
                "path": path,
                "size": len(sink.getvalue()),
                "record_count": 2,
                "modification_time": int(time.time() * 1000),
            }
        )
    with table.transaction() as tx:
        tx.adopt_files(pa.Table.from_pylist(items))
    got = rows(lakecore.open(str(root), format="delta").to_arrow())
    assert rows(deltalake.DeltaTable(str(root)).to_pyarrow_table()) == got
    return got


def add_commit(root: Path, version: int, paths: list[str], size: int) -> None:
    """Write Delta commit ``version`` adding ``paths`` (raw log paths) by hand."""
    actions = [
        {"commitInfo": {"timestamp": int(time.time() * 1000), "operation": "WRITE"}},
        *(
            {
                "add": {
                    "path": p,
                    "partitionValues": {},
                    "size": size,
                    "modificationTime": int(time.time() * 1000),
                    "dataChange": True,
                    "stats": json.dumps({"numRecords": 2}),
                }
            }
            for p in paths
        ),
    ]
    log = root / "_delta_log" / f"{version:020d}.json"
    log.write_text("\n".join(json.dumps(a) for a in actions) + "\n")


# ---------------------------------------------------------------- bugs (strict xfail)


def adopts_or_refuses_cleanly(root: Path, want: list[str]) -> None:
    """The migration must either refuse before committing (no completed Hudi instant, Delta
    intact) or commit a Hudi table that reads Delta's rows."""
    before = delta_files(root)
    try:
        lakecore.migrate(str(root), str(root), to="hudi", mode="metadata")
    except MigrationError:
        assert hudi_instants(root) == [], "refused, but the adoption was committed"
    else:
        assert rows(lakecore.open(str(root), format="hudi").to_arrow()) == want
    assert delta_files(root) == before


def test_a_file_name_holding_the_prefix_marker_reads_back(tmp_path: Path) -> None:
    root = tmp_path / "t"
    want = delta_with_files(root, ["a_fg%3Dzz.parquet", "b.parquet"])
    adopts_or_refuses_cleanly(root, want)


def test_a_file_named_like_a_hudi_base_file_is_adopted_readably(tmp_path: Path) -> None:
    root = tmp_path / "t"
    want = delta_with_files(root, ["abc-0_0-1-1_20240101000000000.parquet"])
    try:
        adopts_or_refuses_cleanly(root, want)
    except LakecoreError as exc:  # the post-commit CorruptTableError
        pytest.fail(f"migrate failed after committing: {exc!r}; completed {hudi_instants(root)}")


def test_a_fault_after_claiming_the_instant_leaves_nothing_pending_after_a_rerun(
    tmp_path: Path,
) -> None:
    from lakecore.storage import open_storage
    from lakecore.testing.faults import FaultyStorage

    root = tmp_path / "t"
    delta_table(root)
    faulty = FaultyStorage(open_storage(str(root)))
    faulty.arm(0, mode="after", match=lambda c: c.path.endswith(".replacecommit.requested"))
    with pytest.raises(LakecoreError):
        lakecore.migrate(
            str(root), str(root), to="hudi", mode="metadata", history=True, target_storage=faulty
        )
    assert faulty.faults
    report = lakecore.migrate(str(root), str(root), to="hudi", mode="metadata", history=True)
    every_version_reads_as_delta(root, report)
    assert pending_instants(root) == []


def test_a_nan_partition_value_is_adopted(tmp_path: Path) -> None:
    root = tmp_path / "t"
    data = pa.table({"id": [1, 2], "p": pa.array([float("nan"), 1.5], pa.float64())})
    deltalake.write_deltalake(str(root), data, partition_by=["p"])
    lakecore.migrate(str(root), str(root), to="hudi", mode="metadata")
    got = lakecore.open(str(root), format="hudi").to_arrow().sort_by("id").to_pylist()
    assert got[1] == {"id": 2, "p": 1.5}
    assert got[0]["id"] == 1 and got[0]["p"] != got[0]["p"]  # NaN


def test_target_properties_cannot_store_partition_columns(tmp_path: Path) -> None:
    root = tmp_path / "t"
    delta_table(root)
    props = {"drop_partition_columns": "false", "record_key": "id"}
    try:
        report = lakecore.migrate(
            str(root), str(root), to="hudi", history=True, target_properties=props
        )
    except MigrationError:
        assert not (root / ".hoodie").exists()
        return
    every_version_reads_as_delta(root, report)
    files = data_files(root)
    with pytest.raises(UnsupportedFeatureError):
        lakecore.open(str(root), format="hudi").append(batch((9, "z", 9, "x")))
    assert data_files(root) == files


def test_target_properties_cannot_claim_meta_fields(tmp_path: Path) -> None:
    root = tmp_path / "t"
    delta_table(root)
    props = {"populate_meta_fields": "true"}
    try:
        lakecore.migrate(str(root), str(root), to="hudi", target_properties=props)
    except MigrationError:
        assert not (root / ".hoodie").exists()
        return
    hudi = lakecore.open(str(root), format="hudi")
    assert hudi.snapshot().features.system_columns == ()
    assert hudi.to_arrow().schema.names == ["id", "name", "n", "city"]


@pytest.mark.parametrize(
    "props",
    [
        {"hive_style_partitioning": "false"},
        {"url_encode_partitions": "false"},
        {"metadata_enable": "false"},
    ],
    ids=["hive-style-off", "url-encode-off", "metadata-off"],
)
def test_target_properties_unfit_for_adoption_are_refused_before_creating(
    props: dict[str, str], tmp_path: Path
) -> None:
    root = tmp_path / "t"
    delta_table(root)
    before = delta_files(root)
    with pytest.raises(MigrationError):
        lakecore.migrate(str(root), str(root), to="hudi", target_properties=props)
    assert not (root / ".hoodie").exists()
    assert delta_files(root) == before
    report = lakecore.migrate(str(root), str(root), to="hudi", mode="metadata")
    every_version_reads_as_delta(root, report)


def test_a_deletion_vector_added_later_is_refused_as_row_level_deletes(tmp_path: Path) -> None:
    from tests.migrate.test_zero_copy_hudi import SCHEMA

    root = tmp_path / "t"
    table = lakecore.create(
        str(root), SCHEMA, "delta", ["city"], {"delta.enableDeletionVectors": "true"}
    )
    table.append(batch((1, "a", 1, "x"), (2, "b", 2, "x")))
    lakecore.open(str(root)).delete("id = 1")  # a deletion vector on the appended file
    before = delta_files(root)
    with pytest.raises(MigrationError, match="row-level deletes"):
        lakecore.migrate(str(root), str(root), to="hudi", mode="metadata", history=True)
    assert delta_files(root) == before


@pytest.mark.parametrize("zone", [None, "UTC"], ids=["timestamp_ntz", "timestamp"])
def test_an_empty_first_version_with_a_timestamp_partition_is_refused_cleanly(
    zone: str | None, tmp_path: Path
) -> None:
    root = tmp_path / "t"
    schema = pa.schema([("id", pa.int64()), ("t", pa.timestamp("us", zone))])
    deltalake.DeltaTable.create(str(root), schema, partition_by=["t"])
    when = dt.datetime(2024, 1, 1, 1, 2, 3, tzinfo=dt.timezone.utc if zone else None)
    deltalake.write_deltalake(
        str(root), pa.table({"id": [1], "t": pa.array([when], schema.field("t").type)}),
        mode="append",
    )  # fmt: skip
    before = delta_files(root)
    for _ in range(2):  # refused the same way again
        with pytest.raises(MigrationError, match="do not read back from path text"):
            lakecore.migrate(str(root), str(root), to="hudi", mode="metadata", history=True)
    assert not (root / ".hoodie").exists()
    assert delta_files(root) == before


def test_reading_without_the_metadata_table_does_not_lose_adopted_rows(tmp_path: Path) -> None:
    root = tmp_path / "t"
    delta_table(root)
    lakecore.migrate(str(root), str(root), to="hudi", history=True)
    want = delta_rows(root)
    assert len(want) == 4
    try:
        table = lakecore.open(str(root), format="hudi", options={"hoodie.metadata.enable": "false"})
        got = rows(table.to_arrow().select(["id", "name", "n", "city"]))
    except LakecoreError:
        return  # a clear refusal is fine
    assert got == want


def test_a_column_stored_under_another_case_keeps_its_values(tmp_path: Path) -> None:
    root = tmp_path / "t"
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    table = lakecore.create(str(root), schema, "delta", [])
    table.append(pa.table({"id": [1], "v": ["a"]}, schema=schema))
    sink = io.BytesIO()
    pq.write_table(pa.table({"ID": pa.array([2], pa.int64()), "V": ["b"]}), sink)
    table.storage.put("upper.parquet", sink.getvalue())
    item = {
        "path": "upper.parquet",
        "size": len(sink.getvalue()),
        "record_count": 1,
        "modification_time": int(time.time() * 1000),
    }
    with table.transaction() as tx:
        tx.adopt_files(pa.Table.from_pylist([item]))
    want = rows(lakecore.open(str(root), format="delta").to_arrow())
    assert '{"id":2,"v":"b"}' in want
    adopts_or_refuses_cleanly(root, want)


def test_the_vacuum_refusal_points_to_an_operation_that_works(tmp_path: Path) -> None:
    root = tmp_path / "t"
    delta_table(root)
    lakecore.migrate(str(root), str(root), to="hudi", history=True)
    with pytest.raises(UnsupportedFeatureError) as info:
        lakecore.open(str(root), format="delta").vacuum(
            retention_hours=0, dry_run=False, enforce_retention=False
        )
    if "hudi table's own maintenance" in str(info.value):
        lakecore.open(str(root), format="hudi").clean(retain_commits=1)


# ---------------------------------------------------------------- attacks that held

STRING_VALUES = [
    "a b", "a=b", "a%b", "a/b", "ü€", "日本", "a:b", "a#b", "a?b", "a*b", "a'b", 'a"b', "a\\b",
    "a{b}", "a[b]", "a^b", "a+b", "a&b", "a,b", "a;b", "%2F", "%41", "a%20b", " ", "a\tb",
    "a\nb", ".", "..", "-", "~", "a|b", "a<b>", "\x01", "\x7f", "é", "e\u0301", None,
]  # fmt: skip


def test_string_partition_values_map_to_their_own_paths(tmp_path: Path) -> None:
    """Every escaping-sensitive value deltalake writes reads back as itself (37 values)."""
    root = tmp_path / "t"
    data = pa.table({"id": list(range(len(STRING_VALUES))), "p": STRING_VALUES})
    deltalake.write_deltalake(str(root), data, partition_by=["p"])
    report = lakecore.migrate(str(root), str(root), to="hudi", mode="metadata")
    assert report.files_adopted == len(STRING_VALUES) == 37
    got = lakecore.open(str(root), format="hudi").to_arrow().sort_by("id")
    assert got.column("p").to_pylist() == STRING_VALUES


TYPED: dict[str, tuple[pa.DataType, list[object]]] = {
    "int": (pa.int32(), [0, -1, 7, None, 2**31 - 1]),
    "long": (pa.int64(), [0, -5, 2**62]),
    "bool": (pa.bool_(), [True, False, None]),
    "date": (pa.date32(), [dt.date(2024, 1, 2), dt.date(1, 1, 1), dt.date(9999, 12, 31), None]),
    "decimal": (
        pa.decimal128(10, 2),
        [decimal.Decimal("1.50"), decimal.Decimal("12345678.99"), decimal.Decimal("0.10"), None],
    ),
    "double": (pa.float64(), [1.5, -0.0, 1e20, 1e-7, float("inf"), None]),
    "float": (pa.float32(), [1.5, 0.1, None]),
}


def test_typed_partition_values_read_back_with_their_types(tmp_path: Path) -> None:
    """Ints, booleans, dates, decimals and floats (with nulls) as partition values read back
    from the paths with Delta's types and values; one table per type."""
    ran = 0
    for name, (kind, values) in TYPED.items():
        root = tmp_path / name
        data = pa.table({"id": list(range(len(values))), "p": pa.array(values, kind)})
        deltalake.write_deltalake(str(root), data, partition_by=["p"])
        lakecore.migrate(str(root), str(root), to="hudi", mode="metadata")
        got = lakecore.open(str(root), format="hudi").to_arrow().sort_by("id")
        want = deltalake.DeltaTable(str(root)).to_pyarrow_table().sort_by("id")
        assert got.schema.field("p").type == want.schema.field("p").type == kind, name
        assert got.column("p").to_pylist() == want.column("p").to_pylist(), name
        ran += 1
    assert ran == len(TYPED) == 7


def test_several_partition_columns_with_nulls(tmp_path: Path) -> None:
    root = tmp_path / "t"
    data = pa.table(
        {
            "id": [1, 2, 3],
            "a": pa.array([1, None, 3], pa.int32()),
            "b": ["x/y", "x", None],
            "c": [True, None, False],
        }
    )
    deltalake.write_deltalake(str(root), data, partition_by=["a", "b", "c"])
    lakecore.migrate(str(root), str(root), to="hudi", mode="metadata")
    assert hudi_rows_all(root) == rows(deltalake.DeltaTable(str(root)).to_pyarrow_table())


def hudi_rows_all(root: Path) -> list[str]:
    return rows(lakecore.open(str(root), format="hudi").to_arrow())


@pytest.mark.parametrize(
    ("value", "why"),
    [("__HIVE_DEFAULT_PARTITION__", r"names partition values \{'p': None\}"), ("", "'p='")],
    ids=["hive-default-literal", "empty-string"],
)
def test_values_a_path_cannot_tell_from_null_are_refused(
    value: str, why: str, tmp_path: Path
) -> None:
    """The string '__HIVE_DEFAULT_PARTITION__' and '' (Delta stores it as null) would read
    back as another value: refused, nothing written."""
    root = tmp_path / "t"
    deltalake.write_deltalake(
        str(root), pa.table({"id": [1, 2], "p": [value, "a"]}), partition_by=["p"]
    )
    before = delta_files(root)
    for mode in ("metadata", "auto"):
        with pytest.raises(MigrationError, match=why):
            lakecore.migrate(str(root), str(root), to="hudi", mode=mode)
    assert not (root / ".hoodie").exists()
    assert delta_files(root) == before


def test_timestamp_ntz_partition_column_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "t"
    data = pa.table(
        {"id": [1, 2], "t": pa.array([dt.datetime(2024, 1, 1, 1, 2, 3), None], pa.timestamp("us"))}
    )
    deltalake.write_deltalake(str(root), data, partition_by=["t"])
    with pytest.raises(MigrationError, match="do not read back from path text"):
        lakecore.migrate(str(root), str(root), to="hudi", mode="metadata")
    assert not (root / ".hoodie").exists()


@pytest.mark.parametrize(
    "names",
    [
        ["f.parquet", "sub/f.parquet", "x/y/f.parquet"],  # one file name, three file groups
        ["a b.parquet", "c%20d.parquet", "ü.parquet", "a#b.parquet", "sub_dir/g.parquet"],
        ["a_20240101000000000_hudiext.parquet", "x.parquet_20240101000000000_hudiext.parquet"],
        [".hidden.parquet", "_under.parquet", "F.PARQUET"],
        [".hoodie/x.parquet", "metadata/y.parquet", "_lakecore_migration/z.parquet"],
    ],
    ids=["same-name", "escaped-names", "hudiext-names", "hidden-names", "reserved-dirs"],
)
def test_odd_file_names_read_back(names: list[str], tmp_path: Path) -> None:
    root = tmp_path / "t"
    want = delta_with_files(root, names)
    files = data_files(root)
    report = lakecore.migrate(str(root), str(root), to="hudi", mode="metadata")
    assert report.files_adopted == len(names) + 1
    assert hudi_rows_all(root) == want
    assert data_files(root) == files


@pytest.mark.parametrize(
    "where", ["absolute", "file-uri", "dot-dot", "encoded-dot-dot"], ids=lambda w: w
)
def test_a_file_outside_the_root_is_never_adopted(where: str, tmp_path: Path) -> None:
    """A Delta add naming a file outside the table (absolute path, URI, ``..``) is refused
    (MigrationError) or the Delta log is refused as corrupt; no Hudi instant, nothing
    written."""
    root = tmp_path / "t"
    deltalake.write_deltalake(str(root), pa.table({"id": pa.array([1], pa.int64())}))
    outside = tmp_path / "outside.parquet"
    pq.write_table(pa.table({"id": pa.array([2, 3], pa.int64())}), outside)
    raw = {
        "absolute": str(outside),
        "file-uri": outside.as_uri(),
        "dot-dot": "../outside.parquet",
        "encoded-dot-dot": "%2E%2E/outside.parquet",
    }[where]
    add_commit(root, 1, [raw], outside.stat().st_size)
    before = delta_files(root)
    with pytest.raises(LakecoreError) as info:
        lakecore.migrate(str(root), str(root), to="hudi", mode="metadata")
    assert isinstance(info.value, MigrationError) or "escapes" in str(info.value)
    assert hudi_instants(root) == []
    assert delta_files(root) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outside.parquet", "t"]


def test_writes_to_the_adopted_table_are_refused(tmp_path: Path) -> None:
    """Every lakecore write and maintenance operation on the Hudi side is refused with a
    typed error, and nothing changes (Delta files, Hudi version, rows)."""
    root = tmp_path / "t"
    delta_table(root)
    lakecore.migrate(str(root), str(root), to="hudi", history=True)
    before, files = delta_files(root), data_files(root)
    one = pa.table({"id": [9], "name": ["z"], "n": pa.array([9], pa.int32()), "city": ["x"]})
    ops: dict[str, Callable[[lakecore.Table], object]] = {
        "append": lambda t: t.append(one),
        "overwrite": lambda t: t.overwrite(one),
        "delete": lambda t: t.delete("id = 2"),
        "delete-all": lambda t: t.delete(),
        "update": lambda t: t.update({"name": "'Q'"}, "id = 2"),
        "upsert": lambda t: t.upsert(one),
        "compact": lambda t: t.compact(),
        "clean": lambda t: t.clean(retain_commits=1),
        "restore": lambda t: t.restore(t.version),
        "optimize": lambda t: t.optimize(),
        "vacuum": lambda t: t.vacuum(),
    }
    version = lakecore.open(str(root), format="hudi").version
    for name, op in ops.items():
        with pytest.raises(UnsupportedFeatureError):
            op(lakecore.open(str(root), format="hudi"))
        assert lakecore.open(str(root), format="hudi").version == version, name
        assert delta_files(root) == before and data_files(root) == files, name
    assert hudi_rows(root) == delta_rows(root)


def test_open_without_format_is_ambiguous(tmp_path: Path) -> None:
    root = tmp_path / "t"
    delta_table(root)
    lakecore.migrate(str(root), str(root), to="hudi")
    with pytest.raises(AmbiguousFormatError) as info:
        lakecore.open(str(root))
    assert sorted(info.value.candidates) == ["delta", "hudi"]


def test_delta_maintenance_between_runs(tmp_path: Path) -> None:
    """OPTIMIZE compact and z-order, a checkpoint, an overwrite and a delete between
    incremental runs: every Delta version reads the same on the Hudi side; a checkpoint
    alone commits nothing; no data file is ever written by the migration."""
    root = tmp_path / "t"
    delta_table(root)
    first = lakecore.migrate(str(root), str(root), to="hudi", history=True)
    reports = [first]

    def run() -> lakecore.MigrationReport:
        files = data_files(root)
        report = lakecore.migrate(str(root), str(root), to="hudi", mode="metadata", history=True)
        assert data_files(root) == files
        reports.append(report)
        return report

    deltalake.write_deltalake(
        str(root), batch((7, "g", 7, "x"), (8, "h", 8, "y")), partition_by=["city"], mode="append"
    )
    deltalake.DeltaTable(str(root)).optimize.compact()
    run()
    deltalake.DeltaTable(str(root)).optimize.z_order(["id"])
    run()
    deltalake.DeltaTable(str(root)).create_checkpoint()
    assert run().commits == 0
    deltalake.write_deltalake(
        str(root), batch((9, "i", 9, "q")), partition_by=["city"], mode="overwrite"
    )
    deltalake.write_deltalake(
        str(root), batch((10, "j", 10, "q")), partition_by=["city"], mode="append"
    )
    deltalake.DeltaTable(str(root)).delete("id = 9")
    run()
    for report in reports:
        every_version_reads_as_delta(root, report)
    assert sum(len(r.versions) for r in reports) == deltalake.DeltaTable(str(root)).version() + 1


def test_a_concurrent_delta_writer_during_the_migration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Delta commits (an append and a delete) land while the migration adopts version 1: the
    run translates what it saw, the next run the rest; every version reads as Delta's."""
    import lakecore_hudi.write.adopt as adopt

    root = tmp_path / "t"
    delta_table(root)
    original = adopt.adopted_stats
    calls = []

    def racing(*args: object, **kwargs: object) -> object:
        calls.append(1)
        if len(calls) == 2:
            deltalake.write_deltalake(
                str(root), batch((50, "c", 1, "x")), partition_by=["city"], mode="append"
            )
            deltalake.DeltaTable(str(root)).delete("id = 3")
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(adopt, "adopted_stats", racing)
    first = lakecore.migrate(str(root), str(root), to="hudi", mode="metadata", history=True)
    monkeypatch.undo()
    assert len(calls) >= 2, "the race never ran"
    second = lakecore.migrate(str(root), str(root), to="hudi", mode="metadata", history=True)
    assert [s for s, _ in first.versions + second.versions] == [0, 1, 2, 3, 4]
    every_version_reads_as_delta(root, first)
    every_version_reads_as_delta(root, second)


def test_delta_features_that_leave_files_plain(tmp_path: Path) -> None:
    """Generated columns, a CHECK constraint, timestamp_ntz and nested types (struct, list,
    map with string keys, partitioned too) adopt and read as Delta's at every version."""
    cases = 0
    root = tmp_path / "generated"
    schema = deltalake.Schema(
        [
            deltalake.Field("id", PrimitiveType("long")),
            deltalake.Field(
                "g",
                PrimitiveType("long"),
                metadata={"delta.generationExpression": "id * 2"},
            ),
        ]
    )
    deltalake.DeltaTable.create(str(root), schema)
    deltalake.write_deltalake(str(root), pa.table({"id": [1, 2]}), mode="append")
    roots = [root]
    root = tmp_path / "check"
    deltalake.write_deltalake(str(root), pa.table({"id": [1, 2]}))
    deltalake.DeltaTable(str(root)).alter.add_constraint({"pos": "id > 0"})
    deltalake.write_deltalake(str(root), pa.table({"id": [3]}), mode="append")
    roots.append(root)
    when = dt.datetime(2024, 1, 1, 1, 2, 3)
    root = tmp_path / "ntz"
    deltalake.write_deltalake(
        str(root), pa.table({"id": [1, 2], "t": pa.array([when, None], pa.timestamp("us"))})
    )
    roots.append(root)
    nested = pa.table(
        {
            "id": [1, 2],
            "s": pa.array(
                [{"a": 1, "b": [1, 2]}, None],
                pa.struct([("a", pa.int32()), ("b", pa.list_(pa.int64()))]),
            ),
            "m": pa.array([[("k", 1)], None], pa.map_(pa.string(), pa.int64())),
            "l": pa.array([[{"x": "1"}], []], pa.list_(pa.struct([("x", pa.string())]))),
        }
    )
    root = tmp_path / "nested"
    deltalake.write_deltalake(str(root), nested)
    roots.append(root)
    root = tmp_path / "nested-partitioned"
    deltalake.write_deltalake(
        str(root), nested.append_column("p", pa.array(["a", "b"])), partition_by=["p"]
    )
    roots.append(root)
    for root in roots:
        report = lakecore.migrate(str(root), str(root), to="hudi", mode="metadata", history=True)
        for source, target in report.versions:
            got = lakecore.open(str(root), format="hudi").snapshot(version=str(target))
            want = deltalake.DeltaTable(str(root), version=int(source)).to_pyarrow_table()
            assert rows(got.to_arrow()) == rows(want), (root.name, source)
        cases += 1
    assert cases == 5


@pytest.mark.slow
def test_a_fault_at_every_storage_call_leaves_delta_intact_and_a_rerun_finishes(
    tmp_path: Path,
) -> None:
    """A storage fault at each storage call of the migration (before the call, and after it
    reached the store for writes): a typed error, Delta's files and data files unchanged; a
    re-run migrates, after which every Delta version has a Hudi version with its rows and the
    latest rows agree. (A claim whose requested file failed leaves nothing pending:
    test_a_fault_after_claiming_the_instant_leaves_nothing_pending_after_a_rerun.)"""
    from lakecore.storage import open_storage
    from lakecore.testing.faults import MUTATING, FaultyStorage

    seed = tmp_path / "seed"
    delta_table(seed)
    counting = FaultyStorage(open_storage(str(tmp_path / "count")))
    shutil.copytree(seed, tmp_path / "count")
    counting.arm(None)
    lakecore.migrate(
        str(tmp_path / "count"), str(tmp_path / "count"), to="hudi", mode="metadata",
        history=True, target_storage=counting,
    )  # fmt: skip
    calls = list(counting.calls)
    assert len(calls) > 100
    faulted = 0
    for i, call in enumerate(calls):
        for mode in ("before", "after"):
            if mode == "after" and call.method not in MUTATING:
                continue
            root = tmp_path / f"s{i}{mode}"
            shutil.copytree(seed, root)
            before, files = delta_files(root), data_files(root)
            faulty = FaultyStorage(open_storage(str(root)))
            faulty.arm(i, mode=mode)
            with contextlib.suppress(LakecoreError):
                lakecore.migrate(
                    str(root), str(root), to="hudi", mode="metadata", history=True,
                    target_storage=faulty,
                )  # fmt: skip
            if not faulty.faults:
                shutil.rmtree(root)
                continue
            faulted += 1
            assert delta_files(root) == before and data_files(root) == files, (i, mode)
            lakecore.migrate(str(root), str(root), to="hudi", mode="metadata", history=True)
            assert delta_files(root) == before and data_files(root) == files, (i, mode)
            assert hudi_rows(root) == delta_rows(root), (i, mode)
            hudi = lakecore.open(str(root), format="hudi")
            readable = []
            for entry in hudi.history():
                try:
                    readable.append(hudi_rows(root, str(entry.version)))
                except lakecore.errors.VersionNotFoundError:
                    continue  # a rollback instant
            for version in range(3):
                assert delta_rows(root, version) in readable, (i, mode, version)
            shutil.rmtree(root)
    assert faulted > 100


def test_delta_vacuum_bounds_hudi_time_travel_with_a_typed_error(tmp_path: Path) -> None:
    """After a Delta VACUUM deletes files Delta removed, the latest Hudi version still reads
    as Delta's, earlier ones fail with a CorruptTableError (never other rows), and an
    incremental run continues."""
    root = tmp_path / "t"
    delta_table(root)
    report = lakecore.migrate(str(root), str(root), to="hudi", history=True)
    gone = deltalake.DeltaTable(str(root)).vacuum(
        retention_hours=0, enforce_retention_duration=False, dry_run=False
    )
    assert len(gone) == 1
    assert hudi_rows(root) == delta_rows(root)
    for source, target in report.versions[:-1]:
        with pytest.raises(lakecore.errors.CorruptTableError, match="missing"):
            hudi_rows(root, str(target))
        assert source in (0, 1)
    deltalake.write_deltalake(
        str(root), batch((7, "q", 7, "x")), partition_by=["city"], mode="append"
    )
    again = lakecore.migrate(str(root), str(root), to="hudi", history=True)
    assert again.versions and hudi_rows(root) == delta_rows(root)


def test_the_shared_root_as_a_source_and_a_target_again(tmp_path: Path) -> None:
    """At a root holding Delta and its adopting Hudi table: migrating into either format
    there again is refused (MigrationError) without touching Delta; without source_format
    another location is refused as ambiguous; with it, the Hudi side migrates elsewhere with
    every version's rows."""
    root = tmp_path / "t"
    delta_table(root)
    lakecore.migrate(str(root), str(root), to="hudi", history=True)
    before = delta_files(root)
    for kwargs in ({"to": "delta"}, {"to": "delta", "source_format": "hudi"}):
        with pytest.raises(MigrationError, match="did not write"):
            lakecore.migrate(str(root), str(root), **kwargs)  # type: ignore[arg-type]
    with pytest.raises(MigrationError, match="already is a hudi table"):
        lakecore.migrate(str(root), str(root), to="hudi", source_format="hudi")
    with pytest.raises(MigrationError, match="pass source_format"):
        lakecore.migrate(str(root), str(tmp_path / "x"), to="lance")
    assert delta_files(root) == before
    other = tmp_path / "copy"
    report = lakecore.migrate(str(root), str(other), to="delta", source_format="hudi", history=True)
    assert len(report.versions) == 3
    for source, target in report.versions:
        got = lakecore.open(str(other)).snapshot(version=target).to_arrow()
        assert rows(got.select(["id", "name", "n", "city"])) == hudi_rows(root, str(source))


def test_filters_on_escaped_and_typed_partition_values_prune_like_delta(tmp_path: Path) -> None:
    """``scan(where=...)`` on the Hudi side (partition pruning over escaped paths) returns
    what lakecore's Delta reader returns: an equality per string value (and null), and
    equality and ranges over each typed partition column."""
    import pyarrow.compute as pc

    root = tmp_path / "strings"
    data = pa.table({"id": list(range(len(STRING_VALUES))), "p": STRING_VALUES})
    deltalake.write_deltalake(str(root), data, partition_by=["p"])
    lakecore.migrate(str(root), str(root), to="hudi", mode="metadata")
    hudi = lakecore.open(str(root), format="hudi")
    checked = 0
    for i, value in enumerate(STRING_VALUES):
        where = pc.field("p").is_null() if value is None else pc.field("p") == value
        assert hudi.scan(where=where).to_arrow().column("id").to_pylist() == [i], value
        checked += 1
    for name, (kind, values) in TYPED.items():
        root = tmp_path / name
        data = pa.table({"id": list(range(len(values))), "p": pa.array(values, kind)})
        deltalake.write_deltalake(str(root), data, partition_by=["p"])
        lakecore.migrate(str(root), str(root), to="hudi", mode="metadata")
        hudi = lakecore.open(str(root), format="hudi")
        delta = lakecore.open(str(root), format="delta")
        present = sorted(v for v in values if v is not None)  # type: ignore[type-var]
        middle = pa.scalar(present[len(values) // 2], kind)
        field = pc.field("p")
        for where in (field == middle, field < middle, field >= middle, field.is_null()):
            got = hudi.scan(where=where).to_arrow().column("id").to_pylist()
            want = delta.scan(where=where).to_arrow().column("id").to_pylist()
            assert sorted(got) == sorted(want), (name, str(where))
            checked += 1
    assert checked == len(STRING_VALUES) + 4 * len(TYPED) == 65


def _migrate_in_child(root: str, queue: Any) -> None:
    try:
        lakecore.migrate(root, root, to="hudi", mode="metadata", history=True)
        queue.put("ok")
    except LakecoreError as exc:
        queue.put(type(exc).__name__)
    except Exception as exc:  # an untyped error is a finding
        queue.put(f"untyped {type(exc).__name__}: {exc}")


def test_two_concurrent_migrations_leave_one_right_table(tmp_path: Path) -> None:
    """Two processes migrate the same Delta table in place at once (twice): a loser fails
    with a LakecoreError (its type varies with where it lost; if both lose, a re-run
    finishes), and the Hudi table then holds every Delta version once; a re-run commits
    nothing."""
    import multiprocessing

    seed = tmp_path / "seed"
    delta_table(seed)
    ctx = multiprocessing.get_context("fork")
    for attempt in range(2):
        root = tmp_path / f"r{attempt}"
        shutil.copytree(seed, root)
        queue = ctx.Queue()
        runs = [ctx.Process(target=_migrate_in_child, args=(str(root), queue)) for _ in range(2)]
        for run in runs:
            run.start()
        for run in runs:
            run.join(60)
        outcomes = sorted(queue.get(timeout=5) for _ in runs)
        assert not any(o.startswith("untyped") for o in outcomes), outcomes
        if "ok" not in outcomes:  # both lost (allowed: re-run the migration)
            lakecore.migrate(str(root), str(root), to="hudi", mode="metadata", history=True)
        hudi = lakecore.open(str(root), format="hudi")
        assert hudi_rows(root) == delta_rows(root)
        readable = []
        for entry in reversed(hudi.history()):
            if entry.operation != "rollback":  # a rollback reads as the write before it
                readable.append(hudi_rows(root, str(entry.version)))
        assert readable == [delta_rows(root, v) for v in range(3)]
        again = lakecore.migrate(str(root), str(root), to="hudi", mode="metadata", history=True)
        assert again.commits == 0


def test_a_checkpoint_and_log_cleanup_between_runs(tmp_path: Path) -> None:
    """Delta versions committed after the last run, checkpointed, and their JSON commits
    deleted (log cleanup): the next run starts at the checkpoint and reads as Delta's."""
    root = tmp_path / "t"
    delta_table(root)
    lakecore.migrate(str(root), str(root), to="hudi", history=True)
    for i in range(5):
        deltalake.write_deltalake(
            str(root), batch((20 + i, "n", i, f"c{i % 2}")), partition_by=["city"], mode="append"
        )
    deltalake.DeltaTable(str(root)).delete("id = 21")
    deltalake.DeltaTable(str(root)).create_checkpoint()
    checkpoint = deltalake.DeltaTable(str(root)).version()
    for commit in (root / "_delta_log").glob("*.json"):
        if int(commit.name[:20]) < checkpoint:
            commit.unlink()
    deltalake.write_deltalake(
        str(root), batch((30, "z", 1, "x")), partition_by=["city"], mode="append"
    )
    report = lakecore.migrate(str(root), str(root), to="hudi", mode="metadata", history=True)
    assert [s for s, _ in report.versions] == [checkpoint, checkpoint + 1]
    every_version_reads_as_delta(root, report)


@pytest.mark.parametrize(
    "actions",
    ["remove,add", "add,remove", "add,add", "add"],
    ids=["remove-then-readd", "add-then-remove", "double-add", "readd-live"],
)
@pytest.mark.parametrize("first", ["before", "none"], ids=["migrated-before", "one-run"])
def test_one_commit_naming_a_live_file_again(actions: str, first: str, tmp_path: Path) -> None:
    """A hand-written Delta commit that removes and re-adds a live file (either order), adds
    it twice, or adds it again: every Hudi version reads what lakecore's Delta reader reads
    (the last action wins, as Spark's log replay; deltalake differs on the mixed ones)."""
    root = tmp_path / "t"
    delta_table(root)
    if first == "before":
        lakecore.migrate(str(root), str(root), to="hudi", history=True)
    first_commit = (root / "_delta_log" / f"{1:020d}.json").read_text().splitlines()
    add = next(json.loads(line)["add"] for line in first_commit if '"add"' in line)
    remove = {
        "path": add["path"],
        "deletionTimestamp": int(time.time() * 1000),
        "dataChange": True,
        "partitionValues": add["partitionValues"],
        "size": add["size"],
    }
    entries = [{"commitInfo": {"timestamp": int(time.time() * 1000), "operation": "WRITE"}}]
    entries += [{"add": add} if a == "add" else {"remove": remove} for a in actions.split(",")]
    log = root / "_delta_log" / f"{3:020d}.json"
    log.write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    files = data_files(root)
    report = lakecore.migrate(str(root), str(root), to="hudi", mode="metadata", history=True)
    assert report.versions[-1][0] == 3
    assert data_files(root) == files
    delta = lakecore.open(str(root), format="delta")
    hudi = lakecore.open(str(root), format="hudi")
    for source, target in report.versions:
        want = rows(delta.snapshot(version=source).to_arrow())
        got = rows(
            hudi.snapshot(version=str(target)).to_arrow().select(["id", "name", "n", "city"])
        )
        assert got == want, (source, target)


@pytest.mark.parametrize(
    "offsets", [(0, 1000, 1000), (0, 2000, 1000)], ids=["same-time", "backwards"]
)
def test_delta_commit_times_that_do_not_increase(
    offsets: tuple[int, int, int], tmp_path: Path
) -> None:
    """Two Delta versions with one commit time, or a time going backwards (commit-file
    mtimes): every version still reads as Delta's by version, and the report says the
    timestamps were not all kept (documented: the clock's time is taken)."""
    import os

    root = tmp_path / "t"
    delta_table(root)
    base = 1_700_000_000_000
    for version, offset in enumerate(offsets):
        ns = (base + offset) * 1_000_000
        os.utime(root / "_delta_log" / f"{version:020d}.json", ns=(ns, ns))
    report = lakecore.migrate(str(root), str(root), to="hudi", mode="metadata", history=True)
    every_version_reads_as_delta(root, report)
    assert not report.timestamps_kept
    assert any("clock" in note for note in report.notes)


def test_other_spellings_of_the_root_are_in_place_and_nesting_is_refused(tmp_path: Path) -> None:
    """A target spelled with a trailing slash, ``file://``, ``.`` or ``..`` is the same root
    (adopted, nothing rewritten); a target inside the Delta table (a sub-directory, a
    partition directory, ``_delta_log``) or around it is refused; Delta stays intact."""
    spellings = ["{r}/", "file://{r}", "{r}/.", "{r}/../t", "{r}//"]
    for i, spelling in enumerate(spellings):
        root = tmp_path / str(i) / "t"
        delta_table(root)
        files = data_files(root)
        report = lakecore.migrate(str(root), spelling.format(r=root), to="hudi", mode="auto")
        assert (report.files_rewritten, report.files_adopted) == (0, 4), spelling
        assert data_files(root) == files
    root = tmp_path / "0" / "t"
    before = delta_files(root)
    for target in (root / "sub", root / "city=x", root / "_delta_log" / "h", root.parent):
        with pytest.raises(MigrationError, match="inside the"):
            lakecore.migrate(str(root), str(target), to="hudi", mode="auto")
    assert delta_files(root) == before
