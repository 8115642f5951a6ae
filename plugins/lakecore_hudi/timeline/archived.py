"""The archived timeline: completed instants Hudi moved out of the active timeline.

Table version 8+ (LSM timeline, ``.hoodie/timeline/history/``): ``_version_`` holds the latest
snapshot number N (when it is missing or unreadable, the greatest ``manifest_N`` is used);
``manifest_N`` is JSON ``{"files": [{"fileName": ..., "fileLen": ...}]}`` naming the valid
Parquet files ``<min ts>_<max ts>_<layer>.parquet``, whose rows are ``HoodieLSMTimelineInstant``
(instantTime, completionTime, action, metadata, plan, version). Files not in the manifest
(being compacted or cleaned) are ignored.

Table version <= 7 (``.hoodie/archived/.commits_.archive.N_<token>``): Hudi log files whose
Avro data blocks hold ``HoodieArchivedMetaEntry`` records; an instant's details are the
sub-record for its action, handed out as JSON so the ``metadata`` decoders read them.
"""

from __future__ import annotations

import io
import json
import re
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import fastavro
import pyarrow.parquet as pq

from lakecore.errors import CorruptTableError
from lakecore.storage import Storage
from lakecore_hudi.table_config import TableConfig

_LSM_FILE = re.compile(r"^(\d+)_(\d+)_(\d+)\.parquet$")
_MANIFEST = re.compile(r"^manifest_(\d+)$")
_V1_ARCHIVE = re.compile(r"^\.commits_\.archive\.\d+(_.*)?$")

# HoodieArchivedMetaEntry field holding the details of each action.
_V1_DETAIL_FIELDS = {
    "commit": "hoodieCommitMetadata",
    "deltacommit": "hoodieCommitMetadata",
    "replacecommit": "hoodieReplaceCommitMetadata",
    "clean": "hoodieCleanMetadata",
    "rollback": "hoodieRollbackMetadata",
    "savepoint": "hoodieSavePointMetadata",
    "compaction": "hoodieCompactionPlan",
    "restore": "hoodieRestoreMetadata",
}


@dataclass(frozen=True, slots=True)
class ArchivedInstant:
    """One completed instant of the archived timeline.

    ``metadata`` is the instant's completed details in a form the ``timeline.payload``
    decoders accept (Avro container or JSON), or None when not loaded / not recorded.
    ``completion_time`` is only recorded by the LSM timeline.
    """

    timestamp: str
    action: str
    completion_time: str | None
    metadata: bytes | None
    source_file: str


def load_archived_timeline(
    storage: Storage,
    config: TableConfig,
    *,
    with_details: bool = False,
    start: str | None = None,
    end: str | None = None,
) -> tuple[ArchivedInstant, ...]:
    """Archived completed instants with ``start <= timestamp <= end``, sorted by timestamp.

    ``with_details`` also loads each instant's metadata. A table without an archive gives ().

    Raises:
        CorruptTableError: a manifest, Parquet file or archive log is unreadable; names it.
    """
    if config.table_version >= 8:
        found = _load_lsm(storage, config.archive_dir, with_details, start, end)
    else:
        found = _load_v1(storage, config.archive_dir, with_details)
    selected = [
        a
        for a in found
        if (start is None or a.timestamp >= start) and (end is None or a.timestamp <= end)
    ]
    return tuple(sorted(selected, key=lambda a: (a.timestamp, a.action)))


# ---------------------------------------------------------------- LSM timeline (v8+)


def _latest_manifest(storage: Storage, archive_dir: str) -> str | None:
    try:
        return f"{archive_dir}/manifest_{int(storage.read(f'{archive_dir}/_version_').strip())}"
    except (FileNotFoundError, ValueError):
        pass  # as Hudi: fall back to the greatest manifest listed
    versions = [
        int(m.group(1))
        for info in storage.list_dir(archive_dir)
        if (m := _MANIFEST.match(info.path.rsplit("/", 1)[-1]))
    ]
    return f"{archive_dir}/manifest_{max(versions)}" if versions else None


def _manifest_files(storage: Storage, manifest: str) -> list[str]:
    try:
        entries = json.loads(storage.read(manifest))["files"]
        return [str(e["fileName"]) for e in entries]
    except FileNotFoundError:
        raise CorruptTableError(f"{manifest}: named by _version_ but missing") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptTableError(f"{manifest}: malformed LSM timeline manifest: {exc}") from None


def _load_lsm(
    storage: Storage, archive_dir: str, details: bool, start: str | None, end: str | None
) -> list[ArchivedInstant]:
    manifest = _latest_manifest(storage, archive_dir)
    if manifest is None:
        return []
    columns = ["instantTime", "completionTime", "action"] + (["metadata"] if details else [])
    found: list[ArchivedInstant] = []
    for name in _manifest_files(storage, manifest):
        match = _LSM_FILE.match(name)
        if match is None:
            raise CorruptTableError(f"{manifest}: unexpected LSM timeline file name {name!r}")
        if (start is not None and match.group(2) < start) or (
            end is not None and match.group(1) > end
        ):
            continue  # the file's [min, max] instant range misses the window
        found += _read_lsm_file(storage, f"{archive_dir}/{name}", columns)
    return found


def _read_lsm_file(storage: Storage, path: str, columns: list[str]) -> list[ArchivedInstant]:
    try:
        table = pq.read_table(io.BytesIO(storage.read(path)), columns=columns)
    except FileNotFoundError:
        raise CorruptTableError(
            f"{path}: listed in the LSM timeline manifest but missing"
        ) from None
    except Exception as exc:  # pyarrow raises several types on damaged or foreign files
        raise CorruptTableError(f"{path}: unreadable LSM timeline file: {exc}") from None
    rows = table.to_pylist()
    return [
        ArchivedInstant(
            str(row["instantTime"]),
            str(row["action"]),
            row["completionTime"],
            row.get("metadata"),
            path,
        )
        for row in rows
        if row["instantTime"] and row["action"]
    ]


# ---------------------------------------------------------------- archive logs (v <= 7)


def _load_v1(storage: Storage, archive_dir: str, details: bool) -> list[ArchivedInstant]:
    # Imported here: only tables with a version 1 archive need the log reader.
    from lakecore_hudi.log.format import BlockType, read_log_blocks

    found: list[ArchivedInstant] = []
    for info in storage.list_dir(archive_dir):
        if not _V1_ARCHIVE.match(info.path.rsplit("/", 1)[-1]):
            continue
        # Archive logs may end in a torn append; Hudi skips such regions too.
        for block in read_log_blocks(storage.read(info.path), info.path, skip_corrupt=True):
            if block.block_type != BlockType.AVRO_DATA or block.schema is None:
                continue
            records = _avro_block_records(bytes(block.content), block.schema, info.path)
            found += _entries(records, details, info.path)
    return found


def _avro_block_records(content: bytes, schema_json: str, path: str) -> list[dict[str, Any]]:
    """Records of an Avro data block: int version, int count, then (int size, record)*."""
    try:
        schema = fastavro.parse_schema(json.loads(schema_json))
        _, count = struct.unpack_from(">ii", content)
        records, offset = [], 8
        for _ in range(count):
            (size,) = struct.unpack_from(">i", content, offset)
            raw = io.BytesIO(content[offset + 4 : offset + 4 + size])
            records.append(fastavro.schemaless_reader(raw, schema, None))
            offset += 4 + size
    except (ValueError, struct.error, EOFError, IndexError, KeyError, TypeError) as exc:
        raise CorruptTableError(f"{path}: undecodable archived instant block: {exc}") from None
    return [r for r in records if isinstance(r, dict)]


def _entries(
    records: Iterable[Mapping[str, Any]], details: bool, path: str
) -> list[ArchivedInstant]:
    found = []
    for record in records:
        timestamp, action = record.get("commitTime"), record.get("actionType")
        if not timestamp or not action or record.get("actionState") not in (None, "COMPLETED"):
            continue
        metadata = None
        if details and (sub := record.get(_V1_DETAIL_FIELDS.get(str(action), ""))) is not None:
            metadata = json.dumps(sub, default=str).encode("utf-8")
        found.append(ArchivedInstant(str(timestamp), str(action), None, metadata, path))
    return found
