"""Which protocol a table needs (writing) and which writer features lakecore implements."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from lakecore.errors import UnsupportedFeatureError
from lakecore_delta.schema import GENERATION_EXPRESSION, to_delta_field

WRITER_FEATURES = frozenset(
    {
        "appendOnly",
        "invariants",
        "checkConstraints",
        "changeDataFeed",
        "generatedColumns",
        "columnMapping",
        "deletionVectors",
        "timestampNtz",
        "inCommitTimestamp",
        "typeWidening",
        "typeWidening-preview",
        "vacuumProtocolCheck",
        "domainMetadata",
    }
)
"""Writer features lakecore honours when it writes (everything each requires of writers)."""
MAX_WRITER_VERSION = 7

_TRUE = "true"


def _enabled(configuration: Mapping[str, str], key: str) -> bool:
    return str(configuration.get(key, "false")).lower() == _TRUE


def _has_ntz(t: pa.DataType) -> bool:
    if pa.types.is_timestamp(t):
        return t.tz is None
    if pa.types.is_struct(t):
        return any(_has_ntz(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _has_ntz(t.value_type)
    if pa.types.is_map(t):
        return _has_ntz(t.key_type) or _has_ntz(t.item_type)
    return False


def required_features(schema: pa.Schema, configuration: Mapping[str, str]) -> set[str]:
    """The table features a table with this schema and configuration uses."""
    features = {"appendOnly", "invariants"}
    if any(k.startswith("delta.constraints.") for k in configuration):
        features.add("checkConstraints")
    if _enabled(configuration, "delta.enableChangeDataFeed"):
        features.add("changeDataFeed")
    if configuration.get("delta.columnMapping.mode", "none") != "none":
        features.add("columnMapping")
    if _enabled(configuration, "delta.enableDeletionVectors"):
        features.add("deletionVectors")
    if _enabled(configuration, "delta.enableInCommitTimestamps"):
        features.add("inCommitTimestamp")
    if _enabled(configuration, "delta.enableTypeWidening"):
        features.add("typeWidening")
    if any(_has_ntz(f.type) for f in schema):
        features.add("timestampNtz")
    if any(GENERATION_EXPRESSION in to_delta_field(f)["metadata"] for f in schema):
        features.add("generatedColumns")
    return features


_LEGACY_WRITER = {
    "appendOnly": 2,
    "invariants": 2,
    "checkConstraints": 3,
    "changeDataFeed": 4,
    "generatedColumns": 4,
    "columnMapping": 5,
}
_READER_FEATURES = {
    "columnMapping",
    "deletionVectors",
    "timestampNtz",
    "typeWidening",
    "typeWidening-preview",
    "v2Checkpoint",
    "vacuumProtocolCheck",
}


def protocol_for(features: set[str], current: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The smallest protocol that supports ``features`` and never downgrades ``current``.

    Legacy versions (reader 1-2, writer 2-5) when they suffice, table features otherwise.
    """
    cur_reader = int((current or {}).get("minReaderVersion", 1))
    cur_writer = int((current or {}).get("minWriterVersion", 2))
    cur_rf = set((current or {}).get("readerFeatures") or ())
    cur_wf = set((current or {}).get("writerFeatures") or ())
    legacy = all(f in _LEGACY_WRITER for f in features) and cur_writer < 7
    if legacy:
        writer = max([cur_writer, 2, *(_LEGACY_WRITER[f] for f in features)])
        reader = max(cur_reader, 2 if "columnMapping" in features else 1)
        return {"minReaderVersion": reader, "minWriterVersion": writer}
    implied = {f for f, v in _LEGACY_WRITER.items() if v <= cur_writer} if cur_writer < 7 else set()
    writer_features = sorted(features | cur_wf | implied)
    reader_features = sorted({f for f in features if f in _READER_FEATURES} | cur_rf)
    needs_reader_features = bool(reader_features) or cur_reader >= 3
    out: dict[str, Any] = {
        "minReaderVersion": 3 if needs_reader_features else max(cur_reader, 1),
        "minWriterVersion": 7,
    }
    if needs_reader_features:
        out["readerFeatures"] = reader_features
    out["writerFeatures"] = writer_features
    return out


def ensure_writable(protocol: Mapping[str, Any]) -> None:
    """Raise ``UnsupportedFeatureError`` naming the first writer feature lakecore lacks."""
    version = int(protocol.get("minWriterVersion", 2))
    if version > MAX_WRITER_VERSION:
        raise UnsupportedFeatureError(
            f"writerVersion:{version}",
            f"the table needs Delta writer version {version}; lakecore writes up to "
            f"{MAX_WRITER_VERSION}",
        )
    if version == MAX_WRITER_VERSION:
        unknown = sorted(set(protocol.get("writerFeatures") or ()) - WRITER_FEATURES)
        if unknown:
            raise UnsupportedFeatureError(
                unknown[0],
                f"the table needs writer feature(s) {unknown} that lakecore cannot write",
            )
    elif version == 6:
        raise UnsupportedFeatureError(
            "identityColumns", "writer version 6 (identity columns) is not supported for writes"
        )
