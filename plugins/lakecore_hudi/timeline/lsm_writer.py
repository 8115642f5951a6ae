"""Writing the LSM timeline (table version 8+, ``.hoodie/timeline/history/``), as Hudi's
``LSMTimelineWriter`` lays it out.

* Each archiving writes one layer-0 Parquet file ``<first instant>_<last instant>_0.parquet``
  whose rows are ``HoodieLSMTimelineInstant`` records (instantTime, completionTime, action,
  metadata, plan, version), oldest first.
* A file becomes part of the archive only when a new manifest names it: ``manifest_<N+1>``
  (JSON ``{"files": [{"fileName", "fileLen"}]}``, the previous manifest's files plus the new
  one) is written, then ``_version_`` is set to ``N+1``. A crash before that leaves a file no
  manifest names, which readers ignore and the next write replaces; a crash between the
  manifest and ``_version_`` leaves a manifest readers find by listing (Hudi's fallback) and
  that the next write replaces.
* Instants already in the archive (an earlier archiving that died before deleting them from
  the active timeline) are not written again, so no instant is archived twice.
* Compaction: once a layer holds ``batch`` files, its oldest ``batch`` files (at most 1 GB
  together) are merged into one file of the next layer, ``<min>_<max>_<layer+1>.parquet``, and
  a manifest replaces them by it; then the next layer is looked at. Cleaning keeps the files of
  the newest ``3 + compactions`` manifests and deletes older manifests, then files no kept
  manifest names (Hudi 1.0's retention).
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from lakecore.errors import CorruptTableError
from lakecore.storage import Storage

LSM_INSTANT_AVRO = {
    "type": "record",
    "name": "HoodieLSMTimelineInstant",
    "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {"name": "instantTime", "type": ["null", "string"], "default": None},
        {"name": "completionTime", "type": ["null", "string"], "default": None},
        {"name": "action", "type": ["null", "string"], "default": None},
        {"name": "metadata", "type": ["null", "bytes"], "default": None},
        {"name": "plan", "type": ["null", "bytes"], "default": None},
        {"name": "version", "type": "int", "default": 1},
    ],
}
_METADATA = {
    b"parquet.avro.schema": json.dumps(LSM_INSTANT_AVRO, separators=(",", ":")).encode(),
    b"writer.model.name": b"avro",
}
LSM_SCHEMA = pa.schema(
    [
        pa.field("instantTime", pa.string()),
        pa.field("completionTime", pa.string()),
        pa.field("action", pa.string()),
        pa.field("metadata", pa.binary()),
        pa.field("plan", pa.binary()),
        pa.field("version", pa.int32(), nullable=False),
    ],
    metadata=_METADATA,
)
VERSION_FILE = "_version_"
MAX_COMPACTED_BYTES = 1 << 30
RETAINED_MANIFESTS = 3
_FILE = re.compile(r"^(\d+)_(\d+)_(\d+)\.parquet$")
_MANIFEST = re.compile(r"^manifest_(\d+)$")


@dataclass(frozen=True, slots=True)
class LsmEntry:
    """One ``HoodieLSMTimelineInstant`` row."""

    instant_time: str
    completion_time: str | None
    action: str
    metadata: bytes | None
    plan: bytes | None


@dataclass(frozen=True, slots=True)
class Manifest:
    """A snapshot of the LSM timeline: its version (0: none yet) and files (name, length)."""

    version: int
    files: tuple[tuple[str, int], ...]

    @property
    def names(self) -> tuple[str, ...]:
        """The file names the manifest lists."""
        return tuple(name for name, _ in self.files)


def latest_manifest(storage: Storage, archive_dir: str) -> Manifest:
    """The latest snapshot: ``_version_``'s, else the greatest ``manifest_N`` listed.

    Raises:
        CorruptTableError: the manifest is missing or malformed (names it).
        OSError: the storage failed.
    """
    version = 0
    try:
        version = int(storage.read(f"{archive_dir}/{VERSION_FILE}").strip())
    except FileNotFoundError:
        pass
    except ValueError:
        version = 0  # as Hudi: an unreadable version file falls back to listing
    if version <= 0:
        listed = _manifest_versions(storage, archive_dir)
        version = max(listed) if listed else 0
    if version == 0:
        return Manifest(0, ())
    return manifest_at(storage, archive_dir, version)


def _manifest_versions(storage: Storage, archive_dir: str) -> list[int]:
    return [
        int(m.group(1))
        for info in storage.list_dir(archive_dir)
        if (m := _MANIFEST.match(info.path.rsplit("/", 1)[-1]))
    ]


def archived_keys(
    storage: Storage, archive_dir: str, manifest: Manifest, first: str, last: str
) -> set[tuple[str, str]]:
    """(instantTime, action) of archived rows in files whose range overlaps [first, last]."""
    found: set[tuple[str, str]] = set()
    for name in manifest.names:
        match = _FILE.match(name)
        if match is None or match.group(2) < first or match.group(1) > last:
            continue
        table = _read(storage, f"{archive_dir}/{name}", ["instantTime", "action"])
        found.update(zip(table.column(0).to_pylist(), table.column(1).to_pylist(), strict=True))
    return found


def write_entries(storage: Storage, archive_dir: str, entries: Sequence[LsmEntry]) -> str | None:
    """Add ``entries`` (sorted by instant time) to the LSM timeline as a layer-0 file; returns
    its name, or None when every entry was archived already.

    Raises:
        CorruptTableError: the existing archive is unreadable.
        OSError: the storage failed (the archive is then as before, or holds the new file
            under a manifest: never a half-written file a manifest names).
    """
    manifest = latest_manifest(storage, archive_dir)
    if entries:
        done = archived_keys(
            storage, archive_dir, manifest, entries[0].instant_time, entries[-1].instant_time
        )
        entries = [e for e in entries if (e.instant_time, e.action) not in done]
    if not entries:
        return None
    name = f"{entries[0].instant_time}_{entries[-1].instant_time}_0.parquet"
    data = _encode(entries)
    # A file of this name no manifest lists is a leftover of a failed write: replace it.
    storage.put(f"{archive_dir}/{name}", data)
    _publish(storage, archive_dir, manifest, (), (name, len(data)))
    return name


def _publish(
    storage: Storage,
    archive_dir: str,
    manifest: Manifest,
    removed: Sequence[str],
    added: tuple[str, int],
) -> Manifest:
    files = (*tuple(f for f in manifest.files if f[0] not in removed), added)
    new = Manifest(manifest.version + 1, files)
    storage.put(f"{archive_dir}/manifest_{new.version}", _manifest_json(new))
    storage.put(f"{archive_dir}/{VERSION_FILE}", str(new.version).encode())
    return new


def _manifest_json(manifest: Manifest) -> bytes:
    """The manifest as Jackson's pretty printer renders ``HoodieLSMTimelineManifest``."""
    if not manifest.files:
        return b'{\n  "files" : [ ]\n}'
    entries = ", ".join(
        f'{{\n    "fileName" : {json.dumps(name)},\n    "fileLen" : {size}\n  }}'
        for name, size in manifest.files
    )
    return f'{{\n  "files" : [ {entries} ]\n}}'.encode()


def _encode(entries: Sequence[LsmEntry]) -> bytes:
    table = pa.table(
        {
            "instantTime": [e.instant_time for e in entries],
            "completionTime": [e.completion_time for e in entries],
            "action": [e.action for e in entries],
            "metadata": [e.metadata for e in entries],
            "plan": [e.plan for e in entries],
            "version": pa.array([1] * len(entries), pa.int32()),
        },
        schema=LSM_SCHEMA,
    )
    return _write(table)


def _write(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    # Hudi's default Parquet codec; the Avro schema in the footer as parquet-avro writes it,
    # no Arrow schema (parquet-avro writes none).
    with pq.ParquetWriter(
        sink, table.schema.remove_metadata(), compression="gzip", store_schema=False
    ) as writer:
        writer.write_table(table.replace_schema_metadata(None))
        writer.add_key_value_metadata({k.decode(): v.decode() for k, v in _METADATA.items()})
    return sink.getvalue()


def _read(storage: Storage, path: str, columns: list[str] | None = None) -> pa.Table:
    try:
        return pq.read_table(io.BytesIO(storage.read(path)), columns=columns)
    except FileNotFoundError:
        raise CorruptTableError(
            f"{path}: listed in the LSM timeline manifest but missing"
        ) from None
    except OSError:
        raise
    except Exception as exc:  # pyarrow raises several types on damaged files
        raise CorruptTableError(f"{path}: unreadable LSM timeline file: {exc}") from None


def compact_and_clean(storage: Storage, archive_dir: str, batch: int) -> int:
    """Compact full layers into the next one, then clean old snapshots; returns how many
    compactions ran.

    Raises:
        CorruptTableError: an archive file is unreadable.
        OSError: the storage failed (a partly done compaction is a file no manifest names, or
            a manifest naming the compacted file instead of its sources: both readable).
    """
    manifest = latest_manifest(storage, archive_dir)
    layer = 0
    while True:
        in_layer = sorted((f for f in manifest.files if _layer(f[0]) == layer), key=lambda f: f[0])
        if len(in_layer) < batch:
            break
        candidates = _candidates(in_layer, batch)
        if len(candidates) < 2:
            break
        names = [c[0] for c in candidates]
        target = _compacted_name(names)
        merged = pa.concat_tables(
            [_read(storage, f"{archive_dir}/{n}").select(LSM_SCHEMA.names) for n in names]
        ).cast(LSM_SCHEMA)
        data = _write(merged)
        storage.put(f"{archive_dir}/{target}", data)
        manifest = _publish(storage, archive_dir, manifest, names, (target, len(data)))
        layer += 1
    clean(storage, archive_dir, RETAINED_MANIFESTS + layer)
    return layer


def _layer(name: str) -> int:
    match = _FILE.match(name)
    return int(match.group(3)) if match else -1


def _candidates(files: Sequence[tuple[str, int]], batch: int) -> list[tuple[str, int]]:
    """At most ``batch`` consecutive files, stopping once they pass ``MAX_COMPACTED_BYTES``
    (a lone file over the limit is skipped)."""
    out: list[tuple[str, int]] = []
    total = 0
    for f in files:
        total += f[1]
        out.append(f)
        if len(out) >= batch:
            break
        if total > MAX_COMPACTED_BYTES:
            if len(out) < 2:
                out, total = [], 0
            else:
                break
    return out


def _compacted_name(names: Sequence[str]) -> str:
    low = min(n.split("_", 1)[0] for n in names)
    high = max(n.split("_")[1] for n in names)
    return f"{low}_{high}_{_layer(names[0]) + 1}.parquet"


def clean(storage: Storage, archive_dir: str, keep: int) -> list[str]:
    """Keep the newest ``keep`` manifests and the files they name; delete the rest.

    Manifests go first, so a crash never leaves a kept manifest naming a deleted file.
    Returns the deleted names.
    """
    listing = storage.list_dir(archive_dir)
    versions = sorted(
        (int(m.group(1)) for i in listing if (m := _MANIFEST.match(_base(i.path)))),
        reverse=True,
    )
    if len(versions) <= keep:
        return []
    kept = versions[:keep]
    names: set[str] = set()
    for v in kept:
        names.update(manifest_at(storage, archive_dir, v).names)
    deleted: list[str] = []
    for v in versions[keep:]:
        storage.delete(f"{archive_dir}/manifest_{v}")
        deleted.append(f"manifest_{v}")
    for info in listing:
        name = _base(info.path)
        if _FILE.match(name) and name not in names:
            storage.delete(f"{archive_dir}/{name}")
            deleted.append(name)
    return deleted


def manifest_at(storage: Storage, archive_dir: str, version: int) -> Manifest:
    """Manifest ``version``.

    Raises:
        CorruptTableError: missing or malformed.
    """
    path = f"{archive_dir}/manifest_{version}"
    try:
        entries = json.loads(storage.read(path))["files"]
        return Manifest(version, tuple((str(e["fileName"]), int(e["fileLen"])) for e in entries))
    except FileNotFoundError:
        raise CorruptTableError(f"{path}: listed but missing") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptTableError(f"{path}: malformed LSM timeline manifest: {exc}") from None


def _base(path: str) -> str:
    return path.rsplit("/", 1)[-1]
