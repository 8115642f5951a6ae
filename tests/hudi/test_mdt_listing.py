"""Listing a Hudi table's files through its metadata table's ``files`` partition.

A table declaring the ``files`` partition is listed from the metadata table (no partition
directory listed); the file slices must be exactly the ones the storage listing gives
(``hoodie.metadata.enable=false``) at every instant of every corpus table with a metadata
table. A declared but unreadable metadata table is ``CorruptTableError`` unless the reader
turned it off; external (``_hudiext``) entries become base files.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lakecore_hudi.listing import list_data_files, parse_external_name, uses_metadata_table
from lakecore_hudi.mdt import maintain
from lakecore_hudi.mdt.files_records import FileListing, external_file_name
from lakecore_hudi.options import ReadOptions
from lakecore_hudi.state import HudiState, load_state
from lakecore_hudi.table_config import read_table_config
from lakecore_hudi.timeline.active import load_timeline

import lakecore
from lakecore.errors import CorruptTableError, LakecoreError
from lakecore.storage import open_storage
from lakecore.testing.faults import CountingStorage
from tests.corpus import CORPUS
from tests.hudi.test_column_stats import MDT_TABLES
from tests.hudi.write.helpers import create

HUDI = CORPUS / "hudi"
MDT_ON = ReadOptions()
MDT_OFF = ReadOptions.parse({"hoodie.metadata.enable": "false"})


def _slices(state: HudiState) -> list[tuple[Any, ...]]:
    return [
        (
            s.partition_path,
            s.file_id,
            s.base_instant,
            None if s.base_file is None else (s.base_file.path, s.base_file.size),
            tuple((f.path, f.size) for f in s.log_files),
        )
        for s in state.slices
    ]


def _outcome(storage: Any, version: str, options: ReadOptions) -> Any:
    try:
        return _slices(load_state(storage, version, None, options))
    except LakecoreError as e:  # time travel to cleaned files: both listings must refuse
        return type(e).__name__


def test_options_parse_hudi_spelling() -> None:
    assert MDT_ON.metadata_enable and not MDT_OFF.metadata_enable
    assert not ReadOptions.parse({"metadata_enable": "no"}).metadata_enable
    assert MDT_OFF.as_dict()["metadata_enable"] == "false"
    with pytest.raises(ValueError, match="true or false"):
        ReadOptions.parse({"hoodie.metadata.enable": "maybe"})


def test_corpus_metadata_listing_equals_storage_listing_at_every_instant() -> None:
    declared = []
    for table in sorted(HUDI.iterdir()):
        config = read_table_config(open_storage(str(table)))
        if uses_metadata_table(config, MDT_ON):
            declared.append(table.name)
    assert tuple(declared) == MDT_TABLES
    instants = slices = refused = later = 0
    for name in MDT_TABLES:
        storage = open_storage(str(HUDI / name))
        timeline = load_timeline(storage, read_table_config(storage))
        versions = [i.timestamp for i in timeline.completed_write_instants()]
        assert versions, name
        config = read_table_config(storage)
        listed_by_mdt = list_data_files(storage, config, timeline, MDT_ON)
        for version in versions:
            on, off = _outcome(storage, version, MDT_ON), _outcome(storage, version, MDT_OFF)
            # Time travel: the metadata table lists files of later instants, left out here.
            later += any(f.name.instant > version for f in listed_by_mdt)
            assert on == off, (name, version)
            instants += 1
            if isinstance(on, list):
                slices += len(on)
            else:
                assert on == "VersionNotFoundError", (name, version, on)
                refused += 1
        # The metadata listing holds exactly the data files storage holds (no file of a
        # failed write in either of these tables).
        mdt = {f.info.path: f.info.size for f in listed_by_mdt}
        listed = list_data_files(storage, config, timeline, MDT_OFF)
        assert mdt == {f.info.path: f.info.size for f in listed}, name
    assert (len(MDT_TABLES), instants, refused) == (6, 34, 0)
    assert slices == 89
    assert later == 28  # all but the latest instant of each table


def test_corpus_rows_identical_with_and_without_metadata_listing() -> None:
    for name in MDT_TABLES:
        uri = str(HUDI / name)
        on = lakecore.open(uri).to_arrow()
        off = lakecore.open(uri, options={"hoodie.metadata.enable": "false"}).to_arrow()
        assert on.num_rows > 0, name
        assert on.sort_by("_hoodie_record_key").equals(off.sort_by("_hoodie_record_key")), name


def _copy(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copytree(HUDI / name, target, copy_function=shutil.copyfile)
    return target


def test_missing_metadata_table_is_corrupt_unless_disabled(tmp_path: Path) -> None:
    root = _copy("mor_avro_v8_trips_8i3u1d", tmp_path)
    shutil.rmtree(root / ".hoodie" / "metadata")
    with pytest.raises(CorruptTableError, match=r"\.hoodie/metadata/\.hoodie/hoodie\.properties"):
        lakecore.open(str(root)).to_arrow()
    off = lakecore.open(str(root), options={"hoodie.metadata.enable": "false"})
    assert off.to_arrow().num_rows > 0


def test_files_partition_without_slice_is_corrupt(tmp_path: Path) -> None:
    root = _copy("mor_avro_v9_txns_nonpart_meta", tmp_path)
    for f in (root / ".hoodie" / "metadata" / "files").iterdir():
        if not f.name.startswith(".hoodie_partition_metadata"):
            f.unlink()
    with pytest.raises(
        CorruptTableError, match=r"\.hoodie/metadata/files.*no completed file slice"
    ):
        lakecore.open(str(root)).snapshot()
    assert lakecore.open(str(root), options={"hoodie.metadata.enable": "false"}).snapshot()


def test_corrupt_metadata_base_file_is_named(tmp_path: Path) -> None:
    root = _copy("mor_avro_v8_trips_8i3u1d", tmp_path)
    hfiles = sorted((root / ".hoodie" / "metadata" / "files").glob("*.hfile"))
    assert hfiles
    for f in hfiles:
        f.write_bytes(b"not an hfile" * 10)
    with pytest.raises(CorruptTableError, match=r"\.hoodie/metadata/files/.*\.hfile"):
        lakecore.open(str(root)).snapshot()
    off = lakecore.open(str(root), options={"hoodie.metadata.enable": "false"}).to_arrow()
    assert off.num_rows > 0


def test_metadata_listing_ignores_files_it_does_not_list(tmp_path: Path) -> None:
    """A data file the metadata table does not list stays invisible, as to Hudi's readers;
    with the metadata table off the storage listing sees it."""
    root = _copy("cow_v9_txns_simple_overwrite", tmp_path)
    storage = open_storage(str(root))
    state = load_state(storage, None, None, MDT_ON)
    base = next(s.base_file for s in state.slices if s.base_file is not None)
    partition, _, name = base.path.rpartition("/")
    _, token, rest = name.split("_", 2)
    decoy = f"{partition}/00000000-0000-0000-0000-000000000000-0_{token}_{rest}".lstrip("/")
    (root / decoy).write_bytes((root / base.path).read_bytes())
    on = [s.path for s in load_state(storage, None, None, MDT_ON).slices]
    off = [s.path for s in load_state(storage, None, None, MDT_OFF).slices]
    assert decoy not in on and base.path in on
    assert decoy in off


def test_parse_external_names() -> None:
    plain = parse_external_name("city=a", external_file_name("part-0.parquet", "20240101000000"), 7)
    assert plain is not None
    assert (plain.info.path, plain.info.size, plain.partition_path) == (
        "city=a/part-0.parquet",
        7,
        "city=a",
    )
    assert (plain.name.file_id, plain.name.instant) == ("part-0.parquet", "20240101000000")
    sub = parse_external_name("", external_file_name("f.parquet", "1", "bucket 0/x"), 3)
    assert sub is not None
    assert (sub.info.path, sub.partition_path, sub.name.file_id) == (
        "bucket 0/x/f.parquet",
        "",
        "bucket 0/x/f.parquet",
    )
    assert parse_external_name("", "a_b_1-2-3_20240101000000000.parquet", 1) is None


EXTERNAL_INSTANT = "00000000000000100"  # older than the data timeline: counts as archived


def test_external_files_are_base_files(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = create(root, "COPY_ON_WRITE", "8", metadata_enable="true")
    rows = pa.table(
        {
            "id": pa.array([1, 2], pa.int64()),
            "name": ["a", "b"],
            "ts": pa.array([1, 1], pa.int64()),
            "city": ["x", "y"],
        }
    )
    table.append(rows)
    written = pq.read_table(next((root / "city=x").glob("*.parquet")))
    storage = open_storage(str(root))
    config = read_table_config(storage)
    (root / "city=x" / "sub").mkdir()
    added: dict[str, int] = {}
    for key, (path, prefix) in {
        10: ("ext-0.parquet", None),
        11: ("sub/ext-1.parquet", "sub"),
    }.items():
        row = written.to_pylist()[0] | {"id": key, "_hoodie_record_key": str(key)}
        pq.write_table(pa.Table.from_pylist([row], written.schema), root / "city=x" / path)
        name = external_file_name(path.rpartition("/")[2], EXTERNAL_INSTANT, prefix)
        added[name] = (root / "city=x" / path).stat().st_size
    maintain.record_listing(storage, config, EXTERNAL_INSTANT, FileListing({"city=x": added}))
    state = load_state(storage, None, None, MDT_ON)
    external = {s.file_id: s for s in state.slices if "ext-" in s.file_id}
    assert sorted(external) == ["ext-0.parquet", "sub/ext-1.parquet"]
    assert {s.partition_path for s in external.values()} == {"city=x"}
    assert {s.base_instant for s in external.values()} == {EXTERNAL_INSTANT}
    assert external["sub/ext-1.parquet"].path == "city=x/sub/ext-1.parquet"
    got = lakecore.open(str(root)).to_arrow()
    assert sorted(got.column("id").to_pylist()) == [1, 2, 10, 11]
    assert {r["id"]: r["city"] for r in got.select(["id", "city"]).to_pylist()}[11] == "x"
    # Storage listing does not know Hudi's external names: those files are not part of it.
    off = lakecore.open(str(root), options={"hoodie.metadata.enable": "false"}).to_arrow()
    assert sorted(off.column("id").to_pylist()) == [1, 2]


def test_metadata_listing_lists_no_partition(tmp_path: Path) -> None:
    root = tmp_path / "wide"
    table = create(root, "COPY_ON_WRITE", "8", metadata_enable="true")
    cities = [f"c{i:02d}" for i in range(30)]
    table.append(
        pa.table(
            {
                "id": pa.array(range(30), pa.int64()),
                "name": cities,
                "ts": pa.array([1] * 30, pa.int64()),
                "city": cities,
            }
        )
    )
    counts = {}
    for label, options in (("mdt", MDT_ON), ("storage", MDT_OFF)):
        storage = CountingStorage(open_storage(str(root)))
        state = load_state(storage, None, None, options)
        assert len(state.slices) == 30
        listed = [c for c in storage.calls if c.method in ("list_dir", "list_all")]
        counts[label] = listed
    data_lists = [c for c in counts["mdt"] if not c.path.startswith(".hoodie")]
    assert data_lists == [], data_lists
    assert any(c.method == "list_all" and c.path == "" for c in counts["storage"])


def test_missing_file_listed_by_metadata_table_fails_at_read(tmp_path: Path) -> None:
    """The metadata table still lists a base file deleted by hand: the snapshot trusts it (as
    Hudi's readers do, no storage listing) and reading it is ``CorruptTableError`` naming it."""
    root = _copy("mor_avro_v8_trips_8i3u1d", tmp_path)
    snapshot = lakecore.open(str(root)).snapshot()
    base = next(p for p in snapshot.files().column("path").to_pylist() if p.endswith(".parquet"))
    (root / base).unlink()
    with pytest.raises(CorruptTableError, match=base.rsplit("/", 1)[-1]):
        lakecore.open(str(root)).to_arrow()
