"""Shared helpers of the archiving tests: tables with small archiving bounds, a run of commits
remembering what readers saw before archiving, and independent decoders of both archives
(written from the format descriptions, not with lakecore's readers)."""

from __future__ import annotations

import io
import json
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
from lakecore_hudi.java_properties import parse_properties
from lakecore_hudi.table_config import PROPERTIES_PATH, read_table_config
from lakecore_hudi.table_config_out import render_table_config
from lakecore_hudi.timeline.active import load_timeline

import lakecore
from lakecore.model.history import HistoryEntry
from lakecore.storage import open_storage
from tests.hudi.write.helpers import create, hudi_rs, lakecore_rows, rows

Row = dict[str, Any]
SMALL = {
    "hoodie.keep.min.commits": "2",
    "hoodie.keep.max.commits": "3",
    "hoodie.cleaner.commits.retained": "1",
    "hoodie.timeline.compaction.batch.size": "2",
    "hoodie.commits.archival.batch": "2",
    "hoodie.compact.inline.max.delta.commits": "1",
}
"""Archive when a 4th commit lands, down to 2; compact every 2 LSM files; 2 records a block."""


def set_properties(root: Path, props: dict[str, str]) -> None:
    """Add ``props`` to the table's ``hoodie.properties`` (where lakecore reads Hudi's write
    configs)."""
    path = root / PROPERTIES_PATH
    current = parse_properties(path.read_text(encoding="utf-8"))
    path.write_bytes(render_table_config({**current, **props}))


def archiving_table(
    root: Path, version: str, table_type: str = "COPY_ON_WRITE", **props: str
) -> lakecore.Table:
    """A new table keyed on ``id`` with the ``SMALL`` archiving bounds (and ``props``)."""
    create(root, table_type, version=version)
    set_properties(root, {**SMALL, **props})
    return lakecore.open(str(root))


@dataclass
class Run:
    """Commits made on a table and what readers saw right after each (before archiving)."""

    root: Path
    versions: list[str] = field(default_factory=list)
    rows_at: dict[str, list[Row]] = field(default_factory=dict)
    entry_at: dict[str, HistoryEntry] = field(default_factory=dict)
    max_active: int = 0


def commit_many(root: Path, n: int, compact_every: int = 0, keys: int = 7) -> Run:
    """``n`` upserts (keys cycle through 0..keys-1, so rows are updated), with a MoR compaction
    after every ``compact_every``-th; records the rows and history entry of each commit."""
    run = Run(root)
    for i in range(n):
        table = lakecore.open(str(root))
        table.upsert(rows((i % keys, f"n{i}", i, "x" if i % 2 else "y")))
        if compact_every and i % compact_every == compact_every - 1:
            table.compact()
        for entry in lakecore.open(str(root)).history(limit=2):
            if entry.info.get("action") in ("commit", "deltacommit"):
                run.entry_at.setdefault(str(entry.version), entry)
        version = str(lakecore.open(str(root)).version)
        run.versions.append(version)
        run.rows_at[version] = lakecore_rows(root)
        run.max_active = max(run.max_active, len(active_commits(root)))
    return run


def active_commits(root: Path) -> list[str]:
    """Completed write instants on the active timeline."""
    storage = open_storage(str(root))
    timeline = load_timeline(storage, read_table_config(storage))
    return [i.timestamp for i in timeline.completed_write_instants()]


def active_files(root: Path) -> list[str]:
    """Every instant file of the active timeline."""
    storage = open_storage(str(root))
    return [i.file_name for i in load_timeline(storage, read_table_config(storage)).instants]


def hudi_rs_rows_as_of(root: Path, instant: str) -> list[Row]:
    """The rows hudi-rs reads at ``instant`` (its time travel), meta columns dropped, sorted."""
    h = hudi_rs()
    table = h.HudiTableBuilder.from_base_uri(str(root)).build()
    batches = table.read(h.HudiReadOptions().with_as_of_timestamp(instant))
    data = pa.Table.from_batches(batches) if batches else pa.table({})
    data = data.drop_columns([c for c in data.column_names if c.startswith("_hoodie_")])
    return sorted(data.to_pylist(), key=lambda r: json.dumps(r, sort_keys=True, default=str))


# ------------------------------------------------------------------ independent decoders


def decode_lsm(root: Path) -> list[dict[str, Any]]:
    """The rows of the LSM timeline's current snapshot, read with pyarrow and json only:
    ``_version_`` names ``manifest_<N>``, whose ``files`` are the Parquet files to read."""
    history = root / ".hoodie/timeline/history"
    version = int((history / "_version_").read_text().strip())
    manifest = json.loads((history / f"manifest_{version}").read_text())
    out: list[dict[str, Any]] = []
    for entry in manifest["files"]:
        path = history / entry["fileName"]
        assert path.stat().st_size == entry["fileLen"], entry
        table = pq.read_table(path)
        assert table.schema.names == [
            "instantTime",
            "completionTime",
            "action",
            "metadata",
            "plan",
            "version",
        ]
        avro = json.loads(pq.read_metadata(path).metadata[b"parquet.avro.schema"])
        assert avro["name"] == "HoodieLSMTimelineInstant"
        out += table.to_pylist()
    return out


_I32, _I64 = struct.Struct(">i"), struct.Struct(">q")


def decode_v1_archive(path: Path) -> list[dict[str, Any]]:
    """The ``HoodieArchivedMetaEntry`` records of a Hudi log file, decoded with struct and
    fastavro from the log format: per block ``#HUDI#``, int64 length, int32 format version,
    int32 type, header map, int64 content length, content, footer map, int64 trailer; an Avro
    data block (type 3) holds int32 version, int32 count, then (int32 size, record)*."""
    data = path.read_bytes()
    out: list[dict[str, Any]] = []
    pos = 0
    while pos < len(data):
        assert data[pos : pos + 6] == b"#HUDI#", pos
        (length,) = _I64.unpack_from(data, pos + 6)
        end = pos + 14 + length
        cur = pos + 14
        (_version,) = _I32.unpack_from(data, cur)
        (kind,) = _I32.unpack_from(data, cur + 4)
        cur += 8
        header, cur = _read_map(data, cur)
        (size,) = _I64.unpack_from(data, cur)
        content = data[cur + 8 : cur + 8 + size]
        (trailer,) = _I64.unpack_from(data, end - 8)
        assert trailer == length + 6
        if kind == 3:
            schema = fastavro.parse_schema(json.loads(header[2]))
            _, count = struct.unpack_from(">ii", content)
            offset = 8
            for _ in range(count):
                (n,) = _I32.unpack_from(content, offset)
                out.append(
                    fastavro.schemaless_reader(
                        io.BytesIO(content[offset + 4 : offset + 4 + n]), schema, None
                    )
                )
                offset += 4 + n
        pos = end
    return out


def _read_map(data: bytes, cur: int) -> tuple[dict[int, str], int]:
    (count,) = _I32.unpack_from(data, cur)
    cur += 4
    out = {}
    for _ in range(count):
        key, n = struct.unpack_from(">ii", data, cur)
        out[key] = data[cur + 8 : cur + 8 + n].decode()
        cur += 8 + n
    return out, cur


def archived_commit_times(root: Path, version: str) -> list[str]:
    """Completed commit / deltacommit instants the archive holds (independent decoders)."""
    if version != "6":  # 8 and 9: the LSM timeline
        found = [
            r["instantTime"] for r in decode_lsm(root) if r["action"] in ("commit", "deltacommit")
        ]
    else:
        found = [
            r["commitTime"]
            for p in sorted((root / ".hoodie/archived").glob(".commits_.archive.*"))
            for r in decode_v1_archive(p)
            if r["actionState"] == "COMPLETED" and r["actionType"] in ("commit", "deltacommit")
        ]
    return sorted(found)
