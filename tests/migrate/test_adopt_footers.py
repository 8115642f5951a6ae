"""A zero-copy migration reads each source file's footer once: the Hudi file index's reading
(statistics from footers, no metadata table column_stats) is the adoption check's too, and
the check takes the partition values a file holds from its footer statistics when they
settle them (else from the file's data pages, as before)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import lakecore
from lakecore.migrate import adopt, footer_check
from lakecore.model.footers import Footers
from lakecore.storage import open_storage
from lakecore.testing.faults import CountingStorage

PARTS = 6


def _hudi(root: Path) -> None:
    ids = pa.array(range(PARTS * 5), pa.int64())
    rows = pa.table(
        {
            "id": ids,
            "qty": pc.cast(pc.multiply(ids, 3), pa.int32()),
            "part": [f"p{i // 5}" for i in range(PARTS * 5)],
        }
    )
    table = lakecore.create(
        str(root),
        rows.schema,
        format="hudi",
        partition_by=["part"],
        properties={"record_key": "id", "table_type": "COPY_ON_WRITE"},
    )
    table.append(rows.slice(0, 15))
    table.append(rows.slice(15))


def test_each_base_file_footer_is_read_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "t"
    _hudi(root)
    storage = CountingStorage(open_storage(str(root)))
    opened: list[Any] = []

    def counted_source(uri: str, to: str, fmt: str | None, options: Any) -> lakecore.Table:
        table = lakecore.open(uri, format=fmt, storage=storage)
        opened.append(table)
        return table

    monkeypatch.setattr(adopt, "open_source", counted_source)
    report = lakecore.migrate(str(root), str(root), to="delta", mode="metadata")
    assert len(opened) == 1 and (report.files_adopted, report.files_rewritten) == (PARTS, 0)
    base = sorted(
        str(p.relative_to(root)) for p in root.rglob("*.parquet") if ".hoodie" not in p.parts
    )
    assert len(base) == PARTS
    opens = [
        c.path for c in storage.calls if c.method == "open_input" and c.path.endswith(".parquet")
    ]
    assert sorted(opens) == base  # the file index and the adoption check: one footer read each
    for path in base:
        footer = pq.read_metadata(root / path)
        # Each file's footer holds a ~430 KB bloom filter the statistics never need.
        assert footer.serialized_size > 400_000 > 4 * storage.bytes[path], path
    got = deltalake.DeltaTable(str(root)).to_pyarrow_table()
    assert sorted(got.column("id").to_pylist()) == list(range(PARTS * 5))


@pytest.mark.parametrize("given", [True, False], ids=["footers-given", "own-footers"])
def test_the_check_reads_each_footer_once_without_a_snapshot_memo(
    tmp_path: Path, given: bool
) -> None:
    """A source whose snapshot keeps no footers (e.g. Delta): check then split read each
    one once, through the footers given or the run's own."""
    root = tmp_path / "t"
    _hudi(root)
    storage = CountingStorage(open_storage(str(root)))
    source = lakecore.open(str(root), storage=storage)
    snapshot = source.snapshot()
    units = snapshot.files()
    storage.reset()
    plan = adopt.Adoption("metadata", storage)
    footers = Footers(storage) if given else None
    schema = pa.schema([snapshot.schema.field(n) for n in ("id", "qty", "part")])
    plan.check(units, schema, ["part"], None, footers)
    reasons = plan._examine(units, schema, ["part"], None, footers)
    plan._footers.clear()  # the reasons again: the footers stay read
    assert plan._examine(units, schema, ["part"], None, footers) == reasons == [None] * PARTS
    memo = footers if footers is not None else plan._own_footers[0]
    assert memo.reads == PARTS
    opens = sorted(c.path for c in storage.calls if c.method == "open_input")
    assert opens == sorted(units.column("path").to_pylist())


VALUES: list[tuple[pa.DataType, Any, Any]] = [
    (pa.int32(), 7, 8),
    (pa.int64(), -3, 3),
    (pa.string(), "2024/01", "2024/02"),
    (pa.bool_(), True, False),
    (pa.float64(), 0.0, -0.0),
    (pa.float64(), 1.5, float("nan")),
    (pa.date32(), dt.date(2024, 2, 29), dt.date(2024, 3, 1)),
    (pa.decimal128(9, 2), Decimal("12.30"), Decimal("12.31")),
    (pa.timestamp("us"), dt.datetime(2024, 1, 1, 12), dt.datetime(2024, 1, 1, 13)),
    (
        pa.timestamp("us", "UTC"),
        dt.datetime(2024, 1, 1, 12, tzinfo=dt.timezone.utc),
        dt.datetime(2024, 1, 1, 13, tzinfo=dt.timezone.utc),
    ),
]
RAN: list[str] = []


def _file(path: Path, values: pa.Array, stats: bool = True) -> None:
    pq.write_table(pa.table({"id": range(len(values)), "p": values}), path, write_statistics=stats)


def _nan_free(values: set[Any]) -> set[Any]:
    """``values`` with NaN as a string (NaN equals no NaN, the check treats them alike)."""
    return {"NaN" if isinstance(v, float) and v != v else v for v in values}


def _held(root: Path, name: str, want: Any) -> tuple[dict[str, set[Any]], bool]:
    """What the check finds the file holds, and whether it read data pages for it."""
    storage = CountingStorage(open_storage(str(root)))
    footer = Footers(storage).get(name)
    before = len(storage.calls)
    held = footer_check._partition_values(
        storage, name, footer, footer.schema.to_arrow_schema(), ["p"], {"p": want}
    )
    return held, len(storage.calls) > before


@pytest.mark.parametrize(("kind", "value", "other"), VALUES, ids=[f"{t}-{v}" for t, v, _ in VALUES])
def test_partition_values_from_footer_statistics(
    tmp_path: Path, kind: pa.DataType, value: Any, other: Any
) -> None:
    """Whatever path the check takes, it finds the distinct values reading the column
    finds (the definition); a file that holds only its partition value is not read."""
    cases = {
        "same.parquet": ([value] * 3, True),
        "nostats.parquet": ([value] * 3, False),
        "withnull.parquet": ([value, None], True),
        "mixed.parquet": ([value, other], True),
        "other.parquet": ([other], True),
        "empty.parquet": ([], True),
    }
    reads = {}
    for name, (values, stats) in cases.items():
        _file(tmp_path / name, pa.array(values, kind), stats)
        held, reads[name] = _held(tmp_path, name, value)
        column = pq.read_table(tmp_path / name, columns=["p"]).column("p")
        assert sorted(held) == ["p"], name
        assert _nan_free(held["p"]) == _nan_free(set(pc.unique(column).to_pylist())), name
    floating = pa.types.is_floating(kind)  # pyarrow leaves NaN out of min/max
    assert reads == {
        "same.parquet": floating,
        "nostats.parquet": True,
        "withnull.parquet": True,
        "mixed.parquet": True,
        "other.parquet": True,
        "empty.parquet": True,
    }
    RAN.append(str(kind))


def test_partition_value_case_count() -> None:
    assert len(RAN) == len(VALUES)
