"""Stats kept as text until asked for: the direct parse, record counts, partial file indexes.

The direct parse (values straight from the strings' buffers, pieces on threads) must give
exactly what the careful line-by-line parse gives, or hand over to it; a file index with the
stats of some columns only must keep every row and every other column as ``files()`` has
them; planning must not convert the stats of columns its predicate does not name.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest
from lakecore_delta import stats as st
from lakecore_delta import stats_text as stt
from lakecore_delta.file_index import build_file_index
from lakecore_delta.source import DeltaSnapshotSource

import lakecore
from lakecore.model import files as fi

from .builders import DeltaTableBuilder, add, commit_info, field
from .test_stats import FIELDS, GARBAGE, GOOD_STATS

SMALL = '{"numRecords":2,"minValues":{"id":7,"name":"b"},"nullCount":{"id":0}}'

MIXES: dict[str, list[str | None]] = {
    "good": [GOOD_STATS, SMALL, GOOD_STATS],
    "nulls and empties": [None, GOOD_STATS, "", SMALL, None],
    "all null": [None, None],
    "json null": [GOOD_STATS, "null", SMALL],
    "leading blank": [" " + SMALL, GOOD_STATS],
    "trailing newline": [SMALL + "\n", GOOD_STATS],
    **{f"garbage {k}": [GOOD_STATS, v, SMALL] for k, v in sorted(GARBAGE.items())},
    "numRecords not first": ['{"minValues":{"id":1},"numRecords":5}', SMALL],
    "numRecords float": ['{"numRecords":2.5}', SMALL],
}


def _arrow_fields(builder: DeltaTableBuilder) -> list[pa.Field]:
    builder.init(FIELDS)
    builder.commit(1, commit_info(), add("f.parquet", stats=GOOD_STATS))
    snap = lakecore.open(builder.uri).snapshot()
    assert isinstance(snap.source, DeltaSnapshotSource)
    return snap.source.state.data_fields()


def _careful(monkeypatch: pytest.MonkeyPatch, values: Any, fields: list[pa.Field]) -> pa.Table:
    with monkeypatch.context() as m:
        m.setattr(stt, "_read_stats_direct", lambda *_: None)
        return st.parse_stats(values, fields)


@pytest.mark.parametrize("mix", sorted(MIXES))
def test_direct_parse_equals_the_careful_parse(
    builder: DeltaTableBuilder, monkeypatch: pytest.MonkeyPatch, mix: str
) -> None:
    fields = _arrow_fields(builder)
    values = pa.array(MIXES[mix], pa.string())
    expected = _careful(monkeypatch, values, fields)
    # One chunk, then split in chunks with tiny pieces (several threads, piece boundaries).
    assert st.parse_stats(values, fields).equals(expected)
    monkeypatch.setattr(stt, "_PIECE_BYTES", 64)
    chunked = pa.chunked_array([values.slice(0, 1), values.slice(1)])
    assert st.parse_stats(chunked, fields).equals(expected)
    assert st.record_counts(chunked).to_pylist() == expected.column("numRecords").to_pylist()


def test_mixes_ran() -> None:
    assert len(MIXES) == 8 + len(GARBAGE)


def test_direct_parse_takes_clean_values_only() -> None:
    schema = st.stats_json_schema([pa.field("id", pa.int64())])
    clean = pa.chunked_array([pa.array([SMALL, None, "", SMALL])])
    parsed = stt._read_stats_direct(clean, schema)
    assert parsed is not None
    assert parsed.column("numRecords").to_pylist() == [2, None, None, 2]
    for unclean in ([SMALL, " " + SMALL], [SMALL, "null"], ['{"a":1}{"b":2}', SMALL]):
        assert stt._read_stats_direct(pa.chunked_array([pa.array(unclean)]), schema) is None


def test_many_values_in_many_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stt, "_PIECE_BYTES", 4096)
    values = pa.array(
        [json.dumps({"numRecords": i, "minValues": {"id": -i}}) for i in range(20_000)]
    )
    out = st.parse_stats(values.slice(3), [pa.field("id", pa.int64())])
    assert out.column("numRecords").to_pylist() == list(range(3, 20_000))
    assert out.column("min").combine_chunks().field("id").to_pylist() == [
        -i for i in range(3, 20_000)
    ]


def _table(builder: DeltaTableBuilder) -> lakecore.Table:
    fields = [field("id", "long"), field("name", "string"), field("p", "string")]
    builder.init(fields, partition_columns=["p"])
    adds = [
        add(
            f"p={p}/f{i}.parquet",
            partition_values={"p": p},
            stats={
                "numRecords": 10 + i,
                "minValues": {"id": i * 10, "name": f"n{i}"},
                "maxValues": {"id": i * 10 + 9, "name": f"n{i}z"},
                "nullCount": {"id": 0, "name": i % 2},
            },
        )
        for i, p in enumerate(["a", "b", "a", "b"])
    ]
    builder.commit(1, commit_info(), *adds)
    return lakecore.open(builder.uri)


def test_partial_index_keeps_rows_and_columns(builder: DeltaTableBuilder) -> None:
    table = _table(builder)
    source = table.snapshot().source
    assert isinstance(source, DeltaSnapshotSource)
    partial = build_file_index(source.state, {"id"})
    counts_only = build_file_index(source.state, set())
    full = build_file_index(source.state)
    for index in (partial, counts_only):
        assert index.column_names == full.column_names
        for name in (fi.PATH, fi.SIZE, fi.RECORD_COUNT, fi.PARTITION, fi.DELETION):
            assert index.column(name).equals(full.column(name)), name
    assert partial.column(fi.RECORD_COUNT).to_pylist() == [10, 11, 12, 13]
    for kind in (fi.MIN, fi.MAX, fi.NULL_COUNT):
        assert partial.column(kind).type.names == ["id"]
        assert counts_only.column(kind).type.names == []
        ids = partial.column(kind).combine_chunks().field("id")
        assert ids.equals(full.column(kind).combine_chunks().field("id"))


def test_planning_converts_only_the_predicates_columns(builder: DeltaTableBuilder) -> None:
    table = _table(builder)
    snap = table.snapshot()
    source = snap.source
    assert isinstance(source, DeltaSnapshotSource)
    scan = snap.scan("id >= 20 AND p = 'a'")
    assert scan.explain().files_after_stats_pruning == 1
    assert scan.reading_files().column(fi.PATH).to_pylist() == ["p=a/f2.parquet"]
    assert len(scan.tasks()) == 1
    assert source._files is None  # nothing asked for every column's stats yet
    assert [set(k) for k in source._partial] == [{"id"}]
    assert snap.scan().reading_files().num_rows == 4
    assert fi.MIN not in snap.scan().reading_files().column_names
    # files() keeps its contract: the planned rows with every column's stats.
    planned = scan.files()
    assert planned.column(fi.MIN).to_pylist() == [{"id": 20, "name": "n2"}]
    assert source._files is not None
    assert planned.equals(snap.files().filter(pa.array([False, False, True, False])))
    # Once the full index exists, planning uses it.
    assert source.files_with_stats({"name"}) is source._files


def test_partial_indexes_kept_are_bounded(builder: DeltaTableBuilder) -> None:
    table = _table(builder)
    source = table.snapshot().source
    assert isinstance(source, DeltaSnapshotSource)
    first = source.files_with_stats({"id"})
    for columns in ({"name"}, set(), {"id", "name"}, {"name", "x"}):
        source.files_with_stats(columns)
    assert len(source._partial) == 4
    assert frozenset({"id"}) not in source._partial
    assert source.files_with_stats({"id"}).equals(first)
