"""Hudi's change feed with deletes and updates (issue 14): derived from the timeline per
instant, in Delta's ``_change_type`` shape, ``_hoodie_*`` columns only on request.

The central check: the changes of version N+1 replayed over version N's rows give version
N+1's rows exactly, for every consecutive pair of completed writes; the insert + update
counts match hudi-rs's incremental query of the same instant."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lakecore
from lakecore.errors import UnsupportedFeatureError, VersionNotFoundError
from lakecore.table import Table
from tests.corpus import CORPUS
from tests.hudi.write.helpers import SCHEMA, create, hudi_rs, rows, upsert

HUDI = CORPUS / "hudi"
WRITE_ACTIONS = ("commit", "deltacommit", "replacecommit")
CHANGE_COLUMNS = ["_change_type", "_commit_version", "_commit_timestamp"]
Key = tuple[str, str]


def _key(row: dict[str, Any]) -> Key:
    return (row["_hoodie_partition_path"], row["_hoodie_record_key"])


def _data(row: dict[str, Any]) -> str:
    kept = {k: v for k, v in row.items() if not k.startswith("_")}
    return json.dumps(kept, sort_keys=True, default=str)


def _state(table: Table, version: str) -> Counter[tuple[Key, str]]:
    """The rows of ``version`` as a multiset of (key, data): Hudi's ``insert`` operation may
    write a key twice (mor_avro_v9_nonpartitioned_rollback does)."""
    return Counter(
        (_key(r), _data(r)) for r in table.snapshot(version=version).to_arrow().to_pylist()
    )


def _writes(table: Table) -> list[str]:
    """Completed write instants of the active timeline, oldest first."""
    return [
        str(e.version)
        for e in reversed(table.history())
        if e.info["action"] in WRITE_ACTIONS and not e.info.get("archived")
    ]


def _replay(table: Table) -> list[Counter[str]]:
    """Replay every write's changes over the previous version's rows; returns the change
    counts per write. Asserts each replay gives the next version's rows exactly."""
    state: Counter[tuple[Key, str]] = Counter()
    counts = []
    for version in _writes(table):
        changes = table.changes(version, version, include_meta=True)
        assert set(changes.column("_commit_version").to_pylist()) <= {version}
        pre: set[Key] = set()
        post: set[Key] = set()
        for row in changes.to_pylist():
            entry, change = (_key(row), _data(row)), row["_change_type"]
            if change in ("insert", "update_postimage"):
                state[entry] += 1
            else:
                assert change in ("delete", "update_preimage"), change
                assert state[entry] > 0, (version, change, entry)
                state[entry] -= 1
            if change.startswith("update_"):
                (pre if change == "update_preimage" else post).add(entry[0])
        assert pre == post, version  # each update has both images
        state = +state  # drop zero counts
        assert state == _state(table, version), version
        counts.append(Counter(changes.column("_change_type").to_pylist()))
    return counts


def _hudi_rs_incremental(root: Path, start: str | None, end: str) -> int:
    """Rows hudi-rs's incremental query returns for ``(start, end]``."""
    module = hudi_rs()
    table = module.HudiTableBuilder.from_base_uri(str(root)).build()
    options = (
        module.HudiReadOptions()
        .with_query_type(module.HudiQueryType.Incremental)
        .with_start_timestamp(start or "0")
        .with_end_timestamp(end)
    )
    return sum(b.num_rows for b in table.read(options))


def _check_hudi_rs(root: Path, table: Table, counts: list[Counter[str]]) -> int:
    """Inserts + updates of each write == hudi-rs's incremental rows of that write (hudi-rs
    ranges over completion times on tables of version 8 and later, over instants before)."""
    by_completion = int(table.snapshot().features.format_version) >= 8
    ends = [
        str(e.info["completion_time"] if by_completion else e.version)
        for e in reversed(table.history())
        if e.info["action"] in WRITE_ACTIONS and not e.info.get("archived")
    ]
    checked = 0
    for i, end in enumerate(ends):
        ours = counts[i]["insert"] + counts[i]["update_postimage"]
        theirs = _hudi_rs_incremental(root, ends[i - 1] if i else None, end)
        assert ours == theirs, (end, counts[i], theirs)
        checked += 1
    return checked


# ------------------------------------------------------------------------------ corpus

CORPUS_EXPECTED = {
    # name: change counts per completed write, oldest first
    "mor_avro_v8_trips_8i3u1d": [
        {"insert": 8},
        {"update_preimage": 1, "update_postimage": 1},
        {"delete": 1},
        {"update_preimage": 1, "update_postimage": 1},
        {"delete": 1},
        {},  # compaction
        {"update_preimage": 1, "update_postimage": 1},
    ],
}


NOT_REPLAYED = {
    "cow_v6_empty": "no writes",
    "cow_v8_empty": "no writes",
    "cow_v6_simplekeygen_hivestyle_no_metafields": "no meta fields (refused)",
    "cow_v8_simplekeygen_hivestyle_no_metafields": "no meta fields (refused)",
}
CORPUS_TABLES = sorted(
    p.name
    for p in HUDI.iterdir()
    if (p / ".hoodie" / "hoodie.properties").exists() and p.name not in NOT_REPLAYED
)


def test_every_corpus_table_is_replayed_or_excused() -> None:
    assert len(CORPUS_TABLES) == 16
    assert len(CORPUS_TABLES) + len(NOT_REPLAYED) == len(
        [p for p in HUDI.iterdir() if (p / ".hoodie").is_dir()]
    )


@pytest.mark.parametrize("name", CORPUS_TABLES)
def test_corpus_changes_replay_every_version(name: str) -> None:
    table = lakecore.open(str(HUDI / name))
    counts = _replay(table)
    assert len(counts) == len(_writes(table)) >= 2
    if name in CORPUS_EXPECTED:
        assert [dict(c) for c in counts] == CORPUS_EXPECTED[name]
    assert _check_hudi_rs(HUDI / name, table, counts) == len(counts)


def test_corpus_range_is_inclusive_and_the_sum_of_its_instants() -> None:
    table = lakecore.open(str(HUDI / "mor_avro_v8_trips_8i3u1d"))
    versions = _writes(table)
    whole = table.changes(versions[1], versions[4])
    singles = [table.changes(v, v) for v in versions[1:5]]
    assert whole.num_rows == sum(s.num_rows for s in singles) == 6
    assert set(whole.column("_commit_version").to_pylist()) == set(versions[1:5])
    assert table.changes(versions[0]).num_rows == 8 + 2 + 1 + 2 + 1 + 2  # end: the latest


def test_meta_columns_only_on_request() -> None:
    table = lakecore.open(str(HUDI / "mor_avro_v8_trips_8i3u1d"))
    versions = _writes(table)
    data = [n for n in table.schema.names if not n.startswith("_hoodie_")]
    plain = table.changes(versions[2], versions[2])
    assert plain.column_names == [*data, *CHANGE_COLUMNS]
    full = table.changes(versions[2], versions[2], include_meta=True)
    assert full.column_names == [*table.schema.names, *CHANGE_COLUMNS]
    no_meta = full.drop_columns([n for n in full.column_names if n.startswith("_hoodie_")])
    assert no_meta.to_pylist() == plain.to_pylist()
    assert plain.schema.field("_commit_version").type == pa.string()
    assert plain.schema.field("_commit_timestamp").type == pa.timestamp("us", tz="UTC")
    stamp = plain.column("_commit_timestamp")[0].as_py()
    assert int(stamp.timestamp() * 1000) == table.snapshot(version=versions[2]).timestamp


def test_start_after_end_raises() -> None:
    table = lakecore.open(str(HUDI / "mor_avro_v8_trips_8i3u1d"))
    versions = _writes(table)
    with pytest.raises(VersionNotFoundError):
        table.changes(versions[3], versions[1])
    with pytest.raises(VersionNotFoundError):
        table.changes(versions[-1] + "1")  # after the latest instant


# ------------------------------------------------------------------------ lakecore-built


@pytest.mark.parametrize(
    ("table_type", "version"),
    [("COPY_ON_WRITE", "8"), ("MERGE_ON_READ", "8"), ("MERGE_ON_READ", "6")],
)
def test_built_table_changes_replay(tmp_path: Path, table_type: str, version: str) -> None:
    root = tmp_path / "t"
    table = create(root, table_type, version)
    table.append(rows((1, "a", 1, "x"), (2, "b", 1, "x"), (3, "c", 1, "y"), (4, "d", 1, "y")))
    upsert(table, rows((1, "A", 2, "x"), (5, "e", 2, "y")))  # one update, one insert
    table.delete("id = 2")  # MoR: a delete block; CoW: file x rewritten without id 2
    table.delete("city = 'y' and id >= 4")
    upsert(table, rows((3, "C", 3, "y"), (1, "AA", 3, "x")))
    if table_type == "MERGE_ON_READ":
        assert table.compact() is not None
        upsert(table, rows((6, "f", 4, "x")))
    counts = _replay(table)
    expected = [
        {"insert": 4},
        {"insert": 1, "update_preimage": 1, "update_postimage": 1},
        {"delete": 1},
        {"delete": 2},
        {"update_preimage": 2, "update_postimage": 2},
    ]
    if table_type == "MERGE_ON_READ":
        expected += [{}, {"insert": 1}]
    assert [dict(c) for c in counts] == expected
    assert _check_hudi_rs(root, table, counts) == len(expected)
    final = table.to_arrow()
    assert sorted(final.column("id").to_pylist()) == [1, 3] + ([6] if len(expected) > 5 else [])
    everything = table.changes(_writes(table)[0])
    assert everything.num_rows == sum(sum(c.values()) for c in counts)


def test_empty_table_has_no_changes(tmp_path: Path) -> None:
    table = create(tmp_path / "t")
    assert table.changes("", "").num_rows == 0


def test_start_whose_previous_version_is_archived_raises(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = create(root)
    first = table.append(rows((1, "a", 1, "x"), (2, "b", 1, "x"))).version
    second = upsert(table, rows((1, "A", 2, "x")))
    third = upsert(table, rows((2, "B", 3, "x")))
    # Archive the first instant as far as readers can tell: its timeline files leave the
    # active timeline while its base file stays (it counts as committed).
    for path in (root / ".hoodie" / "timeline").iterdir():
        if path.name.startswith(str(first)):
            path.unlink()
    assert sorted(table.to_arrow().column("name").to_pylist()) == ["A", "B"]
    with pytest.raises(VersionNotFoundError, match="archived"):
        table.changes(second)  # its preimage lives in the archived version
    changes = table.changes(third)
    assert changes.column("_change_type").to_pylist() == ["update_preimage", "update_postimage"]
    assert changes.column("name").to_pylist() == ["b", "B"]


@pytest.mark.parametrize("name", sorted(n for n, why in NOT_REPLAYED.items() if "meta" in why))
def test_tables_without_meta_fields_are_refused(name: str) -> None:
    table = lakecore.open(str(HUDI / name))
    with pytest.raises(UnsupportedFeatureError, match="_hoodie_commit_time"):
        table.changes(_writes(table)[0])


# ------------------------------------------------------------------------------- CDC logs

_IMAGE = {
    "type": "record",
    "name": "trips_record",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": ["null", "string"]},
        {"name": "ts", "type": ["null", "long"]},
        {"name": "city", "type": ["null", "string"]},
    ],
}
_NULLABLE_TEXT = ["string", "null"]
CDC_SCHEMAS: dict[str, dict[str, Any]] = {
    # as HoodieCDCUtils.schemaBySupplementalLoggingMode builds them
    "OP_KEY_ONLY": {
        "type": "record",
        "name": "Record",
        "fields": [
            {"name": "op", "type": _NULLABLE_TEXT},
            {"name": "record_key", "type": _NULLABLE_TEXT},
        ],
    },
    "DATA_BEFORE": {
        "type": "record",
        "name": "CDC",
        "fields": [
            {"name": "op", "type": _NULLABLE_TEXT},
            {"name": "record_key", "type": _NULLABLE_TEXT},
            {"name": "before", "type": ["null", _IMAGE]},
        ],
    },
    "DATA_BEFORE_AFTER": {
        "type": "record",
        "name": "CDC",
        "fields": [
            {"name": "op", "type": _NULLABLE_TEXT},
            {"name": "ts_ms", "type": _NULLABLE_TEXT},
            {"name": "before", "type": ["null", _IMAGE]},
            {"name": "after", "type": ["null", {"type": "trips_record"}["type"]]},
        ],
    },
}


def _cdc_records(mode: str, instant: str, changes: list[tuple[str, Any, Any]]) -> pa.Table:
    """CDC records of ``mode`` from (op, before row, after row)."""
    image = pa.struct([pa.field(f.name, f.type) for f in SCHEMA])
    ops = pa.array([c[0] for c in changes], pa.string())
    keys = pa.array([str((c[1] or c[2])["id"]) for c in changes], pa.string())
    befores = pa.array([c[1] for c in changes], image)
    afters = pa.array([c[2] for c in changes], image)
    if mode == "OP_KEY_ONLY":
        return pa.table({"op": ops, "record_key": keys})
    if mode == "DATA_BEFORE":
        return pa.table({"op": ops, "record_key": keys, "before": befores})
    stamps = pa.array([instant] * len(changes), pa.string())
    return pa.table({"op": ops, "ts_ms": stamps, "before": befores, "after": afters})


def _write_cdc_log(root: Path, instant: str, mode: str, records: pa.Table) -> None:
    """Write the instant's CDC log for the file group it rewrote and list it in the write
    stat's ``cdcStats``, as Hudi's CDC-enabled CoW writers do."""
    from dataclasses import replace

    from lakecore_hudi.log.blocks import encode_avro_data_block
    from lakecore_hudi.log.format import BlockType, encode_log_block, read_log_blocks
    from lakecore_hudi.timeline.commit_metadata import encode_commit_metadata, parse_commit_metadata

    schema = json.loads(json.dumps(CDC_SCHEMAS[mode]))
    if mode == "DATA_BEFORE_AFTER":
        schema["fields"][3]["type"] = ["null", "trips_record"]  # the named type, reused
    avro_block = read_log_blocks(encode_avro_data_block(records, schema, instant), "cdc")[0]
    data = encode_log_block(BlockType.CDC, avro_block.header, bytes(avro_block.content))
    [completed] = (root / ".hoodie" / "timeline").glob(f"{instant}_*.commit")
    meta = parse_commit_metadata(completed.read_bytes(), completed.name)
    [(partition, [stat])] = meta.partition_to_write_stats.items()
    cdc_path = f"{partition}/.{stat.file_id}_{instant}.log.1_0-1-1.cdc"
    (root / cdc_path).write_bytes(data)
    stat = replace(stat, cdc_stats={cdc_path: len(data)})
    meta = replace(meta, partition_to_write_stats={partition: [stat]})
    completed.write_bytes(encode_commit_metadata(meta, 8))


def _cdc_table(root: Path, mode: str) -> tuple[Table, list[str]]:
    """A CoW table with CDC on: insert ids 1, 2; update id 1; delete id 2 (one file group)."""
    table = create(root, "COPY_ON_WRITE", "8")
    with (root / ".hoodie" / "hoodie.properties").open("a") as f:
        f.write(
            f"hoodie.table.cdc.enabled=true\nhoodie.table.cdc.supplemental.logging.mode={mode}\n"
        )
    first = str(table.append(rows((1, "a", 1, "x"), (2, "b", 1, "x"))).version)
    second = str(upsert(table, rows((1, "A", 2, "x"))))
    table.delete("id = 2")
    return table, [first, second, str(table.version)]


A1 = {"id": 1, "name": "a", "ts": 1, "city": "x"}
A2 = {"id": 1, "name": "A", "ts": 2, "city": "x"}
B1 = {"id": 2, "name": "b", "ts": 1, "city": "x"}
C2 = {"id": 3, "name": "c", "ts": 2, "city": "x"}


def _feed(table: Table, version: str) -> list[tuple[str, dict[str, Any]]]:
    changes = table.changes(version, version)
    assert changes.column_names == [f.name for f in SCHEMA] + CHANGE_COLUMNS
    assert set(changes.column("_commit_version").to_pylist()) == {version}
    out = [
        (r.pop("_change_type"), {k: v for k, v in r.items() if not k.startswith("_")})
        for r in changes.to_pylist()
    ]
    return sorted(out, key=lambda c: (c[0], c[1]["id"]))


@pytest.mark.parametrize("mode", sorted(CDC_SCHEMAS))
def test_cdc_logs_are_read(tmp_path: Path, mode: str) -> None:
    root = tmp_path / "t"
    table, (first, second, third) = _cdc_table(root, mode)
    _write_cdc_log(root, second, mode, _cdc_records(mode, second, [("u", A1, A2)]))
    _write_cdc_log(root, third, mode, _cdc_records(mode, third, [("d", B1, None)]))
    if mode == "DATA_BEFORE_AFTER":
        # Both images are in the log: the version before ``second`` is not read (its base
        # file is cleaned here, so a derivation from file slices could not run).
        [old] = (root / "city=x").glob(f"*_{first}.parquet")
        old.unlink()
    assert _feed(table, second) == [("update_postimage", A2), ("update_preimage", A1)]
    assert _feed(table, third) == [("delete", B1)]
    assert table.changes(second).num_rows == 3  # the range reads both logs


@pytest.mark.parametrize("mode", sorted(CDC_SCHEMAS))
def test_cdc_log_is_the_instants_changes(tmp_path: Path, mode: str) -> None:
    """The CDC log, not a derivation, says what changed (as Delta's cdc files do): a delete
    the log records comes out although the file slices still hold the row (images the mode
    leaves out are taken from the slices by key)."""
    root = tmp_path / "t"
    table, (_, second, _) = _cdc_table(root, mode)
    derived = [("update_postimage", A2), ("update_preimage", A1)]
    assert _feed(table, second) == derived  # no log yet: derived
    logged = _cdc_records(mode, second, [("u", A1, A2), ("d", B1, None)])
    _write_cdc_log(root, second, mode, logged)
    assert _feed(table, second) == [("delete", B1), *derived]


def test_cdc_mode_of_the_table_properties() -> None:
    from lakecore_hudi.incremental import cdc_mode

    on = "hoodie.table.cdc.enabled"
    key = "hoodie.table.cdc.supplemental.logging.mode"
    assert cdc_mode({}) is None
    assert cdc_mode({on: "false", key: "op_key_only"}) is None
    assert cdc_mode({on: "true"}) == "DATA_BEFORE_AFTER"  # Hudi's default
    assert cdc_mode({on: "TRUE", key: "op_key_only"}) == "OP_KEY_ONLY"  # 0.x spelled it so
    with pytest.raises(UnsupportedFeatureError, match="WITH_EVERYTHING"):
        cdc_mode({on: "true", key: "with_everything"})
