"""Writing the classic archived timeline (table versions <= 7), as Hudi's
``HoodieTimelineArchiveLog`` / ``TimelineArchiverV1`` does.

The archive is a Hudi log file, ``.hoodie/archived/.commits_.archive.<N>_<token>`` (a new table
gets ``.commits_.archive.1_1-0-1``), holding Avro data blocks (header: the writer SCHEMA only)
of ``HoodieArchivedMetaEntry`` records: one record per archived instant *file* (requested,
inflight and completed states), with ``commitTime``, ``actionType``, ``actionState`` and the
state's details in the field of its action (``hoodieCommitMetadata``, ``hoodieCleanMetadata``,
``hoodieCleanerPlan``, ...). Records go ``hoodie.commits.archival.batch`` to a block.

Appending: the Storage has no append (object stores have none), so each archiving rolls over
to a new log file, ``.commits_.archive.<N+1>_1-0-1`` after the latest ``N``, as Hudi's log
writer rolls over where the file system cannot append: what an archiving writes and reads
grows with the instants it archives, never with the archive. The new file is written whole
with ``put_if_absent`` (a crash leaves it or nothing, never a torn file; an archiver whose lock
was broken cannot replace another's file). Records the latest file already holds (an earlier
archiving died before deleting the instants from the active timeline: the next one picks
the same oldest instants) are not written again. Readers take every
``.commits_.archive.*`` file, as Hudi's and lakecore's archived timelines do.

The record schema written holds the ``HoodieArchivedMetaEntry`` fields lakecore fills; the
others (``hoodieCompactionMetadata``, ``hoodieSavePointMetadata``,
``hoodieIndexCommitMetadata``: lakecore never archives those actions) are left out. Readers
resolve the block's writer schema against their own, where every field defaults to null.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import io
import json
import re
import struct
from collections.abc import Mapping, Sequence
from typing import Any

import fastavro

from lakecore.errors import CommitConflictError, CorruptTableError
from lakecore.storage import Storage
from lakecore_hudi.log.format import BlockType, HeaderKey, encode_log_block, read_log_blocks
from lakecore_hudi.timeline import avro_schemas
from lakecore_hudi.timeline.commit_metadata import parse_commit_metadata
from lakecore_hudi.timeline.payload import decode_payload

ARCHIVE_FILE = ".commits_.archive.1_1-0-1"
_WRITE_TOKEN = "1-0-1"
_ARCHIVE = re.compile(r"^\.commits_\.archive\.(\d+)(_.*)?$")
_NS = "org.apache.hudi.avro.model"
_BLOCK_VERSION = 3
_I32 = struct.Struct(">i")


def _opt(schema: Any, name: str) -> dict[str, Any]:
    return {"name": name, "type": ["null", schema], "default": None}


def _entry_schema() -> dict[str, Any]:
    from lakecore_hudi.write.compaction import COMPACTION_PLAN

    fields = [
        _opt(avro_schemas.COMMIT_METADATA, "hoodieCommitMetadata"),
        _opt(avro_schemas.CLEAN_METADATA, "hoodieCleanMetadata"),
        _opt(avro_schemas.ROLLBACK_METADATA, "hoodieRollbackMetadata"),
        _opt("string", "commitTime"),
        _opt("string", "actionType"),
        {"name": "version", "type": ["int", "null"], "default": 1},
        _opt(COMPACTION_PLAN, "hoodieCompactionPlan"),
        _opt(avro_schemas.CLEANER_PLAN, "hoodieCleanerPlan"),
        _opt("string", "actionState"),
        _opt(avro_schemas.REPLACE_COMMIT_METADATA, "hoodieReplaceCommitMetadata"),
        _opt(avro_schemas.REQUESTED_REPLACE_METADATA, "hoodieRequestedReplaceMetadata"),
        _opt(f"{_NS}.HoodieCommitMetadata", "HoodieInflightReplaceMetadata"),
        _opt("string", "stateTransitionTime"),
    ]
    schema: dict[str, Any] = {
        "type": "record",
        "name": "HoodieArchivedMetaEntry",
        "namespace": _NS,
        "fields": fields,
    }
    defined: dict[str, Any] = _define_once(copy.deepcopy(schema), _NS, set())
    return defined


def _define_once(node: Any, namespace: str, seen: set[str]) -> Any:
    """``node`` with every named type defined once (later definitions become references)."""
    if isinstance(node, list):
        return [_define_once(n, namespace, seen) for n in node]
    if not isinstance(node, dict):
        return node
    kind = node.get("type")
    if kind in ("record", "enum", "fixed") and isinstance(node.get("name"), str):
        name = node["name"]
        space = node.get("namespace", namespace) if "." not in name else name.rsplit(".", 1)[0]
        full = name if "." in name else f"{space}.{name}"
        if full in seen:
            return full
        seen.add(full)
        if kind == "record":
            for f in node["fields"]:
                f["type"] = _define_once(f["type"], space, seen)
        return node
    if kind == "array":
        node["items"] = _define_once(node["items"], namespace, seen)
    elif kind == "map":
        node["values"] = _define_once(node["values"], namespace, seen)
    elif isinstance(kind, (dict, list)):
        node["type"] = _define_once(kind, namespace, seen)
    return node


@functools.cache
def _schema() -> tuple[Any, str]:
    """The parsed ``HoodieArchivedMetaEntry`` writer schema and its JSON (built on first use:
    it takes the compaction plan's schema from the writer's compaction module)."""
    schema = _entry_schema()
    return fastavro.parse_schema(copy.deepcopy(schema)), json.dumps(schema, separators=(",", ":"))


def entry_record(
    timestamp: str,
    action: str,
    state: str,
    completion_time: str | None,
    content: bytes,
    path: str,
) -> dict[str, Any]:
    """The ``HoodieArchivedMetaEntry`` of one instant file (``action`` as its name says).

    Raises:
        CorruptTableError: the details cannot be decoded (names ``path``).
    """
    record: dict[str, Any] = {
        "commitTime": timestamp,
        "actionType": action,
        "actionState": state,
        "stateTransitionTime": completion_time,
        "version": 1,
    }
    completed = state == "COMPLETED"
    if completed and not content.strip():
        return record  # an empty completed file (a crash): the entry without details
    if action in ("commit", "deltacommit"):
        record["hoodieCommitMetadata"] = parse_commit_metadata(content, path).to_dict()
    elif action in ("replacecommit", "clustering"):
        if completed:
            meta = parse_commit_metadata(content, path, replace=True)
            record["hoodieReplaceCommitMetadata"] = meta.to_dict()
        elif state == "INFLIGHT" and content.strip():
            record["HoodieInflightReplaceMetadata"] = parse_commit_metadata(content, path).to_dict()
        elif content.strip():
            record["hoodieRequestedReplaceMetadata"] = decode_payload(content, path)
    elif action == "clean":
        key = "hoodieCleanMetadata" if completed else "hoodieCleanerPlan"
        record[key] = decode_payload(content, path)
    elif action == "rollback" and completed:
        record["hoodieRollbackMetadata"] = decode_payload(content, path)
    elif action in ("compaction", "logcompaction") and state == "REQUESTED":
        record["hoodieCompactionPlan"] = decode_payload(content, path)
    return record


def _key(record: Mapping[str, Any]) -> tuple[str, str, str]:
    return (
        str(record.get("commitTime")),
        str(record.get("actionType")),
        str(record.get("actionState")),
    )


def latest_archive(storage: Storage, archive_dir: str) -> tuple[int, str] | None:
    """The latest archive log there is, ``(N, path)`` of the greatest
    ``.commits_.archive.N_*``; None for no archive yet."""
    found = [
        (int(m.group(1)), name)
        for info in storage.list_dir(archive_dir)
        if (m := _ARCHIVE.match(name := info.path.rsplit("/", 1)[-1]))
    ]
    if not found:
        return None
    number, name = max(found)
    return number, f"{archive_dir}/{name}"


def append_entries(
    storage: Storage, archive_dir: str, records: Sequence[Mapping[str, Any]], batch: int
) -> int:
    """Write ``records`` the latest archive log does not hold to a new archive log
    (``.commits_.archive.1_1-0-1``, else the next number after the latest), ``batch`` per
    block; returns how many were written.

    Raises:
        CorruptTableError: a record does not fit the schema, or the latest archive log is
            undecodable.
        CommitConflictError: the new log's name was taken meanwhile (another archiver).
        OSError: the storage failed (the new log is then absent or whole).
    """
    latest = latest_archive(storage, archive_dir)
    present: set[tuple[str, str, str]] = set()
    if latest is not None:
        with contextlib.suppress(FileNotFoundError):  # gone since listed: nothing to skip
            present = {_key(r) for r in existing_records(storage.read(latest[1]), latest[1])}
    new = [r for r in records if _key(r) not in present]
    if not new:
        return 0
    name = ARCHIVE_FILE if latest is None else f".commits_.archive.{latest[0] + 1}_{_WRITE_TOKEN}"
    path = f"{archive_dir}/{name}"
    blocks = [_block(new[i : i + batch], path) for i in range(0, len(new), batch)]
    try:
        storage.put_if_absent(path, b"".join(blocks))
    except FileExistsError:
        raise CommitConflictError(
            f"{path} appeared while archiving: another archiver is writing the archive"
        ) from None
    return len(new)


def _block(records: Sequence[Mapping[str, Any]], path: str) -> bytes:
    parsed, schema_json = _schema()
    parts = [_I32.pack(_BLOCK_VERSION), _I32.pack(len(records))]
    for record in records:
        out = io.BytesIO()
        try:
            fastavro.schemaless_writer(out, parsed, dict(record))
        except (ValueError, TypeError, AttributeError, KeyError) as exc:
            raise CorruptTableError(
                f"{path}: instant {record.get('commitTime')} ({record.get('actionType')}) does "
                f"not fit HoodieArchivedMetaEntry: {exc}"
            ) from None
        parts += [_I32.pack(out.tell()), out.getvalue()]
    return encode_log_block(BlockType.AVRO_DATA, {HeaderKey.SCHEMA: schema_json}, b"".join(parts))


def existing_records(data: bytes, path: str) -> list[dict[str, Any]]:
    """The records of an archive log's Avro data blocks (torn regions skipped).

    Raises:
        CorruptTableError: a block does not decode.
    """
    out: list[dict[str, Any]] = []
    for block in read_log_blocks(data, path, skip_corrupt=True):
        if block.block_type != BlockType.AVRO_DATA or block.schema is None:
            continue
        content = bytes(block.content)
        try:
            schema = fastavro.parse_schema(json.loads(block.schema))
            _, count = struct.unpack_from(">ii", content)
            offset = 8
            for _ in range(count):
                (size,) = _I32.unpack_from(content, offset)
                raw = io.BytesIO(content[offset + 4 : offset + 4 + size])
                record = fastavro.schemaless_reader(raw, schema, None)
                if isinstance(record, dict):
                    out.append(record)
                offset += 4 + size
        except (ValueError, struct.error, EOFError, IndexError, KeyError, TypeError) as exc:
            raise CorruptTableError(f"{path}: undecodable archived instant block: {exc}") from None
    return out
