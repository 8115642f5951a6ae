"""Review attacks on the read side: Hudi MoR (column-wise Avro decoder, batched merge) and Delta
lazy stats (partial file indexes, the direct stats parse).

Tests marked ``xfail(strict=True)`` are bugs found by the review: each fails today and must
start passing (then lose its mark) when the bug is fixed. The others are attacks that held;
they stay as regression tests. Reference engines: hudi-rs 0.5.0 for Hudi reads, and for Delta
pruning the same table with every ``stats`` removed (no pruning possible) read by lakecore.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import shutil
import struct
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from lakecore_hudi import scan as hudi_scan
from lakecore_hudi.avro_schema import physical_avro_schema
from lakecore_hudi.log import blocks
from lakecore_hudi.log.blocks import _decode_with_fastavro, decode_avro_blocks
from lakecore_hudi.log.delete_blocks import encode_delete_block
from lakecore_hudi.log.format import (
    BlockType,
    HeaderKey,
    LogBlock,
    encode_log_block,
    read_log_blocks,
)

import lakecore

from .hudi.write.helpers import SCHEMA, create, hudi_rs_table, rows

Row = dict[str, Any]

# ------------------------------------------------------------------------------ helpers


def _sorted(table: pa.Table) -> list[Row]:
    data = table.drop_columns([c for c in table.column_names if c.startswith("_hoodie_")])
    return sorted(data.to_pylist(), key=lambda r: json.dumps(r, sort_keys=True, default=str))


def _avro_block(records: list[Row], schema: dict[str, Any], instant: str = "1") -> LogBlock:
    """One Avro data block holding ``records`` encoded by fastavro under ``schema``."""
    parsed = fastavro.parse_schema(physical_avro_schema(json.loads(json.dumps(schema))))
    parts = [struct.pack(">ii", 3, len(records))]
    for record in records:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, record)
        parts += [struct.pack(">i", len(out.getvalue())), out.getvalue()]
    header = {HeaderKey.INSTANT_TIME: instant, HeaderKey.SCHEMA: json.dumps(schema)}
    framed = encode_log_block(BlockType.AVRO_DATA, header, b"".join(parts))
    (block,) = read_log_blocks(framed, "review.log")
    return block


def _columnar_equals_fastavro(schema: dict[str, Any], records: list[Row]) -> None:
    block = _avro_block(records, schema)
    expected = _decode_with_fastavro(block)
    old = blocks._COLUMNAR_MIN_RECORDS
    blocks._COLUMNAR_MIN_RECORDS = 0
    try:
        got = decode_avro_blocks([block])
    finally:
        blocks._COLUMNAR_MIN_RECORDS = old
    assert got.schema == expected.schema
    assert got.num_rows == len(records)
    for name in expected.column_names:
        want, have = expected.column(name), got.column(name)
        if pa.types.is_floating(want.type):  # NaN != NaN for equals(): compare the reprs
            assert [repr(v) for v in have.to_pylist()] == [repr(v) for v in want.to_pylist()]
        else:
            assert have.equals(want), name


def _rec(fields: list[dict[str, Any]], name: str = "r", **extra: Any) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": fields, **extra}


# ------------------------------------------------------------------ column-wise Avro decoder

_INNER = _rec(
    [{"name": "x", "type": ["long", "null"]}, {"name": "s", "type": ["string", "null"]}],
    "inner",
)
_DEEP = _rec(
    [
        {
            "name": "a",
            "type": [
                "null",
                _rec(
                    [
                        {
                            "name": "b",
                            "type": ["null", _rec([{"name": "c", "type": ["int", "null"]}], "C")],
                        }
                    ],
                    "B",
                ),
            ],
        },
        {"name": "a2", "type": ["null", "B"]},
    ]
)
_ENUM = {"type": "enum", "name": "E", "namespace": "other", "symbols": ["A", "B", "C"]}
_FLOATS = [float("nan"), float("inf"), float("-inf"), -0.0, 1e-45, 3.4e38, 1.5]


def _fixed_decimal_case(size: int, precision: int) -> tuple[dict[str, Any], list[Row]]:
    dec = {
        "type": "fixed",
        "name": f"d{size}",
        "size": size,
        "logicalType": "decimal",
        "precision": precision,
        "scale": 2,
    }
    candidates = [0, 1, -1, 127, -128, 255, -256, 10**precision - 1, -(10**precision - 1)]
    values = [v for v in candidates if -(2 ** (8 * size - 1)) <= v < 2 ** (8 * size - 1)]
    records = [
        {
            "v": values[i % len(values)].to_bytes(size, "big", signed=True),
            "w": None if i % 2 else values[i % len(values)].to_bytes(size, "big", signed=True),
        }
        for i in range(65)
    ]
    schema = _rec([{"name": "v", "type": dec}, {"name": "w", "type": [f"d{size}", "null"]}])
    return schema, records


def _bytes_decimal_case(precision: int) -> tuple[dict[str, Any], list[Row]]:
    dec = {"type": "bytes", "logicalType": "decimal", "precision": precision, "scale": 3}
    values = [0, 1, -1, 10**precision - 1, -(10**precision - 1), -129, 128]
    records = []
    for i in range(66):
        v = values[i % len(values)]
        raw = v.to_bytes((v.bit_length() + 8) // 8, "big", signed=True)
        records.append({"v": raw if i % 5 else b"", "w": None if i % 3 == 0 else raw})
    return _rec([{"name": "v", "type": dec}, {"name": "w", "type": [dec, "null"]}]), records


def _logical_case(logical: str, primitive: str) -> tuple[dict[str, Any], list[Row]]:
    t = {"type": primitive, "logicalType": logical}
    if primitive == "int":
        big = [0, 1, -1, 86_399_999, -(2**31), 2**31 - 1]
    else:
        big = [0, -1, 1, 2**62, -(2**62), 86_399_999_999, 253402300799999]
    records = [
        {
            "v": big[i % len(big)],
            "w": None if i % 2 else big[i % len(big)],
            "z": big[(i + 1) % len(big)] if i % 3 else None,
        }
        for i in range(64)
    ]
    fields: list[dict[str, Any]] = [
        {"name": "v", "type": t},
        {"name": "w", "type": ["null", t]},
        {"name": "z", "type": [t, "null"]},
    ]
    return _rec(fields), records


_DECODER_CASES: dict[str, tuple[dict[str, Any], list[Row]]] = {
    "union value branch first, nested record": (
        _rec([{"name": "v", "type": [_INNER, "null"]}]),
        [
            {"v": None if i % 3 == 0 else {"x": None if i % 2 else i, "s": "é" * i or None}}
            for i in range(70)
        ],
    ),
    "union of null only": (_rec([{"name": "v", "type": ["null"]}]), [{"v": None}] * 65),
    **{
        f"fixed decimal {s} bytes": _fixed_decimal_case(s, p)
        for s, p in [(1, 2), (9, 20), (17, 40)]
    },
    **{f"bytes decimal p{p}": _bytes_decimal_case(p) for p in (9, 18, 40)},
    **{
        lt: _logical_case(lt, prim)
        for lt, prim in [
            ("timestamp-millis", "long"),
            ("timestamp-micros", "long"),
            ("local-timestamp-millis", "long"),
            ("local-timestamp-micros", "long"),
            ("time-millis", "int"),
            ("time-micros", "long"),
            ("date", "int"),
        ]
    },
    "float and double NaN, inf, -0.0": (
        _rec([{"name": "f", "type": "float"}, {"name": "d", "type": ["double", "null"]}]),
        [{"f": _FLOATS[i % 7], "d": None if i % 4 == 0 else _FLOATS[i % 7]} for i in range(64)],
    ),
    "enum from another namespace, referenced by full name": (
        _rec(
            [
                {"name": "e", "type": _ENUM},
                {"name": "e2", "type": ["null", "other.E"]},
                {"name": "e3", "type": ["other.E", "null"]},
            ],
            namespace="ns",
        ),
        [
            {"e": "ABC"[i % 3], "e2": None if i % 2 else "B", "e3": "C" if i % 3 else None}
            for i in range(64)
        ],
    ),
    "empty, NUL, astral and long strings, bytes": (
        _rec([{"name": "s", "type": "string"}, {"name": "b", "type": ["bytes", "null"]}]),
        [
            {"s": "" if i % 2 else "\u0000𝄞" * i * 50, "b": None if i % 3 == 0 else bytes(range(i))}
            for i in range(65)
        ],
    ),
    "extreme ints and longs": (
        _rec([{"name": "i", "type": "int"}, {"name": "l", "type": ["null", "long"]}]),
        [
            {"i": [-(2**31), 2**31 - 1, 0, -1][i % 4], "l": [-(2**63), 2**63 - 1, None][i % 3]}
            for i in range(63)
        ],
    ),
    "deep nesting with a named reference": (
        _DEEP,
        [
            {
                "a": None
                if i % 5 == 0
                else {"b": None if i % 3 == 0 else {"c": None if i % 2 else i}},
                "a2": {"b": {"c": i}} if i % 2 else None,
            }
            for i in range(64)
        ],
    ),
}


@pytest.mark.parametrize("case", sorted(_DECODER_CASES))
def test_columnar_decoder_equals_fastavro(case: str) -> None:
    _columnar_equals_fastavro(*_DECODER_CASES[case])


def test_columnar_decoder_case_count() -> None:
    assert len(_DECODER_CASES) == 20


def test_columnar_decoder_record_without_fields() -> None:
    schema = _rec([{"name": "e", "type": _rec([], "Empty")}, {"name": "x", "type": "long"}])
    _columnar_equals_fastavro(schema, [{"e": {}, "x": i} for i in range(64)])


# ------------------------------------------------------------------ Hudi MoR vs hudi-rs


def _mor_with_log(root: Path, n: int = 10) -> tuple[str, LogBlock, Row]:
    """A MoR table of ids 0..n-1 (ts 10) with one log file; its path, block, a record of it."""
    create(root, "MERGE_ON_READ", partitioned=False).append(
        pa.Table.from_pylist(
            [{"id": i, "name": f"n{i}", "ts": 10, "city": "x"} for i in range(n)], schema=SCHEMA
        )
    )
    lakecore.open(str(root)).upsert(rows((0, "u0", 10, "x")))
    (log,) = sorted(root.glob(".*.log.*"))
    (block,) = read_log_blocks(log.read_bytes(), str(log))
    template = decode_avro_blocks([block]).to_pylist()[0]
    return str(log), block, template


def _append_data(
    log: str,
    block: LogBlock,
    template: Row,
    records: list[Row],
    schema: dict[str, Any] | None = None,
) -> None:
    """Append a data block (the log's own instant; its writer schema unless ``schema``)."""
    assert block.schema is not None
    schema = json.loads(block.schema) if schema is None else schema
    full = []
    for r in records:
        row = {**template, **r, "_hoodie_record_key": str(r["id"])}
        full.append({f["name"]: row.get(f["name"]) for f in schema["fields"]})
    framed = _avro_block(full, schema, str(block.instant_time))
    with open(log, "ab") as f:
        f.write(encode_log_block(BlockType.AVRO_DATA, framed.header, bytes(framed.content)))


def _append_deletes(log: str, block: LogBlock, keys: list[tuple[int, int | None]]) -> None:
    table = pa.table(
        {
            "record_key": [str(k) for k, _ in keys],
            "partition_path": [""] * len(keys),
            "ordering_value": pa.array([o for _, o in keys], pa.int64()),
        }
    )
    with open(log, "ab") as f:
        f.write(encode_delete_block(table, str(block.instant_time)))


def _key(table: list[Row], key: int) -> list[Row]:
    return [r for r in table if r["id"] == key]


def test_event_time_ties_nulls_and_deletes_match_hudi_rs(tmp_path: Path) -> None:
    log, block, template = _mor_with_log(tmp_path, n=200)
    _append_data(
        log,
        block,
        template,
        [
            {"id": 1, "name": "a1", "ts": 20},
            {"id": 1, "name": "a2", "ts": 20},  # tie: the later record wins
            {"id": 1, "name": "a3", "ts": 5},  # lower: loses
            {"id": 2, "name": "b1", "ts": None},  # null ordering value: loses
            {"id": 3, "name": "c1", "ts": 10},
        ]
        # 65 more: the block goes through the column-wise decoder
        + [{"id": i, "name": "é" * (i % 4), "ts": 10 + i % 3} for i in range(100, 165)],
    )
    _append_deletes(log, block, [(4, 5), (5, 50), (6, 10)])  # lower loses, higher/equal win
    _append_data(log, block, template, [{"id": 5, "name": "back", "ts": 60}])
    lc = _sorted(lakecore.open(str(tmp_path)).to_arrow())
    assert lc == _sorted(hudi_rs_table(tmp_path))
    assert _key(lc, 1)[0]["name"] == "a2" and _key(lc, 2)[0]["name"] == "n2"
    assert _key(lc, 4)[0]["name"] == "n4" and _key(lc, 5)[0]["name"] == "back"
    assert _key(lc, 6) == []


def test_delete_of_a_key_not_yet_in_the_slice_is_kept(tmp_path: Path) -> None:
    log, block, template = _mor_with_log(tmp_path)
    _append_deletes(log, block, [(500, 15)])
    _append_data(log, block, template, [{"id": 500, "name": "late", "ts": 10}])
    lc = _sorted(lakecore.open(str(tmp_path)).to_arrow())
    hr = _sorted(hudi_rs_table(tmp_path))
    assert _key(hr, 500) == []
    assert lc == hr


def test_hard_delete_then_lower_reinsert_keeps_the_base_row(tmp_path: Path) -> None:
    log, block, template = _mor_with_log(tmp_path)
    _append_deletes(log, block, [(3, None)])
    _append_data(log, block, template, [{"id": 3, "name": "re", "ts": 1}])
    lc = _sorted(lakecore.open(str(tmp_path)).to_arrow())
    hr = _sorted(hudi_rs_table(tmp_path))
    assert _key(hr, 3) == [{"id": 3, "name": "n3", "ts": 10, "city": "x"}]
    assert lc == hr


def test_repeated_base_keys_survive_an_unrelated_update(tmp_path: Path) -> None:
    table = create(tmp_path, "MERGE_ON_READ", partitioned=False)
    table.append(rows((1, "a", 1, "x"), (1, "a2", 1, "x"), (2, "b", 1, "x"), (3, "c", 1, "x")))
    lakecore.open(str(tmp_path)).upsert(rows((3, "c2", 2, "x")))
    hr = _sorted(hudi_rs_table(tmp_path))
    assert len(_key(hr, 1)) == 2
    assert _sorted(lakecore.open(str(tmp_path)).to_arrow()) == hr


def test_repeated_base_key_updated_in_a_log_keeps_the_other_copy(tmp_path: Path) -> None:
    table = create(tmp_path, "MERGE_ON_READ", partitioned=False)
    table.append(rows((1, "a", 1, "x"), (1, "a2", 1, "x"), (2, "b", 1, "x")))
    lakecore.open(str(tmp_path)).upsert(rows((1, "new", 2, "x")))
    hr = _sorted(hudi_rs_table(tmp_path))
    assert [r["name"] for r in _key(hr, 1)] == ["a2", "new"]
    assert _sorted(lakecore.open(str(tmp_path)).to_arrow()) == hr


def test_long_zero_ordering_delete_is_not_a_hard_delete(tmp_path: Path) -> None:
    log, block, _ = _mor_with_log(tmp_path)
    _append_deletes(log, block, [(3, 0), (4, 0)])  # int64 ordering values: LongWrapper(0)
    hr = _sorted(hudi_rs_table(tmp_path))
    assert len(_key(hr, 3)) == 1 and len(_key(hr, 4)) == 1
    assert _sorted(lakecore.open(str(tmp_path)).to_arrow()) == hr


def test_commit_time_ordering_matches_hudi_rs(tmp_path: Path) -> None:
    """Under COMMIT_TIME_ORDERING the newest record wins whatever its ordering value, also
    over ordered and hard deletes and deletes of keys the slice does not hold yet."""
    log, block, template = _mor_with_log(tmp_path, n=100)
    props = tmp_path / ".hoodie" / "hoodie.properties"
    text = props.read_text()
    assert "hoodie.record.merge.mode=EVENT_TIME_ORDERING" in text
    text = text.replace("EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING").replace(
        "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5", "ce9acb64-bde0-424c-9b91-f6ebba25356d"
    )
    props.write_text(text)
    records = [{"id": 1, "name": "a1", "ts": 20}, {"id": 1, "name": "a2", "ts": 5}]
    records += [{"id": 2, "name": "b", "ts": None}]
    records += [{"id": k, "name": "m", "ts": 1} for k in range(10, 80)]
    _append_data(log, block, template, records)
    _append_deletes(log, block, [(3, 50), (4, 1), (500, 15)])
    _append_deletes(log, block, [(5, None)])
    _append_data(
        log,
        block,
        template,
        [{"id": k, "name": f"re{k}", "ts": 1} for k in (3, 5, 500)],
    )
    lc = _sorted(lakecore.open(str(tmp_path)).to_arrow())
    assert lc == _sorted(hudi_rs_table(tmp_path))
    names = {r["id"]: r["name"] for r in lc}
    assert (names[1], names[2], names[3], names[5], names[500]) == (
        "a2",
        "b",
        "re3",
        "re5",
        "re500",
    )
    assert 4 not in names and len(lc) == 100


def test_blocks_of_interleaved_writer_schemas_apply_in_log_order(tmp_path: Path) -> None:
    """Blocks under schemas A, B (unions value-first), A, C (no ``city``), B, A in one log:
    decoding groups blocks by schema, the merge must still apply them in log order."""
    log, block, template = _mor_with_log(tmp_path, n=100)
    assert block.schema is not None
    a = json.loads(block.schema)
    b = json.loads(block.schema)
    for f in b["fields"]:
        if isinstance(f["type"], list) and f["type"][0] == "null":
            f["type"] = [*f["type"][1:], "null"]
            f.pop("default", None)
    c = json.loads(block.schema)
    c["fields"] = [f for f in c["fields"] if f["name"] != "city"]
    for i, (schema, tag) in enumerate(
        [(a, "A1"), (b, "B"), (a, "A2"), (c, "C"), (b, "B2"), (a, "A3")]
    ):
        count = 65 if i % 2 == 0 else 10
        records = [{"id": k, "name": f"{tag}-{k}", "ts": 20} for k in range(count)]
        _append_data(log, block, template, records, schema)
        if i == 3:
            _append_deletes(log, block, [(k, None) for k in range(0, 100, 7)])
    lc = _sorted(lakecore.open(str(tmp_path)).to_arrow())
    assert lc == _sorted(hudi_rs_table(tmp_path))
    names = {r["id"]: r["name"] for r in lc}
    assert len(lc) == 100 - 5  # 70, 77, 84, 91, 98: later blocks re-insert the others
    assert (names[1], names[7], names[10], names[64], names[65]) == (
        "A3-1",
        "A3-7",
        "B2-10",
        "B2-64",
        "n65",
    )


def test_batched_merge_equals_slice_by_slice_and_hudi_rs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four file groups, each with data/delete runs alternating differently (>= 64 records in
    some blocks), keys only ever deleted while present: batched = one by one = hudi-rs."""
    table = create(tmp_path, "MERGE_ON_READ", partitioned=True)
    cities = ["a", "b", "c", "d"]
    table.append(
        pa.Table.from_pylist(
            [
                {"id": c * 1000 + i, "name": f"n{i}", "ts": 10, "city": city}
                for c, city in enumerate(cities)
                for i in range(80)
            ],
            schema=SCHEMA,
        )
    )
    lakecore.open(str(tmp_path)).upsert(
        pa.Table.from_pylist(
            [
                {"id": c * 1000, "name": "u", "ts": 10, "city": city}
                for c, city in enumerate(cities)
            ],
            schema=SCHEMA,
        )
    )
    for c, city in enumerate(cities):
        (log,) = (tmp_path / f"city={city}").glob(".*.log.*")
        (block,) = read_log_blocks(log.read_bytes(), str(log))
        template = decode_avro_blocks([block]).to_pylist()[0]
        base = c * 1000
        plan = [
            [("D", 65), ("X", 10), ("D", 3)],
            [("X", 5), ("D", 130)],
            [("D", 1)],
            [("D", 64), ("D", 63), ("X", 20), ("D", 70)],
        ][c]
        for step, (kind, count) in enumerate(plan):
            ids = [base + (step * 7 + 3 * j) % 80 for j in range(count)]
            if kind == "D":
                records = [
                    {
                        "id": k,
                        "name": ["", None, "ü" * (j % 5), "x" * j][j % 4],
                        "ts": [5, 10, 20][j % 3],
                    }
                    for j, k in enumerate(ids)
                ]
                _append_data(str(log), block, template, [r | {"city": city} for r in records])
            else:
                table_keys = pa.table(
                    {
                        "record_key": [str(k) for k in ids],
                        "partition_path": [f"city={city}"] * len(ids),
                        "ordering_value": pa.array(
                            [[5, 10, 15][j % 3] for j in range(count)], pa.int64()
                        ),
                    }
                )
                with open(log, "ab") as f:
                    f.write(encode_delete_block(table_keys, str(block.instant_time)))
    batched = _sorted(lakecore.open(str(tmp_path)).to_arrow())
    monkeypatch.setattr(hudi_scan, "MERGE_BATCH_SLICES", 1)
    one_by_one = _sorted(lakecore.open(str(tmp_path)).to_arrow())
    assert batched == one_by_one
    assert batched == _sorted(hudi_rs_table(tmp_path))
    assert 200 < len(batched) < 320


# ------------------------------------------------------------------ Delta lazy stats pruning

_DELTA_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("s", pa.string()),
        ("f", pa.float64()),
        ("ts", pa.timestamp("us", "UTC")),
        ("tn", pa.timestamp("us")),
    ]
)
_T0 = dt.datetime(2024, 1, 1, 0, 0, 0, 999, tzinfo=dt.timezone.utc)
_LONG = "b" * 40 + "c"
_DELTA_FILES = [
    [{"id": 1, "s": _LONG, "f": float("nan"), "ts": _T0, "tn": _T0.replace(tzinfo=None)}],
    [{"id": 2, "s": 'a"b\\c é€𝄞', "f": 1.0, "ts": _T0, "tn": _T0.replace(tzinfo=None)}],
    [{"id": 3, "s": None, "f": None, "ts": None, "tn": None}],
]
_WHERES = [
    f"s = '{_LONG}'",
    "s > '" + "b" * 40 + "'",
    "s = 'a\"b\\\\c é€𝄞'",
    "f > 5",
    "f IS NULL",
    "s IS NULL OR id = 2",
    "ts = TIMESTAMP '2024-01-01 00:00:00.000999+00:00'",
    "tn = TIMESTAMP '2024-01-01 00:00:00.000999'",
    "ts >= TIMESTAMP '2024-01-01 00:00:00.000500+00:00'",
    "id = 1",
    "id IN (1, 3)",
    "NOT (id <> 1)",
    "id IS NOT NULL AND s IS NOT NULL",
]


def _first_stats(text: str) -> Any:
    return lambda i, raw: text if i == 0 else raw


def _stats(minimum: Row, maximum: Row) -> str:
    return json.dumps(
        {"numRecords": 1, "minValues": minimum, "maxValues": maximum, "nullCount": {}}
    )


_STATS_VARIANTS: dict[str, Any] = {
    "as written": lambda i, raw: raw,
    "numRecords only": lambda i, raw: json.dumps({"numRecords": json.loads(raw)["numRecords"]}),
    "tightBounds false": lambda i, raw: json.dumps({**json.loads(raw), "tightBounds": False}),
    "ascii escapes": lambda i, raw: json.dumps(json.loads(raw), ensure_ascii=True),
    "pretty with CRLF": lambda i, raw: json.dumps(json.loads(raw), indent=2).replace("\n", "\r\n"),
    "min only": lambda i, raw: json.dumps(
        {k: v for k, v in json.loads(raw).items() if k in ("numRecords", "minValues")}
    ),
    "some files without stats": lambda i, raw: raw if i % 2 else None,
    "spark-truncated string max": _first_stats(_stats({"s": "b" * 32}, {"s": "b" * 32 + "\uffff"})),
    "truncated string max": _first_stats(_stats({"s": "b" * 32}, {"s": "b" * 32})),
    "NaN as text": _first_stats(_stats({"f": "NaN"}, {"f": "NaN"})),
    "NaN bare": _first_stats('{"numRecords":1,"minValues":{"f":NaN},"maxValues":{"f":NaN}}'),
    "timestamps cut to ms": _first_stats(
        _stats(
            {"ts": "2024-01-01T00:00:00.000Z", "tn": "2024-01-01T00:00:00.000"},
            {"ts": "2024-01-01T00:00:00.000Z", "tn": "2024-01-01T00:00:00.000"},
        )
    ),
    "timestamp with +01:00": _first_stats(
        _stats(
            {"ts": "2024-01-01T01:00:00.000999+01:00"}, {"ts": "2024-01-01T01:00:00.000999+01:00"}
        )
    ),
    "int stat beyond int64": _first_stats(_stats({"id": 1}, {"id": 9223372036854775808})),
    "int stat as text": _first_stats(_stats({"id": "1"}, {"id": "1"})),
    "unicode escapes": _first_stats(_stats({"s": _LONG}, {"s": _LONG}).replace("b", "\\u0062")),
}


def _delta_table(root: Path, mutate: Any) -> None:
    from deltalake import write_deltalake

    for rows_ in _DELTA_FILES:
        write_deltalake(str(root), pa.Table.from_pylist(rows_, schema=_DELTA_SCHEMA), mode="append")
    index = 0
    for path in sorted((root / "_delta_log").glob("*.json")):
        out = []
        for line in path.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                new = mutate(index, action["add"].get("stats"))
                index += 1
                if new is None:
                    action["add"].pop("stats", None)
                else:
                    action["add"]["stats"] = new
            out.append(json.dumps(action))
        path.write_text("\n".join(out) + "\n")
    assert index == len(_DELTA_FILES)


def _rows(table: pa.Table) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in table.to_pylist())


@pytest.mark.parametrize("variant", sorted(_STATS_VARIANTS))
def test_delta_pruning_never_drops_matching_rows(tmp_path: Path, variant: str) -> None:
    root, plain = tmp_path / "t", tmp_path / "no_stats"
    _delta_table(root, _STATS_VARIANTS[variant])
    shutil.copytree(root, plain)
    _delta_table_strip(plain)
    table, oracle = lakecore.open(str(root)), lakecore.open(str(plain))
    ran = 0
    for where in _WHERES:
        want = oracle.scan(where=where).to_arrow()
        assert _rows(table.scan(where=where).to_arrow()) == _rows(want), where
        assert table.count(where=where) == want.num_rows, where
        files = table.scan(where=where).files()
        assert files.num_rows >= (1 if want.num_rows else 0), where
        ran += 1
    assert ran == len(_WHERES)


def _delta_table_strip(root: Path) -> None:
    for path in sorted((root / "_delta_log").glob("*.json")):
        out = []
        for line in path.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                action["add"].pop("stats", None)
            out.append(json.dumps(action))
        path.write_text("\n".join(out) + "\n")


def test_delta_stats_variant_count() -> None:
    assert len(_STATS_VARIANTS) == 16


def test_delta_commit_pieces_at_every_cut_with_crlf(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CRLF line ends, a leading blank line, no final newline, trailing blank lines: the
    piecewise parse equals the one-piece parse for every piece size up to the whole log."""
    from lakecore_delta.log import commits

    from .delta.builders import DeltaTableBuilder, add, commit_info, field, remove

    builder = DeltaTableBuilder(tmp_path / "t")
    builder.init([field("id", "long")])
    for v in range(1, 4):
        adds = [add(f"v{v}-{i}.parquet", stats={"numRecords": i}) for i in range(6)]
        builder.commit(v, commit_info(), *adds, remove(f"v{v - 1}-0.parquet"))
    whole = lakecore.open(builder.uri).snapshot().files().sort_by("path")
    for v in range(4):
        path = builder.commit_path(v)
        data = path.read_bytes().replace(b"\n", b"\r\n")
        if v == 2:
            data = b"\r\n" + data.rstrip(b"\r\n")
        if v == 3:
            data += b"\r\n\r\n"
        path.write_bytes(data)
    total = sum(len(builder.commit_path(v).read_bytes()) for v in range(4))
    sizes = [*range(1, 60), *range(60, total + 2, 97)]  # every cut early, then sampled
    for size in sizes:
        monkeypatch.setattr(commits, "_BLOCK_SIZE", size)
        got = lakecore.open(builder.uri).snapshot().files().sort_by("path")
        assert got.equals(whole), size
    assert whole.num_rows == 16 and len(sizes) > 90


def _delta_files(root: Path, schema: pa.Schema, files: list[list[Row]], **kwargs: Any) -> None:
    from deltalake import write_deltalake

    for rows_ in files:
        table = pa.Table.from_pylist(rows_, schema=schema)
        write_deltalake(str(root), table, mode="append", **kwargs)


def test_delta_pruning_on_odd_column_names(tmp_path: Path) -> None:
    """Names with '.', '[', non-ASCII, a leading space, upper case (read case-insensitively):
    the partial stats index finds their stats by index, never as a field path."""
    schema = pa.schema(
        [
            ("a.b", pa.int64()),
            ("[x]", pa.int64()),
            ("é", pa.string()),
            (" sp", pa.int64()),
            ("ID", pa.int64()),
        ]
    )
    files = [[{"a.b": i, "[x]": i * 2, "é": f"s{i}", " sp": -i, "ID": i}] for i in range(4)]
    root, plain = tmp_path / "t", tmp_path / "no_stats"
    _delta_files(root, schema, files)
    shutil.copytree(root, plain)
    _delta_table_strip(plain)
    table, oracle = lakecore.open(str(root)), lakecore.open(str(plain))
    wheres = ["`a.b` = 2", "`[x]` = 4", "`é` = 's3'", "` sp` = -1", "`a.b` > 1 AND `[x]` < 6"]
    wheres += ["id = 3", "`ID` IN (1, 2)", "NOT (`a.b` <> 2)"]
    for where in wheres:
        want = oracle.scan(where=where).to_arrow()
        assert want.num_rows >= 1, where
        assert _rows(table.scan(where=where).to_arrow()) == _rows(want), where
        assert table.scan(where=where).files().num_rows == want.num_rows, where  # pruned


_COUNT_VARIANTS: dict[str, Any] = {
    "as written": lambda d: json.dumps(d),
    "no numRecords": lambda d: json.dumps({k: v for k, v in d.items() if k != "numRecords"}),
    "numRecords last": lambda d: f'{{"minValues":{{}},"numRecords":{d["numRecords"]}}}',
    "space after colon": lambda d: f'{{"numRecords": {d["numRecords"]}}}',
    "numRecords as float": lambda d: f'{{"numRecords":{d["numRecords"]}.0}}',
    "numRecords as text": lambda d: f'{{"numRecords":"{d["numRecords"]}"}}',
    "negative numRecords": lambda d: '{"numRecords":-1}',
    "trailing space": lambda d: f'{{"numRecords":{d["numRecords"]}}} ',
}


@pytest.mark.parametrize("variant", sorted(_COUNT_VARIANTS))
def test_delta_counts_and_limits_on_partition_predicates(tmp_path: Path, variant: str) -> None:
    """A predicate on partition columns only parses no stats (record counts by a regex): the
    counts and limits must still be the rows', whatever shape ``numRecords`` takes."""
    schema = pa.schema([("p", pa.string()), ("id", pa.int64())])
    files = [[{"p": "ab"[i % 2], "id": i * 10 + j} for j in range(3 + i)] for i in range(4)]
    _delta_files(tmp_path, schema, files, partition_by=["p"])
    for path in sorted((tmp_path / "_delta_log").glob("*.json")):
        lines = []
        for line in path.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                action["add"]["stats"] = _COUNT_VARIANTS[variant](
                    json.loads(action["add"]["stats"])
                )
            lines.append(json.dumps(action))
        path.write_text("\n".join(lines) + "\n")
    table = lakecore.open(str(tmp_path))
    rows_ = table.to_arrow()
    for where, p in [
        ("p = 'a'", {"a"}),
        ("p = 'b' OR p = 'a'", {"a", "b"}),
        ("NOT (p = 'a')", {"b"}),
    ]:
        want = sum(1 for r in rows_.to_pylist() if r["p"] in p)
        assert table.count(where=where) == want, where
        assert table.scan(where=where, limit=2).to_arrow().num_rows == 2, where
        assert table.scan(where=where).to_arrow().num_rows == want, where
    assert rows_.num_rows == 18
