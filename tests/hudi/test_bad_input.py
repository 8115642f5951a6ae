"""Damaged Hudi tables: each raises a typed lakecore error naming the file, and reading never
changes a file. Corpus tables are copied into ``tmp_path`` before they are damaged.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from lakecore_hudi.log.blocks import decode_data_block, encode_avro_data_block
from lakecore_hudi.log.format import BlockType, read_log_blocks
from lakecore_hudi.names import is_log_file

import lakecore
from lakecore.errors import (
    CorruptTableError,
    LakecoreError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from tests.corpus import CORPUS

HUDI = CORPUS / "hudi"
PROPERTIES = ".hoodie/hoodie.properties"

COW_V6 = "cow_v6_nonpartitioned"  # timeline layout 1, two commits of one file group
COW_V9 = "cow_v9_txns_simple_overwrite"  # layout 2, partitioned, insert_overwrite_table
MOR_V6 = "mor_avro_v6_trips_8i1u"  # layout 1, log files named by their base instant
MOR_V8 = "mor_avro_v8_trips_8i3u1d"  # layout 2, compaction, completion-time slicing


def copy_table(tmp_path: Path, name: str) -> Path:
    """A writable copy of corpus table ``name`` (the corpus files are read-only)."""
    source = HUDI / name
    if not source.is_dir():
        pytest.fail(f"corpus table {source} not found; set LAKECORE_CORPUS")
    root = tmp_path / name
    shutil.copytree(source, root)
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return root


def fingerprint(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` (to prove a failed read changed nothing)."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def fails_cleanly(
    root: Path, action: Callable[[], object], error: type[LakecoreError], *names: str
) -> LakecoreError:
    """Run ``action``: it must raise ``error`` naming each of ``names`` and change no file."""
    before = fingerprint(root)
    with pytest.raises(error) as caught:
        action()
    message = str(caught.value)
    for name in names:
        assert name in message, message
    assert fingerprint(root) == before
    return caught.value


def rows(root: Path, **options: str) -> pa.Table:
    return lakecore.open(str(root), options=options or None).to_arrow()


def sorted_rows(table: pa.Table) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in table.to_pylist())


def slice_logs(root: Path) -> list[str]:
    """The log files of the latest snapshot's file slices, in file-index order."""
    index = lakecore.open(str(root)).snapshot().files()
    return [p for files in index.column("data_files").to_pylist() for p in files if is_log_file(p)]


def edit_properties(root: Path, edit: Callable[[list[str]], list[str]]) -> None:
    path = root / PROPERTIES
    lines = path.read_text(encoding="latin-1").splitlines()
    path.write_text("\n".join(edit(lines)) + "\n", encoding="latin-1")


# ------------------------------------------------------------------------- hoodie.properties


@pytest.mark.parametrize(
    "garbage",
    [b"\x00\xff\xfe garbage \x01\x02", b"hoodie.table.name=\\uZZZZ\n"],
    ids=["binary", "bad-escape"],
)
def test_garbage_properties_are_corrupt(tmp_path: Path, garbage: bytes) -> None:
    root = copy_table(tmp_path, COW_V6)
    (root / PROPERTIES).write_bytes(garbage)
    table = lakecore.open(str(root))  # detection only checks the file exists
    fails_cleanly(root, table.snapshot, CorruptTableError, PROPERTIES)
    fails_cleanly(root, lambda: table.version, CorruptTableError, PROPERTIES)


def test_missing_table_type_is_corrupt(tmp_path: Path) -> None:
    root = copy_table(tmp_path, MOR_V8)
    edit_properties(root, lambda lines: [x for x in lines if "hoodie.table.type" not in x])
    table = lakecore.open(str(root))
    fails_cleanly(root, table.snapshot, CorruptTableError, PROPERTIES, "hoodie.table.type")


def test_unsupported_table_version_is_refused_before_reading(tmp_path: Path) -> None:
    root = copy_table(tmp_path, COW_V9)
    edit_properties(
        root,
        lambda lines: [
            "hoodie.table.version=10" if x.startswith("hoodie.table.version=") else x for x in lines
        ],
    )
    table = lakecore.open(str(root))
    error = fails_cleanly(root, table.snapshot, UnsupportedFeatureError, "version 10")
    assert isinstance(error, UnsupportedFeatureError)
    assert error.feature == "hudi-table-version-10"
    fails_cleanly(root, table.history, UnsupportedFeatureError, "version 10")


# ------------------------------------------------------------------------------- log files


@pytest.mark.parametrize("name", [MOR_V6, MOR_V8])
def test_truncated_log_file_is_corrupt(tmp_path: Path, name: str) -> None:
    root = copy_table(tmp_path, name)
    log = slice_logs(root)[-1]
    data = (root / log).read_bytes()
    (root / log).write_bytes(data[: len(data) // 2])
    snapshot = lakecore.open(str(root)).snapshot()  # the view does not open log files
    fails_cleanly(root, snapshot.to_arrow, CorruptTableError, log)


@pytest.mark.parametrize("name", [MOR_V6, MOR_V8])
@pytest.mark.parametrize("where", ["magic", "trailing-length"])
def test_bit_flipped_log_file_is_corrupt(tmp_path: Path, name: str, where: str) -> None:
    """Hudi log blocks carry no checksum: a flip inside record bytes can decode to other
    values. Flips in the framing (the ``#HUDI#`` magic, the trailing block length that
    repeats the leading one) are detected."""
    root = copy_table(tmp_path, name)
    log = slice_logs(root)[0]
    data = bytearray((root / log).read_bytes())
    data[2 if where == "magic" else len(data) - 1] ^= 0x5A
    (root / log).write_bytes(bytes(data))
    fails_cleanly(root, lambda: rows(root), CorruptTableError, log)


# -------------------------------------------------------------------------- commit metadata


@pytest.mark.parametrize(
    ("name", "instant_file"),
    [
        (MOR_V6, ".hoodie/20250331030645735.deltacommit"),  # the latest write
        (MOR_V6, ".hoodie/20250331030642808.deltacommit"),  # an earlier one
        (COW_V9, ".hoodie/timeline/20260403183959838_20260403184000568.commit"),
        (COW_V9, ".hoodie/timeline/20260403184001282_20260403184002260.replacecommit"),
    ],
)
def test_garbage_completed_commit_file_is_corrupt(
    tmp_path: Path, name: str, instant_file: str
) -> None:
    """Every visible write's metadata is read (schema, replaced file groups, the files the
    write made), so damage anywhere on the active timeline is reported."""
    root = copy_table(tmp_path, name)
    path = root / instant_file
    assert path.is_file(), sorted(p.name for p in path.parent.iterdir())
    path.write_bytes(b"\x00garbage, neither JSON nor Avro\xff")
    table = lakecore.open(str(root))
    fails_cleanly(root, table.snapshot, CorruptTableError, instant_file)


# ----------------------------------------------------------------------- missing data files


@pytest.mark.parametrize("name", [COW_V6, MOR_V8])
def test_missing_base_file_is_corrupt(tmp_path: Path, name: str) -> None:
    """Decision: ``CorruptTableError``. The timeline says the file was written by a completed
    instant and no later write superseded it, so the table itself is damaged; reading on
    would silently fall back to an older version of the file group (stale rows) or drop it.
    ``FileNotFoundError`` is kept for a file that vanishes between planning and reading
    (next test): that is a race with a writer (e.g. a clean), not a damaged table."""
    root = copy_table(tmp_path, name)
    base = lakecore.open(str(root)).snapshot().files().column("path")[-1].as_py()
    assert base.endswith(".parquet")
    (root / base).unlink()
    # Storage listing: a table listed by its metadata table fails at read (test_mdt_listing).
    table = lakecore.open(str(root), options={"hoodie.metadata.enable": "false"})
    fails_cleanly(root, table.snapshot, CorruptTableError, base)


@pytest.mark.parametrize("name", [MOR_V6, MOR_V8])
def test_missing_log_file_is_corrupt(tmp_path: Path, name: str) -> None:
    root = copy_table(tmp_path, name)
    log = slice_logs(root)[0]
    (root / log).unlink()
    table = lakecore.open(str(root), options={"hoodie.metadata.enable": "false"})
    fails_cleanly(root, table.snapshot, CorruptTableError, log)


@pytest.mark.parametrize("kind", ["base", "log"])
def test_file_deleted_after_planning_is_corrupt_table(tmp_path: Path, kind: str) -> None:
    root = copy_table(tmp_path, MOR_V8)
    snapshot = lakecore.open(str(root)).snapshot()
    index = snapshot.files()
    logs = [p for files in index.column("data_files").to_pylist() for p in files if is_log_file(p)]
    path = logs[0] if kind == "log" else index.column("path")[0].as_py()
    (root / path).unlink()
    before = fingerprint(root)
    with pytest.raises(CorruptTableError) as caught:
        snapshot.to_arrow()
    assert path.rsplit("/", 1)[-1] in str(caught.value)
    assert isinstance(caught.value.__cause__, FileNotFoundError)
    assert fingerprint(root) == before


def test_time_travel_to_cleaned_files_is_version_not_found(tmp_path: Path) -> None:
    """A clean removes file versions that a later write superseded: the latest snapshot still
    reads, the older instant can no longer be reconstructed."""
    root = copy_table(tmp_path, COW_V6)
    old = "20240418173550988"
    [cleaned] = [p for p in root.glob("*.parquet") if p.name.endswith(f"_{old}.parquet")]
    latest_rows = rows(root)
    cleaned.unlink()
    table = lakecore.open(str(root))
    assert sorted_rows(table.to_arrow()) == sorted_rows(latest_rows)
    fails_cleanly(root, lambda: table.snapshot(version=old), VersionNotFoundError, cleaned.name)


# ------------------------------------------------------------------------------ killed writer


def _copy_with_instant(path: Path, old: str, new: str, file_id: str | None = None) -> Path:
    """Copy data file ``path`` under the name a write at instant ``new`` would give it."""
    name = path.name.replace(old, new)
    if file_id is not None:
        name = name.replace(name.lstrip(".").split("_", 1)[0], file_id, 1)
    target = path.with_name(name)
    shutil.copyfile(path, target)
    return target


def _pending_instant(root: Path, layout: int, ts: str, action: str) -> None:
    """The requested and inflight files a writer leaves when it dies before completing."""
    timeline = root / ".hoodie" / ("timeline" if layout == 2 else "")
    (timeline / f"{ts}.{action}.requested").write_bytes(b"")
    inflight = f"{ts}.inflight" if action == "commit" else f"{ts}.{action}.inflight"
    (timeline / inflight).write_bytes(b"")


def _log_written_by(log: Path, inflight: str, target: Path) -> None:
    """Write log file ``target``: ``log``'s first data block as ``inflight`` would have
    written it, with every ``fare`` changed (so reading it would change the rows)."""
    data = log.read_bytes()
    block = next(b for b in read_log_blocks(data, log.name) if b.block_type == BlockType.AVRO_DATA)
    assert block.schema is not None
    changed = decode_data_block(block)
    changed = changed.set_column(
        changed.schema.get_field_index("fare"), "fare", pa.array([999.0] * changed.num_rows)
    )
    target.write_bytes(encode_avro_data_block(changed, json.loads(block.schema), inflight))


@pytest.mark.parametrize(
    ("name", "layout", "action"),
    [(COW_V6, 1, "commit"), (MOR_V6, 1, "deltacommit"), (MOR_V8, 2, "deltacommit")],
)
def test_inflight_write_with_data_files_is_ignored(
    tmp_path: Path, name: str, layout: int, action: str
) -> None:
    root = copy_table(tmp_path, name)
    table = lakecore.open(str(root))
    latest = str(table.version)
    expected = sorted_rows(table.to_arrow())
    history = [(e.version, e.operation) for e in table.history()]
    inflight = str(int(latest) + 1000)
    index = table.snapshot().files()
    base = root / index.column("path")[0].as_py()
    assert base.suffix == ".parquet"
    old = base.name.rsplit("_", 1)[1].removesuffix(".parquet")
    _copy_with_instant(base, old, inflight)  # a newer version of the file group
    _copy_with_instant(base, old, inflight, file_id="0badc0de-0000-0000-0000-000000000000-0")
    if action == "deltacommit":
        data_files = index.column("data_files").to_pylist()
        log = root / next(p for files in data_files for p in files if is_log_file(p))
        if layout == 1:  # version 6: logs are named by the slice's base instant
            target = log.with_name(log.name.replace(".log.1_", ".log.2_"))
        else:  # version 8+: a delta commit writes log files named by its own instant
            target = log.with_name(log.name.replace(log.name.split("_")[1].split(".")[0], inflight))
        _log_written_by(log, inflight, target)
    _pending_instant(root, layout, inflight, action)

    assert str(table.version) == latest
    assert sorted_rows(table.to_arrow()) == expected
    assert [(e.version, e.operation) for e in table.history()] == history
    with pytest.raises(VersionNotFoundError):
        table.snapshot(version=inflight)
