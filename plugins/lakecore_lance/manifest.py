"""Lance manifests: where they are (V1/V2 naming), how a manifest file is framed, what it holds.

A dataset's versions are the files of ``_versions/``:

- V1 naming: ``_versions/{version}.manifest``;
- V2 naming: ``_versions/{u64::MAX - version:020}.manifest``, so that a lexicographic listing
  yields the newest version first (the latest version costs one listing of one entry).

A manifest file ends with a 16-byte footer: the little-endian i64 position of the manifest
message, a u16 major and u16 minor format version, and the magic ``LANC``. At that position a
little-endian u32 length prefixes the protobuf ``Manifest``. ``_latest.manifest`` and
``_versions/latest_version_hint.json`` exist in some datasets; they are only hints (a writer may
have committed after writing them) and are never trusted for the latest version.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from google.protobuf.message import DecodeError

from lakecore.errors import CorruptTableError, TableNotFoundError, VersionNotFoundError
from lakecore.storage import Storage
from lakecore_lance.proto import table_pb2

VERSIONS_DIR = "_versions"
MANIFEST_SUFFIX = ".manifest"
MAGIC = b"LANC"
FOOTER = struct.Struct("<qHH4s")
"""The manifest file's last 16 bytes: message position, major, minor, magic."""
U64_MAX = 2**64 - 1
V2_WIDTH = 20
RangeReader = Callable[[int, int], bytes]
"""Reads bytes ``[start, end)`` of one file."""
TAIL_READ = 64 * 1024
"""Bytes read from a manifest's end first: small manifests then cost one read."""


@dataclass(frozen=True, slots=True)
class ManifestFile:
    """One listed manifest: its version, path (relative to the root) and naming scheme."""

    version: int
    path: str
    naming: str  # "v1" or "v2"


def manifest_path(version: int, naming: str) -> str:
    """The path of ``version``'s manifest under ``naming`` (``"v1"`` or ``"v2"``)."""
    if naming == "v2":
        return f"{VERSIONS_DIR}/{U64_MAX - version:0{V2_WIDTH}d}{MANIFEST_SUFFIX}"
    return f"{VERSIONS_DIR}/{version}{MANIFEST_SUFFIX}"


def parse_manifest_name(name: str) -> ManifestFile | None:
    """The ``ManifestFile`` a ``_versions/`` file name stands for, or None for other files.

    A 20-digit name is V2 (``u64::MAX - version``); shorter decimal names are V1. Staged
    manifests (``{n}.manifest-{uuid}``, external manifest stores) and hints are not manifests.
    """
    base = name.rsplit("/", 1)[-1]
    if not base.endswith(MANIFEST_SUFFIX):
        return None
    stem = base[: -len(MANIFEST_SUFFIX)]
    if not stem.isdigit():
        return None
    path = f"{VERSIONS_DIR}/{base}"
    if len(stem) == V2_WIDTH:
        inverted = int(stem)
        if inverted > U64_MAX:
            return None
        return ManifestFile(U64_MAX - inverted, path, "v2")
    return ManifestFile(int(stem), path, "v1")


def list_manifests(storage: Storage) -> list[ManifestFile]:
    """Every manifest of the dataset, oldest version first."""
    found = (parse_manifest_name(f.path) for f in storage.list_dir(VERSIONS_DIR))
    return sorted((m for m in found if m is not None), key=lambda m: m.version)


def has_manifest(storage: Storage) -> bool:
    """Whether ``_versions/`` holds a manifest (format detection).

    The first name of a sorted listing decides when it is a manifest (either naming), so a
    local dataset of many versions is not stat-ed whole; otherwise every name is looked at.
    """
    first = next(iter(storage.list_from(f"{VERSIONS_DIR}/")), None)
    if first is None:
        return False
    if parse_manifest_name(first.path) is not None:
        return True
    return any(parse_manifest_name(f.path) is not None for f in storage.list_dir(VERSIONS_DIR))


def latest_manifest(storage: Storage) -> ManifestFile:
    """The newest version's manifest; raises ``TableNotFoundError`` when there is none.

    With V2 naming the first name of a sorted listing is the newest version, so only the
    listing's first entry is looked at (``list_from`` streams sorted names); V1 datasets (or
    a V2 listing that starts with something else) need the whole directory.
    """
    first = next(iter(storage.list_from(f"{VERSIONS_DIR}/")), None)
    if first is None:
        raise TableNotFoundError(f"no Lance dataset at {storage.root}: _versions/ is empty")
    head = parse_manifest_name(first.path)
    if head is not None and head.naming == "v2":
        return head
    manifests = list_manifests(storage)
    if not manifests:
        raise TableNotFoundError(f"no Lance dataset at {storage.root}: _versions/ has no manifest")
    return manifests[-1]


def find_manifest(storage: Storage, version: int) -> ManifestFile:
    """The manifest of ``version``: tried under both namings before any listing.

    Raises ``VersionNotFoundError`` when the dataset has no such version.
    """
    if version < 0 or version > U64_MAX:
        raise VersionNotFoundError(f"Lance versions are 0..2^64-1, not {version}")
    for naming in ("v2", "v1"):
        path = manifest_path(version, naming)
        if storage.exists(path):
            return ManifestFile(version, path, naming)
    known = [m.version for m in list_manifests(storage)]
    if not known:
        raise TableNotFoundError(f"no Lance dataset at {storage.root}: _versions/ is empty")
    raise VersionNotFoundError(
        f"the Lance dataset at {storage.root} has no version {version} "
        f"(versions {known[0]}..{known[-1]})"
    )


@dataclass(frozen=True, slots=True)
class LoadedManifest:
    """A decoded manifest and where it came from."""

    file: ManifestFile
    manifest: table_pb2.Manifest
    format_version: tuple[int, int]
    """The manifest file's (major, minor) footer version."""


def read_manifest(storage: Storage, file: ManifestFile) -> LoadedManifest:
    """Read and decode ``file``; raises ``CorruptTableError`` naming it when malformed."""
    try:
        size = storage.head(file.path).size
    except FileNotFoundError as exc:
        raise VersionNotFoundError(f"manifest {file.path} disappeared") from exc
    start = max(0, size - TAIL_READ)
    tail = storage.read(file.path, start, size)
    return decode_manifest(tail, start, file, lambda a, b: storage.read(file.path, a, b))


def decode_manifest(
    tail: bytes,
    tail_start: int,
    file: ManifestFile,
    read_range: RangeReader,
) -> LoadedManifest:
    """Decode a manifest from its last bytes ``tail`` (starting at ``tail_start``)."""
    if len(tail) < FOOTER.size:
        raise CorruptTableError(f"{file.path}: {len(tail)} bytes is too short for a manifest")
    position, major, minor, magic = FOOTER.unpack(tail[-FOOTER.size :])
    if magic != MAGIC:
        raise CorruptTableError(f"{file.path}: bad magic {magic!r} (expected {MAGIC!r})")
    end = tail_start + len(tail) - FOOTER.size
    if position < 0 or position + 4 > end:
        raise CorruptTableError(f"{file.path}: manifest position {position} is outside the file")
    prefix = _bytes(tail, tail_start, position, position + 4, read_range)
    (length,) = struct.unpack("<I", prefix)
    if position + 4 + length > end:
        raise CorruptTableError(
            f"{file.path}: manifest of {length} bytes at {position} runs past the footer"
        )
    body = _bytes(tail, tail_start, position + 4, position + 4 + length, read_range)
    manifest = table_pb2.Manifest()
    try:
        manifest.ParseFromString(body)
    except DecodeError as exc:
        raise CorruptTableError(f"{file.path}: the manifest does not decode: {exc}") from exc
    return LoadedManifest(file, manifest, (major, minor))


def _bytes(tail: bytes, tail_start: int, start: int, end: int, read_range: RangeReader) -> bytes:
    if start >= tail_start:
        return tail[start - tail_start : end - tail_start]
    return read_range(start, end)


def read_section(storage: Storage, file: ManifestFile, position: int) -> bytes:
    """The length-prefixed message at ``position`` of a manifest file (index, transaction)."""
    prefix = storage.read(file.path, position, position + 4)
    if len(prefix) != 4:
        raise CorruptTableError(f"{file.path}: no section at {position}")
    (length,) = struct.unpack("<I", prefix)
    body = storage.read(file.path, position + 4, position + 4 + length)
    if len(body) != length:
        raise CorruptTableError(f"{file.path}: section at {position} is truncated")
    return body


def versions_of(manifests: Iterable[ManifestFile]) -> list[int]:
    """The versions of ``manifests``, sorted."""
    return sorted(m.version for m in manifests)
