"""Versions of a Lance dataset: time travel by timestamp, tags, and the history of changes.

- A version's time is its manifest's ``timestamp``; ``version_at(ts)`` is the newest version
  committed at or before ``ts`` (manifest timestamps grow with versions, so a binary search
  reads O(log n) manifests).
- Tags are ``_refs/tags/{name}.json`` files (``{"version": n, "branch": null, ...}``); a tag
  on another branch is refused (branches are not read yet).
- ``history`` is one entry per manifest, newest first; the operation and its parameters come
  from the version's transaction (the ``_transactions/`` file the manifest names, or the one
  inlined in the manifest file), and ``app_metadata`` from its ``transaction_properties``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from google.protobuf.message import DecodeError

from lakecore.errors import CorruptTableError, UnsupportedFeatureError, VersionNotFoundError
from lakecore.model.history import HistoryEntry
from lakecore.storage import Storage
from lakecore.storage.paths import contained_path
from lakecore_lance.manifest import (
    LoadedManifest,
    ManifestFile,
    list_manifests,
    read_manifest,
    read_section,
)
from lakecore_lance.proto import transaction_pb2

TAGS_DIR = "_refs/tags"
TRANSACTIONS_DIR = "_transactions"
RESERVED_PROPERTY_PREFIX = "__lance_"
"""Transaction property keys Lance keeps for itself (``__lance_commit_message``)."""
_TAG_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


def timestamp_ms(loaded: LoadedManifest) -> int | None:
    """The manifest's commit time in epoch milliseconds, or None when it has none."""
    m = loaded.manifest
    if not m.HasField("timestamp"):
        return None
    return int(m.timestamp.seconds) * 1000 + int(m.timestamp.nanos) // 1_000_000


def version_at(storage: Storage, timestamp: int) -> int:
    """The newest version committed at or before ``timestamp`` (epoch ms).

    Raises ``VersionNotFoundError`` when every version is newer.
    """
    manifests = list_manifests(storage)
    lo, hi, found = 0, len(manifests) - 1, None
    while lo <= hi:
        mid = (lo + hi) // 2
        ts = timestamp_ms(read_manifest(storage, manifests[mid]))
        if ts is not None and ts <= timestamp:
            found, lo = manifests[mid].version, mid + 1
        else:
            hi = mid - 1
    if found is None:
        raise VersionNotFoundError(
            f"the Lance dataset at {storage.root} has no version at or before {timestamp} ms"
        )
    return found


MAX_TAG_NAME = 200
"""Characters in a tag name: its file ``_refs/tags/<name>.json`` must fit a file name."""


def is_tag_name(name: str) -> bool:
    """Whether ``name`` can name a tag: ASCII letters, digits, ``_``, ``.``, ``-`` (the
    names pylance finds by their file name), not starting with ``.``, no ``..``."""
    return (
        bool(_TAG_NAME.match(name))
        and not name.startswith(".")
        and ".." not in name
        and len(name) <= MAX_TAG_NAME
    )


def tag_version(storage: Storage, tag: str) -> int:
    """The version tag ``tag`` points at; raises ``VersionNotFoundError`` for an unknown tag."""
    if not is_tag_name(tag):
        raise VersionNotFoundError(f"{tag!r} is neither a Lance version number nor a tag name")
    path = f"{TAGS_DIR}/{tag}.json"
    try:
        raw = storage.read(path)
    except FileNotFoundError as exc:
        raise VersionNotFoundError(
            f"the Lance dataset at {storage.root} has no tag {tag!r}"
        ) from exc
    try:
        doc = json.loads(raw)
        version = doc["version"]
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptTableError(f"tag file {path} is malformed: {exc}") from exc
    if doc.get("branch") not in (None, "", "main"):
        raise UnsupportedFeatureError(
            "lance:branches",
            f"tag {tag!r} points at branch {doc['branch']!r}; branches are not read",
        )
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise CorruptTableError(f"tag file {path} has version {version!r}")
    return version


def tags(storage: Storage) -> dict[str, int]:
    """Every tag of the dataset and its version (tags of other branches left out)."""
    found: dict[str, int] = {}
    for info in storage.list_dir(TAGS_DIR):
        name = info.path.rsplit("/", 1)[-1]
        if name.endswith(".json"):
            try:
                found[name[: -len(".json")]] = tag_version(storage, name[: -len(".json")])
            except UnsupportedFeatureError:
                continue
    return found


def read_transaction(
    storage: Storage, loaded: LoadedManifest
) -> transaction_pb2.Transaction | None:
    """The transaction that produced ``loaded``'s version, or None when none was kept.

    Raises ``CorruptTableError`` naming the manifest when its transaction file name leads
    out of the dataset root, or the transaction does not decode.
    """
    m = loaded.manifest
    raw: bytes | None = None
    # As pylance 14 does: field 23 first, the older field 21 only when 23 is absent.
    if m.HasField("transaction_section"):
        raw = read_section(storage, loaded.file, int(m.transaction_section))
    elif m.HasField("transaction_section_deprecated"):
        raw = read_section(storage, loaded.file, int(m.transaction_section_deprecated))
    elif m.transaction_file:
        # The name comes from the manifest: it must stay under the dataset root.
        path = contained_path(
            f"{TRANSACTIONS_DIR}/{m.transaction_file}", storage.root, source=loaded.file.path
        )
        try:
            raw = storage.read(path)
        except FileNotFoundError:
            return None  # cleaned up, or never written by old writers
    if raw is None:
        return None
    txn = transaction_pb2.Transaction()
    try:
        txn.ParseFromString(raw)
    except DecodeError as exc:
        raise CorruptTableError(
            f"the transaction of version {loaded.file.version} does not decode: {exc}"
        ) from exc
    return txn


def _parameters(txn: transaction_pb2.Transaction) -> tuple[str | None, dict[str, Any]]:
    op = txn.WhichOneof("operation")
    params: dict[str, Any] = {"read_version": int(txn.read_version)}
    if op is None:
        return None, params
    body = getattr(txn, op)
    if op == "append":
        params["fragments"] = len(body.fragments)
    elif op == "delete":
        params["predicate"] = body.predicate
        params["updated_fragments"] = len(body.updated_fragments)
        params["deleted_fragments"] = len(body.deleted_fragment_ids)
    elif op == "overwrite":
        params["fragments"] = len(body.fragments)
    elif op == "update":
        params["removed_fragments"] = len(body.removed_fragment_ids)
        params["updated_fragments"] = len(body.updated_fragments)
        params["new_fragments"] = len(body.new_fragments)
    elif op == "merge":
        params["fragments"] = len(body.fragments)
    elif op == "restore":
        params["version"] = int(body.version)
    elif op == "rewrite":
        params["groups"] = len(body.groups)
    elif op == "create_index":
        params["new_indices"] = [i.name for i in body.new_indices]
    return op, params


def history(storage: Storage, limit: int | None = None) -> list[HistoryEntry]:
    """One entry per version, newest first, at most ``limit``."""
    manifests = list_manifests(storage)[::-1]
    if limit is not None:
        manifests = manifests[: max(0, limit)]
    return [entry(storage, m) for m in manifests]


def entry(storage: Storage, file: ManifestFile) -> HistoryEntry:
    """The ``HistoryEntry`` of one version."""
    loaded = read_manifest(storage, file)
    txn = read_transaction(storage, loaded)
    operation, params = (None, {}) if txn is None else _parameters(txn)
    m = loaded.manifest
    info: dict[str, Any] = {
        "manifest": file.path,
        "writer": f"{m.writer_version.library} {m.writer_version.version}".strip(),
        "transaction_file": m.transaction_file or None,
    }
    app_metadata: dict[str, str] = {}
    if txn is not None:
        info["uuid"] = txn.uuid
        info["transaction_properties"] = dict(txn.transaction_properties)
        app_metadata = app_metadata_of(txn)
    return HistoryEntry(
        version=file.version,
        timestamp=timestamp_ms(loaded),
        operation=operation,
        parameters=params,
        info=info,
        app_metadata=app_metadata,
    )


def app_metadata_of(txn: transaction_pb2.Transaction) -> dict[str, str]:
    """A transaction's application key/values: its ``transaction_properties`` (where lakecore
    keeps ``CommitInfo.app_metadata`` and pylance's ``transaction_properties=`` go) less the
    keys Lance reserves (``__lance_*``: pylance's commit message), which stay in
    ``HistoryEntry.info["transaction_properties"]``."""
    return {
        str(k): str(v)
        for k, v in sorted(txn.transaction_properties.items())
        if not str(k).startswith(RESERVED_PROPERTY_PREFIX)
    }
