"""One loaded version of a Lance dataset, and the picklable reading state its scans carry."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

import pyarrow as pa

from lakecore.errors import CorruptTableError
from lakecore.model.distinct_values import repeated
from lakecore.storage import Storage
from lakecore.storage.paths import contained_path
from lakecore_lance import features
from lakecore_lance.manifest import (
    LoadedManifest,
    find_manifest,
    latest_manifest,
    read_manifest,
)
from lakecore_lance.proto import file_pb2, table_pb2
from lakecore_lance.schema import FieldNode, arrow_schema, field_tree

DATA_DIR = "data"
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*\Z")
"""A file name with no separator, scheme, ``.`` or ``..``: ``data/<it>`` is in the root."""
FIRST_MODERN_VERSION = (0, 3)
"""The first data-file version in the 2.x format: writers of Lance 0.1x labelled early v2
files ``0.3`` (Lance reads 0.3 as 2.0); ``0.0`` (unset), ``0.1`` and ``0.2`` are legacy."""


@dataclass(frozen=True, slots=True)
class DataFileInfo:
    """What the manifest says about one data file of a fragment."""

    path: str
    """Relative to the dataset root (``data/<name>.lance``)."""
    fields: tuple[int, ...]
    """The field ids the file holds (``DataFile.fields``; -2 marks a tombstoned field)."""
    column_indices: tuple[int, ...]
    major: int
    minor: int
    size: int

    @property
    def legacy(self) -> bool:
        """Whether the file is in the legacy (v0.1) format, which pylance's reader refuses."""
        return (self.major, self.minor) < FIRST_MODERN_VERSION


@dataclass(frozen=True, slots=True)
class LanceScanState:
    """The Lance reading state of a scan (``ScanContext.state``): frozen and picklable.

    ``fragments`` maps each file-index row's ``path`` (its fragment's first data file) to the
    fragment's data files; ``schema_fields`` is the manifest's field list serialized as a
    ``lakecore.lance.file.Schema`` (the legacy reader and the field-id mapping need it);
    ``manifest_path`` is the manifest the schema came from (legacy dictionaries live there).
    """

    version: int
    manifest_path: str
    schema_fields: bytes
    fragments: dict[str, tuple[DataFileInfo, ...]] = field(default_factory=dict)
    physical_rows: dict[str, int | None] = field(default_factory=dict)
    """Rows of each fragment; None when the manifest does not say (writers before
    ``physical_rows`` existed): the data files then tell."""

    def fields(self) -> list[file_pb2.Field]:
        """The manifest's fields (depth first)."""
        return list(_decode_fields(self.schema_fields))

    def tree(self) -> tuple[FieldNode, ...]:
        """The manifest's top-level fields with their children."""
        return _tree(self.schema_fields)


@functools.lru_cache(maxsize=32)
def _decode_fields(raw: bytes) -> tuple[file_pb2.Field, ...]:
    schema = file_pb2.Schema()
    schema.ParseFromString(raw)
    return tuple(schema.fields)


@functools.lru_cache(maxsize=32)
def _tree(raw: bytes) -> tuple[FieldNode, ...]:
    return field_tree(list(_decode_fields(raw)))


@dataclass(frozen=True, slots=True)
class LanceState:
    """One version of a dataset: its decoded manifest, schema and reading state."""

    loaded: LoadedManifest
    schema: pa.Schema

    @property
    def manifest(self) -> table_pb2.Manifest:
        return self.loaded.manifest

    @property
    def version(self) -> int:
        return int(self.loaded.file.version)

    @property
    def timestamp_ms(self) -> int | None:
        ts = self.manifest.timestamp
        if not self.manifest.HasField("timestamp"):
            return None
        return int(ts.seconds) * 1000 + int(ts.nanos) // 1_000_000

    def scan_state(self) -> LanceScanState:
        fragments: dict[str, tuple[DataFileInfo, ...]] = {}
        rows: dict[str, int | None] = {}
        for fragment in self.manifest.fragments:
            infos = tuple(data_file_info(f) for f in fragment.files)
            if infos:
                fragments[infos[0].path] = infos
                rows[infos[0].path] = int(fragment.physical_rows) or None
        schema = file_pb2.Schema(fields=self.manifest.fields)
        return LanceScanState(
            version=self.version,
            manifest_path=self.loaded.file.path,
            schema_fields=schema.SerializeToString(deterministic=True),
            fragments=fragments,
            physical_rows=rows,
        )


def data_file_info(data_file: table_pb2.DataFile) -> DataFileInfo:
    """The ``DataFileInfo`` of a manifest ``DataFile``."""
    return DataFileInfo(
        path=f"{DATA_DIR}/{data_file.path}",
        fields=tuple(data_file.fields),  # protobuf int32s are Python ints already
        column_indices=tuple(data_file.column_indices),
        major=int(data_file.file_major_version),
        minor=int(data_file.file_minor_version),
        size=int(data_file.file_size_bytes),
    )


def ensure_unique_fragment_ids(manifest: table_pb2.Manifest, path: str) -> None:
    """Raise ``CorruptTableError`` naming ``path`` when two fragments share an id.

    Reads do not need unique ids (pylance reads such a manifest too), but whatever matches
    fragments by id does: a writer would rewrite or mark the wrong fragment (a delete in one
    replaced the other, losing its rows), the change feed would compare the wrong pairs.
    """
    twice = repeated(int(f.id) for f in manifest.fragments)
    if twice:
        raise CorruptTableError(f"{path} lists fragment ids {twice} more than once")


def load_state(storage: Storage, version: int | None) -> LanceState:
    """Load ``version`` (the latest when None), gating reader feature flags first.

    Raises ``TableNotFoundError``, ``VersionNotFoundError``, ``CorruptTableError`` and
    ``UnsupportedFeatureError`` (an unreadable feature flag, before any fragment is read).
    """
    file = latest_manifest(storage) if version is None else find_manifest(storage, version)
    loaded = read_manifest(storage, file)
    features.ensure_readable(loaded.manifest, f"version {file.version} of {storage.root}")
    for fragment in loaded.manifest.fragments:
        for data_file in fragment.files:
            # Paths a manifest names must stay under the dataset root (architecture.md). The
            # usual plain file name is inside by construction; checking each of 1,000 fully
            # took a third of opening a 1,000-fragment dataset.
            if _PLAIN_NAME.match(data_file.path) is None:
                contained_path(f"{DATA_DIR}/{data_file.path}", storage.root, source=file.path)
    schema = arrow_schema(loaded.manifest.fields, loaded.manifest.schema_metadata)
    return LanceState(loaded, schema)
