"""Lance base files lakecore writes into Hudi 1.1 tables (``base.file.format=LANCE``).

The corpus table ``mor_avro_v9_lance_nonhivestyle`` (Hudi 1.1, merge-on-read, Lance 2.0 base
files, a full metadata table), copied, takes a lakecore insert, upsert, delete, compaction and
clean. After each operation:

- lakecore and hudi-rs (which reads Lance base files and lists through the metadata table)
  read the rows of a model computed from the operations alone, starting from the corpus's
  expected answer;
- every base file lakecore wrote is a Lance 2.0 file pylance reads, in the file schema, with
  the meta fields filled as Hudi's Lance writer fills them and the bloom filter / key range
  in the schema metadata (as in the corpus's Spark-written files);
- before the clean, hudi-rs reads lakecore's rows at every write instant too;
- the metadata table holds: ``files`` lists exactly the data files, ``column_stats`` has no
  record for any Lance base file (Hudi 1.1 writes none) and equals the stats of the others
  (log files), ``partition_stats`` equals the ranges of each partition's live files, and the
  record index holds exactly the live records.

A copy-on-write table (created by lakecore, then switched to Lance before any file is
written: no corpus table has one) covers CoW rewrites the same way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from lakecore_hudi.bloom import MAX_KEY, MIN_KEY, TYPE_CODE_KEY, filter_from_footer
from lakecore_hudi.keys import META_FIELDS
from lakecore_hudi.mdt import column_stats_records as csr
from lakecore_hudi.names import parse_base_file_name
from lakecore_hudi.table_config import read_table_config
from lakecore_hudi.table_config_out import render_table_config
from lakecore_hudi.timeline.active import load_timeline
from lakecore_hudi.write.layout import ensure_writable

import lakecore
from lakecore.errors import UnsupportedFeatureError
from lakecore.storage import open_storage
from tests.corpus import CORPUS
from tests.hudi.write.helpers import (
    SCHEMA,
    copy_corpus_table,
    create,
    files_on_disk,
    hudi_rs_table,
)
from tests.hudi.write.mdt_index_checks import assert_record_index_matches_table
from tests.hudi.write.mdt_stats_checks import (
    PAYLOAD,
    assert_column_stats_match_files,
    assert_partition_stats_match_files,
    live_records,
)
from tests.hudi.write.test_mdt_all_partitions import _time_travel_agrees
from tests.hudi.write.test_mdt_maintain import mdt_listing

NAME = "mor_avro_v9_lance_nonhivestyle"
KEY = "event_id"
Row = dict[str, Any]


def _rows(table: pa.Table) -> list[Row]:
    data = table.drop_columns([c for c in table.column_names if c.startswith("_hoodie_")])
    return sorted(data.to_pylist(), key=lambda r: json.dumps(r, sort_keys=True, default=str))


def _want(model: dict[Any, Row]) -> list[Row]:
    return sorted(model.values(), key=lambda r: json.dumps(r, sort_keys=True, default=str))


def _corpus_model() -> dict[Any, Row]:
    """The corpus table's rows at its last instant, from the reference readers' answer."""
    expected = CORPUS / "expected" / "hudi" / f"{NAME}.v20260503194349244.parquet"
    table = pq.read_table(expected)
    return {r[KEY]: r for r in _rows(table)}


def _assert_reads(root: Path, model: dict[Any, Row]) -> None:
    want = _want(model)
    assert _rows(lakecore.open(str(root)).to_arrow()) == want
    assert _rows(hudi_rs_table(root)) == want


def _written_lance_files(root: Path, original: set[str]) -> list[Path]:
    return sorted(p for p in root.rglob("*.lance") if p.name not in original)


def _assert_lance_file(root: Path, path: Path, key: str, completed: set[str]) -> int:
    """``path`` is a Lance 2.0 base file as Hudi 1.1 writes it; returns its row count."""
    from lance.file import LanceFileReader

    reader = LanceFileReader(str(path))
    meta = reader.metadata()
    assert (meta.major_version, meta.minor_version) == (0, 3), path  # Lance file format 2.0
    schema = meta.schema
    assert schema.names[:5] == list(META_FIELDS), path
    assert all(
        schema.field(n).type == pa.string() and schema.field(n).nullable for n in META_FIELDS
    )
    table = reader.read_all().to_table()
    n = table.num_rows  # 0: a CoW delete of a file group's last rows (as Hudi writes it)
    parsed = parse_base_file_name(path.name)
    assert parsed is not None and parsed.extension == "lance", path
    partition = str(path.parent.relative_to(root))
    assert table.column("_hoodie_file_name").to_pylist() == [path.name] * n
    assert table.column("_hoodie_partition_path").to_pylist() == [partition] * n
    keys = table.column("_hoodie_record_key")
    assert keys.to_pylist() == table.column(key).cast(pa.string()).to_pylist()
    commits = table.column("_hoodie_commit_time").to_pylist()
    seqnos = table.column("_hoodie_commit_seqno").to_pylist()
    assert all(c in completed and c <= parsed.instant for c in commits), path
    assert all(s.startswith(f"{c}_") for c, s in zip(commits, seqnos, strict=True)), path
    assert len(set(seqnos)) == n, path
    # The bloom index entries, where Hudi's Lance writer puts them: the schema metadata.
    md = schema.metadata
    bounds = {MIN_KEY.encode(), MAX_KEY.encode()} if n else set()
    assert set(md) == {b"org.apache.hudi.bloomfilter", TYPE_CODE_KEY.encode(), *bounds}, path
    assert md[TYPE_CODE_KEY.encode()] == b"DYNAMIC_V0"
    if n:
        assert md[MIN_KEY.encode()].decode() == pc.min(keys).as_py()
        assert md[MAX_KEY.encode()].decode() == pc.max(keys).as_py()
    bloom = filter_from_footer(md, str(path))
    assert bloom is not None and bool(bloom.might_contain(keys).all()), path
    return n


def _check(root: Path, model: dict[Any, Row], original: set[str], key: str) -> dict[str, int]:
    """Every check of the module docstring; returns what each checked."""
    _assert_reads(root, model)
    assert mdt_listing(root) == files_on_disk(root)
    storage = open_storage(str(root))
    config = read_table_config(storage)
    completed = {i.timestamp for i in load_timeline(storage, config).completed()}
    lance = _written_lance_files(root, original)
    done = {"lance_files": len(lance), "lance_rows": 0}
    for path in lance:
        done["lance_rows"] += _assert_lance_file(root, path, key, completed)
    partitions = config.metadata_partitions
    if "column_stats" in partitions:
        named = {
            r[PAYLOAD]["fileName"] for r in live_records(root, csr.PARTITION, csr.merge).values()
        }
        assert not [n for n in named if n.endswith(".lance")], named
        done["column_stats"] = assert_column_stats_match_files(root)
    if "partition_stats" in partitions:
        done["partition_stats"] = assert_partition_stats_match_files(root)
    if "record_index" in partitions:
        done["record_index"] = assert_record_index_matches_table(root)
    return done


def _changed(rows: list[Row], **values: Any) -> pa.Table:
    return pa.Table.from_pylist([{**r, **values} for r in rows])


def test_rewriting_spark_lance_files_gives_hudis_bytes(tmp_path: Path) -> None:
    """Each of the corpus's four Spark-written Lance files, its records written again by
    ``write_base_file`` (bloom entries computed by lakecore), gives a file of the same size,
    the same data pages byte for byte, the same column metadata and the same schema with the
    same metadata; only the order of the schema metadata map may differ (Hudi's own files
    list it in different orders)."""
    from lakecore_hudi.write.files_out import write_base_file
    from lance.file import LanceFileReader

    storage = open_storage(str(tmp_path))
    files = sorted((CORPUS / "hudi" / NAME).glob("*/*.lance"))
    assert len(files) == 4
    for path in files:
        reader = LanceFileReader(str(path))
        theirs = reader.metadata()
        size = write_base_file(storage, path.name, reader.read_all().to_table())
        ours = LanceFileReader(str(tmp_path / path.name)).metadata()
        assert size == path.stat().st_size, path.name
        assert (ours.major_version, ours.minor_version) == (
            theirs.major_version,
            theirs.minor_version,
        )
        assert ours.schema.equals(theirs.schema, check_metadata=True), path.name
        assert ours.num_data_bytes == theirs.num_data_bytes, path.name
        assert ours.num_column_metadata_bytes == theirs.num_column_metadata_bytes, path.name
        data = theirs.num_data_bytes
        assert (tmp_path / path.name).read_bytes()[:data] == path.read_bytes()[:data], path.name


def test_the_corpus_lance_table_takes_every_operation(tmp_path: Path) -> None:
    root = copy_corpus_table(NAME, tmp_path)
    original = {p.name for p in root.rglob("*.lance")}
    assert len(original) == 4
    model = _corpus_model()
    assert len(model) == 14
    table = lakecore.open(str(root))
    schema = table.to_arrow().drop_columns(list(META_FIELDS)).schema
    _assert_reads(root, model)
    counts = []

    # insert: one row into a partition with a log file, one into a new partition
    fresh = [
        {**model["evt-001"], KEY: "evt-101", "payload": "new", "event_ts": 1},
        {**model["evt-001"], KEY: "evt-102", "event_date": "2023-11-20", "event_ts": 2},
    ]
    table.append(pa.Table.from_pylist(fresh, schema=schema))
    model.update({r[KEY]: r for r in fresh})
    counts.append(_check(root, model, original, KEY))
    assert counts[-1]["lance_files"] == 2 and counts[-1]["lance_rows"] == 2

    # upsert: a Spark-written row, a row of a file without logs, a lakecore-written row
    updates = [
        {**model[k], "payload": f"upd-{k}", "event_ts": model[k]["event_ts"] + 1000}
        for k in ("evt-002", "evt-009", "evt-101")
    ]
    merge = table.merge(pa.Table.from_pylist(updates, schema=schema), on=[KEY])
    merge.when_matched_update_all().execute()
    model.update({r[KEY]: r for r in updates})
    counts.append(_check(root, model, original, KEY))

    table.delete(f"{KEY} = 'evt-005'")
    del model["evt-005"]
    counts.append(_check(root, model, original, KEY))

    assert table.compact() is not None
    counts.append(_check(root, model, original, KEY))
    # Every file group with a log got a new Lance base file: four (evt-001..004, evt-101,
    # evt-006..008, evt-009..012), besides the two the insert wrote (evt-101, evt-102).
    assert counts[-1]["lance_files"] == 2 + 4
    assert counts[-1]["lance_rows"] == 2 + 4 + 1 + 3 + 4

    # Before the clean deletes older files: hudi-rs agrees at every write instant, Spark's
    # six delta commits and lakecore's four instants.
    assert _time_travel_agrees(root) == 10
    table.clean(retain_commits=1)
    counts.append(_check(root, model, original, KEY))
    # The clean removed the replaced slices: logs, the corpus's compacted base files and the
    # insert's evt-101 file; lakecore's five files and the corpus's untouched one stay.
    left = [p for p in root.rglob("*") if p.is_file() and ".hoodie" not in p.parts]
    data = sorted(p.name for p in left if not p.name.startswith(".hoodie_partition"))
    assert len(data) == 6 and all(n.endswith(".lance") for n in data), data
    assert set(data) & original == {n for n in original if n.startswith("1a31d725")}
    assert counts[-1]["lance_files"] == 5 and counts[-1]["lance_rows"] == len(model) - 2
    assert [c["record_index"] for c in counts] == [16, 16, 15, 15, 15]
    assert sum(c["column_stats"] for c in counts) > 0  # the log files' records were checked


def _lance_table(root: Path, table_type: str) -> lakecore.Table:
    """A new empty version 9 table (files partition on), switched to Lance base files."""
    create(root, table_type, version="9", metadata_enable="true")
    storage = open_storage(str(root))
    props = dict(read_table_config(storage).raw)
    props["hoodie.table.base.file.format"] = "LANCE"
    (root / ".hoodie" / "hoodie.properties").write_bytes(render_table_config(props))
    return lakecore.open(str(root))


def test_a_copy_on_write_lance_table_rewrites_lance_files(tmp_path: Path) -> None:
    root = tmp_path / "cow_lance"
    table = _lance_table(root, "COPY_ON_WRITE")
    schema = SCHEMA
    data = [
        {"id": i, "name": f"n{i}", "ts": i, "city": c} for i, c in [(1, "a"), (2, "a"), (3, "b")]
    ]
    table.append(pa.Table.from_pylist(data, schema=schema))
    model = {r["id"]: r for r in data}
    checks = [_check(root, model, set(), "id")]
    assert checks[-1]["lance_files"] == 2

    update = {"id": 2, "name": "changed", "ts": 10, "city": "a"}
    table.merge(
        pa.Table.from_pylist([update], schema=schema), on=["id"]
    ).when_matched_update_all().execute()
    model[2] = update
    checks.append(_check(root, model, set(), "id"))
    assert checks[-1]["lance_files"] == 3  # the rewrite of partition a's file group

    table.delete("id = 3")
    del model[3]
    checks.append(_check(root, model, set(), "id"))

    table.clean(retain_commits=1)
    checks.append(_check(root, model, set(), "id"))
    # a's rewritten file and b's empty one (the delete's); the clean removed the older ones.
    assert [(c["lance_files"], c["lance_rows"]) for c in checks] == [(2, 3), (3, 5), (4, 5), (2, 2)]
    assert read_table_config(open_storage(str(root))).metadata_partitions == ("files",)
    assert all(not p.name.endswith(".parquet") for p in root.rglob("*") if ".hoodie" not in p.parts)


def test_distributed_file_writers_write_lance_files(tmp_path: Path) -> None:
    root = tmp_path / "mor_lance"
    table = _lance_table(root, "MERGE_ON_READ")
    data = [{"id": i, "name": f"n{i}", "ts": i, "city": c} for i, c in [(1, "x"), (2, "y")]]
    with table.transaction() as tx:  # as lakecore.spark.write: two tasks, one instant
        writer = table._format_writer(tx.snapshot)
        file_writer = writer.file_writer("append", None)
        parts = [
            file_writer.write(pa.Table.from_pylist(data[:1], schema=SCHEMA), 0),
            file_writer.write(pa.Table.from_pylist(data[1:], schema=SCHEMA), 1),
        ]
        assert all(p.endswith(".lance") for t in parts for p in t.column("path").to_pylist())
        tx.stage(*writer.add_files(file_writer, pa.concat_tables(parts), "append", None))
    done = _check(root, {r["id"]: r for r in data}, set(), "id")
    assert (done["lance_files"], done["lance_rows"]) == (2, 2)


def test_the_key_lookup_reads_lance_bloom_filters(tmp_path: Path) -> None:
    """lakecore's upsert lookup rules Lance slices out by the key range and bloom filter in
    their schema metadata (Spark's files and lakecore's alike); a slice with a log is kept."""
    from lakecore_hudi.bloom_index import slices_holding
    from lakecore_hudi.options import ReadOptions
    from lakecore_hudi.state import load_state

    root = copy_corpus_table(NAME, tmp_path)
    table = lakecore.open(str(root))
    row = {**_corpus_model()["evt-001"], KEY: "evt-101", "event_date": "2023-11-20"}
    table.append(pa.Table.from_pylist([row], schema=table.schema))
    storage = open_storage(str(root))
    slices = load_state(storage, None, None, ReadOptions(metadata_enable=False)).slices
    by_file = {s.file_id[:8]: i for i, s in enumerate(slices)}
    assert len(by_file) == 5
    new = next(k for k in by_file if k not in ("875d6ca6", "060e8715", "414e5bcd", "1a31d725"))

    def holding(*keys: str) -> set[str]:
        found = slices_holding(storage, slices, range(len(slices)), pa.array(keys))
        return {slices[i].file_id[:8] for i in found}

    assert holding("evt-006", "evt-101") == {"875d6ca6", "060e8715", new}
    # Inside 060e8715's key range (evt-005..evt-008) but not in it: the filter rules it out.
    assert holding("evt-0065") == {"875d6ca6"}
    assert holding("zzz") == {"875d6ca6"}


@pytest.mark.parametrize("version", ["6", "8"])
def test_lance_base_files_before_table_version_9_are_refused(version: str) -> None:
    from lakecore_hudi.table_config import TableConfig

    config = TableConfig.from_properties(
        {
            "hoodie.table.name": "t",
            "hoodie.table.type": "MERGE_ON_READ",
            "hoodie.table.version": version,
            "hoodie.table.base.file.format": "LANCE",
            "hoodie.table.recordkey.fields": "id",
        }
    )
    with pytest.raises(UnsupportedFeatureError) as caught:
        ensure_writable(config)
    assert caught.value.feature == "hudi-base-file-format-lance"
