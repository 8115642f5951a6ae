"""Protocol gating: which reader versions and table features lakecore can read."""

from __future__ import annotations

from typing import Any

from lakecore.errors import CorruptTableError, UnsupportedFeatureError

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
