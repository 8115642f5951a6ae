"""Protocol gating: which reader versions and table features lakecore can read."""

from __future__ import annotations

from typing import Any

from lakecore.errors import CorruptTableError, UnsupportedFeatureError
from lakecore.format import TableFeatures

MAX_READER_VERSION = 3
READER_FEATURES = frozenset(
    {
        "columnMapping",
        "deletionVectors",
        "timestampNtz",
        "typeWidening",
        "typeWidening-preview",
        "v2Checkpoint",
        "vacuumProtocolCheck",
        "variantType",
        "variantType-preview",
    }
)
"""Reader features lakecore implements (everything a reader must do for each of them)."""

COLUMN_MAPPING_MODE = "delta.columnMapping.mode"


def reader_features(protocol: dict[str, Any]) -> frozenset[str]:
    """Return the reader features the protocol action lists (empty before reader version 3)."""
    return frozenset(protocol.get("readerFeatures") or ())


LEGACY_READER_FEATURES = {2: ("columnMapping",)}
"""Features a reader version below 3 implies (reader version 3 lists them)."""
LEGACY_WRITER_FEATURES = {
    2: ("appendOnly", "invariants"),
    3: ("checkConstraints",),
    4: ("changeDataFeed", "generatedColumns"),
    5: ("columnMapping",),
    6: ("identityColumns",),
}
"""Features each writer version below 7 adds to the one before (writer version 7 lists them)."""


def table_features(protocol: dict[str, Any]) -> TableFeatures:
    """The format-neutral ``TableFeatures`` of a protocol action (implied legacy features
    included); raises ``CorruptTableError`` for versions that are not integers."""
    try:
        reader = int(protocol.get("minReaderVersion", 1))
        writer = int(protocol.get("minWriterVersion", 2))
    except (TypeError, ValueError) as exc:
        raise CorruptTableError(f"protocol action has a bad version: {protocol}") from exc
    if reader >= 3:
        readers = reader_features(protocol)
    else:
        readers = frozenset(f for v in range(reader + 1) for f in LEGACY_READER_FEATURES.get(v, ()))
    if writer >= 7:
        writers = frozenset(protocol.get("writerFeatures") or ())
    else:
        writers = frozenset(f for v in range(writer + 1) for f in LEGACY_WRITER_FEATURES.get(v, ()))
    return TableFeatures(
        format_version=f"{reader}.{writer}",
        reader_features=readers,
        writer_features=writers,
        merge_on_read="deletionVectors" in readers,
        plain_data_files=True,
    )


def ensure_readable(protocol: dict[str, Any], configuration: dict[str, str]) -> None:
    """Raise ``UnsupportedFeatureError`` naming the first thing lakecore cannot read.

    Checks the reader version (1-3), each listed reader feature, and the legacy
    column-mapping mode of reader version 2.
    """
    try:
        version = int(protocol.get("minReaderVersion", 1))
    except (TypeError, ValueError) as exc:
        raise CorruptTableError(f"protocol action has a bad minReaderVersion: {protocol}") from exc
    if version > MAX_READER_VERSION or version < 1:
        raise UnsupportedFeatureError(
            f"readerVersion:{version}",
            f"the table needs Delta reader version {version}; lakecore reads versions 1 to "
            f"{MAX_READER_VERSION}",
        )
    if version == MAX_READER_VERSION:
        unknown = sorted(reader_features(protocol) - READER_FEATURES)
        if unknown:
            raise UnsupportedFeatureError(
                unknown[0],
                f"the table needs reader feature(s) {unknown} that lakecore does not support",
            )
    mode = configuration.get(COLUMN_MAPPING_MODE, "none")
    if mode not in ("none", "name", "id"):
        raise UnsupportedFeatureError(
            f"columnMapping:{mode}", f"column mapping mode {mode!r} is not supported"
        )
